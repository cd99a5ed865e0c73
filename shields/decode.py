"""Finding text hidden in an encoding: base64, hex, percent-encoding and named ROT13.

A payload written as ``aWdub3JlIGFsbCBwcmV2aW91cyBpbnN0cnVjdGlvbnM=`` passes every shield that
reads the text as it is, while the model reads it decoded when asked to. ``RunDecoder`` finds
such runs in a text fed piece by piece (a stream, or a whole text fed at once: the same code)
and returns what they decode to as *pieces*, each with the span of the encoded characters it
came from, so that a finding in the decoded text can block or redact them
(``shields.decode_scan`` runs the stage's shields over the pieces).

Where a run is, and what a piece is, depends on the text alone, never on how it was cut into
chunks: a stream and the whole text give the same pieces.

- **base64 and hex** (*alphabet* runs): at least ``MIN_RUN`` characters of the base64
  alphabets, standard and URL-safe together, with up to two ``=``. Runs separated by at most
  ``MAX_GAP`` whitespace characters are one *group* (MIME wraps base64 at 76 characters; a
  payload may be split in two) when the run before the gap could go on (its length a multiple
  of 4, no padding). A group is decoded in pieces of ``PIECE`` alphabet characters from its
  start (a multiple of 4 and of 2: the pieces of one run stay aligned), the last one when the
  group ends, as hex when it is hex (even, hex digits only) and reads as text, else as base64.
- **percent-encoding**: a token (ASCII-whitespace delimited) with at least ``MIN_PERCENT``
  ``%XX`` escapes, decoded in pieces of at most ``PIECE`` characters (never inside an escape).
- **ROT13**, only where the text names it (``rot13``, ``rot-13``, ``caesar``): the rest of that
  line, or the next line when the mention ends its line, at most ``ROT13_SPAN`` characters.
  ROT13 keeps every character in place, so its pieces are the text as it arrives and a
  finding maps to exactly the characters it was found in.

A piece counts only if its bytes are valid UTF-8 (across the pieces of one run) and readable:
the first piece of a run at least ``MIN_DECODED`` characters, every piece at least
``MIN_READABLE`` printable. Binary data (images, digests, random tokens) fails that, so it is
never handed to the shields; a piece that fails starts the run afresh at the next piece.

Bounds, so that a hostile text cannot make decoding expensive: every search is a linear regex
pass or a ``str.find``, and a run that has not ended is held as one piece at most (``PIECE``
characters), so a stream re-reads at most that much per chunk; nesting stops at ``MAX_DEPTH``
levels (``shields.decode_scan``: base64 of hex is decoded, base64 of hex of base64 is not);
and all the decoded text of a text, every level together, is at most ``BUDGET_FACTOR`` times
its length — decoding stops at the piece that would exceed it.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

__all__ = [
    "BUDGET_FACTOR",
    "ENCODINGS",
    "MAX_DEPTH",
    "MAX_GAP",
    "MIN_DECODED",
    "MIN_PERCENT",
    "MIN_READABLE",
    "MIN_RUN",
    "PIECE",
    "ROT13_SPAN",
    "Budget",
    "Decoded",
    "Piece",
    "RunDecoder",
    "decoded_label",
    "decoded_pieces",
    "redecode",
    "split_label",
]

ENCODINGS = ("base64", "hex", "percent", "rot13")
MIN_RUN = 16  # characters of a base64 or hex run: shorter ones are words and numbers
MIN_PERCENT = 3  # %XX escapes in a percent-encoded token
MIN_DECODED = 8  # characters the first piece of a run must decode to
MIN_READABLE = 0.9  # the share of printable characters in a piece
MAX_DEPTH = 2
BUDGET_FACTOR = 2
ROT13_SPAN = 1024  # characters after a mention of ROT13 that are read as ROT13
PIECE = 128  # encoded characters decoded at once: what a stream holds of a run at most
MAX_GAP = 8  # whitespace characters between the runs of a group

_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
# The base64 alphabets, standard and URL-safe together (a run that mixes them is decoded as
# one: the mix is no reason to look away). Hex digits are a subset.
_RUN = re.compile(r"[A-Za-z0-9+/_-]{" + str(MIN_RUN) + r",}")
_MORE = re.compile(r"[A-Za-z0-9+/_-]*")  # a run going on from where the last chunk ended
_PAD = re.compile(r"={0,2}")
_GAP = re.compile(r"\s{1," + str(MAX_GAP) + r"}")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_SPACE = re.compile(r"[ \t\n\r\f\v]")  # what ends a percent-encoded token
_SPACES = " \t\n\r\f\v"
# The text must name ROT13 (or a Caesar shift) for anything to be read as ROT13: every
# stretch of letters is a ROT13 "encoding" of something, so unnamed ones are never decoded.
_ROT13_NAME = re.compile(r"\brot[\s_-]?13\b|\bcaesar\b", re.IGNORECASE)
_ROT13_NAME_CHARS = 8  # a mention cut between chunks: this much of the end is searched again
_ROT13_BLANK = " \t\r:\"'`.-=>"  # what may follow a mention on its line before the payload
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_URLSAFE = str.maketrans("-_", "+/")
_LAYOUT = str.maketrans("", "", "\t\n\r")

ALPHABET, PERCENT, ROT13 = 0, 1, 2  # the lanes: each is read as one text of its own


@dataclass(frozen=True, slots=True)
class Piece:
    """What some encoded characters of the text decode to."""

    start: int  # the encoded characters, in the text fed to the decoder
    end: int
    text: str
    encoding: str  # "base64", "hex", "percent" or "rot13"
    lane: int  # ALPHABET, PERCENT or ROT13
    # It goes on from the lane's previous piece without a break (the next piece of one run).
    joined: bool
    # Decoded character i is encoded character start + i (ROT13).
    linear: bool = False
    # The run ends with this piece: what comes next in the lane is another run.
    ends: bool = False


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one encoded run of a whole text decodes to (``decoded_pieces``)."""

    start: int  # the encoded run, in the original text
    end: int
    text: str
    encoding: str  # "base64", or the chain from the outside in for nested runs: "base64+hex"


