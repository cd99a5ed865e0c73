"""The output stage for a whole (non-stream) chat completion.

Each choice's content, reasoning, refusal and tool-call arguments is checked on its own text
before any byte of the reply is sent; redactions are written back into the JSON. A choice whose
text a redaction changed also loses what repeats its text outside the text fields
(``withhold_side_channels``): its ``logprobs``, and its ``audio.data`` when the transcript was
redacted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proxy import json_codec
from proxy.errors import error_body
from proxy.openai_texts import (
    MalformedReply,
    TextField,
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
    "reported_error",
    "withhold_side_channels",
]

_WITHHELD = "The upstream's error message was withheld by the output policy"


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


def check_reply(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    *,
    fingerprint: Callable[[str], str] | None = None,
) -> ReplyCheck:
    """Raises MalformedReply when the completion cannot be read, or reports an error (the
    caller answers those with ``reported_error`` first: they are not completions)."""
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
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise MalformedReply("a choice is not an object")
        # Read even without local shields: the shape check guards the remote shields' reading.
        message = choice_message(choice, stream=False)
        if not shields:
            continue
        # The fields of one channel (content parts, reasoning_details items) are one text, as
        # in a stream and as a client joins them.
        channels: dict[tuple[Any, ...], list[TextField]] = {}
        for text_field in reply_fields(message, position, stream=False):
            channels.setdefault(text_field.channel, []).append(text_field)
        for channel, fields in channels.items():
            channel_findings, offsets = _check_channel(
                shields, channel, fields, fail_closed, fingerprint
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

    Error messages are upstream text too (a server may echo the prompt or a partial answer in
    them). An OpenAI-shaped error whose message the output shields pass is relayed byte for
    byte; one they would block or redact gets a generic message of the same shape; a body that
    is not OpenAI-shaped cannot be checked and is replaced by a generic error.
    """
    shields = policy.shields(Stage.OUTPUT)
    if not shields or not policy.enforcing:
        return None
    try:
        parsed = json_codec.loads(body)
    except json_codec.InvalidJSON:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(error, dict) and (message is None or isinstance(message, str)):
        found = check_text(shields, message or "", fail_closed=policy.spec.on_error == "block")
        if not any(not f.monitor for f in found):
            return None
        error["message"] = _WITHHELD
        return json_codec.dumps(parsed)
    generic = error_body(
        f"The upstream returned an error (HTTP {status})", type="upstream_error", code=None
    )
    return json_codec.dumps(generic)
