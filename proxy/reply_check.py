"""The output stage for a whole (non-stream) chat completion.

Each choice's content, reasoning, refusal, tool-call arguments and tool-call names is checked
on its own text before any byte of the reply is sent; redactions are written back into the
JSON (a redaction in a tool call's name blocks instead: a renamed call is no tool the client
has). A choice whose text a redaction changed also loses what repeats its text outside the
text fields (``withhold_side_channels``): its ``logprobs``, and its ``audio.data`` when the
transcript was redacted.

An upstream error body (``check_error_body``) is upstream text in every string it holds: the
message, ``type``, ``code`` and ``param``, whatever a router nests (``metadata.raw``), sibling
keys and the keys themselves. All of them go through the output shields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from proxy import json_codec
from proxy.errors import error_body
from proxy.openai_texts import (
    NAME_CHANNELS,
    MalformedReply,
    TextField,
    check_choice_index,
    choice_message,
    joined_text,
    reply_fields,
)
from shields.base import Action, Finding, Shield, Stage
from shields.json_escapes import check_json_text
from shields.policy import CompiledPolicy
from shields.scan import check_text, merge_redactions, redact

__all__ = [
    "ReplyCheck",
    "check_error_body",
    "check_reply",
    "is_name",
    "name_shields",
    "reported_error",
    "withhold_side_channels",
]

_WITHHELD = "The upstream's error message was withheld by the output policy"
# Any other string of an error body that a blocking shield flagged.
_WITHHELD_VALUE = "[withheld by the output policy]"


@dataclass(slots=True)
class ReplyCheck:
    findings: list[Finding]
    blocked: bool
    redacted: bool


# Channels whose text is JSON (a tool call's arguments): the shields read what its escapes
# stand for, since that is what the application acts on ("\\u0062omb" is "bomb").
JSON_TEXT_CHANNELS = frozenset({"tool_calls", "function_call"})


def is_json_text(channel: tuple[Any, ...]) -> bool:
    return len(channel) > 1 and channel[1] in JSON_TEXT_CHANNELS


def is_name(channel: tuple[Any, ...]) -> bool:
    """A tool call's name: checked like other text, but never rewritten (a redaction in it
    blocks, since a renamed call is no tool the client has)."""
    return len(channel) > 1 and channel[1] in NAME_CHANNELS


# Shield types that do not read names: ``length`` limits the size of an answer's texts, and a
# name is an identifier the client's own tools bound (OpenAI allows 64 characters).
_NOT_FOR_NAMES = frozenset({"length"})


def name_shields(shields: Sequence[Shield]) -> list[Shield]:
    """The shields that check tool-call names."""
    return [shield for shield in shields if shield.type_name not in _NOT_FOR_NAMES]


def check_reply(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    *,
    n: int | None = None,
    tools: frozenset[str] | None = None,
    fingerprint: Callable[[str], str] | None = None,
) -> ReplyCheck:
    """Raises MalformedReply when the completion cannot be read, or reports an error (the
    caller answers those with ``reported_error`` first: they are not completions).

    ``n``: the choices the request asked for; a choice's ``index`` must be below it.
    ``tools``: the tool names the request declared (None: it declared none); a call to any
    other name is a reply the client cannot act on safely (MalformedReply)."""
    shields = policy.shields(Stage.OUTPUT)
    findings: list[Finding] = []
    blocked = redacted = False
    if not shields and not policy.output_remote:
        return ReplyCheck(findings, blocked, redacted)
    if completion.get("error") is not None:
        raise MalformedReply("the reply reports an error")
    choices = completion.get("choices")
    if choices is None:
        return ReplyCheck(findings, blocked, redacted)
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    fail_closed = policy.spec.on_error == "block"
    enforcing = policy.enforcing
    asked = len(choices) if n is None else n
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise MalformedReply("a choice is not an object")
        check_choice_index(choice, asked)
        # Read even without local shields: the shape check guards the remote shields' reading.
        message = choice_message(choice, stream=False)
        if not shields and tools is None:
            continue
        # The fields of one channel (content parts, reasoning_details items) are one text, as
        # in a stream and as a client joins them.
        channels: dict[tuple[Any, ...], list[TextField]] = {}
        for text_field in reply_fields(message, position, stream=False):
            if tools is not None and is_name(text_field.channel) and text_field.text not in tools:
                raise MalformedReply("the upstream called a tool the request did not declare")
            channels.setdefault(text_field.channel, []).append(text_field)
        if not shields:
            continue
        for channel, fields in channels.items():
            checking = name_shields(shields) if is_name(channel) else shields
            channel_findings, offsets = _check_channel(
                checking, channel, fields, fail_closed, fingerprint
            )
            if not channel_findings:  # the usual case: nothing to enforce
                continue
            findings += channel_findings
            if not enforcing:
                continue
            enforced = [f for f in channel_findings if not f.monitor]
            if any(f.action is Action.BLOCK for f in enforced):
                blocked = True
            spans = merge_redactions(enforced)
            if spans and is_name(channel):
                blocked = True  # a redacted name is a tool the client does not have
            if spans and not blocked:
                redacted = True
                for offset, text_field in zip(offsets, fields, strict=True):
                    text_field.write(redact(text_field.text, offset, spans))
                withhold_side_channels(choice, message, audio=channel[1] == "audio")
    return ReplyCheck(findings, blocked, redacted)


def _check_channel(
    shields: Sequence[Shield],
    channel: tuple[Any, ...],
    fields: list[TextField],
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> tuple[list[Finding], list[int]]:
    """The findings in a channel's fields joined, and where each field starts."""
    check = check_json_text if is_json_text(channel) else check_text
    text, offsets = joined_text(fields)
    return check(shields, text, fail_closed=fail_closed, fingerprint=fingerprint), offsets