class Budget:
    """The decoded characters a text may still produce, shared by every level of decoding."""

    __slots__ = ("left",)

    def __init__(self, left: int = 0) -> None:
        self.left = left

    def take(self, size: int) -> bool:
        if size > self.left:
            self.left = -1  # spent: nothing more is decoded, even a smaller piece
            return False
        self.left -= size
        return True


def _readable(text: str, *, first: bool) -> bool:
    """Decoded text worth showing the shields: mostly printable, and long enough to be text
    when it starts a run."""
    if first and len(text) < MIN_DECODED:
        return False
    laid_out = text.translate(_LAYOUT)  # line breaks and tabs are printable enough
    if laid_out.isprintable():
        return True
    unprintable = sum(1 for ch in laid_out if not ch.isprintable())
    return unprintable <= (1 - MIN_READABLE) * len(text)


def _hex_bytes(run: str) -> bytes | None:
    if len(run) % 2 or not _HEX_DIGITS.issuperset(run):
        return None
    return bytes.fromhex(run)


def _base64_bytes(run: str) -> bytes | None:
    body = run.rstrip("=").translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]  # a stray last character holds no whole byte
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error:
        return None


_DECODERS = {"hex": _hex_bytes, "base64": _base64_bytes}


class _Text:
    """The UTF-8 text of one run, piece by piece: valid across the pieces' borders."""

    __slots__ = ("_utf8", "encoding")

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")

    def decode(self, data: bytes, final: bool) -> str | None:
        try:
            return self._utf8.decode(data, final)
        except UnicodeDecodeError:
            return None


def _fresh(data: bytes, final: bool, encoding: str) -> tuple[_Text, str] | None:
    """A run read from a piece that is not known to continue text: the piece may begin
    inside a character (the run was not text before it), so up to three continuation
    bytes are skipped."""
    skip = 0
    while skip < 3 and skip < len(data) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    text = _Text(encoding)
    decoded = text.decode(data[skip:], final)
    if decoded is None or not _readable(decoded, first=True):
        return None
    return text, decoded


