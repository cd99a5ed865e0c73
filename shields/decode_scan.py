"""Decode and scan: a stage's shields read what the encoded runs of a text decode to.

A policy's ``decode:`` turns this on per stage. ``shields.scan.TextScan`` then runs one more
scanner beside the stage's shields, a ``DecodeScanner``: it feeds the text to a
``shields.decode.RunDecoder`` and each decoded piece to the same shields (a ``TextScan`` per
*lane* — base64/hex, percent-encoding, ROT13 — so that what one encoding hides is read as one
text, as the model reads it), and maps what they find back to the encoded characters:

- a finding in base64, hex or percent-encoded text spans the encoded piece(s) it was found
  in — a run is decoded in pieces of ``PIECE`` characters, so a run up to that long is one —
  and every later piece of the same run, each covered as it is decoded: a block blocks and a
  redaction replaces the run from the piece the finding starts in (a longer run's earlier
  pieces, which a stream may have released already, held nothing the shields found); ROT13
  keeps every character in place, so a finding there spans exactly the characters it was
  found in;
- its label is the encoding, then the shield's own label (``base64:build a bomb``;
  ``base64+hex:...`` one level down: a lane's shields include a ``DecodeShield`` of the next
  level, ``MAX_DEPTH`` levels in all, sharing one decoding budget).

Every whole text and every stream goes through ``TextScan``, so this is the one place decoding
happens: whole requests and replies, tool-call arguments (behind ``JsonEscapedScan``, which
decodes JSON escapes first), and streamed channels. In a stream the scanner holds
(``open_from``) from the start of an encoded run that may still grow — the last word of prose,
a run of the base64 alphabet until it ends, at most a piece — and, once pieces were decoded,
from the piece in which a lane's shields hold their own open candidate. A scanner that holds
more than its ``max_match`` (``WINDOW``) behind the end is floored there by the stream's
hold-back like any other; ``compile_policy`` requires ``holdback_chars`` >= ``WINDOW`` when
the output stage decodes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from shields.base import NOTHING_OPEN, Chunk, Finding, OpenAt, Scanner, Shield
from shields.decode import MAX_DEPTH, MAX_GAP, PIECE, Budget, Piece, RunDecoder, decoded_label
from shields.normalize import StreamNormalizer
from shields.spec import ShieldSpecBase

if TYPE_CHECKING:
    from shields.scan import TextScan

__all__ = ["NOT_DECODED", "WINDOW", "DecodeScanner", "DecodeShield"]

# Shield types that do not read decoded text: ``links`` judges the URLs a renderer fetches, and
# a renderer shows encoded text as it is (a URL inside base64 is fetched by nobody; a
# percent-encoded one is judged as it stands); ``length`` limits what was sent, not what it
# decodes to.
NOT_DECODED = frozenset({"links", "length"})
# The most a stream holds for decoding: the piece being read and the pieces a lane's shields
# still hold (an e-mail address of 166 characters percent-encoded is ~500).
WINDOW = 6 * PIECE
_SEPARATOR = "\n"  # between the runs of one lane: read as a space, never joining two words
_PRUNE_FROM = 64  # entries kept before the ones no finding can reach are dropped


class DecodeShield(Shield):
    """The stage's shields over decoded text, as one more shield of the stage. Built by
    ``shields.scan`` for a stage that decodes, never named in a policy."""

    type_name = "decode"

    def __init__(
        self, shields: tuple[Shield, ...], *, depth: int = MAX_DEPTH, fail_closed: bool = True
    ) -> None:
        super().__init__(ShieldSpecBase(id="decode", type="decode"))
        self.matches_raw = True  # offsets of the encoded text as it is
        self.fail_closed = fail_closed
        shields = tuple(s for s in shields if s.type_name not in NOT_DECODED)
        nested = (
            (DecodeShield(shields, depth=depth - 1, fail_closed=fail_closed),) if depth > 1 else ()
        )
        # What each lane runs: the stage's shields, and the next level of decoding.
        self.lane_shields: tuple[Shield, ...] = (*shields, *nested)
        self.lane_holdback = max((s.max_match for s in self.lane_shields), default=0)

    @property
    def max_match(self) -> int:
        return WINDOW

    def scanner(self) -> DecodeScanner:
        return DecodeScanner(self)


@dataclass(slots=True)
class _Lane:
    """One lane's decoded text: its scan, and where each piece of it came from."""

    scan: TextScan
    length: int = 0  # decoded characters fed, separators included
    open: bool = False  # the last piece fed did not end its run
    starts: list[int] = field(default_factory=list)  # decoded start of each piece
    pieces: list[Piece] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)  # where the run of each piece starts
    # Findings in the run being read: each later piece of that run is covered as it comes,
    # so that a block or a redaction takes the whole run, however long.
    condemned: list[Finding] = field(default_factory=list)


