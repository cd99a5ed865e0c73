"""``GET /v1/models``: the list relayed as it is (model ids carry nothing to guard); its
headers pass the output shields as every reply's do."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from proxy.errors import UpstreamError
from proxy.exchange.header_check import guarded_response_headers
from proxy.state import UPSTREAM

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
        headers = guarded_response_headers(request, reply.headers, "models")
        return web.Response(body=body, status=reply.status, headers=headers)
