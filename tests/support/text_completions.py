"""Builders of legacy completions replies (``/v1/completions``) as an upstream sends them.

Pure functions producing wire-format payloads, like the chat builders of
``tests.support.fake_upstream``
(and encoded with its ``sse`` and ``json_bytes``), so that tests state exactly which bytes the
upstream sends. The shapes are OpenAI's, which vLLM and llama.cpp's servers follow: a
``text_completion`` object whose choices carry ``text``, ``index``, ``logprobs`` and
``finish_reason``, in a whole reply and in each stream chunk alike.
"""

from __future__ import annotations

from typing import Any

from tests.support.fake_upstream import FAKE_CREATED, sse

__all__ = [
    "text_choice",
    "text_chunk",
    "text_completion",
    "text_completion_stream",
    "text_logprobs",
    "text_usage_chunk",
]


def text_logprobs(tokens: list[str], offset: int = 0) -> dict[str, Any]:
    """A completion choice's ``logprobs`` for ``tokens``: each token again, in four forms."""
    offsets = []
    for token in tokens:
        offsets.append(offset)
        offset += len(token)
    return {
        "tokens": tokens,
        "token_logprobs": [-0.5] * len(tokens),
        "top_logprobs": [{token: -0.5} for token in tokens],
        "text_offset": offsets,
    }


def text_choice(
    text: str | None,
    *,
    index: int = 0,
    finish_reason: str | None = "stop",
    logprobs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {"text": text, "index": index, "logprobs": logprobs, "finish_reason": finish_reason}


def text_completion(
    *texts: str,
    model: str = "fake-model",
    id: str = "cmpl-fake",
    finish_reason: str = "stop",
    choices: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A whole ``text_completion``, one choice per text (or the ``choices`` given)."""
    return {
        "id": id,
        "object": "text_completion",
        "created": FAKE_CREATED,
        "model": model,
        "choices": choices
        if choices is not None
        else [
            text_choice(text, index=i, finish_reason=finish_reason) for i, text in enumerate(texts)
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def text_chunk(
    text: str | None,
    *,
    index: int = 0,
    finish_reason: str | None = None,
    logprobs: dict[str, Any] | None = None,
    model: str = "fake-model",
    id: str = "cmpl-fake",
    choices: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One stream chunk with one choice (or the ``choices`` given)."""
    return {
        "id": id,
        "object": "text_completion",
        "created": FAKE_CREATED,
        "model": model,
        "choices": choices
        if choices is not None
        else [text_choice(text, index=index, finish_reason=finish_reason, logprobs=logprobs)],
    }


def text_usage_chunk(*, model: str = "fake-model", id: str = "cmpl-fake") -> dict[str, Any]:
    """The trailing chunk sent with ``stream_options.include_usage``: no choices."""
    return {
        "id": id,
        "object": "text_completion",
        "created": FAKE_CREATED,
        "model": model,
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }


def text_completion_stream(
    text: str,
    *,
    piece: int = 4,
    finish_reason: str | None = "length",
    usage: bool = False,
    done: bool = True,
    model: str = "fake-model",
) -> bytes:
    """A whole SSE body streaming ``text`` in ``piece``-character chunks, then a chunk with an
    empty text and the ``finish_reason`` (as llama.cpp ends one; omitted when None), then an
    optional usage chunk and ``[DONE]``."""
    parts = [text[i : i + piece] for i in range(0, len(text), piece)] or [""]
    events: list[dict[str, Any] | str | bytes] = [text_chunk(part, model=model) for part in parts]
    if finish_reason is not None:
        events.append(text_chunk("", finish_reason=finish_reason, model=model))
    if usage:
        events.append(text_usage_chunk(model=model))
    return sse(*events, done=done)
