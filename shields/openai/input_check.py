"""The input stage over a chat request: every text of it through the input shields.

Each text of the request (``request.MessageText``: a message's own text fields, its image URLs,
a tool call's arguments, the calls' names, a tool definition...) is scanned as one text, its
fields joined by ``PART_SEPARATOR``; a run of content parts is also scanned joined without a
separator, for what crosses a part's end. Redactions are written back into the request's body;
request-wide checks (``Shield.check_request``) see each message's whole text
(``conversation_of``). The proxy runs this as its input stage; ``shieldgate scan`` and
``shields.evaluate`` run the same function.

Given an ``InputCache`` (the proxy keeps one), a text whose outcome it remembers is not scanned
again: its remembered findings are enforced as a fresh scan's, so a conversation resent with
every turn costs the scan of its new turns only (``shields.openai.input_cache``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from shields.base import Action, Finding, Role, Shield, Stage
from shields.json_escapes import JsonEscapedScan
from shields.openai.fields import TextField, joined_text
from shields.openai.input_cache import InputCache, Remembered
from shields.openai.request import PART_SEPARATOR, ChatRequest, MessageText
from shields.policy import CompiledPolicy
from shields.scan import TextScan, check_request, merge_redactions, redact, scan_whole
from shields.verdict import StageOutcome

__all__ = [
    "SCAN_COST_CHARS",
    "InputCheck",
    "PendingCheck",
    "begin_input_check",
    "check_input",
    "check_input_texts",
    "conversation_of",
]


@dataclass(slots=True)
class InputCheck:
    """The input stage over one request, text by text: what ``check_input`` sums up."""

    outcome: StageOutcome = field(default_factory=StageOutcome)
    # The findings of each text of the request that has any, by its place in ``texts``; a
    # finding's offsets are in the text's fields joined by ``PART_SEPARATOR``.
    by_text: dict[int, list[Finding]] = field(default_factory=dict)
    # The request-wide checks' findings (``Shield.check_request``), which have no text.
    request_findings: list[Finding] = field(default_factory=list)
    # With a cache: the texts it answered, those scanned, and the entries the new ones pushed
    # out of it.
    remembered: int = 0
    scanned: int = 0
    evicted: int = 0


def check_input(
    policy: CompiledPolicy,
    request: ChatRequest,
    *,
    fingerprint: Callable[[str], str] | None = None,
    cache: InputCache | None = None,
) -> StageOutcome:
    """Runs the input shields over every text of the request; applies redactions in place.
    With a ``cache``, only the texts it does not remember are scanned (``InputCache``)."""
    return check_input_texts(policy, request, fingerprint=fingerprint, cache=cache).outcome


def check_input_texts(
    policy: CompiledPolicy,
    request: ChatRequest,
    *,
    fingerprint: Callable[[str], str] | None = None,
    cache: InputCache | None = None,
    partition: object = None,
) -> InputCheck:
    """``check_input``, with the findings of each text (for ``shieldgate scan``)."""
    return begin_input_check(
        policy, request, fingerprint=fingerprint, cache=cache, partition=partition
    ).finish()


def begin_input_check(
    policy: CompiledPolicy,
    request: ChatRequest,
    *,
    fingerprint: Callable[[str], str] | None = None,
    cache: InputCache | None = None,
    partition: object = None,
) -> PendingCheck:
    """``check_input_texts`` in two steps: what the cache remembers is looked up now (about a
    microsecond per text), and ``PendingCheck.finish`` scans the rest and enforces. In
    between, ``PendingCheck.to_scan`` says how much scanning is left, so the proxy can keep a
    check whose texts are remembered on its event loop and send a long one to a thread.
    ``partition``: the part of the cache this check may use (``InputCache.scope``)."""
    return PendingCheck(policy, request, fingerprint, cache, partition)


class PendingCheck:
    """An input check whose remembered texts have been looked up (``begin_input_check``)."""

    __slots__ = ("_answers", "_fingerprint", "_keys", "_policy", "_request", "_scope", "to_scan")

    def __init__(
        self,
        policy: CompiledPolicy,
        request: ChatRequest,
        fingerprint: Callable[[str], str] | None,
        cache: InputCache | None,
        partition: object = None,
    ) -> None:
        self._policy = policy
        self._request = request
        self._fingerprint = fingerprint
        self._scope = None
        self._keys: list[tuple[object, ...] | None] = []
        self._answers: list[Remembered | None] = []
        shields = policy.shields(Stage.INPUT)
        texts = request.texts
        if shields and cache is not None:
            self._scope = cache.scope(
                shields,
                fail_closed=policy.enforcement.fail_closed,
                fingerprint=fingerprint,
                partition=partition,
            )
        scope = self._scope
        if scope is None:
            # Characters left to scan, plus a scan's fixed cost in characters per text.
            self.to_scan = sum(_scan_cost(text) for text in texts) if shields else 0
            return
        key = scope.key
        keys = self._keys = [key(text) if text.fields else None for text in texts]
        answers = self._answers = scope.get_all(keys)
        to_scan = 0
        if scope.misses:
            for text, answer in zip(texts, answers, strict=True):
                if answer is None:
                    to_scan += _scan_cost(text)
        self.to_scan = to_scan

    def finish(self) -> InputCheck:
        """Scans what was not remembered, enforces every text's findings (redactions written
        into the request's body) and runs the request-wide checks."""
        check = InputCheck()
        policy, request, fingerprint = self._policy, self._request, self._fingerprint
        shields = policy.shields(Stage.INPUT)
        if not shields:
            # Nothing to run: skips setting up a scan (and its normalizer) per message.
            return check
        outcome = check.outcome
        rule = policy.enforcement
        fail_closed = rule.fail_closed
        scope, keys, answers = self._scope, self._keys, self._answers
        # Texts scanned by this check, for the same text again later in the request (a tool's
        # same answer, "ok"): the lookups were done before any of them was scanned.
        scanned: dict[tuple[object, ...], tuple[Finding, ...]] = {}
        for place, message in enumerate(request.texts):
            fields = message.fields
            if not fields:
                continue
            offsets: list[int] | None = None
            answer = answers[place] if answers else None
            remembered = answer.findings if answer is not None else None
            key = keys[place] if keys else None
            if remembered is None and key is not None and key in scanned:
                assert scope is not None
                remembered = scanned[key]
                scope.reused()
            if remembered is not None:
                # Nothing normalized, joined or scanned: the fresh scan's findings, as found.
                if not remembered:
                    continue
                message_findings = list(remembered)
            else:
                message_findings, offsets = _message_findings(
                    shields, message, fail_closed, fingerprint
                )
                if scope is not None:
                    assert key is not None
                    scanned[key] = tuple(message_findings)
                    scope.put(key, message_findings)
            if not message_findings:  # the usual case: nothing to enforce
                continue
            check.by_text[place] = message_findings
            outcome.findings += message_findings
            if rule.blocks(message_findings):
                outcome.blocked = True
                continue
            spans = rule.redactions(message_findings)
            if spans:
                outcome.redacted = True
                if offsets is None:
                    offsets = _field_offsets(fields)
                for offset, text_field in zip(offsets, fields, strict=True):
                    text_field.write(redact(text_field.text, offset, spans))
                # What goes upstream is the redacted text, and a redaction can make a match
                # the original did not hold: a zero-width character stripped from inside a
                # token joins it ("ghp_ab<U+200B>cd" -> "ghp_abcd"). So the redacted text is
                # checked again, until nothing more is found (fail closed past a few rounds).
                again = _check_redacted(shields, message, rule.fail_closed, fingerprint)
                if again:
                    outcome.findings += again
                    check.by_text[place] = message_findings + again
                    if rule.blocks(again):
                        outcome.blocked = True
        if scope is not None:
            check.remembered, check.scanned = scope.hits, scope.misses
            check.evicted = scope.evicted
        if _checks_requests(shields):
            # Request-wide: they read the whole conversation, and are never remembered.
            conversation = conversation_of(request)
            request_findings = check_request(shields, conversation, fail_closed=fail_closed)
            if request_findings:
                check.request_findings = request_findings
                outcome.findings += request_findings
                outcome.blocked |= rule.blocks(request_findings)
        return check


