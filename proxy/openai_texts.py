"""Where the text a shield must see sits in OpenAI chat-completions JSON, and how to rewrite it.

The same walk serves the non-stream reply (``message``) and the stream (``delta``), so a field
the proxy checks is also a field it can redact — and a field it does not know how to read is an
error, never silently skipped. (The request, ``messages``, is read by ``proxy.chat_request``
into the same :class:`TextField`.)

What is read, each on a channel of its own per choice (``(choice_index, ...)``), so that text
split across stream deltas is checked joined:

- ``content`` (a string, or the ``text``/``refusal`` of its parts), ``refusal``, and the
  reasoning of the backends that send it: ``reasoning_content`` (DeepSeek, vLLM),
  ``reasoning`` (vLLM, OpenRouter), ``thinking`` (Ollama and others) — all strings;
- ``reasoning_details`` (OpenRouter): a list of objects whose ``text`` (``reasoning.text``) and
  ``summary`` (``reasoning.summary``) strings are one text per choice, in order; the ``data`` of
  ``reasoning.encrypted`` is opaque and left alone;
- ``audio.transcript``;
- tool calls: ``function.arguments`` (JSON as a string, or an object) on
  ``(choice, "tool_calls", index)``; the ``input`` of a custom tool call (``"type": "custom"``,
  free text, not JSON) on ``(choice, "custom_tool_calls", index)``; a call carrying both has
  both read. The legacy ``function_call.arguments`` is on ``(choice, "function_call")``.
  Channels whose second element is ``"tool_calls"`` or ``"function_call"`` hold JSON text:
  nothing else may use those names.
- tool-call names: ``function.name`` and ``custom.name`` of each call, and the legacy
  ``function_call.name`` (``NAME_CHANNELS``). A client dispatches on them and an agent
  framework shows them to its model again, so they are output text too. In a whole reply they
  are read here, each on a channel of its own; in a stream a name must come whole in one
  delta (llama.cpp repeats it in every delta), so the guard checks it whole as it arrives
  (``StreamIndices.names``) rather than as a channel that never ends, and holds the event
  that brought it until the next event of its call shows no piece follows. When the request
  declared tools, a name that is not one of them is a reply no client can act on safely.

Any of these in a shape other than the documented one raises :class:`MalformedReply`. So does
text where no reader looks, which a client may still show or act on: a content part other
than a text or refusal part with only the keys read; a key that Go clients take for a known
one (``json_codec.go_fold``) in a choice, message/delta, tool call or function object; and an
unknown key holding a string in a message/delta, tool call or function object.

Indices. The channels are keyed by choice and tool-call index, so an index must mean to every
client what it means here. In a stream, clients assemble choices and tool calls into lists by
index — the SDK's ``ChatCompletionStreamState`` takes a first chunk's choices and a first
delta's tool calls by position, later ones by index into its list, where ``-1`` is the last
entry and an index past the end is appended (joining a later, lower index); a ``choices[0]``
loop reads positions. Those readings agree with the channels only when each index is a plain
integer, every new one is the next in line (0, 1, 2, ...), no list names one twice, choices
stay below the request's ``n`` and tool calls below ``MAX_TOOL_CALLS`` (:class:`StreamIndices`).
A whole reply is read by position (by clients and by the Responses translation alike); an
``index`` there must still be a possible one: an integer from 0 up to the choices asked for or
the calls in the list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.json_codec import go_fold

__all__ = [
    "MAX_TOOL_CALLS",
    "NAME_CHANNELS",
    "READERS",
    "TEXT_KEYS",
    "MalformedReply",
    "StreamIndices",
    "TextField",
    "check_choice_index",
    "check_choice_keys",
    "check_message_key",
    "choice_message",
    "joined_text",
    "reply_fields",
]

# Keys of a message/delta whose value is text the model produced: a string (``content`` may
# also be a list of parts), read on the channel ``(choice_index, key)``. The stream guard reads
# a string under these keys itself, without ``reply_fields`` (its per-token fast path).
TEXT_KEYS = frozenset({"content", "reasoning_content", "reasoning", "thinking", "refusal"})
# Every key whose value may hold text: TEXT_KEYS plus the tool-call shapes, audio (whose
# ``transcript`` is the spoken reply as text) and OpenRouter's ``reasoning_details``. The stream
# guard hands any non-string value under these keys to ``reply_fields``.
READERS = TEXT_KEYS | {"tool_calls", "function_call", "audio", "reasoning_details"}
# Keys of a choice that carry text in another shape than the one read: a non-stream choice's
# ``delta`` and a stream choice's ``message`` (the other mode's holder), and ``text`` (the
# legacy completions field). Clients may read them, so they are refused, never skipped.
_MISPLACED = {False: ("delta", "text"), True: ("message", "text")}


# Keys of a message/delta that real servers send and the proxy does not read: the role, and
# OpenAI's ``annotations`` (citations of a web search). Any other key that no reader reads is
# refused when it holds text (``_unread_key``): the SDK keeps unknown keys, and its stream
# accumulator joins their pieces into the final message (``get_final_completion()``).
_UNREAD_MESSAGE_KEYS = frozenset({"role", "annotations"})
_MESSAGE_KEYS = READERS | _UNREAD_MESSAGE_KEYS
# The keys of the objects inside a reply the readers walk: a choice, a tool call, its
# ``function`` (and the legacy ``function_call``) and its ``custom`` object.
_CHOICE_KEYS = frozenset({"index", "message", "delta", "finish_reason", "logprobs", "text"})
_CALL_KEYS = frozenset({"index", "id", "type", "function", "custom"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
_CUSTOM_KEYS = frozenset({"name", "input"})
# Go clients (Ollama's among them) match keys ignoring case (``json_codec.go_fold``): a
# ``"Content"`` beside ``"content"`` may be the one such a client reads, unchecked here.
_FOLDED = {
    known: frozenset(map(go_fold, known))
    for known in (_MESSAGE_KEYS, _CHOICE_KEYS, _CALL_KEYS, _FUNCTION_KEYS, _CUSTOM_KEYS)
}
# A content part of a reply is read when it is one of these types with only these keys; any
# other part (an image, audio, a file, a type of its own) carries what the shields never see.
_PART_TYPES = frozenset({"text", "output_text", "refusal"})
_PART_KEYS = frozenset({"type", "text", "refusal"})

# The second element of the channels that hold a tool call's name (whole replies only).
NAME_CHANNELS = frozenset({"tool_name", "custom_tool_name", "function_call_name"})
# The longest tool-call name accepted in a stream (OpenAI's limit is 64 characters).
_MAX_NAME_CHARS = 4096

# Tool calls one choice of a stream may open (indices 0 to 127): OpenAI accepts at most 128
# tools in a request, and every call opens channels with scanners of their own.
MAX_TOOL_CALLS = 128


class MalformedReply(ValueError):
    """The upstream sent a shape the proxy cannot check: fail closed."""


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
        # (choice, kind, call index) -> the call's name
        self._names: dict[tuple[int, str, int], str] = {}
        # The calls (``call_key``) whose name came in an event that no later event of the
        # same call has followed yet: the guard holds that event back (see ``names``).
        self.undecided: set[tuple[int, str, int]] = set()

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
    ) -> tuple[list[tuple[tuple[int, str, int], str]], bool]:
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
        found: list[tuple[tuple[int, str, int], str]] = []
        if key == "function_call":
            calls = [(call_key((choice, key)), "function_call", value)]
        else:
            calls = [(call_key((choice, key, call["index"])), "", call) for call in value]
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

    def decide(self, channel: tuple[Any, ...]) -> bool:
        """An event of the call whose text is on ``channel`` came (a run of them): its name,
        if undecided, is decided. Returns whether it was."""
        if len(channel) < 2 or channel[1] not in _CALL_CHANNELS:
            return False
        call = call_key(channel)
        if call in self.undecided:
            self.undecided.discard(call)
            return True
        return False

    def _name(
        self,
        name: Any,
        call: tuple[int, str, int],
        kind: str,
        found: list[tuple[tuple[int, str, int], str]],
    ) -> None:
        if name is None or name == "":
            return
        if type(name) is not str:
            raise MalformedReply("a tool call's `name` is not a string")
        key = (call[0], kind, call[2])
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


# The channels of a streamed call's text, and the call each belongs to (``call_key``).
_CALL_CHANNELS = frozenset({"tool_calls", "custom_tool_calls", "function_call"})


def call_key(channel: tuple[Any, ...]) -> tuple[int, str, int]:
    """The streamed call a text channel (or a delta's ``tool_calls``/``function_call``
    entry) belongs to: a function call and a custom one at one index are one call."""
    if channel[1] == "function_call":
        return (channel[0], "function_call", 0)
    return (channel[0], "tool_calls", channel[2])


def check_choice_keys(choice: dict[str, Any]) -> None:
    """A choice (either mode) has no case variant of a choice key (``_CHOICE_KEYS``)."""
    _check_keys(choice, _CHOICE_KEYS, "a choice", text_ok=True)


def check_message_key(key: str, value: Any) -> None:
    """A key of a message/delta that no reader reads: one real servers send, or one that is
    neither a case variant of a known key nor holding any text. Raises MalformedReply."""
    if key in _UNREAD_MESSAGE_KEYS:
        return
    _check_key(key, value, _MESSAGE_KEYS, "a message", text_ok=False)


def _check_keys(
    holder: dict[str, Any], known: frozenset[str], what: str, *, text_ok: bool = False
) -> None:
    for key, value in holder.items():
        if key not in known:
            _check_key(key, value, known, what, text_ok=text_ok)


def _check_key(key: str, value: Any, known: frozenset[str], what: str, *, text_ok: bool) -> None:
    """``key``, not one of ``known``: refused when a Go client may take it for one of them, or
    (unless ``text_ok``) when it holds text a client keeps but no shield has seen."""
    if go_fold(key) in _FOLDED[known]:
        raise MalformedReply(f"{what} has `{key}`, a case variant of a known key")
    if not text_ok and _holds_text(value):
        raise MalformedReply(f"{what} has an unknown key `{key}` holding text")


def _holds_text(value: Any) -> bool:
    """Whether a JSON value is or contains a non-empty string (an object's keys count)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item:
                return True
        elif isinstance(item, dict):
            if item:
                return True  # its keys are strings
        elif isinstance(item, list):
            stack.extend(item)
    return False


def check_choice_index(choice: dict[str, Any], count: int) -> None:
    """A whole reply's choice: its ``index``, if any, is one of the ``count`` asked for."""
    index = choice.get("index")
    if index is not None and (type(index) is not int or not 0 <= index < count):
        raise MalformedReply(f"a choice's `index` is outside the {count} asked for")


@dataclass(slots=True)
class TextField:
    """One piece of text inside a JSON object, and where to write a redacted version back."""

    channel: tuple[Any, ...]  # which text this piece continues (per choice, per field)
    holder: dict[str, Any]
    key: str
    text: str
    json_object: bool = False  # the value is a JSON object, checked in its serialized form

    def write(self, text: str) -> None:
        # ``text`` follows what was written, so later readers (remote shields, which run after
        # the local ones) see the redacted text.
        self.text = text
        if self.json_object:
            try:
                self.holder[self.key] = json.loads(text)
                return
            except ValueError:
                pass  # a redaction broke the JSON: the string form is the honest one
        self.holder[self.key] = text


def joined_text(fields: Sequence[TextField], separator: str = "") -> tuple[str, list[int]]:
    """The fields' texts joined by ``separator`` (one text to scan), and where each starts in
    it (to write a redaction back into each field)."""
    offsets = []
    start = 0
    for text_field in fields:
        offsets.append(start)
        start += len(text_field.text) + len(separator)
    return separator.join([text_field.text for text_field in fields]), offsets


def serialize_arguments(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def choice_message(choice: dict[str, Any], *, stream: bool) -> Any:
    """A choice's ``message`` (non-stream) or ``delta`` (stream), for ``reply_fields``.

    Raises MalformedReply when the choice also carries text under a key that the other mode
    uses: the proxy reads one holder per choice, and a client may read the other.
    """
    check_choice_keys(choice)
    for key in _MISPLACED[stream]:
        value = choice.get(key)
        if value is not None and value != "" and value != {}:
            raise MalformedReply(f"a {'stream' if stream else 'reply'} choice has a `{key}`")
    return choice.get("delta" if stream else "message")


def reply_fields(
    message: Any, choice_index: int, *, stream: bool, indices: StreamIndices | None = None
) -> Iterator[TextField]:
    """The text fields of one choice's ``message`` (non-stream) or ``delta`` (stream).

    ``indices``: the stream's, which new tool-call indices are checked against and opened (the
    guard's first reading of an event; a re-reading to redact passes none)."""
    if message is None:
        return
    if not isinstance(message, dict):
        raise MalformedReply("a choice's message/delta is not an object")
    # Walk the keys the message has (usually one or two in a stream delta) rather than every
    # key the proxy knows: this runs once per streamed event.
    for key, value in message.items():
        if key not in READERS:
            check_message_key(key, value)
            continue
        if value is None:
            continue
        if key in TEXT_KEYS:
            if isinstance(value, str):
                if value:
                    yield TextField((choice_index, key), message, key, value)
            elif key == "content" and isinstance(value, list):
                yield from _content_parts(value, choice_index)
            else:
                raise MalformedReply(f"`{key}` is neither a string nor null")
        elif key == "tool_calls":
            yield from _tool_calls(value, choice_index, stream, indices)
        elif key == "audio":
            yield from _transcript(value, choice_index)
        elif key == "reasoning_details":
            yield from _reasoning_details(value, choice_index)
        else:  # function_call
            yield from _arguments(value, (choice_index, "function_call"))
            if not stream:
                yield from _name(value, (choice_index, "function_call_name"))


def _tool_calls(
    tool_calls: Any, choice_index: int, stream: bool, indices: StreamIndices | None
) -> Iterator[TextField]:
    if not isinstance(tool_calls, list):
        raise MalformedReply("`tool_calls` is not a list")
    # One list naming an index twice: a client takes a first delta's calls by position, so
    # the second would be a call of its own there and part of the first here.
    named: set[int] | None = set() if stream and len(tool_calls) > 1 else None
    for position, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise MalformedReply("a tool call is not an object")
        _check_keys(call, _CALL_KEYS, "a tool call")
        index = call.get("index")
        if stream:
            # A streamed call continues across deltas by its index (OpenAI, vLLM, llama.cpp
            # and Ollama always send it): without one, which call a piece continues is a
            # guess, and text split across a wrong guess would be checked in halves.
            if type(index) is not int:
                raise MalformedReply("a streamed tool call has no integer `index`")
            if named is not None:
                if index in named:
                    raise MalformedReply("a delta names one tool-call `index` twice")
                named.add(index)
            if indices is not None:
                indices.tool_call(choice_index, index)
        else:
            # Read by position, as clients read a whole reply; a label that is no position
            # at all (negative, past the end, not an integer) is a reply a client may misread.
            if index is not None and (type(index) is not int or not 0 <= index < len(tool_calls)):
                raise MalformedReply("a tool call's `index` is not a position in its list")
            index = position
        # A call is a ``function`` call or a ``custom`` one (its ``type``); the type is not
        # trusted to say which field holds the text: whichever is present is read.
        yield from _arguments(call.get("function"), (choice_index, "tool_calls", index))
        # Free text, not JSON: its own channel, never "tool_calls" (read as JSON text).
        yield from _custom_input(call.get("custom"), (choice_index, "custom_tool_calls", index))
        if not stream:  # a stream's names are the guard's (``StreamIndices.names``)
            yield from _name(call.get("function"), (choice_index, "tool_name", index))
            yield from _name(call.get("custom"), (choice_index, "custom_tool_name", index))


def _custom_input(custom: Any, channel: tuple[Any, ...]) -> Iterator[TextField]:
    """A custom tool call's ``custom.input``: the tool's input as free text."""
    if custom is None:
        return
    if not isinstance(custom, dict):
        raise MalformedReply("a tool call's `custom` is not an object")
    _check_keys(custom, _CUSTOM_KEYS, "a custom tool call")
    text = custom.get("input")
    if isinstance(text, str):
        if text:
            yield TextField(channel, custom, "input", text)
    elif text is not None:
        raise MalformedReply("a custom tool call's `input` is not a string")


def _reasoning_details(details: Any, choice_index: int) -> Iterator[TextField]:
    """OpenRouter's ``reasoning_details``: the ``text`` and ``summary`` of its items, in order,
    as one text per choice. ``data`` (``reasoning.encrypted``) is opaque and not read."""
    if not isinstance(details, list):
        raise MalformedReply("`reasoning_details` is not a list")
    channel = (choice_index, "reasoning_details")
    for detail in details:
        if not isinstance(detail, dict):
            raise MalformedReply("a `reasoning_details` item is not an object")
        for key in ("text", "summary"):
            value = detail.get(key)
            if isinstance(value, str):
                if value:
                    yield TextField(channel, detail, key, value)
            elif value is not None:
                raise MalformedReply(f"a `reasoning_details` item's `{key}` is not a string")


def _transcript(audio: Any, choice_index: int) -> Iterator[TextField]:
    if not isinstance(audio, dict):
        raise MalformedReply("`audio` is not an object")
    transcript = audio.get("transcript")
    if isinstance(transcript, str):
        if transcript:
            yield TextField((choice_index, "audio"), audio, "transcript", transcript)
    elif transcript is not None:
        raise MalformedReply("an audio `transcript` is not a string")


# A content part's text continues the choice's content, its refusal the choice's refusal: a
# client (and the Responses translation) joins the parts, so a phrase split over two parts must
# be one text to the shields.
_PART_CHANNELS = {"text": "content", "refusal": "refusal"}


def _content_parts(parts: list[Any], choice_index: int) -> Iterator[TextField]:
    for part in parts:
        if not isinstance(part, dict):
            raise MalformedReply("a content part is not an object")
        # Only the parts read here may pass: an image's URL, an audio clip or a file, or a
        # key of its own on a text part, would reach the client unchecked.
        kind = part.get("type")
        if type(kind) is not str or kind not in _PART_TYPES:
            raise MalformedReply("a content part's `type` is not one the proxy reads")
        if not _PART_KEYS.issuperset(part):
            raise MalformedReply("a content part has a key the proxy does not read")
        for key, channel in _PART_CHANNELS.items():
            value = part.get(key)
            if isinstance(value, str) and value:
                yield TextField((choice_index, channel), part, key, value)
            elif value is not None and not isinstance(value, str):
                raise MalformedReply(f"a content part's `{key}` is not a string")


def _arguments(function: Any, channel: tuple[Any, ...]) -> Iterator[TextField]:
    if function is None:
        return
    if not isinstance(function, dict):
        raise MalformedReply("a tool call's `function` is not an object")
    _check_keys(function, _FUNCTION_KEYS, "a tool call's function")
    arguments = function.get("arguments")
    if arguments is None:
        return
    if isinstance(arguments, str):
        if arguments:
            yield TextField(channel, function, "arguments", arguments)
    elif isinstance(arguments, dict):
        # Some servers (Ollama, some vLLM parsers) send arguments as a JSON object.
        yield TextField(
            channel, function, "arguments", serialize_arguments(arguments), json_object=True
        )
    else:
        raise MalformedReply("a tool call's `arguments` is neither a string nor an object")


def _name(holder: Any, channel: tuple[Any, ...]) -> Iterator[TextField]:
    """A tool call's ``name`` (in a ``function`` or ``custom`` object whose shape the
    arguments' or input's reader has accepted)."""
    if type(holder) is not dict:
        return
    name = holder.get("name")
    if isinstance(name, str):
        if name:
            yield TextField(channel, holder, "name", name)
    elif name is not None:
        raise MalformedReply("a tool call's `name` is not a string")
