"""The Messages translation without a network: guarded stream -> Anthropic events.

``GuardedMessageStream`` is driven read by read as the dialect drives it. The property tests
prove the zero-leak guarantee carries over to the Messages events — no delta of any kind carries
a character of a blocked match — and that allowed streams arrive whole; every event is validated
against the ``anthropic`` package's own types, and the events are replayed through the SDK's
own accumulator (what ``messages.stream(...).get_final_message()`` does) to the final message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from proxy.endpoints.messages_stream import GuardedMessageStream, MessageTranslator
from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import StreamGuard
from proxy.stream.translated import MalformedChunk, no_tail
from shields.policy import CompiledPolicy, parse_policy
from shields.scan import check_text
from tests.support.fake_upstream import chat_completion, chunk, sse, usage_chunk
from tests.support.stream_helpers import deltas

EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)

POLICY = parse_policy(
    """
name: messages-test
refusal: {message: "No."}
stream: {holdback_chars: 20}
output:
  - {id: banned, type: denylist, phrases: ["nerve agent recipe"], words: [sarin]}
"""
)
ERROR_POLICY = parse_policy(
    """
name: messages-error-style
refusal: {message: "Blocked.", style: error}
stream: {holdback_chars: 20}
output:
  - {id: banned, type: denylist, phrases: ["nerve agent recipe"], words: [sarin]}
"""
)
BANNED = ["nerve agent recipe", "sarin"]
TOOLS = frozenset({"lookup", "other"})
filler = st.text(alphabet='abc nert sagiy.\u200bRSé€"\\', max_size=60)
DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
KEY_DELTAS = {"content": "text_delta", "reasoning_content": "thinking_delta"}


def translate(
    body: bytes,
    *,
    policy: CompiledPolicy = POLICY,
    reads: list[int] | None = None,
    streamed: bool = True,
) -> tuple[list[dict[str, Any]], GuardedMessageStream]:
    """``body`` through guard and translator, cut into network reads of the given sizes."""
    guard = StreamGuard(
        policy, StreamContext(model="m", n=1, include_usage=True), tools=TOOLS, render_end=no_tail
    )
    translator = MessageTranslator(message_id="msg_1", model="m", streamed=streamed)
    stream = GuardedMessageStream(guard, translator, policy.spec.refusal)
    events = translator.start()
    pos, i = 0, 0
    sizes = reads or [len(body) or 1]
    while pos < len(body) and not stream.closed:
        size = sizes[i % len(sizes)]
        events += stream.feed(body[pos : pos + size])
        pos, i = pos + size, i + 1
    events += stream.end()
    assert stream.closed
    validate(events)
    return events, stream


def validate(events: list[dict[str, Any]]) -> None:
    """Every event valid for the SDK, in an order its accumulator takes, blocks opened and
    closed one at a time, ending in message_stop or an error."""
    assert events[0]["type"] == "message_start" and events[1]["type"] == "ping"
    open_block: int | None = None
    started = 0
    for event in events[2:]:
        kind = event["type"]
        if kind == "error":
            ErrorResponse.model_validate(event)
            assert event is events[-1]
            continue
        EVENT.validate_python(event)
        if kind == "content_block_start":
            assert open_block is None and event["index"] == started
            open_block, started = event["index"], started + 1
        elif kind in ("content_block_delta", "content_block_stop"):
            assert event["index"] == open_block
            if kind == "content_block_stop":
                open_block = None
        elif kind == "message_delta":
            assert open_block is None
    if events[-1]["type"] != "error":
        assert [e["type"] for e in events[-2:]] == ["message_delta", "message_stop"]


def accumulated(events: list[dict[str, Any]]) -> Message:
    """The final message as the SDK's stream helper builds it from the events."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        if event["type"] in ("ping", "error"):
            continue
        snapshot = accumulate_event(
            event=EVENT.validate_python(event), current_snapshot=snapshot, json_bufs=json_bufs
        )
    assert snapshot is not None
    return Message.model_validate(snapshot.model_dump(mode="json"))


def delta_texts(events: list[dict[str, Any]], kind: str, *, but: int | None = None) -> str:
    """The text of every ``kind`` delta (but those of block ``but``)."""
    return "".join(
        e["delta"][DELTA_FIELDS[kind]]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == kind and e["index"] != but
    )


def same_message(events: list[dict[str, Any]], final: dict[str, Any] | None) -> Message:
    """The translator's final message is the one the SDK builds from the events."""
    assert final is not None
    built = accumulated(events)
    assert Message.model_validate(final).model_dump() == built.model_dump()
    return built


def call_deltas(text: str, sizes: list[int]) -> list[dict[str, Any]]:
    """A tool call whose arguments are ``{"q": text}``, in pieces."""
    return deltas(json.dumps({"q": text}), "arguments", sizes)


