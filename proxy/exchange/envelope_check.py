"""A whole reply's envelope through the output shields: the strings around its answer.

The output stage reads a reply's answer — content, reasoning, refusals, tool calls, transcripts
— and fails a reply that hides text in keys it does not know inside a message. Around the
answer sit strings a client also receives and shows or logs: the reply's ``id``, ``object``,
``model``, ``system_fingerprint``, ``service_tier``, a choice's ``finish_reason`` (any string,
vLLM's ``stop_reason``), ``usage`` and whatever keys an upstream adds at the top or to a choice,
a message's ``role`` and ``annotations`` (citations: a URL and a title), a tool call's ``id``
and ``type``, an audio answer's ``id`` — and every key's name. An honest server puts no answer
text there; a hostile one can put anything. They are read as one text, joined by newlines, and
an enforced finding in them fails the reply (a 502: an envelope has no text to redact, and
half an envelope is no reply). What the answer's readers already read, and ``logprobs``, are
left out.

Most of an envelope repeats from reply to reply (``chat.completion``, the model's name,
``stop``, the usage keys), so the strings a policy passed are remembered
(``proxy.exchange.passed_texts``) and only the new ones, usually the reply's ``id``, are
scanned.
"""

from __future__ import annotations

from typing import Any

from proxy.exchange.passed_texts import passed_texts
from shields.base import Finding, Shield, Stage
from shields.openai.reply_check import name_shields
from shields.policy import CompiledPolicy
from shields.scan import check_text

__all__ = ["envelope_findings", "envelope_strings", "outside_answer_shields"]

# A choice's keys whose strings the output stage reads, or that repeat them: ``logprobs`` hold
# the answer's tokens and their alternatives (withheld once a redaction touched the choice).
# Read here token by token they would fail a reply for the very phrase its text check blocks
# or redacts, before that check could decide it; a hostile upstream's text in them is a known
# gap (README, "Not answered").
_ANSWER_KEYS = frozenset({"message", "delta", "text", "logprobs"})


def envelope_strings(reply: dict[str, Any]) -> list[str]:
    """Every string of ``reply`` outside its answer: values at any depth and key names."""
    strings: list[str] = []
    for key, value in reply.items():
        strings.append(key)
        if key == "choices" and isinstance(value, list):
            for choice in value:
                if isinstance(choice, dict):
                    _choice_strings(choice, strings)
        else:
            _all_strings(value, strings)
    return strings


def _choice_strings(choice: dict[str, Any], strings: list[str]) -> None:
    for key, value in choice.items():
        strings.append(key)
        if key in ("message", "delta") and isinstance(value, dict):
            _message_strings(value, strings)
        elif key not in _ANSWER_KEYS:
            _all_strings(value, strings)


def _message_strings(message: dict[str, Any], strings: list[str]) -> None:
    """What of a message (or a stream's delta) no reader reads (any other key holding text
    fails the reply): its keys' names (a key holding no text passes), ``role``,
    ``annotations``, a tool call's ``id``, ``type`` and keys, an audio answer's ``id`` and
    keys."""
    strings.extend(message)
    for key in ("role", "annotations"):
        if key in message:
            _all_strings(message[key], strings)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                strings.extend(call)
                _all_strings([call.get("id"), call.get("type")], strings)
    audio = message.get("audio")
    if isinstance(audio, dict):
        strings.extend(audio)
        _all_strings(audio.get("id"), strings)


def _all_strings(value: Any, strings: list[str]) -> None:
    """The strings of a parsed JSON value, keys included; without recursion (the parser bounds
    the depth, not the breadth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            strings.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def outside_answer_shields(policy: CompiledPolicy) -> list[Shield]:
    """The output shields that read text outside an answer (an envelope, headers, a model
    list): all but ``length``, which limits the size of an answer's texts, not of the text
    around them."""
    return name_shields(policy.shields(Stage.OUTPUT))


def envelope_findings(policy: CompiledPolicy, reply: dict[str, Any]) -> list[Finding]:
    """The output findings in ``reply``'s envelope (strings a policy passed before are not
    scanned again)."""
    shields = outside_answer_shields(policy)
    if not shields:
        return []
    passed = passed_texts(policy)
    new = [text for text in dict.fromkeys(envelope_strings(reply)) if text and text not in passed]
    if not new:
        return []
    found = check_text(shields, "\n".join(new), fail_closed=policy.enforcement.fail_closed)
    if not found:
        passed.remember(new)
    return found
