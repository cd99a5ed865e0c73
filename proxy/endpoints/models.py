"""``GET /v1/models``: relayed as it is (a list of model ids carries nothing to guard)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from proxy.errors import UpstreamError
from proxy.state import UPSTREAM
from proxy.upstream.client import response_headers

__all__ = ["list_models"]


async def list_models(request: web.Request) -> web.StreamResponse:
    upstream = request.app[UPSTREAM]
    async with upstream.request(
        "GET",
        "models",
        headers=upstream.headers(request.headers),
        query=request.rel_url.raw_query_string,
        endpoint="models",
    ) as reply:
        limit = upstream.settings.max_upstream_body_bytes
        try:
            body = await reply.content.read(limit + 1)
            while len(body) <= limit and not reply.content.at_eof():
                more = await reply.content.read(limit + 1 - len(body))
                if not more:
                    break
                body += more
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise UpstreamError(f"The upstream reply broke off: {type(exc).__name__}") from None
        if len(body) > limit:
            raise UpstreamError(f"The upstream reply is larger than {limit} bytes")
        return web.Response(body=body, status=reply.status, headers=response_headers(reply.headers))
