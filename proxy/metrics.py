"""Prometheus metrics of one proxy process, served at ``GET /metrics``.

Label values are bounded on purpose: routes are the proxy's own, policies and shields come from
the operator's files, tenants from the operator's key file, and models only from the operator's
allow-list (anything else is ``other``). Nothing a client sends can mint a new time series.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar, cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics import MetricWrapperBase

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Shield stages are sub-millisecond; upstream calls take seconds.
_FAST = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
# Held characters: 0 in most of prose, a few for a phrase or key prefix, up to the
# policy's ``holdback_chars`` (160 by default) while a secret is being decided.
_HELD = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
_SLOW = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
# Label sets remembered by ``Metrics.child``. The labels are bounded (see above), so this is
# only a guard: past it the cache starts over, and the metric still holds every child.
_CHILDREN_LIMIT = 4096

_M = TypeVar("_M", bound=MetricWrapperBase)


class Metrics:
    def __init__(self, models: Iterable[str] = ()) -> None:
        self.registry = CollectorRegistry()
        self._models = frozenset(models)
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], MetricWrapperBase] = {}
        r = self.registry
        self.requests = Counter(
            "shieldgate_requests",
            "Requests answered, by route, status, policy, tenant and model",
            ["route", "status", "policy", "tenant", "model"],
            registry=r,
        )
        self.findings = Counter(
            "shieldgate_findings",
            "Shield findings by stage, policy, shield, type, action and mode (enforce|monitor)",
            ["stage", "policy", "shield", "type", "action", "mode"],
            registry=r,
        )
        self.verdicts = Counter(
            "shieldgate_verdicts",
            "Decisions per request and stage: allow, redact, block",
            ["stage", "policy", "verdict"],
            registry=r,
        )
        self.stage_seconds = Histogram(
            "shieldgate_stage_seconds",
            "Time spent running a stage's shields over a whole text (input, non-stream output)",
            ["stage"],
            buckets=_FAST,
            registry=r,
        )
        self.upstream_ttfb = Histogram(
            "shieldgate_upstream_ttfb_seconds",
            "Time from sending a request upstream to its response headers",
            ["route"],
            buckets=_SLOW,
            registry=r,
        )
        self.upstream_seconds = Histogram(
            "shieldgate_upstream_seconds",
            "Time from sending a request upstream to the end of its response",
            ["route"],
            buckets=_SLOW,
            registry=r,
        )
        self.upstream_retries = Counter(
            "shieldgate_upstream_retries", "Upstream attempts retried", registry=r
        )
        self.upstream_errors = Counter(
            "shieldgate_upstream_errors",
            "Upstream failures: unreachable, timeout, broken_stream, bad_reply",
            ["kind"],
            registry=r,
        )
        self.remote_failures = Counter(
            "shieldgate_remote_shield_failures",
            "Failed remote shield checks by policy, shield and kind "
            "(connect, timeout, status_429, status_5xx, status_4xx, bad_answer, config)",
            ["policy", "shield", "kind"],
            registry=r,
        )
        self.remote_seconds = Histogram(
            "shieldgate_remote_check_seconds",
            "Time a request waited on its remote shields (input, non-stream output)",
            ["stage"],
            buckets=_SLOW,
            registry=r,
        )
        self.streams_in_flight = Gauge(
            "shieldgate_streams_in_flight", "Streams being relayed now", registry=r
        )
        self.held_bytes = Gauge(
            "shieldgate_held_bytes", "Bytes of upstream events held back, all streams", registry=r
        )
        # Adaptive hold-back's cost: observed once per network read that released events
        # (``StreamGuard(on_held=...)``), never per character.
        self.held_chars = Histogram(
            "shieldgate_stream_held_chars",
            "Characters of a stream channel scanned but still held back when events were "
            "released (a match may still be forming there)",
            buckets=_HELD,
            registry=r,
        )
        self.rejected = Counter(
            "shieldgate_rejected",
            "Requests turned away before any work: auth, concurrency limit",
            ["reason"],
            registry=r,
        )
        self.policy_reloads = Counter(
            "shieldgate_policy_reloads", "Policy reloads by result", ["result"], registry=r
        )
        self.policy_stale = Gauge(
            "shieldgate_policy_stale",
            "1 while the last policy reload failed and an older policy is in force",
            registry=r,
        )

    def child(self, metric: _M, *values: str) -> _M:
        """``metric.labels(*values)``, remembered: prometheus-client validates the values and
        takes a lock on every ``labels()`` call, some 3 µs, and a request asks for the same few
        label sets every time. Children are never removed from these metrics, so a remembered
        one stays the metric's own."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            if len(self._children) >= _CHILDREN_LIMIT:
                self._children.clear()
            child = self._children[key] = metric.labels(*values)
        return cast(_M, child)  # keyed by ``metric``: a child of its own type

    def model_label(self, model: str | None) -> str:
        return model if model in self._models else "other"

    def render(self) -> bytes:
        return generate_latest(self.registry)
