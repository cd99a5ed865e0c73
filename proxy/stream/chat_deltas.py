"""Reading chat-completion deltas for the dialects that translate them (Messages, Responses).

Both translators read the same upstream shapes — a whole reply's ``message`` turned into one
delta, text fields that must be strings, ``content`` sent as parts by a few servers — and
write events the same way (``event: <type>`` then ``data: <json>``); what they share is here,
once, so a fix to how an upstream shape is read reaches both.
"""

from __future__ import annotations

from typing import Any

from proxy.stream.translated import Event, MalformedChunk
from shields import json_codec

__all__ = ["REASONING_KEYS", "as_delta", "content_text", "encode_named_events", "string_field"]

# Where chat servers put a reasoning model's thinking (vLLM/DeepSeek, then llama.cpp/OpenRouter).
REASONING_KEYS = ("reasoning_content", "reasoning")


def encode_named_events(events: list[Event]) -> bytes:
    """``event: <type>`` + ``data: <json>`` per event, as OpenAI's Responses API and Anthropic
    send them (Anthropic's SDKs skip an event without an ``event:`` line)."""
    return b"".join(
        b"event: " + event["type"].encode() + b"\ndata: " + json_codec.dumps(event) + b"\n\n"
        for event in events
    )


def as_delta(message: Any) -> Any:
    """A reply's message as one delta, its reasoning first (a stream sends the reasoning before
    the answer, and a message's keys come in any order, ``content`` often first) and its calls
    indexed by position."""
    if not isinstance(message, dict):
        return message
    first = {key: message[key] for key in REASONING_KEYS if key in message}
    delta = first | {key: value for key, value in message.items() if key not in first}
    calls = delta.get("tool_calls")
    if isinstance(calls, list):
        delta["tool_calls"] = [
            {**call, "index": position} if isinstance(call, dict) else call
            for position, call in enumerate(calls)
        ]
    return delta


def string_field(value: Any, key: str) -> str:
    """A delta's text field, which must be a string (null was skipped before)."""
    if not isinstance(value, str):
        raise MalformedChunk(f"`{key}` is neither a string nor null")
    return value


def content_text(value: Any, key: str = "content") -> str:
    """A delta's text field; ``content`` may also come as parts (as a few servers send it),
    whose texts are joined."""
    if isinstance(value, str):
        return value
    if key == "content" and isinstance(value, list):
        texts = []
        for part in value:
            if not isinstance(part, dict):
                raise MalformedChunk("a content part is not an object")
            text = part.get("text")
            if isinstance(text, str):
                texts.append(text)
        return "".join(texts)
    raise MalformedChunk(f"`{key}` is neither a string nor null")
