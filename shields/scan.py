"""Running a stage's shields over one text, incrementally, and applying redactions.

``TextScan`` is the one engine behind every check: the input stage feeds it a message at once,
the stream guard feeds it a channel chunk by chunk. It normalizes each chunk once for all
shields, turns shield failures into findings (fail closed), and says how far the text is
*safe*: no finding reported later can touch a character before ``safe_end``.

Two rules for ``safe_end``. The fixed window (the default): everything but the last
``holdback`` characters scanned. The adaptive one (``adaptive=True``, what the stream guard
uses): everything before the earliest open candidate of any scanner
(``Scanner.open_from``: normalized offsets mapped to original ones through the normalizer,
original ones for the shields that read the original text), and never less than the fixed
window — ``holdback`` is then an upper bound on what is held, not a constant delay. In prose
that is the few characters that may still begin a deny-list phrase or a secret's prefix. A
stream is scanned a token at a time, so the candidates are read after every token: from what
a scanner keeps up to date as it feeds (``Scanner.track_open``: no call), or by asking it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Protocol

from shields.base import (
    Action,
    Chunk,
    Finding,
    OpenAt,
    Role,
    Scanner,
    Shield,
    StageShields,
)
from shields.decode_scan import NOT_DECODED, DecodeShield
from shields.normalize import IdentityNormalizer, StreamNormalizer
from shields.screen import screened

__all__ = [
    "RedactionSpan",
    "TextScan",
    "WholeScan",
    "check_request",
    "check_text",
    "merge_redactions",
    "redact",
    "scan_whole",
]

log = logging.getLogger("shieldgate.shields")


class TextScan:
    """The shields of one stage over one text (a message, or one channel of a stream).

    Each scan normalizes its text once for all shields and runs every scanner over it. By
    default ``feed`` scans at once. With ``batch=N``, feeds are buffered until at least ``N``
    characters are waiting, then scanned together: a scan has a fixed cost (a few µs per
    shield), which dominates when a stream arrives a few characters at a time. Buffering is
    sound because ``safe_end`` only ever covers text that was scanned, so a caller that
    releases text up to ``safe_end`` holds the buffered text back; the price is latency, so
    a caller that waits for input (a network read) calls ``flush()`` first. ``finish()``
    scans whatever is buffered.
    """

    __slots__ = (
        "_adaptive",
        "_batch",
        "_bp_delta",
        "_bp_norm",
        "_fail_closed",
        "_fingerprint",
        "_keep",
        "_norm_asked",
        "_norm_holdback",
        "_norm_tracked",
        "_normalizer",
        "_pending",
        "_pending_len",
        "_raw_asked",
        "_raw_holdback",
        "_raw_tail",
        "_raw_tail_start",
        "_raw_tracked",
        "_scanners",
        "_tracked",
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
        batch: int = 0,
        adaptive: bool = False,
    ) -> None:
        if batch < 0:
            raise ValueError("batch must be >= 0")
        # A policy's stages are tuples: what depends only on the shields and the role is
        # worked out once per policy rather than once per text.
        # A stage that decodes (``StageShields.decode``) has one more shield, which reads
        # what the text's encoded runs decode to (``shields.decode_scan``); a list built from
        # a stage's shields decodes nothing.
        if isinstance(shields, tuple):
            decode = isinstance(shields, StageShields) and shields.decode
            plan = _plan(shields, role, decode, fail_closed)
        else:
            plan = _Plan.of(shields, role)
        self._scanners: list[tuple[Shield, Scanner]] = [
            (shield, shield.scanner()) for shield in plan.shields
        ]
        self._norm_holdback = holdback if plan.reads_norm else 0
        self._raw_holdback = holdback if plan.reads_raw else 0
        self._keep = max(holdback, plan.max_match) + 2
        self._adaptive = adaptive
        # Only the adaptive ``safe_end`` reads them: a whole text's scan skips the lookups.
        self._tracked: dict[int, Sequence[OpenAt]] = {}
        self._raw_tracked = self._norm_tracked = _NOTHING_TRACKED
        self._raw_asked = self._norm_asked = _NOTHING_ASKED
        if adaptive:
            self._track(_opens(self._scanners))
        self._fail_closed = fail_closed
        self._normalizer = IdentityNormalizer() if plan.raw_only else StreamNormalizer()
        # The normalizer's offset map, read by the adaptive ``safe_end``.
        self._bp_norm, self._bp_delta = self._normalizer.breakpoints()
        # With a fingerprint function, the last characters are kept so that a finding's
        # matched text can be hashed (never stored) once its end is known.
        self._fingerprint = fingerprint
        self._raw_tail = ""
        self._raw_tail_start = 0
        self._batch = batch
        self._pending: list[str] = []  # fed, not yet scanned (``batch``)
        self._pending_len = 0
        self.finished = False
        # Original offset before which no later finding can start or reach. Kept up to date
        # after every scan: the stream guard reads it once per event.
        self.safe_end = 0

    @property
    def active(self) -> bool:
        """False when no shield applies: the text can flow without being scanned."""
        return bool(self._scanners)

    def scanners(self) -> list[Scanner]:
        """The scanners still running (a failed one is dropped), in the stage's order."""
        return [scanner for _, scanner in self._scanners]

    @property
    def lookback(self) -> int:
        """How far back from the end of what was scanned a later finding may still start:
        offsets before ``received - lookback`` are never reported again, even by
        ``finish()`` (``safe_end`` does not say that when there is no hold-back)."""
        return self._keep

    @property
    def received(self) -> int:
        """Original characters scanned so far."""
        return self._normalizer.orig_len

    @property
    def pending(self) -> int:
        """Original characters fed but not scanned yet (only with ``batch``)."""
        return self._pending_len

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
        """Takes the next piece of the text; returns the findings its scan completes.

        Without ``batch`` the piece is scanned at once. With it, the piece may wait in the
        buffer (then nothing is returned and ``safe_end`` does not move) until the buffer
        reaches ``batch`` characters, ``flush()`` or ``finish()``.
        """
        # With ``batch`` this runs once per token of a stream, so the buffering case comes
        # first and does nothing else (``_batch`` is 0 without batching and after finish()).
        waiting = self._pending_len + len(raw)
        if waiting < self._batch:
            self._pending.append(raw)
            self._pending_len = waiting
            return []
        if self.finished:
            raise RuntimeError("TextScan.feed() after finish()")
        if not raw:
            return []
        pending = self._pending
        if pending:
            pending.append(raw)
            raw = "".join(pending)
            pending.clear()
            self._pending_len = 0
        return self._scan(raw)

    def flush(self) -> list[Finding]:
        """Scans the buffered text now (``batch``); returns the findings it completes."""
        pending = self._pending
        if not self._pending_len:
            pending.clear()  # empty pieces at most
            return []
        raw = "".join(pending)
        pending.clear()
        self._pending_len = 0
        return self._scan(raw)

    def _scan(self, raw: str) -> list[Finding]:
        normalizer = self._normalizer
        raw_start, norm_start = normalizer.orig_len, normalizer.norm_len
        norm = normalizer.feed(raw)
        chunk = _chunk(raw, raw_start, norm, norm_start, normalizer)
        findings: list[Finding] = []
        for shield, scanner in self._scanners:
            try:
                found = scanner.feed(chunk)
            except Exception as exc:
                findings += self._failed(shield, exc)
            else:
                if found:
                    findings += found
        norm_len = normalizer.norm_len
        if self._adaptive:
            # The adaptive ``safe_end``, inlined (this runs once per token of a stream): before
            # every scanner's open candidate, and no further back than the fixed window
            # (``holdback`` bounds what is held).
            orig_len = normalizer.orig_len
            safe = orig_len
            for part in self._raw_tracked:  # a few: a loop costs less than min(map(...))
                if part.open_at < safe:
                    safe = part.open_at
            for open_from, window in self._raw_asked:
                at = open_from(orig_len, window)
                if at < safe:
                    safe = at
            floor = orig_len - self._raw_holdback
            if safe < floor:
                safe = floor
            # Never back: what an earlier scan declared safe stays safe (and may have left).
            # The normalized candidates only lower ``safe``: once it is no further than
            # ``safe_end`` (a raw scanner still holds what it held), they cannot move it (the
            # scanners asked are asked still: an answer may keep what the next one starts from).
            if safe > self.safe_end or self._norm_asked:
                norm_open = norm_len
                for part in self._norm_tracked:
                    if part.open_at < norm_open:
                        norm_open = part.open_at
                for open_from, window in self._norm_asked:
                    at = open_from(norm_len, window)
                    if at < norm_open:
                        norm_open = at
                if norm_open < norm_len:
                    floor = norm_len - self._norm_holdback
                    if norm_open < floor:
                        norm_open = floor
                    # The original character that produced the first held normalized one:
                    # characters the normalizer dropped just before it (a zero-width space)
                    # leave, and may, since no normalized match starts on them. Near the end
                    # of the text, after the last breakpoint, that is ``orig_start`` without
                    # its call and bisection.
                    if norm_open <= 0:
                        held = 0
                    elif norm_open >= self._bp_norm[-1]:
                        held = norm_open + self._bp_delta[-1]
                    else:
                        held = normalizer.orig_start(norm_open)
                    if held < safe:
                        safe = held
                if safe > self.safe_end:
                    self.safe_end = safe
        else:
            # ``_safe_end``, inlined: this runs once per scan.
            safe = normalizer.orig_len - self._raw_holdback
            if self._norm_holdback:
                threshold = norm_len - self._norm_holdback
                held = normalizer.orig_start(threshold) if threshold > 0 else 0
                if held < safe:
                    safe = held
            self.safe_end = safe if safe > 0 else 0
        normalizer.forget_before(norm_len - self._keep)
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
        findings = self.flush()
        self.finished = True
        self._batch = 0  # so that a later feed() takes the path that raises
        ended: list[Finding] = []
        for shield, scanner in self._scanners:
            try:
                ended += scanner.finish(self._normalizer)
            except Exception as exc:
                ended += self._failed(shield, exc)
        self.safe_end = self._safe_end()
        if self._fingerprint is not None:
            ended = self._digested(ended, "")
        return findings + ended

    def _failed(self, shield: Shield, exc: Exception) -> list[Finding]:
        """A scanner raised: it is dropped for the rest of the text, and fails closed."""
        failed = [sc for s, sc in self._scanners if s is shield]
        self._scanners = [(s, sc) for s, sc in self._scanners if s is not shield]
        if self._adaptive:
            raw = (self._raw_tracked, self._raw_asked)
            norm = (self._norm_tracked, self._norm_asked)
            self._track(
                (_without(raw, failed, self._tracked), _without(norm, failed, self._tracked), {})
            )
        return _failure(shield, exc, self._fail_closed)

    def _track(self, opens: tuple[_Opens, _Opens, dict[int, Sequence[OpenAt]]]) -> None:
        (self._raw_tracked, self._raw_asked), (self._norm_tracked, self._norm_asked), parts = opens
        if parts:
            self._tracked = parts


