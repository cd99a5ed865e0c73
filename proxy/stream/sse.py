"""Server-Sent-Events framing of an upstream's streamed response body.

This module owns turning the raw bytes of an upstream ``text/event-stream`` into events, and
encoding a ``data`` payload back into an event. It knows nothing about JSON, chat completions or
policy: ``data`` stays bytes, and callers parse it.

Framing follows the WHATWG HTML "server-sent events" parser, because a guardrail that splits a
stream differently from the client behind it could be walked past: lines end in LF, CRLF or a
lone CR; an empty line ends an event; ``data`` lines are joined with LF; one space after the
colon is dropped; a leading UTF-8 BOM at the start of the stream is not part of the first line.

Every input byte ends up in exactly one ``SSEEvent.raw`` or in ``finish()``, so a caller that
forwards ``raw`` reproduces the upstream byte for byte. Bytes that frame nothing are emitted as
events with ``data=None`` and ``event=None`` instead of being glued to a neighbour:

- each stray blank line (one that does not end an event, e.g. an extra ``\\n`` between events,
  or at the start of the stream) is its own event whose ``raw`` is that line's terminator;
- a BOM at the start of the stream is emitted alone.

An event that ends in a CR is handed out at once rather than held to see whether a LF follows.
If the next chunk opens with that LF, it comes out as a stray blank line: the SSE parser treats
an empty line at the start of an event as dispatching nothing, so the client sees no difference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proxy.stream.runs import EventRun, EventTemplate

__all__ = ["SSEDecoder", "SSEError", "SSEEvent", "data_only", "encode_data"]

_BOM = b"\xef\xbb\xbf"
_LF = 0x0A

_LINE_END = re.compile(rb"\r\n|\r|\n")
# A line end followed by another one is an empty line, which ends the event. The lookahead stops
# the CR of a CRLF from being read as a line end of its own followed by an empty LF line.
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")


@dataclass(slots=True)
class SSEEvent:
    """One event. ``raw`` is exactly the bytes received for it, including its ending blank line."""

    raw: bytes
    data: bytes | None
    event: str | None


class SSEError(ValueError):
    """An event grew beyond ``max_event_bytes``; the stream cannot be framed safely."""


def encode_data(payload: bytes) -> bytes:
    """Encodes ``payload`` as one event: ``b"data: " + payload + b"\\n\\n"``.

    A payload containing LF is written as several ``data:`` lines, which decode back to the same
    bytes; written verbatim, its newlines would end the event early and let the payload inject
    events of its own. A CR cannot be carried in an SSE ``data`` field at all, so it is refused.
    """
    if b"\n" not in payload and b"\r" not in payload:
        return b"data: " + payload + b"\n\n"
    if b"\r" in payload:
        raise ValueError("an SSE data field cannot carry a CR byte")
    return b"".join(b"data: " + line + b"\n" for line in payload.split(b"\n")) + b"\n"


def data_only(raw: bytes) -> bytes:
    """``raw`` (one event's bytes) without what the guard does not read: a comment's text
    (the line stays, empty: a keep-alive still keeps the connection alive), and ``id``,
    ``event``, ``retry`` and unknown fields (dropped). ``raw`` itself when it holds nothing
    else: a stray blank line, a BOM, an event of ``data`` lines only.

    A client sees every field, and a browser's ``EventSource`` hands ``id`` and ``event`` to
    the page: relayed as they came, they would carry text no shield read."""
    if raw.startswith(b"data:") and raw.find(b"\n") == len(raw) - 2 and raw.endswith(b"\n\n"):
        return raw  # the usual event: one data line, LF line ends
    if raw == _BOM or not raw.strip(b"\r\n"):
        return raw
    lines = _LINE_END.split(raw)[:-2]  # the last two: the event's line end and blank line
    kept = [b":" if line.startswith(b":") else line for line in lines if _is_data_or_comment(line)]
    if kept == lines:
        return raw
    return b"\n".join(kept) + b"\n\n" if kept else b""


def _is_data_or_comment(line: bytes) -> bool:
    return line.startswith(b":") or line.partition(b":")[0] == b"data"


def _blank(terminator: bytes) -> SSEEvent:
    return SSEEvent(terminator, None, None)


def _parse_event(raw: bytes, lines: Iterable[bytes]) -> SSEEvent:
    data: list[bytes] = []
    event: str | None = None
    for line in lines:
        name, _, value = line.partition(b":")
        if not name:  # a ":" comment, or the empty line that ended the event
            continue
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            event = value.decode("utf-8", errors="replace")
    return SSEEvent(raw, b"\n".join(data) if data else None, event)


def _add_piece(piece: bytes, nl: bytes, add: Callable[[SSEEvent], None]) -> None:
    # `piece` was followed by two line ends. Pieces never hold two line ends in a row, so an empty
    # piece is two stray blank lines and a leading line end is one stray blank line.
    if not piece:
        add(_blank(nl))
        add(_blank(nl))
        return
    if piece.startswith(nl):
        add(_blank(nl))
        piece = piece[len(nl) :]
    add(_parse_event(piece + nl + nl, piece.split(nl)))


def _only_one_line_data_events(data: bytes, end: int, count: int, nl: bytes) -> bool:
    # Counted in C over the whole span instead of tested per event: each of the `count` events
    # holds exactly its own two line ends, and each starts with "data: ".
    return (
        data.startswith(b"data: ")
        and data.count(nl, 0, end) == 2 * count
        and data.count(nl + nl + b"data: ", 0, end) == count - 1
    )


def _decode_uniform(data: bytes, nl: bytes) -> tuple[list[SSEEvent], bytes]:
    """Splits ``data`` whose every line ends in ``nl`` into events and the unfinished rest.

    This is the hot path: OpenAI-compatible servers send ``data: {...}\\n\\n`` events, and one
    64 KiB read holds hundreds of them. Splitting is done by ``bytes.split`` in C; when every
    event is a single ``data:`` line, one comprehension builds them all without per-event tests.
    """
    pieces = data.split(nl + nl)
    rest = pieces.pop()
    ending = nl + nl
    events: list[SSEEvent]
    if pieces and _only_one_line_data_events(data, len(data) - len(rest), len(pieces), nl):
        events = [SSEEvent(piece + ending, piece[6:], None) for piece in pieces]
    else:  # e.g. a keep-alive comment in between: test each event
        events = []
        for piece in pieces:
            if piece.startswith(b"data: ") and b"\n" not in piece:
                events.append(SSEEvent(piece + ending, piece[6:], None))
            else:
                _add_piece(piece, nl, events.append)
    if rest.startswith(nl):
        events.append(_blank(nl))
        rest = rest[len(nl) :]
    return events, rest


def _is_crlf_only(data: bytes) -> bool:
    crlf = data.count(b"\r\n")
    return data.count(b"\r") == crlf and data.count(b"\n") == crlf


def _decode_general(data: bytes) -> tuple[list[SSEEvent], int]:
    """Splits ``data`` (starting at an event start, any line ends) into events.

    Returns the events and the offset where the unfinished rest begins.
    """
    events: list[SSEEvent] = []
    pos, size = 0, len(data)
    while pos < size:
        # A line end right at the start of an event is a stray blank line.
        match = _LINE_END.match(data, pos) or _EVENT_END.search(data, pos)
        if match is None:
            break
        end = match.end()
        raw = data[pos:end]
        events.append(_parse_event(raw, _LINE_END.split(raw)))
        pos = end
    return events, pos


class SSEDecoder:
    """Incremental SSE decoder: ``feed()`` network chunks, then ``finish()`` at EOF.

    Memory is bounded by ``max_event_bytes`` plus one chunk: ``feed()`` raises ``SSEError`` as soon
    as one event, finished or not, is longer. The decoder must not be used after an ``SSEError``.
    """

    __slots__ = (
        "_at_start",
        "_bom_head",
        "_has_cr",
        "_held",
        "_last",
        "_max",
        "_parts",
    )

    def __init__(self, max_event_bytes: int = 4 * 1024 * 1024) -> None:
        self._max = max_event_bytes
        # Bytes of the unfinished event, kept as received: joining only when an event completes
        # keeps a large event fed in tiny chunks linear instead of quadratic.
        self._parts: list[bytes] = []
        self._held = 0
        self._last = b""  # last byte held: enough to spot an event end that spans two chunks
        self._has_cr = False  # whether the held bytes contain a CR
        self._at_start = True  # a BOM is only special as the very first bytes of the stream
        self._bom_head = b""

    @property
    def buffered_bytes(self) -> int:
        """Bytes held waiting for the end of the current event."""
        return self._held + len(self._bom_head)

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Returns every event completed by ``chunk``, in order."""
        events: list[SSEEvent] = []
        self._feed(chunk, None, events)
        return events

    def feed_runs(self, chunk: bytes, template: EventTemplate | None) -> list[SSEEvent | EventRun]:
        """Like ``feed``, but events of ``template`` at the start of the completed bytes come
        out as one ``EventRun`` (``proxy/stream/runs.py``): the stream guard's bulk path."""
        events: list[SSEEvent | EventRun] = []
        self._feed(chunk, template, events)
        return events

    def _feed(self, chunk: bytes, template: EventTemplate | None, events: list[Any]) -> None:
        if self._at_start:
            chunk = self._take_bom(chunk, events)
        if not chunk:
            return
        has_cr = self._has_cr or b"\r" in chunk
        if not self._may_end_event(chunk, has_cr):
            self._hold(chunk, has_cr)
            return
        self._parts.append(chunk)
        data = b"".join(self._parts)
        if template is not None and not has_cr:
            run = template.take_run(data)
            if run is not None:
                if len(run.raw) > self._max and run.longest_event > self._max:
                    raise SSEError(f"SSE event exceeds max_event_bytes={self._max}")
                events.append(run)
                data = data[len(run.raw) :]
        if not data:
            new: list[SSEEvent] = []
            rest = b""
        elif not has_cr:
            new, rest = _decode_uniform(data, b"\n")
        elif _is_crlf_only(data):
            new, rest = _decode_uniform(data, b"\r\n")
        else:
            new, cut = _decode_general(data)
            rest = data[cut:]
        if len(data) > self._max:
            self._check_sizes(new)
        self._parts.clear()
        self._held = 0
        self._last = b""
        self._has_cr = False
        if rest:
            self._hold(rest, has_cr and b"\r" in rest)
        events += new

    def finish(self) -> bytes:
        """At EOF: returns the bytes of an unterminated trailing event, b"" if there is none.

        Non-empty means the stream broke off mid-event; per the SSE spec that event is discarded.
        """
        tail = self._bom_head + b"".join(self._parts)
        self._parts.clear()
        self._held = 0
        self._last = b""
        self._has_cr = False
        self._bom_head = b""
        return tail

    def _take_bom(self, chunk: bytes, events: list[SSEEvent]) -> bytes:
        head = self._bom_head + chunk
        if len(head) < len(_BOM) and _BOM.startswith(head):
            self._bom_head = head  # could still become a BOM: wait for more bytes
            return b""
        self._at_start = False
        self._bom_head = b""
        if head.startswith(_BOM):
            events.append(_blank(_BOM))
            return head[len(_BOM) :]
        return head

    def _may_end_event(self, chunk: bytes, has_cr: bool) -> bool:
        # With nothing held, a line end opening the chunk is a (stray) blank line; pretending the
        # held bytes end in LF lets the same test cover that case.
        before = self._last if self._parts else b"\n"
        if has_cr:
            return _EVENT_END.search(before + chunk) is not None
        return b"\n\n" in chunk or (chunk[0] == _LF and before == b"\n")

    def _hold(self, chunk: bytes, has_cr: bool) -> None:
        if self._held + len(chunk) > self._max:
            raise SSEError(f"SSE event exceeds max_event_bytes={self._max}")
        self._held += len(chunk)
        self._parts.append(chunk)
        self._last = chunk[-1:]
        self._has_cr = has_cr

    def _check_sizes(self, events: list[SSEEvent]) -> None:
        if any(len(event.raw) > self._max for event in events):
            raise SSEError(f"SSE event exceeds max_event_bytes={self._max}")
