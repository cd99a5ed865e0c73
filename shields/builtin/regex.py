"""``regex``: policy patterns, run by RE2 so that every pattern matches in linear time.

Python's ``re`` backtracks: a policy pattern like ``(a+)+$`` would let one hostile request pin
a core for minutes. RE2 guarantees time linear in the text and refuses the constructs that need
backtracking (look-around, back-references); those are rejected at load time with a message.

Streams are scanned over a sliding window: each feed searches the new text plus the last
``max_match`` characters before it, so a match split across chunks is found and nothing older
is searched again.
"""

from __future__ import annotations

import re._parser as sre_parse  # type: ignore[import-not-found]  # widths only, never matching
from typing import Annotated, Any, Literal

import re2
from pydantic import AfterValidator, Field

from shields.base import Chunk, Finding, Scanner, Shield
from shields.normalize import StreamNormalizer
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = ["DEFAULT_UNBOUNDED_WINDOW", "RegexShield", "RegexSpec", "compile_pattern"]

# How far back a pattern with unbounded repetition (``+``, ``*``) is matched in a stream.
DEFAULT_UNBOUNDED_WINDOW = 64
_UNBOUNDED = 1 << 16


def _options(case_sensitive: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # errors become validation messages instead of stderr noise
    options.case_sensitive = case_sensitive
    return options


def compile_pattern(pattern: str, *, case_sensitive: bool = False) -> Any:
    """Compiles with RE2; raises ValueError("bad regex ...") naming the pattern."""
    try:
        compiled = re2.compile(pattern, _options(case_sensitive))
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        reason = str(reason).removesuffix(f": {pattern}")
        if "perl operator" in reason or "backreference" in reason or "escape sequence" in reason:
            reason += " (RE2 runs in linear time: no look-around or back-references)"
        raise ValueError(f"bad regex {pattern!r}: {reason}") from None
    if compiled.search("") is not None:
        raise ValueError(f"bad regex {pattern!r}: it matches the empty string")
    return compiled


def pattern_width(pattern: str) -> int | None:
    """The longest text the pattern can match, or None when unbounded or unknown."""
    try:
        _, high = sre_parse.parse(pattern).getwidth()
    except Exception:  # RE2 syntax that Python's parser does not know: treat as unbounded
        return None
    return None if high >= _UNBOUNDED else int(high)


def _valid_pattern(pattern: str) -> str:
    compile_pattern(pattern)
    return pattern


class RegexSpec(ShieldSpecBase):
    type: Literal["regex"] = "regex"
    patterns: list[Annotated[str, AfterValidator(_valid_pattern)]] = Field(
        min_length=1, max_length=10_000
    )
    # Match the original text instead of the normalized view (case-sensitive, no folding).
    normalize: bool = True
    # Stream window for patterns with unbounded repetition, in characters.
    max_match: int | None = Field(default=None, ge=1, le=65536)


class RegexShield(Shield):
    type_name = "regex"

    def __init__(self, spec: RegexSpec) -> None:
        super().__init__(spec)
        self.matches_raw = not spec.normalize
        # One alternation so the text is searched once, whatever the number of patterns;
        # each pattern is a capture group so a match can be labelled with its pattern index.
        combined = "|".join(f"({pattern})" for pattern in spec.patterns)
        self._regex = compile_pattern(combined, case_sensitive=not spec.normalize)
        self._group_offsets = _group_offsets(spec.patterns)
        widths = [pattern_width(p) for p in spec.patterns]
        if spec.max_match is not None:
            self._max_match = spec.max_match
        elif any(w is None for w in widths):
            self._max_match = max([DEFAULT_UNBOUNDED_WINDOW, *(w for w in widths if w is not None)])
        else:
            self._max_match = max(w for w in widths if w is not None)

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _RegexScanner(self)

    def label_of(self, match: Any) -> str:
        for index, group in enumerate(self._group_offsets):
            if match.start(group) != -1:
                return f"pattern[{index}]"
        return "pattern"


def _group_offsets(patterns: list[str]) -> list[int]:
    """Group number of each pattern's wrapping group in the combined alternation."""
    offsets = []
    group = 1
    for pattern in patterns:
        offsets.append(group)
        group += 1 + compile_pattern(pattern).groups
    return offsets


class _RegexScanner(Scanner):
    """Searches each new chunk plus the ``max_match`` characters before it.

    A match that touches the end of the text fed so far may still grow (``\\d+`` on "12" then
    "34"), so it is held back until more text settles it, or it reaches ``max_match``
    characters, or the text ends: a stream then reports the same findings as the whole text,
    not every growing prefix — and still within ``max_match`` characters of the match's start.
    """

    __slots__ = ("_pending", "_reported_until", "_shield", "_tail", "_tail_start")

    def __init__(self, shield: RegexShield) -> None:
        self._shield = shield
        self._tail = ""
        self._tail_start = 0
        self._reported_until = 0  # matches ending at or before this offset are done
        self._pending: tuple[int, int, str] | None = None  # a match that may still grow

    def feed(self, chunk: Chunk) -> list[Finding]:
        shield = self._shield
        raw = shield.matches_raw
        new = chunk.raw if raw else chunk.norm
        if not new:
            return []
        text = self._tail + new
        base = self._tail_start
        text_end = base + len(text)
        # Keep one character more than a match can span so \b sees the character before.
        search_from = max(0, len(self._tail) - shield.max_match)
        self._pending = None
        findings = []
        # ASCII text goes to RE2 as bytes (the same offsets): the wrapper then skips encoding
        # the text and mapping every match's offsets back to characters.
        subject: str | bytes = text.encode("ascii") if text.isascii() else text
        for match in shield._regex.finditer(subject, search_from):
            start, end = base + match.start(), base + match.end()
            if end <= self._reported_until:
                continue  # reported by an earlier feed
            label = shield.label_of(match)
            if end == text_end and end - start < shield.max_match:
                self._pending = (start, end, label)
                break  # nothing can follow a match that reaches the end
            self._reported_until = end
            findings.append(self._finding(label, start, end, chunk.normalizer))
        keep = shield.max_match + 1
        self._tail = text[-keep:] if len(text) > keep else text
        self._tail_start = text_end - len(self._tail)
        return findings

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        if self._pending is None:
            return []
        start, end, label = self._pending
        self._pending = None
        return [self._finding(label, start, end, normalizer)]

    def _finding(self, label: str, start: int, end: int, normalizer: StreamNormalizer) -> Finding:
        if not self._shield.matches_raw:
            start, end = normalizer.orig_span(start, end)
        return self._shield.finding(label, start, end)


register(RegexSpec, RegexShield)
