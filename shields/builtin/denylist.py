"""``denylist``: phrases (substring match) and words (whole-word match), in one pass.

All entries of a shield go into one Aho-Corasick automaton (pyahocorasick, in C), so a deny list
of ten thousand entries costs one pass over the text, not ten thousand. The automaton's search
iterator resumes across chunks, so a stream is scanned with no overlap and no re-scan. A long
list also gets the same keys in ahocorasick_rs (Rust), which searches a chunk two to three
times faster: it has no resumable state, so each chunk is searched together with the tail kept
before it and only occurrences ending in the new text count. A short
list (a few thousand characters of entries, like the default policy's) also gets an RE2
alternation of its entries: on a long chunk RE2's DFA finds the few places where an entry may
occur and the automaton only runs around them, which costs a few ms per MB instead of a walk
of every character.

Entries are read in the joined view (``shields.joined``), one to one with the normalized text:
a joiner between two words reads as a space ("build-a-bomb", "make_napalm", "build.a.bomb"),
digits and symbols as the letters they stand for ("b0mb", "n@palm"), and an entry of several
words is also a key with its words run together ("buildabomb", "makeNapalm"; 6 letters or
more). A match that is the entry as written keeps the entry's kind (a phrase is a substring);
a looser reading must differ from an entry by joiners, digits or symbols or be run together,
and stands as a whole word ("build/a/bombastic", "BuildABombastic.tsx" pass). Entries that
begin or end with a joiner (".onion", "c++") are matched as written, in the normalized view.

With ``spaced_letters: true`` the shield also catches entries spelled out letter by letter
("b.o.m.b", "b u i l d a b o m b"): a second automaton, of the entries' letters and digits
only ("build a bomb" -> "buildabomb"), runs over ``shields.spaced.SpacedView``, where the
separators inside runs of single letters are removed. A run has no word boundaries of its own —
every letter of "a b o m b" is a token — so there words and phrases alike match anywhere inside
the run, and a match counts only if it crosses a removed separator (anything else is the plain
view's business). Entries with fewer than three letters are not matched in spaced form: a run
needs three, and short keys would hit inside any list of initials.

Adaptive hold-back (``Scanner.open_from``): a match can only still start where the text seen
so far ends with a prefix of some entry (a path of the automaton's trie: "... how to build a b"
ends with "build a b"), which includes a word waiting for its right boundary. The longest such
suffix is found by a search of a pattern of the entries' trie (a short list; a long one walks
pyahocorasick's trie), remembered per held suffix and following character as a small automaton
(``shields.open_tables``) that a tracked scanner (``Scanner.track_open``) steps a token at a
time; such a scanner runs its Aho-Corasick automaton only from the held suffix on, and not at
all over a piece whose every step it remembers (a step into a state where an entry ends is
never remembered). In prose that is 0-3
characters (the joined view reads a trailing joiner as a space: "... build." holds "build.",
"there." nothing). Spelled-out matching adds the view's
undecided tail (a run of single letters that may still grow) and the end of the released view
that begins an entry's letters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import fields
from typing import Any, Literal

import ahocorasick
import ahocorasick_rs
import re2
from pydantic import Field, model_validator

from shields.base import NOTHING_OPEN, Chunk, Finding, OpenAt, Scanner, Shield
from shields.builtin.regex import Searcher, compile_pattern, searcher
from shields.joined import (
    JOINER_CHARS,
    VIEW_BYTES,
    joined_view,
    joiners_as_spaces,
    relaxed_reading,
)
from shields.normalize import (
    OVERRIDE_LABEL,
    StreamNormalizer,
    ascii_bytes,
    fold_ascii,
    normalize,
)
from shields.open_tables import OpenTables, State
from shields.registry import register
from shields.screen import WholeText
from shields.spaced import MAX_GAP, SpacedView, spaced_span
from shields.spec import ShieldSpecBase

__all__ = ["DenylistShield", "DenylistSpec"]


class DenylistSpec(ShieldSpecBase):
    type: Literal["denylist"] = "denylist"
    phrases: list[str] = Field(default_factory=list, max_length=1_000_000)
    words: list[str] = Field(default_factory=list, max_length=1_000_000)
    # Also match entries spelled out with separators between their letters ("b.o.m.b").
    spaced_letters: bool = False
    # Separator characters allowed between two spelled-out letters (". " is 2, " - " is 3).
    spaced_max_gap: int = Field(default=1, ge=1, le=MAX_GAP)

    @model_validator(mode="after")
    def _not_empty(self) -> DenylistSpec:
        if not self.phrases and not self.words:
            raise ValueError("a denylist needs at least one entry in `phrases` or `words`")
        for key in ("phrases", "words"):
            for i, entry in enumerate(getattr(self, key)):
                if not normalize(entry)[0].strip():
                    raise ValueError(f"{key}[{i}]: {entry!r} is empty after normalization")
        if "spaced_max_gap" in self.model_fields_set and not self.spaced_letters:
            raise ValueError("`spaced_max_gap` has no effect without `spaced_letters: true`")
        if self.spaced_letters and not any(
            len(_spaced_key(normalize(entry)[0])) >= _SPACED_MIN_LETTERS
            for entry in (*self.phrases, *self.words)
        ):
            raise ValueError(
                f"`spaced_letters: true` needs an entry of at least {_SPACED_MIN_LETTERS} "
                "letters or digits: shorter ones are never matched spelled out"
            )
        return self


# A run of spelled-out letters has at least three (see shields.spaced).
_SPACED_MIN_LETTERS = 3

# A short list also gets an RE2 alternation of its keys, which finds where matches may be in a
# long text at the speed of RE2's DFA (a few ms per MB, where the automaton walks every
# character at ~10-40 ns); the automaton then runs only around those places. Bounded so that
# the DFA stays small (its states are at most the keys' characters): a long list runs the
# automaton over everything.
_PREFILTER_MAX_CHARS = 4096
# Chunks shorter than this (a stream's) take the automaton directly: an RE2 call costs more
# than walking a few hundred characters.
_PREFILTER_FROM = 2048
# A long list (no prefilter) scans chunks of at least this many characters with a second
# automaton, ahocorasick_rs (Rust): pyahocorasick searches a node's children one by one, which
# costs ~40 ms per MB with ten thousand entries, where ahocorasick_rs's automaton over bytes
# takes ~12. It has no resumable state: each chunk is searched together with the tail before
# it (the longest key), which costs little from a few dozen characters on; shorter chunks
# keep pyahocorasick's iterator, which resyncs from the tail like after a prefiltered chunk.
_BULK_FROM = 64
# From this many matches in a chunk on, ``StreamNormalizer.orig_spans`` maps their spans in one
# walk; fewer (a stream's chunk, as a rule) are mapped one by one, which costs less than its
# set-up.
_WALK_FROM = 4
_NEVER = 2**63


_FINDING_FIELDS = (
    "shield_id",
    "shield_type",
    "label",
    "action",
    "start",
    "end",
    "placeholder",
    "monitor",
    "digest",
)
# ``DenylistShield._findings`` sets every field itself, in ``_UnfrozenFinding``'s slots: a
# field added to Finding must be added there too.
if (
    tuple(f.name for f in fields(Finding)) != _FINDING_FIELDS
    or Finding.__slots__ != _FINDING_FIELDS
):  # pragma: no cover
    raise ImportError("shields.base.Finding changed: update DenylistShield._findings")
_new = object.__new__


class _UnfrozenFinding:
    """Finding's slots, without the frozen ``__setattr__``: ``DenylistShield._findings`` fills
    one in with plain attribute stores, then makes it a ``Finding`` by assigning its
    ``__class__``, which the interpreter allows only between classes of the same layout (the
    same slots, no ``__dict__``)."""

    __slots__ = _FINDING_FIELDS


# Entries of several words are also matched with their words run together ("buildabomb",
# "makeNapalm"), as a whole word, from this many letters and digits on: shorter ones ("makeit")
# are words of their own too often.
_RUN_TOGETHER_MIN = 6


def _spaced_key(key: str) -> str:
    """An entry as it reads in a collapsed run: its letters and digits only."""
    return "".join(c for c in key if c.isalnum())


# ``open_from``'s remembered steps per key set (``shields.open_tables``): from held texts of at
# most a key's length, so a few MB at most before they are forgotten.
_OPEN_MEMO_ENTRIES = 16384
# The longest piece whose held text is worked out a character at a time (a token's); a longer
# one (a bulk read) is searched at once.
_STEP_PIECE = 16


def _trie_pattern(keys: list[str]) -> str:
    """A pattern for the non-empty prefixes of ``keys``: their trie, where a match may stop at
    any node. At each character a key continues with one branch at most (the branches begin
    with different characters), so matching it never backtracks more than a key's length."""
    trie: dict[str, Any] = {}
    for key in keys:
        node = trie
        for char in key:
            node = node.setdefault(char, {})

    def emit(node: dict[str, Any]) -> str:
        branches = [
            re.escape(char) + (f"(?:{emit(child)})?" if child else "")
            for char, child in sorted(node.items())
        ]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return emit(trie)


