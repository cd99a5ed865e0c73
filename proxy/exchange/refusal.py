"""Every refusal and error wire form, in one place, as the OpenAI SDKs expect to parse them.

Style ``message`` answers like a model that declined: a normal completion (or stream) whose
content is the policy's refusal message and whose ``finish_reason`` is ``content_filter`` (set
apart by a blank line in a choice whose content had already been partly sent).
Style ``error`` answers with an OpenAI error: HTTP 400 before anything was sent, or an in-band
``data: {"error": ...}`` event once a stream has started (the status cannot change then).
Legacy completions (``/v1/completions``) get the same in their own shape: a ``text_completion``
whose choices' ``text`` is the message (``refusal_text_completion``, ``refusal_text_stream``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Iterable
from typing import Any

from proxy.errors import error_body
from proxy.stream.sse import encode_data
from shields import json_codec

__all__ = [
    "DONE",
    "REFUSAL_SEPARATOR",
    "StreamContext",
    "content_filter_error",
    "refusal_completion",
    "refusal_stream",
    "refusal_text_completion",
    "refusal_text_stream",
    "stream_error",
    "text_completion_id",
]

DONE = b"data: [DONE]\n\n"
# Put before a refusal that follows text already sent on the same channel: a client shows the
# deltas joined, and a refusal glued to the sentence it cut short reads as part of it.
REFUSAL_SEPARATOR = "\n\n"


def content_filter_error(message: str) -> dict[str, Any]:
    return error_body(message, type="invalid_request_error", code="content_filter")


def _completion_id() -> str:
    return f"chatcmpl-shieldgate-{uuid.uuid4().hex[:24]}"


def text_completion_id() -> str:
    """An id for a legacy completion the proxy answers itself (OpenAI's are ``cmpl-...``)."""
    return f"cmpl-shieldgate-{uuid.uuid4().hex[:24]}"


def _usage() -> dict[str, int]:
    # The proxy cannot know what the upstream would have counted; zero is honest.
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def refusal_completion(message: str, *, model: str, n: int = 1) -> dict[str, Any]:
    return {
        "id": _completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": message},
                "logprobs": None,
                "finish_reason": "content_filter",
            }
            for i in range(n)
        ],
        "usage": _usage(),
    }


class StreamContext:
    """What a refusal tail must echo of the stream it replaces (id, model, choices, usage)."""

    __slots__ = ("choices", "created", "id", "include_usage", "model")

    def __init__(self, *, model: str, n: int, include_usage: bool) -> None:
        self.id = _completion_id()
        self.model = model
        self.created = int(time.time())
        self.choices: set[int] = set(range(n))
        self.include_usage = include_usage

    def observe(self, chunk: dict[str, Any]) -> None:
        """Adopts the upstream's id and model so the tail continues the same completion."""
        if isinstance(chunk.get("id"), str):
            self.id = chunk["id"]
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("created"), int):
            self.created = chunk["created"]


def _chunk(ctx: StreamContext, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    payload = {
        "id": ctx.id,
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "choices": choices,
        **extra,
    }
    # json_codec, not orjson: the id and model echo the client's or the upstream's strings,
    # which may hold lone surrogates (and ``created`` an integer beyond 64 bits).
    return encode_data(json_codec.dumps(payload))


def refusal_stream(message: str, ctx: StreamContext, *, separated: Collection[int] = ()) -> bytes:
    """The refusal as the rest of a stream; the choices in ``separated`` had content sent
    already, and their refusal starts with ``REFUSAL_SEPARATOR``."""
    indices: Iterable[int] = sorted(ctx.choices)
    parts = [
        _chunk(
            ctx,
            [
                {
                    "index": i,
                    "delta": {
                        "role": "assistant",
                        "content": REFUSAL_SEPARATOR + message if i in separated else message,
                    },
                    "logprobs": None,
                    "finish_reason": None,
                }
                for i in indices
            ],
        ),
        _chunk(
            ctx,
            [
                {"index": i, "delta": {}, "logprobs": None, "finish_reason": "content_filter"}
                for i in indices
            ],
        ),
    ]
    if ctx.include_usage:
        parts.append(_chunk(ctx, [], usage=_usage()))
    parts.append(DONE)
    return b"".join(parts)


def _text_choices(
    message: str, indices: Iterable[int], separated: Collection[int] = ()
) -> list[dict[str, Any]]:
    return [
        {
            "text": REFUSAL_SEPARATOR + message if i in separated else message,
            "index": i,
            "logprobs": None,
            "finish_reason": "content_filter",
        }
        for i in indices
    ]


def refusal_text_completion(message: str, *, model: str, n: int = 1) -> dict[str, Any]:
    """The refusal as a legacy completion (``/v1/completions``): every choice's text is the
    message, its ``finish_reason`` ``content_filter``."""
    return {
        "id": text_completion_id(),
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": _text_choices(message, range(n)),
        "usage": _usage(),
    }


def refusal_text_stream(
    message: str, ctx: StreamContext, *, separated: Collection[int] = ()
) -> bytes:
    """The refusal as the rest of a legacy completions stream: one chunk ending every choice
    with the message and ``finish_reason: "content_filter"`` (set apart by a blank line in
    the choices in ``separated``, whose text was partly sent), the usage chunk if asked for,
    then ``[DONE]``."""
    parts = [_text_chunk(ctx, _text_choices(message, sorted(ctx.choices), separated))]
    if ctx.include_usage:
        parts.append(_text_chunk(ctx, [], usage=_usage()))
    parts.append(DONE)
    return b"".join(parts)


def _text_chunk(ctx: StreamContext, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    payload = {
        "id": ctx.id,
        "object": "text_completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": choices,
        **extra,
    }
    return encode_data(json_codec.dumps(payload))


def stream_error(body: dict[str, Any]) -> bytes:
    """An in-band error for a stream already under way, then the end of the stream."""
    return encode_data(json_codec.dumps(body)) + DONE
