"""End to end: the Responses API, with the official ``openai`` client, over a chat backend.

The proxy runs its real server code in front of the scripted fake upstream, which speaks only
chat completions. Every event and response object the proxy produces is validated against the
``openai`` package's own types (``openai.types.responses``), and the SDK's helpers —
``responses.create``, ``create(stream=True)`` and ``responses.stream(...)`` with
``get_final_response()`` — must accept every reply.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT, MODEL, REFUSAL
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chunk,
    error_body,
    json_bytes,
    sse,
    usage_chunk,
)

MakeClient = Callable[..., openai.AsyncOpenAI]
Proxy = Callable[..., Awaitable[RunningServer]]

BANNED_IN = "how do I build a bomb"  # an input block phrase of the default policy
GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # redacted both ways by the default policy
AWS_KEY = "AKIAQ3EGRK5JXWZY7N4T"

EVENT = TypeAdapter(ResponseStreamEvent)

ERROR_STYLE_POLICY = """
version: 1
name: strict-errors
refusal: {message: "Blocked by policy.", style: error}
stream: {holdback_chars: 32}
input:
  - {id: weapons, type: denylist, phrases: ["build a bomb"], action: block}
output:
  - {id: weapons, type: denylist, phrases: ["synthesize sarin"], action: block}
"""

EMPTY_POLICY = """
version: 1
name: empty
"""

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
TIME_TOOL = {
    "type": "function",
    "name": "get_time",
    "parameters": {
        "type": "object",
        "properties": {"zone": {"type": "string"}},
        "required": ["zone"],
        "additionalProperties": False,
    },
    "strict": True,
}


# ---- helpers -----------------------------------------------------------------------------


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> Proxy:
    """``await proxy(policy=None, **settings)``: a proxy whose store is a fresh SQLite file."""

    async def start(policy: Any = None, /, **settings: Any) -> RunningServer:
        settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
        return await make_proxy(policy, **settings)

    return start


def content_stream(
    text: str,
    *,
    piece: int = 3,
    finish_reason: str | None = "stop",
    usage: bool = True,
    key: str = "content",
) -> list[Any]:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({key: text[i : i + piece]}) for i in range(0, len(text), piece)]
    if finish_reason is not None:
        events.append(chunk({}, finish_reason=finish_reason))
    if usage:
        events.append(usage_chunk(5, 7))
    return events


def text_reply(text: str, **kwargs: Any) -> Reply:
    return Reply(events=content_stream(text, **kwargs))


async def post(
    http: aiohttp.ClientSession,
    server: RunningServer,
    body: dict[str, Any] | bytes,
    *,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", "Authorization": "Bearer sk-client"}
    hdrs.update(headers or {})
    async with http.post(f"{server.url}/v1/responses", data=data, headers=hdrs) as resp:
        return resp.status, resp.headers, await resp.read()


def parse_events(raw: bytes) -> list[dict[str, Any]]:
    """Every event of a Responses stream, validated against the SDK's types.

    Each event is ``event: <type>`` + ``data: <json>``; sequence numbers count up from 0.
    """
    assert raw.endswith(b"\n\n"), raw[-80:]
    events = []
    for block in raw[:-2].split(b"\n\n"):
        name_line, data_line = block.split(b"\n")
        assert name_line.startswith(b"event: ") and data_line.startswith(b"data: "), block
        event = json.loads(data_line[len(b"data: ") :])
        assert event["type"] == name_line[len(b"event: ") :].decode()
        EVENT.validate_python(event)
        events.append(event)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


async def stream_events(
    http: aiohttp.ClientSession, server: RunningServer, **body: Any
) -> tuple[Any, list[dict[str, Any]]]:
    status, headers, raw = await post(http, server, {"model": MODEL, "stream": True, **body})
    assert status == 200, raw
    assert headers["content-type"].startswith("text/event-stream")
    return headers, parse_events(raw)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"].removeprefix("response.") for e in events]


def squeeze(names: list[str]) -> list[str]:
    """Runs of one delta event type collapsed to one entry."""
    out: list[str] = []
    for name in names:
        if not (out and out[-1] == name and name.endswith(".delta")):
            out.append(name)
    return out


def final_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    response = events[-1]["response"]
    Response.model_validate(response)
    return response


def validated(response: Any) -> Response:
    """An SDK object (built without validation) checked against the SDK's model."""
    return Response.model_validate(response.model_dump(mode="json", by_alias=True))


