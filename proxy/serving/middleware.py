"""The one middleware every request of the proxy's app goes through, outermost first:

1. the request's id (``proxy.serving.request_context``), current while it is handled;
2. its count in ``shieldgate_requests_total`` and its access-log line, once the handler is done
   (for a stream, once the stream has ended);
3. on the Anthropic surface, every error answer in Anthropic's shape
   (``proxy.errors.anthropic_answer``);
4. every exception as an answer in OpenAI's error shape (``proxy.errors.error_answer``), an
   upstream failure first logged unless the upstream client logged it already;
5. with a keys file, the client's key checked before the handler runs
   (``proxy.clients.auth.refused``).

One middleware rather than one per step: aiohttp wraps each middleware around the handler as a
coroutine of its own per request, and five of them cost more per request than the work they
do. The steps keep their order, so what a request gets is what the chain of five gave it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from aiohttp import web

from proxy.clients.auth import refused
from proxy.clients.keys import KeySource
from proxy.errors import Handler, UpstreamError, UpstreamTimeout, anthropic_answer, error_answer
from proxy.ops.metrics import Metrics
from proxy.serving.request_context import (
    begin_request,
    current_request_id,
    noted_verdict,
    request_id_of,
)
from proxy.state import MODEL, UPSTREAM, policy_for, tenant_of
from proxy.upstream.client import LoggedFailure

__all__ = ["front_middleware"]

access_log = logging.getLogger("shieldgate.access")

# Routes whose requests the shields judge: their access-log line carries a verdict.
_GUARDED = frozenset(
    {
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/embeddings",
        "/v1/messages",
        "/v1/completions",
    }
)
# The access log's status for a request whose handler was cancelled (the client left, or the
# shutdown grace ran out): nginx's "client closed request".
_CANCELLED = 499
# An access log must not copy kilobytes of whatever path a client sent.
_MAX_LOGGED_PATH = 256


def front_middleware(
    metrics: Metrics, *, access: bool, max_body_bytes: int, keys: KeySource | None
) -> Any:
    """The middleware (see the module docstring). ``access``: whether requests are logged
    (``Settings.access_log``); ``keys``: the app's keys file, None without one."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        token = begin_request(request)
        try:
            # Asked once per request: nothing below is built for a line that is not kept.
            logged = access and access_log.isEnabledFor(logging.INFO)
            started = time.perf_counter()
            try:
                try:
                    answer = None if keys is None else refused(request, metrics, keys)
                    response = await handler(request) if answer is None else answer
                except Exception as exc:
                    if isinstance(exc, UpstreamError) and not isinstance(exc, LoggedFailure):
                        _log_upstream_failure(request, exc)
                    response = error_answer(request, exc, max_body_bytes)
                anthropic_answer(request, response)
            except asyncio.CancelledError:
                if logged:
                    streamed = request.writer.output_size > 0
                    _log_access(request, _CANCELLED, started, streamed=streamed)
                raise
            route = request.match_info.route.resource
            metrics.child(
                metrics.requests,
                route.canonical if route is not None else "unmatched",
                str(response.status),
                policy_for(request).name,
                tenant_of(request),
                metrics.model_label(request.get(MODEL)),
            ).inc()
            if logged:
                # A response the handler prepared itself was streamed; any other is sent
                # after this middleware returns, in one piece.
                _log_access(request, response.status, started, streamed=response.prepared)
            return response
        finally:
            current_request_id.reset(token)

    return middleware


def _log_upstream_failure(request: web.Request, exc: UpstreamError) -> None:
    """Upstream failures found after the upstream answered (a reply that breaks off, cannot
    be read or is too large; the request's time limit) get their warning here; the upstream
    client has logged its own (connection errors, timeouts, bad HTTP) already."""
    upstream = request.app[UPSTREAM]
    upstream.log_failure("timeout" if isinstance(exc, UpstreamTimeout) else "invalid_reply")


def _log_access(request: web.Request, status: int, started: float, *, streamed: bool) -> None:
    """One line per request: what was asked, how it ended, under which policy, with which
    verdict — never a header's value, a query string or a body."""
    duration_ms = round((time.perf_counter() - started) * 1000, 3)
    route = request.match_info.route.resource
    guarded = route is not None and route.canonical in _GUARDED and request.method == "POST"
    verdict = noted_verdict(request)
    if verdict is not None:
        shown = verdict.value
    elif guarded:
        # No shield acted: allowed, unless the request failed before any answer came back.
        shown = "allow" if status < 400 else "error"
    else:
        shown = "-"  # a route the shields do not judge (models, probes, metrics, 404s)
    path = request.rel_url.raw_path[:_MAX_LOGGED_PATH]
    request_id = request_id_of(request)
    policy = policy_for(request).name
    access_log.info(
        "%s %s %d %.1fms policy=%s verdict=%s stream=%s (request %s)",
        request.method,
        path,
        status,
        duration_ms,
        policy,
        shown,
        "true" if streamed else "false",
        request_id,
        extra={
            "method": request.method,
            "path": path,
            "status": status,
            "duration_ms": duration_ms,
            "policy": policy,
            "tenant": tenant_of(request),
            "verdict": shown,
            "stream": streamed,
            "request_id": request_id,
        },
    )