def withhold_side_channels(choice: dict[str, Any], message: Any, *, audio: bool) -> bool:
    """Drops what repeats a redacted choice's text outside its text fields; True if it did.

    ``choice`` is a reply's choice or a stream event's, ``message`` its ``message`` or
    ``delta``. Its ``logprobs`` carry the reply's tokens (``content[].token``, ``.bytes``,
    ``top_logprobs``, ``refusal[...]``): they become null. With ``audio`` (its transcript was
    redacted), ``audio.data``, which speaks the transcript, becomes empty.
    """
    changed = False
    if choice.get("logprobs") is not None:
        choice["logprobs"] = None
        changed = True
    if audio and type(message) is dict:
        sound = message.get("audio")
        if type(sound) is dict and sound.get("data") not in (None, ""):
            sound["data"] = ""
            changed = True
    return changed


def reported_error(policy: CompiledPolicy, completion: dict[str, Any], status: int) -> bytes | None:
    """A successful (2xx) reply that reports an ``error``: the body to answer with, else None.

    Such a reply is an error, not a completion: only its ``error`` is kept (checked as
    ``check_error_body`` checks an error reply's), never the fields beside it, which no
    shield has read.
    """
    error = completion.get("error")
    if error is None:
        return None
    body = json_codec.dumps({"error": error})
    checked = check_error_body(policy, body, status)
    return body if checked is None else checked


