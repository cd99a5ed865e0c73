"""From the guarded chat-completions stream to the Responses API's event sequence.

``GuardedResponseStream`` feeds the upstream's SSE through the same ``StreamGuard`` as
``/v1/chat/completions`` and translates only the bytes the guard releases, so every Responses
event carries text the output shields have already passed: the zero-leak guarantee holds by
construction, with no second hold-back logic to get wrong. When the guard blocks, its chat
refusal tail is dropped and the Responses refusal form is sent instead; when it fails (the
upstream broke off or sent something unreadable), the response fails.

``ResponseTranslator`` turns ``chat.completion.chunk`` deltas into events, in the order OpenAI
sends them: ``response.created``, ``response.in_progress``, then per output item
``output_item.added`` / ``content_part.added`` / deltas / ``.done`` events, then
``response.completed`` (or ``.incomplete`` / ``.failed``), with increasing ``sequence_number``.
Reasoning text (``reasoning_content`` / ``reasoning``) becomes a ``reasoning`` item, content a
``message`` item, each tool-call index a ``function_call`` item — or, for a tool of an MCP server
(``mcp``, set once the servers are listed), an ``mcp_call`` item whose arguments stream as
``response.mcp_call_arguments.delta`` (from released text only, like a function call's), or an
``mcp_approval_request`` item when the call needs the client's approval. A response with MCP
tools has several inference turns (``proxy.mcp.loop``): ``start_turn``/``end_turn`` bracket
each, ``mcp_call_done`` reports a call's outcome, and usage is summed over the turns.

Calls may interleave (their events name their ``output_index``), so function-call items stay
open until the end; a message or reasoning item closes when the model moves on to something
else. A legacy ``function_call`` is tool call 0; a delta that carries the same call both ways
(llama-cpp-python's server) is read once, from ``tool_calls``, and copies that differ fail the
response.

Neither class does I/O: the handler feeds network reads in and writes what comes out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from proxy.endpoints.responses_request import new_id
from proxy.exchange.refusal import REFUSAL_SEPARATOR
from proxy.mcp.tools import McpTool, McpTools
from proxy.stream.chat_deltas import (
    REASONING_KEYS,
    as_delta,
    content_text,
    string_field,
)
from proxy.stream.guard import StreamGuard
from proxy.stream.translated import Event, MalformedChunk, TranslatedStream
from shields.openai.fields import serialize_arguments
from shields.policy import Refusal

__all__ = [
    "STREAM_FAILED",
    "GuardedResponseStream",
    "ResponseTranslator",
    "TurnCall",
    "refusal_events",
]


# The proxy's own words for a failed upstream; an upstream's error text is never passed on.
STREAM_FAILED = "The upstream stream failed"


@dataclass(frozen=True, slots=True)
class TurnCall:
    """A tool call the model made in the turn that just ended (``ResponseTranslator``)."""

    kind: str  # function_call | mcp_call | mcp_approval_request
    item_id: str
    name: str
    arguments: str
    server_label: str


@dataclass(slots=True, eq=False)
class _Part:
    kind: str  # output_text | refusal | reasoning_text
    texts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        if len(self.texts) > 1:
            self.texts[:] = ["".join(self.texts)]
        return self.texts[0] if self.texts else ""

    def dump(self) -> dict[str, Any]:
        if self.kind == "output_text":
            return {"type": "output_text", "text": self.text, "annotations": [], "logprobs": []}
        if self.kind == "refusal":
            return {"type": "refusal", "refusal": self.text}
        return {"type": "reasoning_text", "text": self.text}


@dataclass(slots=True, eq=False)
class _Item:
    # message | reasoning | function_call | mcp_call | mcp_approval_request | mcp_list_tools
    kind: str
    id: str
    output_index: int
    parts: list[_Part] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    open: bool = True
    status: str = "in_progress"
    # MCP items: the server's label; a call's output or error, the approval it answers; the
    # tools of a listing; whether a call's arguments are final (``.done`` sent).
    server_label: str = ""
    output: str | None = None
    error: dict[str, Any] | None = None
    approval_request_id: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    arguments_done: bool = False
    notice: str | None = None  # a listing's ``error`` (tools withheld)

    def part(self, kind: str) -> tuple[int, _Part | None]:
        for i, part in enumerate(self.parts):
            if part.kind == kind:
                return i, part
        return len(self.parts), None

    def dump(self, *, empty: bool = False) -> dict[str, Any]:
        """A fresh dict (events must not share state the translator goes on changing)."""
        if self.kind == "message":
            return {
                "id": self.id,
                "type": "message",
                "role": "assistant",
                "status": self.status,
                "content": [] if empty else [part.dump() for part in self.parts],
            }
        if self.kind == "reasoning":
            return {
                "id": self.id,
                "type": "reasoning",
                "summary": [],
                "content": [] if empty else [part.dump() for part in self.parts],
                "status": self.status,
            }
        if self.kind == "mcp_list_tools":
            return {
                "id": self.id,
                "type": "mcp_list_tools",
                "server_label": self.server_label,
                "tools": [] if empty else [dict(tool) for tool in self.tools],
                "error": None if empty else self.notice,
            }
        arguments = "" if empty else self.arguments_text
        if self.kind == "mcp_call":
            return {
                "id": self.id,
                "type": "mcp_call",
                "server_label": self.server_label,
                "name": self.name,
                "arguments": arguments,
                "output": None if empty else self.output,
                "error": None if empty else self.error,
                "status": self.status,
                "approval_request_id": self.approval_request_id,
            }
        if self.kind == "mcp_approval_request":
            return {
                "id": self.id,
                "type": "mcp_approval_request",
                "server_label": self.server_label,
                "name": self.name,
                "arguments": arguments,
            }
        return {
            "id": self.id,
            "type": "function_call",
            "call_id": self.call_id,
            "name": self.name,
            "arguments": arguments,
            "status": self.status,
        }

    @property
    def arguments_text(self) -> str:
        if len(self.arguments) > 1:
            self.arguments[:] = ["".join(self.arguments)]
        return self.arguments[0] if self.arguments else ""


def _add_usage(total: dict[str, Any] | None, turn: dict[str, Any] | None) -> dict[str, Any] | None:
    """Usage summed over inference turns (None while no turn reported any)."""
    if turn is None or total is None:
        return total or turn
    return {
        "input_tokens": total["input_tokens"] + turn["input_tokens"],
        "input_tokens_details": {
            "cached_tokens": total["input_tokens_details"]["cached_tokens"]
            + turn["input_tokens_details"]["cached_tokens"],
            "cache_write_tokens": 0,
        },
        "output_tokens": total["output_tokens"] + turn["output_tokens"],
        "output_tokens_details": {
            "reasoning_tokens": total["output_tokens_details"]["reasoning_tokens"]
            + turn["output_tokens_details"]["reasoning_tokens"]
        },
        "total_tokens": total["total_tokens"] + turn["total_tokens"],
    }


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None

    def count(holder: Any, key: str) -> int:
        value = holder.get(key) if isinstance(holder, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    input_tokens = count(usage, "prompt_tokens")
    output_tokens = count(usage, "completion_tokens")
    total = count(usage, "total_tokens") or input_tokens + output_tokens
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {
            "cached_tokens": count(usage.get("prompt_tokens_details"), "cached_tokens"),
            "cache_write_tokens": 0,
        },
        "output_tokens": output_tokens,
        "output_tokens_details": {
            "reasoning_tokens": count(usage.get("completion_tokens_details"), "reasoning_tokens")
        },
        "total_tokens": total,
    }


_ZERO_USAGE = _usage({})


class ResponseTranslator:
    """Builds the Responses events for one response; ``final`` is set once it has ended."""

    def __init__(
        self, *, response_id: str, model: str, echo: dict[str, Any], streamed: bool = True
    ) -> None:
        self.id = response_id
        # Whether the client gets the events as they are made, or only the final response.
        self._streamed = streamed
        self.model = model
        self.created_at = int(time.time())
        self._echo = echo
        self._sequence = 0
        self._items: list[_Item] = []
        self._message: _Item | None = None  # the open message item, if any
        self._reasoning: _Item | None = None  # the open reasoning item, if any
        self._calls: dict[int, _Item] = {}  # open function-call items by tool-call index
        # Where the calls' text comes from: ``tool_calls`` or the legacy ``function_call``
        # (``_legacy_call``); never both, which the guard checked as two texts.
        self._calls_from: str | None = None
        # The reasoning key the stream uses: servers that send both keys send the same text
        # twice, and the guard checks each key as its own text, so two keys are never joined.
        self._reasoning_key: str | None = None
        self._finish_reason: str | None = None
        self._usage: dict[str, Any] | None = None  # this turn's
        self._earlier_usage: dict[str, Any] | None = None  # the turns before, summed
        self._refusal: _Item | None = None  # the refusal message, once a shield blocked
        # The MCP tools the model may call (by name), once their servers are listed; the first
        # output item of the current inference turn.
        self.mcp: McpTools | None = None
        self._turn_start = 0
        self.final: dict[str, Any] | None = None
        self.ended = False
        self.failed = False

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def usage(self) -> dict[str, Any] | None:
        """Usage over every inference turn so far."""
        return _add_usage(self._earlier_usage, self._usage)

    def start(self) -> list[Event]:
        snapshot = self._response("in_progress", [])
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=self._response("in_progress", [])),
        ]

    def chunk(self, chunk: dict[str, Any]) -> list[Event]:
        """One ``chat.completion.chunk`` the guard released. Raises MalformedChunk."""
        events: list[Event] = []
        if "usage" in chunk and chunk["usage"] is not None:
            self._usage = _usage(chunk["usage"])
        choices = chunk.get("choices")
        if choices is None:
            return events
        if not isinstance(choices, list):
            raise MalformedChunk("`choices` is not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise MalformedChunk("a choice is not an object")
            if choice.get("index", 0) != 0:
                continue  # n is always 1 upstream; nothing else belongs to this response
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            elif delta is not None:
                raise MalformedChunk("a choice's delta is not an object")
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self._finish_reason = reason
        return events

    def reply(self, completion: dict[str, Any], *, turn: bool = False) -> list[Event]:
        """A whole ``chat.completion`` (an upstream that ignored ``"stream": true``), already
        checked by the output stage: read as one chunk whose deltas are the choices' messages,
        then completed (``turn``: its inference turn ended, ``end_turn``). Raises
        MalformedChunk."""
        choices = completion.get("choices")
        if isinstance(choices, list) and choices:
            # The first choice only (the upstream is asked for one), read as the output stage
            # read it: by position, its tool calls by their place in the list. Choices or
            # calls that claim one index would otherwise be joined into a text never checked.
            choice = choices[0]
            if not isinstance(choice, dict):
                raise MalformedChunk("a choice is not an object")
            completion = {
                **completion,
                "choices": [{**choice, "index": 0, "delta": as_delta(choice.get("message"))}],
            }
        events = self.chunk(completion)
        return events + (self.end_turn() if turn else self.complete())

    # -- inference turns and MCP items -------------------------------------------------------

    def start_turn(self) -> None:
        """The next inference turn of the response begins (another upstream stream)."""
        self._earlier_usage = self.usage
        self._usage = None
        self._turn_start = len(self._items)
        self._calls.clear()
        self._calls_from = self._reasoning_key = self._finish_reason = None

    def end_turn(self) -> list[Event]:
        """The turn's upstream stream finished and everything it sent was released: its items
        are closed, except its MCP calls, whose arguments are now final and which wait to be
        run (``mcp_call_done``)."""
        turn = self._items[self._turn_start :]
        if any(item.kind == "function_call" and not item.name for item in turn):
            return self.fail("The upstream sent a tool call without a function name")
        events: list[Event] = []
        self._close_reasoning(events)
        self._close_message(events)
        for item in turn:
            if item.kind == "mcp_call":
                self._arguments_done(item, events)
            else:
                self._close(item, "completed", events)
        self._calls.clear()
        return events

    @property
    def finish_reason(self) -> str | None:
        """Why the current turn's upstream stopped."""
        return self._finish_reason

    def turn_calls(self) -> list[TurnCall]:
        """The tool calls of the current turn, in order."""
        return [
            TurnCall(item.kind, item.id, item.name, item.arguments_text, item.server_label)
            for item in self._items[self._turn_start :]
            if item.kind in ("function_call", "mcp_call", "mcp_approval_request")
        ]

    def turn_output(self) -> list[dict[str, Any]]:
        """The current turn's items as output items."""
        return [item.dump() for item in self._items[self._turn_start :]]

    def list_tools(
        self, label: str, tools: list[McpTool], notice: str | None = None
    ) -> list[Event]:
        """An ``mcp_list_tools`` item: a server's tools, as checked; ``notice``: its
        ``error``, naming tools that were withheld (``proxy.mcp.pinning``)."""
        item = self._add("mcp_list_tools")
        item.server_label = label
        item.tools = [tool.listed() for tool in tools]
        item.notice = notice
        item.open = False
        item.status = "completed"
        where = {"item_id": item.id, "output_index": item.output_index}
        return [
            self._added(item),
            self._event("response.mcp_list_tools.in_progress", **where),
            self._event("response.mcp_list_tools.completed", **where),
            self._done_item(item),
        ]

    def approved_call(
        self, tool: McpTool, arguments: str, approval_request_id: str
    ) -> tuple[str, list[Event]]:
        """An ``mcp_call`` item for a call the client approved: its id and events (the call
        is then run, ``mcp_call_done``)."""
        item = self._add("mcp_call")
        item.name = tool.name
        item.server_label = tool.server
        item.approval_request_id = approval_request_id
        events = [self._added(item), self._in_progress(item)]
        if arguments:
            item.arguments.append(arguments)
            events.append(
                self._event(
                    "response.mcp_call_arguments.delta",
                    item_id=item.id,
                    output_index=item.output_index,
                    delta=arguments,
                )
            )
        self._arguments_done(item, events)
        return item.id, events

    def mcp_call_done(
        self, item_id: str, *, output: str | None = None, error: dict[str, Any] | None = None
    ) -> list[Event]:
        """An MCP call ended: with its (checked) output, or failed with ``error``."""
        item = next(each for each in self._items if each.id == item_id)
        item.output, item.error = output, error
        item.open = False
        item.status = "failed" if error is not None else "completed"
        kind = "response.mcp_call.failed" if error is not None else "response.mcp_call.completed"
        return [
            self._event(kind, item_id=item.id, output_index=item.output_index),
            self._done_item(item),
        ]

    def complete(self) -> list[Event]:
        """The upstream finished and the guard released everything."""
        if any(item.kind == "function_call" and not item.name for item in self._items):
            return self.fail("The upstream sent a tool call without a function name")
        reason = self._finish_reason
        incomplete = None
        if reason == "length":
            incomplete = {"reason": "max_output_tokens"}
        elif reason == "content_filter":
            incomplete = {"reason": "content_filter"}
        item_status = "completed" if incomplete is None else "incomplete"
        events = self._close_all(item_status)
        status = "completed" if incomplete is None else "incomplete"
        output = [item.dump() for item in self._items]
        final = self._response(status, output, usage=self.usage)
        final["incomplete_details"] = incomplete
        events.append(self._end(f"response.{status}", final))
        return events

    def refuse(self, message: str) -> list[Event]:
        """A shield blocked: the answer ends with a message whose refusal part is ``message``.

        A stream client keeps what it was sent: the items under way are closed as incomplete
        (holding only text that passed) and the final response lists them before the refusal,
        as the events did. After released text the refusal starts with a blank line, so that a
        client printing the deltas does not glue it to the sentence it cut short. A non-stream
        client was sent nothing: its answer is the refusal alone, as for a blocked chat reply.
        """
        if self._streamed:
            events = self._close_all("incomplete")
        else:
            events = []
            self._items.clear()
            self._message = self._reasoning = None
            self._calls.clear()
        if self._released_text():
            message = REFUSAL_SEPARATOR + message
        item = self._refusal = self._add("message")
        events.append(self._added(item))
        part = _Part("refusal", [message])
        item.parts.append(part)
        where = {"item_id": item.id, "output_index": item.output_index, "content_index": 0}
        events.append(
            self._event("response.content_part.added", **where, part=_Part("refusal").dump())
        )
        events.append(self._event("response.refusal.delta", **where, delta=message))
        events.append(self._event("response.refusal.done", **where, refusal=message))
        events.append(self._event("response.content_part.done", **where, part=part.dump()))
        item.open = False
        item.status = "completed"
        events.append(self._done_item(item))
        output = [each.dump() for each in self._items]
        final = self._response("completed", output, usage=self.usage or _ZERO_USAGE)
        events.append(self._end("response.completed", final))
        return events

    def conversation_output(self) -> list[dict[str, Any]]:
        """The final output items a stored conversation continues from.

        After a refusal, the refusal alone, without its separator: the items before it were
        cut off where a shield stopped them (a cut-off call is one no tool can answer, and two
        assistant turns in a row break strict chat templates).
        """
        if self.final is None:
            return []
        if self._refusal is None:
            # The earlier turns of an MCP loop are in the conversation sent for the last.
            return list(self.final["output"][self._turn_start :])
        refusal = self._refusal.dump()
        text = refusal["content"][0]["refusal"]
        refusal["content"][0]["refusal"] = text.removeprefix(REFUSAL_SEPARATOR)
        return [refusal]

    def fail(self, message: str) -> list[Event]:
        """The upstream failed: ``response.failed`` with what was released so far."""
        for item in self._items:
            if item.open:
                item.status = "incomplete"
        output = [item.dump() for item in self._items]
        final = self._response("failed", output, usage=self.usage)
        final["error"] = {"code": "server_error", "message": message}
        self.failed = True
        return [self._end("response.failed", final)]

    def error(self, code: str, message: str) -> list[Event]:
        """An ``error`` event ends the stream (a block under refusal style ``error``)."""
        self.ended = self.failed = True
        return [self._event("error", code=code, message=message, param=None)]

    # -- deltas ------------------------------------------------------------------------------

    def _delta(self, delta: dict[str, Any], events: list[Event]) -> None:
        for key, value in delta.items():
            if value is None:
                continue
            if key == "content":
                self._text("output_text", content_text(value), events)
            elif key == "refusal":
                self._text("refusal", string_field(value, key), events)
            elif key in REASONING_KEYS:
                text = string_field(value, key)
                if self._reasoning_key is None and text:
                    self._reasoning_key = key
                if key == self._reasoning_key:
                    self._reasoning_text(text, events)
            elif key == "tool_calls":
                if not isinstance(value, list):
                    raise MalformedChunk("`tool_calls` is not a list")
                if self._calls_from == "function_call":
                    raise MalformedChunk("`tool_calls` after legacy `function_call` deltas")
                self._calls_from = "tool_calls"
                for position, call in enumerate(value):
                    self._tool_call(call, position, events)
            elif key == "function_call":
                self._legacy_call(value, delta.get("tool_calls"), events)

    def _legacy_call(self, function: Any, calls: Any, events: list[Event]) -> None:
        """The legacy ``function_call``: the same call as tool call index 0.

        The guard checks it on a channel of its own, apart from ``tool_calls``, so the item's
        text must come from one of them only: a delta carrying both (llama-cpp-python's server
        sends both, the same call twice) is read from ``tool_calls`` once the two agree, and a
        stream that mixed them would make the item a join of two texts checked apart.
        """
        legacy = _call_text(function)
        if calls is not None:
            if not isinstance(calls, list):
                raise MalformedChunk("`tool_calls` is not a list")
            first = next(
                (
                    call
                    for position, call in enumerate(calls)
                    if isinstance(call, dict) and call.get("index", position) == 0
                ),
                None,
            )
            twin = _call_text(first.get("function") if first is not None else None)
            if legacy != twin and legacy != ("", ""):
                raise MalformedChunk("`function_call` and `tool_calls` disagree")
            return  # the call is read from `tool_calls`
        if legacy == ("", ""):
            return
        if self._calls_from == "tool_calls":
            raise MalformedChunk("a legacy `function_call` delta in a stream of `tool_calls`")
        self._calls_from = "function_call"
        self._tool_call({"index": 0, "function": function}, 0, events)

    def _text(self, kind: str, text: str, events: list[Event]) -> None:
        if not text:
            return
        self._close_reasoning(events)
        item = self._message
        if item is None:
            item = self._message = self._add("message")
            events.append(self._added(item))
        index, part = item.part(kind)
        where = {"item_id": item.id, "output_index": item.output_index, "content_index": index}
        if part is None:
            part = _Part(kind)
            item.parts.append(part)
            events.append(self._event("response.content_part.added", **where, part=part.dump()))
        part.texts.append(text)
        if kind == "output_text":
            events.append(
                self._event("response.output_text.delta", **where, delta=text, logprobs=[])
            )
        else:
            events.append(self._event("response.refusal.delta", **where, delta=text))

    def _reasoning_text(self, text: str, events: list[Event]) -> None:
        if not text:
            return
        self._close_message(events)
        item = self._reasoning
        if item is None:
            item = self._reasoning = self._add("reasoning")
            events.append(self._added(item))
            item.parts.append(_Part("reasoning_text"))
            events.append(
                self._event(
                    "response.content_part.added",
                    item_id=item.id,
                    output_index=item.output_index,
                    content_index=0,
                    part=_Part("reasoning_text").dump(),
                )
            )
        item.parts[0].texts.append(text)
        events.append(
            self._event(
                "response.reasoning_text.delta",
                item_id=item.id,
                output_index=item.output_index,
                content_index=0,
                delta=text,
            )
        )

    def _tool_call(self, call: Any, position: int, events: list[Event]) -> None:
        if not isinstance(call, dict):
            raise MalformedChunk("a tool call is not an object")
        index = call.get("index", position)
        if not isinstance(index, int):
            raise MalformedChunk("a tool call's `index` is not an integer")
        function = call.get("function") or {}
        if not isinstance(function, dict):
            raise MalformedChunk("a tool call's `function` is not an object")
        name = function.get("name")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = serialize_arguments(arguments)
        elif arguments is not None and not isinstance(arguments, str):
            raise MalformedChunk("a tool call's `arguments` is neither a string nor an object")
        item = self._calls.get(index)
        if item is None:
            self._close_reasoning(events)
            self._close_message(events)
            tool = self.mcp.get(name) if self.mcp is not None and isinstance(name, str) else None
            kind = "function_call"
            if tool is not None:
                kind = "mcp_approval_request" if tool.needs_approval else "mcp_call"
            item = self._calls[index] = self._add(kind)
            call_id = call.get("id")
            item.call_id = call_id if isinstance(call_id, str) and call_id else new_id("call")
            item.name = name if isinstance(name, str) else ""
            if tool is not None:
                item.server_label = tool.server
            events.append(self._added(item))
            if kind == "mcp_call":
                events.append(self._in_progress(item))
        elif isinstance(name, str) and name:
            # Some servers (llama-cpp-python) repeat the name and id in every delta of a call:
            # the same name continues the call; another one is not this call's to take.
            if not item.name:
                if self.mcp is not None and name in self.mcp:
                    # Its item went out as a function call: it cannot become an MCP call now.
                    raise MalformedChunk("a call of an MCP tool came without its name first")
                item.name = name
            elif name != item.name:
                raise MalformedChunk("a tool call's `name` changed mid-call")
        if arguments:
            item.arguments.append(arguments)
            if item.kind != "mcp_approval_request":  # shown whole, once final
                kind = (
                    "response.mcp_call_arguments.delta"
                    if item.kind == "mcp_call"
                    else "response.function_call_arguments.delta"
                )
                events.append(
                    self._event(
                        kind, item_id=item.id, output_index=item.output_index, delta=arguments
                    )
                )

    # -- items -------------------------------------------------------------------------------

    def _released_text(self) -> bool:
        """Whether answer text (``output_text``, the chat stream's content) was sent."""
        return any(
            part.kind == "output_text" and part.text
            for item in self._items
            if item.kind == "message"
            for part in item.parts
        )

    def _add(self, kind: str) -> _Item:
        prefix = {
            "message": "msg",
            "reasoning": "rs",
            "function_call": "fc",
            "mcp_call": "mcp",
            "mcp_approval_request": "mcpr",
            "mcp_list_tools": "mcpl",
        }[kind]
        item = _Item(kind, new_id(prefix), len(self._items))
        self._items.append(item)
        return item

    def _added(self, item: _Item) -> Event:
        return self._event(
            "response.output_item.added",
            output_index=item.output_index,
            item=item.dump(empty=True),
        )

    def _done_item(self, item: _Item) -> Event:
        return self._event(
            "response.output_item.done", output_index=item.output_index, item=item.dump()
        )

    def _in_progress(self, item: _Item) -> Event:
        return self._event(
            "response.mcp_call.in_progress", item_id=item.id, output_index=item.output_index
        )

    def _arguments_done(self, item: _Item, events: list[Event]) -> None:
        if not item.arguments_done:
            item.arguments_done = True
            events.append(
                self._event(
                    "response.mcp_call_arguments.done",
                    item_id=item.id,
                    output_index=item.output_index,
                    arguments=item.arguments_text,
                )
            )

    def _close(self, item: _Item, status: str, events: list[Event]) -> None:
        if not item.open:
            return
        item.open = False
        item.status = status
        where = {"item_id": item.id, "output_index": item.output_index}
        if item.kind == "mcp_call":
            self._arguments_done(item, events)
        elif item.kind == "mcp_approval_request":
            pass  # shown whole by its done event
        elif item.kind == "function_call":
            arguments = item.dump()["arguments"]
            events.append(
                self._event("response.function_call_arguments.done", **where, arguments=arguments)
            )
        else:
            for index, part in enumerate(item.parts):
                at = {**where, "content_index": index}
                if part.kind == "output_text":
                    events.append(
                        self._event("response.output_text.done", **at, text=part.text, logprobs=[])
                    )
                elif part.kind == "refusal":
                    events.append(self._event("response.refusal.done", **at, refusal=part.text))
                else:
                    events.append(self._event("response.reasoning_text.done", **at, text=part.text))
                events.append(self._event("response.content_part.done", **at, part=part.dump()))
        events.append(self._done_item(item))

    def _close_message(self, events: list[Event]) -> None:
        if self._message is not None:
            self._close(self._message, "completed", events)
            self._message = None

    def _close_reasoning(self, events: list[Event]) -> None:
        if self._reasoning is not None:
            self._close(self._reasoning, "completed", events)
            self._reasoning = None

    def _close_all(self, status: str) -> list[Event]:
        events: list[Event] = []
        for item in self._items:
            self._close(item, status, events)
        self._message = self._reasoning = None
        self._calls.clear()
        return events

    # -- objects -----------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _end(self, kind: str, final: dict[str, Any]) -> Event:
        self.ended = True
        self.final = final
        return self._event(kind, response=final)

    def _response(
        self, status: str, output: list[dict[str, Any]], *, usage: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "completed_at": int(time.time()) if status == "completed" else None,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": output,
            "usage": usage,
            **self._echo,
        }


