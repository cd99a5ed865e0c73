"""The Responses translation without a network: guarded stream -> events, request -> chat.

``GuardedResponseStream`` is driven byte by byte as the handler drives it (one ``feed`` per
network read). The property tests prove the zero-leak guarantee carries over to the Responses
events — no delta of any kind carries a character of a blocked match — and that allowed streams
arrive whole; every event is validated against the ``openai`` package's types.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from proxy.endpoints.responses_request import items_to_messages, parse_responses_request
from proxy.endpoints.responses_stream import GuardedResponseStream, ResponseTranslator
from proxy.errors import BadRequest
from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import StreamGuard
from shields.policy import CompiledPolicy, parse_policy
from shields.scan import check_text
from tests.support.fake_upstream import chunk, sse, usage_chunk
from tests.support.stream_helpers import deltas

EVENT = TypeAdapter(ResponseStreamEvent)

POLICY = parse_policy(
    """
name: responses-test
refusal: {message: "No."}
stream: {holdback_chars: 20}
output:
  - {id: banned, type: denylist, phrases: ["nerve agent recipe"], words: [sarin]}
"""
)
BANNED = ["nerve agent recipe", "sarin"]
filler = st.text(alphabet="abc nert sagiy.\u200bRSé€", max_size=60)
DELTA_EVENTS = {
    "content": "response.output_text.delta",
    "reasoning_content": "response.reasoning_text.delta",
    "arguments": "response.function_call_arguments.delta",
}


def translate(
    body: bytes, *, policy: CompiledPolicy = POLICY, reads: list[int] | None = None
) -> tuple[list[dict[str, Any]], GuardedResponseStream]:
    """``body`` through guard and translator, cut into network reads of the given sizes."""
    guard = StreamGuard(policy, StreamContext(model="m", n=1, include_usage=True))
    translator = ResponseTranslator(response_id="resp_1", model="m", echo=ECHO)
    stream = GuardedResponseStream(guard, translator, policy.spec.refusal)
    events = translator.start()
    pos, i = 0, 0
    sizes = reads or [len(body) or 1]
    while pos < len(body) and not stream.closed:
        size = sizes[i % len(sizes)]
        events += stream.feed(body[pos : pos + size])
        pos, i = pos + size, i + 1
    events += stream.end()
    for event in events:
        EVENT.validate_python(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert stream.closed
    return events, stream


ECHO = parse_responses_request(b'{"model": "m", "input": "x"}').echo


def delta_text(events: list[dict[str, Any]], key: str) -> str:
    return "".join(e["delta"] for e in events if e["type"] == DELTA_EVENTS[key])


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    phrase=st.sampled_from(BANNED),
    hidden=st.sampled_from(["", "\u200b"]),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    reads=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
)
def test_zero_leak_through_the_responses_events(
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
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"), usage_chunk())

    events, stream = translate(body, reads=reads)

    assert stream.blocked
    released = delta_text(events, key)
    assert text.startswith(released)
    assert len(released) <= start
    final = events[-1]
    assert final["type"] == "response.completed"
    Response.model_validate(final["response"])
    *partial, refusal = final["response"]["output"]
    # After answer text was sent, the refusal is set apart from it by a blank line.
    separator = "\n\n" if released and key == "content" else ""
    assert refusal == {
        "id": refusal["id"],
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": separator + "No."}],
    }
    # The final response lists every item streamed before the refusal, as it was closed.
    done = [e for e in events if e["type"] == "response.output_item.done"]
    assert [e["output_index"] for e in done] == list(range(len(partial) + 1))
    assert final["response"]["output"] == [e["item"] for e in done]
    assert all(item["status"] == "incomplete" for item in partial)


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
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"), usage_chunk())

    events, _ = translate(body, reads=reads)

    assert delta_text(events, key) == text
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed"
    Response.model_validate(final)
    [item] = final["output"]
    if key == "arguments":
        assert item["arguments"] == text
    else:
        assert item["content"][0]["text"] == text
    assert final["usage"]["total_tokens"] == 12


def test_a_fast_upstream_takes_the_bulk_path_and_arrives_whole() -> None:
    # Hundreds of look-alike deltas in one read are framed in runs (``proxy/stream/runs.py``) by
    # ``StreamGuard.feed_read``, as on /v1/chat/completions; a run released whole or in parts
    # must translate into the same text, event by event.
    words = [f"w{i % 10} " for i in range(600)]
    body = sse(*deltas("".join(words), "content", [3]), chunk({}, finish_reason="stop"))

    events, stream = translate(body)

    assert stream.guard.template is not None  # runs were possible: the shape was learned
    assert delta_text(events, "content") == "".join(words)
    assert events[-1]["type"] == "response.completed"


def test_items_interleave_and_close_in_order() -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    body = sse(
        chunk({"role": "assistant", "reasoning_content": "think"}),
        chunk({"content": "Let me check."}),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 1}'}}]}),
        chunk({"content": "Done."}),
        chunk({}, finish_reason="tool_calls"),
        usage_chunk(),
    )

    events, _ = translate(body)

    added = [
        (e["output_index"], e["item"]["type"])
        for e in events
        if e["type"] == "response.output_item.added"
    ]
    assert added == [(0, "reasoning"), (1, "message"), (2, "function_call"), (3, "message")]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    # Reasoning and text close when the model moves on; calls stay open until the end, when
    # what is left closes in output order.
    assert done == [0, 1, 2, 3]
    output = events[-1]["response"]["output"]
    assert [o["type"] for o in output] == ["reasoning", "message", "function_call", "message"]
    assert output[2]["arguments"] == '{"a": 1}'


def test_usage_details_and_content_filter_finish() -> None:
    usage = usage_chunk(10, 4)
    usage["usage"]["prompt_tokens_details"] = {"cached_tokens": 6}
    usage["usage"]["completion_tokens_details"] = {"reasoning_tokens": 2}
    body = sse(chunk({"content": "x"}), chunk({}, finish_reason="content_filter"), usage)

    events, _ = translate(body)

    final = events[-1]["response"]
    assert events[-1]["type"] == "response.incomplete"
    assert final["incomplete_details"] == {"reason": "content_filter"}
    assert final["usage"]["input_tokens_details"]["cached_tokens"] == 6
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == 2
    assert final["usage"]["total_tokens"] == 14


@pytest.mark.parametrize(
    "bad",
    [
        chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": "{}"}}]}),
        chunk({"content": 5}),
        chunk({"tool_calls": "nope"}),
        {"error": {"message": "model overloaded"}},
    ],
    ids=["call without name", "content number", "tool_calls string", "in-band error"],
)
def test_unreadable_upstream_events_fail_the_response(bad: dict[str, Any]) -> None:
    empty = parse_policy("name: empty")
    body = sse(chunk({"content": "ok"}), bad, chunk({}, finish_reason="stop"))

    events, stream = translate(body, policy=empty)

    assert events[-1]["type"] == "response.failed"
    Response.model_validate(events[-1]["response"])
    assert stream.translator.failed


def test_a_stream_cut_short_fails() -> None:
    body = sse(chunk({"content": "partial"}), done=False)
    events, _ = translate(body)
    assert events[-1]["type"] == "response.failed"
    assert "ended before it was complete" in events[-1]["response"]["error"]["message"]


# ---- request translation -----------------------------------------------------------------


def test_function_calls_after_an_assistant_message_join_it() -> None:
    messages = items_to_messages(
        [
            {"role": "assistant", "content": "checking"},
            {"type": "reasoning", "id": "rs", "summary": []},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": {"x": "é"}},
            {"type": "function_call", "call_id": "b", "name": "g", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "a",
                "output": [
                    {"type": "input_text", "text": "one "},
                    {"type": "input_text", "text": "two"},
                ],
            },
        ],
        where="input",
    )
    assert messages == [
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"x": "é"}'},
                },
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "one two"},
    ]


def test_unsupported_things_name_themselves() -> None:
    cases = {
        b'{"model": "m", "input": "x", "tools": [{"type": "file_search"}]}': "tools[0].type",
        b'{"model": "m", "input": "x", "tools": [{"type": "mcp", "server_label": "g",'
        b' "connector_id": "connector_gmail"}]}': "tools[0].connector_id",
        b'{"model": "m", "input": [{"type": "item_reference", "id": "x"}]}': "input[0].type",
        b'{"model": "m", "input": "x", "prompt": {"id": "p"}}': "prompt",
        b'{"model": "m", "input": "x", "tool_choice": {"type": "web_search_preview"}}': (
            "tool_choice"
        ),
    }
    for raw, param in cases.items():
        with pytest.raises(BadRequest) as caught:
            parse_responses_request(raw)
        assert caught.value.param == param, raw
        assert "not supported" in caught.value.message


def test_ignored_hints_are_accepted_and_not_forwarded() -> None:
    parsed = parse_responses_request(
        b'{"model": "m", "input": "x", "include": ["reasoning.encrypted_content"],'
        b' "truncation": "auto", "service_tier": "auto", "prompt_cache_key": "k",'
        b' "background": false, "top_logprobs": null}'
    )
    body = parsed.chat_body([])
    assert set(body) == {"model", "messages", "stream", "stream_options"}
    assert parsed.echo["truncation"] == "auto"