def upstream_body(upstream: FakeUpstream, index: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = upstream.requests[index].json()
    return body


def tool_call_delta(
    index: int, *, id: str | None = None, name: str | None = None, arguments: Any = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    if arguments is not None:
        call["function"]["arguments"] = arguments
    return chunk({"tool_calls": [call]})


# ---- plain text --------------------------------------------------------------------------


async def test_plain_text_non_stream(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("Hello there, wörld €"))
    client = make_client(await proxy())

    raw = await client.responses.with_raw_response.create(
        model=MODEL,
        input="Say hello",
        instructions="Be brief.",
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=100,
        metadata={"team": "search"},
    )

    assert raw.http_response.status_code == 200
    assert raw.headers["x-shieldgate-policy"] == "default"
    response = Response.model_validate_json(raw.http_response.content)
    assert response.status == "completed"
    assert response.output_text == "Hello there, wörld €"
    assert response.model == MODEL
    assert response.instructions == "Be brief."
    assert response.metadata == {"team": "search"}
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.3, 0.9, 100)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (5, 7)
    assert response.usage.total_tokens == 12
    [message] = response.output
    assert message.type == "message" and message.status == "completed"
    assert raw.parse().output_text == "Hello there, wörld €"

    sent = upstream_body(upstream)
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Say hello"},
    ]
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.3, 0.9, 100)
    assert "metadata" not in sent and "store" not in sent
    assert upstream.requests[-1].path == "/v1/chat/completions"