class DecodeScanner(Scanner):
    """``DecodeShield``'s scanner: see the module docstring."""

    __slots__ = ("_decoder", "_floor", "_lanes", "_shield", "_track", "open_at")

    def __init__(self, shield: DecodeShield, budget: Budget | None = None) -> None:
        self._shield = shield
        self._decoder = RunDecoder(budget)
        self._lanes: dict[int, _Lane] = {}
        # Findings never start before this: what a stream has released (``feed``).
        self._floor = 0
        self._track = False
        self.open_at = NOTHING_OPEN

    def track_open(self) -> Sequence[OpenAt]:
        self._track = True
        return (self,)

    def feed(self, chunk: Chunk) -> list[Finding]:
        # A stream releases at most up to ``max_match`` before what it had received when this
        # chunk came: a finding that reaches further back covers released text, which no
        # redaction can take back (a run longer than the window is the bound's price).
        self._floor = max(self._floor, chunk.raw_start - WINDOW)
        decoder = self._decoder
        found = self._read(decoder.feed(chunk.raw))
        if self._track:
            # ``open_from``, without its calls while nothing was decoded (prose): the decoder
            # worked out where it holds from as it fed.
            self.open_at = self.open_from(0, 0) if self._lanes else decoder.held_from
        return found

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        found = self._read(self._decoder.finish())
        for lane in self._lanes.values():
            found += self._mapped(lane, lane.scan.finish())
        return found

    def open_from(self, end: int, window: int) -> int:
        hold = self._decoder.hold()
        for lane in self._lanes.values():
            safe = lane.scan.safe_end
            if safe >= lane.length:
                continue
            at = self._encoded(lane, safe, start=True)
            if at < hold:
                hold = at
        return hold

    def _read(self, pieces: list[Piece]) -> list[Finding]:
        found: list[Finding] = []
        for piece in pieces:
            lane = self._lanes.get(piece.lane)
            if lane is None:
                lane = self._lanes[piece.lane] = self._lane()
            scan = lane.scan
            text = piece.text
            if piece.joined and lane.pieces:
                run = lane.runs[-1]
                for condemned in lane.condemned:
                    found = _extended(found, condemned, piece)
            else:
                run = piece.start
                lane.condemned = []
                if lane.open:
                    text = _SEPARATOR + text  # the run before it broke off unended
            lane.starts.append(lane.length + len(text) - len(piece.text))
            lane.pieces.append(piece)
            lane.runs.append(run)
            lane.open = not piece.ends
            if piece.ends:
                # The run is over: the lane's shields may decide its end now rather than
                # hold it until the next run comes (which may be never).
                text += _SEPARATOR
            lane.length += len(text)
            findings = scan.feed(text)
            if findings:
                found += self._mapped(lane, findings)
            self._prune(lane)
        return found

    def _lane(self) -> _Lane:
        from shields.scan import TextScan  # shields.scan builds this module's shield

        shield = self._shield
        scan = TextScan(
            shield.lane_shields,
            holdback=shield.lane_holdback,
            adaptive=True,
            fail_closed=shield.fail_closed,
        )
        # The next level down decodes within this text's budget, not a budget of its own.
        for scanner in scan.scanners():
            if isinstance(scanner, DecodeScanner):
                scanner._decoder = RunDecoder(self._decoder.budget)
        return _Lane(scan)

    def _encoded(self, lane: _Lane, decoded: int, *, start: bool) -> int:
        """Where decoded offset ``decoded`` of ``lane`` is in the encoded text: the start
        (``start``) or the end of the piece it is in; exactly, in a ROT13 piece."""
        i = _index(lane, decoded) if start else max(bisect_right(lane.starts, decoded) - 1, 0)
        piece = lane.pieces[i]
        offset = decoded - lane.starts[i]
        if offset >= len(piece.text):
            return piece.end  # the separator after the lane's last piece
        if piece.linear:
            return piece.start + max(offset, 0) + (0 if start else 1)
        return piece.start if start else piece.end

    def _mapped(self, lane: _Lane, findings: list[Finding]) -> list[Finding]:
        mapped: list[Finding] = []
        for finding in findings:
            if finding.label == "shield_error":
                mapped.append(finding)  # no span to map: the shield failed, not matched
                continue
            index = _index(lane, finding.start)
            first = lane.pieces[index]
            label = decoded_label(first.encoding, finding.label)
            end = self._encoded(lane, max(finding.end - 1, finding.start), start=False)
            start = self._encoded(lane, finding.start, start=True)
            if not first.linear and lane.runs[-1] == lane.runs[index]:
                # The rest of the run: each piece of it still to come is covered too. (What
                # came before the piece is left as it is: a stream may have released it, and
                # whole texts are read as streams are.)
                end = lane.pieces[-1].end
                kept = replace(finding, label=label, start=0, end=0, digest=None)
                if kept not in lane.condemned:
                    lane.condemned.append(kept)
            start = max(start, self._floor)
            mapped.append(replace(finding, label=label, start=start, end=max(end, start)))
        # Several matches in one run (a decoded key block holds many) are one finding there.
        return list(dict.fromkeys(mapped))

    def _prune(self, lane: _Lane) -> None:
        if len(lane.starts) < _PRUNE_FROM:
            return
        scan = lane.scan
        reach = min(scan.safe_end, scan.received - scan.lookback)
        i = bisect_right(lane.starts, reach) - 1
        if i > 0:
            del lane.starts[:i]
            del lane.pieces[:i]
            del lane.runs[:i]


def _index(lane: _Lane, decoded: int) -> int:
    """The piece that decoded offset ``decoded`` is in, or the next one when it is on the
    separator before it."""
    i = max(bisect_right(lane.starts, decoded) - 1, 0)
    if decoded - lane.starts[i] >= len(lane.pieces[i].text) and i + 1 < len(lane.pieces):
        i += 1
    return i


def _extended(found: list[Finding], condemned: Finding, piece: Piece) -> list[Finding]:
    """``found`` with a condemned run's finding covering ``piece`` too: the finding of this
    read that ends where the piece starts grows (a whole text gives one finding per run),
    or a finding of the piece alone is added (the run's start was reported before)."""
    for i in range(len(found) - 1, -1, -1):
        before = found[i]
        if (
            # The run's last piece ended there, or a gap of whitespace before this one did.
            piece.start - MAX_GAP <= before.end <= piece.start
            and replace(before, start=0, end=0, digest=None) == condemned
        ):
            found[i] = replace(before, end=piece.end)
            return found
    found.append(replace(condemned, start=piece.start, end=piece.end))
    return found