def check_error_body(policy: CompiledPolicy, body: bytes, status: int) -> bytes | None:
    """An upstream error reply, checked: ``None`` to relay it as it is, else the body to send.

    Error bodies are upstream text too (a server may echo the prompt or a partial answer in
    them, a router the provider's raw reply in ``metadata.raw``), and SDKs show the whole body
    in an exception's text. Every string in it — values at any depth and keys — is checked, as
    one text (joined by newlines: a phrase split over two neighbouring values is found too,
    and a body costs one scan however many strings it holds). An OpenAI-shaped error the
    output shields pass is relayed byte for byte; a string they would block is replaced by a
    withheld notice, a redaction is made in place, and the body is written anew. A body that
    is not OpenAI-shaped, holds a key twice, or has a flagged key cannot be relayed field by
    field and is replaced by a generic error of the same status.
    """
    shields = policy.shields(Stage.OUTPUT)
    if not shields or not policy.enforcing:
        return None
    generic = json_codec.dumps(
        error_body(
            f"The upstream returned an error (HTTP {status})", type="upstream_error", code=None
        )
    )
    try:
        # A repeated key would be read one way here and maybe another by the client.
        parsed = json_codec.loads(body, unique_keys=True)
    except json_codec.InvalidJSON:
        return generic
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str | None):
        return generic
    strings = _strings(parsed)
    offsets = []
    start = 0
    for string in strings:
        offsets.append(start)
        start += len(string.text) + 1
    text = "\n".join([string.text for string in strings])
    found = check_text(shields, text, fail_closed=policy.spec.on_error == "block")
    enforced = [finding for finding in found if not finding.monitor]
    if not enforced:
        return None
    blocked = _touched(
        [(f.start, max(f.end, f.start + 1)) for f in enforced if f.action is Action.BLOCK],
        offsets,
        strings,
    )
    redactions = merge_redactions(enforced)
    redacted = _touched([(span.start, span.end) for span in redactions], offsets, strings)
    for offset, string, block, change in zip(offsets, strings, blocked, redacted, strict=True):
        if not block and not change:
            continue
        if string.key_of is not None:
            return generic  # a key: rewriting it could clash with another, so nothing goes
        if not block:
            string.write(redact(string.text, offset, redactions))
        elif string.holder is error and string.key == "message":
            string.write(_WITHHELD)
        else:
            string.write(_WITHHELD_VALUE)
    return json_codec.dumps(parsed)


@dataclass(slots=True)
class _BodyString:
    """A string of an error body: a value (``holder[key]``) or a key (``key_of``'s)."""

    holder: dict[str, Any] | list[Any]
    key: Any  # a str in an object, an int in a list
    text: str
    key_of: dict[str, Any] | None = None

    def write(self, text: str) -> None:
        self.holder[self.key] = text


def _strings(body: dict[str, Any]) -> list[_BodyString]:
    """Every string of a parsed JSON body: the values in document order (so that a phrase
    split over two neighbouring values is one text), then the keys. Without recursion
    (``json_codec`` bounds the depth, not the breadth)."""
    values: list[_BodyString] = []
    keys: list[_BodyString] = []
    stack: list[Iterator[tuple[Any, Any]]] = [iter(body.items())]
    holders: list[dict[str, Any] | list[Any]] = [body]
    while stack:
        holder = holders[-1]
        for key, value in stack[-1]:
            if isinstance(key, str):
                assert isinstance(holder, dict)
                keys.append(_BodyString(holder, key, key, key_of=holder))
            if isinstance(value, str):
                values.append(_BodyString(holder, key, value))
            elif isinstance(value, dict):
                stack.append(iter(value.items()))
                holders.append(value)
                break
            elif isinstance(value, list):
                stack.append(iter(enumerate(value)))
                holders.append(value)
                break
        else:
            stack.pop()
            holders.pop()
    return values + keys


def _touched(
    spans: list[tuple[int, int]], offsets: list[int], strings: Sequence[_BodyString]
) -> list[bool]:
    """For each string (at its offset in the joined text), whether any span overlaps it: one
    pass over both, in order, however many of each a hostile body has."""
    spans.sort()
    touched = []
    at = 0
    furthest = -1  # the end of the spans passed that reach furthest
    for offset, string in zip(offsets, strings, strict=True):
        end = offset + len(string.text)
        while at < len(spans) and spans[at][0] < end:
            furthest = max(furthest, spans[at][1])
            at += 1
        # The spans starting before the string's end; one that still reaches into it touches it.
        touched.append(furthest > offset)
    return touched
