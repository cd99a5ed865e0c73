"""Driving the stream guard event by event in tests: build upstream streams, read what leaves.

Shared by every test that proves a shield's zero-leak property in streams.
"""

from __future__ import annotations

import json
from typing import Any

from proxy.exchange.refusal import REFUSAL_SEPARATOR, StreamContext
from proxy.stream.guard import StreamGuard
from proxy.stream.sse import SSEDecoder, SSEEvent
from shields.policy import CompiledPolicy
from tests.support.fake_upstream import chunk

__all__ = ["REFUSAL_DELTA", "channel_text", "deltas", "events_of", "payloads", "run"]

REFUSAL_DELTA = {"role": "assistant", "content": "I'm sorry, but I can't help with that."}
# After content already sent, the refusal is set apart from it by a blank line.
_REFUSAL_DELTAS = (
    REFUSAL_DELTA,
    {**REFUSAL_DELTA, "content": REFUSAL_SEPARATOR + REFUSAL_DELTA["content"]},
)


def events_of(body: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = decoder.feed(body)
    assert decoder.finish() == b""
    return events


def run(
    policy: CompiledPolicy, body: bytes, *, n: int = 1, usage: bool = False, flush_every: int = 1
) -> tuple[bytes, StreamGuard]:
    guard = StreamGuard(policy, StreamContext(model="m", n=n, include_usage=usage))
    out = []
    for i, event in enumerate(events_of(body), start=1):
        out.append(guard.feed(event))
        if i % flush_every == 0:  # the handler flushes after each network read
            out.append(guard.flush())
    out.append(guard.flush())
    out.append(guard.end())
    return b"".join(out), guard


def payloads(body: bytes) -> list[Any]:
    return [
        e.data if e.data == b"[DONE]" else json.loads(e.data)
        for e in events_of(body)
        if e.data is not None
    ]


def channel_text(body: bytes, key: str, index: int = 0) -> str:
    """The text the client reassembles for one channel of choice ``index``.

    ``key`` is a delta field (``content``, ``reasoning_content``...) or ``arguments`` for the
    tool call at index 0. The default policy's refusal delta is left out.
    """
    text = []
    for payload in payloads(body):
        if payload == b"[DONE]" or "error" in payload:
            continue
        for choice in payload["choices"]:
            delta = choice["delta"]
            if choice["index"] != index or delta in _REFUSAL_DELTAS:
                continue
            if key == "arguments":
                for call in delta.get("tool_calls") or []:
                    text.append(call["function"].get("arguments") or "")
            elif delta.get(key):
                text.append(delta[key])
    return "".join(text)


def deltas(text: str, key: str, sizes: list[int]) -> list[dict[str, Any]]:
    """``text`` split into chunk sizes taken cyclically from ``sizes``, as ``key`` deltas."""
    out, pos, i = [], 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        pos, i = pos + len(piece), i + 1
        if key == "arguments":
            call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
            if not out:
                call.update(id="call_1", type="function")
                call["function"]["name"] = "lookup"
            out.append(chunk({"tool_calls": [call]}))
        else:
            out.append(chunk({key: piece}))
    return out
