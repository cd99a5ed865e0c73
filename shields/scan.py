"""Running a stage's shields over one text, incrementally, and applying redactions.

``TextScan`` is the one engine behind every check: the input stage feeds it a message at once,
the stream guard feeds it a channel chunk by chunk. It normalizes each chunk once for all
shields, turns shield failures into findings (fail closed), and says how far the text is
*safe*: no finding reported later can touch a character before ``safe_end``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from shields.base import Action, Chunk, Finding, Role, Scanner, Shield
from shields.normalize import StreamNormalizer

__all__ = [
    "RedactionSpan",
    "TextScan",
    "check_request",
    "check_text",
    "merge_redactions",
    "redact",
]

log = logging.getLogger("shieldgate.shields")


class TextScan:
    """The shields of one stage over one text (a message, or one channel of a stream).

    Each ``feed`` normalizes its text once for all shields and scans it; callers that receive
    text in tiny pieces (the stream guard) batch it before feeding.
    """

    __slots__ = (
        "_fail_closed",
        "_fingerprint",
        "_keep",
        "_norm_holdback",
        "_normalizer",
        "_raw_holdback",
        "_raw_tail",
        "_raw_tail_start",
        "_scanners",
        "finished",
        "safe_end",
    )

    def __init__(
        self,
        shields: Sequence[Shield],
        *,
        holdback: int = 0,
        fail_closed: bool = True,
        role: Role | None = None,
        fingerprint: Callable[[str], str] | None = None,
    ) -> None:
        self._scanners: list[tuple[Shield, Scanner]] = [
            (shield, shield.scanner()) for shield in shields if shield.applies_to(role)
        ]
        self._norm_holdback = holdback if any(not s.matches_raw for s, _ in self._scanners) else 0
        self._raw_holdback = holdback if any(s.matches_raw for s, _ in self._scanners) else 0
        self._keep = max([holdback, *(s.max_match for s, _ in self._scanners)]) + 2
        self._fail_closed = fail_closed
        self._normalizer = StreamNormalizer()
        # With a fingerprint function, the last characters are kept so that a finding's
        # matched text can be hashed (never stored) once its end is known.
        self._fingerprint = fingerprint
        self._raw_tail = ""
        self._raw_tail_start = 0
        self.finished = False
        # Original offset before which no later finding can start or reach. Kept up to date
        # after every scan: the stream guard reads it once per event.
        self.safe_end = 0

    @property
    def active(self) -> bool:
        """False when no shield applies: the text can flow without being scanned."""
        return bool(self._scanners)

    @property
    def received(self) -> int:
        """Original characters scanned so far."""
        return self._normalizer.orig_len

    def _safe_end(self) -> int:
        normalizer = self._normalizer
        if self.finished:
            return normalizer.orig_len
        safe = normalizer.orig_len - self._raw_holdback
        if self._norm_holdback:
            threshold = normalizer.norm_len - self._norm_holdback
            safe = min(safe, normalizer.orig_start(threshold) if threshold > 0 else 0)
        return max(safe, 0)

    def feed(self, raw: str) -> list[Finding]:
        """Scans the next piece of the text; returns the findings it completes."""
        if self.finished:
            raise RuntimeError("TextScan.feed() after finish()")
        if not raw:
            return []
        normalizer = self._normalizer
        raw_start, norm_start = normalizer.orig_len, normalizer.norm_len
        norm = normalizer.feed(raw)
        chunk = Chunk(raw, raw_start, norm, norm_start, normalizer)
        findings: list[Finding] = []
        for shield, scanner in self._scanners:
            findings.extend(self._call(shield, scanner.feed, chunk))
        self.safe_end = self._safe_end()
        normalizer.forget_before(normalizer.norm_len - self._keep)
        if self._fingerprint is not None:
            findings = self._digested(findings, raw)
        return findings

    def _digested(self, findings: list[Finding], raw: str) -> list[Finding]:
        assert self._fingerprint is not None
        text = self._raw_tail + raw
        base = self._raw_tail_start
        if findings:
            findings = [
                replace(f, digest=self._fingerprint(text[max(f.start - base, 0) : f.end - base]))
                for f in findings
            ]
        keep = self._keep * 2  # a match (and its look-ahead) fits in max_match characters
        if len(text) > keep:
            self._raw_tail_start = base + len(text) - keep
            text = text[-keep:]
        self._raw_tail = text
        return findings

    def finish(self) -> list[Finding]:
        """The text has ended: findings that were waiting for more text."""
        if self.finished:
            return []
        self.finished = True
        findings: list[Finding] = []
        for shield, scanner in self._scanners:
            findings.extend(self._call(shield, scanner.finish, self._normalizer))
        self.safe_end = self._safe_end()
        if self._fingerprint is not None:
            findings = self._digested(findings, "")
        return findings

    def _call(self, shield: Shield, method, argument) -> list[Finding]:  # type: ignore[no-untyped-def]
        try:
            return list(method(argument))
        except Exception as exc:
            self._scanners = [(s, sc) for s, sc in self._scanners if s is not shield]
            return _failure(shield, exc, self._fail_closed)


def _failure(shield: Shield, exc: Exception, fail_closed: bool) -> list[Finding]:
    """What a shield that raised means: a block (fail closed) or nothing (``on_error: allow``)."""
    # Never the text itself in logs: only which shield failed and how.
    log.error("shield %s (%s) failed: %s", shield.id, shield.type_name, type(exc).__name__)
    if not fail_closed:
        return []
    return [
        Finding(
            shield_id=shield.id,
            shield_type=shield.type_name,
            label="shield_error",
            action=Action.BLOCK,
            start=0,
            end=0,
            monitor=shield.monitor,
        )
    ]


def check_request(
    shields: Sequence[Shield], messages: Sequence[tuple[Role, str]], *, fail_closed: bool = True
) -> list[Finding]:
    """Every shield's request-wide check (see ``Shield.check_request``)."""
    findings: list[Finding] = []
    for shield in shields:
        try:
            findings += shield.check_request(messages)
        except Exception as exc:
            findings += _failure(shield, exc, fail_closed)
    return findings