class _Keys:
    """One automaton of keys and what searching it fast and holding back soundly takes: the
    RE2 prefilter (a short list) or ahocorasick_rs (a long one), the keys' prefixes for
    ``open_from`` and its remembered answers."""

    def __init__(
        self,
        entries: list[tuple[str, str, bool]],
        exact: dict[str, tuple[str, bool]] | None = None,
        joined: frozenset[str] = frozenset(),
    ) -> None:
        """``entries``: (key, label, is_word), the key already in the view it is matched in.
        ``exact``: for keys in the joined view, each entry as it is written (normalized) ->
        (label, is_word), and ``joined``: the entries with joiners read as spaces; then a
        match may be a looser reading (``shields.joined.relaxed_reading``), which is a whole
        word, so every key needs the look-ahead of a word."""
        automaton = ahocorasick.Automaton()
        longest = 0
        self.exact = exact
        self.joined = joined
        relaxed = exact is not None
        for key, label, is_word in entries:
            if key in automaton:
                # Several entries can normalize to the same key ("Bomb", "bomb"); the first
                # label wins. A phrase is the weaker condition: it matches wherever the word does.
                _, _, was_word = automaton.get(key)
                automaton.add_word(key, (label, len(key), was_word and is_word))
                continue
            automaton.add_word(key, (label, len(key), is_word))
            longest = max(longest, len(key) + (1 if is_word or relaxed else 0))
        automaton.make_automaton()
        self.automaton = automaton
        keys: list[str] = list(automaton.keys())
        self.longest_key = max(map(len, keys))
        self.prefilter: Any = None
        self.bulk: Any = None
        # The chunk sizes from which ``_feed_bulk`` and ``_feed_prefiltered`` take over from
        # pyahocorasick's iterator (a list has one or the other; "never" for the other one).
        self.bulk_from = self.prefilter_from = _NEVER
        self.bulk_values: list[tuple[str, int, bool]] = []
        self.bulk_ascii = False
        if sum(map(len, keys)) <= _PREFILTER_MAX_CHARS:
            options = re2.Options()
            options.case_sensitive = True  # keys and text are both case-folded already
            self.prefilter = re2.compile("|".join(re2.escape(key) for key in keys), options)
            self.prefilter_from = _PREFILTER_FROM
        else:
            self.bulk_from = _BULK_FROM
            self.bulk_values = [automaton.get(key) for key in keys]
            # ASCII keys are searched in ``ascii_bytes`` of the text (one byte per character,
            # so the offsets are the text's; a non-ASCII character, 0x80, matches no key).
            self.bulk_ascii = all(key.isascii() for key in keys)
            if self.bulk_ascii:
                self.bulk = ahocorasick_rs.BytesAhoCorasick([key.encode("ascii") for key in keys])
            else:
                self.bulk = ahocorasick_rs.AhoCorasick(keys)
        # A word needs one character of look-ahead to know its right boundary.
        self.max_match = longest
        self.context = longest + 1
        # Whether any key occurs in a whole text at all (``DenylistShield.screen``): the bulk
        # automaton of a long list, a small one of the same keys for a short list.
        self.any_ascii = all(key.isascii() for key in keys)
        self.any_of: Any = self.bulk
        if self.any_of is None:
            self.any_of = (
                ahocorasick_rs.BytesAhoCorasick([key.encode("ascii") for key in keys])
                if self.any_ascii
                else ahocorasick_rs.AhoCorasick(keys)
            )
        # Whether a key may occur in the view of an ASCII text, searched in its folded bytes
        # before their runs of spaces are collapsed (``DenylistShield.screen``): each space of
        # a key matches a run of them. A short list of ASCII keys only (an RE2 alternation).
        self.folded_any: Searcher | None = None
        if self.prefilter is not None and self.any_ascii:
            spaced = ["(?: +)".join(map(re2.escape, key.split(" "))) for key in keys]
            pattern = compile_pattern("|".join(spaced), case_sensitive=True, capture=False)
            self.folded_any = searcher(pattern)
        # Every prefix of every key as one pattern for the end of a text (the trie, every node
        # of it an end): ``open_from``'s search, in C (a short list: a long one walks the trie).
        self.open_pattern: re.Pattern[str] | None = None
        if sum(map(len, keys)) <= _PREFILTER_MAX_CHARS:
            self.open_pattern = re.compile(_trie_pattern(keys) + r"\Z")
        # What a character of the view after a held key prefix leaves held (``open_tables``).
        self.tables = OpenTables(_OPEN_MEMO_ENTRIES)


