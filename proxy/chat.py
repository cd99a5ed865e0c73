"""``POST /v1/chat/completions``: input stage, forwarding, and the JSON and stream output paths."""

from __future__ import annotations

import logging

import aiohttp
from aiohttp import web

from proxy import json_codec
from proxy.chat_request import ChatRequest, check_input, parse_chat_request
from proxy.errors import UpstreamError, json_response
from proxy.openai_texts import MalformedReply
from proxy.refusal import (
    StreamContext,
    content_filter_error,
    refusal_completion,
    refusal_stream,
)
from proxy.reply_check import check_reply
from proxy.sse import SSEDecoder, SSEError
from proxy.state import BLOCKED_HEADER, UPSTREAM, choose_policy, read_body, record_findings
from proxy.stream_guard import StreamGuard
from proxy.upstream import response_headers
from shields.base import Stage
from shields.policy import CompiledPolicy

__all__ = ["chat_completions"]

log = logging.getLogger("shieldgate.proxy")

_READ_CHUNK = 64 * 1024


async def chat_completions(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    chat = parse_chat_request(raw)
    policy = choose_policy(request, model=chat.model)
    check = check_input(policy, chat)
    record_findings(request, Stage.INPUT, check.findings)
    if check.blocked:
        return await _refuse_input(request, policy, chat)
    body = json_codec.dumps(chat.body) if check.redacted else raw
    upstream = request.app[UPSTREAM]
    headers = upstream.headers(request.headers)
    if check.redacted:
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        headers["Content-Type"] = "application/json"
    async with upstream.request(
        "POST", "chat/completions", headers=headers, body=body, query=request.query_string
    ) as reply:
        if reply.content_type == "text/event-stream" and reply.status < 400:
            return await _relay_stream(request, policy, chat, reply)
        return await _relay_json(request, policy, chat, reply)


async def _refuse_input(
    request: web.Request, policy: CompiledPolicy, chat: ChatRequest
) -> web.StreamResponse:
    refusal = policy.spec.refusal
    headers = {BLOCKED_HEADER: "input"}
    if refusal.style == "error":
        return json_response(content_filter_error(refusal.message), status=400, headers=headers)
    if not chat.stream:
        completion = refusal_completion(refusal.message, model=chat.model, n=chat.n)
        return json_response(completion, headers=headers)
    context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    await response.prepare(request)
    await response.write(refusal_stream(refusal.message, context))
    await response.write_eof()
    return response


async def _read_all(reply: aiohttp.ClientResponse, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for data in reply.content.iter_chunked(_READ_CHUNK):
        size += len(data)
        if size > limit:
            raise UpstreamError(f"The upstream reply is larger than {limit} bytes")
        parts.append(data)
    return b"".join(parts)


async def _relay_json(
    request: web.Request,
    policy: CompiledPolicy,
    chat: ChatRequest,
    reply: aiohttp.ClientResponse,
) -> web.StreamResponse:
    settings = request.app[UPSTREAM].settings
    try:
        body = await _read_all(reply, settings.max_upstream_body_bytes)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise UpstreamError(f"The upstream reply broke off: {type(exc).__name__}") from None
    headers = response_headers(reply.headers)
    if reply.status >= 300:
        # Errors are relayed as they are: the client's SDK maps them to its exceptions.
        return web.Response(body=body, status=reply.status, headers=headers)
    try:
        completion = json_codec.loads(body)
        if not isinstance(completion, dict):
            raise MalformedReply("the reply is not a JSON object")
        check = check_reply(policy, completion)
    except (json_codec.InvalidJSON, MalformedReply) as exc:
        # Fail closed: a reply the proxy cannot read is a reply it cannot check.
        raise UpstreamError(f"The upstream sent a reply that cannot be checked: {exc}") from None
    record_findings(request, Stage.OUTPUT, check.findings)
    if check.blocked:
        refusal = policy.spec.refusal
        blocked = {BLOCKED_HEADER: "output"}
        if refusal.style == "error":
            return json_response(content_filter_error(refusal.message), status=400, headers=blocked)
        model = completion.get("model")
        if not isinstance(model, str):
            model = chat.model
        return json_response(
            refusal_completion(refusal.message, model=model, n=max(chat.n, 1)), headers=blocked
        )
    if check.redacted:
        body = json_codec.dumps(completion)
    return web.Response(body=body, status=reply.status, headers=headers)


async def _relay_stream(
    request: web.Request,
    policy: CompiledPolicy,
    chat: ChatRequest,
    reply: aiohttp.ClientResponse,
) -> web.StreamResponse:
    context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
    guard = StreamGuard(
        policy,
        context,
        on_finding=lambda finding: record_findings(request, Stage.OUTPUT, [finding]),
    )
    response = web.StreamResponse(status=reply.status, headers=response_headers(reply.headers))
    await response.prepare(request)
    decoder = SSEDecoder()
    try:
        async for data in reply.content.iter_any():
            out = [guard.feed(event) for event in decoder.feed(data)]
            out.append(guard.flush())
            await _write(response, b"".join(out))
            if guard.closed:
                break
        else:
            await _write(response, guard.end(truncated=bool(decoder.finish())))
    except SSEError:
        await _write(response, guard.fail("The upstream sent an oversized stream event"))
    except (TimeoutError, aiohttp.ClientError) as exc:
        await _write(response, guard.fail(f"The upstream stream broke off: {type(exc).__name__}"))
    except ConnectionResetError:
        # The client left; leaving the ``async with`` closes the upstream response.
        log.info("client disconnected mid-stream")
        return response
    await response.write_eof()
    return response


async def _write(response: web.StreamResponse, data: bytes) -> None:
    if data:
        await response.write(data)
