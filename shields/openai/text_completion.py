"""Where the text sits in a legacy completions reply (``text_completion``), whole and streamed.

``/v1/completions`` answers with choices whose ``text`` is what the model wrote (with ``echo``,
the prompt followed by it): one text per choice, read on the channel ``(choice, "text")``, in a
whole reply and across a stream's chunks alike. Its ``logprobs`` (``tokens``, ``top_logprobs``,
``text_offset``) repeat the tokens of that text: once a redaction changed a choice's text, they
are withheld (``reply_check.withhold_side_channels``), as for a chat choice.

A choice is read as hostile input, as a chat choice is (``reply``): its ``text`` is a string or
null; its ``index`` an integer (clients, and the guard's channels, key the choices of a stream
by it, and the SDK's model requires it); a key that a Go client would take for a choice key
(``json_codec.go_fold``) without being it, and a chat ``message`` or ``delta`` holding text (a
client may read the other dialect's holder), are refused (``MalformedReply``). Other keys
(vLLM's ``stop_reason``, ``prompt_logprobs``...) are not read, as a chat choice's are not: a
completions client reads ``text``.

``ReplyShape`` names which of the two reply dialects an upstream answers in, for the readers
that serve both (the stream guard, the exchange's whole-reply check).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import Any

from shields.base import Stage
from shields.json_codec import go_fold
from shields.openai.channels import FieldChannel
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField
from shields.openai.reply_check import withhold_side_channels
from shields.policy import CompiledPolicy
from shields.scan import check_text, redact
from shields.verdict import StageOutcome

__all__ = [
    "TEXT_FIELD",
    "ReplyShape",
    "check_text_completion",
    "text_choice_field",
    "text_completion_fields",
]


class ReplyShape(enum.Enum):
    """The reply dialect of an upstream endpoint: where a choice holds its text."""

    CHAT = "chat.completion"  # ``choices[].message`` / ``choices[].delta``
    TEXT = "text_completion"  # ``choices[].text`` (legacy completions)


# The channel field of a completion choice's text.
TEXT_FIELD = "text"
_CHOICE_KEYS = frozenset({"index", "text", "logprobs", "finish_reason"})
# The chat dialect's holders of a choice's text: a client may read them instead of ``text``.
_CHAT_HOLDERS = frozenset({"message", "delta"})
_FOLDED = frozenset(map(go_fold, _CHOICE_KEYS | _CHAT_HOLDERS))


def text_choice_field(choice: dict[str, Any], position: int | None = None) -> TextField | None:
    """The text of one choice of a completion or of a stream chunk (None when it has none),
    on the channel of its ``index`` (a stream's) or of its ``position`` (a whole reply's, as
    clients read one); MalformedReply for a choice that cannot be read.

    The choice's ``index`` is the caller's to check against what it may be (a position in a
    whole reply, the next choice in a stream); here it must be an integer."""
    for key, value in choice.items():
        if key in _CHOICE_KEYS:
            continue
        if key in _CHAT_HOLDERS:
            if value is not None and value != "" and value != {}:
                raise MalformedReply(f"a completion choice has a `{key}`")
        elif go_fold(key) in _FOLDED:
            raise MalformedReply(f"a choice has `{key}`, a case variant of a known key")
    index = choice.get("index")
    if type(index) is not int:
        raise MalformedReply("a completion choice has no integer `index`")
    text = choice.get(TEXT_FIELD)
    if type(text) is str:
        if text:
            channel = FieldChannel(index if position is None else position, TEXT_FIELD)
            return TextField(channel, choice, TEXT_FIELD, text)
        return None
    if text is not None:
        raise MalformedReply("a completion choice's `text` is not a string")
    return None


def _choices(completion: dict[str, Any]) -> list[Any] | None:
    if completion.get("error") is not None:
        raise MalformedReply("the reply reports an error")
    choices = completion.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    return choices


def text_completion_fields(
    completion: dict[str, Any], n: int | None = None
) -> Iterator[tuple[dict[str, Any], TextField | None]]:
    """Each choice of a whole completion with its text field (on the channel of its position,
    as clients read a whole reply); MalformedReply for a reply that cannot be read, or a
    choice whose ``index`` is not one of the ``n`` expected (default: as many as there are)."""
    choices = _choices(completion)
    if choices is None:
        return
    asked = len(choices) if n is None else n
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise MalformedReply("a choice is not an object")
        field = text_choice_field(choice, position)
        if not 0 <= choice["index"] < asked:
            raise MalformedReply(f"a choice's `index` is outside the {asked} expected")
        yield choice, field


def check_text_completion(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    *,
    n: int | None = None,
    fingerprint: Callable[[str], str] | None = None,
) -> StageOutcome:
    """The output stage over a whole ``text_completion``: each choice's text through the output
    shields; redactions written into it (and its ``logprobs`` withheld). Raises MalformedReply
    when the completion cannot be read or reports an error.

    The text is checked as the client gets it: with ``echo``, the echoed prompt included (the
    upstream's echo is its own text, not necessarily the prompt that was checked)."""
    outcome = StageOutcome()
    shields = policy.shields(Stage.OUTPUT)
    if not shields and not policy.output_remote:
        return outcome
    rule = policy.enforcement
    # Read whole first: a choice that cannot be read fails the reply whatever comes before it.
    read = list(text_completion_fields(completion, n))
    if not shields:
        return outcome
    for choice, field in read:
        if field is None:
            continue
        findings = check_text(
            shields, field.text, fail_closed=rule.fail_closed, fingerprint=fingerprint
        )
        if not findings:
            continue
        outcome.findings += findings
        if rule.blocks(findings):
            outcome.blocked = True
        spans = rule.redactions(findings)
        if spans and not outcome.blocked:
            outcome.redacted = True
            field.write(redact(field.text, 0, spans))
            withhold_side_channels(choice, None, audio=False)
    return outcome