class DenylistShield(Shield):
    type_name = "denylist"

    def __init__(self, spec: DenylistSpec) -> None:
        super().__init__(spec)
        # Entries are matched in the joined view (``shields.joined``), where a joiner between
        # two words reads as a space and digits as the letters they stand for, and also with
        # their words run together ("buildabomb", a whole word). An entry that begins or ends
        # with a joiner (".onion", "c++") is matched as written, in the normalized view: which
        # of its neighbours a joiner joins is the text's business, not the entry's.
        joined: list[tuple[str, str, bool]] = []
        plain: list[tuple[str, str, bool]] = []
        # The joined view's entries as written (normalized): a match there that is one of
        # them has the entry's own semantics (a phrase is a substring); any other is a looser
        # reading, checked and taken as a whole word only.
        exact: dict[str, tuple[str, bool]] = {}
        for is_word, entries in ((False, spec.phrases), (True, spec.words)):
            for entry in entries:
                key = normalize(entry)[0].strip()
                if key[0] in JOINER_CHARS or key[-1] in JOINER_CHARS:
                    plain.append((key, entry, is_word))
                    continue
                joined.append((joined_view(key), entry, is_word))
                if key in exact:
                    # A phrase is the weaker condition: it matches wherever the word does.
                    label, was_word = exact[key]
                    exact[key] = (label, was_word and is_word)
                else:
                    exact[key] = (entry, is_word)
        run_together: list[tuple[str, str, bool]] = []
        for key, (label, _) in list(exact.items()):
            letters = _spaced_key(key)
            if letters != key and len(letters) >= _RUN_TOGETHER_MIN:
                run_together.append((joined_view(letters), label, True))
                exact.setdefault(letters, (label, True))
        joined_keys = frozenset(joiners_as_spaces(key) for key in exact)
        self._joined = _Keys(joined + run_together, exact, joined_keys) if joined else None
        self._plain = _Keys(plain) if plain else None
        parts = [keys for keys in (self._joined, self._plain) if keys is not None]
        self._max_match = max(keys.max_match for keys in parts)
        self._template = self.finding("", 0, 0)
        # The main key set's remembered ``open_from`` steps (bench/perf/holdback_bench.py forgets
        # them between runs) and which search it got (tests look).
        main = parts[0]
        self._memos = main.tables
        self._prefilter: Any = main.prefilter
        self._bulk: Any = main.bulk
        self._bulk_ascii = main.bulk_ascii
        self._spaced_automaton: Any = None
        self._spaced_gap = spec.spaced_max_gap
        self._spaced_longest = 0
        if spec.spaced_letters:
            self._build_spaced(spec)

    def _build_spaced(self, spec: DenylistSpec) -> None:
        automaton = ahocorasick.Automaton()
        for entry in (*spec.phrases, *spec.words):
            key = _spaced_key(normalize(entry)[0])
            if len(key) >= _SPACED_MIN_LETTERS and key not in automaton:
                automaton.add_word(key, (entry, len(key)))
                self._spaced_longest = max(self._spaced_longest, len(key))
        automaton.make_automaton()
        self._spaced_automaton = automaton
        self._spaced_prefixes: frozenset[str] | None = None
        keys: list[str] = list(automaton.keys())
        if sum(map(len, keys)) <= _PREFILTER_MAX_CHARS:
            self._spaced_prefixes = frozenset(k[:n] for k in keys for n in range(1, len(k) + 1))
        # A spelled-out match spans at most its letters plus a full gap between each two; the
        # view releases its last letter once the character after it is seen.
        spaced = spaced_span(self._spaced_longest, self._spaced_gap) + 1
        self._max_match = max(self._max_match, spaced)

    @property
    def max_match(self) -> int:
        return self._max_match

    def _finding(self, label: str, start: int, end: int) -> Finding:
        """``self.finding(label, start, end)`` at a third of the cost: a deny list of common
        phrases can report thousands of findings per MB, and a frozen dataclass's ``__init__``
        goes through ``object.__setattr__`` for each of its fields (and setting them through
        their slot descriptors, ``__set__`` calls, still costs twice this). The finding is
        filled in as an ``_UnfrozenFinding`` with plain attribute stores, then made a
        ``Finding``. Only the label and the span differ between the findings of a shield; the
        rest is copied from ``_template``."""
        template = self._template
        unfrozen: Any = _new(_UnfrozenFinding)
        unfrozen.shield_id = template.shield_id
        unfrozen.shield_type = template.shield_type
        unfrozen.label = label
        unfrozen.action = template.action
        unfrozen.start = start
        unfrozen.end = end
        unfrozen.placeholder = template.placeholder
        unfrozen.monitor = template.monitor
        unfrozen.digest = template.digest
        unfrozen.__class__ = Finding
        finding: Finding = unfrozen
        return finding

    def scanner(self) -> Scanner:
        return _DenylistScanner(self)

    def screen(self, text: WholeText) -> bool:
        # Every finding is a key found in the view its key set reads (the joined view or the
        # normalized text), text under a bidi override, or a spelled-out entry: a text with
        # none of the three holds nothing. Keys are searched for in the views themselves.
        if self._spaced_automaton is not None:
            return True
        if text.raw.isascii():
            found = self._folded_screen(text.ascii)
            if found is not None:
                return found
        norm, normalizer = text.normalized()
        if normalizer.overridden:
            return True
        joined, plain = self._joined, self._plain
        view: bytes | None = None
        if joined is not None:
            if joined.any_ascii:
                view = normalizer.ascii_view(norm)
                if joined.any_of.find_matches_as_indexes(view.translate(VIEW_BYTES)):
                    return True
            elif joined.any_of.find_matches_as_indexes(joined_view(norm)):
                return True
        if plain is not None:
            if plain.any_ascii:
                if view is None:
                    view = normalizer.ascii_view(norm)
                if plain.any_of.find_matches_as_indexes(view):
                    return True
            elif plain.any_of.find_matches_as_indexes(norm):
                return True
        return False

    def _folded_screen(self, raw: bytes) -> bool | None:
        """``screen`` for an ASCII text (``raw``, its bytes) without normalizing it: its view is
        its folded bytes with runs of spaces collapsed (``fold_ascii``), so a key found in the
        view is found in the folded bytes with a run of spaces for each of its spaces (and in
        their joined view, for the joined keys). None when that does not hold (a control
        character, dropped from the view) or a key set has no such search (a long list)."""
        joined, plain = self._joined, self._plain
        if (joined is not None and joined.folded_any is None) or (
            plain is not None and plain.folded_any is None
        ):
            return None
        folded = fold_ascii(raw)
        if b"\x00" in folded:
            return None
        size = len(folded)
        if joined is not None:
            assert joined.folded_any is not None
            if joined.folded_any(folded.translate(VIEW_BYTES), 0, size)[0][0] >= 0:
                return True
        if plain is not None:
            assert plain.folded_any is not None
            if plain.folded_any(folded, 0, size)[0][0] >= 0:
                return True
        return False