async def test_plain_text_stream_event_sequence(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(text_reply("Hello there, wörld €"))
    server = await proxy()

    _, events = await stream_events(http, server, input="Say hello")

    assert squeeze(types(events)) == [
        "created",
        "in_progress",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(deltas) == "Hello there, wörld €"
    assert len(deltas) > 1  # streamed, not buffered to the end
    assert events[0]["response"]["status"] == "in_progress"
    assert events[0]["response"]["output"] == []
    final = final_of(events)
    assert final["output"][0]["content"][0]["text"] == "Hello there, wörld €"
    assert final["usage"]["total_tokens"] == 12
    assert {e["response"]["id"] for e in events if "response" in e} == {final["id"]}
    # What response.completed carried is what was stored, and what GET returns.
    async with http.get(
        f"{server.url}/v1/responses/{final['id']}", headers={"Authorization": "Bearer sk-client"}
    ) as resp:
        assert resp.status == 200
        assert await resp.json() == final


async def test_plain_text_with_sdk_stream_helpers(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("Streaming via the SDK."), text_reply("And the helper."))
    client = make_client(await proxy())

    stream = await client.responses.create(model=MODEL, input="hi", stream=True)
    got = [event async for event in stream]
    assert got[-1].type == "response.completed"
    assert "".join(e.delta for e in got if e.type == "response.output_text.delta") == (
        "Streaming via the SDK."
    )
    assert validated(got[-1].response).output_text == "Streaming via the SDK."

    async with client.responses.stream(model=MODEL, input="hi again") as helper:
        seen = [event.type async for event in helper]
        final = await helper.get_final_response()
    assert "response.output_text.done" in seen
    assert final.output_text == "And the helper."
    assert validated(final).status == "completed"


# ---- tools -------------------------------------------------------------------------------


def parallel_call_events() -> list[Any]:
    """Two calls, interleaved by index; the second one's arguments arrive as a JSON object."""
    return [
        chunk({"role": "assistant", "content": None}),
        tool_call_delta(0, id="call_a", name="get_weather", arguments='{"ci'),
        tool_call_delta(1, id="call_b", name="get_time"),
        tool_call_delta(0, arguments='ty": "Par'),
        tool_call_delta(1, arguments={"zone": "Europe/Zürich"}),
        tool_call_delta(0, arguments='is"}'),
        chunk({}, finish_reason="tool_calls"),
        usage_chunk(),
    ]


def assert_two_calls(output: list[Any]) -> None:
    calls = [(o.type, o.call_id, o.name, o.arguments, o.status) for o in output]
    assert calls == [
        ("function_call", "call_a", "get_weather", '{"city": "Paris"}', "completed"),
        ("function_call", "call_b", "get_time", '{"zone": "Europe/Zürich"}', "completed"),
    ]
    assert json.loads(output[1].arguments) == {"zone": "Europe/Zürich"}


async def test_two_parallel_function_calls(
    upstream: FakeUpstream,
    proxy: Proxy,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    upstream.enqueue(Reply(events=parallel_call_events(), repeat=3))
    server = await proxy()
    client = make_client(server)
    tools: Any = [WEATHER_TOOL, TIME_TOOL]

    response = await client.responses.create(
        model=MODEL, input="Weather and time in Paris?", tools=tools, parallel_tool_calls=True
    )
    assert_two_calls(validated(response).output)
    assert [t.name for t in response.tools if t.type == "function"] == ["get_weather", "get_time"]
    sent = upstream_body(upstream)
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather in a city",
                "parameters": WEATHER_TOOL["parameters"],
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {"name": "get_time", "parameters": TIME_TOOL["parameters"], "strict": True},
        },
    ]
    assert sent["parallel_tool_calls"] is True

    async with client.responses.stream(model=MODEL, input="again", tools=tools) as helper:
        deltas = [e async for e in helper if e.type == "response.function_call_arguments.delta"]
        final = await helper.get_final_response()
    assert_two_calls(final.output)
    assert {d.output_index for d in deltas} == {0, 1}

    _, events = await stream_events(http, server, input="raw", tools=tools)
    added = [e for e in events if e["type"] == "response.output_item.added"]
    assert [(e["output_index"], e["item"]["call_id"]) for e in added] == [
        (0, "call_a"),
        (1, "call_b"),
    ]
    done = {
        e["output_index"]: e["arguments"] for e in events if e["type"].endswith("arguments.done")
    }
    assert done == {0: '{"city": "Paris"}', 1: '{"zone": "Europe/Zürich"}'}
    per_item = {
        i: "".join(
            e["delta"]
            for e in events
            if e["type"].endswith("arguments.delta") and e["output_index"] == i
        )
        for i in (0, 1)
    }
    assert per_item == done


async def test_function_call_output_round_trip_with_previous_response(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(events=parallel_call_events()), text_reply("Sunny, 10:00."))
    client = make_client(await proxy())
    tools: Any = [WEATHER_TOOL, TIME_TOOL]

    first = await client.responses.create(model=MODEL, input="Weather and time?", tools=tools)
    second = await client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        tools=tools,
        input=[
            {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_b", "output": "10:00"},
        ],
    )

    assert second.output_text == "Sunny, 10:00."
    assert second.previous_response_id == first.id
    assert upstream_body(upstream)["messages"] == [
        {"role": "user", "content": "Weather and time?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"zone": "Europe/Zürich"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": "10:00"},
    ]


async def test_input_items_are_translated(upstream: FakeUpstream, proxy: Proxy) -> None:
    upstream.enqueue(text_reply("ok"))
    server = await proxy()
    async with aiohttp.ClientSession() as http:
        status, _, raw = await post(
            http,
            server,
            {
                "model": MODEL,
                "instructions": "sys",
                "input": [
                    {"role": "developer", "content": "dev rules"},
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "look"},
                            {
                                "type": "input_image",
                                "image_url": "https://x/y.png",
                                "detail": "low",
                            },
                        ],
                    },
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": "msg_1",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "a cat", "annotations": []}],
                    },
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "get_weather",
                        "arguments": '{"city": "Oslo"}',
                    },
                    {"type": "function_call_output", "call_id": "c1", "output": "cold"},
                    {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
                ],
                "tools": [WEATHER_TOOL],
                "tool_choice": {"type": "function", "name": "get_weather"},
                "text": {
                    "format": {
                        "type": "json_schema",
                        "name": "answer",
                        "schema": {"type": "object"},
                        "strict": True,
                    }
                },
                "reasoning": {"effort": "low"},
                "include": ["reasoning.encrypted_content"],
                "store": False,
            },
        )
    assert status == 200, raw
    Response.model_validate_json(raw)
    sent = upstream_body(upstream)
    assert sent["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "system", "content": "dev rules"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": "a cat",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "cold"},
        {"role": "user", "content": "thanks"},
    ]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
    }
    assert sent["reasoning_effort"] == "low"
    assert "include" not in sent


async def test_allowed_tools_narrow_the_tools_sent(upstream: FakeUpstream, proxy: Proxy) -> None:
    upstream.enqueue(text_reply("ok"))
    server = await proxy()
    async with aiohttp.ClientSession() as http:
        status, _, raw = await post(
            http,
            server,
            {
                "model": MODEL,
                "input": "hi",
                "tools": [WEATHER_TOOL, TIME_TOOL],
                "tool_choice": {
                    "type": "allowed_tools",
                    "mode": "required",
                    "tools": [{"type": "function", "name": "get_time"}],
                },
            },
        )
    assert status == 200, raw
    sent = upstream_body(upstream)
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_time"]
    assert sent["tool_choice"] == "required"


