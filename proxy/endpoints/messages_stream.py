"""From the guarded chat-completions stream to Anthropic's Messages events.

``GuardedMessageStream`` feeds the upstream's SSE through the same ``StreamGuard`` as
``/v1/chat/completions`` (with ``render_end=no_tail``) and translates only the bytes the guard
releases, so every Messages event carries text the output shields have already passed: the
zero-leak guarantee holds by construction. How the guard ended comes typed
(``StreamGuard.ending``): done, the message ends; blocked, the policy's refusal (a text block
and ``stop_reason: "refusal"``, or an ``error`` event for refusal style ``error``); failed, an
``error`` event with the proxy's own message, never upstream text.

``MessageTranslator`` turns ``chat.completion.chunk`` deltas into the events Anthropic sends:
``message_start``, ``ping``, then per content block ``content_block_start`` /
``content_block_delta`` (``text_delta``, ``thinking_delta``, ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (``stop_reason``, usage) and ``message_stop``.
Reasoning (``reasoning_content`` / ``reasoning``) becomes ``thinking`` blocks, content (and a
chat ``refusal``) ``text`` blocks, tool calls ``tool_use`` blocks; a block closes when the model
moves on to something else.

A tool call's input is held until the call is complete (the model moved on, or the stream
ended) and then sent as one ``input_json_delta``, once it has been read as a JSON object: a
client never gets a tool call it cannot parse, nor half of one cut off by a refusal. Arguments
that are not a JSON object fail the message (fail closed). Calls to different indices may
interleave upstream; each becomes its block in index order.

Neither class does I/O: the dialect feeds network reads in and writes what comes out.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from proxy.errors import anthropic_error_body
from proxy.exchange.refusal import REFUSAL_SEPARATOR
from proxy.stream.chat_deltas import (
    REASONING_KEYS,
    as_delta,
    content_text,
    string_field,
)
from proxy.stream.guard import StreamGuard
from proxy.stream.translated import Event, MalformedChunk, TranslatedStream
from shields import json_codec
from shields.openai.fields import serialize_arguments
from shields.policy import Refusal

__all__ = [
    "GuardedMessageStream",
    "MessageTranslator",
]

# Chat finish reasons as Anthropic's stop reasons. Which stop sequence ended a message a chat
# backend does not say: "stop" is always ``end_turn``, with ``stop_sequence: null``.
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}
_REFUSAL_DETAILS = {"type": "refusal", "category": None, "explanation": None}
NO_NAME = "The upstream sent a tool call without a function name"


@dataclass(slots=True, eq=False)
class _Block:
    kind: str  # text | thinking | tool_use
    index: int
    texts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        if len(self.texts) > 1:
            self.texts[:] = ["".join(self.texts)]
        return self.texts[0] if self.texts else ""

    def dump(self, *, empty: bool = False) -> dict[str, Any]:
        """A fresh dict: ``empty`` for its ``content_block_start``."""
        if self.kind == "text":
            return {"type": "text", "text": "" if empty else self.text}
        if self.kind == "thinking":
            # No signature: it is Anthropic's proof of its own model's reasoning.
            return {"type": "thinking", "thinking": "" if empty else self.text, "signature": ""}
        return {
            "type": "tool_use",
            "id": self.call_id,
            "name": self.name,
            "input": {} if empty else self.input,
        }


@dataclass(slots=True, eq=False)
class _Call:
    """A tool call being received: held until it is complete."""

    call_id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class MessageTranslator:
    """Builds the Messages events of one reply; ``final`` is the message once it has ended."""

    def __init__(self, *, message_id: str, model: str, streamed: bool = True) -> None:
        self.id = message_id
        self.model = model
        # Whether the client gets the events as they are made, or only the final message.
        self._streamed = streamed
        self._blocks: list[_Block] = []
        self._open: _Block | None = None  # the text or thinking block under way
        self._open_key: str | None = None  # the delta key feeding it
        self._calls: dict[int, _Call] = {}  # tool calls held until complete, by index
        self._sent_calls: dict[int, str] = {}  # the calls sent, by index: their names
        # Where the calls' text comes from: ``tool_calls`` or the legacy ``function_call``;
        # never both, which the guard checked as two texts.
        self._calls_from: str | None = None
        # The reasoning key the stream uses: servers that send both keys send the same text
        # twice, and the guard checks each key as its own text, so two keys are never joined.
        self._reasoning_key: str | None = None
        self._finish_reason: str | None = None
        self._usage = {"input_tokens": 0, "output_tokens": 0}
        self.final: dict[str, Any] | None = None
        self.ended = False
        self.failure: str | None = None  # the proxy's message, when the message failed

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> list[Event]:
        message = self._message([], stop_reason=None)
        return [{"type": "message_start", "message": message}, {"type": "ping"}]

    def chunk(self, chunk: dict[str, Any]) -> list[Event]:
        """One ``chat.completion.chunk`` the guard released. Raises MalformedChunk."""
        events: list[Event] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = {
                "input_tokens": _count(usage, "prompt_tokens"),
                "output_tokens": _count(usage, "completion_tokens"),
            }
        choices = chunk.get("choices")
        if choices is None:
            return events
        if not isinstance(choices, list):
            raise MalformedChunk("`choices` is not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedChunk("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # the upstream is asked for one choice; no other belongs here
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            elif delta is not None:
                raise MalformedChunk("a choice's delta is not an object")
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self._finish_reason = reason
        return events

    def reply(self, completion: dict[str, Any]) -> list[Event]:
        """A whole ``chat.completion`` the output stage passed: read as one chunk whose delta is
        the first choice's message (its reasoning first, its calls by position, as the output
        stage read them), then completed. Raises MalformedChunk."""
        choices = completion.get("choices")
        if isinstance(choices, list) and choices:
            choice = choices[0]
            if not isinstance(choice, dict):
                raise MalformedChunk("a choice is not an object")
            delta = as_delta(choice.get("message"))
            completion = {**completion, "choices": [{**choice, "index": 0, "delta": delta}]}
        return self.chunk(completion) + self.complete()

    def complete(self) -> list[Event]:
        """The upstream finished and the guard released everything. Raises MalformedChunk
        (a held tool call that cannot be sent)."""
        if self.ended:
            return []
        events: list[Event] = []
        self._close(events)
        self._send_calls(events)
        reason = _STOP_REASONS.get(self._finish_reason or "", "end_turn")
        if reason == "end_turn" and any(block.kind == "tool_use" for block in self._blocks):
            # Some servers (llama.cpp) finish a tool call with "stop": an agent loop runs the
            # tools on "tool_use".
            reason = "tool_use"
        return events + self._end(reason)

    def refuse(self, message: str) -> list[Event]:
        """A shield blocked: the answer ends with a text block holding ``message`` and
        ``stop_reason: "refusal"``.

        A stream client keeps what it was sent (blocks closed as they are, held tool calls
        dropped) and, after text, the refusal starts with a blank line so that a client
        printing the text does not glue it to the sentence it cut short. A non-stream client
        was sent nothing: its answer is the refusal alone, as for a blocked chat reply.
        """
        events: list[Event] = []
        self._calls.clear()
        if self._streamed:
            self._close(events)
        else:
            self._blocks.clear()
            self._open = None
        if any(block.kind == "text" and block.text for block in self._blocks):
            message = REFUSAL_SEPARATOR + message
        block = self._add("text", events)
        self._text(block, message, events)
        self._close(events)
        return events + self._end("refusal")

    def fail(self, message: str) -> list[Event]:
        """The upstream failed (or sent what cannot be read): an ``error`` event with the
        proxy's own ``message``."""
        return self.error("api_error", message)

    def error(self, kind: str, message: str) -> list[Event]:
        """An ``error`` event ends the stream (a failure, or a block under refusal style
        ``error``)."""
        if self.ended:
            return []
        self.ended = True
        self.failure = message
        body = anthropic_error_body(kind, message)
        return [{"type": "error", "error": body["error"]}]

    # -- deltas ------------------------------------------------------------------------------

    def _delta(self, delta: dict[str, Any], events: list[Event]) -> None:
        for key, value in delta.items():
            if value is None:
                continue
            if key in ("content", "refusal"):
                self._stream_text("text", key, content_text(value, key), events)
            elif key in REASONING_KEYS:
                text = string_field(value, key)
                if self._reasoning_key is None and text:
                    self._reasoning_key = key
                if key == self._reasoning_key:
                    self._stream_text("thinking", key, text, events)
            elif key == "tool_calls":
                if not isinstance(value, list):
                    raise MalformedChunk("`tool_calls` is not a list")
                if self._calls_from == "function_call":
                    raise MalformedChunk("`tool_calls` after legacy `function_call` deltas")
                self._calls_from = "tool_calls"
                for position, call in enumerate(value):
                    self._tool_call(call, position, events)
            elif key == "function_call" and delta.get("tool_calls") is None:
                # The legacy form, as tool call 0. A delta with both (llama-cpp-python's server
                # sends the same call twice) is read from ``tool_calls`` alone: the guard
                # checked each as a text of its own, and the client gets the one it checked.
                if self._calls_from == "tool_calls":
                    raise MalformedChunk(
                        "a legacy `function_call` delta in a stream of `tool_calls`"
                    )
                self._calls_from = "function_call"
                self._tool_call({"index": 0, "function": value}, 0, events)

    def _stream_text(self, kind: str, key: str, text: str, events: list[Event]) -> None:
        if not text:
            return
        block = self._open
        if block is None or self._open_key != key:
            self._close(events)
            self._send_calls(events)
            block = self._add(kind, events)
            self._open_key = key
        self._text(block, text, events)

    def _text(self, block: _Block, text: str, events: list[Event]) -> None:
        block.texts.append(text)
        if block.kind == "text":
            delta = {"type": "text_delta", "text": text}
        else:
            delta = {"type": "thinking_delta", "thinking": text}
        events.append({"type": "content_block_delta", "index": block.index, "delta": delta})

    def _tool_call(self, call: Any, position: int, events: list[Event]) -> None:
        if not isinstance(call, dict):
            raise MalformedChunk("a tool call is not an object")
        index = call.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool):
            raise MalformedChunk("a tool call's `index` is not an integer")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise MalformedChunk("a tool call's `function` is not an object")
        name, arguments = function.get("name"), function.get("arguments")
        if isinstance(arguments, dict):
            arguments = serialize_arguments(arguments)
        elif arguments is not None and not isinstance(arguments, str):
            raise MalformedChunk("a tool call's `arguments` is neither a string nor an object")
        if name is not None and not isinstance(name, str):
            raise MalformedChunk("a tool call's `name` is not a string")
        if index in self._sent_calls:
            if arguments or (name and name != self._sent_calls[index]):
                raise MalformedChunk("a tool call went on after the model moved on from it")
            return
        held = self._calls.get(index)
        if held is None:
            self._close(events)
            call_id = call.get("id")
            held = self._calls[index] = _Call(
                call_id if isinstance(call_id, str) and call_id else _tool_use_id()
            )
        if name:
            # Some servers (llama-cpp-python) repeat the name and id in every delta of a call:
            # the same name continues the call; another one is not this call's to take.
            if not held.name:
                held.name = name
            elif name != held.name:
                raise MalformedChunk("a tool call's `name` changed mid-call")
        if arguments:
            held.arguments.append(arguments)

    # -- blocks ------------------------------------------------------------------------------

    def _add(self, kind: str, events: list[Event], call: _Call | None = None) -> _Block:
        block = _Block(kind, len(self._blocks))
        if call is not None:
            block.call_id, block.name = call.call_id, call.name
        self._blocks.append(block)
        if kind != "tool_use":
            self._open = block
        events.append(
            {
                "type": "content_block_start",
                "index": block.index,
                "content_block": block.dump(empty=True),
            }
        )
        return block

    def _close(self, events: list[Event]) -> None:
        if self._open is not None:
            events.append({"type": "content_block_stop", "index": self._open.index})
            self._open = None
            self._open_key = None

    def _send_calls(self, events: list[Event]) -> None:
        """The held tool calls, complete now, each as one block: start, its whole input as one
        ``input_json_delta``, stop. Raises MalformedChunk for a call that cannot be sent."""
        for index in sorted(self._calls):
            call = self._calls.pop(index)
            if not call.name:
                raise MalformedChunk(NO_NAME)
            arguments = "".join(call.arguments)
            parsed = _arguments(arguments)
            block = self._add("tool_use", events, call)
            block.input = parsed
            self._sent_calls[index] = call.name
            if arguments.strip():
                delta = {"type": "input_json_delta", "partial_json": arguments}
                events.append({"type": "content_block_delta", "index": block.index, "delta": delta})
            events.append({"type": "content_block_stop", "index": block.index})

    # -- objects -----------------------------------------------------------------------------

    def _end(self, stop_reason: str) -> list[Event]:
        self.ended = True
        usage = dict(self._usage)
        self.final = self._message(
            [block.dump() for block in self._blocks], stop_reason=stop_reason, usage=usage
        )
        delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
        if stop_reason == "refusal":
            # No category: the policy's shields are not Anthropic's classifiers.
            delta["stop_details"] = self.final["stop_details"] = dict(_REFUSAL_DETAILS)
        return [
            {"type": "message_delta", "delta": delta, "usage": usage},
            {"type": "message_stop"},
        ]

    def _message(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str | None,
        usage: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage or {"input_tokens": 0, "output_tokens": 0},
        }


