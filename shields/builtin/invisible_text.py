"""``invisible_text``: hidden Unicode characters that smuggle text past a human reader.

A model reads characters that a person reviewing a prompt, a document or a reply never sees:

- ``tags``: the tag block U+E0000–U+E007F. Tag characters mirror ASCII ("ASCII smuggling"), and
  models read them as the letters they mirror: a whole instruction can hide in one line.
- ``bidi``: embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which make text
  display in an order other than the one it is read in ("Trojan Source").
- ``zero_width``: U+200B–U+200D, U+2060, U+FEFF (past the start of the text), U+180E.
- ``variation_selectors``: U+FE00–U+FE0F, U+E0100–U+E01EF and the Mongolian ones; a long run
  after one emoji can carry arbitrary bytes ("emoji smuggling").
- ``format``: every other invisible format character (Unicode's ``Cf`` category and the
  Default_Ignorable_Code_Point property: soft hyphen, LRM/RLM, invisible math operators, Hangul
  fillers...), except the visible "prepended concatenation marks" (U+0600–U+0605...).
- ``controls``: control characters other than tab, line feed and carriage return (C0, DEL,
  C1): a terminal or a web page shows nothing for a NUL, a BEL or the ESC that starts a color
  sequence, so "AKIAIOSFOD\\x1b[0mNN7EXAMPLQ" reads on screen as the key it hides from the
  secrets shield (which reads the original text).
- ``private_use``: private-use characters (off by default: icon fonts use them).

The other shields never see these characters (the normalizer drops them so that "b\\u200bomb"
still matches "bomb"), so this shield reads the ORIGINAL text (``matches_raw``).

Ordinary text must pass: a ZWJ/ZWNJ between two visible non-ASCII letters, marks or symbols
(emoji ZWJ sequences like 👨‍👩‍👧, ZWNJ in Persian, ZWJ in Indic scripts), the subdivision
flags of England, Scotland and Wales (U+1F3F4 followed by tag characters), and a byte order mark
at the very start are exempt; by default a single soft hyphen, LRM or variation selector is too
(``min_run``).

A run of invisible characters has no length limit, so a run is reported piece by piece as it
arrives: once a run reaches its ``min_run``, everything seen of it is reported, and every later
character of it in the feed that brings it. ``max_match`` therefore stays a few characters.

Adaptive hold-back (``Scanner.open_from``): only what waits for the next character is open —
a run shorter than its ``min_run``, a joiner whose exemption depends on what follows it, the
tag letters after a black flag. Visible text ends all three, so prose holds nothing.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal, get_args

import re2
from pydantic import Field, field_validator, model_validator

from shields.base import NOTHING_OPEN, Chunk, Finding, OpenAt, Scanner, Shield
from shields.normalize import StreamNormalizer, non_ascii_runs
from shields.registry import register
from shields.screen import WholeText
from shields.spec import ShieldSpecBase

__all__ = [
    "CATEGORY_RANGES",
    "DEFAULT_CATEGORIES",
    "DEFAULT_MIN_RUN",
    "InvisibleTextShield",
    "InvisibleTextSpec",
    "category_of",
    "decode_tags",
]

Category = Literal[
    "tags", "bidi", "zero_width", "format", "variation_selectors", "controls", "private_use"
]
CATEGORIES: tuple[Category, ...] = get_args(Category)

# Inclusive code point ranges. Disjoint; a test checks them against unicodedata's ``Cf``.
CATEGORY_RANGES: dict[Category, tuple[tuple[int, int], ...]] = {
    "tags": ((0xE0000, 0xE007F),),
    "bidi": ((0x202A, 0x202E), (0x2066, 0x2069)),
    "zero_width": ((0x180E, 0x180E), (0x200B, 0x200D), (0x2060, 0x2060), (0xFEFF, 0xFEFF)),
    "variation_selectors": (
        (0x180B, 0x180D),
        (0x180F, 0x180F),
        (0xFE00, 0xFE0F),
        (0xE0100, 0xE01EF),
    ),
    "format": (
        (0x00AD, 0x00AD),  # soft hyphen
        (0x034F, 0x034F),  # combining grapheme joiner
        (0x061C, 0x061C),  # Arabic letter mark
        (0x115F, 0x1160),  # Hangul fillers: letters that render as nothing
        (0x17B4, 0x17B5),  # Khmer inherent vowels
        (0x200E, 0x200F),  # LRM, RLM
        (0x2061, 0x2065),  # invisible math operators
        (0x206A, 0x206F),  # deprecated format characters
        (0x3164, 0x3164),  # Hangul filler
        (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
        (0xFFF0, 0xFFFB),  # interlinear annotation (and unassigned ignorables)
        (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
        (0x1BCA0, 0x1BCA3),  # shorthand format controls
        (0x1D173, 0x1D17A),  # musical symbol format controls
        (0xE0080, 0xE00FF),  # unassigned, default-ignorable
        (0xE01F0, 0xE0FFF),  # unassigned, default-ignorable
    ),
    # Unicode's Cc less tab, line feed and carriage return (the rest of the text's layout).
    "controls": ((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F)),
    "private_use": ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)),
}
# The ASCII ones: the only invisible characters an ASCII text can hold.
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _has_control(text: str) -> bool:
    return _ASCII_CONTROL.search(text) is not None


DEFAULT_CATEGORIES: tuple[Category, ...] = (
    "tags",
    "bidi",
    "zero_width",
    "format",
    "variation_selectors",
    "controls",
)
# A single soft hyphen (web text), LRM/RLM (mixed-direction text) or variation selector (emoji,
# CJK variants) is ordinary; two in a row are not.
DEFAULT_MIN_RUN: dict[Category, int] = {
    "tags": 1,
    "bidi": 1,
    "zero_width": 1,
    "format": 2,
    "variation_selectors": 2,
    "controls": 1,
    "private_use": 1,
}
_MAX_MIN_RUN = 1000

_JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ
_BOM = "\ufeff"
_FLAG_BASE = "\U0001f3f4"  # WAVING BLACK FLAG, the base of subdivision flag tag sequences
_CANCEL_TAG = "\U000e007f"
# Tag characters a subdivision code is spelled with: digits and lowercase letters.
_FLAG_SPEC_CHARS = frozenset(chr(0xE0000 + c) for c in (*range(0x30, 0x3A), *range(0x61, 0x7B)))
_FLAG_SPEC_MAX = 6
# The subdivision flags Unicode recommends for general interchange (RGI): England, Scotland,
# Wales. Other codes are valid but not displayed as flags, so they are just hidden letters.
_RGI_FLAG_SPECS = frozenset({"gbeng", "gbsct", "gbwls"})

_BOUNDS: list[int] = []
_LABELS: list[Category | None] = []
for _start, _end, _label in sorted(
    (start, end, label) for label, ranges in CATEGORY_RANGES.items() for start, end in ranges
):
    _BOUNDS += [_start, _end + 1]
    _LABELS += [_label, None]


def category_of(char: str) -> Category | None:
    """The category of an invisible character, or None for any other character."""
    i = bisect_right(_BOUNDS, ord(char)) - 1
    return _LABELS[i] if i >= 0 else None


def decode_tags(text: str) -> str:
    """The ASCII that the tag characters of ``text`` spell (for investigating a finding).

    Never log this: it is the smuggled text itself.
    """
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def _char_class(categories: frozenset[Category]) -> str:
    ranges = "".join(
        f"{chr(start)}-{chr(end)}"
        for label, pairs in CATEGORY_RANGES.items()
        if label in categories
        for start, end in pairs
    )
    return f"[{ranges}]+"


# A run of non-ASCII characters shorter than this is searched with Python's ``re``: RE2's
# per-call cost (encoding to UTF-8, mapping offsets back) outweighs its speed on short runs.
_RE2_FROM = 512


@lru_cache(maxsize=4096)
def _qualifies(char: str) -> bool:
    """Whether a visible character (callers never pass invisible ones) is a non-ASCII letter,
    mark or symbol: the neighbour that makes a joiner legitimate (emoji, emoji modifiers,
    Persian and Indic letters, combining marks)."""
    return char > "\x7f" and unicodedata.category(char)[0] in "LMS"


def _check_count(value: Any, where: str) -> None:
    # ``type() is int``: a YAML ``true`` is not the number 1.
    if type(value) is not int or not 1 <= value <= _MAX_MIN_RUN:
        raise ValueError(f"{where}must be a whole number from 1 to {_MAX_MIN_RUN}, got {value!r}")


class InvisibleTextSpec(ShieldSpecBase):
    type: Literal["invisible_text"] = "invisible_text"
    # Redaction strips the characters by default: a placeholder would put visible noise where
    # the text showed nothing.
    placeholder: str = Field(default="", max_length=200)
    categories: list[Category] = Field(
        default_factory=lambda: list(DEFAULT_CATEGORIES), min_length=1
    )
    # Report a run of consecutive invisible characters only once it is this long: one number
    # for every category, or per category (unnamed categories keep their default).
    min_run: int | dict[Category, int] = Field(default_factory=dict)
    # ZWJ/ZWNJ between visible non-ASCII letters, marks or symbols are not reported.
    exempt_joiners: bool = True
    # England, Scotland and Wales flags (tag sequences after U+1F3F4) are not reported.
    exempt_flags: bool = True

    @field_validator("min_run", mode="before")
    @classmethod
    def _check_min_run(cls, value: Any) -> Any:
        # Checked by hand: pydantic's messages for a failed `int | dict` union are unreadable.
        if isinstance(value, dict):
            for name, count in value.items():
                if name not in CATEGORIES:
                    raise ValueError(f"unknown category {name!r} (known: {', '.join(CATEGORIES)})")
                _check_count(count, f"{name}: ")
        elif type(value) is int:
            _check_count(value, "")
        else:
            raise ValueError(
                f"must be a number (for every category) or a mapping of category to number, "
                f"got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> InvisibleTextSpec:
        if len(set(self.categories)) != len(self.categories):
            raise ValueError("categories: each category may appear only once")
        if isinstance(self.min_run, dict):
            for name in self.min_run:
                if name not in self.categories:
                    raise ValueError(
                        f"min_run.{name}: {name!r} is not in `categories` "
                        f"({', '.join(self.categories)})"
                    )
        return self

    def min_runs(self) -> dict[Category, int]:
        """The effective ``min_run`` of each selected category."""
        if isinstance(self.min_run, int):
            return dict.fromkeys(self.categories, self.min_run)
        return {c: self.min_run.get(c, DEFAULT_MIN_RUN[c]) for c in self.categories}


class InvisibleTextShield(Shield):
    type_name = "invisible_text"

    def __init__(self, spec: InvisibleTextSpec) -> None:
        super().__init__(spec)
        self.matches_raw = True
        self.min_runs = spec.min_runs()
        self.exempt_joiners = spec.exempt_joiners and "zero_width" in self.min_runs
        self.exempt_flags = spec.exempt_flags and "tags" in self.min_runs
        # Every invisible character is looked at, selected or not: an unselected one still
        # ends a run and still decides whether a neighbouring joiner is exempt. Private-use and
        # control characters are the exception: unselected, they are ordinary characters.
        seen = set(CATEGORIES) - ({"private_use", "controls"} - set(self.min_runs))
        pattern = _char_class(frozenset(seen))
        # One character class repeated: both engines run it in linear time (``re`` tries each
        # start once, and the greedy run has nothing after it to backtrack into).
        self.regex = re.compile(pattern)
        self.regex_long = re2.compile(pattern)
        # Control characters are looked at only when selected: unselected, they are ordinary.
        self.controls = "controls" in self.min_runs
        longest_run = max(self.min_runs.values())
        # A run is known to be long enough once its ``min_run``-th character is seen, plus one
        # character when a held joiner opens the run (its exemption depends on the character
        # after it). A flag candidate waits for up to six tag letters and the one after them.
        self._max_match = max(
            longest_run + (1 if self.exempt_joiners else 0),
            _FLAG_SPEC_MAX + 1 if self.exempt_flags else 1,
        )

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _InvisibleScanner(self)

    def screen(self, text: WholeText) -> bool:
        # The only invisible ASCII characters are controls: a scanner fed an ASCII text without
        # one (selected) reports nothing.
        raw = text.raw
        return not raw.isascii() or (self.controls and _has_control(raw))


def _spans(regex: Any, text: str) -> list[tuple[int, int]]:
    return [match.span() for match in regex.finditer(text)]


# What the character before the current position was, as far as exemptions care.
_OTHER = 0
_QUALIFYING = 1  # a visible non-ASCII letter, mark or symbol
_VS_AFTER_QUALIFYING = 2  # a variation selector right after one (❤️ then ZWJ in ❤️‍🔥)
_FLAG = 3  # U+1F3F4, which tag characters may follow

_NO_RUN = _MAX_MIN_RUN + 1


class _InvisibleScanner(Scanner):
    """A small state machine over invisible characters; visible text only updates context."""

    __slots__ = (
        "_context",
        "_flag",
        "_flag_spec",
        "_held",
        "_out",
        "_pending",
        "_reported",
        "_shield",
        "_threshold",
        "_track",
        "open_at",
    )

    def __init__(self, shield: InvisibleTextShield) -> None:
        self._shield = shield
        self._context = _OTHER
        self._held: int | None = None  # offset of a joiner waiting for the next character
        self._flag: list[int] = []  # offsets of tag letters after U+1F3F4, awaiting CANCEL TAG
        self._flag_spec = ""
        # The current run: characters not yet reported (fewer than its min_run), the smallest
        # min_run of its categories, and whether it has been reported (then report everything).
        self._pending: list[tuple[int, Category]] = []
        self._threshold = _NO_RUN
        self._reported = False
        self._out: list[tuple[int, int, Category]] = []  # reported spans, this feed
        self._track = False
        # ``NOTHING_OPEN`` whenever nothing waits: the common case below leaves it as it is.
        self.open_at = NOTHING_OPEN

    def track_open(self) -> Sequence[OpenAt]:
        self._track = True
        return (self,)

    def feed(self, chunk: Chunk) -> list[Finding]:
        raw = chunk.raw
        if not raw:
            return []
        shield = self._shield
        # ASCII controls are rare: a text holding one (looked for) is searched whole; any other
        # has its invisible characters in its non-ASCII runs only. ``isascii`` is O(1) in
        # CPython and ``isprintable`` a pass in C, false for every control (and for tab and
        # line breaks, which the search then clears).
        if raw.isascii():
            whole = not raw.isprintable() and shield.controls and _has_control(raw)
        else:
            whole = shield.controls and _has_control(raw)
        if not whole and raw.isascii():
            if self._held is None and not self._flag and self._threshold == _NO_RUN:
                self._context = _OTHER  # nothing waits for this text: the common case
                return []
            self._visible(raw[0], raw[-1])
            return self._tracked(self._findings())
        base = chunk.raw_start
        pos = 0
        for low, high in [(0, len(raw))] if whole else non_ascii_runs(raw):
            if high - low >= _RE2_FROM:
                spans = [(low + s, low + e) for s, e in _spans(shield.regex_long, raw[low:high])]
            else:
                spans = [m.span() for m in shield.regex.finditer(raw, low, high)]
            for start, end in spans:
                if start > pos:
                    self._visible(raw[pos], raw[start - 1])
                for i in range(start, end):
                    self._invisible(raw[i], base + i)
                pos = end
        if pos < len(raw):
            self._visible(raw[pos], raw[-1])
        return self._tracked(self._findings())

    def _tracked(self, found: list[Finding]) -> list[Finding]:
        """``found``, once ``open_at`` is brought up to date (when tracked)."""
        if self._track:
            self.open_at = self.open_from(NOTHING_OPEN, 0)
        return found

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        self._resolve(next_char=None)
        return self._findings()

    def open_from(self, end: int, window: int) -> int:
        # A reported run reports each further character as it comes: only these wait.
        held = self._held
        if held is None and not self._flag and not self._pending:
            return end  # prose
        at = end if held is None else held
        if self._flag and self._flag[0] < at:
            at = self._flag[0]
        if self._pending and self._pending[0][0] < at:
            at = self._pending[0][0]
        return at

    def _visible(self, first: str, last: str) -> None:
        """A stretch of visible text from ``first`` to ``last``: it ends any run."""
        self._resolve(next_char=first)
        if last == _FLAG_BASE and self._shield.exempt_flags:
            self._context = _FLAG
        else:
            self._context = _QUALIFYING if _qualifies(last) else _OTHER

    def _resolve(self, next_char: str | None) -> None:
        """Decides what was waiting for a visible character (or the end) and ends the run."""
        if self._held is not None:
            held, self._held = self._held, None
            if next_char is None or not _qualifies(next_char):
                self._add(held, "zero_width")
        self._flush_flag()
        self._end_run()

    def _invisible(self, char: str, offset: int) -> None:
        shield = self._shield
        category = category_of(char)
        assert category is not None
        if self._held is not None:
            held, self._held = self._held, None
            self._add(held, "zero_width")  # an invisible neighbour: not exempt
        if self._flag:
            if self._extend_flag(char, offset):
                return
            self._flush_flag()
        context, self._context = self._context, _OTHER
        is_vs = category == "variation_selectors"
        if category not in shield.min_runs or (offset == 0 and char == _BOM):
            # Not looked for (or a leading byte order mark): it ends the run like visible text,
            # but a variation selector still belongs to the character before it.
            self._end_run()
            if is_vs and context == _QUALIFYING:
                self._context = _VS_AFTER_QUALIFYING
            return
        if (
            shield.exempt_joiners
            and char in _JOINERS
            and context in (_QUALIFYING, _VS_AFTER_QUALIFYING)
        ):
            self._held = offset
            return
        if context == _FLAG and char in _FLAG_SPEC_CHARS:
            self._flag = [offset]
            self._flag_spec = chr(ord(char) - 0xE0000)
            return
        self._add(offset, category)
        if is_vs and context == _QUALIFYING:
            self._context = _VS_AFTER_QUALIFYING

    def _extend_flag(self, char: str, offset: int) -> bool:
        if char in _FLAG_SPEC_CHARS and len(self._flag) < _FLAG_SPEC_MAX:
            self._flag.append(offset)
            self._flag_spec += chr(ord(char) - 0xE0000)
            return True
        if char == _CANCEL_TAG and self._flag_spec in _RGI_FLAG_SPECS:
            self._flag, self._flag_spec = [], ""
            self._context = _QUALIFYING  # a complete flag: a visible emoji
            return True
        return False

    def _flush_flag(self) -> None:
        """The tag letters after U+1F3F4 did not form a known flag: they are hidden text."""
        if self._flag:
            flag, self._flag, self._flag_spec = self._flag, [], ""
            for offset in flag:
                self._add(offset, "tags")

    def _add(self, offset: int, category: Category) -> None:
        if self._reported:
            self._emit(offset, category)
            return
        self._pending.append((offset, category))
        self._threshold = min(self._threshold, self._shield.min_runs[category])
        if len(self._pending) >= self._threshold:
            for pending in self._pending:
                self._emit(*pending)
            self._pending.clear()
            self._reported = True

    def _end_run(self) -> None:
        self._pending.clear()
        self._threshold = _NO_RUN
        self._reported = False

    def _emit(self, offset: int, category: Category) -> None:
        out = self._out
        if out and out[-1][1] == offset and out[-1][2] == category:
            out[-1] = (out[-1][0], offset + 1, category)
        else:
            out.append((offset, offset + 1, category))

    def _findings(self) -> list[Finding]:
        if not self._out:
            return []
        out, self._out = self._out, []
        finding = self._shield.finding
        return [finding(label, start, end) for start, end, label in out]


register(InvisibleTextSpec, InvisibleTextShield)
