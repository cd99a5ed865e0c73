"""Where the text a shield must see sits in OpenAI chat-completions JSON, and how to rewrite it.

The same walk serves the non-stream reply (``message``), the stream (``delta``) and the
request (``messages``), so a field the proxy checks is also a field it can redact — and a field
it does not know how to read is an error, never silently skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "READERS",
    "TEXT_KEYS",
    "MalformedReply",
    "TextField",
    "choice_message",
    "reply_fields",
]

# Keys of a message/delta whose value is text the model produced.
TEXT_KEYS = frozenset({"content", "reasoning_content", "reasoning", "refusal"})
# Every key whose value may hold text: TEXT_KEYS plus the tool-call shapes and audio (whose
# ``transcript`` is the spoken reply as text).
READERS = TEXT_KEYS | {"tool_calls", "function_call", "audio"}
# Keys of a choice that carry text in another shape than the one read: a non-stream choice's
# ``delta`` and a stream choice's ``message`` (the other mode's holder), and ``text`` (the
# legacy completions field). Clients may read them, so they are refused, never skipped.
_MISPLACED = {False: ("delta", "text"), True: ("message", "text")}


class MalformedReply(ValueError):
    """The upstream sent a shape the proxy cannot check: fail closed."""


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


def serialize_arguments(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def choice_message(choice: dict[str, Any], *, stream: bool) -> Any:
    """A choice's ``message`` (non-stream) or ``delta`` (stream), for ``reply_fields``.

    Raises MalformedReply when the choice also carries text under a key that the other mode
    uses: the proxy reads one holder per choice, and a client may read the other.
    """
    for key in _MISPLACED[stream]:
        value = choice.get(key)
        if value is not None and value != "" and value != {}:
            raise MalformedReply(f"a {'stream' if stream else 'reply'} choice has a `{key}`")
    return choice.get("delta" if stream else "message")


def reply_fields(message: Any, choice_index: int, *, stream: bool) -> Iterator[TextField]:
    """The text fields of one choice's ``message`` (non-stream) or ``delta`` (stream)."""
    if message is None:
        return
    if not isinstance(message, dict):
        raise MalformedReply("a choice's message/delta is not an object")
    # Walk the keys the message has (usually one or two in a stream delta) rather than every
    # key the proxy knows: this runs once per streamed event.
    for key, value in message.items():
        if value is None or key not in READERS:
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
            yield from _tool_calls(value, choice_index, stream)
        elif key == "audio":
            yield from _transcript(value, choice_index)
        else:  # function_call
            yield from _arguments(value, (choice_index, "function_call"))


def _tool_calls(tool_calls: Any, choice_index: int, stream: bool) -> Iterator[TextField]:
    if not isinstance(tool_calls, list):
        raise MalformedReply("`tool_calls` is not a list")
    for position, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise MalformedReply("a tool call is not an object")
        if stream:
            # A streamed call continues across deltas by its index (OpenAI, vLLM, llama.cpp
            # and Ollama always send it): without one, which call a piece continues is a
            # guess, and text split across a wrong guess would be checked in halves.
            index = call.get("index")
            if type(index) is not int:
                raise MalformedReply("a streamed tool call has no integer `index`")
        else:
            index = position
        yield from _arguments(call.get("function"), (choice_index, "tool_calls", index))


def _transcript(audio: Any, choice_index: int) -> Iterator[TextField]:
    if not isinstance(audio, dict):
        raise MalformedReply("`audio` is not an object")
    transcript = audio.get("transcript")
    if isinstance(transcript, str):
        if transcript:
            yield TextField((choice_index, "audio"), audio, "transcript", transcript)
    elif transcript is not None:
        raise MalformedReply("an audio `transcript` is not a string")


def _content_parts(parts: list[Any], choice_index: int) -> Iterator[TextField]:
    for position, part in enumerate(parts):
        if not isinstance(part, dict):
            raise MalformedReply("a content part is not an object")
        for key in ("text", "refusal"):
            value = part.get(key)
            if isinstance(value, str) and value:
                yield TextField((choice_index, "content", position, key), part, key, value)
            elif value is not None and not isinstance(value, str):
                raise MalformedReply(f"a content part's `{key}` is not a string")


def _arguments(function: Any, channel: tuple[Any, ...]) -> Iterator[TextField]:
    if function is None:
        return
    if not isinstance(function, dict):
        raise MalformedReply("a tool call's `function` is not an object")
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
