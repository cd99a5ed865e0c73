"""Upstream error bodies through the output shields; and the output stage for a whole
(non-stream) chat completion, which is the library's (``shields.openai.reply_check``).

An upstream error body (``check_error_body``) is upstream text in every string it holds: the
message, ``type``, ``code`` and ``param``, whatever a router nests (``metadata.raw``), sibling
keys and the keys themselves. All of them go through the output shields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from proxy.errors import UpstreamError, error_body
from proxy.serving.off_loop import off_loop_if_large
from proxy.state import record_findings
from shields import json_codec
from shields.base import Action, Finding, Stage
from shields.openai.channels import JSON_TEXT_CHANNELS, is_json_text, is_name
from shields.openai.errors import MalformedReply
from shields.openai.reply_check import check_reply, name_shields, withhold_side_channels
from shields.policy import CompiledPolicy
from shields.scan import check_text, redact

__all__ = [
    "JSON_TEXT_CHANNELS",
    "check_error_body",
    "check_reply",
    "check_textless_reply",
    "is_json_text",
    "is_name",
    "name_shields",
    "reported_error",
    "textless_reply_findings",
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


def textless_reply_findings(
    policy: CompiledPolicy, body: bytes, *, vectors: bool = False
) -> list[Finding]:
    """The output findings in a reply that carries no answer text: a model list
    (``GET /v1/models``) or embeddings (``vectors``).

    Such a reply is still upstream text a client reads — model ids and owners in a picker, an
    embeddings reply's ``model``, whatever else a server adds. Every string literal of the body
    as sent (keys and values, a repeated key's every copy, whichever one the client's parser
    keeps) is read, decoded from its JSON escapes, as one text, as an error body's strings are.
    Only vectors are not text: with ``vectors``, a ``data[i].embedding`` string that is base64
    of whole 4-byte floats (what SDKs decode to numbers); any other string, an ``embedding`` key
    elsewhere included, is read. A body that is not one JSON
    object cannot be read as the client's SDK will read it (a byte-order mark, UTF-16, a bare
    list, plain text): MalformedReply (fail closed).
    """
    try:
        parsed = json_codec.loads(body)
    except json_codec.InvalidJSON as exc:
        raise MalformedReply(f"the reply is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise MalformedReply("the reply is not a JSON object")
    shields = name_shields(policy.shields(Stage.OUTPUT))  # no answer: ``length`` has none
    if not shields:
        return []
    texts: list[str] = []
    vector_texts = _vector_texts(parsed) if vectors else frozenset()
    after_vector_key = -1  # where the last ``"embedding"`` literal ended, if it was the last
    for match in _STRING_LITERAL.finditer(body):
        literal = match.group()
        between = match.start() - after_vector_key
        if (
            after_vector_key >= 0
            and between <= _NEAR
            and _is_colon(body, after_vector_key, between)
        ):
            after_vector_key = -1
            text = _literal_text(literal)
            if text in vector_texts:
                continue  # a vector's base64
            texts.append(text)
            continue
        after_vector_key = match.end() if vectors and literal == b'"embedding"' else -1
        texts.append(_literal_text(literal))
    return check_text(shields, "\n".join(texts), fail_closed=policy.enforcement.fail_closed)


async def check_textless_reply(
    request: web.Request,
    policy: CompiledPolicy,
    body: bytes,
    endpoint: str,
    *,
    vectors: bool = False,
) -> None:
    """``textless_reply_findings`` for a reply about to be relayed as it came: its findings
    recorded, and UpstreamError (a 502) when the reply cannot be read or an enforced finding
    is in it — such a reply has no text to redact and is not half relayed. A large body is
    read off the event loop."""
    try:
        findings = await off_loop_if_large(
            len(body), textless_reply_findings, policy, body, vectors=vectors
        )
    except MalformedReply as exc:
        raise UpstreamError(f"The upstream sent a reply that cannot be checked: {exc}") from None
    record_findings(request, Stage.OUTPUT, findings, endpoint)
    if policy.enforcement.enforced(findings):
        raise UpstreamError("The upstream's reply was withheld by the output policy")


# A JSON string literal in a valid JSON text: read from the start, quotes outside strings only
# ever open one. A pass in C over the body (~1 ms for 3 MB of embeddings).
_STRING_LITERAL = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NEAR = 16  # bytes between a key and its value's literal: ``:`` and whitespace


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _vector_texts(parsed: dict[str, Any]) -> frozenset[str]:
    """The ``data[i].embedding`` strings that are base64 of whole 4-byte floats."""
    data = parsed.get("data")
    if not isinstance(data, list):
        return frozenset()
    found = set()
    for item in data:
        vector = item.get("embedding") if isinstance(item, dict) else None
        if isinstance(vector, str) and _BASE64.fullmatch(vector) and _whole_floats(vector):
            found.add(vector)
    return frozenset(found)


def _whole_floats(encoded: str) -> bool:
    size = len(encoded) // 4 * 3 - encoded.count("=")
    return size % 4 == 0


def _is_colon(body: bytes, start: int, length: int) -> bool:
    return body[start : start + length].strip() == b":"


def _literal_text(literal: bytes) -> str:
    try:
        text = orjson.loads(literal)
    except orjson.JSONDecodeError:  # a lone surrogate escape, which only Python's parser keeps
        text = json.loads(literal)
    assert isinstance(text, str)
    return text


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
