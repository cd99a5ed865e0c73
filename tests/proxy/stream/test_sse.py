"""Tests for proxy.stream.sse: SSE framing of upstream byte streams."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.stream import sse
from proxy.stream.sse import SSEDecoder, SSEError, SSEEvent, data_only, encode_data

BOM = b"\xef\xbb\xbf"
Frame = tuple[bytes | None, str | None]


def feed_all(chunks: Iterable[bytes], decoder: SSEDecoder | None = None) -> list[SSEEvent]:
    decoder = decoder or SSEDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def frames(events: Iterable[SSEEvent]) -> list[Frame]:
    """The (data, event) pairs a client acts on; framing-only events carry neither."""
    return [(e.data, e.event) for e in events if e.data is not None or e.event is not None]


def split_at(stream: bytes, cuts: Iterable[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


def reference_frames(stream: bytes) -> list[Frame]:
    """Independent oracle: the WHATWG parsing algorithm run over the whole stream at once."""
    stream = stream.removeprefix(BOM)
    *lines, _unterminated = re.split(rb"\r\n|\r|\n", stream)
    out: list[Frame] = []
    data: list[bytes] = []
    event: str | None = None
    for line in lines:
        if not line:
            if data or event is not None:
                out.append((b"\n".join(data) if data else None, event))
            data, event = [], None
        elif not line.startswith(b":"):
            name, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if name == b"data":
                data.append(value)
            elif name == b"event":
                event = value.decode("utf-8", errors="replace")
    return out


def has_blank_line(tail: bytes) -> bool:
    *lines, _unterminated = re.split(rb"\r\n|\r|\n", tail)
    return b"" in lines


# --- single events and fields ----------------------------------------------------------------


def test_single_event() -> None:
    assert SSEDecoder().feed(b"data: hello\n\n") == [SSEEvent(b"data: hello\n\n", b"hello", None)]


def test_event_is_only_emitted_at_the_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.buffered_bytes == 8
    assert decoder.feed(b"\n") == [SSEEvent(b"data: a\n\n", b"a", None)]
    assert decoder.buffered_bytes == 0
    assert decoder.finish() == b""


def test_several_events_in_one_chunk_keep_order_and_raw() -> None:
    stream = b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"
    events = SSEDecoder().feed(stream)
    assert [e.data for e in events] == [b"1", b"2", b"[DONE]"]
    assert [e.raw for e in events] == [b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"]


def test_multi_line_data_is_joined_with_lf() -> None:
    (event,) = SSEDecoder().feed(b"data: a\ndata: b\ndata\ndata:c\n\n")
    assert event.data == b"a\nb\n\nc"


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data: x", b"x"),
        (b"data:x", b"x"),
        (b"data:  x", b" x"),  # only one space is stripped
        (b"data: ", b""),
        (b"data:", b""),
        (b"data", b""),  # no colon: the whole line is the field name, the value is empty
        (b"data: a:b", b"a:b"),
        (b'data: {"k": "v"}', b'{"k": "v"}'),
    ],
)
def test_data_field_value(line: bytes, data: bytes) -> None:
    (event,) = SSEDecoder().feed(line + b"\n\n")
    assert event.data == data


@pytest.mark.parametrize(
    "stream",
    [
        b": keep-alive\n\n",
        b":\n\n",
        b"id: 7\n\n",
        b"retry: 1000\n\n",
        b"data :x\n\n",
        b"foo: x\n\n",
    ],
)
def test_events_without_data_have_none(stream: bytes) -> None:
    assert SSEDecoder().feed(stream) == [SSEEvent(stream, None, None)]


def test_comments_id_retry_and_unknown_fields_inside_an_event_are_ignored_but_kept_in_raw() -> None:
    stream = b": hi\nid: 3\ndata: a\nretry: 10\nfoo: bar\n: mid\ndata: b\n\n"
    assert SSEDecoder().feed(stream) == [SSEEvent(stream, b"a\nb", None)]


def test_event_field() -> None:
    (event,) = SSEDecoder().feed(b'event: error\ndata: {"message": "x"}\n\n')
    assert event.event == "error"
    assert event.data == b'{"message": "x"}'


def test_event_field_without_data() -> None:
    assert SSEDecoder().feed(b"event: ping\n\n") == [SSEEvent(b"event: ping\n\n", None, "ping")]


def test_last_event_field_wins_and_bad_utf8_is_replaced() -> None:
    (event,) = SSEDecoder().feed(b"event: a\nevent: b\xff\ndata: x\n\n")
    assert event.event == "b\ufffd"


def test_event_field_does_not_leak_into_the_next_event() -> None:
    events = SSEDecoder().feed(b"event: a\ndata: 1\n\ndata: 2\n\n")
    assert [(e.data, e.event) for e in events] == [(b"1", "a"), (b"2", None)]


def test_empty_chunk_is_harmless() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\n\n")[0].data == b"a"
    assert decoder.feed(b"") == []


def test_chunk_mixing_data_events_and_a_comment() -> None:
    stream = b"data: 1\n\n: ping\n\ndata: 2\ndata: 3\n\ndata: 4\n\n"
    events = SSEDecoder().feed(stream)
    assert [e.data for e in events] == [b"1", None, b"2\n3", b"4"]
    assert b"".join(e.raw for e in events) == stream


# --- line ends -------------------------------------------------------------------------------


@pytest.mark.parametrize("nl", [b"\n", b"\r\n", b"\r"])
def test_line_end_styles(nl: bytes) -> None:
    stream = b"event: e" + nl + b"data: a" + nl + b"data: b" + nl + nl + b"data: c" + nl + nl
    events = SSEDecoder().feed(stream)
    assert [(e.data, e.event) for e in events] == [(b"a\nb", "e"), (b"c", None)]
    assert b"".join(e.raw for e in events) == stream


def test_mixed_line_ends_in_one_event() -> None:
    (event,) = SSEDecoder().feed(b"data: a\rdata: b\r\ndata: c\n\r\n")
    assert event.data == b"a\nb\nc"


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    events = feed_all([b"data: a\r", b"\ndata: b\r\n\r\n"])
    assert [e.data for e in events] == [b"a\nb"]


def test_cr_at_chunk_end_followed_by_another_line() -> None:
    events = feed_all([b"data: a\r", b"data: b\r", b"\r"])
    assert [e.data for e in events] == [b"a\nb"]


def test_cr_ending_an_event_then_lf_in_next_chunk_is_not_a_blank_line() -> None:
    decoder = SSEDecoder()
    first = decoder.feed(b"data: a\r\n\r")
    assert first == [SSEEvent(b"data: a\r\n\r", b"a", None)]
    # The LF completes the CRLF: it is handed back for byte-exact forwarding, framing nothing.
    second = decoder.feed(b"\ndata: b\r\n\r\n")
    assert second == [SSEEvent(b"\n", None, None), SSEEvent(b"data: b\r\n\r\n", b"b", None)]
    assert decoder.finish() == b""


def test_cr_ending_an_event_then_lf_alone_at_eof() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: a\r\r") + decoder.feed(b"\n")
    assert [e.raw for e in events] == [b"data: a\r\r", b"\n"]
    assert decoder.finish() == b""


def test_cr_ending_an_event_then_other_byte() -> None:
    events = feed_all([b"data: a\r\r", b"data: b\r\r"])
    assert [e.data for e in events] == [b"a", b"b"]


@pytest.mark.parametrize("text", ["é", "😀", "日本語", "é😀x"])
def test_multibyte_utf8_split_at_every_offset(text: str) -> None:
    stream = f"event: {text}\ndata: {text}\n\n".encode()
    for cut in range(len(stream) + 1):
        events = feed_all([stream[:cut], stream[cut:]])
        assert [(e.data, e.event) for e in events] == [(text.encode(), text)]
    events = feed_all(stream[i : i + 1] for i in range(len(stream)))
    assert [(e.data, e.event) for e in events] == [(text.encode(), text)]


# --- blank lines and BOM: every byte lands in some raw ---------------------------------------


def test_stray_blank_lines_are_events_without_data() -> None:
    stream = b"\n\ndata: a\n\n\ndata: b\n\n\n\n\n"
    events = SSEDecoder().feed(stream)
    blank = SSEEvent(b"\n", None, None)
    assert events == [
        blank,
        blank,
        SSEEvent(b"data: a\n\n", b"a", None),
        blank,
        SSEEvent(b"data: b\n\n", b"b", None),
        blank,
        blank,
        blank,
    ]


@pytest.mark.parametrize("nl", [b"\r\n", b"\r"])
def test_stray_blank_lines_with_cr_line_ends(nl: bytes) -> None:
    stream = nl + b"data: a" + nl + nl + nl + b"data: b" + nl + nl
    events = SSEDecoder().feed(stream)
    assert [e.raw for e in events] == [
        nl,
        b"data: a" + nl + nl,
        nl,
        b"data: b" + nl + nl,
    ]


def test_stray_blank_line_split_from_its_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [SSEEvent(b"data: a\n\n", b"a", None)]
    assert decoder.feed(b"\n") == [SSEEvent(b"\n", None, None)]
    assert decoder.feed(b"\ndata: b") == [SSEEvent(b"\n", None, None)]
    assert decoder.feed(b"\n\n") == [SSEEvent(b"data: b\n\n", b"b", None)]


def test_leading_bom_is_not_part_of_the_first_field_name() -> None:
    stream = BOM + b"data: a\n\n"
    for cut in range(len(stream) + 1):
        events = feed_all([stream[:cut], stream[cut:]])
        assert events == [SSEEvent(BOM, None, None), SSEEvent(b"data: a\n\n", b"a", None)]


def test_bom_later_in_the_stream_is_not_stripped() -> None:
    events = SSEDecoder().feed(b"data: a\n\n" + BOM + b"data: b\n\n")
    assert [e.data for e in events] == [b"a", None]


def test_partial_bom_at_eof_is_returned_by_finish() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(BOM[:2]) == []
    assert decoder.buffered_bytes == 2
    assert decoder.finish() == BOM[:2]


def test_bom_prefix_that_is_no_bom_is_data() -> None:
    events = feed_all([b"\xef", b"\xbbdata: a\n\n"])
    assert [e.raw for e in events] == [b"\xef\xbbdata: a\n\n"]
    assert events[0].data is None  # the field name is b"\xef\xbbdata"


# --- finish ----------------------------------------------------------------------------------


def test_finish_on_event_boundary_is_empty() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: a\n\n")
    assert decoder.finish() == b""


@pytest.mark.parametrize(
    "tail", [b"data: partial", b"data: a\n", b"data: a\ndata: b", b"data: a\r", b"data: a\r\n"]
)
def test_finish_returns_the_unterminated_tail(tail: bytes) -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: done\n\n" + tail)
    assert [e.data for e in events] == [b"done"]
    assert decoder.buffered_bytes == len(tail)
    assert decoder.finish() == tail
    assert decoder.buffered_bytes == 0
    assert decoder.finish() == b""


def test_finish_returns_tail_fed_in_many_chunks() -> None:
    decoder = SSEDecoder()
    tail = b"data: " + b"x" * 1000
    for i in range(0, len(tail), 7):
        assert decoder.feed(tail[i : i + 7]) == []
    assert decoder.finish() == tail


# --- max_event_bytes -------------------------------------------------------------------------


def test_huge_line_without_newline_raises_before_buffering_it() -> None:
    limit = 1024 * 1024
    decoder = SSEDecoder(max_event_bytes=limit)
    piece = b"x" * 65536
    with pytest.raises(SSEError):
        for _ in range(100 * 1024 * 1024 // len(piece)):  # a hostile 100 MB line
            decoder.feed(piece)
            assert decoder.buffered_bytes <= limit
    assert decoder.buffered_bytes <= limit


def test_huge_event_in_small_pieces_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(SSEError):
        for _ in range(1000):
            decoder.feed(b"data: x\n")  # many lines, never a blank one


def test_huge_event_with_cr_line_ends_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    with pytest.raises(SSEError):
        for _ in range(1000):
            decoder.feed(b"data: x\r")


def test_oversized_complete_event_in_one_chunk_raises() -> None:
    with pytest.raises(SSEError):
        SSEDecoder(max_event_bytes=100).feed(b"data: " + b"x" * 200 + b"\n\n")


def test_event_of_exactly_max_event_bytes_is_accepted() -> None:
    stream = b"data: " + b"x" * 92 + b"\n\n"
    assert len(stream) == 100
    assert SSEDecoder(max_event_bytes=100).feed(stream)[0].raw == stream
    events = feed_all([stream[:50], stream[50:99], stream[99:]], SSEDecoder(max_event_bytes=100))
    assert [e.raw for e in events] == [stream]


def test_many_small_events_in_a_chunk_larger_than_the_limit_are_fine() -> None:
    stream = b"data: 0123456789\n\n" * 1000
    events = SSEDecoder(max_event_bytes=100).feed(stream)
    assert len(events) == 1000


def test_sse_error_is_a_value_error() -> None:
    assert issubclass(SSEError, ValueError)


# --- encode_data -----------------------------------------------------------------------------


def test_encode_data_bytes() -> None:
    assert encode_data(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_data(b"") == b"data: \n\n"


@pytest.mark.parametrize(
    "payload", [b'{"a":1}', b"", b" lead", b"[DONE]", b"a\nb", b"\n", "é".encode()]
)
def test_encode_data_round_trips(payload: bytes) -> None:
    events = SSEDecoder().feed(encode_data(payload))
    assert [e.data for e in events] == [payload]


def test_encode_data_cannot_inject_events() -> None:
    events = SSEDecoder().feed(encode_data(b"x\n\ndata: injected"))
    assert [e.data for e in events] == [b"x\n\ndata: injected"]


def test_encode_data_refuses_cr() -> None:
    with pytest.raises(ValueError, match="CR"):
        encode_data(b"a\rb")


@given(st.binary().filter(lambda b: b"\r" not in b))
def test_encode_data_round_trips_any_payload(payload: bytes) -> None:
    decoder = SSEDecoder()
    events = decoder.feed(encode_data(payload))
    assert [e.data for e in events] == [payload]
    assert decoder.finish() == b""


# --- properties ------------------------------------------------------------------------------


@dataclass
class EventSpec:
    data: list[str]
    event: str | None
    comments: list[str]
    blank_lines_before: int
    event_line_at: int

    def encode(self, nl: bytes) -> bytes:
        lines = [b"data: " + d.encode() for d in self.data]
        lines += [b":" + c.encode() for c in self.comments]
        if self.event is not None:
            lines.insert(self.event_line_at % (len(lines) + 1), b"event: " + self.event.encode())
        return nl * self.blank_lines_before + b"".join(line + nl for line in lines) + nl

    def expected(self) -> Frame | None:
        if not self.data and self.event is None:
            return None
        return (b"\n".join(d.encode() for d in self.data) if self.data else None, self.event)


_line_text = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=12
)
_event_specs = st.builds(
    EventSpec,
    data=st.lists(_line_text, max_size=3),
    event=st.none() | _line_text,
    comments=st.lists(_line_text, max_size=2),
    blank_lines_before=st.integers(0, 2),
    event_line_at=st.integers(0, 5),
)


@settings(max_examples=300, deadline=None)
@given(
    specs=st.lists(_event_specs, max_size=8),
    nl=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    tail_text=st.none() | _line_text,
    data=st.data(),
)
def test_random_events_split_anywhere_decode_the_same(
    specs: list[EventSpec], nl: bytes, tail_text: str | None, data: st.DataObject
) -> None:
    tail = b"" if tail_text is None else b"data: " + tail_text.encode()
    stream = b"".join(spec.encode(nl) for spec in specs) + tail
    expected = [frame for spec in specs if (frame := spec.expected()) is not None]

    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    splittings = [
        [stream],
        split_at(stream, cuts),
        [stream[i : i + 1] for i in range(len(stream))],
    ]
    for chunks in splittings:
        decoder = SSEDecoder()
        events = feed_all(chunks, decoder)
        rest = decoder.finish()
        assert frames(events) == expected
        assert rest == tail
        assert b"".join(e.raw for e in events) + rest == stream


_tokens = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event:",
        b"event: x",
        b"id: 1",
        b"retry: 5",
        b":",
        b" ",
        b"x",
        b"\xc3\xa9",
        b"\xf0\x9f\x98\x80",
        b"\xff",
        BOM,
        b"\r",
        b"\n",
        b"\r\n",
    ]
)


@settings(max_examples=500, deadline=None)
@given(tokens=st.lists(_tokens, max_size=40), data=st.data())
def test_arbitrary_bytes_match_the_reference_parser(
    tokens: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(tokens)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20), label="cuts")
    whole = SSEDecoder()
    whole_events = whole.feed(stream)
    whole_rest = whole.finish()
    for chunks in (split_at(stream, cuts), [stream[i : i + 1] for i in range(len(stream))]):
        decoder = SSEDecoder()
        events = feed_all(chunks, decoder)
        rest = decoder.finish()
        assert frames(events) == frames(whole_events) == reference_frames(stream)
        assert rest == whole_rest
        assert b"".join(e.raw for e in events) + rest == stream
        assert not has_blank_line(rest)


# --- API -------------------------------------------------------------------------------------


def test_public_api_is_pinned() -> None:
    assert sse.__all__ == ["SSEDecoder", "SSEError", "SSEEvent", "data_only", "encode_data"]


@settings(max_examples=300, deadline=None)
@given(specs=st.lists(_event_specs, max_size=8), nl=st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_data_only_keeps_the_data_and_nothing_else_a_client_reads(
    specs: list[EventSpec], nl: bytes
) -> None:
    stream = b"".join(spec.encode(nl) for spec in specs)
    events = SSEDecoder().feed(stream)
    cleaned = b"".join(data_only(event.raw) for event in events)
    decoded = SSEDecoder().feed(cleaned)
    assert [e.data for e in decoded if e.data is not None] == [
        e.data for e in events if e.data is not None
    ]
    assert all(e.event is None for e in decoded)
    # What is left beside the data: empty comment lines and line ends.
    for line in re.split(rb"\r\n|\r|\n", cleaned):
        assert line in (b"", b":") or line.partition(b":")[0] == b"data", line
    for event in events:
        if event.raw.startswith(b"data: ") and event.raw.count(nl) == 2 and nl == b"\n":
            assert data_only(event.raw) is event.raw  # the usual event is not copied