class _Group:
    """Alphabet runs that are read as one: their characters not yet decoded, with where
    each stretch of them is in the text."""

    __slots__ = ("_at", "chars", "size", "spans", "text")

    def __init__(self) -> None:
        self.chars = ""  # from ``_at`` on: not decoded yet
        self._at = 0
        self.spans: deque[list[int]] = deque()  # [start, end] of each stretch in the text
        self.size = 0  # alphabet characters not decoded yet (padding excluded)
        self.text: _Text | None = None  # the run reads as text so far, in this encoding

    def add(self, chars: str, start: int, end: int) -> None:
        if start == end:
            return
        spans = self.spans
        if spans and spans[-1][1] == start:
            spans[-1][1] = end
        else:
            spans.append([start, end])
        if self._at > 4096:
            self.chars, self._at = self.chars[self._at :], 0
        self.chars += chars
        self.size += len(chars.rstrip("="))

    @property
    def start(self) -> int:
        return self.spans[0][0]

    def cut(self, size: int) -> tuple[str, int, int]:
        """The first ``size`` characters (no padding among them) and their span."""
        piece = self.chars[self._at : self._at + size]
        self._at += size
        self.size -= size
        spans = self.spans
        start = end = spans[0][0]
        left = size
        while left:
            span = spans[0]
            length = span[1] - span[0]
            if length <= left:
                left -= length
                end = span[1]
                spans.popleft()
            else:
                end = span[0] = span[0] + left
                left = 0
        return piece, start, end

    def rest(self) -> tuple[str, int, int]:
        chars = self.chars[self._at :]
        start, end = self.spans[0][0], self.spans[-1][1]
        self.chars, self._at, self.size = "", 0, 0
        self.spans.clear()
        return chars, start, end