def check_text(
    shields: Sequence[Shield],
    text: str,
    *,
    role: Role | None = None,
    fail_closed: bool = True,
    fingerprint: Callable[[str], str] | None = None,
) -> list[Finding]:
    """All findings of ``shields`` on one whole text."""
    scan = TextScan(shields, fail_closed=fail_closed, role=role, fingerprint=fingerprint)
    if not scan.active:
        return []
    findings = scan.feed(text)
    findings.extend(scan.finish())
    return findings


@dataclass(frozen=True, slots=True)
class RedactionSpan:
    start: int
    end: int
    placeholder: str


def merge_redactions(findings: Iterable[Finding]) -> list[RedactionSpan]:
    """Enforced redaction findings as sorted, non-overlapping spans (first placeholder wins)."""
    spans = sorted(
        (f.start, f.end, f.placeholder)
        for f in findings
        if f.action is Action.REDACT and not f.monitor and f.end > f.start
    )
    merged: list[RedactionSpan] = []
    for start, end, placeholder in spans:
        if merged and start <= merged[-1].end:
            last = merged[-1]
            if end > last.end:
                merged[-1] = RedactionSpan(last.start, end, last.placeholder)
        else:
            merged.append(RedactionSpan(start, end, placeholder))
    return merged


def redact(text: str, offset: int, spans: Sequence[RedactionSpan]) -> str:
    """Applies ``spans`` (offsets of the whole text) to ``text``, a piece starting at ``offset``.

    A span's placeholder goes where the span starts; the rest of the span is removed from
    whichever pieces it covers. Applying it piece by piece gives the same result as applying it
    to the whole text, which is what lets a stream be redacted event by event.
    """
    end = offset + len(text)
    out: list[str] = []
    cursor = offset
    for span in spans:
        if span.end <= cursor or span.start >= end:
            continue
        if span.start > cursor:
            out.append(text[cursor - offset : span.start - offset])
        if span.start >= offset:
            out.append(span.placeholder)
        cursor = min(span.end, end)
    if cursor == offset and not out:
        return text
    out.append(text[cursor - offset :])
    return "".join(out)
