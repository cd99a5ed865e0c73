"""Runs of look-alike stream events: the stream guard's bulk path.

An OpenAI-compatible server streams a reply as hundreds of events per network read that differ
only in one string: ``data: {"id":"x",...,"delta":{"content":"<4 chars>"},...}\\n\\n``. Framing,
parsing and queuing each of them costs ~10 µs of Python, which is the whole cost of a guarded
stream. Here the guard instead learns the event's shape once — the bytes before and after the
text's JSON string literal — and then takes a whole run of such events out of a read: one
``bytes.split`` on blank lines, the string bodies sliced out in C, the run rebuilt from them and
compared with the read once, the bodies validated and decoded in one go. A run costs per
*read*, plus a C-level slice per event, instead of ~10 µs of Python per event.

Exactness, because the upstream is hostile: a run holds only events that are byte for byte the
learned shape with one valid JSON string body in the one place; the shape is only learned from
an event whose text field the guard's own reader finds at exactly that place (checked on a
probe). Since a string body cannot change the JSON's structure, every event of a run parses to
the learned chunk with another text, which is what the per-event path would have seen. Anything
else — a ``\\u`` escape (which a client may pair across events), a UTF-8 sequence split between
events, a control character — ends the run or refuses it, and the per-event path takes over.

The choice and tool-call indices are part of the learned bytes, never of the string body: every
event of a run carries exactly the indices of the event the shape was learned from, which the
guard's per-event path had read and accepted (``StreamIndices``, ``shields.openai``) before
learning it. So a run needs no index check of its own, and an event with any other index does
not fit the shape and takes the per-event path, where it is checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import orjson

from shields.openai.channels import Channel

__all__ = ["EventRun", "EventTemplate", "learn_template"]

_DATA = b"data: "
_END = b"\n\n"
_SEP = b"\x00"  # joins a run's literals: a valid literal never holds a raw NUL
# The probe text put in the text's place to check that the guard's reader finds it there.
_PROBE = "sg-probe-7f3a"

# Reads a parsed chunk the way the guard does: [(channel, text), ...]; raises on a bad shape.
ChunkReader = Callable[[Any], Iterable[tuple[Channel, str]]]


@dataclass(frozen=True, slots=True)
class EventRun:
    """Consecutive events of one template, as received: ``raw`` is their exact bytes."""

    template: EventTemplate
    # A view into the network read where possible: a run is most of a read, and copying it
    # costs as much as everything else done with it.
    raw: bytes | memoryview
    literals: bytes  # each event's JSON string body, in order, joined by NUL
    count: int
    text: str  # the events' texts, concatenated

    def split(self, chars: int) -> tuple[EventRun, EventRun] | None:
        """The first events carrying at most ``chars`` characters, and the rest.

        None when not even the first event fits. Walks back from the end, decoding only the
        events it passes: the caller holds back a few characters, so it passes a few events.
        """
        total = len(self.text)
        if chars >= total:
            return self, _empty_run(self.template)
        literals = self.literals
        # Plain ASCII bodies hold one character per byte: no decoding needed to count them.
        plain = literals.isascii() and b"\\" not in literals
        cut = len(literals)
        kept = 0
        kept_chars = 0
        while total - kept_chars > chars:
            start = literals.rfind(_SEP, 0, cut) + 1
            kept_chars += cut - start if plain else len(_decode_literal(literals[start:cut]))
            kept += 1
            if start == 0:
                return None  # the first event already carries text that must stay
            cut = start - 1
        template = self.template
        count = self.count - kept
        raw_len = count * template.fixed_bytes + cut - (count - 1)
        released = total - kept_chars
        raw = memoryview(self.raw)
        return (
            EventRun(template, raw[:raw_len], literals[:cut], count, self.text[:released]),
            # Copied: the part held back must not keep the whole read alive.
            EventRun(
                template, bytes(raw[raw_len:]), literals[cut + 1 :], kept, self.text[released:]
            ),
        )

    def textless_head(self) -> tuple[EventRun, EventRun] | None:
        """The events before the first one that carries text, and the rest; None when the first
        event carries text, or none does."""
        if not self.text or not self.literals.startswith(_SEP):
            return None
        return self.split(0)

    @property
    def longest_event(self) -> int:
        return self.template.fixed_bytes + max(map(len, self.literals.split(_SEP)), default=0)

    def events(self) -> list[tuple[bytes, bytes, str]]:
        """Each event's raw bytes, JSON data and text: for the rare event that is rewritten."""
        template = self.template
        out = []
        for literal in self.literals.split(_SEP):
            data = template.prefix + literal + template.suffix
            out.append((_DATA + data + _END, data, _decode_literal(literal)))
        return out


def _empty_run(template: EventTemplate) -> EventRun:
    return EventRun(template, b"", b"", 0, "")


def _decode_literal(literal: bytes) -> str:
    if literal.isascii() and b"\\" not in literal:
        return literal.decode("ascii")
    text = orjson.loads(b'"' + literal + b'"')
    assert isinstance(text, str)
    return text


