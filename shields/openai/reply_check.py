"""The output stage for a whole (non-stream) chat completion.

Each choice's content, reasoning, refusal, tool-call arguments and tool-call names is checked
on its own text (a channel: ``channels``) before any byte of the reply is sent; redactions are
written back into the JSON (a redaction in a tool call's name blocks instead: a renamed call is
no tool the client has). A choice whose text a redaction changed also loses what repeats its
text outside the text fields (``withhold_side_channels``): its ``logprobs``, and its
``audio.data`` when the transcript was redacted. The proxy runs this as its output stage for a
whole reply; ``shieldgate scan`` and ``shields.evaluate`` run the same function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shields.base import Finding, Shield, Stage
from shields.json_escapes import check_json_text
from shields.openai.channels import Channel, FieldChannel, is_json_text, is_name
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField, joined_text
from shields.openai.prefill import PREFILL_FIELD, reply_findings
from shields.openai.reply import check_choice_index, choice_message, reply_fields
from shields.policy import CompiledPolicy
from shields.scan import check_text, redact
from shields.verdict import StageOutcome

__all__ = [
    "ReplyCheck",
    "check_reply",
    "check_reply_texts",
    "name_shields",
    "withhold_side_channels",
]


# Shield types that do not read names: ``length`` limits the size of an answer's texts, and a
# name is an identifier the client's own tools bound (OpenAI allows 64 characters).
_NOT_FOR_NAMES = frozenset({"length"})


def name_shields(shields: Sequence[Shield]) -> list[Shield]:
    """The shields that check tool-call names."""
    return [shield for shield in shields if shield.type_name not in _NOT_FOR_NAMES]


@dataclass(slots=True)
class ReplyCheck:
    """The output stage over one whole reply, channel by channel: what ``check_reply`` sums
    up."""

    outcome: StageOutcome = field(default_factory=StageOutcome)
    # The findings of each channel that has any; a finding's offsets are in the channel's
    # fields joined (content parts, ``reasoning_details`` items).
    by_channel: dict[Channel, list[Finding]] = field(default_factory=dict)


def check_reply(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    *,
    n: int | None = None,
    tools: frozenset[str] | None = None,
    fingerprint: Callable[[str], str] | None = None,
    prefill: str = "",
) -> StageOutcome:
    """Raises MalformedReply when the completion cannot be read, or reports an error (the
    caller answers those with ``reported_error`` first: they are not completions).

    ``n``: the choices the request asked for; a choice's ``index`` must be below it.
    ``tools``: the tool names the request declared (None: it declared none); a call to any
    other name is a reply the client cannot act on safely (MalformedReply).
    ``prefill``: the assistant text the reply continues (``shields.openai.prefill``): each
    choice's content is read after it, and only what runs into the reply is the reply's."""
    return check_reply_texts(
        policy, completion, n=n, tools=tools, fingerprint=fingerprint, prefill=prefill
    ).outcome


def check_reply_texts(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    *,
    n: int | None = None,
    tools: frozenset[str] | None = None,
    fingerprint: Callable[[str], str] | None = None,
    prefill: str = "",
) -> ReplyCheck:
    """``check_reply``, with the findings of each channel (for ``shieldgate scan``); offsets
    in the reply's own text, a prefill's excluded."""
    check = ReplyCheck()
    outcome = check.outcome
    shields = policy.shields(Stage.OUTPUT)
    if not shields and not policy.output_remote:
        return check
    if completion.get("error") is not None:
        raise MalformedReply("the reply reports an error")
    choices = completion.get("choices")
    if choices is None:
        return check
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    rule = policy.enforcement
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
        channels: dict[Channel, list[TextField]] = {}
        for text_field in reply_fields(message, position, stream=False):
            if tools is not None and is_name(text_field.channel) and text_field.text not in tools:
                raise MalformedReply("the upstream called a tool the request did not declare")
            channels.setdefault(text_field.channel, []).append(text_field)
        if not shields:
            continue
        for channel, fields in channels.items():
            checking = name_shields(shields) if is_name(channel) else shields
            before = prefill if prefill and channel == FieldChannel(position, PREFILL_FIELD) else ""
            channel_findings, offsets = _check_channel(
                checking, channel, fields, rule.fail_closed, fingerprint, before
            )
            if not channel_findings:  # the usual case: nothing to enforce
                continue
            check.by_channel[channel] = channel_findings
            outcome.findings += channel_findings
            if rule.blocks(channel_findings):
                outcome.blocked = True
            spans = rule.redactions(channel_findings)
            if spans and is_name(channel):
                outcome.blocked = True  # a redacted name is a tool the client does not have
            if spans and not outcome.blocked:
                outcome.redacted = True
                for offset, text_field in zip(offsets, fields, strict=True):
                    text_field.write(redact(text_field.text, offset, spans))
                withhold_side_channels(choice, message, audio=channel.field == "audio")
    return check


def _check_channel(
    shields: Sequence[Shield],
    channel: Channel,
    fields: list[TextField],
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
    prefill: str = "",
) -> tuple[list[Finding], list[int]]:
    """The findings in a channel's fields joined, and where each field starts; with a
    ``prefill``, read before the fields and its findings mapped onto them (``reply_findings``)."""
    check = check_json_text if is_json_text(channel) else check_text
    text, offsets = joined_text(fields)
    if not prefill:
        return check(shields, text, fail_closed=fail_closed, fingerprint=fingerprint), offsets
    found = check(shields, prefill + text, fail_closed=fail_closed, fingerprint=fingerprint)
    return reply_findings(found, len(prefill)), offsets


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
