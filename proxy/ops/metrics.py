"""Prometheus metrics of the proxy, served at ``GET /metrics``.

One process keeps its metrics in memory. Several processes serving one port
(``shieldgate serve --workers N``, gunicorn with ``proxy.serving.gunicorn_conf``) run in
prometheus-client's multiprocess mode: each writes its values to files in the directory
``PROMETHEUS_MULTIPROC_DIR`` names (one per run, made by the parent), and a scrape, whichever
worker answers it, adds up every worker's. The variable must be set before prometheus-client is
imported, which is why the parent sets it for its workers rather than they for themselves.
Counters and histograms of a worker that exited still count; gauges count live workers only;
the classifier queue depth, read live from the engines, is the answering worker's.

Label values are bounded on purpose: routes are the proxy's own, policies and shields come from
the operator's files, tenants from the operator's key file, and models only from the operator's
allow-list (anything else is ``other``). Nothing a client sends can mint a new time series.

What an exchange records (``proxy/exchange/lifecycle.py``: findings, verdicts, stage and upstream
timings,
upstream failures and retries, streams in flight, held bytes and characters, remote shield
failures, input cache hits, misses and evictions) carries ``endpoint``: the surface it served,
one of ``shields.spec.ENDPOINTS`` (``chat``, ``responses``, ``messages``, ``completions``,
``embeddings``), or ``models`` for the upstream calls of ``GET /v1/models``.
``shieldgate_requests_total`` keeps ``route``, the HTTP path pattern it answered.
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
    values,
)
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from shields.builtin import classifier_engine

__all__ = ["CONTENT_TYPE", "MULTIPROCESS", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Decided by prometheus-client when it was imported (PROMETHEUS_MULTIPROC_DIR set or not).
MULTIPROCESS = values.ValueClass is not values.MutexValue

# Shield stages are sub-millisecond; upstream calls take seconds.
_FAST = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
# Held characters: 0 in most of prose, a few for a phrase or key prefix, up to the
# policy's ``holdback_chars`` (160 by default) while a secret is being decided.
_HELD = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
# Windows per inference run of a local classifier (``classifier`` shields' micro-batches).
_WINDOWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
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
            "Shield findings by stage, policy, shield, type, action, mode (enforce|monitor) "
            "and endpoint",
            ["stage", "policy", "shield", "type", "action", "mode", "endpoint"],
            registry=r,
        )
        self.verdicts = Counter(
            "shieldgate_verdicts",
            "Decisions per request and stage: allow, redact, block",
            ["stage", "policy", "verdict", "endpoint"],
            registry=r,
        )
        self.stage_seconds = Histogram(
            "shieldgate_stage_seconds",
            "Time spent running a stage's shields over a whole text (input, non-stream output)",
            ["stage", "endpoint"],
            buckets=_FAST,
            registry=r,
        )
        self.upstream_ttfb = Histogram(
            "shieldgate_upstream_ttfb_seconds",
            "Time from sending a request upstream to its response headers",
            ["endpoint"],
            buckets=_SLOW,
            registry=r,
        )
        self.upstream_seconds = Histogram(
            "shieldgate_upstream_seconds",
            "Time from sending a request upstream to the end of its response",
            ["endpoint"],
            buckets=_SLOW,
            registry=r,
        )
        self.upstream_retries = Counter(
            "shieldgate_upstream_retries", "Upstream attempts retried", ["endpoint"], registry=r
        )
        self.upstream_errors = Counter(
            "shieldgate_upstream_errors",
            "Upstream failures: unreachable, timeout, broken_stream, bad_reply",
            ["kind", "endpoint"],
            registry=r,
        )
        self.remote_failures = Counter(
            "shieldgate_remote_shield_failures",
            "Failed remote shield checks by policy, shield and kind "
            "(connect, timeout, status_429, status_5xx, status_4xx, bad_answer, config)",
            ["policy", "shield", "kind", "endpoint"],
            registry=r,
        )
        self.remote_seconds = Histogram(
            "shieldgate_remote_check_seconds",
            "Time a request waited on its remote shields (input, non-stream output)",
            ["stage", "endpoint"],
            buckets=_SLOW,
            registry=r,
        )
        # The input stage's memory of texts it scanned (``InputCache``): texts answered from
        # it and texts scanned, per request text; what it holds now.
        self.input_cache_hits = Counter(
            "shieldgate_input_cache_hits",
            "Request texts whose input-shield outcome was remembered, not scanned again",
            ["endpoint"],
            registry=r,
        )
        self.input_cache_misses = Counter(
            "shieldgate_input_cache_misses",
            "Request texts the input shields scanned (not remembered yet)",
            ["endpoint"],
            registry=r,
        )
        self.input_cache_evictions = Counter(
            "shieldgate_input_cache_evictions",
            "Remembered texts forgotten to stay within input_cache_bytes",
            ["endpoint"],
            registry=r,
        )
        # The Responses API's MCP hops (``proxy.mcp.loop``): findings by hop, each listing and
        # call by outcome (ok, tool_error, blocked, not_run, or how it failed), their time.
        self.mcp_findings = Counter(
            "shieldgate_mcp_findings",
            "Findings at the MCP hops by hop (mcp_tools, mcp_arguments, mcp_result), policy, "
            "shield, action and mode",
            ["hop", "policy", "shield", "action", "mode"],
            registry=r,
        )
        self.mcp_hops = Counter(
            "shieldgate_mcp_hops",
            "MCP listings and calls by kind (list, call) and outcome",
            ["kind", "outcome"],
            registry=r,
        )
        # Tool pinning (``proxy.mcp.pinning``): each offered tool of a fresh listing, compared
        # with its pin or first-use record. ``server`` is the allow-list prefix that let the
        # server in (the operator's; a client's ``server_label`` could mint series).
        self.mcp_pins = Counter(
            "shieldgate_mcp_pins",
            "MCP tools compared with their pinned or first-use fingerprints, by server "
            "(its mcp_servers prefix) and outcome (first_use, unchanged, refused_tool, "
            "refused_server, monitored)",
            ["server", "outcome"],
            registry=r,
        )
        self.mcp_seconds = Histogram(
            "shieldgate_mcp_seconds",
            "Time of one MCP listing or call, session set-up included",
            ["kind"],
            buckets=_SLOW,
            registry=r,
        )
        # Gauges: how several processes add up (ignored by a single process).
        self.input_cache_bytes = Gauge(
            "shieldgate_input_cache_bytes",
            "Approximate size of the input cache (texts and their findings)",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.streams_in_flight = Gauge(
            "shieldgate_streams_in_flight",
            "Streams being relayed now",
            ["endpoint"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.held_bytes = Gauge(
            "shieldgate_held_bytes",
            "Bytes of upstream events held back, all streams",
            ["endpoint"],
            registry=r,
            multiprocess_mode="livesum",
        )
        # Adaptive hold-back's cost: observed once per network read that released events
        # (``StreamGuard(on_held=...)``), never per character.
        self.held_chars = Histogram(
            "shieldgate_stream_held_chars",
            "Characters of a stream channel scanned but still held back when events were "
            "released (a match may still be forming there)",
            ["endpoint"],
            buckets=_HELD,
            registry=r,
        )
        self.rejected = Counter(
            "shieldgate_rejected",
            "Requests turned away before any work: auth, concurrency limit",
            ["reason"],
            registry=r,
        )
        # Local classifiers (``classifier`` shields), by model (its directory's name, from the
        # operator's policy): told by their engines' worker threads (``add_observer`` below).
        self.classifier_seconds = Histogram(
            "shieldgate_classifier_seconds",
            "Time from queueing a text for a local classifier to its scores: tokenizing, "
            "waiting for a batch, inference",
            ["model"],
            buckets=_SLOW,
            registry=r,
        )
        self.classifier_run_seconds = Histogram(
            "shieldgate_classifier_inference_seconds",
            "Time of one inference run (one micro-batch) of a local classifier",
            ["model"],
            buckets=_SLOW,
            registry=r,
        )
        self.classifier_windows = Histogram(
            "shieldgate_classifier_batch_windows",
            "Windows scored per inference run of a local classifier (more than 1: concurrent "
            "texts or a long text's windows share a run)",
            ["model"],
            buckets=_WINDOWS,
            registry=r,
        )
        # Read live at each scrape, so not in the multiprocess files: rendered on its own.
        self._live = _ClassifierQueues()
        r.register(self._live)
        classifier_engine.add_observer(self)
        self.policy_reloads = Counter(
            "shieldgate_policy_reloads", "Policy reloads by result", ["result"], registry=r
        )
        self.policy_stale = Gauge(
            "shieldgate_policy_stale",
            "1 while the last policy reload failed and an older policy is in force",
            registry=r,
            multiprocess_mode="livemax",  # 1 while any worker serves a stale policy
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

    def classifier_batch(self, model: str, windows: int, seconds: float) -> None:
        self.child(self.classifier_windows, model).observe(windows)
        self.child(self.classifier_run_seconds, model).observe(seconds)

    def classifier_check(self, model: str, seconds: float) -> None:
        self.child(self.classifier_seconds, model).observe(seconds)

    def model_label(self, model: str | None) -> str:
        return model if model in self._models else "other"

    def render(self) -> bytes:
        if MULTIPROCESS:
            # Every worker's values, read from their files at each scrape.
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # untyped upstream
            registry.register(self._live)
            return generate_latest(registry)
        return generate_latest(self.registry)


class _ClassifierQueues(Collector):
    """``shieldgate_classifier_queue_depth``: texts waiting for a local classifier's worker,
    read from the live engines when scraped."""

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "shieldgate_classifier_queue_depth",
            "Texts waiting for a local classifier's worker thread",
            labels=["model"],
        )
        depths: dict[str, int] = {}
        for engine in classifier_engine.engines():
            depths[engine.name] = depths.get(engine.name, 0) + engine.queue_depth
        for model, depth in sorted(depths.items()):
            family.add_metric([model], depth)
        yield family