# What keeps ``open_at`` up to date as the scanners feed (``Scanner.track_open``), and the
# ``open_from`` of the scanners that do not with their window: looked up once per text.
_Opens = tuple[list[OpenAt], list[tuple[Callable[[int, int], int], int]]]
# A text's scan with nothing to read (a whole text, the fixed window): never appended to.
_NOTHING_TRACKED: list[OpenAt] = []
_NOTHING_ASKED: list[tuple[Callable[[int, int], int], int]] = []


def _opens(
    scanners: list[tuple[Shield, Scanner]],
) -> tuple[_Opens, _Opens, dict[int, Sequence[OpenAt]]]:
    """What the adaptive ``safe_end`` reads after every scan: those in original offsets, those
    in normalized ones, and what each tracked scanner (by id) returned."""
    raw: _Opens = ([], [])
    norm: _Opens = ([], [])
    parts: dict[int, Sequence[OpenAt]] = {}
    for shield, scanner in scanners:
        tracked, asked = raw if shield.matches_raw else norm
        found = scanner.track_open()
        if found:
            tracked.extend(found)
            parts[id(scanner)] = found
        else:
            asked.append((scanner.open_from, shield.max_match))
    return raw, norm, parts


def _without(opens: _Opens, failed: list[Scanner], parts: dict[int, Sequence[OpenAt]]) -> _Opens:
    """``opens`` without those of the ``failed`` scanners (they are no longer fed)."""
    tracked, asked = opens
    gone = [part for scanner in failed for part in parts.get(id(scanner), ())]
    methods = [scanner.open_from for scanner in failed]  # bound methods: equal when the same
    return (
        [part for part in tracked if all(part is not other for other in gone)],
        [(open_from, window) for open_from, window in asked if open_from not in methods],
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a ``TextScan`` needs to know about its shields before it sees any text."""

    shields: tuple[Shield, ...]  # those that apply to the role
    reads_norm: bool  # some shield reads the normalized view
    reads_raw: bool  # some shield reads the original text
    max_match: int
    # Shields that all read the original text need no normalized view. (With no shield at
    # all the text is still normalized: ``TextScan([])`` measures that cost.)
    raw_only: bool

    @classmethod
    def of(
        cls,
        shields: Iterable[Shield],
        role: Role | None,
        decode: bool = False,
        fail_closed: bool = True,
    ) -> _Plan:
        applying = tuple(shield for shield in shields if shield.applies_to(role))
        if decode and any(shield.type_name not in NOT_DECODED for shield in applying):
            applying += (DecodeShield(applying, fail_closed=fail_closed),)
        reads_norm = any(not shield.matches_raw for shield in applying)
        return cls(
            shields=applying,
            reads_norm=reads_norm,
            reads_raw=any(shield.matches_raw for shield in applying),
            max_match=max((shield.max_match for shield in applying), default=0),
            raw_only=bool(applying) and not reads_norm,
        )


# Keyed by the stage's tuple of shields (and whether it decodes: a stage that decodes compares
# equal to a tuple of the same shields): a reloaded policy's entries age out of the cache
# (a shield is configured once and never changes, so an entry never goes stale).
_plan = lru_cache(maxsize=256)(_Plan.of)


_CHUNK_FIELDS = ("raw", "raw_start", "norm", "norm_start", "normalizer")
# ``_chunk`` sets every field itself: a field added to Chunk must be added there too.
if tuple(f.name for f in fields(Chunk)) != _CHUNK_FIELDS:  # pragma: no cover
    raise ImportError("shields.base.Chunk changed: update shields.scan._chunk")
_new = object.__new__
# The slots' descriptors, looked up by name: mypy sees only the instance attributes.
_set_raw, _set_raw_start, _set_norm, _set_norm_start, _set_normalizer = (
    vars(Chunk)[name].__set__ for name in _CHUNK_FIELDS
)


def _chunk(
    raw: str, raw_start: int, norm: str, norm_start: int, normalizer: StreamNormalizer
) -> Chunk:
    """``Chunk(...)`` at half the cost: a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` for every field, which is a measurable part of a small scan."""
    chunk: Chunk = _new(Chunk)
    _set_raw(chunk, raw)
    _set_raw_start(chunk, raw_start)
    _set_norm(chunk, norm)
    _set_norm_start(chunk, norm_start)
    _set_normalizer(chunk, normalizer)
    return chunk


def _failure(shield: Shield, exc: Exception, fail_closed: bool) -> list[Finding]:
    """What a shield that raised means: a block (fail closed) or nothing (``on_error: allow``)."""
    # Never the text itself in logs: only which shield failed and how.
    log.error("shield %s (%s) failed: %s", shield.id, shield.type_name, type(exc).__name__)
    if not fail_closed:
        return []
    return [shield.error_finding()]


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
    """All findings of ``shields`` on one whole text.

    The shields that provably find nothing in it (``shields.screen``) are left out of the
    scan: on most texts that is all of them, and no scan is set up at all."""
    shields = screened(shields, text, role)
    if not shields:
        return []
    return scan_whole(
        TextScan(shields, fail_closed=fail_closed, role=role, fingerprint=fingerprint), text
    )


class WholeScan(Protocol):
    """What ``scan_whole`` needs of a scan: ``TextScan`` and the scans that wrap one."""

    @property
    def active(self) -> bool: ...

    def feed(self, raw: str) -> list[Finding]: ...

    def finish(self) -> list[Finding]: ...


def scan_whole(scan: WholeScan, text: str) -> list[Finding]:
    """All findings of a fresh ``scan`` on one whole text."""
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
