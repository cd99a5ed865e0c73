"""``POST /v1/chat/completions``: the chat dialect of the guarded exchange.

The request goes upstream as the client sent it, byte for byte, unless the input stage redacted
it; a whole reply the output stage passed goes back as the upstream sent it, unless redacted; a
stream goes through the stream guard, whose released bytes are the upstream's own.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from proxy.endpoints.chat_request import ChatRequest, parse_chat_request
from proxy.endpoints.forwarded import forwarded_call
from proxy.errors import json_response, send_event_stream
from proxy.exchange.lifecycle import CheckedReply, Exchange, UpstreamCall
from proxy.exchange.refusal import (
    StreamContext,
    content_filter_error,
    refusal_completion,
    refusal_stream,
)
from proxy.serving.off_loop import parse_on_loop
from proxy.state import BLOCKED_HEADER, read_body
from proxy.upstream.http1 import UpstreamReply
from shields.base import Stage
from shields.verdict import StageOutcome

__all__ = ["ChatDialect", "chat_completions"]


async def chat_completions(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    # ``off_loop_unless`` written out: nearly every body is parsed on the loop, without a
    # coroutine of its own.
    if parse_on_loop(raw):
        chat = parse_chat_request(raw)
    else:
        chat = await asyncio.to_thread(parse_chat_request, raw)
    return await Exchange(request, ChatDialect(chat, raw), len(raw)).run()


class ChatDialect:
    route = "chat"

    def __init__(self, chat: ChatRequest, raw: bytes) -> None:
        self._chat = chat
        self._raw = raw
        self.model = chat.model
        self.stream = chat.stream

    @property
    def chat(self) -> ChatRequest:
        return self._chat

    async def prepare(self, exchange: Exchange) -> None:
        pass

    def input_checked(self, outcome: StageOutcome) -> None:
        pass

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall:
        return forwarded_call(
            exchange, self._raw, self._chat.body, redacted, path="chat/completions"
        )

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        refusal = exchange.policy.spec.refusal
        chat = self._chat
        headers = {BLOCKED_HEADER: stage.value}
        if refusal.style == "error":
            return json_response(content_filter_error(refusal.message), status=400, headers=headers)
        if stage is Stage.OUTPUT:
            # A whole reply blocked is answered as a whole reply, whatever was asked.
            checked = exchange.checked_reply
            model = checked.completion.get("model") if checked is not None else None
            if not isinstance(model, str):
                model = chat.model
            completion = refusal_completion(refusal.message, model=model, n=max(chat.n, 1))
            return json_response(completion, headers=headers)
        if not chat.stream:
            completion = refusal_completion(refusal.message, model=chat.model, n=chat.n)
            return json_response(completion, headers=headers)
        context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
        stream = refusal_stream(refusal.message, context)  # before any byte is sent
        return await send_event_stream(exchange.request, stream, headers=headers)

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        return exchange.passed_reply(checked, body, reply)

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        # The guard's bytes are the chat stream itself.
        return await exchange.relay_events(reply, exchange.stream_guard())
