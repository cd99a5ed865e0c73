"""``POST /v1/embeddings``: the embeddings dialect of the guarded exchange.

The input stage checks every input string (``proxy.endpoints.embeddings_request``) before anything
goes
upstream, to the upstream's own ``/embeddings``: a block is refused, a redaction rewrites the
forwarded body, so the vector the client gets is the redacted text's. Otherwise the body goes
as the client sent it, byte for byte.

A block is always the OpenAI error form — HTTP 400, ``code: content_filter`` with the policy's
refusal message — whatever the policy's refusal ``style``: an embeddings response has no place
for a message, and a vector of something else would be a silent lie.

Token-id inputs cannot be read by any shield: refused (400) unless the policy's
``request.token_inputs`` is ``allow``, and then forwarded unchecked.

There is no output stage on an answer text: the reply holds vectors, and goes back as it came
(``TextlessReplies``) once its strings (``model``, whatever else a server adds; never the
vectors) passed the output shields — else a 502, as for a reply that cannot be read. An
upstream error status is relayed, its message checked, as for every dialect; a stream in
answer is a 502 (no embeddings reply is a stream).
"""

from __future__ import annotations

from aiohttp import web

from proxy.endpoints.chat_request import ChatRequest
from proxy.endpoints.embeddings_request import EmbeddingsRequest, parse_embeddings_request
from proxy.endpoints.forwarded import forwarded_call, refuse_token_inputs
from proxy.errors import UpstreamError, json_response
from proxy.exchange.lifecycle import CheckedReply, Exchange, UpstreamCall
from proxy.exchange.refusal import content_filter_error
from proxy.exchange.reply_check import check_textless_reply
from proxy.serving.off_loop import off_loop_if_large
from proxy.state import BLOCKED_HEADER, read_body
from proxy.upstream.http1 import UpstreamReply
from shields.base import Stage
from shields.verdict import StageOutcome

__all__ = ["EmbeddingsDialect", "create_embeddings"]


async def create_embeddings(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    parsed = await off_loop_if_large(len(raw), parse_embeddings_request, raw)
    return await Exchange(request, EmbeddingsDialect(parsed, raw), len(raw)).run()


class EmbeddingsDialect:
    route = "embeddings"
    stream = False

    def __init__(self, parsed: EmbeddingsRequest, raw: bytes) -> None:
        self._parsed = parsed
        self._raw = raw
        self.model = parsed.model

    @property
    def chat(self) -> ChatRequest:
        return self._parsed.chat

    async def prepare(self, exchange: Exchange) -> None:
        refuse_token_inputs(exchange.policy, self._parsed.token_inputs, "input")

    def input_checked(self, outcome: StageOutcome) -> None:
        if outcome.redacted:
            self._parsed.write_back()

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall:
        return forwarded_call(exchange, self._raw, self._parsed.body, redacted, path="embeddings")

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        # Only the input is ever refused: replies are not checked.
        message = exchange.policy.spec.refusal.message
        return json_response(
            content_filter_error(message), status=400, headers={BLOCKED_HEADER: stage.value}
        )

    async def answer_unchecked(
        self, exchange: Exchange, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        # No answer text, but strings all the same (``model``, whatever a server adds): read
        # by the output shields, the vectors left alone; relayed as they came or not at all.
        await check_textless_reply(
            exchange.request, exchange.policy, body, "embeddings", vectors=True
        )
        return web.Response(body=body, status=reply.status, headers=exchange.relayed_headers(reply))

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        # Never called: the exchange answers a TextlessReplies dialect's replies through
        # answer_unchecked. Failing here keeps it so if that ever changes.
        raise UpstreamError("The upstream's embeddings reply was read as a chat completion")

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        raise UpstreamError("The upstream answered an embeddings request with a stream")
