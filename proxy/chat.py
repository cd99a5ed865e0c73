"""``POST /v1/chat/completions``: input stage, forwarding, and the JSON and stream output paths."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from proxy import json_codec
from proxy.chat_request import ChatRequest, check_input, conversation_of, parse_chat_request
from proxy.errors import (
    Overloaded,
    UpstreamError,
    UpstreamTimeout,
    json_response,
    start_response,
)
from proxy.metrics import Metrics
from proxy.off_loop import off_loop_if_large
from proxy.openai_texts import MalformedReply
from proxy.refusal import (
    StreamContext,
    content_filter_error,
    refusal_completion,
    refusal_stream,
)
from proxy.remote_checks import check_input_remote, check_reply_remote
from proxy.reply_check import check_error_body, check_reply, reported_error
from proxy.sse import SSEDecoder, SSEError
from proxy.state import (
    BLOCKED_HEADER,
    METRICS,
    STREAM_SLOTS,
    UPSTREAM,
    choose_policy,
    fingerprint_for,
    read_body,
    record_findings,
    remote_context,
)
from proxy.stream_checks import upstream_reads
from proxy.stream_guard import StreamGuard
from proxy.upstream import Upstream, host_of, log_failure, response_headers
from shields.base import Stage
from shields.policy import CompiledPolicy

__all__ = ["chat_completions"]

log = logging.getLogger("shieldgate.proxy")

_READ_CHUNK = 64 * 1024
# 2xx statuses that carry no body (RFC 9110 15.3.5, 15.3.6).
_NO_BODY = frozenset({204, 205})


async def chat_completions(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    chat = await off_loop_if_large(len(raw), parse_chat_request, raw)
    policy = choose_policy(request, model=chat.model)
    app = request.app  # a chain of properties: looked up once
    metrics = app[METRICS]
    started = time.perf_counter()
    fingerprint = fingerprint_for(request)
    check = await off_loop_if_large(len(raw), check_input, policy, chat, fingerprint=fingerprint)
    metrics.child(metrics.stage_seconds, "input").observe(time.perf_counter() - started)
    record_findings(request, Stage.INPUT, check.findings)
    if check.blocked:
        return await _refuse_input(request, policy, chat)
    redacted = check.redacted
    if policy.input_remote:
        started = time.perf_counter()
        remote = remote_context(request, policy, conversation_of(chat))
        outcome = await check_input_remote(policy, chat, remote)
        metrics.child(metrics.remote_seconds, "input").observe(time.perf_counter() - started)
        record_findings(request, Stage.INPUT, outcome.findings)
        if outcome.blocked:
            return await _refuse_input(request, policy, chat)
        redacted = redacted or outcome.redacted
    if chat.stream:
        return await _with_stream_slot(request, policy, chat, raw, redacted)
    limit = app[UPSTREAM].settings.request_timeout
    if not limit:
        return await _forward(request, policy, chat, raw, redacted)
    try:
        async with asyncio.timeout(limit) as timeout:
            deadline = _Deadline(limit, timeout)
            return await _forward(request, policy, chat, raw, redacted, deadline)
    except TimeoutError:
        raise UpstreamTimeout(deadline.message()) from None


class _Deadline:
    """A non-stream request's ``request_timeout``, which a relayed stream takes over once its
    response has started (a 504 can no longer be sent then)."""

    __slots__ = ("limit", "timeout", "until")

    def __init__(self, limit: float, timeout: asyncio.Timeout) -> None:
        self.limit = limit
        self.timeout = timeout
        self.until: float | None = None  # when it falls (loop time), once handed over

    def hand_over(self) -> None:
        """Stops the deadline here; the stream keeps ``until``."""
        self.until = self.timeout.when()
        self.timeout.reschedule(None)

    def message(self) -> str:
        return _took_too_long(self.limit)


def _took_too_long(limit: float) -> str:
    return f"The request took longer than {limit:g} s"


async def with_deadline(
    limit: float, work: Coroutine[Any, Any, web.StreamResponse]
) -> web.StreamResponse:
    """A non-stream request has ``request_timeout`` (``limit``) in all (a stream is bounded by
    the upstream's silences instead: ``read_timeout``). For work that answers only once it has
    the whole reply (``/v1/responses``): a 504 past the limit."""
    if not limit:
        return await work
    try:
        async with asyncio.timeout(limit):
            return await work
    except TimeoutError:
        raise UpstreamTimeout(_took_too_long(limit)) from None


@contextlib.contextmanager
def stream_slot(request: web.Request) -> Iterator[None]:
    """Streams are long-lived: past ``max_concurrent_streams`` a new one (chat completions or
    Responses) is turned away at once (503 + Retry-After) instead of piling up behind the
    others."""
    slots = request.app[STREAM_SLOTS]
    if not slots.acquire():
        request.app[METRICS].rejected.labels("concurrency").inc()
        raise Overloaded("Too many streams in flight; retry shortly", retry_after=1)
    try:
        yield
    finally:
        slots.release()


async def _with_stream_slot(
    request: web.Request, policy: CompiledPolicy, chat: ChatRequest, raw: bytes, redacted: bool
) -> web.StreamResponse:
    with stream_slot(request):
        return await _forward(request, policy, chat, raw, redacted)


async def _forward(
    request: web.Request,
    policy: CompiledPolicy,
    chat: ChatRequest,
    raw: bytes,
    redacted: bool,
    deadline: _Deadline | None = None,
) -> web.StreamResponse:
    body = json_codec.dumps(chat.body) if redacted else raw
    app = request.app
    upstream = app[UPSTREAM]
    headers = upstream.headers(request.headers)
    if redacted:
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        headers["Content-Type"] = "application/json"
    metrics = app[METRICS]
    started = time.perf_counter()
    async with upstream.request(
        "POST",
        "chat/completions",
        headers=headers,
        body=body,
        # Still percent-encoded, as the client sent it: decoding it would change what it says.
        query=request.rel_url.raw_query_string,
    ) as reply:
        metrics.child(metrics.upstream_ttfb, "chat").observe(time.perf_counter() - started)
        try:
            if reply.content_type == "text/event-stream" and reply.status < 300:
                if reply.status in _NO_BODY:
                    # A body after a status that forbids one would corrupt the connection.
                    raise UpstreamError(
                        f"The upstream sent a stream with HTTP {reply.status}, which has no body"
                    )
                return await _relay_stream(request, policy, chat, reply, deadline)
            return await _relay_json(request, policy, chat, reply, upstream)
        finally:
            metrics.child(metrics.upstream_seconds, "chat").observe(time.perf_counter() - started)


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
    stream = refusal_stream(refusal.message, context)  # before any byte is sent
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    await start_response(request, response)
    await response.write(stream)
    await response.write_eof()
    return response


async def read_upstream_body(reply: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body of a non-stream upstream reply, up to ``limit`` bytes (UpstreamError past
    it, or when the reply breaks off)."""
    parts: list[bytes] = []
    size = 0
    try:
        async for data in reply.content.iter_chunked(_READ_CHUNK):
            size += len(data)
            if size > limit:
                raise UpstreamError(f"The upstream reply is larger than {limit} bytes")
            parts.append(data)
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise UpstreamError(f"The upstream reply broke off: {type(exc).__name__}") from None
    return b"".join(parts)


def relay_error_reply(
    policy: CompiledPolicy, status: int, headers: CIMultiDict[str], body: bytes
) -> web.Response:
    """An upstream error status keeps its status and shape (the client's SDK maps them to its
    exceptions); its message is upstream text, checked by the output shields like a reply."""
    checked = check_error_body(policy, body, status)
    if checked is not None:
        headers.popall("Content-Type", None)
        return web.Response(
            body=checked, status=status, headers=headers, content_type="application/json"
        )
    return web.Response(body=body, status=status, headers=headers)


@dataclass(slots=True)
class CheckedReply:
    """A non-stream completion after the output stage: redactions written into ``completion``;
    ``error`` is the answer to send instead when the upstream reported an error in it."""

    completion: dict[str, Any]
    blocked: bool
    redacted: bool
    error: web.Response | None = None


async def check_json_reply(
    request: web.Request, policy: CompiledPolicy, chat: ChatRequest, body: bytes, status: int
) -> CheckedReply:
    """Reads and checks a non-stream ``chat.completion`` (local then remote output shields).

    Raises UpstreamError when it cannot be read: a reply the proxy cannot read is a reply it
    cannot check (fail closed). Shared by chat and the Responses API, which also gets a JSON
    reply when the upstream ignores ``"stream": true``.
    """
    metrics = request.app[METRICS]
    try:
        # A repeated key would be read one way here and maybe another by the client.
        completion = json_codec.loads(body, unique_keys=True)
        if not isinstance(completion, dict):
            raise MalformedReply("the reply is not a JSON object")
        reported = reported_error(policy, completion, status)
        if reported is not None:
            # A success status around an error: answered as the error it is, and none of
            # the reply's other fields (which no shield read) goes with it.
            log.warning("the upstream reported an error in an HTTP %d reply", status)
            metrics.upstream_errors.labels("bad_reply").inc()
            error = web.Response(body=reported, status=502, content_type="application/json")
            return CheckedReply(completion, False, False, error)
        started = time.perf_counter()
        check = check_reply(
            policy,
            completion,
            n=chat.n,
            tools=chat.tool_names,
            fingerprint=fingerprint_for(request),
        )
        metrics.child(metrics.stage_seconds, "output").observe(time.perf_counter() - started)
        record_findings(request, Stage.OUTPUT, check.findings)
        blocked, redacted = check.blocked, check.redacted
        if policy.output_remote and not blocked:
            started = time.perf_counter()
            remote = remote_context(request, policy, conversation_of(chat))
            outcome = await check_reply_remote(policy, completion, remote)
            metrics.child(metrics.remote_seconds, "output").observe(time.perf_counter() - started)
            record_findings(request, Stage.OUTPUT, outcome.findings)
            blocked, redacted = outcome.blocked, redacted or outcome.redacted
    except (json_codec.InvalidJSON, MalformedReply) as exc:
        raise UpstreamError(f"The upstream sent a reply that cannot be checked: {exc}") from None
    return CheckedReply(completion, blocked, redacted)


async def _relay_json(
    request: web.Request,
    policy: CompiledPolicy,
    chat: ChatRequest,
    reply: aiohttp.ClientResponse,
    upstream: Upstream,
) -> web.StreamResponse:
    body = await read_upstream_body(reply, upstream.settings.max_upstream_body_bytes)
    headers = response_headers(reply.headers)
    if reply.status >= 300:
        return relay_error_reply(policy, reply.status, headers, body)
    checked = await check_json_reply(request, policy, chat, body, reply.status)
    if checked.error is not None:
        return checked.error
    completion, blocked, redacted = checked.completion, checked.blocked, checked.redacted
    if blocked:
        refusal = policy.spec.refusal
        blocked_header = {BLOCKED_HEADER: "output"}
        if refusal.style == "error":
            error = content_filter_error(refusal.message)
            return json_response(error, status=400, headers=blocked_header)
        model = completion.get("model")
        if not isinstance(model, str):
            model = chat.model
        return json_response(
            refusal_completion(refusal.message, model=model, n=max(chat.n, 1)),
            headers=blocked_header,
        )
    if redacted:
        body = json_codec.dumps(completion)
    return web.Response(body=body, status=reply.status, headers=headers)


async def _relay_stream(
    request: web.Request,
    policy: CompiledPolicy,
    chat: ChatRequest,
    reply: aiohttp.ClientResponse,
    deadline: _Deadline | None = None,
) -> web.StreamResponse:
    context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
    guard = StreamGuard(
        policy,
        context,
        on_held=request.app[METRICS].held_chars.observe,
        on_finding=lambda finding: record_findings(request, Stage.OUTPUT, [finding]),
        fingerprint=fingerprint_for(request),
        remote=remote_context(request, policy, conversation_of(chat))
        if policy.output_remote
        else None,
        tools=chat.tool_names,
    )
    metrics = request.app[METRICS]
    response = web.StreamResponse(status=reply.status, headers=response_headers(reply.headers))
    # A non-stream request answered with a stream: its deadline can no longer be a 504 once
    # the response starts, so the stream keeps it and ends in an in-band error past it.
    if deadline is not None:
        deadline.hand_over()
    await start_response(request, response)
    metrics.streams_in_flight.inc()
    try:
        return await _pump(response, reply, guard, metrics, deadline)
    finally:
        metrics.streams_in_flight.dec()


async def _pump(
    response: web.StreamResponse,
    reply: aiohttp.ClientResponse,
    guard: StreamGuard,
    metrics: Metrics,
    deadline: _Deadline | None = None,
) -> web.StreamResponse:
    """Upstream bytes -> events -> guard -> client, one network read at a time; past a
    ``deadline`` handed over (a non-stream request's), the stream ends in an error event."""
    decoder = SSEDecoder()
    held = 0  # this stream's share of the held-bytes gauge
    limit = asyncio.timeout_at(deadline.until if deadline is not None else None)
    try:
        async with limit, contextlib.aclosing(upstream_reads(reply.content, guard)) as reads:
            async for data in reads:
                if data is None:  # a remote shield's verdict arrived
                    await _write(response, guard.collect_checks())
                elif data:
                    await _write(response, guard.feed_read(decoder, data))
                else:
                    await _write(response, guard.end(truncated=bool(decoder.finish())))
                metrics.held_bytes.inc(guard.held_bytes - held)
                held = guard.held_bytes
                if guard.closed:
                    break
    except SSEError:
        metrics.upstream_errors.labels("bad_reply").inc()
        log_failure("invalid_reply", host_of(reply.url))
        await _write(response, guard.fail("The upstream sent an oversized stream event"))
    except (TimeoutError, aiohttp.ClientError) as exc:
        if deadline is not None and limit.expired():
            metrics.upstream_errors.labels("timeout").inc()
            log_failure("timeout", host_of(reply.url))
            await _write(response, guard.fail(deadline.message()))
        else:
            metrics.upstream_errors.labels("broken_stream").inc()
            log_failure("broken_stream", host_of(reply.url))
            await _write(
                response, guard.fail(f"The upstream stream broke off: {type(exc).__name__}")
            )
    except ConnectionResetError:
        # The client left; leaving the ``async with`` closes the upstream response.
        log.info("client disconnected mid-stream")
        return response
    finally:
        metrics.held_bytes.dec(held)
        guard.cancel_checks()
    await response.write_eof()
    return response


async def _write(response: web.StreamResponse, data: bytes | memoryview) -> None:
    if data:
        await response.write(data)
