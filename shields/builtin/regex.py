"""``regex``: policy patterns, run by RE2 so that every pattern matches in linear time.

Python's ``re`` backtracks: a policy pattern like ``(a+)+$`` would let one hostile request pin
a core for minutes. RE2 guarantees time linear in the text and refuses the constructs that need
backtracking (look-around, back-references); those are rejected at load time with a message.

Streams are scanned over a sliding window: each feed searches the new text plus the last
``max_match`` characters before it, so a match split across chunks is found and nothing older
is searched again.
"""

from __future__ import annotations

import functools
import re._parser as sre_parse  # type: ignore[import-not-found]  # widths only, never matching
from collections.abc import Callable
from typing import Annotated, Any, Literal

import re2
from pydantic import AfterValidator, Field

from shields.base import Chunk, Finding, Scanner, Shield
from shields.normalize import StreamNormalizer
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = [
    "DEFAULT_UNBOUNDED_WINDOW",
    "RegexShield",
    "RegexSpec",
    "Spans",
    "compile_pattern",
    "searcher",
]

# How far back a pattern with unbounded repetition (``+``, ``*``) is matched in a stream.
DEFAULT_UNBOUNDED_WINDOW = 64
_UNBOUNDED = 1 << 16


def _options(case_sensitive: bool, capture: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # errors become validation messages instead of stderr noise
    options.case_sensitive = case_sensitive
    options.never_capture = not capture
    return options


def compile_pattern(pattern: str, *, case_sensitive: bool = False, capture: bool = True) -> Any:
    """Compiles with RE2; raises ValueError("bad regex ...") naming the pattern.

    ``capture=False`` makes every group non-capturing: the same matches, found a little faster
    when only where the match is counts.
    """
    try:
        compiled = re2.compile(pattern, _options(case_sensitive, capture))
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


# -- searching without the wrapper's per-call cost ------------------------------------------

# (start, end) of the whole match, then of each group; (-1, -1) for a group that took no part,
# and for the whole match when there is none.
Spans = list[tuple[int, int]]
# (text, pos, endpos) -> spans: a search of ``text[pos:endpos]`` (the bytes around it are
# context for ``\b``), in byte offsets.
Searcher = Callable[[bytes, int, int], Spans]


def _binding_works() -> bool:
    """google-re2's C++ binding is there and answers as expected (checked once, at import)."""
    try:
        match = re2.compile("b")._regexp.Match
        found = match(re2._Anchor.UNANCHORED, b"abc", 0, 3)
        missed = match(re2._Anchor.ANCHOR_START, b"abc", 0, 3)
    except Exception:  # another version of the package: the public API below then does it
        return False
    return [tuple(span) for span in found] == [(1, 2)] and list(missed[0]) == [-1, -1]


_BINDING = _binding_works()


def searcher(compiled: Any, *, anchored: bool = False) -> Searcher:
    """A search function for a compiled RE2 pattern, over bytes, for hot loops.

    A search through google-re2's public API (``re2._Regexp.search``) costs about a
    microsecond more than the search itself: a generator, argument clamping and a ``_Match``
    object per call. A stream scans once per network read, so that is paid thousands of times
    per megabyte. This calls the package's C++ binding, ``_regexp.Match(anchor, text, pos,
    endpos)``, which returns the spans directly. It relies on an internal of google-re2:
    ``_binding_works`` checks it at import and, if it is missing or answers differently, the
    public API is used instead (same results, the old cost). ``anchored`` matches at ``pos``
    only. The caller keeps ``0 <= pos <= endpos <= len(text)``.
    """
    if _BINDING:
        anchor = re2._Anchor.ANCHOR_START if anchored else re2._Anchor.UNANCHORED
        return functools.partial(compiled._regexp.Match, anchor)
    find = compiled.match if anchored else compiled.search
    groups = range(compiled.groups + 1)
    missing = [(-1, -1)] * len(groups)

    def search(text: bytes, pos: int, endpos: int) -> Spans:
        match = find(text, pos, endpos)
        return missing if match is None else [match.span(group) for group in groups]

    return search


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
        case_sensitive = not spec.normalize
        self._regex = compile_pattern(combined, case_sensitive=case_sensitive)
        # Texts are searched without groups (cheaper); a match found is then matched again
        # with them, anchored where it starts, for its label: the same match either way.
        self._search = searcher(
            compile_pattern(combined, case_sensitive=case_sensitive, capture=False)
        )
        self._match_groups = searcher(self._regex, anchored=True)
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

    def label_at(self, subject: bytes, start: int) -> str:
        """The label of the match that starts at byte ``start`` of ``subject``."""
        spans = self._match_groups(subject, start, len(subject))
        for index, group in enumerate(self._group_offsets):
            if spans[group][0] != -1:
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


class _NotCharacters(Exception):
    """A match boundary inside a UTF-8 sequence (RE2's ``\\C`` matches any one byte)."""


class _RegexScanner(Scanner):
    """Searches each new chunk plus the ``max_match`` characters before it.

    A match that touches the end of the text fed so far may still grow (``\\d+`` on "12" then
    "34"), so it is held back until more text settles it, or it reaches ``max_match``
    characters, or the text ends: a stream then reports the same findings as the whole text,
    not every growing prefix — and still within ``max_match`` characters of the match's start.

    The text goes to RE2 as UTF-8 (for ASCII, offsets in bytes are offsets in characters), and
    the usual feed, with no match in it, costs one search and a few string operations.
    """

    __slots__ = (
        "_keep",
        "_max_match",
        "_pending",
        "_raw",
        "_reported_until",
        "_search",
        "_shield",
        "_tail",
        "_tail_start",
    )

    def __init__(self, shield: RegexShield) -> None:
        self._shield = shield
        self._raw = shield.matches_raw
        self._search = shield._search
        self._max_match = shield.max_match
        # Keep one character more than a match can span so \b sees the character before.
        self._keep = shield.max_match + 1
        self._tail = ""
        self._tail_start = 0
        self._reported_until = 0  # matches ending at or before this offset are done
        self._pending: tuple[int, int, str] | None = None  # a match that may still grow

    def feed(self, chunk: Chunk) -> list[Finding]:
        new = chunk.raw if self._raw else chunk.norm
        if not new:
            return []
        tail = self._tail
        text = tail + new
        size = len(text)
        try:
            subject = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: the shield fails (closed) on this text
            self._pending = None
            raise
        search_from = len(tail) - self._max_match
        if search_from < 0:
            search_from = 0
        elif size != len(subject):  # not ASCII: the search starts at a byte offset
            search_from = len(text[:search_from].encode("utf-8"))
        found: list[Finding] = []
        spans = self._search(subject, search_from, len(subject))
        if spans[0][0] >= 0:
            try:
                found = self._matches(subject, text, search_from, spans[0], chunk.normalizer)
            except _NotCharacters:
                found = self._matches_by_characters(text, chunk.normalizer)
        else:
            self._pending = None
        keep = self._keep
        if size > keep:
            self._tail = text[-keep:]
            self._tail_start += size - keep
        else:
            self._tail = text
        return found

    def _matches(
        self,
        subject: bytes,
        text: str,
        pos: int,
        span: tuple[int, int],
        normalizer: StreamNormalizer,
    ) -> list[Finding]:
        """Every match from ``pos`` on, the first being ``span`` (offsets in ``subject``).

        Goes on as google-re2's ``finditer`` does; offsets become characters through the
        UTF-8 decoder, between one boundary and the next. Nothing is changed before the end,
        so that a boundary that is not one of characters can start over by characters.
        """
        shield = self._shield
        max_match = self._max_match
        base = self._tail_start
        text_end = base + len(text)
        ascii_only = len(subject) == len(text)
        endpos = len(subject)
        reported_until = self._reported_until
        pending = None
        # The last byte offset turned into characters, and its character offset.
        mark, mark_chars = 0, 0
        matches: list[tuple[str, int, int]] = []
        while True:
            first, last = span
            if ascii_only:
                start, end = base + first, base + last
            else:
                try:
                    mark_chars += len(subject[mark:first].decode("utf-8"))
                    start, mark = base + mark_chars, first
                    mark_chars += len(subject[mark:last].decode("utf-8"))
                    end, mark = base + mark_chars, last
                except UnicodeDecodeError:
                    raise _NotCharacters from None
            if end > reported_until:
                label = shield.label_at(subject, first)
                if end == text_end and end - start < max_match:
                    pending = (start, end, label)
                    break  # nothing can follow a match that reaches the end
                reported_until = end
                matches.append((label, start, end))
            if pos == endpos:
                break
            if pos == last:  # an empty match: step over one character
                pos += _UTF8_LENGTH[subject[pos] >> 4]
            else:
                pos = last
            span = self._search(subject, pos, endpos)[0]
            if span[0] < 0:
                break
        self._pending = pending
        self._reported_until = reported_until
        return [self._finding(label, start, end, normalizer) for label, start, end in matches]

    def _matches_by_characters(self, text: str, normalizer: StreamNormalizer) -> list[Finding]:
        """``_matches`` through google-re2's public API, which works in characters."""
        shield = self._shield
        base = self._tail_start
        text_end = base + len(text)
        search_from = max(0, len(self._tail) - self._max_match)
        self._pending = None
        findings = []
        for match in shield._regex.finditer(text, search_from):
            start, end = base + match.start(), base + match.end()
            if end <= self._reported_until:
                continue  # reported by an earlier feed
            label = shield.label_of(match)
            if end == text_end and end - start < self._max_match:
                self._pending = (start, end, label)
                break  # nothing can follow a match that reaches the end
            self._reported_until = end
            findings.append(self._finding(label, start, end, normalizer))
        return findings

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        if self._pending is None:
            return []
        start, end, label = self._pending
        self._pending = None
        return [self._finding(label, start, end, normalizer)]

    def _finding(self, label: str, start: int, end: int, normalizer: StreamNormalizer) -> Finding:
        if not self._raw:
            start, end = normalizer.orig_span(start, end)
        return self._shield.finding(label, start, end)


# Bytes in the UTF-8 sequence that starts with a byte, by the byte's high four bits (as
# google-re2 steps over a character after an empty match).
_UTF8_LENGTH = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)


register(RegexSpec, RegexShield)
