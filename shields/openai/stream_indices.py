"""The choice and tool-call indices a stream may open.

The stream guard keys its channels by choice and tool-call index, so an index must mean to
every client what it means to the guard. In a stream, clients assemble choices and tool calls
into lists by index — the SDK's ``ChatCompletionStreamState`` takes a first chunk's choices and
a first delta's tool calls by position, later ones by index into its list, where ``-1`` is the
last entry and an index past the end is appended (joining a later, lower index); a
``choices[0]`` loop reads positions. Those readings agree with the channels only when each
index is a plain integer, every new one is the next in line (0, 1, 2, ...), no list names one
twice, choices stay below the request's ``n`` and tool calls below ``MAX_TOOL_CALLS``.

A streamed tool call's name must come whole in one delta (llama.cpp repeats it in every
delta): the guard checks it whole as it arrives (``StreamIndices.names``) rather than as a
channel that never ends, and holds the event that brought it until the next event of its call
shows no piece follows. When the request declared tools, a name that is not one of them is a
reply no client can act on safely.
"""

from __future__ import annotations

from typing import Any

from shields.openai.channels import CALL_CHANNELS, CallChannel, Channel, call_key
from shields.openai.errors import MalformedReply

__all__ = ["MAX_TOOL_CALLS", "StreamIndices"]

# The longest tool-call name accepted in a stream (OpenAI's limit is 64 characters).
_MAX_NAME_CHARS = 4096

# Tool calls one choice of a stream may open (indices 0 to 127): OpenAI accepts at most 128
# tools in a request, and every call opens channels with scanners of their own.
MAX_TOOL_CALLS = 128


class StreamIndices:
    """The choice and tool-call indices a stream has opened: each new one must be the next.

    ``choices`` is how many choice indices are open (0 to ``choices - 1``); the guard checks
    an index against it inline (the per-token path) and calls ``open_choice`` only for one
    outside it. Raises MalformedReply for an index a client could map elsewhere than the
    guard's channels (see the module's docstring).
    """

    __slots__ = ("_calls", "_names", "choices", "n", "tools", "undecided")

    def __init__(self, n: int, tools: frozenset[str] | None = None) -> None:
        self.n = n  # the choices the request asked for
        self.tools = tools  # the tool names the request declared, if it declared any
        self.choices = 0
        self._calls: dict[int, int] = {}  # choice index -> tool-call indices open
        # (choice, name kind, call index) -> the call's name
        self._names: dict[CallChannel, str] = {}
        # The calls (``call_key``) whose name came in an event that no later event of the
        # same call has followed yet: the guard holds that event back (see ``names``).
        self.undecided: set[CallChannel] = set()

    def open_choice(self, index: Any) -> None:
        """A choice index not open yet: accepted only as the next one, below ``n``."""
        if type(index) is not int:
            raise MalformedReply("a choice's `index` is not an integer")
        if index < 0 or index >= self.n:
            raise MalformedReply(f"a choice's `index` is outside the {self.n} asked for")
        if index != self.choices:
            raise MalformedReply("a choice's `index` skips one that has not come yet")
        self.choices = index + 1

    def tool_call(self, choice: int, index: int) -> None:
        """A streamed tool call's (integer) ``index`` in ``choice``: open, or the next one."""
        opened = self._calls.get(choice, 0)
        if 0 <= index < opened:
            return
        if index < 0 or index >= MAX_TOOL_CALLS:
            raise MalformedReply(f"a tool call's `index` is outside 0 to {MAX_TOOL_CALLS - 1}")
        if index != opened:
            raise MalformedReply("a tool call's `index` skips one that has not come yet")
        self._calls[choice] = index + 1

    def names(
        self, key: str, value: Any, choice: int
    ) -> tuple[list[tuple[CallChannel, str]], bool]:
        """The tool-call names in a delta's ``tool_calls`` or ``function_call`` (``key``) that
        are new, each with its call's ``call_key``; and whether the delta decided a name (it
        continues a call in ``undecided``). Read after ``reply_fields`` has accepted the same
        value (its shape and indices).

        A name must come whole, in one delta: a name repeated as it was (llama.cpp sends it in
        every delta) is no new text; a piece that differs fails the stream (MalformedReply), as
        does a name the request's ``tools`` do not declare. The event that brings a name stays
        ``undecided`` until another event of its call (or the end) shows that no piece follows:
        a name that is the start of a blocked phrase never leaves before its end could come.
        """
        found: list[tuple[CallChannel, str]] = []
        calls: list[tuple[CallChannel, str, Any]]
        if key == "function_call":
            calls = [(CallChannel(choice, "function_call", 0), "function_call", value)]
        else:
            calls = [(CallChannel(choice, "tool_calls", call["index"]), "", call) for call in value]
        undecided = self.undecided
        decided = False
        for call, _, _ in calls:
            if call in undecided:
                undecided.discard(call)
                decided = True
        for call, kind, holder in calls:
            if kind:
                self._name(holder.get("name") if type(holder) is dict else None, call, kind, found)
                continue
            for kind, part_key in (("tool_name", "function"), ("custom_tool_name", "custom")):
                part = holder.get(part_key)
                if type(part) is dict:
                    self._name(part.get("name"), call, kind, found)
        undecided.update(call for call, _ in found)
        return found, decided

    def name_of(self, channel: Channel) -> str | None:
        """The name of the call whose arguments (or input) are on ``channel``, once it came;
        None for any other channel."""
        if channel.field == "function_call":
            return self._names.get(CallChannel(channel.choice, "function_call", 0))
        if type(channel) is not CallChannel:
            return None
        kind = {"tool_calls": "tool_name", "custom_tool_calls": "custom_tool_name"}.get(
            channel.field
        )
        if kind is None:
            return None
        return self._names.get(CallChannel(channel.choice, kind, channel.call))

    def decide(self, channel: Channel) -> bool:
        """An event of the call whose text is on ``channel`` came (a run of them): its name,
        if undecided, is decided. Returns whether it was."""
        if channel.field not in CALL_CHANNELS:
            return False
        call = call_key(channel)
        if call in self.undecided:
            self.undecided.discard(call)
            return True
        return False

    def _name(
        self,
        name: Any,
        call: CallChannel,
        kind: str,
        found: list[tuple[CallChannel, str]],
    ) -> None:
        if name is None or name == "":
            return
        if type(name) is not str:
            raise MalformedReply("a tool call's `name` is not a string")
        key = CallChannel(call.choice, kind, call.call)
        known = self._names.get(key)
        if known is not None:
            if name != known:
                # Clients append pieces; the proxy checks a name whole, so it must come whole.
                raise MalformedReply("a tool call's `name` came in pieces")
            return
        if self.tools is not None and name not in self.tools:
            raise MalformedReply("the upstream called a tool the request did not declare")
        if len(name) > _MAX_NAME_CHARS:
            raise MalformedReply("a tool call's `name` is too long")
        self._names[key] = name
        found.append((call, name))