class RunDecoder:
    """Encoded runs of one text, fed in order, decoded piece by piece.

    ``feed`` returns the pieces that the text fed so far decides; ``hold`` is the earliest
    offset at which a piece still to come may start (what a stream must not release yet);
    ``finish`` decides the rest. Offsets count the characters fed, from 0.
    """

    __slots__ = (
        "_a_group",
        "_a_in_run",
        "_a_pos",
        "_a_wait",
        "_base",
        "_budget",
        "_buf",
        "_owner",
        "_p_escapes",
        "_p_joined",
        "_p_pos",
        "_p_start",
        "_p_text",
        "_r_end",
        "_r_fed",
        "_r_next",
        "_r_pos",
        "_r_start",
        "held_from",
        "received",
    )

    def __init__(self, budget: Budget | None = None) -> None:
        # The top level owns its budget and grows it with the text; a nested decoder shares
        # its parent's, so that the bound holds for every level together.
        self._owner = budget is None
        self._budget = Budget() if budget is None else budget
        self._buf = ""  # the text from ``_base`` on: what some lane may still read
        self._base = 0
        self.received = 0
        # Alphabet lane: the group being read, where reading goes on, and whether it goes
        # on inside a run (past its first MIN_RUN characters).
        self._a_group: _Group | None = None
        self._a_in_run = False
        self._a_pos = 0
        self._a_wait = 0  # where a run that may still reach MIN_RUN characters begins
        # Percent lane: the token being read (None between tokens), from where its
        # undecided characters start, its escapes so far, and its text so far.
        self._p_start: int | None = None
        self._p_pos = 0
        self._p_escapes = 0
        self._p_text: _Text | None = None
        self._p_joined = False
        # ROT13 lane: where mentions are searched from, and the span of the one being read.
        self._r_pos = 0
        self._r_start = -1  # -1: no span
        self._r_fed = 0
        self._r_end = 0
        self._r_next = False  # the mention ended its line: the span is the next line
        # ``hold()`` as of the last feed: worked out there anyway (``_trim``), and read by a
        # stream after every token (``DecodeScanner.track_open``).
        self.held_from = 0

    # -- the text in -------------------------------------------------------------------

    def feed(self, raw: str, *, final: bool = False) -> list[Piece]:
        if self._owner:
            self._budget.left += BUDGET_FACTOR * len(raw)
        self._buf += raw
        self.received += len(raw)
        pieces: list[Piece] = []
        if self._budget.left >= 0:
            self._alphabet(pieces, final)
            self._percent(pieces, final)
            self._rot13(pieces, final)
        if self._budget.left < 0:
            self._spent()
        else:
            self._trim()
        return pieces

    def _spent(self) -> None:
        """The budget is spent: nothing more is decoded, so nothing is held or kept."""
        end = self.received
        self._buf, self._base = "", end
        self._a_group, self._a_in_run = None, False
        self._a_pos = self._a_wait = self._p_pos = self._r_pos = self._r_fed = end
        self._p_start = None
        self._r_start = -1
        self.held_from = end

    def finish(self) -> list[Piece]:
        return self.feed("", final=True)

    @property
    def budget(self) -> Budget:
        return self._budget

    def hold(self) -> int:
        """The earliest offset a piece still to come may start at."""
        hold = self.received
        group = self._a_group
        if group is not None and group.size:
            hold = group.start
        elif self._a_wait < hold:
            hold = self._a_wait
        if self._p_start is not None and self._p_start < hold:
            hold = self._p_start
        return hold

    def _trim(self) -> None:
        # The character before a ROT13 mention decides it too (``\b``).
        hold = self.held_from = self.hold()
        keep = min(hold, self._a_pos, self._p_pos, self._r_pos - 1)
        if self._r_start >= 0:
            keep = min(keep, self._r_start, self._r_fed)
        keep = max(keep, self._base)
        if keep - self._base > 4096 or keep - self._base > len(self._buf) // 2:
            self._buf = self._buf[keep - self._base :]
            self._base = keep

    def _emit(self, pieces: list[Piece], piece: Piece) -> bool:
        if not self._budget.take(len(piece.text)):
            return False
        pieces.append(piece)
        return True

    # -- base64 and hex ----------------------------------------------------------------

    def _alphabet(self, pieces: list[Piece], final: bool) -> None:
        buf, base = self._buf, self._base
        size = len(buf)
        pos = self._a_pos - base
        while True:
            group = self._a_group
            if self._a_in_run:
                assert group is not None
                end = _MORE.match(buf, pos).end()  # type: ignore[union-attr]
                if end == size and not final:
                    group.add(buf[pos:end], base + pos, base + end)
                    pos = end
                    self._cut(pieces, group)
                    break
                pad = _PAD.match(buf, end).end()  # type: ignore[union-attr]
                if pad == size and pad - end < 2 and not final:
                    # Padding may go on: wait for it, holding the run's end.
                    group.add(buf[pos:end], base + pos, base + end)
                    pos = end
                    self._cut(pieces, group)
                    break
                group.add(buf[pos:pad], base + pos, base + pad)
                pos = pad
                self._a_in_run = False
                self._cut(pieces, group)
                if pad > end or group.size % 4:
                    self._close(pieces)  # padding, or a length no encoder wraps at: it ended
                continue
            match = _RUN.search(buf, pos)
            if group is not None:
                # The group goes on only through a short gap of whitespace to the next run.
                gap = _GAP.match(buf, pos)
                gap_end = gap.end() if gap is not None else pos
                if match is not None and gap is not None and match.start() == gap_end:
                    pos = match.start()
                    self._a_in_run = True
                    continue
                if not final and _may_go_on(buf, pos, gap_end, size):
                    self._a_wait = base + gap_end
                    break
                self._close(pieces)
                continue
            if match is None:
                # A run may still begin in the last characters: hold them.
                start = _tail_start(buf, max(pos, size - MIN_RUN), size)
                self._a_wait = base + (start if not final else size)
                pos = start if not final else size
                break
            pos = match.start()
            self._a_group = _Group()
            self._a_in_run = True
        self._a_pos = base + pos

    def _cut(self, pieces: list[Piece], group: _Group) -> None:
        """Decodes the group's whole pieces, keeping at least one character back (the run
        may go on, and its last piece decides the padding)."""
        while group.size > PIECE:
            chars, start, end = group.cut(PIECE)
            self._alphabet_piece(pieces, group, chars, start, end, final=False)

    def _close(self, pieces: list[Piece]) -> None:
        group = self._a_group
        assert group is not None
        if group.size:
            chars, start, end = group.rest()
            self._alphabet_piece(pieces, group, chars, start, end, final=True)
        self._a_group = None
        self._a_in_run = False

    def _alphabet_piece(
        self, pieces: list[Piece], group: _Group, chars: str, start: int, end: int, final: bool
    ) -> None:
        text = group.text
        if text is not None:
            data = _DECODERS[text.encoding](chars)
            decoded = text.decode(data, final) if data is not None else None
            if decoded is not None and _readable(decoded, first=False):
                if decoded or final:
                    piece = Piece(start, end, decoded, text.encoding, ALPHABET, True, ends=final)
                    self._emit(pieces, piece)
                return
            group.text = None  # it stopped being text here: try the piece afresh
        for encoding in ("hex", "base64"):
            data = _DECODERS[encoding](chars)
            if data is None:
                continue
            fresh = _fresh(data, final, encoding)
            if fresh is not None:
                group.text, decoded = fresh
                piece = Piece(start, end, decoded, encoding, ALPHABET, False, ends=final)
                self._emit(pieces, piece)
                return

    # -- percent-encoding --------------------------------------------------------------

    def _percent(self, pieces: list[Piece], final: bool) -> None:
        buf, base = self._buf, self._base
        size = len(buf)
        pos = self._p_pos - base
        while pos < size or (final and self._p_start is not None):
            if self._p_start is None:
                escape = buf.find("%", pos)
                if escape < 0:
                    # No escape ahead: only the last token may still get one.
                    pos = _token_start(buf, pos, size) if not final else size
                    if pos < size:
                        self._start_token(base + pos)
                    break
                pos = _token_start(buf, pos, escape)
                self._start_token(base + pos)
            start = self._p_start
            assert start is not None
            space = _SPACE.search(buf, pos)
            end = space.start() if space is not None else size
            ended = space is not None or final
            # Whole pieces of a long token, never cutting an escape.
            while end - (start - base) > PIECE:
                cut = start - base + PIECE
                if buf[cut - 1] == "%":
                    cut -= 1
                elif buf[cut - 2] == "%":
                    cut -= 2
                self._percent_piece(pieces, start, base + cut, final=False)
                start = self._p_start = base + cut
            if not ended:
                pos = end
                break
            if end > start - base:
                self._percent_piece(pieces, start, base + end, final=True)
            self._p_start = None
            pos = end + 1 if space is not None else size
        self._p_pos = base + min(pos, size)

    def _start_token(self, start: int) -> None:
        self._p_start = start
        self._p_escapes = 0
        self._p_text = None
        self._p_joined = False

    def _percent_piece(self, pieces: list[Piece], start: int, end: int, final: bool) -> None:
        chars = self._buf[start - self._base : end - self._base]
        self._p_escapes += len(_ESCAPE.findall(chars))
        if self._p_escapes < MIN_PERCENT:
            self._p_text = None
            return
        data = unquote_to_bytes(chars)
        text = self._p_text
        if text is not None:
            decoded = text.decode(data, final)
            if decoded is not None and _readable(decoded, first=False):
                if decoded or final:
                    piece = Piece(start, end, decoded, "percent", PERCENT, True, ends=final)
                    self._emit(pieces, piece)
                return
        fresh = _fresh(data, final, "percent")
        if fresh is None:
            self._p_text = None
            return
        self._p_text, decoded = fresh
        self._emit(pieces, Piece(start, end, decoded, "percent", PERCENT, False, ends=final))

    # -- ROT13 -------------------------------------------------------------------------

    def _rot13(self, pieces: list[Piece], final: bool) -> None:
        buf, base = self._buf, self._base
        size = len(buf)
        while True:
            if self._r_start >= 0:
                if not self._rot13_span(pieces, final):
                    return
                continue
            pos = self._r_pos - base
            for match in _ROT13_NAME.finditer(buf, pos):
                if match.end() == size and not final:
                    # "rot13" at the very end may go on ("rot13x" names nothing): wait.
                    self._r_pos = base + match.start()
                    return
                start = base + match.end()
                self._r_start = self._r_fed = self._r_pos = start
                self._r_end = start + ROT13_SPAN
                self._r_next = False
                break
            else:
                self._r_pos = base + max(pos, size - _ROT13_NAME_CHARS)
                return

    def _rot13_span(self, pieces: list[Piece], final: bool) -> bool:
        """Reads the span as far as the text goes; True when it ended."""
        buf, base = self._buf, self._base
        fed = self._r_fed - base
        limit = min(len(buf), self._r_end - base)
        line_end = buf.find("\n", fed, limit)
        if (
            line_end >= 0
            and not self._r_next
            and not buf[self._r_start - base : line_end].strip(_ROT13_BLANK)
        ):
            # The mention ended its line: the payload is the next line.
            self._r_next = True
            line_end = buf.find("\n", line_end + 1, limit)
        stop = line_end if line_end >= 0 else limit
        ended = line_end >= 0 or base + stop >= self._r_end or final
        if stop > fed or ended:
            chars = buf[fed:stop]
            piece = Piece(
                base + fed,
                base + stop,
                chars.translate(_ROT13),
                "rot13",
                ROT13,
                joined=self._r_fed > self._r_start,
                linear=True,
                ends=ended,
            )
            if not self._emit(pieces, piece):
                self._r_start = -1
                return False
            self._r_fed = base + stop
        if ended:
            self._r_pos = self._r_fed = base + stop
            self._r_start = -1
            return True
        return False


