"""``GET /v1/models``: the upstream's model list, relayed as it came unless the output shields
flag a string of it (then a 502: a list cannot be half relayed); its headers pass the output
shields as every reply's do."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from proxy.errors import UpstreamError
from proxy.exchange.header_check import guarded_response_headers
from proxy.exchange.lifecycle import relay_error_reply
from proxy.exchange.reply_check import check_textless_reply
from proxy.state import UPSTREAM, policy_for

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
        policy = policy_for(request)
        headers = guarded_response_headers(request, reply.headers, "models", policy)
        if reply.status >= 300:  # an error body: checked as every upstream error is
            return relay_error_reply(policy, reply.status, headers, body)
        await check_textless_reply(request, policy, body, "models")
        return web.Response(body=body, status=reply.status, headers=headers)