class _DenylistScanner(Scanner):
    """The text in the joined view for the entries matched there (``_joined``), as it is for
    the others (``_plain``), and spelled out (``_spaced``)."""

    __slots__ = (
        "_joined",
        "_plain",
        "_shield",
        "_spaced",
        "_spaced_tail",
        "_track",
        "open_at",
    )

    def __init__(self, shield: DenylistShield) -> None:
        self._shield = shield
        self._joined = None if shield._joined is None else _KeyScanner(shield, shield._joined)
        self._plain = None if shield._plain is None else _KeyScanner(shield, shield._plain)
        self._spaced: SpacedView | None = None
        self._spaced_tail = ""
        if shield._spaced_automaton is not None:
            self._spaced = SpacedView(shield._spaced_gap)
        self._track = False
        self.open_at = NOTHING_OPEN

    def track_open(self) -> Sequence[OpenAt]:
        parts = [keys for keys in (self._joined, self._plain) if keys is not None]
        for keys in parts:
            keys.track()
        if self._spaced is None:
            return parts  # read as they are: nothing to publish here
        self._track = True  # the spelled-out view's candidate joins theirs in ``open_at``
        return (self,)

    def feed(self, chunk: Chunk) -> list[Finding]:
        norm = chunk.norm
        if not norm:
            return []  # nothing to search, and nothing a pending word could learn
        shield = self._shield
        normalizer = chunk.normalizer
        # Text under a bidi override displays in an order the view does not hold: an entry
        # may show on screen there (``StreamNormalizer.overridden``).
        findings = [shield.finding(OVERRIDE_LABEL, *span) for span in normalizer.overridden]
        joined = self._joined
        if joined is not None:
            joined.feed(joined_view(norm), norm, normalizer, findings)
        plain = self._plain
        if plain is not None:
            plain.feed(norm, None, normalizer, findings)
        spaced = self._spaced
        if spaced is not None:
            self._scan_spaced(spaced, spaced.feed(norm), normalizer, findings)
        if self._track:
            assert spaced is not None  # tracked here only then (``track_open``)
            at = self._spaced_open(spaced)
            for keys in (joined, plain):
                if keys is not None and keys.open_at < at:
                    at = keys.open_at
            self.open_at = at
        return findings

    def open_from(self, end: int, window: int) -> int:
        pos = end
        joined = self._joined
        if joined is not None:
            pos = joined.open_from()
        plain = self._plain
        if plain is not None:
            pos = min(pos, plain.open_from())
        spaced = self._spaced
        if spaced is None:
            return pos
        return min(pos, self._spaced_open(spaced))

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        found: list[Finding] = []
        joined = self._joined
        if joined is not None:
            joined.finish(normalizer, found)
        plain = self._plain
        if plain is not None:
            plain.finish(normalizer, found)
        spaced = self._spaced
        if spaced is not None:
            self._scan_spaced(spaced, spaced.finish(), normalizer, found)
        return found

    def _spaced_open(self, spaced: SpacedView) -> int:
        """Where a spelled-out match may still start: in the view not released yet (a run that
        may still grow), or where the released view ends with the beginning of an entry."""
        at = spaced.undecided_from
        view = self._spaced_tail  # the released view's last characters, a key's length less one
        shield = self._shield
        prefixes = shield._spaced_prefixes
        for start in range(len(view)):
            rest = view[start:]
            if rest in prefixes if prefixes is not None else shield._spaced_automaton.match(rest):
                return min(at, spaced.norm_index(spaced.view_len - len(view) + start))
        return at

    def _scan_spaced(
        self, spaced: SpacedView, view: str, normalizer: StreamNormalizer, found: list[Finding]
    ) -> None:
        """Matches the newly released ``view`` text of the collapsed view."""
        shield = self._shield
        longest = shield._spaced_longest
        if view:
            text = self._spaced_tail + view
            offset = spaced.view_len - len(text)  # view index of text[0]
            fresh = len(self._spaced_tail)
            automaton = shield._spaced_automaton
            assert automaton is not None
            for last, (label, length) in automaton.iter(text):
                if last < fresh:
                    continue  # reported with the previous piece
                last += offset
                start, end = spaced.norm_span(last + 1 - length, last + 1)
                # As long as its key, the match is plain text: the plain view has it already.
                if end - start > length:
                    orig_start, orig_end = normalizer.orig_span(start, end)
                    found.append(shield._finding(label, orig_start, orig_end))
            self._spaced_tail = text[-(longest - 1) :] if longest > 1 else ""
        spaced.forget_before(spaced.view_len - longest)