def _tail_start(buf: str, low: int, size: int) -> int:
    """Where the alphabet characters at the end of ``buf`` begin (no earlier than ``low``)."""
    start = size
    while start > low and buf[start - 1] in _ALPHABET:
        start -= 1
    return start


def _may_go_on(buf: str, pos: int, gap_end: int, size: int) -> bool:
    """After a group's run: is the text from ``pos`` on a gap the next run of the group
    may still follow (whitespace, then alphabet characters, up to the end)?"""
    if gap_end == pos:
        return pos == size  # nothing after the run yet
    if gap_end - pos >= MAX_GAP and gap_end < size and buf[gap_end].isspace():
        return False
    return _tail_start(buf, gap_end, size) == gap_end


def _token_start(buf: str, low: int, high: int) -> int:
    """Where the token that ``buf[high - 1]`` belongs to begins (after the last ASCII
    whitespace before ``high``), no earlier than ``low``."""
    start = low
    for space in _SPACES:
        at = buf.rfind(space, low, high) + 1
        if at > start:
            start = at
    return start


def decoded_pieces(text: str) -> list[Decoded]:
    """Every readable encoded run of a whole ``text`` (the pieces of one run joined), and
    what readable runs inside those decode to, one level down, in order of where they
    start, within the decoding budget. What ``shields.decode_scan`` reads, as a list."""
    top = RunDecoder()
    budget = top.budget
    outer = list(_runs(top.feed(text, final=True)))
    found: list[Decoded] = []
    for run in outer:
        found.append(run)
        inner = RunDecoder(budget).feed(run.text, final=True)
        # The inner run is somewhere in the outer one's decoded text: the encoded run the
        # client sent is the outer one, so that is what a finding covers.
        found += [
            Decoded(run.start, run.end, piece.text, f"{run.encoding}+{piece.encoding}")
            for piece in _runs(inner)
        ]
    found.sort(key=lambda piece: piece.start)
    return found


