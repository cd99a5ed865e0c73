"""``/v1/responses``: the OpenAI Responses API, served over the upstream's chat completions.

A request is translated into a chat-completions request (``proxy.responses_request``), checked
by the same input stage as ``/v1/chat/completions``, and always sent upstream as a stream, also
when the client did not ask for one. The upstream's events go through the same ``StreamGuard``,
and only what it releases is translated into Responses events (``proxy.responses_stream``). So
there is one guarded path: a non-stream response is exactly the object ``response.completed``
carries, a block closes the upstream at once (the upstream stops generating), and the zero-leak
guarantee of the stream guard covers every delta event. An upstream that ignores ``"stream":
true`` and answers with one JSON ``chat.completion`` has it checked whole by the output stage,
as ``/v1/chat/completions`` checks a non-stream reply, before any of it is translated.

Errors before the first byte are HTTP errors in OpenAI's shape, as for chat completions: bad
requests 400, an unreachable upstream 502, a non-stream request past ``request_timeout`` 504,
upstream error statuses relayed with their message checked by the output shields. Once a stream
has started, a block is the Responses refusal form and an upstream failure is
``response.failed``. An upstream's own error text never reaches the client unchecked: a failure
carries the proxy's own message.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from proxy import json_codec
from proxy.chat import (
    check_json_reply,
    read_upstream_body,
    relay_error_reply,
    stream_slot,
    with_deadline,
)
from proxy.chat_request import ChatRequest, check_input, conversation_of, parse_chat_request
from proxy.errors import BadRequest, ProxyError, UpstreamError, json_response, start_response
from proxy.off_loop import off_loop_if_large
from proxy.refusal import StreamContext, content_filter_error
from proxy.remote_checks import check_input_remote
from proxy.response_store import StoredResponse
from proxy.responses_request import (
    ResponsesRequest,
    echo_checked,
    items_to_messages,
    new_id,
    parse_responses_request,
    upstream_body,
)
from proxy.responses_stream import (
    STREAM_FAILED,
    Event,
    GuardedResponseStream,
    MalformedChunk,
    ResponseTranslator,
    encode_events,
)
from proxy.state import (
    BLOCKED_HEADER,
    METRICS,
    RESPONSE_STORE,
    UPSTREAM,
    choose_policy,
    fingerprint_for,
    read_body,
    record_findings,
    remote_context,
)
from proxy.stream_checks import upstream_reads
from proxy.stream_guard import StreamGuard
from proxy.upstream import response_headers
from shields.base import Stage
from shields.policy import CompiledPolicy

__all__ = [
    "NotFound",
    "StoreUnavailable",
    "create_response",
    "delete_response",
    "retrieve_response",
]

log = logging.getLogger("shieldgate.proxy")

_NOT_FORWARDED = frozenset({"content-type", "accept"})


class NotFound(ProxyError):
    status = 404
    type = "invalid_request_error"


class StoreUnavailable(ProxyError):
    status = 503
    type = "server_error"
    code = "store_unavailable"


def _owner(request: web.Request) -> str:
    """Whose response it is: a digest of the credential (never the credential itself)."""
    credential = request.headers.get("Authorization", "")
    return hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()


class _Turn:
    """One request's conversation, and storing its outcome."""

    def __init__(
        self,
        request: web.Request,
        parsed: ResponsesRequest,
        messages: list[dict[str, Any]],
    ) -> None:
        self.request = request
        self.parsed = parsed
        # After the input stage (redactions applied), without the instructions.
        self.history = messages[parsed.system_count :]
        self.translator = ResponseTranslator(
            response_id=new_id("resp"), model=parsed.model, echo=parsed.echo, streamed=parsed.stream
        )
        self._saved = False

    async def save(self, *, include_input: bool = True) -> None:
        final = self.translator.final
        if not self.parsed.store or final is None or self._saved:
            return
        self._saved = True
        conversation = self.history
        if not include_input:
            conversation = conversation[: len(conversation) - len(self.parsed.input_messages)]
        if final["status"] != "failed":
            output = self.translator.conversation_output()
            conversation = conversation + items_to_messages(output, where="output")
        record = StoredResponse(
            id=final["id"],
            owner=_owner(self.request),
            response=final,
            conversation=conversation,
        )
        try:
            await self.request.app[RESPONSE_STORE].put(record)
        except Exception:
            # The answer stands; only a later previous_response_id or GET will miss it.
            log.exception("could not store response %s", final["id"])