def _has_request_checks(shields: Sequence[Shield]) -> bool:
    return any(type(shield).check_request is not Shield.check_request for shield in shields)


# Whether a stage's shields have request-wide checks, worked out once per stage (a stage's
# shields are immutable; a list is looked at each time).
_stage_checks_requests = lru_cache(maxsize=256)(_has_request_checks)


def _checks_requests(shields: Sequence[Shield]) -> bool:
    if isinstance(shields, tuple):
        return _stage_checks_requests(shields)
    return _has_request_checks(shields)


# Rounds of re-checking a redacted text before giving up (blocking): a redaction that keeps
# uncovering matches is hostile text.
_REDACTION_ROUNDS = 3


def _check_redacted(
    shields: Sequence[Shield],
    message: MessageText,
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> list[Finding]:
    """The enforced findings a redacted text still holds, each round's redactions written
    into it; offsets are in the text as it was in that round. A text still holding findings
    after ``_REDACTION_ROUNDS`` rounds gets a blocking finding. (Monitor findings are not
    reported again: the first scan reported them on the text as it came.)"""
    found: list[Finding] = []
    fields = message.fields
    shields = [shield for shield in shields if shield.reads_content]
    if not shields:
        return found
    for _ in range(_REDACTION_ROUNDS):
        findings, offsets = _message_findings(shields, message, fail_closed, fingerprint)
        enforced = [f for f in findings if not f.monitor]
        found += enforced
        if not enforced or offsets is None:
            return found
        if any(f.action is Action.BLOCK for f in enforced):
            return found
        spans = merge_redactions(enforced)
        for offset, text_field in zip(offsets, fields, strict=True):
            text_field.write(redact(text_field.text, offset, spans))
    last = found[-1]
    return [*found, replace(last, action=Action.BLOCK, label="redaction_loop")]


# A scan's fixed cost (a TextScan, its scanners, the decoding pass...), in characters of text
# scanned in the same time: some 10 µs, at the default input shields' 30 MB/s.
SCAN_COST_CHARS = 300


def _scan_cost(text: MessageText) -> int:
    if not text.fields:
        return 0
    return SCAN_COST_CHARS + sum(len(text_field.text) for text_field in text.fields)


def _message_findings(
    shields: Sequence[Shield],
    message: MessageText,
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> tuple[list[Finding], list[int] | None]:
    """A fresh scan of one text of a request: its fields joined by ``PART_SEPARATOR``, then
    each run of fields a template may join without one; the findings, and where each field
    starts (None when no shield applies to the text's role)."""
    scanned = _scan_message(shields, message, PART_SEPARATOR, fail_closed, fingerprint)
    if scanned is None:
        return [], None
    message_findings, offsets = scanned
    for run in message.joined:
        if run[1] - run[0] > 1:
            message_findings += _across_parts(
                shields, message, run, offsets, fail_closed, fingerprint
            )
    return message_findings, offsets


def _field_offsets(fields: Sequence[TextField]) -> list[int]:
    """Where each field starts in the fields joined by ``PART_SEPARATOR`` (``joined_text``'s
    offsets, without joining)."""
    offsets = []
    start = 0
    step = len(PART_SEPARATOR)
    for text_field in fields:
        offsets.append(start)
        start += len(text_field.text) + step
    return offsets


def _scan_message(
    shields: Sequence[Shield],
    message: MessageText,
    separator: str,
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> tuple[list[Finding], list[int]] | None:
    """The findings in a message's fields joined by ``separator``, and where each field
    starts; None when no shield applies to the message's role."""
    text_scan = TextScan(
        shields, fail_closed=fail_closed, role=message.role, fingerprint=fingerprint
    )
    if not text_scan.active:
        return None
    scan = JsonEscapedScan(text_scan) if message.json_text else text_scan
    # One scan of the joined text: a scan per part costs ~10 µs each, and a request may hold
    # a hundred thousand tiny parts.
    text, offsets = joined_text(message.fields, separator)
    return scan_whole(scan, text), offsets


def _across_parts(
    shields: Sequence[Shield],
    message: MessageText,
    run: tuple[int, int],
    offsets: list[int],
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> list[Finding]:
    """What a run of a message's fields (its content parts, say) holds joined without a
    separator and not one by one: the findings that cross a field's end, in the offsets of
    the message's fields joined by PART_SEPARATOR (``offsets``: where each starts there)."""
    first, end = run
    parts = MessageText(message.role, message.message_index, message.fields[first:end])
    scanned = _scan_message(shields, parts, "", fail_closed, fingerprint)
    if scanned is None:
        return []
    findings, joined = scanned
    crossing = []
    for finding in findings:
        start_part = bisect_right(joined, finding.start) - 1
        end_part = bisect_right(joined, max(finding.end - 1, finding.start)) - 1
        if start_part != end_part:
            start = offsets[first + start_part] + finding.start - joined[start_part]
            stop = offsets[first + end_part] + finding.end - joined[end_part]
            crossing.append(replace(finding, start=start, end=stop))
    return crossing


def conversation_of(request: ChatRequest) -> list[tuple[Role, str]]:
    """Each message's role and whole text (its parts and tool-call arguments joined), in order:
    for request-wide checks and as the conversation remote shields are shown."""
    per_message: dict[int, tuple[Role, list[str]]] = {}
    for text in request.texts:
        _, pieces = per_message.setdefault(text.message_index, (text.role, []))
        pieces.extend(f.text for f in text.fields)
    return [(role, PART_SEPARATOR.join(pieces)) for role, pieces in per_message.values()]
