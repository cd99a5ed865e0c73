"""Where the text a shield must see sits in a chat-completions reply, and how to rewrite it.

The same walk serves the non-stream reply (``message``) and the stream (``delta``), so a field
the proxy checks is also a field it can redact — and a field it does not know how to read is an
error, never silently skipped. (The request, ``messages``, is read by ``request`` into the same
:class:`TextField`.)

What is read, each on a channel of its own per choice (``channels``), so that text split across
stream deltas is checked joined:

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
  ``function_call.name`` (``channels.NAME_CHANNELS``). A client dispatches on them and an agent
  framework shows them to its model again, so they are output text too. In a whole reply they
  are read here, each on a channel of its own; in a stream a name must come whole in one
  delta, and the guard checks it as it arrives (``stream_indices.StreamIndices.names``).

Any of these in a shape other than the documented one raises :class:`MalformedReply`. So does
text where no reader looks, which a client may still show or act on: a content part other
than a text or refusal part with only the keys read; a key that Go clients take for a known
one (``json_codec.go_fold``) in a choice, message/delta, tool call or function object; and an
unknown key holding a string in a message/delta, tool call or function object.

Indices. In a stream, a choice or tool-call index must be one every client maps onto the same
channel (``stream_indices``). A whole reply is read by position (by clients and by the
Responses translation alike); an ``index`` there must still be a possible one: an integer from
0 up to the choices asked for or the calls in the list.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shields.json_codec import go_fold
from shields.openai.channels import CallChannel, Channel, FieldChannel
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField, serialize_arguments
from shields.openai.stream_indices import StreamIndices

__all__ = [
    "READERS",
    "TEXT_KEYS",
    "check_choice_index",
    "check_choice_keys",
    "check_message_key",
    "choice_message",
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
                    yield TextField(FieldChannel(choice_index, key), message, key, value)
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
            yield from _arguments(value, FieldChannel(choice_index, "function_call"))
            if not stream:
                yield from _name(value, FieldChannel(choice_index, "function_call_name"))


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
        yield from _arguments(call.get("function"), CallChannel(choice_index, "tool_calls", index))
        # Free text, not JSON: its own channel, never "tool_calls" (read as JSON text).
        custom = call.get("custom")
        yield from _custom_input(custom, CallChannel(choice_index, "custom_tool_calls", index))
        if not stream:  # a stream's names are the guard's (``StreamIndices.names``)
            function = call.get("function")
            yield from _name(function, CallChannel(choice_index, "tool_name", index))
            yield from _name(custom, CallChannel(choice_index, "custom_tool_name", index))


def _custom_input(custom: Any, channel: Channel) -> Iterator[TextField]:
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
    channel = FieldChannel(choice_index, "reasoning_details")
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
            yield TextField(FieldChannel(choice_index, "audio"), audio, "transcript", transcript)
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
                yield TextField(FieldChannel(choice_index, channel), part, key, value)
            elif value is not None and not isinstance(value, str):
                raise MalformedReply(f"a content part's `{key}` is not a string")


def _arguments(function: Any, channel: Channel) -> Iterator[TextField]:
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


def _name(holder: Any, channel: Channel) -> Iterator[TextField]:
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
