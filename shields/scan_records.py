"""What ``shieldgate scan`` reads from a line of JSON, and the result it writes for it.

A line is a JSON object, read by the proxy's decoder (``json_codec``: a key twice in one object,
NaN and nesting past ``MAX_DEPTH`` are refused), of one of three kinds:

- ``{"text": ...}``: one text; at the input stage a user's message, at the output stage the
  content of a reply (``shields.evaluate.evaluate``);
- ``{"messages": [...], ...}``: at the input stage the chat request it stands for — its other
  keys are the request's (``tools``, ``response_format``...), ``id`` aside — read by the
  proxy's reader and checked by the proxy's input stage: every text the proxy reads (content
  parts, names, tool calls' arguments and names, tool definitions...), with the proxy's
  findings, verdict and redactions. A record the proxy would refuse with a 400 is a bad line,
  with the proxy's message. At the output stage each message is read as the ``message`` of a
  reply's choice;
- ``{"choices": [...]}`` (output stage): a ``chat.completion``, read and checked as the proxy
  checks a whole reply.

Two leniencies, both about what logs of traffic look like: a media part whose payload the log
left out (``{"type": "image_url", "image_url": {}}``: no text, and no image to fetch) is read as
a part without text, where the proxy would ask for the payload; and the mistakes scan has
always named (a bad role, a content that is neither a string nor a list of parts, a part that
is not an object or whose ``text``/``refusal`` is not a string) keep their words.
"""

from __future__ import annotations

import enum
from typing import Any

from shields import json_codec
from shields.base import Finding, Role, Stage
from shields.decode import redecode
from shields.evaluate import Evaluation, TextResult, evaluate_reply, evaluate_request
from shields.openai.errors import MalformedReply, RequestShapeError
from shields.openai.request import read_chat_request
from shields.pipeline import BlockingRemote
from shields.policy import CompiledPolicy

__all__ = ["BadRecord", "RecordKind", "evaluate_record", "read_line", "record_kind", "scan_result"]

_ROLES = frozenset(role.value for role in Role)
# Content parts that carry media, not text: each by the key of its payload (its type).
_MEDIA_PARTS = frozenset({"image_url", "input_audio", "file"})


class BadRecord(ValueError):
    """A line that is not a record scan can read; the message says why."""


class RecordKind(enum.Enum):
    TEXT = "text"
    MESSAGES = "messages"
    REPLY = "choices"


def read_line(line: str | bytes) -> Any:
    """The JSON value of a line. ``InvalidJSON`` (a ValueError) when it is not JSON; a key
    twice in one object is a BadRecord."""
    data = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
    try:
        return json_codec.loads(data, unique_keys=True, allow_nan=False)
    except json_codec.DuplicateKey as exc:
        key = exc.key if len(exc.key) <= 64 else exc.key[:64] + "..."
        raise BadRecord(
            f"the line is ambiguous: the key {key!r} appears twice in one object, and parsers "
            "differ on which one counts"
        ) from None


def record_kind(record: Any, stage: Stage) -> RecordKind:
    if not isinstance(record, dict):
        raise BadRecord("each line must be a JSON object")
    if isinstance(record.get("text"), str):
        text: str = record["text"]
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRecord("the text is not valid Unicode (a lone surrogate escape)") from None
        return RecordKind.TEXT
    if isinstance(record.get("messages"), list):
        return RecordKind.MESSAGES
    if "choices" in record and "messages" not in record:
        if stage is Stage.INPUT:
            raise BadRecord('a "choices" record is a reply: scan it with --stage output')
        return RecordKind.REPLY
    raise BadRecord(
        'each line needs a "text" string, a "messages" list or (at the output stage) a '
        '"choices" list'
    )


def evaluate_record(
    policy: CompiledPolicy,
    stage: Stage,
    record: dict[str, Any],
    kind: RecordKind,
    *,
    remote: BlockingRemote | None = None,
) -> Evaluation:
    """A ``messages`` or ``choices`` record through the proxy's reader and stage (a ``text``
    record is the caller's: ``shields.evaluate.evaluate``). Redactions are written into the
    record. Raises BadRecord for a record the proxy would refuse."""
    try:
        if kind is RecordKind.REPLY:
            return evaluate_reply(policy, record, remote=remote)
        messages = record["messages"]
        _known_mistakes(messages)
        messages = [_without_elided_media(message) for message in messages]
        if stage is Stage.OUTPUT:
            choices = [{"index": i, "message": m} for i, m in enumerate(messages)]
            return evaluate_reply(policy, {"choices": choices}, remote=remote)
        body = {key: value for key, value in record.items() if key != "id"}
        body["messages"] = messages
        return evaluate_request(policy, read_chat_request(body), remote=remote)
    except RequestShapeError as exc:
        raise BadRecord(exc.message) from None
    except MalformedReply as exc:
        raise BadRecord(f"a reply that cannot be checked: {exc}") from None


