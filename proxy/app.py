"""``create_app``: routes, typed state and the upstream session's lifetime. No business logic.

Only the routes below exist. Every other path is a 404 in OpenAI's error shape and is never
forwarded: an endpoint the proxy cannot guard (files, assistants, audio...) must not become a way
around the policy. docs/endpoints.md lists what each route guards.

Errors aiohttp answers by itself, before any route runs, are in that shape too: see
``proxy.serving.connection``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from proxy.clients.auth import KEYS, presents_valid_key
from proxy.clients.keys import KeySource
from proxy.endpoints.chat import chat_completions
from proxy.endpoints.completions import create_completion
from proxy.endpoints.embeddings import create_embeddings
from proxy.endpoints.messages import count_tokens, create_message
from proxy.endpoints.models import list_models
from proxy.endpoints.responses import create_response, delete_response, retrieve_response
from proxy.errors import json_response
from proxy.mcp.pins import PinSource
from proxy.ops.audit import AuditTrail
from proxy.ops.logs import redact_aiohttp_logs
from proxy.ops.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from proxy.ops.metrics import Metrics
from proxy.ops.policy_source import Companion, PolicySource
from proxy.serving.connection import expect_continue
from proxy.serving.middleware import front_middleware
from proxy.serving.readiness import UpstreamProbe, readiness
from proxy.serving.request_context import REQUEST_ID_HEADER, request_id_of
from proxy.settings import Settings
from proxy.state import (
    AUDIT,
    INPUT_CACHE,
    MCP_PINS,
    METRICS,
    POLICY,
    POLICY_HASH_HEADER,
    POLICY_HEADER,
    REMOTE_BACKENDS,
    RESPONSE_STORE,
    SETTINGS,
    STREAM_SLOTS,
    UPSTREAM,
    UPSTREAM_PROBE,
    StreamSlots,
    policy_for,
)
from proxy.store.responses import open_response_store
from proxy.upstream.client import Upstream
from proxy.upstream.remote_backends import HttpBackends
from shields.normalize import load_confusables
from shields.openai.input_cache import InputCache
from shields.policy import CompiledPolicy
from shields.routing import PolicySet

__all__ = ["create_app"]

log = logging.getLogger("shieldgate.app")


async def healthz(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def metrics(request: web.Request) -> web.Response:
    body = request.app[METRICS].render()
    return web.Response(body=body, headers={"content-type": METRICS_CONTENT_TYPE})


async def _upstream_session(app: web.Application) -> AsyncIterator[None]:
    upstream = Upstream(app[SETTINGS], app[METRICS])
    await upstream.start()
    app[UPSTREAM] = upstream
    yield
    await upstream.close()


async def _remote_backends(app: web.Application) -> AsyncIterator[None]:
    backends = HttpBackends()
    app[REMOTE_BACKENDS] = backends
    yield
    await backends.close()


async def _response_store(app: web.Application) -> AsyncIterator[None]:
    # A SQLite store opens lazily (no file appears unless /v1/responses stores one); a
    # PostgreSQL store connects now, and a failure (StoreStartupError) stops the start.
    store = await open_response_store(app[SETTINGS])
    app[RESPONSE_STORE] = store
    yield
    await store.close()


async def readyz(request: web.Request) -> web.Response:
    """Ready: a policy is in force (always, once started) and the upstream accepts connections.
    The details need a valid client key (see ``proxy.serving.readiness``)."""
    upstream = await request.app[UPSTREAM_PROBE].check()
    body, ready = readiness(request.app[POLICY], upstream, details=presents_valid_key(request))
    return json_response(body, status=200 if ready else 503)


async def _watch_policy(app: web.Application) -> AsyncIterator[None]:
    interval = app[SETTINGS].policy_reload_interval
    task = None
    if interval > 0:
        task = asyncio.create_task(app[POLICY].watch(interval))
    yield
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _audit_trail(app: web.Application) -> AsyncIterator[None]:
    yield
    app[AUDIT].close()  # drains what is queued for the file


async def _policy_header(request: web.Request, response: web.StreamResponse) -> None:
    policy = policy_for(request)
    response.headers[POLICY_HEADER] = policy.name
    response.headers[POLICY_HASH_HEADER] = policy.digest
    response.headers[REQUEST_ID_HEADER] = request_id_of(request)


def create_app(settings: Settings, policy: CompiledPolicy | PolicySet) -> web.Application:
    """The service. ``policy`` is in force at start; when ``settings.policy`` names its file
    or directory, edits there (or SIGHUP, see the CLI) load new policies.

    With ``settings.keys_file`` every request but the probes and metrics needs a client key;
    a keys file that does not load (or names an unknown policy) raises KeysFileError; so does
    an MCP pins file (``settings.mcp_pins_file``) that does not load: PinsFileError."""
    # Load the confusables table now, not in the first request that holds non-ASCII text.
    load_confusables()
    # However the app is served, aiohttp's logs never quote a request's bytes.
    redact_aiohttp_logs()
    metrics_ = Metrics(models=settings.metrics_models)
    policies = PolicySet.single(policy) if isinstance(policy, CompiledPolicy) else policy
    keys = KeySource(settings.keys_file, policies) if settings.keys_file else None
    pins = PinSource(settings.mcp_pins_file) if settings.mcp_pins_file else None
    # Request ids, metrics and access log, errors in OpenAI's (or Anthropic's) shape and, with
    # a keys file, the client's key checked before any handler reads the body.
    middleware = front_middleware(
        metrics_, access=settings.access_log, max_body_bytes=settings.max_body_bytes, keys=keys
    )
    app = web.Application(middlewares=[middleware], client_max_size=settings.max_body_bytes)
    app[SETTINGS] = settings
    app[METRICS] = metrics_
    app[STREAM_SLOTS] = StreamSlots(settings.max_concurrent_streams)
    app[UPSTREAM_PROBE] = UpstreamProbe(
        settings.upstream,
        timeout=min(settings.connect_timeout, 2.0),
        ttl=settings.readyz_upstream_ttl,
    )
    app[INPUT_CACHE] = InputCache(settings.input_cache_bytes)
    app[AUDIT] = AuditTrail(
        settings.audit_log,
        key=settings.audit_hash_key.encode() if settings.audit_hash_key else None,
        include_text=settings.audit_include_text,
    )

    def reloaded(ok: bool) -> None:
        metrics_.policy_reloads.labels("ok" if ok else "rejected").inc()
        metrics_.policy_stale.set(0 if ok else 1)

    path = Path(settings.policy) if settings.policy else None
    # The keys file is reloaded with the policies, checked against them: both or neither.
    # The pins file too: an edit takes effect as a policy edit does.
    companions: list[Companion] = [keys] if keys is not None else []
    if pins is not None:
        companions.append(pins)
        app[MCP_PINS] = pins
    app[POLICY] = PolicySource(policies, path, on_reload=reloaded, companions=companions)
    if keys is not None:
        app[KEYS] = keys
    # The store first: when it cannot start, nothing else has been started to be left open.
    app.cleanup_ctx.append(_response_store)
    app.cleanup_ctx.append(_upstream_session)
    app.cleanup_ctx.append(_watch_policy)
    app.cleanup_ctx.append(_remote_backends)
    app.cleanup_ctx.append(_audit_trail)
    app.on_response_prepare.append(_policy_header)
    expect = expect_continue
    app.router.add_post("/v1/chat/completions", chat_completions, expect_handler=expect)
    app.router.add_post("/v1/completions", create_completion, expect_handler=expect)
    app.router.add_post("/v1/embeddings", create_embeddings, expect_handler=expect)
    app.router.add_get("/v1/models", list_models, expect_handler=expect)
    app.router.add_post("/v1/responses", create_response, expect_handler=expect)
    app.router.add_get("/v1/responses/{response_id}", retrieve_response, expect_handler=expect)
    app.router.add_delete("/v1/responses/{response_id}", delete_response, expect_handler=expect)
    app.router.add_post("/v1/messages", create_message, expect_handler=expect)
    app.router.add_post("/v1/messages/count_tokens", count_tokens, expect_handler=expect)
    app.router.add_get("/healthz", healthz, expect_handler=expect)
    app.router.add_get("/readyz", readyz, expect_handler=expect)
    app.router.add_get("/metrics", metrics, expect_handler=expect)
    return app