def _runs(pieces: list[Piece]) -> Iterator[Decoded]:
    """Pieces joined into runs: a run's pieces go on from one another in their lane."""
    run: list[Piece] = []
    for piece in sorted(pieces, key=lambda p: (p.lane, p.start)):
        if run and not (piece.joined and piece.lane == run[-1].lane):
            yield _run(run)
            run = []
        run.append(piece)
    if run:
        yield _run(run)


def _run(pieces: list[Piece]) -> Decoded:
    text = "".join(piece.text for piece in pieces)
    return Decoded(pieces[0].start, pieces[-1].end, text, pieces[0].encoding)


def decoded_label(encoding: str, label: str) -> str:
    """The label of a finding in decoded text: the encoding, then the shield's own label; a
    finding in nested decoded text (``hex:...`` one level down) gets the chain of both
    (``base64+hex:...``)."""
    inner, rest = split_label(label)
    if inner:
        return f"{encoding}+{inner}:{rest}"
    return f"{encoding}:{label}"


def split_label(label: str) -> tuple[str, str]:
    """A decoded finding's label as (encodings, the shield's label); ("", label) for a
    label that is not a decoded finding's."""
    encoding, colon, rest = label.partition(":")
    if colon and rest and all(part in ENCODINGS for part in encoding.split("+")):
        return encoding, rest
    return "", label


def redecode(label: str, encoded: str) -> list[str]:
    """What the encoded text a decoded finding covers decodes to (``shieldgate scan
    --explain``); empty for a label that is not a decoded finding's."""
    encoding, _ = split_label(label)
    if not encoding:
        return []
    if encoding.startswith("rot13"):
        decoded = encoded.translate(_ROT13)
        if encoding == "rot13":
            return [decoded]
        encoded = decoded  # ROT13 of something encoded: read it one level down
        encoding = encoding.removeprefix("rot13+")
        return [p.text for p in decoded_pieces(encoded) if p.encoding == encoding]
    return [piece.text for piece in decoded_pieces(encoded) if piece.encoding == encoding]