# ---- reasoning -----------------------------------------------------------------------------


async def test_reasoning_becomes_a_reasoning_item(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    events = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "The user "}),
        chunk({"reasoning_content": "greets me."}),
        chunk({"content": "Hi!"}),
        chunk({}, finish_reason="stop"),
        usage_chunk(),
    ]
    upstream.enqueue(Reply(events=events, repeat=2))
    server = await proxy()

    _, got = await stream_events(http, server, input="hello")
    assert squeeze(types(got)) == [
        "created",
        "in_progress",
        "output_item.added",
        "content_part.added",
        "reasoning_text.delta",
        "reasoning_text.done",
        "content_part.done",
        "output_item.done",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    reasoning, message = final_of(got)["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["content"] == [{"type": "reasoning_text", "text": "The user greets me."}]
    assert message["content"][0]["text"] == "Hi!"

    async with make_client(server).responses.stream(model=MODEL, input="hello") as helper:
        final = await helper.get_final_response()
    assert [o.type for o in final.output] == ["reasoning", "message"]
    assert final.output_text == "Hi!"


# ---- guardrails --------------------------------------------------------------------------


def stream_with_banned_phrase(prefix_len: int = 300) -> tuple[str, list[Any], int]:
    """Content with BANNED_OUT after ``prefix_len`` chars; events; bytes up to the phrase's end."""
    prefix = ("Well, here is a long and harmless preamble. " * 10)[:prefix_len]
    text = prefix + BANNED_OUT + " by mixing the following precursors in a flask"
    events = content_stream(text, usage=False)
    cut, seen = 0, 0
    for event in events:
        cut += len(sse(event, done=False))
        seen += len(event["choices"][0]["delta"].get("content") or "")
        if seen >= len(prefix) + len(BANNED_OUT):
            break
    return text, events, cut


def assert_refusal_response(
    response: dict[str, Any], partial: tuple[str, ...] = (), *, separated: bool = False
) -> None:
    """``partial``: the types of the items a stream sent before the block (closed incomplete);
    ``separated``: answer text was sent, and the refusal starts with a blank line."""
    assert response["status"] == "completed"
    *before, message = response["output"]
    assert [(item["type"], item["status"]) for item in before] == [
        (kind, "incomplete") for kind in partial
    ]
    assert message["type"] == "message" and message["role"] == "assistant"
    refusal = "\n\n" + REFUSAL if separated else REFUSAL
    assert message["content"] == [{"type": "refusal", "refusal": refusal}]


async def test_output_block_mid_stream_is_a_refusal_and_closes_the_upstream(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    text, events, cut = stream_with_banned_phrase()
    # The upstream stalls right after the phrase: only the proxy can end this response.
    upstream.enqueue(Reply(events=events, stall_after_bytes=cut))
    server = await proxy()

    started = time.monotonic()
    _, got = await stream_events(http, server, input="Tell me a story")

    assert time.monotonic() - started < 1.5
    released = "".join(e["delta"] for e in got if e["type"] == "response.output_text.delta")
    # No delta carries any character of the banned phrase.
    assert text.startswith(released)
    assert len(released) <= text.index(BANNED_OUT)
    assert all("sarin" not in json.dumps(e) for e in got)
    names = types(got)
    assert names[-7:] == [
        "output_item.added",
        "content_part.added",
        "refusal.delta",
        "refusal.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    refusal_delta = got[names.index("refusal.delta")]
    # Set apart by a blank line from the text sent, if any was.
    assert refusal_delta["delta"] == ("\n\n" if released else "") + REFUSAL
    assert got[names.index("content_part.added", len(names) - 7)]["part"] == {
        "type": "refusal",
        "refusal": "",
    }
    sent = ("message",) if released else ()
    assert_refusal_response(final_of(got), sent, separated=bool(released))
    assert await upstream.wait_for_disconnect(1.0) is not None


async def test_output_block_with_the_sdk_helpers(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    text, events, _ = stream_with_banned_phrase()
    stalled = Reply(events=events, stall_after_bytes=len(sse(*events)), chunk_delay=0.002)
    upstream.enqueue(stalled, stalled)
    client = make_client(await proxy())

    async with client.responses.stream(model=MODEL, input="Tell me") as helper:
        got = [e async for e in helper]
        final = await helper.get_final_response()
    released = "".join(e.delta for e in got if e.type == "response.output_text.delta")
    assert released and text.startswith(released)  # some text passed before the block...
    assert len(released) <= text.index(BANNED_OUT)
    # ...its message item was closed as incomplete, and the answer ends with the refusal.
    closed = [e.item for e in got if e.type == "response.output_item.done"]
    assert [(item.type, item.status) for item in closed] == [
        ("message", "incomplete"),
        ("message", "completed"),
    ]
    assert_refusal_response(validated(final).model_dump(mode="json"), ("message",), separated=True)
    assert final.output_text == released
    assert await upstream.wait_for_disconnect(1.0) is not None

    raw = await client.responses.with_raw_response.create(model=MODEL, input="Tell me")
    assert raw.headers["x-shieldgate-blocked"] == "output"
    assert b"sarin" not in raw.http_response.content
    assert_refusal_response(json.loads(raw.http_response.content))
    assert await upstream.wait_for_disconnect(1.0) is not None


async def test_output_block_in_function_call_arguments(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    # Benign text first, paced: the call (held until its arguments start, so that its name
    # is whole) and some arguments leave before the block cuts the call off.
    note = "a calm and ordinary note " * 8 + "first " + BANNED_OUT + " then more text " * 5
    arguments = json.dumps({"note": note})
    events = [chunk({"role": "assistant", "content": None})]
    events.append(tool_call_delta(0, id="call_x", name="get_weather", arguments=""))
    events += [tool_call_delta(0, arguments=arguments[i : i + 8]) for i in range(0, 400, 8)]
    upstream.enqueue(Reply(events=events, stall_after_bytes=len(sse(*events)), chunk_delay=0.005))
    server = await proxy()

    _, got = await stream_events(http, server, input="go", tools=[WEATHER_TOOL])

    released = "".join(e["delta"] for e in got if e["type"].endswith("arguments.delta"))
    assert arguments.startswith(released) and len(released) <= arguments.index(BANNED_OUT)
    assert all("sarin" not in json.dumps(e) for e in got)
    call_done = next(e for e in got if e["type"] == "response.output_item.done")
    assert call_done["item"]["status"] == "incomplete"
    assert_refusal_response(final_of(got), ("function_call",))
    assert await upstream.wait_for_disconnect(1.0) is not None


async def test_input_block_never_calls_the_upstream(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    server = await proxy()
    client = make_client(server)

    raw = await client.responses.with_raw_response.create(model=MODEL, input=BANNED_IN)
    assert raw.http_response.status_code == 200
    assert raw.headers["x-shieldgate-blocked"] == "input"
    blocked = Response.model_validate_json(raw.http_response.content)
    assert_refusal_response(blocked.model_dump(mode="json"))

    headers, events = await stream_events(
        http, server, input=[{"role": "user", "content": BANNED_IN}]
    )
    assert headers["x-shieldgate-blocked"] == "input"
    assert types(events) == [
        "created",
        "in_progress",
        "output_item.added",
        "content_part.added",
        "refusal.delta",
        "refusal.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    assert_refusal_response(final_of(events))

    async with client.responses.stream(model=MODEL, input=BANNED_IN) as helper:
        final = await helper.get_final_response()
    assert final.output[0].type == "message"
    assert final.output[0].content[0].type == "refusal"
    assert upstream.requests == []


async def test_blocked_input_is_not_replayed_by_previous_response_id(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("Happy to help with something else."))
    client = make_client(await proxy())

    blocked = await client.responses.create(model=MODEL, input=BANNED_IN)
    follow_up = await client.responses.create(
        model=MODEL, input="Then tell me a joke", previous_response_id=blocked.id
    )

    assert follow_up.output_text == "Happy to help with something else."
    assert upstream_body(upstream)["messages"] == [
        {"role": "assistant", "content": REFUSAL},
        {"role": "user", "content": "Then tell me a joke"},
    ]


async def test_input_redaction_reaches_upstream_and_store_redacted(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("noted"), text_reply("again"))
    client = make_client(await proxy())

    first = await client.responses.create(model=MODEL, input=f"my key is {AWS_KEY}, ok?")
    assert upstream_body(upstream)["messages"] == [
        {"role": "user", "content": "my key is [CREDENTIAL], ok?"}
    ]
    await client.responses.create(model=MODEL, input="and now?", previous_response_id=first.id)
    assert AWS_KEY.encode() not in upstream.requests[-1].body
    assert upstream_body(upstream)["messages"][0] == {
        "role": "user",
        "content": "my key is [CREDENTIAL], ok?",
    }


async def test_output_redaction_in_stream_deltas(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(text_reply(f"Use {GH_TOKEN} to log in, then continue as usual."))
    server = await proxy()

    _, events = await stream_events(http, server, input="token?")

    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Use [CREDENTIAL] to log in, then continue as usual."
    assert GH_TOKEN[:8] not in json.dumps(events)
    assert final_of(events)["output"][0]["content"][0]["text"] == text


async def test_style_error_policy(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    server = await proxy(ERROR_STYLE_POLICY)
    client = make_client(server)

    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input="help me build a bomb")
    assert caught.value.code == "content_filter"
    assert upstream.requests == []

    _, events, cut = stream_with_banned_phrase()
    upstream.enqueue(Reply(events=events, stall_after_bytes=cut))
    _, got = await stream_events(http, server, input="story")
    assert got[-1]["type"] == "error"
    assert (got[-1]["code"], got[-1]["message"]) == ("content_filter", "Blocked by policy.")
    assert all("sarin" not in json.dumps(e) for e in got)
    assert await upstream.wait_for_disconnect(1.0) is not None

    upstream.enqueue(Reply(events=events, stall_after_bytes=cut))
    with pytest.raises(openai.BadRequestError) as output_block:
        await client.responses.create(model=MODEL, input="story")
    assert output_block.value.code == "content_filter"
    assert output_block.value.response.headers["x-shieldgate-blocked"] == "output"


# ---- ends other than completed -----------------------------------------------------------


async def test_length_finish_is_incomplete(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(events=content_stream("Once upon a", finish_reason="length"), repeat=2))
    server = await proxy()
    client = make_client(server)

    response = validated(
        await client.responses.create(model=MODEL, input="story", max_output_tokens=3)
    )
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "Once upon a"
    assert upstream_body(upstream)["max_tokens"] == 3

    _, events = await stream_events(http, server, input="story", max_output_tokens=3)
    assert events[-1]["type"] == "response.incomplete"
    final = final_of(events)
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][0]["status"] == "incomplete"


LONG_TEXT = "".join(f"sentence number {i} is perfectly harmless. " for i in range(12))


async def test_backend_failure_mid_stream_is_response_failed(
    upstream: FakeUpstream,
    proxy: Proxy,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    # The drop falls inside the banned phrase (was: anywhere in LONG_TEXT, with the check that
    # the fixed window of 64 was still held; the adaptive hold-back releases harmless text at
    # once, so the phrase's first half is what must stay unreleased now).
    text = LONG_TEXT[:300] + BANNED_OUT + " and more. " + LONG_TEXT[:100]
    sent = content_stream(text, piece=4)
    payload = sse(*sent, done=False)
    middle = 1 + (text.index(BANNED_OUT) + len(BANNED_OUT) // 2) // 4  # sent[0] is the role
    drop = len(sse(*sent[: middle + 1], done=False)) + 5  # inside the event after it
    received = text[: (payload[:drop].count(b"\n\n") - 1) * 4]
    assert BANNED_OUT[:8] in received  # the proxy is sent half the phrase
    upstream.enqueue(
        Reply(chunks=[payload[:drop], payload[drop:]], drop_after_bytes=drop, repeat=3)
    )
    server = await proxy()

    _, events = await stream_events(http, server, input="talk")
    assert events[-1]["type"] == "response.failed"
    final = final_of(events)
    assert final["status"] == "failed"
    assert final["error"]["code"] == "server_error"
    assert "upstream" in final["error"]["message"].lower()
    released = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert received.startswith(released)
    # Nothing of the phrase was released, not even its first character.
    assert len(released) <= text.index(BANNED_OUT)
    assert final["output"][0]["status"] == "incomplete"
    assert len(upstream.requests) == 1  # never retried once bytes went out

    client = make_client(server)
    stream = await client.responses.create(model=MODEL, input="talk", stream=True)
    got = [event async for event in stream]
    assert got[-1].type == "response.failed"
    assert validated(got[-1].response).error is not None

    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model=MODEL, input="talk")
    assert caught.value.status_code == 502


async def test_malformed_upstream_event_fails_closed_without_output_shields(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(events=[chunk({"content": "fine"}), "{not json"]))
    server = await proxy(EMPTY_POLICY)

    _, events = await stream_events(http, server, input="x")

    assert events[-1]["type"] == "response.failed"
    assert "invalid" in final_of(events)["error"]["message"]


async def test_upstream_errors_are_relayed_before_the_stream_starts(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(status=400, body=json_bytes(error_body("bad model", type="invalid_request_error"))),
        Reply(body=b"<html>oops</html>", headers={"content-type": "text/html"}),
    )
    client = make_client(await proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input="hi", stream=True)
    assert "bad model" in str(caught.value)

    with pytest.raises(openai.APIStatusError) as not_a_stream:
        await client.responses.create(model=MODEL, input="hi")
    assert not_a_stream.value.status_code == 502


# ---- stored responses --------------------------------------------------------------------


async def test_previous_response_id_continues_the_conversation(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("Nice to meet you, Ada."), text_reply("You are Ada."))
    client = make_client(await proxy())

    first = await client.responses.create(
        model=MODEL, instructions="Be kind.", input="My name is Ada."
    )
    async with client.responses.stream(
        model=MODEL,
        instructions="Be brief.",
        input="What is my name?",
        previous_response_id=first.id,
    ) as helper:
        second = await helper.get_final_response()

    assert second.output_text == "You are Ada."
    assert second.previous_response_id == first.id
    # Instructions are not carried over; the first turn's input and output are.
    assert upstream_body(upstream)["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Nice to meet you, Ada."},
        {"role": "user", "content": "What is my name?"},
    ]


async def test_retrieve_and_delete_stored_responses(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("stored"), text_reply("not stored"))
    server = await proxy()
    client = make_client(server)

    created = await client.responses.create(model=MODEL, input="keep this")
    fetched = await client.responses.retrieve(created.id)
    assert validated(fetched).model_dump() == validated(created).model_dump()
    assert (tmp_path / "responses.sqlite3").exists()

    # Only the credential that created a response can read it.
    with pytest.raises(openai.NotFoundError):
        await make_client(server, api_key="sk-someone-else").responses.retrieve(created.id)

    unstored = await client.responses.create(model=MODEL, input="forget this", store=False)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(unstored.id)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input="x", previous_response_id=unstored.id)
    assert caught.value.param == "previous_response_id"

    await client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(created.id)
    assert len(upstream.requests) == 2


async def test_missing_response_is_404_in_openai_shape(
    proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    server = await proxy()
    async with http.get(
        f"{server.url}/v1/responses/resp_missing", headers={"Authorization": "Bearer sk-client"}
    ) as resp:
        assert resp.status == 404
        body = await resp.json()
    assert body == {
        "error": {
            "message": "Response with id 'resp_missing' not found.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


async def test_responses_survive_a_restart(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(text_reply("persisted"))
    first = await proxy()
    created = await make_client(first).responses.create(model=MODEL, input="hi")
    await first.close()

    fetched = await make_client(await proxy()).responses.retrieve(created.id)
    assert fetched.output_text == "persisted"


# ---- bad requests ------------------------------------------------------------------------


async def test_unsupported_tool_type_is_a_clear_400(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    client = make_client(await proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model=MODEL, input="search", tools=[{"type": "web_search"}, WEATHER_TOOL]
        )

    error = caught.value
    assert error.status_code == 400
    assert error.param == "tools[0].type"
    assert "'web_search'" in error.message and "'function'" in error.message
    assert upstream.requests == []


BAD_REQUESTS: list[tuple[str, bytes | dict[str, Any], str | None]] = [
    ("not json", b"{nope", None),
    ("array", b"[]", None),
    ("no model", {"input": "hi"}, "model"),
    ("no input", {"model": MODEL}, "input"),
    ("input number", {"model": MODEL, "input": 5}, "input"),
    ("empty input", {"model": MODEL, "input": []}, "input"),
    ("item not object", {"model": MODEL, "input": ["hi"]}, "input[0]"),
    ("unknown item", {"model": MODEL, "input": [{"type": "web_search_call"}]}, "input[0].type"),
    ("bad role", {"model": MODEL, "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
    (
        "bad part",
        {"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_file"}]}]},
        "input[0].content[0].type",
    ),
    (
        "content number",
        {"model": MODEL, "input": [{"role": "user", "content": 3}]},
        "input[0].content",
    ),
    (
        "call output without call_id",
        {"model": MODEL, "input": [{"type": "function_call_output", "output": "x"}]},
        "input[0].call_id",
    ),
    (
        "call without name",
        {"model": MODEL, "input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]},
        "input[0].name",
    ),
    ("tools not list", {"model": MODEL, "input": "x", "tools": {}}, "tools"),
    ("tool without name", {"model": MODEL, "input": "x", "tools": [{"type": "function"}]}, None),
    ("bad tool choice", {"model": MODEL, "input": "x", "tool_choice": "sometimes"}, None),
    (
        "tool choice unknown function",
        {"model": MODEL, "input": "x", "tool_choice": {"type": "function", "name": "nope"}},
        None,
    ),
    ("temperature string", {"model": MODEL, "input": "x", "temperature": "hot"}, "temperature"),
    ("stream string", {"model": MODEL, "input": "x", "stream": "yes"}, "stream"),
    ("max tokens zero", {"model": MODEL, "input": "x", "max_output_tokens": 0}, None),
    ("metadata number", {"model": MODEL, "input": "x", "metadata": {"a": 1}}, None),
    ("unknown parameter", {"model": MODEL, "input": "x", "frobnicate": True}, "frobnicate"),
    ("background", {"model": MODEL, "input": "x", "background": True}, "background"),
    ("conversation", {"model": MODEL, "input": "x", "conversation": "conv_1"}, "conversation"),
    ("bad text format", {"model": MODEL, "input": "x", "text": {"format": {"type": "xml"}}}, None),
    ("previous id number", {"model": MODEL, "input": "x", "previous_response_id": 7}, None),
    ("unknown previous id", {"model": MODEL, "input": "x", "previous_response_id": "resp_x"}, None),
]


@pytest.mark.parametrize(
    ("body", "param"), [(b, p) for _, b, p in BAD_REQUESTS], ids=[n for n, _, _ in BAD_REQUESTS]
)
async def test_malformed_requests_are_400(
    upstream: FakeUpstream,
    proxy: Proxy,
    http: aiohttp.ClientSession,
    body: bytes | dict[str, Any],
    param: str | None,
) -> None:
    server = await proxy()

    status, _, raw = await post(http, server, body)

    assert status == 400, raw
    error = json.loads(raw)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert isinstance(error["message"], str) and error["message"]
    if param is not None:
        assert error["param"] == param
    assert upstream.requests == []


async def test_lone_surrogates_never_500(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession
) -> None:
    # JSON may escape a lone surrogate; Python's json reads it, orjson cannot write it back.
    reply = b'data: {"choices":[{"index":0,"delta":{"content":"odd \\ud800 text"}}]}\n\n'
    reply += sse(chunk({}, finish_reason="stop"))
    upstream.enqueue(Reply(body=reply), Reply(body=reply))
    server = await proxy()
    body = (
        b'{"model": "fake-model", "input": "hi \\udc00", "instructions": "be \\ud800",'
        b' "metadata": {"k": "\\ud800"}%s}'
    )

    status, _, raw = await post(http, server, body % b"")
    assert status == 200, raw
    response = json.loads(raw)
    assert response["output"][0]["content"][0]["text"] == "odd \ud800 text"
    assert b'"hi \\udc00"' in upstream.requests[-1].body
    async with http.get(
        f"{server.url}/v1/responses/{response['id']}",
        headers={"Authorization": "Bearer sk-client"},
    ) as resp:
        assert resp.status == 200
        assert json.loads(await resp.read()) == response

    status, _, raw = await post(http, server, body % b', "stream": true')
    assert status == 200
    events = [json.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1]["type"] == "response.completed"
    assert "".join(e.get("delta", "") for e in events) == "odd \ud800 text"


async def test_a_broken_store_is_503_and_does_not_break_answers(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, tmp_path: Path
) -> None:
    upstream.enqueue(text_reply("still answered"))
    client = make_client(await proxy(responses_db=str(tmp_path / "missing-dir" / "db.sqlite3")))

    response = await client.responses.create(model=MODEL, input="hi")
    assert response.output_text == "still answered"

    with pytest.raises(openai.InternalServerError) as caught:
        await client.responses.retrieve(response.id)
    assert caught.value.status_code == 503
    assert caught.value.code == "store_unavailable"


def test_database_urls_are_refused_by_the_settings() -> None:
    from pydantic import ValidationError

    from proxy.settings import Settings

    # Only PostgreSQL's (tests/proxy/store): any other URL would be opened as a file name.
    with pytest.raises(ValidationError, match="responses_db") as caught:
        Settings(responses_db="mysql://user:hunter2@db/shieldgate")
    assert "hunter2" not in str(caught.value.errors()[0]["msg"])
    assert Settings(responses_db="postgresql://db/shieldgate").responses_db_is_postgres
    # Not the working directory: the user's state directory (tests/__init__.py points it at
    # a temporary one).
    state_home = os.environ["XDG_STATE_HOME"]
    assert Settings().responses_db == f"{state_home}/shieldgate/responses.sqlite3"
