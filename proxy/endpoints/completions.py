"""``POST /v1/completions``: the legacy completions dialect of the guarded exchange.

The request (``proxy.endpoints.completions_request``) goes to the upstream's own ``/completions``
(vLLM,
llama.cpp and Ollama serve it) as the client sent it, byte for byte, unless the input stage
redacted its prompt or suffix; then the redacted text is what the model completes. Token-id
prompts cannot be read by any shield: refused (400) unless the policy's ``request.token_inputs``
is ``allow``, and then forwarded unchecked (the suffix, if any, is still checked).

The reply is a ``text_completion``: each choice's ``text`` is the channel the output shields
read (``ReplyShape.TEXT``), through the exchange's own whole-reply check and stream guard. A
passed whole reply goes back as it came unless redacted; a stream's released bytes are the
upstream's own events (``Exchange.relay_events``), as for chat completions.

With ``echo``, a choice's text begins with the prompt. It is checked with the rest, as the text
the client gets: the upstream's echo is its own text (a tokenizer's round trip, or a hostile
upstream, need not give back the prompt that was checked), and a phrase may begin in the prompt
and end in what the model wrote. So an output shield that would fire on the prompt fires on
its echo (a prompt redacted at input is echoed redacted: the upstream never saw the original).

A block answers in the completions shape: a ``text_completion`` whose choices' text is the
policy's message with ``finish_reason: "content_filter"`` (a stream: one such chunk, then
``[DONE]``; after text of a choice was sent, its refusal is set apart by a blank line); for
refusal style ``error``, OpenAI's error (400 before anything was sent, an in-band error event
once a stream has started), as for chat completions.
"""

from __future__ import annotations

from aiohttp import web

from proxy.endpoints.chat_request import ChatRequest
from proxy.endpoints.completions_request import CompletionRequest, parse_completion_request
from proxy.endpoints.forwarded import forwarded_call, refuse_token_inputs
from proxy.errors import error_body, json_response, send_event_stream
from proxy.exchange.lifecycle import CheckedReply, Exchange, UpstreamCall
from proxy.exchange.refusal import (
    StreamContext,
    content_filter_error,
    refusal_text_completion,
    refusal_text_stream,
    stream_error,
    text_completion_id,
)
from proxy.serving.off_loop import off_loop_if_large
from proxy.state import BLOCKED_HEADER, read_body
from proxy.stream.guard import EndRenderer, GuardState, StreamEnd
from proxy.upstream.http1 import UpstreamReply
from shields.base import Stage
from shields.openai.text_completion import ReplyShape
from shields.policy import CompiledPolicy
from shields.verdict import StageOutcome

__all__ = ["CompletionsDialect", "completions_stream_end", "create_completion"]


async def create_completion(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    parsed = await off_loop_if_large(len(raw), parse_completion_request, raw)
    return await Exchange(request, CompletionsDialect(parsed, raw), len(raw)).run()


def completions_stream_end(policy: CompiledPolicy, context: StreamContext) -> EndRenderer:
    """A completions stream's last bytes: ``[DONE]`` as it came, the policy's refusal (a
    ``text_completion`` chunk ending every choice with ``content_filter``, or an in-band
    ``content_filter`` error), or an in-band error with the proxy's own message."""
    refusal = policy.spec.refusal

    def render(end: StreamEnd) -> bytes:
        if end.state is GuardState.DONE:
            return end.done_raw
        if end.state is GuardState.BLOCKED:
            if refusal.style == "error":
                return stream_error(content_filter_error(refusal.message))
            return refusal_text_stream(refusal.message, context, separated=end.content_sent)
        return stream_error(error_body(end.message, type="upstream_error", code="upstream_error"))

    return render


class CompletionsDialect:
    route = "completions"
    reply_shape = ReplyShape.TEXT

    def __init__(self, parsed: CompletionRequest, raw: bytes) -> None:
        self._parsed = parsed
        self._raw = raw
        self.model = parsed.model
        self.stream = parsed.chat.stream

    @property
    def chat(self) -> ChatRequest:
        return self._parsed.chat

    async def prepare(self, exchange: Exchange) -> None:
        refuse_token_inputs(exchange.policy, self._parsed.token_prompts, "prompt")

    def input_checked(self, outcome: StageOutcome) -> None:
        if outcome.redacted:
            self._parsed.write_back()

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall:
        return forwarded_call(exchange, self._raw, self._parsed.body, redacted, path="completions")

    def _context(self) -> StreamContext:
        chat = self.chat
        context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
        context.id = text_completion_id()  # until the upstream's own id is seen
        return context

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        refusal = exchange.policy.spec.refusal
        chat = self.chat
        headers = {BLOCKED_HEADER: stage.value}
        if refusal.style == "error":
            return json_response(content_filter_error(refusal.message), status=400, headers=headers)
        if stage is Stage.OUTPUT:
            # A whole reply blocked is answered as a whole reply, whatever was asked.
            checked = exchange.checked_reply
            model = checked.completion.get("model") if checked is not None else None
            if not isinstance(model, str):
                model = chat.model
            completion = refusal_text_completion(refusal.message, model=model, n=chat.n)
            return json_response(completion, headers=headers)
        if not chat.stream:
            completion = refusal_text_completion(refusal.message, model=chat.model, n=chat.n)
            return json_response(completion, headers=headers)
        stream = refusal_text_stream(refusal.message, self._context())  # before any byte is sent
        return await send_event_stream(exchange.request, stream, headers=headers)

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        return exchange.passed_reply(checked, body, reply)

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        # The guard reads the choices' text and renders its end in the completions shape; the
        # bytes it releases are the upstream's completions stream itself.
        context = self._context()
        end = completions_stream_end(exchange.policy, context)
        guard = exchange.stream_guard(render_end=end, context=context)
        return await exchange.relay_events(reply, guard)
