"""``create_app``: routes, typed state and the upstream session's lifetime. No business logic.

Only the routes below exist. Every other path is a 404 in OpenAI's error shape and is never
forwarded: an endpoint the proxy cannot guard (embeddings, files, assistants...) must not become
a way around the policy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from proxy.chat import chat_completions
from proxy.errors import error_middleware, json_response
from proxy.models import list_models
from proxy.settings import Settings
from proxy.state import POLICY, POLICY_HEADER, SETTINGS, UPSTREAM, PolicyHolder, policy_for
from proxy.upstream import Upstream
from shields.policy import CompiledPolicy

__all__ = ["create_app"]


async def healthz(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


async def _upstream_session(app: web.Application) -> AsyncIterator[None]:
    upstream = Upstream(app[SETTINGS])
    await upstream.start()
    app[UPSTREAM] = upstream
    yield
    await upstream.close()


async def _policy_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers[POLICY_HEADER] = policy_for(request).name


def create_app(settings: Settings, policy: CompiledPolicy) -> web.Application:
    app = web.Application(
        middlewares=[error_middleware(settings.max_body_bytes)],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings
    app[POLICY] = PolicyHolder(policy)
    app.cleanup_ctx.append(_upstream_session)
    app.on_response_prepare.append(_policy_header)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/healthz", healthz)
    return app