def body_of(text: str, key: str, sizes: list[int]) -> bytes:
    pieces = call_deltas(text, sizes) if key == "arguments" else deltas(text, key, sizes)
    return sse(*pieces, chunk({}, finish_reason="stop"), usage_chunk())


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    phrase=st.sampled_from(BANNED),
    hidden=st.sampled_from(["", "\u200b"]),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    reads=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
)
def test_zero_leak_through_the_messages_events(
    before: str,
    after: str,
    phrase: str,
    hidden: str,
    sizes: list[int],
    reads: list[int],
    key: str,
) -> None:
    text = f"{before} {hidden.join(phrase)} {after}"
    start = min(f.start for f in check_text(POLICY.output_shields, text))

    events, stream = translate(body_of(text, key, sizes), reads=reads)

    assert stream.blocked
    if key == "arguments":
        # A call is sent whole or not at all: one cut off by a block never leaves.
        assert not any(e.get("content_block", {}).get("type") == "tool_use" for e in events)
        assert delta_texts(events, "input_json_delta") == ""
    else:
        refusal_block = max(e["index"] for e in events if e["type"] == "content_block_start")
        released = delta_texts(events, KEY_DELTAS[key], but=refusal_block)
        assert text.startswith(released)
        assert len(released) <= start
    # The answer ends with the refusal, set apart by a blank line after answer text.
    final = same_message(events, stream.translator.final)
    assert final.stop_reason == "refusal"
    assert final.stop_details is not None and final.stop_details.type == "refusal"
    refusal = final.content[-1]
    assert refusal.type == "text"
    sent_text = delta_texts(events, "text_delta", but=len(final.content) - 1)
    assert refusal.text == ("\n\n" if sent_text else "") + "No."


@settings(max_examples=80, deadline=None)
@given(
    text=filler,
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    reads=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
)
def test_allowed_streams_arrive_whole(
    text: str, sizes: list[int], reads: list[int], key: str
) -> None:
    if check_text(POLICY.output_shields, text) or not text:
        return
    events, stream = translate(body_of(text, key, sizes), reads=reads)

    final = same_message(events, stream.translator.final)
    assert events[-1]["type"] == "message_stop"
    [block] = final.content
    if key == "arguments":
        assert block.type == "tool_use"
        assert block.name == "lookup" and block.id == "call_1"
        assert block.input == {"q": text}
        assert delta_texts(events, "input_json_delta") == json.dumps({"q": text})
        assert final.stop_reason == "tool_use"  # "stop" with a call is a tool call
    elif key == "content":
        assert block.type == "text" and block.text == text
        assert final.stop_reason == "end_turn"
    else:
        assert block.type == "thinking" and block.thinking == text
    assert (final.usage.input_tokens, final.usage.output_tokens) == (5, 7)


def test_a_fast_upstream_takes_the_bulk_path_and_arrives_whole() -> None:
    words = [f"w{i % 10} " for i in range(600)]
    body = sse(*deltas("".join(words), "content", [3]), chunk({}, finish_reason="stop"))

    events, stream = translate(body)

    assert stream.guard.template is not None  # runs were possible: the shape was learned
    assert delta_texts(events, "text_delta") == "".join(words)


def test_blocks_follow_the_model_and_calls_are_sent_whole() -> None:
    call = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup"}}
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "other"}}
    body = sse(
        chunk({"role": "assistant", "reasoning_content": "think "}),
        chunk({"reasoning_content": "more"}),
        chunk({"content": "Here "}),
        chunk({"content": "goes."}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [second]}),
        # Interleaved arguments of two calls: each call is its own block, in index order.
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": '}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"x"}'}}]}),
        chunk({}, finish_reason="tool_calls"),
        usage_chunk(3, 4),
    )

    events, stream = translate(body)

    shape = [
        (e["type"], e.get("content_block", e.get("delta", {})).get("type"))
        for e in events
        if e["type"].startswith("content_block")
    ]
    assert shape == [
        ("content_block_start", "thinking"),
        ("content_block_delta", "thinking_delta"),
        ("content_block_delta", "thinking_delta"),
        ("content_block_stop", None),
        ("content_block_start", "text"),
        ("content_block_delta", "text_delta"),
        ("content_block_delta", "text_delta"),
        ("content_block_stop", None),
        ("content_block_start", "tool_use"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
        ("content_block_start", "tool_use"),
        ("content_block_delta", "input_json_delta"),
        ("content_block_stop", None),
    ]
    final = same_message(events, stream.translator.final)
    assert final.model_dump(mode="json", include={"content", "stop_reason", "usage"}) == {
        "content": [
            {"type": "thinking", "thinking": "think more", "signature": ""},
            {"type": "text", "text": "Here goes.", "citations": None},
            {"type": "tool_use", "id": "call_a", "name": "lookup", "input": {"q": "x"}}
            | {"caller": None, "toolset_name": None},
            {"type": "tool_use", "id": "call_b", "name": "other", "input": {}}
            | {"caller": None, "toolset_name": None},
        ],
        "stop_reason": "tool_use",
        "usage": final.usage.model_dump(mode="json") | {"input_tokens": 3, "output_tokens": 4},
    }


def test_llama_cpp_python_sends_each_call_twice_and_it_is_read_once() -> None:
    # Every delta carries the call as the legacy function_call and as tool_calls[0], with the
    # name and id repeated (tests/support/fake_upstream.py's llamacpp shapes).
    pieces = ['{"q"', ': "Paris"}']
    body = sse(
        *[
            chunk(
                {
                    "function_call": {"name": "lookup", "arguments": piece},
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_l",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": piece},
                        }
                    ],
                }
            )
            for piece in pieces
        ],
        chunk({}, finish_reason="tool_calls"),
    )

    events, _ = translate(body)

    [block] = accumulated(events).content
    assert block.type == "tool_use" and block.input == {"q": "Paris"}


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [("{not json", "not valid JSON"), ("[1, 2]", "not a JSON object"), ('{"a":1,"a":2}', "valid")],
)
def test_tool_arguments_that_are_no_json_object_fail_the_message(
    arguments: str, problem: str
) -> None:
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "lookup"}}
    call["function"]["arguments"] = arguments
    body = sse(
        chunk({"content": "Calling."}),
        chunk({"tool_calls": [call]}),
        chunk({}, finish_reason="tool_calls"),
    )

    events, stream = translate(body)

    error = events[-1]
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert problem in error["error"]["message"]
    assert not any(e.get("content_block", {}).get("type") == "tool_use" for e in events)
    assert stream.translator.final is None