def _known_mistakes(messages: list[Any]) -> None:
    """The mistakes scan has always named, in its words (the proxy names them otherwise)."""
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        # Only a string may be looked up: a list or an object as the role is unhashable.
        if not isinstance(role, str) or role not in _ROLES:
            raise BadRecord(f"messages[{i}] needs a valid role")
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise BadRecord(f"messages[{i}].content must be a string or a list of parts")
        for j, part in enumerate(content):
            where = f"messages[{i}].content[{j}]"
            if not isinstance(part, dict):
                raise BadRecord(f"{where} must be an object")
            for key in ("text", "refusal"):
                if (key in part or part.get("type") == key) and not isinstance(part.get(key), str):
                    raise BadRecord(f"{where}.{key} must be a string")


def _without_elided_media(message: dict[str, Any]) -> dict[str, Any]:
    """The message without the media parts whose payload a log left out (missing, null or
    ``{}``): they hold no text. A media part with anything else is the reader's to judge."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    kept = [part for part in content if not _elided(part)]
    return message if len(kept) == len(content) else {**message, "content": kept}


def _elided(part: dict[str, Any]) -> bool:
    kind = part.get("type")
    return (
        kind in _MEDIA_PARTS
        and part.get(kind) in (None, {})
        and set(part) <= {"type", kind, "cache_control"}
    )


def scan_result(
    record: dict[str, Any], kind: RecordKind, evaluation: Evaluation, explain: bool
) -> dict[str, Any]:
    """The result line of a record: its verdict, its findings and its texts as they would be
    forwarded (input) or sent (output)."""
    output: dict[str, Any] = {"id": record.get("id"), "verdict": evaluation.verdict.value}
    # Which text a finding is in: a ``messages`` record's message, a reply's choice.
    place = {RecordKind.MESSAGES: "message", RecordKind.REPLY: "choice"}.get(kind)
    findings = []
    for result in evaluation.texts:
        for finding in result.findings:
            item = _finding_json(finding, result.text, explain)
            if place is not None:
                if result.message is not None:
                    item[place] = result.message
                if result.where != "content":
                    item["text"] = result.where
            findings.append(item)
    findings += [_finding_json(f, "", explain) for f in evaluation.request_findings]
    output["findings"] = findings
    if kind is RecordKind.TEXT:
        output["text"] = evaluation.texts[0].redacted
    elif kind is RecordKind.REPLY:
        output["choices"] = record["choices"]  # redacted in place, as the proxy sends it
    else:
        output["messages"], others = _messages(record["messages"], evaluation.texts)
        if others:
            output["texts"] = others
    return output


def _messages(
    messages: list[dict[str, Any]], results: tuple[TextResult, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each message's role and own text (``content``: its content, parts joined by a line
    break, then its other text fields), as redacted; and the record's other texts (tool-call
    arguments and names, image URLs, tool definitions...), each with where it is."""
    own: dict[int, str] = {}
    others = []
    for result in results:
        if result.message is not None and result.where == "content":
            own[result.message] = result.redacted
            continue
        other: dict[str, Any] = {} if result.message is None else {"message": result.message}
        other["text"] = result.where
        other["content"] = result.redacted
        others.append(other)
    listed = [
        {"role": message["role"], "content": own.get(i, "")} for i, message in enumerate(messages)
    ]
    return listed, others


def _finding_json(finding: Finding, text: str, explain: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "shield": finding.shield_id,
        "type": finding.shield_type,
        "label": finding.label,
        "start": finding.start,
        "end": finding.end,
    }
    if explain:
        item["action"] = finding.action.value
        item["monitor"] = finding.monitor
        item["match"] = text[finding.start : finding.end]
        # A finding in decoded text spans the encoded run: show what the shield read.
        decoded = redecode(finding.label, item["match"])
        if decoded:
            item["decoded"] = decoded
    return item
