"""Upstream error bodies through the output shields; and the output stage for a whole
(non-stream) chat completion, which is the library's (``shields.openai.reply_check``).

An upstream error body (``check_error_body``) is upstream text in every string it holds: the
message, ``type``, ``code`` and ``param``, whatever a router nests (``metadata.raw``), sibling
keys and the keys themselves. All of them go through the output shields.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from proxy.errors import error_body
from shields import json_codec
from shields.base import Action, Finding, Stage
from shields.openai.channels import JSON_TEXT_CHANNELS, is_json_text, is_name
from shields.openai.reply_check import check_reply, name_shields, withhold_side_channels
from shields.policy import CompiledPolicy
from shields.scan import check_text, redact

__all__ = [
    "JSON_TEXT_CHANNELS",
    "check_error_body",
    "check_reply",
    "is_json_text",
    "is_name",
    "model_list_findings",
    "name_shields",
    "reported_error",
    "withhold_side_channels",
]

_WITHHELD = "The upstream's error message was withheld by the output policy"
# Any other string of an error body that a blocking shield flagged.
_WITHHELD_VALUE = "[withheld by the output policy]"


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
    rule = policy.enforcement
    if not shields or not rule.enforcing:
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
    found = check_text(shields, text, fail_closed=rule.fail_closed)
    enforced = rule.enforced(found)
    if not enforced:
        return None
    blocked = _touched(
        [(f.start, max(f.end, f.start + 1)) for f in enforced if f.action is Action.BLOCK],
        offsets,
        strings,
    )
    redactions = rule.redactions(enforced)
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


def model_list_findings(policy: CompiledPolicy, body: bytes) -> list[Finding]:
    """The enforced output findings in an upstream's model list (``GET /v1/models``).

    A list of ids is upstream text a client shows (a model picker, an SDK's exception): its
    strings (ids, owners, keys, whatever else a server adds) are read as one text, as an error
    body's are; a body that is not a JSON object is read as the text it is.
    """
    shields = policy.shields(Stage.OUTPUT)
    rule = policy.enforcement
    if not shields or not rule.enforcing:
        return []
    try:
        parsed = json_codec.loads(body, unique_keys=True)
    except json_codec.InvalidJSON:
        parsed = None
    if isinstance(parsed, dict):
        text = "\n".join([string.text for string in _strings(parsed)])
    else:
        text = body.decode("utf-8", "replace")
    return check_text(shields, text, fail_closed=rule.fail_closed)


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
