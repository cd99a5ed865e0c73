"""``regex``: policy patterns, run by RE2 so that every pattern matches in linear time.

Python's ``re`` backtracks: a policy pattern like ``(a+)+$`` would let one hostile request pin
a core for minutes. RE2 guarantees time linear in the text and refuses the constructs that need
backtracking (look-around, back-references); those are rejected at load time with a message.

Streams are scanned over a sliding window: each feed searches the new text plus the last
``max_match`` characters before it, so a match split across chunks is found and nothing older
is searched again.

Adaptive hold-back (``Scanner.open_from``): a later feed can only report a match that starts in
that window and is already there, unreported, or may still be forming at the end of the text
— where the text ends with a prefix of a match (``prefix_pattern``). In prose, a pattern with
a literal start ("corp-", "tok_") holds nothing until that start appears; a pattern that
begins with a character class ("[a-z0-9]+@...") holds the run of that class at the end of the
text. A pattern ``prefix_pattern`` cannot translate keeps the fixed ``max_match`` window.
"""

from __future__ import annotations

import functools
import re
import re._constants as sre_constants  # type: ignore[import-not-found]  # parse trees only
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
    "prefix_pattern",
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


# Compiled patterns and their derived forms are cached by their text: a policy is compiled at
# start, at every reload and by every `shieldgate test` run, and the secrets shield alone compiles
# hundreds of large patterns (seconds of RE2 and sre_parse work) that are the same every time.
# RE2 objects are immutable and thread-safe once compiled; errors are not cached.
_PATTERN_CACHE = 2048


@functools.lru_cache(maxsize=_PATTERN_CACHE)
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


@functools.lru_cache(maxsize=_PATTERN_CACHE)
def pattern_width(pattern: str) -> int | None:
    """The longest text the pattern can match, or None when unbounded or unknown."""
    try:
        _, high = sre_parse.parse(pattern).getwidth()
    except Exception:  # RE2 syntax that Python's parser does not know: treat as unbounded
        return None
    return None if high >= _UNBOUNDED else int(high)


class _NoPrefixes(Exception):
    """A construct ``prefix_pattern`` does not translate."""


# RE2 syntax that Python's parser reads differently or not at all: the translation would not
# mean what RE2 means, so such patterns get no prefix pattern.
_RE2_ONLY = re.compile(r"\\[pPCQEz]|\[:|\(\?P?<|\(\?[a-zA-Z]*x")
_AT = {
    sre_constants.AT_BOUNDARY: r"\b",
    sre_constants.AT_NON_BOUNDARY: r"\B",
    sre_constants.AT_BEGINNING: "^",
    sre_constants.AT_END: "$",
    sre_constants.AT_BEGINNING_STRING: r"\A",
    sre_constants.AT_END_STRING: r"\z",
}
_CATEGORY = {
    sre_constants.CATEGORY_DIGIT: r"\d",
    sre_constants.CATEGORY_NOT_DIGIT: r"\D",
    sre_constants.CATEGORY_SPACE: r"\s",
    sre_constants.CATEGORY_NOT_SPACE: r"\S",
    sre_constants.CATEGORY_WORD: r"\w",
    sre_constants.CATEGORY_NOT_WORD: r"\W",
}
_FLAGS: tuple[tuple[int, str], ...] = (
    (sre_constants.SRE_FLAG_IGNORECASE, "i"),
    (sre_constants.SRE_FLAG_MULTILINE, "m"),
    (sre_constants.SRE_FLAG_DOTALL, "s"),
)


@functools.lru_cache(maxsize=_PATTERN_CACHE)
def prefix_pattern(pattern: str) -> str | None:
    """An RE2 pattern for the non-empty prefixes of what ``pattern`` matches, or None when the
    pattern has constructs this does not translate.

    For adaptive hold-back: ``prefix_pattern(p) + r"\\z"`` finds where a match of ``p`` may
    still be forming at the end of a text. Built on the parse tree, recursively: a prefix of
    ``AB`` is a prefix of ``A``, or ``A`` then a prefix of ``B``; of ``A{m,n}``, up to ``n - 1``
    times ``A`` then a prefix of ``A``; of an alternation, a prefix of a branch. Assertions
    (``\\b``, ``$``) are kept where a prefix passes them and dropped at its end, so the
    result may accept a little more than the exact prefixes — which only holds text longer.
    The nesting keeps it linear in the size of the pattern.
    """
    if _RE2_ONLY.search(pattern):
        return None
    try:
        tree = sre_parse.parse(pattern)
        body = _prefixes(list(tree))
    except Exception:  # _NoPrefixes, or syntax only RE2 knows
        return None
    if body is None:
        return None
    flags = "".join(letter for flag, letter in _FLAGS if tree.state.flags & flag)
    return f"(?{flags}:{body})" if flags else f"(?:{body})"


