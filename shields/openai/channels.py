"""The channels of a reply: which text a piece of a reply continues, as typed keys.

A reply's texts are read per choice and per field, and a tool call's per call, so that text
split across stream deltas (or across content parts) is checked joined. A channel is a
``FieldChannel(choice, field)`` for a choice's ``content``, ``refusal``, reasoning fields,
``audio`` (its transcript), ``reasoning_details`` and the legacy ``function_call`` (its
arguments), or a ``CallChannel(choice, field, call)`` for a tool call's ``tool_calls`` (its
function's arguments) and ``custom_tool_calls`` (a custom call's input). A whole reply also has
its calls' names on channels of their own (``NAME_CHANNELS``).

The keys are named tuples: they hash and compare as the plain tuples ``(choice, field)`` and
``(choice, field, call)``, at a tuple's cost. In a request, text fields carry the same keys with
the message's index in place of the choice (the request's own fields, such as ``tools``, are
numbered -1, -2, ...): nothing keys on them there, they say where a field came from.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "CALL_CHANNELS",
    "JSON_TEXT_CHANNELS",
    "NAME_CHANNELS",
    "CallChannel",
    "Channel",
    "FieldChannel",
    "call_key",
    "channel_path",
    "is_json_text",
    "is_name",
]


class FieldChannel(NamedTuple):
    """A text field of one choice (or, in a request, of one message)."""

    choice: int
    field: str


class CallChannel(NamedTuple):
    """A text of one tool call of a choice: ``call`` is the call's index (in a whole reply,
    its position in ``tool_calls``)."""

    choice: int
    field: str
    call: int


Channel = FieldChannel | CallChannel

# The fields of the channels that hold a tool call's name (whole replies only).
NAME_CHANNELS = frozenset({"tool_name", "custom_tool_name", "function_call_name"})
# Channels whose text is JSON (a tool call's arguments): the shields read what its escapes
# stand for, since that is what the application acts on ("\\u0062omb" is "bomb"). Free text
# must never be on a channel of these names.
JSON_TEXT_CHANNELS = frozenset({"tool_calls", "function_call"})
# The channels of a streamed call's text, and the call each belongs to (``call_key``).
CALL_CHANNELS = frozenset({"tool_calls", "custom_tool_calls", "function_call"})


def is_json_text(channel: Channel) -> bool:
    return channel.field in JSON_TEXT_CHANNELS


def is_name(channel: Channel) -> bool:
    """A tool call's name: checked like other text, but never rewritten (a redaction in it
    blocks, since a renamed call is no tool the client has)."""
    return channel.field in NAME_CHANNELS


def call_key(channel: Channel) -> CallChannel:
    """The streamed call a text channel (one in ``CALL_CHANNELS``) belongs to: a function
    call and a custom one at one index are one call; the legacy ``function_call`` is call 0 of
    its own kind."""
    if type(channel) is CallChannel:
        return CallChannel(channel.choice, "tool_calls", channel.call)
    return CallChannel(channel.choice, "function_call", 0)


# Where each channel's text sits in its choice's message (``channel_path``).
_FIELD_PATHS = {
    "audio": "audio.transcript",
    "function_call": "function_call.arguments",
    "function_call_name": "function_call.name",
}
_CALL_PATHS = {
    "tool_calls": "function.arguments",
    "custom_tool_calls": "custom.input",
    "tool_name": "function.name",
    "custom_tool_name": "custom.name",
    "tool_call_id": "id",
}


def channel_path(channel: Channel) -> str:
    """Where the channel's text sits in its message, as a path (``content``,
    ``tool_calls[0].function.arguments``): for people reading a finding's location."""
    if type(channel) is CallChannel:
        return f"tool_calls[{channel.call}].{_CALL_PATHS.get(channel.field, channel.field)}"
    return _FIELD_PATHS.get(channel.field, channel.field)