def _call_text(function: Any) -> tuple[str, str]:
    """A call's name and arguments as text (what a legacy ``function_call`` and its twin in
    ``tool_calls`` must agree on); ``("", "")`` for a call that carries neither."""
    if function is None:
        return "", ""
    if not isinstance(function, dict):
        raise MalformedChunk("a function call is not an object")
    name, arguments = function.get("name"), function.get("arguments")
    if isinstance(arguments, dict):
        arguments = serialize_arguments(arguments)
    if name is not None and not isinstance(name, str):
        raise MalformedChunk("a function call's `name` is not a string")
    if arguments is not None and not isinstance(arguments, str):
        raise MalformedChunk("a function call's `arguments` is neither a string nor an object")
    return name or "", arguments or ""


def refusal_events(translator: ResponseTranslator, refusal: Refusal) -> list[Event]:
    """The end of a response a shield blocked, in the policy's refusal style."""
    if refusal.style == "error":
        return translator.error("content_filter", refusal.message)
    return translator.refuse(refusal.message)


class GuardedResponseStream(TranslatedStream[ResponseTranslator]):
    """Upstream bytes -> StreamGuard -> released chunks -> Responses events
    (``TranslatedStream``): a block ends in the policy's refusal, a finished stream completes
    the response — or only its inference turn, for one turn of several (``turn``: MCP tools).
    """

    def __init__(
        self,
        guard: StreamGuard,
        translator: ResponseTranslator,
        refusal: Refusal,
        *,
        turn: bool = False,
    ):
        super().__init__(guard, translator)
        self._refusal = refusal
        # One inference turn of several (MCP tools): its end ends the turn, not the response.
        self._turn = turn
        self._turn_ended = False

    @property
    def closed(self) -> bool:
        return self.translator.ended or self._turn_ended

    def _refuse(self) -> list[Event]:
        return refusal_events(self.translator, self._refusal)

    def _complete(self) -> list[Event]:
        if self._turn:
            self._turn_ended = True
            return self.translator.end_turn()
        return self.translator.complete()