def _prefixes(items: list[tuple[Any, Any]]) -> str | None:
    """The non-empty prefixes of a sequence, right to left: ``N(a) | a (?:N(rest))``."""
    rest: str | None = None
    for op, av in reversed(items):
        own = _item_prefixes(op, av)
        through = None if rest is None else f"{_emit(op, av)}(?:{rest})"
        rest = _either(own, through)
    return rest


def _either(first: str | None, second: str | None) -> str | None:
    if first is None:
        return second
    if second is None:
        return first
    return f"(?:{first}|{second})"


def _item_prefixes(op: Any, av: Any) -> str | None:
    if op in (sre_constants.LITERAL, sre_constants.NOT_LITERAL, sre_constants.ANY):
        return _emit(op, av)
    if op is sre_constants.IN:
        return _emit(op, av)
    if op is sre_constants.AT:
        return None  # no character of its own
    if op is sre_constants.BRANCH:
        found: str | None = None
        for branch in av[1]:
            found = _either(found, _prefixes(list(branch)))
        return found
    if op is sre_constants.SUBPATTERN:
        inner = _prefixes(list(av[3]))
        return None if inner is None else f"(?{_group_flags(av[1], av[2])}:{inner})"
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
        _, high, item = av
        inner = _prefixes(list(item))
        if inner is None or high == 0:
            return None
        whole = _emit_sequence(list(item))
        if high == sre_constants.MAXREPEAT:
            return f"(?:{whole})*(?:{inner})"
        if high == 1:
            return inner
        return f"(?:{whole}){{0,{high - 1}}}(?:{inner})"
    raise _NoPrefixes(str(op))


def _group_flags(add: int, remove: int) -> str:
    on = "".join(letter for flag, letter in _FLAGS if add & flag)
    off = "".join(letter for flag, letter in _FLAGS if remove & flag)
    if (add | remove) & ~(
        sre_constants.SRE_FLAG_IGNORECASE
        | sre_constants.SRE_FLAG_MULTILINE
        | sre_constants.SRE_FLAG_DOTALL
        | sre_constants.SRE_FLAG_UNICODE
    ):
        raise _NoPrefixes("flags")
    return on + (f"-{off}" if off else "")


def _emit_sequence(items: list[tuple[Any, Any]]) -> str:
    return "".join(_emit(op, av) for op, av in items)


def _literal(code: int) -> str:
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{{{code:x}}}"


def _emit(op: Any, av: Any) -> str:
    """The RE2 text of one parsed item (groups become non-capturing)."""
    if op is sre_constants.LITERAL:
        return _literal(av)
    if op is sre_constants.NOT_LITERAL:
        return f"[^{_literal(av)}]"
    if op is sre_constants.ANY:
        return "."
    if op is sre_constants.IN:
        parts: list[str] = []
        negate = False
        for kind, value in av:
            if kind is sre_constants.NEGATE:
                negate = True
            elif kind is sre_constants.LITERAL:
                parts.append(_literal(value))
            elif kind is sre_constants.RANGE:
                parts.append(f"{_literal(value[0])}-{_literal(value[1])}")
            elif kind is sre_constants.CATEGORY and value in _CATEGORY:
                parts.append(_CATEGORY[value])
            else:
                raise _NoPrefixes(str(kind))
        return "[" + ("^" if negate else "") + "".join(parts) + "]"
    if op is sre_constants.AT:
        if av not in _AT:
            raise _NoPrefixes(str(av))
        return _AT[av]
    if op is sre_constants.BRANCH:
        return "(?:" + "|".join(_emit_sequence(list(b)) for b in av[1]) + ")"
    if op is sre_constants.SUBPATTERN:
        return f"(?{_group_flags(av[1], av[2])}:{_emit_sequence(list(av[3]))})"
    if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
        low, high, item = av
        count = f"{{{low},}}" if high == sre_constants.MAXREPEAT else f"{{{low},{high}}}"
        lazy = "?" if op is sre_constants.MIN_REPEAT else ""
        return f"(?:{_emit_sequence(list(item))}){count}{lazy}"
    raise _NoPrefixes(str(op))


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
        self._open = _OpenSearch.of(spec.patterns, case_sensitive)
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

    @property
    def adaptive_holdback(self) -> bool:
        return self._open is not None

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


