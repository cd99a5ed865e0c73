"""``/v1/messages``: Anthropic's Messages API, served over the upstream's chat completions.

A request is translated into a chat-completions request (``proxy.endpoints.messages_request``) and
checked by the same input stage as ``/v1/chat/completions``. A stream request goes upstream as a
stream: the upstream's events go through the same ``StreamGuard``, and only what it releases is
translated into Messages events (``proxy.endpoints.messages_stream``). Any other request goes
upstream as
a whole request: its reply is checked whole by the output stage before any of it is translated
into the ``message`` object. An upstream that answers the other way than asked is served all the
same (a stream collected into the message; a whole reply sent as the events of one message).

A block is answered as Anthropic's API answers a refusal: a message whose last text block is
the policy's message, ``stop_reason: "refusal"`` (or, for refusal style ``error``, an
``invalid_request_error``: HTTP 400 before anything was sent, an ``error`` event once a stream
has started). Every HTTP error on this surface is in Anthropic's error shape
(``proxy.errors.anthropic_errors``); once a stream has started, a failure is an ``error`` event
with the proxy's own message.

Headers: the client's key may come as ``x-api-key`` (``proxy.clients.auth``). Upstream, the
upstream's
own allow-list applies (``Upstream.headers``): ``x-api-key``, ``anthropic-version`` and
``anthropic-beta`` are not forwarded (the upstream speaks the chat-completions API); in
pass-through mode (no keys file, no upstream key) the client's ``x-api-key`` goes upstream as
``Authorization: Bearer``, as a chat client's own key would.
"""

from __future__ import annotations

import logging

from aiohttp import web

from proxy.endpoints.chat_request import ChatRequest
from proxy.endpoints.messages_request import MessagesRequest, new_message_id, parse_messages_request
from proxy.endpoints.messages_stream import GuardedMessageStream, MessageTranslator
from proxy.endpoints.responses_stream import STREAM_FAILED
from proxy.errors import (
    NotFound,
    UpstreamError,
    anthropic_error_body,
    json_response,
    send_event_stream,
    start_response,
)
from proxy.exchange.lifecycle import CheckedReply, Exchange, UpstreamCall
from proxy.serving.off_loop import off_loop_if_large
from proxy.state import BLOCKED_HEADER, UPSTREAM, read_body
from proxy.stream.chat_deltas import encode_named_events
from proxy.stream.translated import Event, MalformedChunk
from proxy.upstream.http1 import UpstreamReply
from shields import json_codec
from shields.base import Stage
from shields.verdict import StageOutcome

__all__ = ["MessagesDialect", "count_tokens", "create_message"]

log = logging.getLogger("shieldgate.proxy")

# Set by the dialect for the upstream, whatever the client sent.
_NOT_FORWARDED = frozenset({"content-type", "accept"})


async def create_message(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    parsed = await off_loop_if_large(len(raw), parse_messages_request, raw)
    return await Exchange(request, MessagesDialect(request, parsed), len(raw)).run()


async def count_tokens(request: web.Request) -> web.StreamResponse:
    raise NotFound(
        "/v1/messages/count_tokens is not served by shieldgate: its upstream speaks the "
        "chat-completions API, which counts tokens only for a request it answers"
    )


class MessagesDialect:
    """One Messages request over the upstream's chat completions."""

    route = "messages"

    def __init__(self, request: web.Request, parsed: MessagesRequest) -> None:
        self.request = request
        self.parsed = parsed
        self.model = parsed.model
        self.stream = parsed.stream
        self.translator = MessageTranslator(
            message_id=new_message_id(), model=parsed.model, streamed=parsed.stream
        )

    @property
    def chat(self) -> ChatRequest:
        return self.parsed.chat

    async def prepare(self, exchange: Exchange) -> None:
        pass  # translated and read when the request was parsed

    def input_checked(self, outcome: StageOutcome) -> None:
        pass  # nothing is echoed or stored

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall:
        client = {
            name: value
            for name, value in self.request.headers.items()
            if name.lower() not in _NOT_FORWARDED
        }
        api_key = self.request.headers.get("x-api-key", "").strip()
        if api_key and "Authorization" not in self.request.headers:
            # The client's key as a chat client sends it: the upstream's rules decide whether
            # it goes on (pass-through) or not (a shieldgate key, or the proxy's own key).
            client["Authorization"] = f"Bearer {api_key}"
        headers = exchange.app[UPSTREAM].headers(client)
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "text/event-stream" if self.stream else "application/json"
        # Always the translation as checked (redactions written in): the body is the proxy's.
        return UpstreamCall(json_codec.dumps(self.chat.body), headers)

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        """A block before anything was sent: a blocked input, or a whole upstream reply."""
        refusal = exchange.policy.spec.refusal
        headers = {BLOCKED_HEADER: stage.value}
        if refusal.style == "error":
            body = anthropic_error_body("invalid_request_error", refusal.message)
            return json_response(body, status=400, headers=headers)
        translator = self.translator
        return await self._answer(translator.start() + translator.refuse(refusal.message), headers)

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        """A whole ``chat.completion`` the output stage passed (redactions are in it)."""
        translator = self.translator
        try:
            events = translator.start() + translator.reply(checked.completion)
        except MalformedChunk as exc:
            raise UpstreamError(
                f"The upstream sent a reply that cannot be checked: {exc}"
            ) from None
        return await self._answer(events)

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        refusal = exchange.policy.spec.refusal
        stream = GuardedMessageStream(exchange.stream_guard(), self.translator, refusal)
        if self.stream:
            return await self._stream(exchange, stream, reply)
        return await self._collect(exchange, stream, reply)

    async def _answer(
        self, events: list[Event], headers: dict[str, str] | None = None
    ) -> web.StreamResponse:
        """An answer whose events are all known before the first byte: as a stream, or as the
        message they make."""
        if not self.stream:
            return json_response(self.translator.final, headers=headers)
        return await send_event_stream(self.request, encode_named_events(events), headers=headers)

    async def _stream(
        self, exchange: Exchange, stream: GuardedMessageStream, reply: UpstreamReply
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        # Remembered as started: an error from here on aborts the connection rather than
        # writing a second response into this one's body.
        await start_response(self.request, response)

        async def emit(events: list[Event]) -> bool:
            if not events:
                return True
            try:
                await response.write(encode_named_events(events))
            except ConnectionResetError:
                log.info("client disconnected mid-stream")
                return False
            return True

        if await emit(self.translator.start()) and await exchange.pump(reply, stream, emit):
            await response.write_eof()
        return response

    async def _collect(
        self, exchange: Exchange, stream: GuardedMessageStream, reply: UpstreamReply
    ) -> web.StreamResponse:
        """A stream answering a request that asked for a whole message: collected through the
        guard, nothing sent until it has ended."""

        async def discard(events: list[Event]) -> bool:
            return True

        translator = self.translator
        translator.start()
        await exchange.pump(reply, stream, discard)
        if stream.blocked:
            headers = {BLOCKED_HEADER: Stage.OUTPUT.value}
            refusal = exchange.policy.spec.refusal
            if refusal.style == "error":
                body = anthropic_error_body("invalid_request_error", refusal.message)
                return json_response(body, status=400, headers=headers)
            return json_response(translator.final, headers=headers)
        if translator.final is None:
            # The failure's message is the proxy's own (the translator never takes upstream
            # text into it), so it can be the error's.
            raise UpstreamError(translator.failure or STREAM_FAILED)
        return json_response(translator.final)