class _KeyScanner:
    """The keys of one ``_Keys`` over one view of the text (the normalized text, or the joined
    view: both have the normalized text's offsets), fed in pieces. Word boundaries are read in
    the normalized text (a letter or digit is a word character: "_" and "@" are not)."""

    __slots__ = (
        "_keys",
        "_pending",
        "_read_tail",
        "_shield",
        "_state",
        "_tail",
        "_tail_start",
        "_track",
        "open_at",
    )

    def __init__(self, shield: DenylistShield, keys: _Keys) -> None:
        self._shield = shield
        self._keys = keys
        # Every chunk is searched with a fresh iterator over the tail plus the chunk, never
        # pyahocorasick's resumable ``iter().set()``: with characters above U+FFFF (an emoji)
        # set() corrupts the heap (WojciechMula/pyahocorasick#221), and a reply is hostile text.
        # The last few characters of the view, and of the normalized text they read (for
        # word-boundary checks on both sides, and to tell an entry from a looser reading).
        self._tail = ""
        self._read_tail = ""
        self._tail_start = 0
        # Word matches whose right boundary is the next, not yet seen, character.
        self._pending: list[tuple[int, int, str]] = []
        # Where the longest suffix of the text that is a prefix of a key starts (``open_from``;
        # kept up to date by ``feed`` once tracked, with the table of that suffix).
        self.open_at = 0
        self._track = False
        self._state: State | None = None  # that suffix's, once tracked

    def track(self) -> None:
        """Keep ``open`` up to date in every feed (``Scanner.track_open``)."""
        self._track = True
        self._state = self._keys.tables.state("", 0)

    def feed(
        self,
        piece: str,
        read: str | None,
        normalizer: StreamNormalizer,
        findings: list[Finding],
    ) -> None:
        """Searches the next ``piece`` of the view, which reads the normalized text ``read``
        (None: the view is the normalized text)."""
        keys = self._keys
        tail = self._tail
        text = tail + piece
        read_text = text if read is None else self._read_tail + read
        base = self._tail_start
        end_of_text = base + len(text)
        if self._pending:
            pending, self._pending = self._pending, []
            for start, end, label in pending:
                self._check_word(
                    read_text, base, start, end, label, end_of_text, findings, normalizer
                )
        size = len(piece)
        state: State | None = None  # after the piece, when known from remembered steps
        if size >= keys.bulk_from:
            self._feed_bulk(
                text, read_text, base, len(tail), end_of_text, findings, normalizer, read is None
            )
        elif size >= keys.prefilter_from:
            self._feed_prefiltered(
                text, read_text, base, len(tail), end_of_text, findings, normalizer
            )
        else:
            if size <= _STEP_PIECE and self._state is not None:
                # Tracked: the remembered steps through the piece. A step into a state where a
                # key ends is never remembered (``_learn``), so when every step is known no key
                # ends in the piece, and the automaton need not run.
                state = self._state
                try:
                    for char in piece:
                        state = state[char]
                except KeyError:
                    state = None
            if state is None:
                # The tail holds the longest key: every occurrence ending in the new text is
                # found; those ending inside the tail were reported by the previous chunk.
                # Once tracked, only from the open candidate: an occurrence that ends in the
                # new text begins with a suffix of the text before it that is a path of the
                # trie, and none begins before the longest (nor before the tail, which is
                # longer than any key).
                fresh = len(tail)
                first = self.open_at - base if self._track else 0
                for last, (label, length, is_word) in keys.automaton.iter(text, first):
                    if last < fresh:
                        continue
                    end = base + last + 1
                    self._hit(
                        read_text,
                        base,
                        end - length,
                        end,
                        label,
                        is_word,
                        end_of_text,
                        findings,
                        normalizer,
                    )
        keep = keys.context
        if len(text) > keep:
            self._tail = text[-keep:]
            self._read_tail = read_text[-keep:]
            self._tail_start = end_of_text - keep
        else:
            self._tail = text
            self._read_tail = read_text
        if self._track:
            if state is None:
                state = self._learn(piece, text)
            self._state = state
            self.open_at = end_of_text - state.held

    def _learn(self, piece: str, text: str) -> State:
        """The state after ``piece``, the end of ``text``, from the held text's: worked out a
        character at a time and remembered (a long piece, a bulk read's, at once and not
        remembered: only its end can be held)."""
        keys = self._keys
        tables = keys.tables
        if len(piece) > _STEP_PIECE:
            now = text[-keys.longest_key :]
            held = now[self._open_in(now) :]
            return tables.state(held, len(held))
        state = self._state
        assert state is not None  # tracked
        automaton = keys.automaton
        for char in piece:
            after = state.get(char)
            if after is None:
                now = state.key + char
                held = now[self._open_in(now) :]
                # A key ends here when one is a suffix of the held text (a key is a path of
                # the trie, so it is never longer): such a step is not remembered (``feed``).
                if any(automaton.exists(held[i:]) for i in range(len(held))):
                    after = tables.state(held, len(held))
                else:
                    after = tables.remember(state, char, held, len(held))
            state = after
        return state

    def _open_in(self, text: str) -> int:
        """Where the longest suffix of ``text`` that is a path of the trie starts (the
        pattern looks neither behind nor at a start, so nothing before ``text`` matters)."""
        pattern = self._keys.open_pattern
        if pattern is None:
            return self._open_prefix(text)
        found = pattern.search(text)
        return len(text) if found is None else found.start()

    def finish(self, normalizer: StreamNormalizer, found: list[Finding]) -> None:
        pending, self._pending = self._pending, []
        found += [self._found(label, start, end, normalizer) for start, end, label in pending]

    def open_from(self) -> int:
        """``open`` worked out from the tail (a scanner not tracked: ``feed`` keeps it)."""
        if self._track:
            return self.open_at
        tail = self._tail
        start = self._tail_start
        end_of_text = start + len(tail)
        # The tail holds the longest key: enough for the longest suffix that can be a path.
        pos = self.open_at
        if pos < end_of_text - self._keys.longest_key:
            pos = end_of_text - self._keys.longest_key
        if pos < start:
            pos = start
        self.open_at = pos = pos + self._open_in(tail[pos - start :])
        return pos

    def _open_prefix(self, text: str) -> int:
        """``_open_in`` for a long list (no pattern): the leftmost start, among the last
        ``longest_key`` characters, whose suffix is a path of pyahocorasick's trie."""
        size = len(text)
        pos = max(0, size - self._keys.longest_key)
        match = self._keys.automaton.match
        while pos < size and not match(text[pos:]):
            pos += 1
        return pos

    def _feed_prefiltered(
        self,
        text: str,
        read_text: str,
        base: int,
        fresh: int,
        end_of_text: int,
        findings: list[Finding],
        normalizer: StreamNormalizer,
    ) -> None:
        """The automaton over the places of ``text`` where the prefilter found a key.

        RE2 reports leftmost, non-overlapping matches, so a key occurrence it skipped starts
        inside a match it did report; each match ``[p, q)`` is therefore widened to
        ``[p, q + longest key - 1)``, which holds every occurrence starting in it, and the
        automaton runs over the union of these windows. Occurrences that end inside the tail
        (``text[:fresh]``) were reported by the previous chunk.
        """
        keys = self._keys
        automaton = keys.automaton
        reach = keys.longest_key - 1
        size = len(text)
        windows: list[tuple[int, int]] = []
        for match in keys.prefilter.finditer(text):
            low, high = match.start(), min(size, match.end() + reach)
            if windows and low <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(windows[-1][1], high))
            else:
                windows.append((low, high))
        for low, high in windows:
            for last, (label, length, is_word) in automaton.iter(text, low, high):
                if last < fresh:
                    continue
                end = base + last + 1
                self._hit(
                    read_text,
                    base,
                    end - length,
                    end,
                    label,
                    is_word,
                    end_of_text,
                    findings,
                    normalizer,
                )

    def _feed_bulk(
        self,
        text: str,
        read_text: str,
        base: int,
        fresh: int,
        end_of_text: int,
        findings: list[Finding],
        normalizer: StreamNormalizer,
        is_norm: bool,
    ) -> None:
        """Every key occurrence in ``text`` (overlapping ones too) by ahocorasick_rs.

        Occurrences that end inside the tail (``text[:fresh]``) were reported by the previous
        chunk; the tail holds the longest key, so every occurrence that ends in the new text is
        found.
        """
        keys = self._keys
        haystack: Any = text
        if keys.bulk_ascii:
            # A whole text (no tail) is searched in the bytes the normalizer built its view
            # from, rather than encoded again; a stream's chunk is small, encoded with its tail.
            if fresh:
                haystack = ascii_bytes(text)
            elif is_norm:
                haystack = normalizer.ascii_view(text)
            else:  # the joined view of the normalizer's bytes: one translate, in C
                haystack = normalizer.ascii_view(read_text).translate(VIEW_BYTES)
        matches = keys.bulk.find_matches_as_indexes(haystack, overlapping=True)
        values = keys.bulk_values
        exact = keys.exact
        if len(matches) < _WALK_FROM:
            # A stream's chunk: a match or two, as a rule, which ``orig_span`` maps for less
            # than setting up a walk costs.
            for index, low, high in matches:
                if high <= fresh:
                    continue
                label, _, is_word = values[index]
                self._hit(
                    read_text,
                    base,
                    base + low,
                    base + high,
                    label,
                    is_word,
                    end_of_text,
                    findings,
                    normalizer,
                )
            return
        labels: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        for index, low, high in matches:
            if high <= fresh:
                continue
            label, _, is_word = values[index]
            start, end = base + low, base + high
            if exact is not None:
                reading = self._reading(read_text, base, start, end)
                if reading is None:
                    continue
                label, is_word = reading or (label, True)
            if is_word and not self._whole_word(read_text, base, start, end, label, end_of_text):
                continue
            labels.append(label)
            starts.append(start)
            ends.append(end)
        # A list of common phrases can match thousands of times in a long text: the spans are
        # mapped in one walk over the normalizer's breakpoints (they come in the order of their
        # ends), not with two bisections each.
        starts, ends = normalizer.orig_spans(starts, ends)
        findings += map(self._shield._finding, labels, starts, ends)

    def _hit(
        self,
        read_text: str,
        base: int,
        start: int,
        end: int,
        label: str,
        is_word: bool,
        end_of_text: int,
        findings: list[Finding],
        normalizer: StreamNormalizer,
    ) -> None:
        """A key found at ``[start, end)``: reported if it is an entry, or a looser reading
        of one that stands as a whole word (see ``_reading``)."""
        if self._keys.exact is not None:
            reading = self._reading(read_text, base, start, end)
            if reading is None:
                return
            label, is_word = reading or (label, True)
        if is_word:
            self._check_word(read_text, base, start, end, label, end_of_text, findings, normalizer)
        else:
            findings.append(self._found(label, start, end, normalizer))

    def _reading(
        self, read_text: str, base: int, start: int, end: int
    ) -> tuple[str, bool] | tuple[()] | None:
        """What a key found in the joined view at ``[start, end)`` is in the normalized text:
        an entry as written, (label, is_word); a looser reading, () (a whole word then, the
        key's label); or None, another text that only reads alike ("mail" for "mall")."""
        keys = self._keys
        exact = keys.exact
        assert exact is not None
        written = read_text[start - base : end - base]
        entry = exact.get(written)
        if entry is not None:
            return entry
        return () if relaxed_reading(written, keys.joined) else None

    def _check_word(
        self,
        text: str,
        base: int,
        start: int,
        end: int,
        label: str,
        end_of_text: int,
        findings: list[Finding],
        normalizer: StreamNormalizer,
    ) -> None:
        if self._whole_word(text, base, start, end, label, end_of_text):
            findings.append(self._found(label, start, end, normalizer))

    def _whole_word(
        self, text: str, base: int, start: int, end: int, label: str, end_of_text: int
    ) -> bool:
        """Whether the word match ``[start, end)`` stands between word boundaries. One whose
        right boundary is the next, not yet seen, character waits in ``_pending`` (False)."""
        if start > 0 and text[start - 1 - base].isalnum():
            return False
        if end >= end_of_text:
            self._pending.append((start, end, label))
            return False
        return not text[end - base].isalnum()

    def _found(self, label: str, start: int, end: int, normalizer: StreamNormalizer) -> Finding:
        orig_start, orig_end = normalizer.orig_span(start, end)
        return self._shield._finding(label, orig_start, orig_end)


register(DenylistSpec, DenylistShield)