@pytest.mark.parametrize(
    "bad",
    [
        {"choices": "x"},
        {"choices": [{"index": 0, "delta": {"content": 5}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
                    "finish_reason": "stop",
                }
            ]
        },
        {"error": {"message": "upstream text that no shield read"}},
    ],
)
def test_unreadable_upstream_events_fail_with_the_proxys_words(bad: dict[str, Any]) -> None:
    # With no output shield the guard relays events unread: the translator fails them closed.
    empty = parse_policy("name: empty\n")
    body = sse(chunk({"content": "ok"}), bad, chunk({}, finish_reason="stop"))

    events, _ = translate(body, policy=empty)

    error = events[-1]
    assert error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "upstream text" not in json.dumps(events)


def test_a_stream_cut_short_fails() -> None:
    body = sse(chunk({"content": "partial"}), done=False)

    events, _ = translate(body)

    assert events[-1] == {
        "type": "error",
        "error": {
            "type": "api_error",
            "message": "The upstream stream ended before it was complete",
        },
    }


def test_refusal_style_error_is_an_error_event() -> None:
    body = body_of("a story about sarin gas", "content", [4])

    events, stream = translate(body, policy=ERROR_POLICY)

    assert stream.blocked
    assert events[-1] == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "Blocked."},
    }
    assert "sarin" not in json.dumps(events)


def test_a_blocked_collected_reply_is_the_refusal_alone() -> None:
    # Not streamed to the client: nothing was sent, so nothing partial is in the answer.
    body = body_of("fine words and then sarin", "content", [4])

    _, stream = translate(body, streamed=False)

    final = stream.translator.final
    assert final is not None
    assert final["content"] == [{"type": "text", "text": "No."}]
    assert final["stop_reason"] == "refusal"
    Message.model_validate(final)


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("content_filter", "refusal"),
        (None, "end_turn"),
    ],
)
def test_a_whole_reply_becomes_the_message(finish: str | None, stop_reason: str) -> None:
    completion = chat_completion("Hi there")
    completion["choices"][0]["finish_reason"] = finish
    completion["choices"][0]["message"]["reasoning_content"] = "hm"
    translator = MessageTranslator(message_id="msg_w", model="m", streamed=False)

    events = translator.start() + translator.reply(completion)

    validate(events)
    final = same_message(events, translator.final)
    assert [block.type for block in final.content] == ["thinking", "text"]
    assert final.stop_reason == stop_reason
    assert (final.usage.input_tokens, final.usage.output_tokens) == (5, 7)


def test_a_whole_reply_with_tool_calls() -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": 1}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "other", "arguments": ""}},
    ]
    translator = MessageTranslator(message_id="msg_t", model="m", streamed=False)

    translator.start()
    translator.reply(chat_completion(None, tool_calls=calls))

    final = translator.final
    assert final is not None
    assert final["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": 1}},
        {"type": "tool_use", "id": "call_2", "name": "other", "input": {}},
    ]
    assert final["stop_reason"] == "tool_use"


def test_a_whole_reply_whose_call_has_no_name_cannot_be_sent() -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"arguments": "{}"}}]
    translator = MessageTranslator(message_id="msg_n", model="m", streamed=False)
    translator.start()
    with pytest.raises(MalformedChunk, match="without a function name"):
        translator.reply(chat_completion(None, tool_calls=calls))
