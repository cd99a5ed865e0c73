"""The stream guard's bulk path (runs of look-alike events) against its per-event path.

The bulk path is only an optimisation: for any upstream byte stream, cut into reads anywhere,
the client must receive exactly what the per-event path sends, read by read. The differential
test drives both with the same hostile mix of events — invalid string bodies, escapes, split
UTF-8, events of another shape in between — under blocking and redacting policies.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import GuardState, StreamGuard, _chunk_texts
from proxy.stream.runs import EventRun, EventTemplate, learn_template
from proxy.stream.sse import SSEDecoder, SSEEvent
from shields.policy import CompiledPolicy, load_policy, parse_policy
from tests.support.fake_upstream import chunk, json_bytes, sse, usage_chunk
from tests.support.stream_helpers import channel_text

BLOCK = parse_policy(
    """
name: block
stream: {holdback_chars: 20}
output:
  - {id: banned, type: denylist, phrases: ["nerve agent"], words: [sarin]}
"""
)
REDACT = parse_policy(
    r"""
name: redact
stream: {holdback_chars: 24}
output:
  - {id: token, type: regex, action: redact, placeholder: "[T]", patterns: ['\btok_[a-z0-9]{8}\b']}
"""
)
DEFAULT = load_policy("policies/default.yaml")
POLICIES = {
    "block": BLOCK,
    "redact": REDACT,
    "default": DEFAULT,
    "empty": parse_policy("name: empty"),
}

ROLE = chunk({"role": "assistant", "content": ""})
FINISH = chunk({}, finish_reason="stop")


def content_event(literal: bytes, **fields: Any) -> bytes:
    """A content event whose string literal is ``literal`` byte for byte (valid or not)."""
    data = json_bytes(chunk({"content": "@@"}, **fields)).replace(b'"@@"', b'"' + literal + b'"')
    return b"data: " + data + b"\n\n"


class CountingDecoder(SSEDecoder):
    """Counts the runs it hands out, to show the bulk path was taken."""

    runs = 0

    def feed_runs(self, chunk: bytes, template: EventTemplate | None) -> list[SSEEvent | EventRun]:
        events = super().feed_runs(chunk, template)
        self.runs += sum(type(event) is EventRun for event in events)
        return events


def stream_of(text: str, size: int) -> bytes:
    """A whole stream carrying ``text`` in content events of ``size`` characters."""
    pieces = (orjson.dumps(text[i : i + size])[1:-1] for i in range(0, len(text), size))
    return sse(ROLE, done=False) + b"".join(map(content_event, pieces)) + sse(FINISH)


def drive(
    policy: CompiledPolicy, body: bytes, cuts: list[int], *, fast: bool
) -> tuple[list[bytes], GuardState, int]:
    """What the handler (``proxy/endpoints/chat.py``'s ``_pump``) writes for each read; and runs
    taken."""
    guard = StreamGuard(policy, StreamContext(model="m", n=1, include_usage=False))
    decoder = CountingDecoder()
    writes = []
    bounds = [0, *sorted({cut % (len(body) + 1) for cut in cuts}), len(body)]
    for start, end in itertools.pairwise(bounds):
        read = body[start:end]
        if not read:
            continue
        if fast:
            writes.append(bytes(guard.feed_read(decoder, read)))
        else:
            events = decoder.feed(read)
            writes.append(b"".join(guard.feed(event) for event in events) + guard.flush())
        if guard.closed:
            break
    else:
        writes.append(guard.end(truncated=bool(decoder.finish())))
    return writes, guard.state, decoder.runs


# Texts that trip the shields now and then, with what JSON escapes and UTF-8 make interesting.
text_piece = st.lists(
    st.sampled_from(
        [*'abnrest kio_"\\\n\x01é😀\u2028', "sarin", "nerve ", "agent", "tok_a1b2c3d4"],
    ),
    max_size=4,
).map("".join)
HOSTILE_LITERALS = [
    b'a"b',  # an unescaped quote: another JSON structure
    b"a\\",  # a trailing backslash escapes the closing quote
    b"\\u00e9",  # \u escapes: valid, but left to the per-event path
    b"\\ud83d",  # half a surrogate pair
    b"a\x01b",  # a raw control character
    b"a\x00b",  # a raw NUL
    b"\xc3",  # the first half of a UTF-8 sequence...
    b"\xa9",  # ...and the second half
    b"a\nb",  # a line end inside the event
    b"a\rb",
    b"\\q",  # an invalid escape
]


@st.composite
def events(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["utf8"] * 12 + ["ascii", "ascii", "other", "other", "hostile"]))
    if kind == "hostile":
        return content_event(draw(st.sampled_from(HOSTILE_LITERALS)))
    text = draw(text_piece)
    if kind == "other":
        return draw(
            st.sampled_from(
                [
                    b": keep-alive\n\n",
                    b"\n",
                    content_event(orjson.dumps(text)[1:-1], id="chatcmpl-other"),
                    sse(chunk({"reasoning_content": text or "x"}), done=False),
                    sse(
                        chunk({"tool_calls": [{"index": 0, "function": {"arguments": text}}]}),
                        done=False,
                    ),
                    sse(usage_chunk(), done=False),
                ]
            )
        )
    literal = orjson.dumps(text) if kind == "utf8" else json.dumps(text).encode()
    return content_event(literal[1:-1])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    middle=st.lists(events(), min_size=1, max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=12),
    policy=st.sampled_from(sorted(POLICIES)),
    done=st.booleans(),
)
def test_bulk_path_writes_exactly_what_the_per_event_path_writes(
    middle: list[bytes], cuts: list[int], policy: str, done: bool
) -> None:
    body = sse(ROLE, done=False) + b"".join(middle) + sse(FINISH, done=done)
    slow = drive(POLICIES[policy], body, cuts, fast=False)
    fast = drive(POLICIES[policy], body, cuts, fast=True)
    assert fast[:2] == slow[:2]


def test_text_less_events_before_a_block_in_a_run_leave_as_on_the_per_event_path() -> None:
    # Found by the differential test above (one run in a few hundred): a run that starts with
    # empty-content events and then blocks. The per-event path sends those events at once,
    # as nothing is held before them; the bulk path used to drop them with the run.
    learning = b"".join(content_event(b"calm words ") for _ in range(40))
    tail = b"".join(content_event(b"") for _ in range(30)) + content_event(b" sarin ")
    tail += b"".join(content_event(b"more ") for _ in range(30))
    body = sse(ROLE, done=False) + learning + tail + sse(FINISH)
    cuts = [len(body) - len(tail) - len(sse(FINISH))]
    fast = drive(BLOCK, body, cuts, fast=True)
    slow = drive(BLOCK, body, cuts, fast=False)
    assert fast[2] > 0  # the tail was taken as a run
    assert fast[1] is GuardState.BLOCKED
    assert fast[:2] == slow[:2]
    assert fast[0][1].startswith(content_event(b"") * 30)


@pytest.mark.parametrize("policy", ["default", "empty"])
def test_a_typical_stream_is_taken_in_runs_and_leaves_byte_for_byte(policy: str) -> None:
    body = stream_of("The quiet village by the river wakes early. " * 200, 4)
    cuts = list(range(0, len(body), 65536))
    writes, state, runs = drive(POLICIES[policy], body, cuts, fast=True)
    assert state is GuardState.DONE
    assert b"".join(writes) == body
    assert runs >= len(cuts) - 2  # every read after the one that taught the shape


@pytest.mark.parametrize("policy", ["block", "redact"])
def test_blocks_and_redactions_inside_runs(policy: str) -> None:
    text = (
        ("harmless words " * 30) + ("sarin" if policy == "block" else "tok_a1b2c3d4") + " end" * 30
    )
    body = stream_of(text, 3)
    cuts = list(range(0, len(body), 4000))
    writes, state, runs = drive(POLICIES[policy], body, cuts, fast=True)
    assert runs > 0
    out = b"".join(writes)
    if policy == "block":
        assert state is GuardState.BLOCKED
        assert "sar" not in channel_text(out, "content")
    else:
        assert state is GuardState.DONE
        assert channel_text(out, "content") == text.replace("tok_a1b2c3d4", "[T]")
    assert (writes, state) == drive(POLICIES[policy], body, cuts, fast=False)[:2]


def template_of(text: str, **fields: Any) -> EventTemplate | None:
    event = content_event(orjson.dumps(text)[1:-1], **fields)
    data = event[len(b"data: ") : -2]
    return learn_template(event, data, (0, "content"), text, _chunk_texts)


def test_the_template_is_the_content_literal_and_nothing_else() -> None:
    template = template_of("Hello")
    assert template is not None
    assert template.prefix.endswith(b'"content":"')
    assert template.suffix.startswith(b'"},"logprobs"')
    # The same text elsewhere in the event makes the place ambiguous: no template.
    assert template_of("fake-model") is None
    # A text whose literal sits in a field the guard does not read as this channel's text.
    event = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}],"note":"Hi"}\n\n'
    assert learn_template(event, event[6:-2], (0, "content"), "Hi", _chunk_texts) is None


def test_a_run_stops_at_the_first_event_of_another_shape() -> None:
    template = template_of("Hello")
    assert template is not None
    body = (
        content_event(b"ab")
        + content_event(b"c\\nd")
        + content_event(b"ef", id="chatcmpl-other")
        + content_event(b"gh")
    )
    run = template.take_run(body + b"data: {")
    assert run is not None
    assert (run.count, run.text, bytes(run.raw)) == (2, "abc\nd", body[: len(run.raw)])
    assert bytes(run.raw) == content_event(b"ab") + content_event(b"c\\nd")


@pytest.mark.parametrize("literal", HOSTILE_LITERALS)
def test_a_run_never_holds_an_invalid_or_ambiguous_body(literal: bytes) -> None:
    template = template_of("Hello")
    assert template is not None
    body = content_event(b"ok") + content_event(literal) + content_event(b"ok")
    assert template.take_run(body) is None


def test_a_run_splits_at_event_boundaries_without_copying_its_front() -> None:
    template = template_of("Hello")
    assert template is not None
    pieces = [b"ab", b'c\\"d', b"", "é😀".encode(), b"xyz"]
    body = b"".join(content_event(piece) for piece in pieces)
    run = template.take_run(body)
    assert run is not None and run.text == 'abc"dé😀xyz'
    for chars in range(len(run.text) + 1):
        parts = run.split(chars)
        if parts is None:
            assert chars < 2  # not even the first event fits
            continue
        front, rest = parts
        assert bytes(front.raw) + bytes(rest.raw) == body
        assert front.text + rest.text == run.text
        assert len(front.text) <= chars
        # Greedy: one more event would not fit.
        more = run.split(len(front.text) + 1)
        assert more is None or len(more[0].text) <= chars or more[0].count == front.count
        assert type(rest.raw) is bytes  # the held part never pins the whole read


def test_carriage_return_streams_take_the_per_event_path() -> None:
    template = template_of("Hello")
    body = content_event(b"ab").replace(b"\n\n", b"\r\n\r\n") * 3
    events = SSEDecoder().feed_runs(body, template)
    assert [type(event).__name__ for event in events] == ["SSEEvent"] * 3


def test_a_lone_surrogate_in_the_first_text_neither_breaks_nor_teaches_the_shape() -> None:
    body = sse(ROLE, done=False) + content_event(b"\\ud83d") + content_event(b"ok") * 3
    body += sse(FINISH)
    writes, state, _ = drive(BLOCK, body, [], fast=True)
    assert state is GuardState.DONE
    assert b"".join(writes) == body