def _tool_use_id() -> str:
    return f"toolu_{uuid.uuid4().hex}"


def _arguments(arguments: str) -> dict[str, Any]:
    """A call's arguments as the ``input`` object (none: an empty object). A repeated key
    would be read one way here and maybe another by the client."""
    if not arguments.strip():
        return {}
    try:
        parsed = json_codec.loads(arguments.encode("utf-8", "surrogatepass"), unique_keys=True)
    except json_codec.InvalidJSON:
        raise MalformedChunk("a tool call's arguments are not valid JSON") from None
    if not isinstance(parsed, dict):
        raise MalformedChunk("a tool call's arguments are not a JSON object")
    return parsed


class GuardedMessageStream(TranslatedStream[MessageTranslator]):
    """Upstream bytes -> StreamGuard -> released chunks -> Messages events
    (``TranslatedStream``): a block ends in the policy's refusal, a finished stream ends the
    message."""

    def __init__(self, guard: StreamGuard, translator: MessageTranslator, refusal: Refusal):
        super().__init__(guard, translator)
        self._refusal = refusal

    def _refuse(self) -> list[Event]:
        if self._refusal.style == "error":
            return self.translator.error("invalid_request_error", self._refusal.message)
        return self.translator.refuse(self._refusal.message)

    def _complete(self) -> list[Event]:
        try:
            return self.translator.complete()
        except MalformedChunk as exc:
            return self._broken(f"The upstream sent an invalid reply: {exc}")
