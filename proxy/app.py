"""``create_app``: routes, typed state and the upstream session's lifetime. No business logic.

Only the routes below exist. Every other path is a 404 in OpenAI's error shape and is never
forwarded: an endpoint the proxy cannot guard (embeddings, files, assistants...) must not become
a way around the policy.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from proxy.chat import chat_completions
from proxy.errors import error_middleware, json_response
from proxy.models import list_models
from proxy.policy_source import PolicySource
from proxy.response_store import open_response_store
from proxy.responses import create_response, delete_response, retrieve_response
from proxy.settings import Settings
from proxy.state import (
    POLICY,
    POLICY_HASH_HEADER,
    POLICY_HEADER,
    RESPONSE_STORE,
    SETTINGS,
    UPSTREAM,
    policy_for,
)
from proxy.upstream import Upstream
from shields.policy import CompiledPolicy
from shields.routing import PolicySet

__all__ = ["create_app"]


async def healthz(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def _upstream_session(app: web.Application) -> AsyncIterator[None]:
    upstream = Upstream(app[SETTINGS])
    await upstream.start()
    app[UPSTREAM] = upstream
    yield
    await upstream.close()


async def _response_store(app: web.Application) -> AsyncIterator[None]:
    # Opened lazily by the store itself: no file appears unless /v1/responses stores one.
    store = open_response_store(app[SETTINGS].responses_db)
    app[RESPONSE_STORE] = store
    yield
    await store.close()


async def readyz(request: web.Request) -> web.Response:
    source = request.app[POLICY]
    policy = source.policies.default
    return json_response(
        {
            "status": "ready",
            "policy": {
                "name": policy.name,
                "hash": policy.digest,
                "policies": {p.name: p.digest for p in source.policies.policies.values()},
                "stale": source.stale,
                "error": source.error,
                "loaded_at": source.loaded_at,
                "reloads": source.reloads,
                "reload_failures": source.failures,
            },
        }
    )


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


async def _policy_header(request: web.Request, response: web.StreamResponse) -> None:
    policy = policy_for(request)
    response.headers[POLICY_HEADER] = policy.name
    response.headers[POLICY_HASH_HEADER] = policy.digest


def create_app(settings: Settings, policy: CompiledPolicy | PolicySet) -> web.Application:
    """The service. ``policy`` is in force at start; when ``settings.policy`` names its file
    or directory, edits there (or SIGHUP, see the CLI) load new policies."""
    app = web.Application(
        middlewares=[error_middleware(settings.max_body_bytes)],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings
    policies = PolicySet.single(policy) if isinstance(policy, CompiledPolicy) else policy
    app[POLICY] = PolicySource(policies, Path(settings.policy) if settings.policy else None)
    app.cleanup_ctx.append(_upstream_session)
    app.cleanup_ctx.append(_watch_policy)
    app.cleanup_ctx.append(_response_store)
    app.on_response_prepare.append(_policy_header)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/responses", create_response)
    app.router.add_get("/v1/responses/{response_id}", retrieve_response)
    app.router.add_delete("/v1/responses/{response_id}", delete_response)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
