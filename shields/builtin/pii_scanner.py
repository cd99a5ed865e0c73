"""The ``pii`` shield's engine: an incremental scanner that finds candidate starts in the
normalized text and tries the recognizers of the entities in use there (``pii_entities``).

How text is scanned, cheaply and incrementally:

- Every entity but e-mail contains an ASCII digit, so the scanner jumps from digit run to digit
  run (one C-level search), and prose without digits costs nothing more than that search;
  short numbers on their own ("in 2023,") are passed by one more regex match. A run yields a
  few candidate starts (``Start``: the run itself at a word boundary, a "+" or "(" just before
  it, two letters before it, the left end of a hex-and-colon run), and the recognizers for each
  start are tried in their priority order (``RECOGNIZERS``). The first that accepts wins and the
  scan resumes after its match.
- Entities found from an "@" (e-mail addresses) are found with ``str.find``, their recognizers
  looking back for the local part.
- A recognizer looks at no more than its entity's reach from its start. In a stream, when it
  would need a character that has not arrived yet, the text raises ``_NeedMore`` and the start
  is tried again on the next feed; the scanner keeps only the text from the oldest undecided
  position (plus a little context before it). So a stream, in any chunking, gives exactly the
  whole-text findings, each as soon as it is decidable and never later than ``max_match``
  normalized characters past its first character.

Adaptive hold-back (``open_from``): every entity is a run of the characters it can contain, so
text is held only from where such a run could still begin: the first undecided digit run, less
the two characters of a "+(" lead or a country code, and less the hex-and-colon run before it
(``Start.HEX_COLON``); and the run of local-part characters at the end of the text (or before
an undecided "@"), which a later "@" would make an e-mail address — in prose, the last word.
The stream guard asks after every token: the scanner keeps the answer in ``open_at`` as it
feeds (``track_open``), in prose from the last characters of the buffer alone; the local-part
run at the end is grown token by token, and what lies before the undecided digit run and "@"
(text that never changes) is worked out once per place (``_open_tracked``).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shields.base import NOTHING_OPEN, Chunk, Finding, OpenAt, Scanner
from shields.builtin.pii_checks import DASHES
from shields.builtin.pii_context import CONTEXT_AFTER, CONTEXT_BEFORE
from shields.builtin.pii_entities import (
    AT_SIGN_RECOGNIZERS,
    RECOGNIZERS,
    AtSignRecognizer,
    Entity,
    Recognizer,
    Start,
)
from shields.builtin.pii_phone import PhoneRules
from shields.builtin.pii_recognizers import EMAIL_LOCAL_MAX, LOCAL_RUN, word_or
from shields.normalize import StreamNormalizer, ascii_bytes

__all__ = ["PiiScanner", "ScanPlan"]

Recognizers = tuple[Recognizer, ...]
# A candidate start (a buffer index) and the recognizers to try there, in priority order.
Candidate = tuple[int, Recognizers]
# (entity, start, end) in normalized offsets -> the shield's finding.
MakeFinding = Callable[[Entity, int, int], Finding]

# The context window after a number ends with its sentence.
_SENTENCE_END = re.compile(r"[.!?\n]")
# Characters kept before the oldest undecided position: context words, the back-reach of a
# start from its digit run (``Start.HEX_COLON``: 45) and an e-mail local part.
_KEEP_BEFORE = 128
_TRIM_SLACK = 1024  # trim the buffer only when this much is droppable: slicing costs a copy

# Digits to 0x01 (and 0x01 itself to 0x02) over ``ascii_bytes``: the next digit is then one
# ``bytes.find``, in C, where a regex search for [0-9] runs in Python's engine.
_DIGITS_TO_MARK = bytes.maketrans(b"0123456789\x01", b"\x01" * 10 + b"\x02")
# Digits to "@": whether a text holds a digit or an "@" is then one ``bytes.find``, in C (UTF-8
# never puts an ASCII byte inside a multi-byte character).
_TRIGGERS_TO_AT = bytes.maketrans(b"0123456789", b"@" * 10)
_DIGITS = re.compile(r"[0-9]*")
# A short number on its own: no recognizer is tried at it (see ``pii_entities``).
_LONE = re.compile(rf"[0-9]{{1,6}}(?![0-9:]|[ .\-/(){DASHES}]{{1,3}}[0-9(])")
_JOINERS = frozenset("-/," + DASHES)
# The characters of a hex-and-colon run (``Start.HEX_COLON``), as a string for ``str.rstrip``.
_HEX_COLON_CHARS = "0123456789abcdef:."
_HEX_COLON = frozenset(_HEX_COLON_CHARS)
_HEX_COLON_MAX = 45  # the longest IPv6 text
# What may come right before a digit run and still be part of the entity: ``Start.LETTERS``
# and ``Start.LEAD``. The hold-back keeps these two characters back for every entity found from
# digit runs (not only when one that starts there is in use): a small, fixed margin.
_LEAD_CHARS = "abcdefghijklmnopqrstuvwxyz+("
# The ASCII characters of an e-mail local part (``LOCAL_RUN``'s ``[\w.%+\-]`` within ASCII):
# an ASCII tail's run of them is one ``str.rstrip``, in C.
_LOCAL_ASCII = string.ascii_letters + string.digits + "_.%+-"
_LOCAL_TAIL = EMAIL_LOCAL_MAX + 1  # the most of that run ``open_from`` looks at


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """What a shield's scanners look for, worked out once from its options: the recognizers
    of the entities in use, by the start they are tried at, in priority order."""

    at_run: Recognizers
    at_run_in_rows: Recognizers  # those of ``at_run`` tried inside a row of numbers
    at_lead: Recognizers
    at_letters: Recognizers
    at_hex_colon: Recognizers
    at_letters_and_hex_colon: Recognizers  # when the two starts fall on one character
    at_sign: tuple[AtSignRecognizer, ...]
    numeric: bool  # any entity found from digit runs
    contexts: Mapping[Entity, re.Pattern[str] | None]  # context words, by entity
    phone_rules: PhoneRules

    @classmethod
    def of(
        cls,
        entities: frozenset[Entity],
        contexts: Mapping[Entity, re.Pattern[str] | None],
        phone_rules: PhoneRules,
        recognizers: Recognizers = RECOGNIZERS,
        at_sign: tuple[AtSignRecognizer, ...] = AT_SIGN_RECOGNIZERS,
    ) -> ScanPlan:
        """The plan for ``entities``, from ``recognizers`` (in priority order) and
        ``at_sign`` (``pii_entities``' by default)."""
        used = [r for r in recognizers if r.entity in entities]

        def at(*starts: Start) -> Recognizers:
            return tuple(r for r in used if not r.starts.isdisjoint(starts))

        run = at(Start.DIGIT_RUN)
        return cls(
            at_run=run,
            at_run_in_rows=tuple(r for r in run if r.in_number_rows),
            at_lead=at(Start.LEAD),
            at_letters=at(Start.LETTERS),
            at_hex_colon=at(Start.HEX_COLON),
            at_letters_and_hex_colon=at(Start.LETTERS, Start.HEX_COLON),
            at_sign=tuple(r for r in at_sign if r.entity in entities),
            numeric=bool(used),
            contexts=contexts,
            phone_rules=phone_rules,
        )


class _NeedMore(Exception):
    """A recognizer needs characters that have not arrived yet."""


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


class PiiScanner(Scanner):
    """One text's scan. To recognizers it is the text they read (``pii_recognizers.ScanText``),
    in buffer indices."""

    __slots__ = (
        "_at",
        "_base",
        "_buf",
        "_done",
        "_final",
        "_finding",
        "_lead",
        "_lead_pos",
        "_local_at",
        "_local_at_pos",
        "_n",
        "_normalizer",
        "_plan",
        "_pos",
        "_tail_before",
        "_tail_run",
        "_tail_track",
        "_track",
        "_tried",
        "open_at",
    )

    def __init__(self, plan: ScanPlan, finding: MakeFinding) -> None:
        self._plan = plan
        self._finding = finding
        self._buf = ""  # normalized text from global offset ``_base``
        self._base = 0
        self._n = 0  # len(_buf) during a scan
        self._final = False
        self._pos = 0  # next global offset to look for a digit run from
        self._at = 0  # next global offset to look for an "@" from
        self._done = 0  # end of the last accepted digit-run match: no start before it
        self._tried = -1  # the last start tried (two digit runs can share a start)
        self._normalizer = StreamNormalizer()  # the text's, during a scan
        self._track = False
        self._tail_track = False  # tracked, with e-mail addresses in use (``_tail_run``)
        self.open_at = NOTHING_OPEN
        # The run of local-part characters at the end of ``_buf`` (at most ``_LOCAL_TAIL``)
        # and the character before it ("" at the start of the text), as ``_local_open`` last
        # found them; -1: not known (a scan changed what is undecided since).
        self._tail_run = -1
        self._tail_before = ""
        # ``open_from``'s answers about the text before a place, which never changes (the
        # text only grows): the lead and hex-and-colon start before ``_lead_pos`` (the undecided
        # digit run stays at one place for several feeds), and the local-part run before
        # ``_local_at_pos`` (an undecided "@"). -1: none known.
        self._lead_pos = self._local_at_pos = -1
        self._lead = self._local_at = 0

    def track_open(self) -> Sequence[OpenAt]:
        self._track = True
        self._tail_track = bool(self._plan.at_sign)
        return (self,)

    def feed(self, chunk: Chunk) -> list[Finding]:
        text = chunk.norm
        if not text:
            return []
        end = self._base + len(self._buf)
        self._buf += text
        run = -1
        if self._tail_track:
            # The run of local-part characters at the end of the text, kept as it grows (a
            # fact about the text alone, whatever a scan decides): the new text's own, or the
            # last one grown by all of it; -1 when not known (non-ASCII text: ``_local_open``
            # works it out from the buffer).
            if text.isascii():
                kept = text.rstrip(_LOCAL_ASCII)
                if kept:
                    run = len(text) - len(kept)
                    self._tail_run, self._tail_before = run, kept[-1]
                else:
                    run = self._tail_run
                    if run >= 0:
                        run += len(text)
                        if run > _LOCAL_TAIL:
                            run = _LOCAL_TAIL
                        self._tail_run = run
            else:
                self._tail_run = -1
        if (
            self._pos == end
            and self._at == end
            and b"@" not in text.encode("utf-8", "surrogatepass").translate(_TRIGGERS_TO_AT)
        ):
            # Nothing pending and no digit or "@" in the new text: nothing can be found yet.
            # Streams mostly arrive like this, a few characters at a time.
            self._pos = self._at = end = end + len(text)
            if len(self._buf) > 4 * _KEEP_BEFORE:  # keep the copy in ``+=`` above short
                self._buf = self._buf[-_KEEP_BEFORE:]
                self._base = end - _KEEP_BEFORE
            if self._track:
                # ``_open_tracked``'s usual answer, inlined (this runs once per token): in
                # prose, the local-part run at the end of the text.
                if run >= 0:
                    before = self._tail_before
                    # ``_local_run_holds_most``, inlined.
                    if (
                        run > EMAIL_LOCAL_MAX
                        or not before
                        or before not in "(:"
                        or (run > 1 and before == "(")
                    ):
                        self.open_at = end - run
                        return []
                self.open_at = self._open_tracked(end)
            return []
        found = self._scan(chunk.normalizer)
        if self._track:
            self.open_at = self._open_tracked(self._base + len(self._buf))
        return found

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        self._final = True
        return self._scan(normalizer)

    def open_from(self, end: int, window: int) -> int:
        plan = self._plan
        if self._pos == end and self._at == end and plan.at_sign:
            local = self._local_open(end)
            if local is not None:
                return local
        at = end
        if plan.numeric:
            # Starts of an undecided digit run, or of one still to come (``_starts``).
            pos = self._pos
            lead = self._run_start(pos, _LEAD_CHARS, 2)
            if plan.at_hex_colon:
                lead = min(lead, self._run_start(pos, _HEX_COLON_CHARS, _HEX_COLON_MAX + 1))
            at = min(at, max(lead, self._done))
        if plan.at_sign:
            # The local part before an undecided "@", or before one still to come.
            local = self._local_start(end)
            if self._at < end:
                local = min(local, self._local_start(self._at))
            at = min(at, local)
        return at

    def _open_tracked(self, end: int) -> int:
        """``open_from(end, 0)`` at the end of the text, from what ``feed`` keeps: the
        local-part run at the end (``_tail_run``), and the answers about the text before the
        undecided digit run and "@", which stay put for several feeds (``_lead_pos``,
        ``_local_at_pos``)."""
        plan = self._plan
        run = self._tail_run
        if plan.at_sign and run < 0:
            return self.open_from(end, 0)  # works the run out (``_local_open``)
        pos = self._pos
        if plan.at_sign:
            at = end - run
            if pos == end and self._at == end and _local_run_holds_most(run, self._tail_before):
                return at
        else:
            at = end
        if plan.numeric:
            # Starts of an undecided digit run, or of one still to come (``_starts``).
            if pos == self._lead_pos:
                lead = self._lead
            else:
                lead = self._run_start(pos, _LEAD_CHARS, 2)
                if plan.at_hex_colon:
                    hex_colon = self._run_start(pos, _HEX_COLON_CHARS, _HEX_COLON_MAX + 1)
                    if hex_colon < lead:
                        lead = hex_colon
                self._lead_pos, self._lead = pos, lead
            done = self._done
            if lead < done:
                lead = done
            if lead < at:
                at = lead
        if plan.at_sign:
            # The local part before an undecided "@".
            sign = self._at
            if sign < end:
                if sign == self._local_at_pos:
                    local = self._local_at
                else:
                    local = self._local_at = self._local_start(sign)
                    self._local_at_pos = sign
                if local < at:
                    at = local
        return at

    def _local_open(self, end: int) -> int | None:
        """``open_from`` when nothing is undecided (prose), or None for the general case: the
        start of the local-part run at the end of the text, found in C (``str.rstrip`` on an
        ASCII tail, else ``LOCAL_RUN`` on the reversed tail), at most ``_LOCAL_TAIL`` back.
        Unless the lead and hex-and-colon runs of the general case may hold more
        (``_local_run_holds_most``): then None."""
        buf = self._buf
        tail = buf[-_LOCAL_TAIL:]
        if tail.isascii():
            run = len(tail) - len(tail.rstrip(_LOCAL_ASCII))
        else:
            found = LOCAL_RUN.match(tail[::-1])
            assert found is not None  # it matches the empty string
            run = found.end()
        before = buf[-run - 1] if run < len(buf) else ""
        self._tail_run, self._tail_before = run, before
        if _local_run_holds_most(run, before):
            return end - run
        return None

    def _run_start(self, stop: int, chars: str, reach: int) -> int:
        """Where the run of ``chars`` (ASCII) that ends at global offset ``stop`` starts, at
        most ``reach`` characters back: one ``str.rstrip``, in C (a stream asks after every
        token)."""
        i = stop - self._base
        run = self._buf[max(0, i - reach) : i]
        return stop - len(run) + len(run.rstrip(chars))

    def _local_start(self, stop: int) -> int:
        """Where the run of local-part characters that ends at global offset ``stop`` starts,
        at most ``_LOCAL_TAIL`` characters back (``str.rstrip`` on ASCII text, else
        ``LOCAL_RUN`` reversed: ``\\w`` is Unicode's ``isalnum()`` and "_")."""
        i = stop - self._base
        run = self._buf[max(0, i - _LOCAL_TAIL) : i]
        if run.isascii():
            return stop - len(run) + len(run.rstrip(_LOCAL_ASCII))
        found = LOCAL_RUN.match(run[::-1])
        assert found is not None  # it matches the empty string
        return stop - found.end()

    def _scan(self, normalizer: StreamNormalizer) -> list[Finding]:
        plan = self._plan
        self._n = len(self._buf)
        self._normalizer = normalizer
        found: list[tuple[Entity, int, int]] = []  # global normalized offsets
        if plan.numeric:
            self._scan_numeric(found)
        else:
            self._pos = self._base + self._n
        if plan.at_sign:
            self._scan_at_signs(found)
        else:
            self._at = self._base + self._n
        drop = min(self._pos, self._at) - _KEEP_BEFORE - self._base
        if drop > _TRIM_SLACK:
            self._buf = self._buf[drop:]
            self._base += drop
        if not found:
            return []
        finding = self._finding
        return [finding(entity, *normalizer.orig_span(start, end)) for entity, start, end in found]

    # ---- the text, as recognizers read it (``ScanText``)

    @property
    def buf(self) -> str:
        return self._buf

    @property
    def phone_rules(self) -> PhoneRules:
        return self._plan.phone_rules

    def char(self, i: int) -> str:
        """The character at buffer index ``i``; "" past the end of a finished text."""
        if i < self._n:
            return self._buf[i]
        if self._final:
            return ""
        raise _NeedMore

    def is_word(self, i: int) -> bool:
        return word_or(self.char(i), "")

    def decidable(self, start: int, run_end: int, reach: int) -> None:
        """Raises ``_NeedMore`` unless the candidate at ``start`` can be decided now.

        ``run_end`` is where the characters the recognizer's pattern can consume stop; the
        pattern peeks at most two characters past them, and never reads past ``start + reach``.
        """
        if not (self._final or self._n >= start + reach or run_end + 2 <= self._n):
            raise _NeedMore

    def context(self, entity: Entity, start: int, end: int) -> bool:
        """Whether a context word of ``entity`` comes just before ``start`` or just after
        ``end``, in the same sentence. Raises ``_NeedMore`` while the window after ``end`` is
        still arriving: the candidate is undecided (held) until the window has passed, and
        decided the same way in every chunking of the text."""
        pattern = self._plan.contexts.get(entity)
        if pattern is None:
            return False
        buf = self._buf
        if pattern.search(buf, max(0, start - CONTEXT_BEFORE), start) is not None:
            return True
        stop = min(end + CONTEXT_AFTER, self._n)
        sentence = _SENTENCE_END.search(buf, end, stop)
        if sentence is not None:
            stop = sentence.start()
        elif stop < end + CONTEXT_AFTER and not self._final:
            raise _NeedMore
        return pattern.search(buf, end, stop) is not None

    def spread_out(self, start: int, end: int) -> bool:
        """Whether a space inside the span stands for a run of whitespace in the original:
        numbers in aligned columns ("316     132    9631") are not one number."""
        normalizer, base, buf = self._normalizer, self._base, self._buf
        space = buf.find(" ", start, end)
        while space >= 0:
            if normalizer.orig_start(base + space + 1) - normalizer.orig_start(base + space) > 1:
                return True
            space = buf.find(" ", space + 1, end)
        return False

    # ---- candidates found from digit runs

    def _scan_numeric(self, found: list[tuple[Entity, int, int]]) -> None:
        buf, base = self._buf, self._base
        i = self._pos - base
        find_digit = ascii_bytes(buf).translate(_DIGITS_TO_MARK).find
        while True:
            digit = find_digit(b"\x01", i)
            if digit < 0:
                self._pos = base + self._n
                return
            # Most numbers in prose are short and alone ("in 2023,"): the quick way past them.
            # (Unless letters before one may be a ``Start.LETTERS`` start, "gb82west...", or a
            # colon or dot a ``Start.HEX_COLON`` one, "::2".)
            lone = _LONE.match(buf, digit)
            if (
                lone is not None
                and (lone.end() + 4 <= self._n or self._final)
                and not (digit > 0 and ("a" <= buf[digit - 1] <= "z" or buf[digit - 1] in ":."))
            ):
                i = lone.end()
                continue
            tried = self._tried
            try:
                for start, recognizers in self._starts(digit):
                    if base + start < self._done or base + start <= tried:
                        continue
                    tried = base + start
                    hit = self._recognize(start, recognizers)
                    if hit is not None:
                        entity, end = hit
                        found.append((entity, base + start, base + end))
                        self._done = base + end
                        break
            except _NeedMore:
                self._pos = base + digit  # this run is tried again on the next feed
                return
            self._tried = tried
            run = _DIGITS.match(buf, digit)
            assert run is not None
            if run.end() == self._n and not self._final:
                # The run may go on in the next chunk: look at it again from its start then,
                # as a whole text would (its starts are not tried twice).
                self._pos = base + digit
                return
            i = max(run.end(), self._done - base)

    def _starts(self, digit: int) -> list[Candidate]:
        """Candidate starts for the digit run at ``digit``, in text order."""
        buf, plan = self._buf, self._plan
        before = buf[digit - 1] if digit > 0 else " "
        two = buf[digit - 2] if digit > 1 else " "
        starts: list[Candidate] = []
        if before.isalnum() or before == "_":
            # Inside a word: only two letters ("de89") or the hex digits of a hex-and-colon run
            # ("fe80::") can start before the digit.
            if plan.at_hex_colon and before in _HEX_COLON:
                self._hex_colon_start(digit, starts)
            if (
                plan.at_letters
                and "a" <= before <= "z"
                and "a" <= two <= "z"
                and (digit == 2 or not _is_word_char(buf[digit - 3]))
            ):
                if starts and starts[0][0] == digit - 2:
                    starts[0] = (digit - 2, plan.at_letters_and_hex_colon)
                else:
                    starts.append((digit - 2, plan.at_letters))
                    starts.sort(key=_position)
            return starts
        if before in ":.":
            if plan.at_hex_colon:
                self._hex_colon_start(digit, starts)
            if two.isdigit():
                return starts  # "3.14", "10:30": the rest of a number that started before
        elif before in _JOINERS and two.isalnum():
            return starts  # "2023-10", "build-1234": the rest of a number or identifier
        elif before in _JOINERS:
            return starts  # "-2147483647": a minus sign; no entity starts with one
        elif plan.at_lead and before in "+(":
            # "+1 ...", "(07) ...", "(+44) ...": the lead is part of the entity.
            edge = digit - 1
            if edge > 0 and buf[edge - 1] in "+(":
                edge -= 1
            if edge == 0 or not _is_word_char(buf[edge - 1]):
                starts.append((edge, plan.at_lead))
        # A short number on its own ("in 2023,", "page 12") is none of the entities: skip the
        # recognizers, once enough of what follows it is known.
        lone = _LONE.match(buf, digit)
        if lone is None or not (self._final or lone.end() + 4 <= self._n):
            recognizers = plan.at_run
            if before == " " and two.isdigit() and self._base + digit - 1 != self._done:
                # In the middle of a row of numbers ("12 4111 ...", "3704 0044 0532"): only
                # recognizers ``in_number_rows`` (a phone number starts at the row's start, or
                # right after the match before it).
                recognizers = plan.at_run_in_rows
            starts.append((digit, recognizers))
        return starts

    def _hex_colon_start(self, digit: int, starts: list[Candidate]) -> None:
        """The left end of the hex-and-colon run around a digit: "fe80::1", "::ffff:1.2.3.4"."""
        buf = self._buf
        start = digit
        colon = False
        while start > 0 and digit - start < _HEX_COLON_MAX and buf[start - 1] in _HEX_COLON:
            start -= 1
            colon = colon or buf[start] == ":"
        if buf[digit - 1] == "." and not colon:
            return  # dots come only after a colon in an IPv6 address
        if start < digit and (start == 0 or not word_or(buf[start - 1], ":.")):
            starts.append((start, self._plan.at_hex_colon))

    def _recognize(self, start: int, recognizers: Recognizers) -> tuple[Entity, int] | None:
        for recognizer in recognizers:
            end = recognizer.find(self, start)
            # "5551234567@sms.example": the digits are the local part of an e-mail address.
            if end is not None and self.char(end) != "@":
                return recognizer.entity, end
        return None

    # ---- candidates found from an "@"

    def _scan_at_signs(self, found: list[tuple[Entity, int, int]]) -> None:
        buf, base = self._buf, self._base
        i = self._at - base
        while True:
            at = buf.find("@", i)
            if at < 0:
                self._at = base + self._n
                return
            try:
                for recognizer in self._plan.at_sign:
                    span = recognizer.find(self, at)
                    if span is not None:
                        found.append((recognizer.entity, base + span[0], base + span[1]))
                        break
            except _NeedMore:
                self._at = base + at
                return
            i = at + 1


def _local_run_holds_most(run: int, before: str) -> bool:
    """Whether, with nothing undecided, ``open_from`` is the start of the local-part run at the
    end of the text (``run`` characters, after ``before``; "" at the start of the text).

    The general case also holds the lead of a digit run still to come (the two characters
    before the end that are lowercase letters, "+" or "(") and its hex-and-colon run. Every
    character of theirs but "(" and ":" is a local-part one, so they reach no further back than
    the local-part run unless it comes after a "(" or a ":" — and, after a "(", only when it is
    shorter than two characters (the lead reaches two back). A run longer than a local part is
    held whole anyway."""
    return run > EMAIL_LOCAL_MAX or not before or before not in "(:" or (run > 1 and before == "(")


def _position(candidate: Candidate) -> int:
    return candidate[0]