@dataclass(frozen=True, slots=True)
class EventTemplate:
    """``data: <prefix><string body><suffix>\\n\\n``; ``prefix`` ends and ``suffix`` starts with
    the string's quotes."""

    channel: Channel  # the stream text its events carry, as the stream guard keys it
    prefix: bytes
    suffix: bytes
    # The choices whose events carry ``logprobs`` or ``audio`` beside their text, which the
    # guard withholds once a redaction touched the choice. Every event of a run has the same:
    # they differ only in the string body, which cannot change the JSON's structure.
    side_choices: tuple[int, ...] = ()

    @property
    def head(self) -> bytes:
        return _DATA + self.prefix

    @property
    def tail(self) -> bytes:
        return self.suffix + _END

    @property
    def fixed_bytes(self) -> int:
        """An event's length without its string body."""
        return len(_DATA) + len(self.prefix) + len(self.suffix) + len(_END)

    def holds(self, raw: bytes) -> bool:
        """Whether ``raw`` is one event of this template: its head, one valid string body, its
        tail — so that every byte but the body's is the template's."""
        head, tail = self.head, self.tail
        if len(raw) < len(head) + len(tail) or not raw.startswith(head):
            return False
        return raw.endswith(tail) and _decode_run(raw[len(head) : -len(tail)], 1) is not None

    def take_run(self, data: bytes) -> EventRun | None:
        """The run of this template's events that ``data`` starts with, if it has one.

        ``data`` starts at an event boundary; the run may be followed by anything (other
        events, an unfinished one), which the caller frames the usual way.
        """
        head, suffix = self.head, self.suffix
        if not data.startswith(head):
            return None
        # One C split into events, one slice per event in C, and one comparison with the
        # events rebuilt from the bodies: each event is a few hundred bytes around a few
        # characters, so any Python work per event would cost more than everything else here.
        pieces = data.split(_END)
        end = len(data) - len(pieces.pop())  # the unfinished rest
        bodies = list(map(bytes.__getitem__, pieces, repeat(slice(len(head), -len(suffix)))))
        rebuilt = head + (self.tail + head).join(bodies) + self.tail
        if len(rebuilt) != end or not data.startswith(rebuilt):
            count = _matching(pieces, head, suffix)
            if not count:
                return None
            del bodies[count:]
        count = len(bodies)
        literals = _SEP.join(bodies)
        raw_len = count * self.fixed_bytes + len(literals) - (count - 1)
        text = _decode_run(literals, count)
        if text is None:
            return None
        raw = data if raw_len == len(data) else memoryview(data)[:raw_len]
        return EventRun(self, raw, literals, count, text)


def _matching(pieces: list[bytes], head: bytes, suffix: bytes) -> int:
    """How many events at the front are the template's head, a body and its suffix."""
    shortest = len(head) + len(suffix)
    for index, piece in enumerate(pieces):
        if not (len(piece) >= shortest and piece.startswith(head) and piece.endswith(suffix)):
            return index
    return len(pieces)


def _decode_run(literals: bytes, count: int) -> str | None:
    """The concatenated text of ``count`` NUL-joined JSON string bodies; None if any is not a
    valid body on its own."""
    if literals.count(_SEP) != count - 1:
        return None  # a raw NUL inside a body
    if b'"' in literals or b"\\" in literals:
        # Pair escaped backslashes first, as a JSON reader does from the left; then every
        # backslash left escapes the byte after it. A quote left unescaped, or a backslash
        # escaping the separator or the closing quote, would mean a different JSON structure.
        bare = literals.replace(b"\\\\", b"")
        if b"\\u" in bare:
            return None  # \\u escapes: a client may pair surrogates across events
        bare = bare.replace(b'\\"', b"")
        if b'"' in bare or b"\\" + _SEP in bare or bare.endswith(b"\\"):
            return None
    if not literals.isascii():
        try:
            literals.decode("utf-8")  # every body valid UTF-8 on its own: NUL splits sequences
        except UnicodeDecodeError:
            return None
    try:
        text = orjson.loads(b'"' + literals.replace(_SEP, b"") + b'"')
    except orjson.JSONDecodeError:
        return None  # a control character or an invalid escape
    return text if isinstance(text, str) else None


def learn_template(
    raw: bytes,
    data: bytes,
    channel: Channel,
    text: str,
    read: ChunkReader,
    *,
    side_choices: tuple[int, ...] = (),
) -> EventTemplate | None:
    """The shape of an event whose one text is ``text`` on ``channel``, if it has a usable one.

    ``read`` is the guard's own reader: the shape is kept only if it finds the probe text, and
    nothing else, in the place this function picked. ``side_choices``: as the event's
    (``EventTemplate.side_choices``).
    """
    if raw != _DATA + data + _END or any(byte in data for byte in (b"\n", b"\r", _SEP)):
        return None
    try:
        as_sent = orjson.dumps(text)
    except TypeError:
        return None  # a lone surrogate (from a \u escape): left to the per-event path
    for literal in dict.fromkeys((as_sent, json.dumps(text).encode())):
        at = data.find(literal)
        if at < 0 or data.find(literal, at + 1) >= 0:
            continue  # not written this way, or ambiguous
        prefix, suffix = data[: at + 1], data[at + len(literal) - 1 :]
        try:
            found = list(read(orjson.loads(prefix + _PROBE.encode() + suffix)))
        except Exception:  # any failure to read the probe: no template
            continue
        if found == [(channel, _PROBE)]:
            return EventTemplate(channel, prefix, suffix, side_choices)
    return None