class _OpenSearch:
    """The searches behind ``_RegexScanner.open_from``, compiled once per shield."""

    __slots__ = ("forming", "match", "search")

    def __init__(self, search: Searcher, forming: Searcher, match: Searcher) -> None:
        self.search = search  # a whole match, or a prefix of one at the end of the text
        self.forming = forming  # anchored: a prefix of a match reaches the end of the text
        self.match = match  # anchored: the match a search from here reports

    @classmethod
    def of(cls, patterns: list[str], case_sensitive: bool) -> _OpenSearch | None:
        # Pattern by pattern: each one's own flags (``(?i)`` at its start) stay its own.
        prefixes = [prefix_pattern(pattern) for pattern in patterns]
        if None in prefixes:
            return None
        forming = "(?:" + "|".join(f"(?:{prefix})" for prefix in prefixes) + ")"
        combined = "|".join(f"(?:{pattern})" for pattern in patterns)
        try:
            return cls(
                searcher(
                    compile_pattern(
                        f"(?:{combined})|{forming}\\z",
                        case_sensitive=case_sensitive,
                        capture=False,
                    )
                ),
                searcher(
                    compile_pattern(f"{forming}\\z", case_sensitive=case_sensitive, capture=False),
                    anchored=True,
                ),
                searcher(
                    compile_pattern(combined, case_sensitive=case_sensitive, capture=False),
                    anchored=True,
                ),
            )
        except ValueError:  # a translation RE2 does not take: the fixed window then
            return None


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

        Goes on as google-re2's ``finditer`` does, but from one character after each match's
        start (matches may overlap); offsets become characters through the
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
                    # Matches start further on each time, but may end before the last one did.
                    mark_chars += len(subject[mark:first].decode("utf-8"))
                    start, mark = base + mark_chars, first
                    end = start + len(subject[first:last].decode("utf-8"))
                except UnicodeDecodeError:
                    raise _NotCharacters from None
            if end > reported_until:
                label = shield.label_at(subject, first)
                if end == text_end and end - start < max_match:
                    pending = (start, end, label)
                    break  # nothing can follow a match that reaches the end
                reported_until = end
                matches.append((label, start, end))
            # The next search starts one character after this match's start, not at its end:
            # a match may begin inside another ("tok_aaaaatok_a1b2c3d4" holds two), and a
            # stream, which searches the last ``max_match`` characters of each feed again,
            # finds it — so the whole text must, or the two would redact differently.
            if first >= endpos:
                break
            pos = first + _UTF8_LENGTH[subject[first] >> 4]
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
        size = len(text)
        pos = search_from
        while pos <= size and (match := shield._regex.search(text, pos)) is not None:
            pos = match.start() + 1  # matches may overlap (``_matches``)
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

    def open_from(self, end: int, window: int) -> int:
        """The leftmost place in the next search window (the last ``max_match`` characters)
        where a match is already, unreported — a later search may cut the text into matches
        differently and report one that overlaps a reported one — or may still form."""
        searches = self._shield._open
        if searches is None:
            return end - window
        tail, base = self._tail, self._tail_start
        try:
            subject = tail.encode("utf-8")
        except UnicodeEncodeError:  # the feed has failed (closed) on this text
            return end - window
        ascii_only = len(subject) == len(tail)
        low = max(0, len(tail) - window)
        pos = low if ascii_only else len(tail[:low].encode("utf-8"))
        size = len(subject)
        while pos <= size:
            start = searches.search(subject, pos, size)[0][0]
            if start < 0:
                return end
            if searches.forming(subject, start, size)[0][0] != -1:
                return base + _characters(subject, start, ascii_only)
            match_end = searches.match(subject, start, size)[0][1]
            if base + _characters(subject, match_end, ascii_only) > self._reported_until:
                return base + _characters(subject, start, ascii_only)
            pos = start + _UTF8_LENGTH[subject[start] >> 4] if start < size else size + 1
        return end

    def _finding(self, label: str, start: int, end: int, normalizer: StreamNormalizer) -> Finding:
        if not self._raw:
            start, end = normalizer.orig_span(start, end)
        return self._shield.finding(label, start, end)


def _characters(subject: bytes, offset: int, ascii_only: bool) -> int:
    """Characters in ``subject[:offset]`` (a UTF-8 byte offset at a character boundary)."""
    return offset if ascii_only else len(subject[:offset].decode("utf-8"))


# Bytes in the UTF-8 sequence that starts with a byte, by the byte's high four bits (as
# google-re2 steps over a character after an empty match).
_UTF8_LENGTH = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)


register(RegexSpec, RegexShield)