async def create_response(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    parsed = await off_loop_if_large(len(raw), parse_responses_request, raw)
    policy = choose_policy(request, model=parsed.model)
    prior: list[dict[str, Any]] = []
    if parsed.previous_response_id is not None:
        record = await _load(request, parsed.previous_response_id)
        if record is None or record.owner != _owner(request):
            raise BadRequest(
                f"Previous response with id '{parsed.previous_response_id}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        prior = record.conversation
    # The translated request takes the chat-completions parser and input stage as it is, so
    # input shields, redaction and blocks behave exactly as for /v1/chat/completions.
    body = json_codec.dumps(parsed.chat_body(prior))
    chat = await off_loop_if_large(len(body), parse_chat_request, body)
    fingerprint = fingerprint_for(request)
    check = await off_loop_if_large(len(body), check_input, policy, chat, fingerprint=fingerprint)
    record_findings(request, Stage.INPUT, check.findings)
    # What the response repeats of the request is what the input stage let through (and is
    # stored so): redacted instructions and tool definitions, nothing of a blocked input.
    echo_checked(parsed, chat.body, blocked=check.blocked)
    turn = _Turn(request, parsed, chat.body["messages"])
    if check.blocked:
        return await _refuse(turn, policy, Stage.INPUT)
    if policy.input_remote:
        remote = remote_context(request, policy, conversation_of(chat))
        outcome = await check_input_remote(policy, chat, remote)
        record_findings(request, Stage.INPUT, outcome.findings)
        echo_checked(parsed, chat.body, blocked=outcome.blocked)
        if outcome.blocked:
            return await _refuse(turn, policy, Stage.INPUT)
    if parsed.stream:
        with stream_slot(request):
            return await _forward(turn, policy, chat)
    # A non-stream request has request_timeout in all, as on /v1/chat/completions: nothing has
    # been sent to the client before the response is complete, so running out is a 504.
    limit = request.app[UPSTREAM].settings.request_timeout
    return await with_deadline(limit, _forward(turn, policy, chat))


async def _forward(turn: _Turn, policy: CompiledPolicy, chat: ChatRequest) -> web.StreamResponse:
    request, parsed = turn.request, turn.parsed
    upstream = request.app[UPSTREAM]
    headers = {
        name: value
        for name, value in upstream.headers(request.headers).items()
        if name.lower() not in _NOT_FORWARDED
    }
    headers["Content-Type"] = "application/json"
    headers["Accept"] = "text/event-stream"
    async with upstream.request(
        "POST", "chat/completions", headers=headers, body=json_codec.dumps(upstream_body(chat.body))
    ) as reply:
        if reply.status >= 300:
            # Both APIs share OpenAI's error shape; the message is checked as on chat.
            return await _relay_error(request, policy, reply)
        if reply.content_type != "text/event-stream":
            # An upstream that ignores "stream": true answers with one chat.completion: it is
            # checked whole, as /v1/chat/completions checks a reply, then translated.
            return await _answer_reply(turn, policy, chat, reply)
        guard = StreamGuard(
            policy,
            StreamContext(model=parsed.model, n=1, include_usage=True),
            on_held=request.app[METRICS].held_chars.observe,
            on_finding=lambda finding: record_findings(request, Stage.OUTPUT, [finding]),
            fingerprint=fingerprint_for(request),
            remote=remote_context(request, policy, conversation_of(chat))
            if policy.output_remote
            else None,
            tools=chat.tool_names,
        )
        stream = GuardedResponseStream(guard, turn.translator, policy.spec.refusal)
        if parsed.stream:
            return await _stream(turn, stream, reply)
        return await _collect(turn, policy, stream, reply)


async def _refuse(turn: _Turn, policy: CompiledPolicy, stage: Stage) -> web.StreamResponse:
    """A block before anything was sent: a blocked input, or a whole upstream reply blocked."""
    refusal = policy.spec.refusal
    headers = {BLOCKED_HEADER: stage.value}
    if refusal.style == "error":
        return json_response(content_filter_error(refusal.message), status=400, headers=headers)
    events = turn.translator.start() + turn.translator.refuse(refusal.message)
    # A blocked input is not stored: continuing the conversation must not replay it.
    await turn.save(include_input=stage is not Stage.INPUT)
    return await _answer(turn, events, headers)


async def _answer(
    turn: _Turn, events: list[Event], headers: dict[str, str] | None = None
) -> web.StreamResponse:
    """A response whose events are all known before the first byte: as a stream, or as the
    object its last event carries."""
    if not turn.parsed.stream:
        return json_response(turn.translator.final, headers=headers)
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    await start_response(turn.request, response)
    await response.write(encode_events(events))
    await response.write_eof()
    return response


async def _answer_reply(
    turn: _Turn, policy: CompiledPolicy, chat: ChatRequest, reply: aiohttp.ClientResponse
) -> web.StreamResponse:
    """A whole ``chat.completion`` answering the streaming request: the output stage checks it
    as it checks a non-stream reply on ``/v1/chat/completions`` (nothing has been sent yet, so
    a failure is still an HTTP error), and only then is it translated."""
    request = turn.request
    limit = request.app[UPSTREAM].settings.max_upstream_body_bytes
    body = await read_upstream_body(reply, limit)
    checked = await check_json_reply(request, policy, chat, body, reply.status)
    if checked.error is not None:
        return checked.error  # as on chat: only the (checked) error, none of the fields beside it
    if checked.blocked:
        return await _refuse(turn, policy, Stage.OUTPUT)
    try:
        # Redactions are in the completion already (check_reply writes them back).
        events = turn.translator.start() + turn.translator.reply(checked.completion)
    except MalformedChunk as exc:
        raise UpstreamError(f"The upstream sent a reply that cannot be checked: {exc}") from None
    final = turn.translator.final
    if final is None or final["status"] == "failed":
        # Only the proxy's own words (see ResponseTranslator.complete); nothing sent yet.
        error = (final or {}).get("error") or {}
        raise UpstreamError(error.get("message") or STREAM_FAILED)
    await turn.save()
    return await _answer(turn, events)


async def _relay_error(
    request: web.Request, policy: CompiledPolicy, reply: aiohttp.ClientResponse
) -> web.Response:
    """An upstream error status, as ``/v1/chat/completions`` relays it: the whole body (up to
    ``max_upstream_body_bytes``), its message checked by the output shields like a reply."""
    limit = request.app[UPSTREAM].settings.max_upstream_body_bytes
    body = await read_upstream_body(reply, limit)
    return relay_error_reply(policy, reply.status, response_headers(reply.headers), body)


Emit = Callable[[list[Event]], Awaitable[bool]]


async def _pump(stream: GuardedResponseStream, reply: aiohttp.ClientResponse, emit: Emit) -> bool:
    """Reads the upstream until the response has ended; False when the client left.

    Returning (or raising) leaves the handler's ``async with`` on the upstream response, which
    closes it if it is not finished: a block stops the upstream at once.
    """
    reads = upstream_reads(reply.content, stream.guard)
    try:
        while not stream.closed:
            try:
                data = await anext(reads)
            except StopAsyncIteration:
                return True  # the guard closed, its last events already emitted
            except (TimeoutError, aiohttp.ClientError) as exc:
                events = stream.fail(f"The upstream stream broke off: {type(exc).__name__}")
            else:
                if data is None:  # a remote shield's verdict arrived
                    events = stream.checks()
                else:
                    events = stream.feed(data) if data else stream.end()
            if not await emit(events):
                return False
        return True
    finally:
        await reads.aclose()
        stream.guard.cancel_checks()


async def _stream(
    turn: _Turn, stream: GuardedResponseStream, reply: aiohttp.ClientResponse
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
    response.content_type = "text/event-stream"
    # Remembered as started: an error from here on aborts the connection rather than writing
    # a second response into this one's body.
    await start_response(turn.request, response)

    async def emit(events: list[Event]) -> bool:
        if not events:
            return True
        # Stored before the client hears the end: a follow-up request may come at once.
        await turn.save()
        try:
            await response.write(encode_events(events))
        except ConnectionResetError:
            log.info("client disconnected mid-stream")
            return False
        return True

    if not await emit(turn.translator.start()) or not await _pump(stream, reply, emit):
        return response
    await response.write_eof()
    return response


async def _collect(
    turn: _Turn,
    policy: CompiledPolicy,
    stream: GuardedResponseStream,
    reply: aiohttp.ClientResponse,
) -> web.StreamResponse:
    async def discard(events: list[Event]) -> bool:
        return True

    turn.translator.start()
    await _pump(stream, reply, discard)
    final = turn.translator.final
    if stream.blocked:
        headers = {BLOCKED_HEADER: "output"}
        refusal = policy.spec.refusal
        if refusal.style == "error" or final is None:
            error = content_filter_error(refusal.message)
            return json_response(error, status=400, headers=headers)
        await turn.save()
        return json_response(final, headers=headers)
    if final is None or final["status"] == "failed":
        # The failure's message is the proxy's own (GuardedResponseStream never puts upstream
        # text there), so it can be the error's.
        error = (final or {}).get("error") or {}
        raise UpstreamError(error.get("message") or STREAM_FAILED)
    await turn.save()
    return json_response(final)


async def retrieve_response(request: web.Request) -> web.StreamResponse:
    if request.query.get("stream", "false").lower() not in ("false", "0"):
        raise BadRequest("Streaming a stored response again is not supported", param="stream")
    return json_response((await _stored(request)).response)


async def delete_response(request: web.Request) -> web.StreamResponse:
    record = await _stored(request)
    try:
        await request.app[RESPONSE_STORE].delete(record.id)
    except Exception:
        log.exception("the response store failed")
        raise StoreUnavailable("The response store is unavailable") from None
    return json_response({"id": record.id, "object": "response", "deleted": True})


async def _load(request: web.Request, response_id: str) -> StoredResponse | None:
    try:
        return await request.app[RESPONSE_STORE].get(response_id)
    except Exception:
        log.exception("the response store failed")
        raise StoreUnavailable("The response store is unavailable") from None


async def _stored(request: web.Request) -> StoredResponse:
    response_id = request.match_info["response_id"]
    record = await _load(request, response_id)
    if record is None or record.owner != _owner(request):
        # Someone else's response is as absent as a missing one: ids are not to be probed.
        raise NotFound(f"Response with id '{response_id}' not found.")
    return record
