"""Text normalization for matching, with an exact map back to the original characters.

Shields match against a *normalized* view of the text — Unicode NFKD, case folding, format
characters (zero-width joiners, bidi controls, soft hyphens...) and other invisible characters
(variation selectors, the combining grapheme joiner) removed, combining marks removed
("b\u0301omb", "fu\u0308r"; see ``_KEPT_MARK_CLASSES``), whatever renders blank read as a space
(``BLANKS``), every run of whitespace collapsed to one space,
decimal digits of every script read as ASCII digits ("٤" → "4"), and non-ASCII lookalikes
folded to their ASCII skeleton (Unicode TS #39 confusables: Cyrillic "о" → "o", "’" → "'"; and
small capitals) — so that "B\u200bOMB", "ｂｏｍｂ", "ʙᴏᴍʙ" and "bоmb" are caught like "bomb".
Spans, redactions and the stream hold-back must still be exact in the text the client sees, so
the normalizer also records where each normalized character came from. The view is for
matching only: the client always gets the original text.

Normalization is defined per original character (plus the whitespace-run state), which makes it
incremental: feeding a text in any chunking yields the same normalized text as feeding it whole.
That is what lets the stream guard and the whole-text check share one code path.

The map is stored sparsely: a list of breakpoints where ``original - normalized`` changes. Plain
ASCII prose needs almost none. ASCII is folded in C (one ``bytes.translate``) and only the few
places that are not one-to-one (whitespace runs, controls, non-ASCII characters, found with
``bytes.find``, or in a long text's stretches of ASCII with a vectorized search for pairs of
spaces) cost Python work, so plain prose normalizes at hundreds of MB/s. Runs of
non-ASCII characters that fold one character to one (quotes, lookalikes, letters of other
scripts) are folded in place and do not interrupt the C passes over the text around them. The
view of a long text is built as bytes, one per character (``ascii_bytes``), which a deny list
searches as they are (``StreamNormalizer.ascii_view``).
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from itertools import count
from operator import itemgetter, sub

import ahocorasick_rs

__all__ = [
    "OVERRIDE_LABEL",
    "IdentityNormalizer",
    "StreamNormalizer",
    "ascii_bytes",
    "confusable_skeleton",
    "fold_ascii",
    "load_confusables",
    "non_ascii_runs",
    "normalize",
    "normalize_char",
]

_DROPPED_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Co", "Cn"})
# Invisible characters outside those categories (Unicode's Default_Ignorable_Code_Point marks):
# the combining grapheme joiner, Khmer inherent vowels, and the variation selectors (Mongolian,
# U+FE00-FE0F, U+E0100-E01EF). "ign\u034fore" and "b\ufe0fomb" read "ignore" and "bomb" on
# screen. (The Default_Ignorable letters, the Hangul fillers, render as a blank cell instead:
# ``_RENDERS_BLANK``.)
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
)
# Combining marks of the generic blocks (diacritics, their extensions and supplement, marks for
# symbols, half marks): written after a letter as separate characters they decorate it without
# changing what it reads as ("b\u0301omb", "b\u0336o\u0336m\u0336b\u0336", "zalgo" text), so
# they are dropped, whatever their combining class.
_GENERIC_MARK_RANGES = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
)
# Marks with a non-zero canonical combining class that are kept after decomposition: the kana
# voicing marks (class 8: "\u304b\u3099" is "\u304c", a different syllable) and the viramas
# (class 9: they join Indic consonants into conjuncts). Every other mark of a non-zero class is
# dropped (Hebrew points, Arabic harakat, nuktas, Thai tone marks, the generic diacritics): a
# reader matching words ignores them, as search engines do. The choice is also what makes
# canonically equivalent texts read alike: canonical ordering only ever swaps two adjacent marks
# of different non-zero classes, and of the kept ones no two ever sit on one base in real text
# (kana take no virama), so the order of the marks after a base never changes the view.
_KEPT_MARK_CLASSES = frozenset({8, 9})
# Characters that render as a blank cell without being whitespace to Unicode: the Hangul
# fillers (the only Default_Ignorable_Code_Point letters: fonts draw them as a wide blank, and
# "b\u3164omb" shows "b omb") and the Braille blank. Everything else that renders blank is
# White_Space or a space separator (Zs), which ``str.isspace`` covers; tests check both lists
# against the Unicode properties.
_RENDERS_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Every character the view reads as a space, derived at import: ``str.isspace`` (White_Space,
# Zs, and the information separators U+001C-001F) holds nothing above U+3000.
BLANKS = frozenset(chr(code) for code in range(0x3001) if chr(code).isspace()) | _RENDERS_BLANK


def _dropped(char: str) -> bool:
    """Whether ``char`` is invisible or a combining mark the view ignores."""
    category = unicodedata.category(char)
    if category in _DROPPED_CATEGORIES:
        # Format and control characters are invisible: zero-width (joiner) spaces, bidi
        # overrides, soft hyphens, tag characters. Dropping them defeats "b\u200bomb".
        return True
    code = ord(char)
    if any(low <= code <= high for low, high in _IGNORABLE_RANGES):
        return True
    if category not in ("Mn", "Mc", "Me"):
        return False
    combining = unicodedata.combining(char)
    if combining:
        return combining not in _KEPT_MARK_CLASSES
    return category != "Mc" and any(low <= code <= high for low, high in _GENERIC_MARK_RANGES)


# Unicode's confusables (TS #39), as shipped by confusable-homoglyphs: each character maps to
# the characters it can be mistaken for. The table is symmetric and star-shaped — a source lists
# its prototype, a prototype lists all its sources — so a character's whole class is its entry
# plus its entries' entries. Right-to-left characters are wrapped in LEFT-TO-RIGHT MARKs there.
_LRM = "\u200e"


@cache
def _confusables() -> dict[str, list[dict[str, str]]]:
    # Loaded on first use (~30-60 ms, once per process), never at import — nor are the modules
    # that load it: ASCII-only traffic and tools that never see non-ASCII text do not pay.
    import json
    from importlib.resources import files

    data = files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8")
    table: dict[str, list[dict[str, str]]] = json.loads(data)
    return table


def load_confusables() -> None:
    """Loads the confusables table now rather than on the first non-ASCII text.

    A server can call it at start-up so that no request pays the one-time ~30-50 ms.
    """
    _confusables()


def _class_of(char: str) -> set[str]:
    table = _confusables()
    entries = table.get(char) or table.get(_LRM + char + _LRM) or []
    members = {char}
    for entry in entries:
        other = entry["c"]
        members.add(other.replace(_LRM, ""))
        members.update(e["c"].replace(_LRM, "") for e in table.get(other, ()))
    return members


def _ascii_target(members: set[str], letters_only: bool) -> str | None:
    """The ASCII character (or letters) a class of lookalikes stands for, lower-cased."""
    ascii_members = [m for m in members if m.isascii()]
    singles = sorted(m for m in ascii_members if len(m) == 1)
    # A class can hold several ASCII characters ("l", "I", "1", "|"; "m", "rn"): a lower-case
    # letter is what the reader sees, then an upper-case one.
    for candidates in (
        [m for m in singles if m.islower()],
        [m.lower() for m in singles if m.isupper()],
    ):
        if candidates:
            return candidates[0]
    if not letters_only:
        # Punctuation and symbols: "‐" -> "-", "’" -> "'". Never digits: "б" looks like "6" and
        # "з" like "3", and turning letters or symbols into digits would feed the PII shields
        # numbers that are not there.
        punctuation = [m for m in singles if not m.isalnum() and not m.isspace()]
        if punctuation:
            return punctuation[0]
    # Ligature-like letters fold to several letters ("æ" -> "ae").
    words = sorted(m.lower() for m in ascii_members if len(m) > 1 and m.isalpha())
    return words[0] if words else None


_FANCY_LATIN = re.compile(
    r"(?:LATIN LETTER SMALL CAPITAL|NEGATIVE (?:CIRCLED|SQUARED) LATIN CAPITAL LETTER) ([A-Z])"
)


@lru_cache(maxsize=65536)
def confusable_skeleton(char: str) -> str | None:
    """The ASCII skeleton of one case-folded non-ASCII character, or None to keep it.

    Letters fold only to ASCII letters ("а" -> "a", "ѕ" -> "s", "ı" -> "i"), punctuation and
    symbols to ASCII letters or punctuation ("∣" -> "l", "–" -> "-", "“" -> '"'). Digits of
    other scripts, combining marks and letters that only look like digits or punctuation keep
    their identity here: they carry meaning in their own scripts ("б" is not "6", "ノ" is not
    "/"; ``normalize_char`` reads a digit by its value, "٥" as "5").

    The skeleton is a function of the case-folded character so that matching stays case
    insensitive in every script: a lower-case letter with no ASCII lookalike of its own takes
    the one of its capital ("в" -> "b" as "В" looks like "B"), since "ВОМВ" and "Вомв" must
    normalize alike.
    """
    if char.isascii():
        return None
    category = unicodedata.category(char)[0]
    if category == "L":
        letters_only = True
    elif category in "PS":
        letters_only = False
    else:
        return None
    target = _ascii_target(_class_of(char), letters_only)
    if target is None and category == "L":
        upper = char.upper()
        if len(upper) == 1 and upper != char:
            target = _ascii_target(_class_of(upper), letters_only)
    if target is None:
        # Latin letters in disguise that neither NFKC nor the confusables table fold: small
        # capitals ("ʙᴏᴍʙ") and negative circled or squared capitals ("🅑", "🅱"), the
        # alphabets of "fancy text" generators.
        named = _FANCY_LATIN.fullmatch(unicodedata.name(char, ""))
        if named is not None:
            target = named.group(1).lower()
    return target


def _ascii_digit(char: str) -> str | None:
    """The ASCII digit of a decimal digit of any script (Unicode ``Nd``), else None.

    By value, not by look: "٥" (Arabic-Indic five) is "5", never the "o" it resembles.
    """
    value = unicodedata.decimal(char, None)
    return None if value is None else chr(48 + value)


@lru_cache(maxsize=65536)
def normalize_char(char: str) -> str:
    """The normalized form of one character: "" (dropped), " " (blank) or its folding."""
    if char.isspace() or char in _RENDERS_BLANK:
        # Whatever renders as a blank cell separates words as a space does.
        return " "
    if _dropped(char):
        return ""
    # Compatibility decomposition (NFKD), case folding, and NFKD again (folding can produce
    # composed letters: "\u0130" -> "i\u0307"), after which marks the view ignores go. The
    # decomposition is that of one character, with no look at its neighbours, and yet
    # canonically equivalent texts read alike: "f\u00fcr" and "fu\u0308r" read "fur", a
    # Hangul syllable and its jamo read the same jamo, "\u304c" and "\u304b\u3099" the same
    # two characters (see ``_KEPT_MARK_CLASSES`` for the marks' order). Composing instead
    # would make a character's view depend on the next one, which a stream may not have sent
    # yet: the view would need a hold-back of its own.
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold())
    folded = "".join(c for c in decomposed if not _dropped(c))
    if not folded.isascii():
        # NFKD already folds compatibility forms (full-width, mathematical alphanumerics,
        # ligatures); what is left non-ASCII may be a digit of another script, read by its
        # value ("٤" and "४" are "4": a card number in Arabic-Indic digits is still one), a
        # blank (a filler), or a lookalike from another script.
        folded = "".join(
            " " if c in BLANKS else _ascii_digit(c) or confusable_skeleton(c) or c for c in folded
        )
    return folded


def _ascii_fold_table() -> bytes:
    """``bytes.translate`` table: each ASCII byte to its normalized form, NUL for a dropped one.

    Built from ``normalize_char`` so that the fast path and the per-character path agree on
    every ASCII character; 0x80, the mark of a non-ASCII character, stays as it is.
    """
    table = bytearray(range(256))
    for code in range(128):
        folded = normalize_char(chr(code))
        assert len(folded) <= 1 and folded != "\x00", (code, folded)
        # ``StreamNormalizer.feed`` folds printable ASCII with ``str.lower``.
        assert not chr(code).isprintable() or folded == chr(code).lower(), code
        table[code] = ord(folded) if folded else 0
    return bytes(table)


_ASCII_FOLD = _ascii_fold_table()


def fold_ascii(text: bytes) -> bytes:
    """An ASCII text's bytes, each folded as the normalized view folds it: lower case,
    whitespace as a space, a dropped character (a control) as NUL. The view of an ASCII text
    with no NUL here is this, with its runs of spaces collapsed to one."""
    return text.translate(_ASCII_FOLD)


def _mark_non_ascii(error: UnicodeError) -> tuple[bytes, int]:
    """An encoding error handler: each non-ASCII character becomes the byte 0x80."""
    assert isinstance(error, UnicodeEncodeError)
    return b"\x80" * (error.end - error.start), error.end


_MARK_NON_ASCII = "shieldgate.mark_non_ascii"
codecs.register_error(_MARK_NON_ASCII, _mark_non_ascii)
# Anchored at a place ``bytes.find`` located, never searched: a run of whitespace and dropped
# controls, or of non-ASCII characters.
_BLANK_RUN = re.compile(rb"[ \x00]+")
_HIGH_RUN = re.compile(rb"\x80+")
# Two spaces: where a run of whitespace is collapsed. ``bytes.find`` and ``bytes.split`` stop
# at every space of prose to look at the byte after it (~1.5 ms per MB); ahocorasick_rs, with a
# single key, searches with the memchr crate's vectorized memmem, which tests both bytes at
# many positions at once (~0.2 ms per MB, the list of matches included).
_PAIRS = ahocorasick_rs.BytesAhoCorasick([b"  "])
_PAIR_END = itemgetter(2)
# Past every normalized offset (``orig_spans``: where the last segment ends).
_NEVER = 2**63
# ``forget_before`` leaves fewer breakpoints than this alone (memory stays bounded all the same).
_FORGET_FROM = 64
# Plain segments longer than this find their runs of two spaces with ``_PAIRS``, collapse them
# with ``bytes.join`` and compute the breakpoints in C; shorter ones, with few runs, loop over
# them.
_SPLIT_FROM = 4096
# Long segments are fed in windows of this many characters (``_feed_plain``). A window whose
# pairs of spaces are denser than one per ``_SPARSE`` characters is split by ``bytes.split``
# (its search costs ~1.5 ns per character, a slice per pair in Python ~0.2 µs).
_WINDOW = 1 << 16
_SPARSE = 128
# Chunks up to this long (a stream's token-sized deltas) try ``str.lower`` first: for a few
# characters it costs half of encoding, translating and decoding. Longer ones go straight to
# ``bytes.translate``, which is faster per character and handles whitespace in the same pass.
_SHORT = 32

# Explicit bidi overrides (UAX #9): between LRO/RLO and the PDF that closes them (or the end of
# the paragraph), every character is displayed in the override's direction, so letters written
# backwards under RLO ("\u202ebmob") show as a word ("bomb") the logical order does not hold.
# The view keeps the logical order (what a model reads) and marks the overridden stretches
# instead (``StreamNormalizer.overridden``): their display order is only known once they end,
# which may be a whole stream later. Embeddings and isolates open levels of their own (an
# override inside them, or around them, ends or resumes with them), and a paragraph separator
# ends them all.
# The label of the finding a matching shield reports for such a stretch.
OVERRIDE_LABEL = "bidi_override"
_BIDI_EVENT = re.compile("[\u202a-\u202e\u2066-\u2069\n\r\x1c-\x1e\x85\u2029]")
_BIDI_PUSH = {
    "\u202a": "e",  # LRE
    "\u202b": "e",  # RLE
    "\u202d": "o",  # LRO
    "\u202e": "o",  # RLO
    "\u2066": "i",  # LRI
    "\u2067": "i",  # RLI
    "\u2068": "i",  # FSI
}
_PDF = "\u202c"
_PDI = "\u2069"
# UAX #9's max_depth: openers past it are counted, not stacked, as the algorithm does.
_BIDI_MAX_DEPTH = 125
# A letter or digit: an overridden stretch without one displays nothing to be fooled by.
_ALNUM = re.compile(r"[^\W_]")


def _non_ascii(text: str) -> str:
    return "".join([char for char in text if not char.isascii()])


def _one_to_one(run: str) -> tuple[bytes, str] | None:
    """How a run of non-ASCII characters folds when each one folds into one character: the
    ``ascii_bytes`` of the folding and its non-ASCII characters; None for any other run."""
    forms = list(map(normalize_char, run))
    folded = "".join(forms)
    # No empty form and as many characters as forms: every form is one character.
    if len(folded) != len(run) or "" in forms:
        return None
    return ascii_bytes(folded), _non_ascii(folded)


# Prose repeats its few short runs ("’", "—", a name with an accent) over and over. Longer
# runs are not cached: the cache must stay small whatever the text.
_short_one_to_one = lru_cache(maxsize=4096)(_one_to_one)
_SHORT_RUN = 8


def _fold_in_place(
    text: str, folded: bytes, wide: list[tuple[int, str]]
) -> tuple[bytes, list[tuple[int, int]]]:
    """``folded`` with its runs of non-ASCII characters that fold one-to-one replaced by their
    ``ascii_bytes``; and the other runs' spans.

    Such a run maps each character to one character, as plain ASCII does (a non-ASCII space
    folds to " " like a tab), so the text can be normalized around it as if it were plain
    ASCII. Its non-ASCII results go to ``wide`` with their offsets (``_joined``).
    """
    pieces: list[bytes] = []
    others: list[tuple[int, int]] = []
    done = 0
    start = folded.find(b"\x80")
    while start >= 0:
        match = _HIGH_RUN.match(folded, start)
        assert match is not None
        end = match.end()
        run = text[start:end]
        folding = _short_one_to_one(run) if end - start <= _SHORT_RUN else _one_to_one(run)
        if folding is None:
            others.append((start, end))
        else:
            marks, chars = folding
            pieces += (folded[done:start], marks)
            done = end
            if chars:
                wide.append((start, chars))
        start = folded.find(b"\x80", end)
    if not pieces:
        return folded, others
    pieces.append(folded[done:])
    return b"".join(pieces), others


def _add_piece(text: str, base: int, lo: int, hi: int, pieces: list[tuple[int, int]]) -> None:
    """Adds ``text[lo:hi]``, overridden, to ``pieces`` (at ``base``) if it holds a letter or
    digit, merged with the piece it continues."""
    if _ALNUM.search(text, lo, hi) is None:
        return
    if pieces and pieces[-1][1] == base + lo:
        pieces[-1] = (pieces[-1][0], base + hi)
    else:
        pieces.append((base + lo, base + hi))


def _pairs_only(pieces: list[bytes]) -> bool:
    """Whether ``pieces``, a folded plain segment split on pairs of spaces, had no longer run.

    A run of three or more leaves an empty piece, or one that starts with a space, after the
    first; the last piece may be empty (the segment ended with a pair). Every other piece
    starts with a byte above the space (plain segments hold nothing below it), so it compares
    at least b"!".
    """
    return min(pieces[1:-1], default=b"!") >= b"!" and not pieces[-1].startswith(b" ")


def ascii_bytes(text: str) -> bytes:
    """``text`` as one byte per character: ASCII as it is, any other character as 0x80.

    Offsets are the text's, so ``bytes.find`` and ``bytes.translate`` (in C) can stand in for
    a regular expression over a character class of ASCII characters.
    """
    if text.isascii():  # O(1): no error handler to set up
        return text.encode("ascii")
    return text.encode("ascii", _MARK_NON_ASCII)


def non_ascii_runs(text: str) -> Iterator[tuple[int, int]]:
    """The spans of the maximal runs of non-ASCII characters in ``text``.

    Found in C (an encoding pass, then ``bytes.find``): mostly-ASCII text costs about a copy,
    where a regular expression over it would cost a Python-engine scan.
    """
    if text.isascii():
        return
    marked = ascii_bytes(text)
    start = marked.find(b"\x80")
    while start >= 0:
        match = _HIGH_RUN.match(marked, start)
        assert match is not None
        end = match.end()
        yield start, end
        start = marked.find(b"\x80", end)


class StreamNormalizer:
    """Normalizes a text fed in chunks and maps normalized offsets back to original ones.

    ``feed`` returns the normalized text of the new chunk. ``orig_start(k)`` is the original
    index of the character that produced normalized character ``k``; ``orig_end(k)`` is the
    original end (exclusive) of a normalized span ending at ``k``. Offsets are global to the
    stream. ``forget_before(k)`` lets a long stream drop map entries it no longer needs, which
    keeps memory bounded by the scanners' windows rather than the length of the stream.
    """

    __slots__ = (
        "_bidi",
        "_bidi_overflow",
        "_bidi_seen",
        "_bp_delta",
        "_bp_norm",
        "_delta",
        "_last",
        "_prev_space",
        "norm_len",
        "orig_len",
        "overridden",
    )

    def __init__(self) -> None:
        self.orig_len = 0
        self.norm_len = 0
        self._prev_space = False
        self._delta = 0  # orig - norm for the current identity segment
        # Breakpoints: from normalized index _bp_norm[i] on, orig = norm + _bp_delta[i].
        self._bp_norm: list[int] = [0]
        self._bp_delta: list[int] = [0]
        # The last view built as bytes, with those bytes (``ascii_view``).
        self._last: tuple[str, bytes] | None = None
        # The open embeddings, overrides ("o") and isolates, innermost last, and the openers
        # past the maximum depth; and the overridden stretches of the last chunk fed.
        self._bidi: list[str] = []
        self._bidi_overflow = 0
        self._bidi_seen = False
        self.overridden: list[tuple[int, int]] = []

    def feed(self, text: str) -> str:
        if not text:
            return ""
        start = self.orig_len
        if self._bidi:
            self.overridden = self._track_bidi(text, start)
        elif self.overridden:
            self.overridden = []
        if len(text) <= _SHORT and text.isascii() and text.isprintable():
            # A stream's small chunk of plain prose (letters, digits, punctuation, single-byte
            # spaces): folding is lower-casing (``_ASCII_FOLD`` agrees on these characters),
            # and unless a run of spaces shows up, every character maps to itself.
            folded_text = text.lower()
            if folded_text.find("  ") < 0 and not (self._prev_space and folded_text[0] == " "):
                self._feed_identity(len(text))
                self._prev_space = folded_text[-1] == " "
                return folded_text
        # One C pass folds every ASCII character (lower case, whitespace to " ", controls to
        # NUL: _ASCII_FOLD) and marks each non-ASCII one with 0x80, so that Python only visits
        # the few places that are not one-to-one, found with ``bytes.find``. The view is built
        # as bytes, decoded once at the end, and kept for ``ascii_view``.
        if text.isascii():
            folded = text.encode("ascii").translate(_ASCII_FOLD)
            if folded.find(b"\x00") < 0 and len(folded) <= _SPLIT_FROM:
                if folded.find(b"  ") < 0 and not (self._prev_space and folded[0] == 32):
                    # The common case of a stream's small chunk: one-to-one.
                    self._feed_identity(len(folded))
                    self._prev_space = folded[-1] == 32
                    return folded.decode("ascii")
                # Only runs of whitespace to collapse (a paragraph break, "\n\n").
                view = folded.decode("ascii")
                if view.find("   ") < 0 and not (self._prev_space and view[0] == " "):
                    return self._feed_pairs(view)
        else:
            folded = text.encode("ascii", _MARK_NON_ASCII).translate(_ASCII_FOLD)
        size = len(folded)
        out: list[bytes] = []
        wide: list[tuple[int, str]] = []
        if folded.find(b"\x00") < 0 and folded.find(b"\x80") < 0:
            self._feed_plain(folded, 0, size, out)
        else:
            self._feed_mixed(text, folded, out, wide)
            if self._bidi_seen:
                # An explicit bidi control (dropped, so met in ``_feed_special``) opens a level:
                # the chunk is read again for its overrides, rarely.
                self._bidi_seen = False
                if not self._bidi:
                    self.overridden = self._track_bidi(text, start)
        self.orig_len += size
        return self._joined(out, wide)

    def _track_bidi(self, text: str, base: int) -> list[tuple[int, int]]:
        """The stretches of ``text`` (fed from original offset ``base``) that are displayed
        under an explicit override and hold a letter or digit; the override's opener is part
        of its stretch. Follows UAX #9's explicit levels (X1-X8) far enough for that."""
        stack = self._bidi
        pieces: list[tuple[int, int]] = []
        pos = 0
        for match in _BIDI_EVENT.finditer(text):
            at = match.start()
            char = text[at]
            if stack and stack[-1] == "o":
                _add_piece(text, base, pos, at, pieces)
            pos = at + 1
            kind = _BIDI_PUSH.get(char)
            if kind is not None:
                if len(stack) >= _BIDI_MAX_DEPTH or self._bidi_overflow:
                    self._bidi_overflow += 1
                else:
                    stack.append(kind)
                    if kind == "o":
                        pos = at
            elif char == _PDF:
                if self._bidi_overflow:
                    self._bidi_overflow -= 1
                elif stack and stack[-1] != "i":
                    stack.pop()
            elif char == _PDI:
                if "i" in stack:
                    # Closes the innermost isolate and whatever was opened inside it.
                    self._bidi_overflow = 0
                    while stack.pop() != "i":
                        pass
            else:  # a paragraph separator
                stack.clear()
                self._bidi_overflow = 0
        if stack and stack[-1] == "o":
            _add_piece(text, base, pos, len(text), pieces)
        return pieces

    def _joined(self, out: list[bytes], wide: list[tuple[int, str]]) -> str:
        """The view from its pieces of ``ascii_bytes`` and the non-ASCII characters that
        stand behind their 0x80 bytes, in ``wide`` (each with its original offset).

        Remembers the bytes for ``ascii_view``, which a deny list would otherwise rebuild.
        """
        ascii_view = b"".join(out)
        if not wide:
            norm = ascii_view.decode("ascii")
        else:
            # Every 0x80 of the view stands for the next non-ASCII character, in text order
            # (the one-to-one runs were collected before the others: sort them together).
            wide.sort()
            chars = "".join([run for _, run in wide])
            latin = ascii_view.decode("latin-1")  # one character per byte, 0x80 included
            find = ascii_view.find
            pieces: list[str] = []
            done = 0
            for char in chars:
                mark = find(b"\x80", done)
                pieces += (latin[done:mark], char)
                done = mark + 1
            pieces.append(latin[done:])
            norm = "".join(pieces)
        self._last = (norm, ascii_view)
        return norm

    def ascii_view(self, norm: str) -> bytes:
        """``ascii_bytes(norm)`` for the text the last ``feed`` returned, without a second
        encoding pass when that feed built it as bytes (a long or non-ASCII text)."""
        last = self._last
        if last is not None and last[0] is norm:
            return last[1]
        return ascii_bytes(norm)

    def _feed_identity(self, size: int) -> None:
        """Records ``size`` new characters that map one-to-one onto as many normalized ones."""
        norm_len = self.norm_len
        shift = self.orig_len - norm_len
        if shift != self._delta:
            self._add_breakpoint(norm_len, shift)
        self.norm_len = norm_len + size
        self.orig_len += size

    def _feed_pairs(self, view: str) -> str:
        """Feeds ``view``, folded ASCII whose whitespace runs are all of two spaces, none of them
        continuing a space already fed: each pair becomes its first space. (``_feed_plain``
        does the same for long texts in C; for a stream's chunk with one paragraph break, a
        loop over the pairs costs less.)"""
        pieces = view.split("  ")
        norm_len = self.norm_len
        shift = self.orig_len - norm_len
        if shift != self._delta:
            self._add_breakpoint(norm_len, shift)
        bp_norm, bp_delta = self._bp_norm, self._bp_delta
        position = norm_len
        for piece in pieces[:-1]:
            # After the pair, the original is one more character ahead of the normalized text.
            position += len(piece) + 1
            shift += 1
            bp_norm.append(position)
            bp_delta.append(shift)
        self._delta = shift
        out = " ".join(pieces)
        self.norm_len = norm_len + len(out)
        self.orig_len += len(view)
        self._prev_space = view[-1] == " "
        return out

    def _feed_plain(self, folded: bytes, lo: int, hi: int, out: list[bytes]) -> None:
        """Feeds ``folded[lo:hi]``, ASCII without dropped characters: each character maps to
        itself, except that a run of spaces becomes its first one."""
        if hi - lo > _WINDOW:
            # Window by window, so that the pairs of spaces of one window at most are held in
            # a list (``_PAIRS``; a text of nothing but pairs has one every three characters).
            # A run of spaces cut in two is still collapsed: the second window's part follows
            # a space (``_prev_space``).
            for start in range(lo, hi, _WINDOW):
                self._feed_plain(folded, start, min(start + _WINDOW, hi), out)
            return
        if self._prev_space:
            while lo < hi and folded[lo] == 32:
                lo += 1
            if lo >= hi:
                return
        segment = folded[lo:hi] if lo or hi != len(folded) else folded
        norm_len = self.norm_len
        shift = self.orig_len + lo - norm_len
        if shift != self._delta:
            self._add_breakpoint(norm_len, shift)
        # The output ends with the segment's last character, or with the first space of the
        # run the segment ends with: a space either way when that character is one.
        self._prev_space = folded[hi - 1] == 32
        if hi - lo <= _SPLIT_FROM:
            if segment.find(b"  ") < 0:
                out.append(segment)
                self.norm_len = norm_len + hi - lo
            else:
                self._feed_runs(folded, lo, hi, out)
            return
        # A long segment: its pairs of spaces are found in one search, which also tells
        # whether there is any (a separate search would read the whole text a second time).
        pairs = _PAIRS.find_matches_as_indexes(segment)
        if not pairs:
            out.append(segment)
            self.norm_len = norm_len + hi - lo
            return
        pieces: list[bytes]
        if len(pairs) > (hi - lo) // _SPARSE:
            # Dense pairs (a table, a hostile text): C's split costs less than a slice each.
            pieces = segment.split(b"  ")
        else:
            # ``segment.split(b"  ")``: both take the pairs from left to right, without overlap.
            pieces = []
            done = 0
            for _, start, end in pairs:
                pieces.append(segment[done:start])
                done = end
            pieces.append(segment[done:])
        if _pairs_only(pieces):
            # Runs of exactly two spaces (paragraph breaks, "\n\n"): joined in C, and the
            # breakpoints computed in C from where the pairs end. After the k-th pair (from 1),
            # which ends at ``end`` in the segment, the original is k characters ahead of the
            # normalized text, which is at ``norm_len + end - k``.
            runs = len(pairs)
            out.append(b" ".join(pieces))
            self._bp_norm.extend(map(sub, map(_PAIR_END, pairs), count(1 - norm_len)))
            self._bp_delta.extend(range(shift + 1, shift + runs + 1))
            self._delta = shift + runs
            self.norm_len = norm_len + hi - lo - runs
        else:
            self._feed_runs(folded, lo, hi, out)

    def _feed_runs(self, folded: bytes, lo: int, hi: int, out: list[bytes]) -> None:
        """``_feed_plain`` run by run: short segments, and runs of three spaces or more."""
        find = folded.find
        base = self.orig_len
        norm_len = self.norm_len
        delta = self._delta
        bp_norm, bp_delta = self._bp_norm, self._bp_delta
        pos = lo
        run = find(b"  ", lo, hi)
        while True:
            stop = hi if run < 0 else run + 1  # one-to-one up to the run's first space
            shift = base + pos - norm_len
            if shift != delta:
                if bp_norm[-1] == norm_len:
                    bp_delta[-1] = shift
                else:
                    bp_norm.append(norm_len)
                    bp_delta.append(shift)
                delta = shift
            out.append(folded[pos:stop])
            norm_len += stop - pos
            if run < 0:
                break
            pos = run + 2
            while pos < hi and folded[pos] == 32:
                pos += 1
            if pos >= hi:
                break
            run = find(b"  ", pos, hi)
        self.norm_len = norm_len
        self._delta = delta

    def _feed_mixed(
        self, text: str, folded: bytes, out: list[bytes], wide: list[tuple[int, str]]
    ) -> None:
        """``feed`` for a text with dropped (NUL in ``folded``) or non-ASCII (0x80) characters.

        Runs of non-ASCII characters that fold one-to-one into characters other than spaces
        (lookalikes, quotes, letters of other scripts: most of them) are folded in place first,
        so that they do not interrupt the stretch they sit in. Then the stretches between the
        other runs are plain, such a run goes character by character, and a run of spaces and
        dropped controls becomes one space at most.
        """
        folded, runs = _fold_in_place(text, folded, wide)
        size = len(folded)
        find = folded.find
        nul = find(b"\x00")
        if nul < 0:
            nul = size
        runs.append((size, size))
        next_run = iter(runs).__next__
        high, high_end = next_run()
        pos = 0
        while True:
            rare = min(nul, high)
            if rare > pos:
                self._feed_plain(folded, pos, rare, out)
            if rare >= size:
                return
            if rare == high:
                end = high_end
                self._feed_special(text, rare, end, out, wide)
                high, high_end = next_run()
            else:
                match = _BLANK_RUN.match(folded, rare)
                assert match is not None
                end = match.end()
                if not self._prev_space:
                    # The run's first whitespace character stands for the run.
                    space = find(b" ", rare, end)
                    if space >= 0:
                        self._emit_identity(space, 1)
                        out.append(b" ")
                        self._prev_space = True
            pos = end
            if nul < end:
                nul = find(b"\x00", end)
                if nul < 0:
                    nul = size

    def _emit_identity(self, local_start: int, length: int) -> None:
        """Records ``length`` characters that map one-to-one, starting at ``local_start``."""
        delta = self.orig_len + local_start - self.norm_len
        if delta != self._delta:
            self._add_breakpoint(self.norm_len, delta)
        self.norm_len += length

    def _add_breakpoint(self, norm_index: int, delta: int) -> None:
        if self._bp_norm[-1] == norm_index:
            self._bp_delta[-1] = delta
        else:
            self._bp_norm.append(norm_index)
            self._bp_delta.append(delta)
        self._delta = delta

    def _feed_special(
        self, text: str, start: int, end: int, out: list[bytes], wide: list[tuple[int, str]]
    ) -> None:
        """Feeds the run of non-ASCII characters ``text[start:end]``, character by character."""
        pieces: list[str] = []
        for local in range(start, end):
            char = text[local]
            folded = normalize_char(char)
            if not folded:
                if char in _BIDI_PUSH:
                    self._bidi_seen = True
                continue
            if folded == " ":
                if self._prev_space:
                    continue
                self._prev_space = True
            else:
                self._prev_space = folded.endswith(" ")
            self._emit_identity(local, 1)
            if len(folded) > 1:
                # The extra characters of an expansion ("ß" -> "ss") all map to the same
                # original character; the next identity emit restores the delta.
                for _ in range(len(folded) - 1):
                    self._add_breakpoint(self.norm_len, self._delta - 1)
                    self.norm_len += 1
            pieces.append(folded)
        run = "".join(pieces)
        out.append(ascii_bytes(run))
        if not run.isascii():
            wide.append((start, _non_ascii(run)))

    def breakpoints(self) -> tuple[list[int], list[int]]:
        """The offset map itself, for a caller that maps offsets once per token of a stream
        (``shields.scan.TextScan``): from normalized index ``norm[i]`` on, an original index is
        the normalized one plus ``delta[i]``. Both lists are kept, never replaced: read them,
        never change them."""
        return self._bp_norm, self._bp_delta

    def orig_start(self, norm_index: int) -> int:
        """Original index of the character that produced normalized character ``norm_index``.

        For ``norm_index == norm_len`` (one past the end) this is ``orig_len``.
        """
        if norm_index >= self.norm_len:
            return self.orig_len
        i = bisect_right(self._bp_norm, norm_index) - 1
        return norm_index + self._bp_delta[max(i, 0)]

    def orig_end(self, norm_end: int) -> int:
        """Original (exclusive) end of a normalized span that ends at ``norm_end``."""
        if norm_end <= 0:
            return 0
        last = self.orig_start(norm_end - 1) + 1
        if norm_end >= self.norm_len:
            # Trailing dropped characters (zero-width...) are swallowed with the span.
            return max(last, self.orig_len)
        return max(last, self.orig_start(norm_end))

    def orig_span(self, norm_start: int, norm_end: int) -> tuple[int, int]:
        """``(orig_start(norm_start), orig_end(norm_end))``, in two bisections instead of three.

        A deny list of common phrases maps thousands of spans per MB, so this is worth its own
        code: ``orig_end`` needs the deltas at ``norm_end - 1`` and at ``norm_end``, which are
        the same unless a breakpoint sits exactly at ``norm_end``.
        """
        norm_len = self.norm_len
        if not 0 <= norm_start < norm_end <= norm_len:
            return self.orig_start(norm_start), self.orig_end(norm_end)
        bp_norm, deltas = self._bp_norm, self._bp_delta
        i = bisect_right(bp_norm, norm_start) - 1
        if i < 0:
            i = 0
        start = norm_start + deltas[i]
        j = bisect_right(bp_norm, norm_end - 1, i) - 1
        if j < 0:
            j = 0
        end = norm_end + deltas[j]  # orig_start(norm_end - 1) + 1
        if norm_end == norm_len:
            return start, max(end, self.orig_len)
        k = j + 1
        if k < len(bp_norm) and bp_norm[k] == norm_end:
            # Dropped characters right after the span: it swallows them, as in orig_end.
            end = max(end, norm_end + deltas[k])
        return start, end

    def orig_spans(self, starts: Iterable[int], ends: Iterable[int]) -> tuple[list[int], list[int]]:
        """``orig_span`` of each span ``zip(starts, ends)``: the original starts and ends.

        For the spans a search reports, in the order of their ends: each one's breakpoint is
        found from the one before (as a rule the same or the next), where ``orig_span``
        bisects all the breakpoints twice per span (a deny list of common phrases maps
        thousands of spans per MB). Spans in any other order are mapped all the same, with a
        bisection where an end goes back.
        """
        bp_norm, deltas = self._bp_norm, self._bp_delta
        norm_len, orig_len = self.norm_len, self.orig_len
        last = len(bp_norm) - 1
        out_starts: list[int] = []
        out_ends: list[int] = []
        # The breakpoint ``j`` of the last span's last character, which maps the normalized
        # characters ``[low, high)`` with ``delta``; none before the first span. The first
        # breakpoint also maps the characters before it (theirs were forgotten), as
        # ``orig_span`` clamps its bisection.
        j, low, high, delta = 0, _NEVER, _NEVER, 0
        for start, end in zip(starts, ends, strict=True):
            if not 0 <= start < end <= norm_len:
                start, end = self.orig_span(start, end)
                out_starts.append(start)
                out_ends.append(end)
                continue
            if end > high:
                # As a rule the next segment; else a bisection of the ones after it.
                j += 1
                if j < last and bp_norm[j + 1] < end:
                    j = bisect_right(bp_norm, end - 1, j + 1) - 1
                low = bp_norm[j]
                high = bp_norm[j + 1] if j < last else _NEVER
                delta = deltas[j]
            elif end <= low:
                # The first span, or one whose end goes back: a bisection of them all.
                j = max(bisect_right(bp_norm, end - 1) - 1, 0)
                low = bp_norm[j] if j else -1
                high = bp_norm[j + 1] if j < last else _NEVER
                delta = deltas[j]
            if start >= low:
                out_starts.append(start + delta)
            else:
                i = bisect_right(bp_norm, start, 0, j) - 1
                out_starts.append(start + deltas[max(i, 0)])
            if end == norm_len:
                # Trailing dropped characters are swallowed with the span, as in ``orig_end``.
                out_ends.append(max(end + delta, orig_len))
            elif end == high:
                # So are dropped characters right after it (a breakpoint at its end).
                out_ends.append(max(end + delta, end + deltas[j + 1]))
            else:
                out_ends.append(end + delta)
        return out_starts, out_ends

    def forget_before(self, norm_index: int) -> None:
        """Drops breakpoints that only serve normalized offsets below ``norm_index``.

        A few are kept regardless: this runs after every scan of a stream, where keeping up
        to ``_FORGET_FROM`` entries costs less than a bisection and a ``del`` each time.
        """
        if len(self._bp_norm) < _FORGET_FROM:
            return
        i = bisect_right(self._bp_norm, norm_index) - 1
        if i > 0:
            del self._bp_norm[:i]
            del self._bp_delta[:i]


class IdentityNormalizer(StreamNormalizer):
    """A normalizer that folds nothing: the view is the original text, offsets map to
    themselves.

    For scans whose shields all read the original text (``Shield.matches_raw``): they never
    look at the normalized view, so it need not be computed.
    """

    __slots__ = ()

    def feed(self, text: str) -> str:
        self.orig_len += len(text)
        self.norm_len += len(text)
        return text


def normalize(text: str) -> tuple[str, StreamNormalizer]:
    """Normalizes a whole text; the returned normalizer maps offsets back."""
    normalizer = StreamNormalizer()
    return normalizer.feed(text), normalizer
