"""End to end: Anthropic's Messages API, with the official ``anthropic`` client, over a chat
backend.

The proxy runs its real server code in front of the scripted fake upstream, which speaks only
chat completions. Every stream event the proxy produces is validated against the ``anthropic``
package's types, every error body against its ``ErrorResponse``, and the SDK's own calls —
``messages.create``, ``messages.stream(...)`` with ``text_stream`` and ``get_final_message()``
— must accept every answer, refusals and errors included.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from pydantic import TypeAdapter

from proxy.clients.keys import new_key
from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.proxy.serving.test_auth import write_keys
from tests.support.constants import BANNED_OUT, MODEL, REFUSAL
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    error_body,
    json_bytes,
    sse,
    usage_chunk,
)

EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
MakeAnthropic = Callable[..., anthropic.AsyncAnthropic]

BANNED_IN = "how do I build a bomb"  # an input block phrase of the default policy
GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # redacted both ways by the default policy
WEATHER = {
    "name": "get_weather",
    "description": "Weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
WEATHER_CHAT = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": WEATHER["input_schema"],
    },
}
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
HELLO = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def make_anthropic() -> AsyncIterator[MakeAnthropic]:
    """``make_anthropic(server, api_key="sk-client", **kwargs)``: the real
    ``anthropic.AsyncAnthropic`` pointed at a running proxy, no SDK retries."""
    clients: list[anthropic.AsyncAnthropic] = []

    def factory(
        server: RunningServer, *, api_key: str = "sk-client", **kwargs: Any
    ) -> anthropic.AsyncAnthropic:
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 10.0)
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=api_key, **kwargs)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        await client.close()


def content_stream(
    text: str, *, piece: int = 3, key: str = "content", finish: str = "stop"
) -> list[Any]:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({key: text[i : i + piece]}) for i in range(0, len(text), piece)]
    return [*events, chunk({}, finish_reason=finish), usage_chunk(5, 7)]


def call_chunks(arguments: str, *, call_id: str = "call_1") -> list[Any]:
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": "get_weather"}}
    events: list[Any] = [chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
    for i in range(0, len(arguments), 5):
        piece = {"index": 0, "function": {"arguments": arguments[i : i + 5]}}
        events.append(chunk({"tool_calls": [piece]}))
    return [*events, chunk({}, finish_reason="tool_calls"), usage_chunk(5, 7)]


async def post(
    http: aiohttp.ClientSession,
    server: RunningServer,
    body: dict[str, Any] | bytes,
    *,
    headers: dict[str, str] | None = None,
    path: str = "/v1/messages",
) -> tuple[int, Any, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", "x-api-key": "sk-client"}
    hdrs.update(headers or {})
    async with http.post(f"{server.url}{path}", data=data, headers=hdrs) as resp:
        return resp.status, resp.headers, await resp.read()


def parse_events(raw: bytes) -> list[dict[str, Any]]:
    """Every event of a Messages stream, each ``event: <type>`` + ``data: <json>`` and valid
    for the SDK (an ``error`` event as its ``ErrorResponse``)."""
    assert raw.endswith(b"\n\n"), raw[-80:]
    events = []
    for block in raw[:-2].split(b"\n\n"):
        name_line, data_line = block.split(b"\n")
        assert name_line.startswith(b"event: ") and data_line.startswith(b"data: "), block
        event = json.loads(data_line[len(b"data: ") :])
        assert event["type"] == name_line[len(b"event: ") :].decode()
        if event["type"] == "error":
            ErrorResponse.model_validate(event)
        elif event["type"] != "ping":
            EVENT.validate_python(event)
        events.append(event)
    return events


async def stream_events(
    http: aiohttp.ClientSession, server: RunningServer, **body: Any
) -> list[dict[str, Any]]:
    body = {"model": MODEL, "max_tokens": 64, "stream": True, **body}
    status, headers, raw = await post(http, server, body)
    assert status == 200, raw
    assert headers["content-type"].startswith("text/event-stream")
    return parse_events(raw)


def upstream_body(upstream: FakeUpstream, index: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = upstream.requests[index].json()
    return body


def anthropic_error(raw: bytes, kind: str) -> str:
    """The message of an error body, which must be Anthropic's shape with ``kind``."""
    body = json.loads(raw)
    ErrorResponse.model_validate(body)
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    message: str = body["error"]["message"]
    return message


def validated(message: Any) -> Message:
    """An SDK object (built without validation) checked against the SDK's model."""
    return Message.model_validate(message.model_dump(mode="json"))


# ---- the translation ---------------------------------------------------------------------


async def test_create_translates_the_request_and_the_reply(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion("Hello, Ada."))))
    server = await make_proxy()
    client = make_anthropic(server, default_headers={"anthropic-beta": "some-beta-2025"})

    reply = await client.messages.create(
        model=MODEL,
        max_tokens=50,
        system=[{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}],
            },
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Greet Ada"},
        ],
        stop_sequences=["\n\n"],
        # Sampling parameters this SDK version no longer names; other clients send them.
        extra_body={"temperature": 0.2, "top_p": 0.9, "top_k": 40},
        metadata={"user_id": "u-1"},
        thinking={"type": "enabled", "budget_tokens": 1024},
        service_tier="auto",
    )

    assert validated(reply).model_dump(include={"type", "role", "model", "stop_reason"}) == {
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "stop_reason": "end_turn",
    }
    assert reply.id.startswith("msg_")
    assert [block.model_dump(exclude_none=True) for block in reply.content] == [
        {"type": "text", "text": "Hello, Ada."}
    ]
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (5, 7)
    # Metadata, thinking and the service tier are accepted and not forwarded.
    assert upstream_body(upstream) == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief.\nBe kind."},
            {"role": "user", "content": "Hi\nthere"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Greet Ada"},
        ],
        "max_tokens": 50,
        "stop": ["\n\n"],
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 40,
    }
    sent = upstream.requests[-1]
    assert sent.path == "/v1/chat/completions"
    # Anthropic's own headers are not the chat upstream's; in pass-through mode (no keys file,
    # no upstream key) the client's key goes upstream as a chat client's key would.
    names = {name.lower() for name in sent.headers}
    assert not names & {"x-api-key", "anthropic-version", "anthropic-beta"}
    assert sent.headers["Authorization"] == "Bearer sk-client"
    assert sent.headers["Accept"] == "application/json"


async def test_stream_with_the_sdk_helpers(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    text = "Hello there, Ada. How are you today?"
    upstream.enqueue(Reply(events=content_stream(text)), Reply(events=content_stream(text)))
    server = await make_proxy()
    client = make_anthropic(server)

    async with client.messages.stream(model=MODEL, max_tokens=64, messages=HELLO) as stream:
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()

    assert len(pieces) > 1 and "".join(pieces) == text
    assert validated(final).content[0].type == "text"
    assert final.content[0].text == text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (5, 7)
    body = upstream_body(upstream)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert upstream.requests[-1].headers["Accept"] == "text/event-stream"

    events = await stream_events(http, server, messages=HELLO)
    assert [e["type"] for e in events[:4]] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
    ]
    assert [e["type"] for e in events[-3:]] == [
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert events[-2]["usage"] == {"input_tokens": 5, "output_tokens": 7}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_tool_use_and_its_result_round_trip(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic, stream: bool
) -> None:
    arguments = json.dumps({"city": "Paris"})
    calls = [
        {
            "id": "call_9",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    if stream:
        upstream.enqueue(Reply(events=call_chunks(arguments, call_id="call_9")))
    else:
        upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    upstream.enqueue(Reply(body=json_bytes(chat_completion("It is sunny in Paris."))))
    client = make_anthropic(await make_proxy())
    question = {"role": "user", "content": "Weather in Paris?"}
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "tools": [WEATHER]}

    if stream:
        async with client.messages.stream(
            messages=[question], tool_choice={"type": "any"}, **params
        ) as events:
            first = await events.get_final_message()
    else:
        first = await client.messages.create(
            messages=[question], tool_choice={"type": "any"}, **params
        )

    assert first.stop_reason == "tool_use"
    [call] = validated(first).content
    assert call.type == "tool_use"
    assert (call.id, call.name, call.input) == ("call_9", "get_weather", {"city": "Paris"})
    sent = upstream_body(upstream)
    assert sent["tools"] == [WEATHER_CHAT] and sent["tool_choice"] == "required"

    second = await client.messages.create(
        messages=[
            question,
            # The reply's blocks sent back as they came, as agent loops do.
            {"role": "assistant", "content": first.content},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 24 C"},
                    {"type": "text", "text": "Thanks!"},
                ],
            },
        ],
        **params,
    )

    assert second.content[0].text == "It is sunny in Paris."  # type: ignore[union-attr]
    assert upstream_body(upstream)["messages"][1:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "Sunny, 24 C"},
        {"role": "user", "content": "Thanks!"},
    ]


async def test_tool_choice_and_tool_result_blocks_are_translated(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    client = make_anthropic(await make_proxy())
    messages: Any = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should call it.", "signature": "sig"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "Rain"}, {"type": "text", "text": "5 C"}],
                    "is_error": False,
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]
    choice: Any = {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}

    await client.messages.create(
        model=MODEL, max_tokens=8, messages=messages, tools=[WEATHER], tool_choice=choice
    )

    body = upstream_body(upstream)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False
    # The thinking block is dropped: a chat request has no place for it.
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "Rain\n5 C"},
    ]
    for kind, expected in (("auto", "auto"), ("none", "none")):
        await client.messages.create(
            model=MODEL,
            max_tokens=8,
            messages=HELLO,
            tools=[WEATHER],
            tool_choice={"type": kind},  # type: ignore[arg-type]
        )
        assert upstream_body(upstream)["tool_choice"] == expected


async def test_images_become_image_url_parts_and_their_urls_are_checked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    client = make_anthropic(await make_proxy())
    data = base64.b64encode(b"\x89PNG not really").decode()
    url = f"https://img.example/cat.png?token={GH_TOKEN}"

    await client.messages.create(
        model=MODEL,
        max_tokens=8,
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": data},
                    },
                    {"type": "image", "source": {"type": "url", "url": url}},
                    {"type": "text", "text": "What are these?"},
                ],
            }
        ],
    )

    [user] = upstream_body(upstream)["messages"]
    assert user["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}},
        # The URL is text the client wrote: the default policy's credentials shield redacts it.
        {
            "type": "image_url",
            "image_url": {"url": "https://img.example/cat.png?token=[CREDENTIAL]"},
        },
        {"type": "text", "text": "What are these?"},
    ]

    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.messages.create(
            model=MODEL,
            max_tokens=8,
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "file", "file_id": "file_1"}}],  # type: ignore[list-item,typeddict-item]
                }
            ],
        )
    assert "file sources are not supported" in str(refused.value)


async def test_reasoning_becomes_thinking_blocks(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    events = content_stream("Let me think.", key="reasoning_content")[:-2]
    events += [chunk({"content": "Four."}), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events))
    completion = chat_completion("Four.")
    completion["choices"][0]["message"]["reasoning_content"] = "Two and two."
    upstream.enqueue(Reply(body=json_bytes(completion)))
    server = await make_proxy()

    got = await stream_events(http, server, messages=HELLO)
    reply = await make_anthropic(server).messages.create(model=MODEL, max_tokens=8, messages=HELLO)

    deltas = [e["delta"]["type"] for e in got if e["type"] == "content_block_delta"]
    assert deltas[0] == "thinking_delta" and deltas[-1] == "text_delta"
    assert [block.type for block in validated(reply).content] == ["thinking", "text"]
    assert reply.content[0].thinking == "Two and two."  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("finish", "stop_reason"), [("length", "max_tokens"), ("content_filter", "refusal")]
)
async def test_finish_reasons_map_to_stop_reasons(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    finish: str,
    stop_reason: str,
) -> None:
    upstream.enqueue(Reply(events=content_stream("Once upon a", finish=finish)))
    client = make_anthropic(await make_proxy())

    async with client.messages.stream(model=MODEL, max_tokens=3, messages=HELLO) as stream:
        final = await stream.get_final_message()

    assert final.stop_reason == stop_reason


async def test_an_upstream_that_answers_the_other_way_is_served(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    upstream.enqueue(
        Reply(events=content_stream("streamed anyway")),
        Reply(body=json_bytes(chat_completion("whole anyway"))),
    )
    client = make_anthropic(await make_proxy())

    whole = await client.messages.create(model=MODEL, max_tokens=8, messages=HELLO)
    async with client.messages.stream(model=MODEL, max_tokens=8, messages=HELLO) as stream:
        streamed = "".join([piece async for piece in stream.text_stream])

    assert whole.content[0].text == "streamed anyway"  # type: ignore[union-attr]
    assert streamed == "whole anyway"


# ---- guarded ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where",
    [
        "system",
        "system_block",
        "user_block",
        "tool_result",
        "tool_result_blocks",
        "tool_description",
        "tool_schema",
        "tool_use_input",
    ],
)
async def test_input_blocks_wherever_the_text_is(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic, where: str
) -> None:
    client = make_anthropic(await make_proxy())
    bad = f"Tell me {BANNED_IN}"
    tool: dict[str, Any] = json.loads(json.dumps(WEATHER))
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 8,
        "tools": [tool],
        "messages": list(HELLO),
    }
    call = {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1", "content": "Rain"}
    turns = [
        HELLO[0],
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    if where == "system":
        params["system"] = bad
    elif where == "system_block":
        params["system"] = [{"type": "text", "text": "Be kind."}, {"type": "text", "text": bad}]
    elif where == "user_block":
        params["messages"] = [{"role": "user", "content": [{"type": "text", "text": bad}]}]
    elif where == "tool_result":
        result["content"] = bad
        params["messages"] = turns
    elif where == "tool_result_blocks":
        result["content"] = [{"type": "text", "text": bad}]
        params["messages"] = turns
    elif where == "tool_description":
        tool["description"] = bad
    elif where == "tool_schema":
        tool["input_schema"]["properties"]["city"]["description"] = bad
    else:
        call["input"] = {"city": bad}
        params["messages"] = turns

    raw = await client.messages.with_raw_response.create(**params)

    assert raw.headers["x-shieldgate-blocked"] == "input"
    reply = validated(await raw.parse())
    assert reply.stop_reason == "refusal"
    assert [block.model_dump(exclude_none=True) for block in reply.content] == [
        {"type": "text", "text": REFUSAL}
    ]
    assert not upstream.requests  # nothing reached the upstream


async def test_a_blocked_stream_request_is_a_refusal_stream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    client = make_anthropic(await make_proxy())
    messages: Any = [{"role": "user", "content": BANNED_IN}]

    async with client.messages.stream(model=MODEL, max_tokens=8, messages=messages) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()

    assert text == REFUSAL and final.stop_reason == "refusal"
    assert not upstream.requests


async def test_input_redaction_reaches_the_upstream_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    client = make_anthropic(await make_proxy())

    await client.messages.create(
        model=MODEL, max_tokens=8, messages=[{"role": "user", "content": f"my token is {GH_TOKEN}"}]
    )

    assert upstream_body(upstream)["messages"] == [
        {"role": "user", "content": "my token is [CREDENTIAL]"}
    ]


async def test_a_whole_reply_blocked_is_a_refusal(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion(f"Here is how to {BANNED_OUT}."))))
    client = make_anthropic(await make_proxy())

    raw = await client.messages.with_raw_response.create(model=MODEL, max_tokens=8, messages=HELLO)

    assert raw.headers["x-shieldgate-blocked"] == "output"
    assert b"sarin" not in raw.http_response.content
    reply = validated(await raw.parse())
    assert reply.stop_reason == "refusal"
    assert reply.content[0].text == REFUSAL  # type: ignore[union-attr]


async def test_an_output_block_mid_stream_ends_in_the_refusal_and_stops_the_upstream(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    text = "A calm story about a garden. " * 12 + f"Then: {BANNED_OUT} with care. " + "More. " * 20
    events = content_stream(text, piece=4)
    # The upstream stalls right after the phrase: only the proxy can end this response.
    cut = len(sse(*events[: 2 + text.index(BANNED_OUT) // 4 + 6], done=False))
    upstream.enqueue(Reply(events=events, stall_after_bytes=cut, chunk_delay=0.001))
    upstream.enqueue(Reply(events=events, stall_after_bytes=cut, chunk_delay=0.001))
    server = await make_proxy()

    started = time.monotonic()
    got = await stream_events(http, server, messages=HELLO)

    assert time.monotonic() - started < 1.5
    assert "sarin" not in json.dumps(got)
    blocks = [e["index"] for e in got if e["type"] == "content_block_start"]
    released = "".join(
        e["delta"]["text"]
        for e in got
        if e["type"] == "content_block_delta" and e["index"] != blocks[-1]
    )
    assert released and text.startswith(released)
    assert len(released) <= text.index(BANNED_OUT)
    assert got[-2]["delta"]["stop_reason"] == "refusal"
    refusal = [e for e in got if e["type"] == "content_block_delta" and e["index"] == blocks[-1]]
    assert [e["delta"]["text"] for e in refusal] == ["\n\n" + REFUSAL]
    assert await upstream.wait_for_disconnect(1.0) is not None

    # Through the SDK's helpers: the text it joins stops short, then the refusal.
    client = make_anthropic(server)
    async with client.messages.stream(model=MODEL, max_tokens=64, messages=HELLO) as stream:
        joined = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert joined.endswith("\n\n" + REFUSAL) and BANNED_OUT not in joined
    assert final.stop_reason == "refusal"
    assert [block.type for block in validated(final).content] == ["text", "text"]


async def test_refusal_style_error_is_anthropics_error(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    events = content_stream("A story. " * 10 + f"now {BANNED_OUT} now", piece=4)
    upstream.enqueue(Reply(events=events))
    server = await make_proxy(ERROR_STYLE_POLICY)
    client = make_anthropic(server)

    with pytest.raises(anthropic.BadRequestError) as blocked:
        await client.messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": BANNED_IN}]
        )
    assert blocked.value.status_code == 400
    assert blocked.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "Blocked by policy."},
    }
    assert blocked.value.response.headers["x-shieldgate-blocked"] == "input"

    # Mid-stream: an error event, which the SDK raises.
    with pytest.raises(anthropic.APIStatusError) as in_band:
        async with client.messages.stream(model=MODEL, max_tokens=64, messages=HELLO) as stream:
            async for _ in stream.text_stream:
                pass
    assert in_band.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "Blocked by policy."},
    }
    assert not upstream.pending


# ---- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            {"model": MODEL, "max_tokens": 8, "messages": HELLO, "bogus": 1},
            "Unknown parameter: 'bogus'",
        ),
        ({"model": MODEL, "messages": HELLO}, "max_tokens"),
        ({"model": MODEL, "messages": HELLO, "max_tokens": 10**30}, "largest allowed"),
        ({"max_tokens": 8, "messages": HELLO}, "'model'"),
        ({"model": MODEL, "max_tokens": 8, "messages": []}, "non-empty"),
        (
            {"model": MODEL, "max_tokens": 8, "messages": [{"role": "system", "content": "x"}]},
            "user or assistant",
        ),
        (
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "x", "name": "n"}],
            },
            "messages[0].name",
        ),
        (
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "x", "extra": 1}]}
                ],
            },
            "messages[0].content[0].extra",
        ),
        (
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}],
            },
            "'document' is not supported",
        ),
        (
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_use", "id": "a", "name": "b", "input": {}}],
                    }
                ],
            },
            "not allowed in a user message",
        ),
        (
            {
                "model": MODEL,
                "max_tokens": 8,
                "messages": HELLO,
                "tools": [{"type": "web_search_20250305", "name": "web_search"}],
            },
            "not supported",
        ),
        (
            {"model": MODEL, "max_tokens": 8, "messages": HELLO, "mcp_servers": [{"url": "x"}]},
            "'mcp_servers' is not supported",
        ),
        (
            {"model": MODEL, "max_tokens": 8, "messages": HELLO, "tool_choice": {"type": "any"}},
            "needs at least one tool",
        ),
        (
            {"model": MODEL, "max_tokens": 8, "messages": HELLO, "thinking": {"type": "sometimes"}},
            "thinking",
        ),
        (
            {"model": MODEL, "max_tokens": 8, "messages": HELLO, "temperature": "hot"},
            "'temperature'",
        ),
    ],
)
async def test_bad_requests_are_anthropic_400s_that_name_the_problem(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    body: dict[str, Any],
    words: str,
) -> None:
    client = make_anthropic(await make_proxy())

    with pytest.raises(anthropic.BadRequestError) as refused:
        await client.post("/v1/messages", body=body, cast_to=Message)

    assert words in anthropic_error(refused.value.response.content, "invalid_request_error")
    assert not upstream.requests


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (
            b'{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],'
            b' "messages": [{"role": "user", "content": "other"}]}',
            "appears twice",
        ),
        (b'{"model": "m", "max_tokens": 8, "temperature": NaN, "messages": []}', "not valid JSON"),
        (
            b'{"model": "m", "max_tokens": 8, "System": "x", "messages": '
            b'[{"role": "user", "content": "hi"}]}',
            "Unknown parameter: 'System'",
        ),
        (
            b'{"model": "m", "max_tokens": 8, "messages": '
            b'[{"role": "user", "content": [{"type": "text", "Text": "x", "text": "y"}]}]}',
            "content[0].Text",
        ),
        (b'{"model": "m", "max_tokens": 8, "messages": "\\ud800"}', "non-empty list"),
    ],
)
async def test_hostile_bodies_are_400s_never_forwarded(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    raw: bytes,
    words: str,
) -> None:
    server = await make_proxy()

    status, _, answer = await post(http, server, raw)

    assert status == 400
    assert words in anthropic_error(answer, "invalid_request_error")
    assert not upstream.requests


async def test_lone_surrogates_in_text_never_500(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    server = await make_proxy()
    raw = b'{"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "a\\ud800b"}]}'

    status, _, answer = await post(http, server, raw)

    assert status == 200, answer
    assert upstream_body(upstream)["messages"][0]["content"] == "a\ud800b"


async def test_upstream_errors_keep_their_status_in_anthropics_shape(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    upstream.enqueue(
        Reply(status=400, body=json_bytes(error_body("bad model", type="invalid_request_error"))),
        Reply(status=404, body=json_bytes(error_body("no such model"))),
        Reply(status=500, body=json_bytes(error_body(f"failed to {BANNED_OUT}"))),
        Reply(body=b"<html>oops</html>", headers={"content-type": "text/html"}),
    )
    client = make_anthropic(await make_proxy())
    ask: dict[str, Any] = {"model": MODEL, "max_tokens": 8, "messages": HELLO}

    with pytest.raises(anthropic.BadRequestError) as bad:
        await client.messages.create(**ask)
    assert anthropic_error(bad.value.response.content, "invalid_request_error") == "bad model"
    with pytest.raises(anthropic.NotFoundError) as missing:
        await client.messages.create(**ask)
    assert anthropic_error(missing.value.response.content, "not_found_error") == "no such model"
    # An upstream message is upstream text: checked by the output shields like a reply.
    with pytest.raises(anthropic.InternalServerError) as failed:
        await client.messages.create(**ask)
    message = anthropic_error(failed.value.response.content, "api_error")
    assert "sarin" not in message and "withheld" in message
    with pytest.raises(anthropic.InternalServerError) as unreadable:
        await client.messages.create(**ask)
    assert unreadable.value.status_code == 502
    anthropic_error(unreadable.value.response.content, "api_error")


async def test_proxy_errors_are_in_anthropics_shape(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    server = await make_proxy(max_body_bytes=2048)
    client = make_anthropic(server)

    with pytest.raises(anthropic.NotFoundError) as count:
        await client.messages.count_tokens(model=MODEL, messages=HELLO)  # type: ignore[arg-type]
    assert "count_tokens" in anthropic_error(count.value.response.content, "not_found_error")
    status, _, raw = await post(http, server, {}, path="/v1/messages/batches")
    assert status == 404
    anthropic_error(raw, "not_found_error")
    status, _, raw = await post(http, server, b"{not json")
    assert status == 400 and "not valid JSON" in anthropic_error(raw, "invalid_request_error")
    big = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": "x" * 4096}]}
    status, _, raw = await post(http, server, big)
    assert status == 413
    assert json.loads(raw)["error"]["type"] == "request_too_large"
    # Other paths keep OpenAI's shape.
    status, _, raw = await post(http, server, {}, path="/v1/nothing")
    assert status == 404 and json.loads(raw)["error"]["code"] == "not_found"
    assert not upstream.requests


async def test_a_failure_mid_stream_is_an_error_event_with_the_proxys_words(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    events = content_stream("Hello there " * 5)
    payload = len(sse(*events[:6], done=False))
    upstream.enqueue(Reply(events=events, drop_after_bytes=payload))
    upstream.enqueue(
        Reply(events=[*events[:4], {"error": {"message": "GPU melted, prompt was: x"}}])
    )
    server = await make_proxy()

    got = await stream_events(http, server, messages=HELLO)
    assert got[-1] == {
        "type": "error",
        "error": {
            "type": "api_error",
            "message": "The upstream stream broke off: ClientPayloadError",
        },
    }

    with pytest.raises(anthropic.APIStatusError) as failed:
        async with make_anthropic(server).messages.stream(
            model=MODEL, max_tokens=64, messages=HELLO
        ) as stream:
            async for _ in stream.text_stream:
                pass
    assert failed.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "The upstream reported an error mid-stream"},
    }


async def test_tool_arguments_that_are_no_json_object_fail_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    broken = '{"city": "Par'
    calls = [
        {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": broken}}
    ]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    upstream.enqueue(Reply(events=call_chunks(broken)))
    server = await make_proxy()

    with pytest.raises(anthropic.InternalServerError) as whole:
        await make_anthropic(server).messages.create(
            model=MODEL,
            max_tokens=8,
            messages=HELLO,
            tools=[WEATHER],  # type: ignore[list-item]
        )
    assert whole.value.status_code == 502
    assert "not valid JSON" in anthropic_error(whole.value.response.content, "api_error")

    got = await stream_events(http, server, messages=HELLO, tools=[WEATHER])
    assert got[-1]["type"] == "error" and "not valid JSON" in got[-1]["error"]["message"]
    assert not any(e["type"] == "content_block_start" for e in got)


# ---- client keys -------------------------------------------------------------------------


async def test_x_api_key_is_a_client_key_on_the_messages_surface_only(
    tmp_path: Path,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_anthropic: MakeAnthropic,
    http: aiohttp.ClientSession,
) -> None:
    key, entry = new_key("team-a")
    other, other_entry = new_key("team-b")
    keys = write_keys(tmp_path / "keys.yaml", entry, other_entry)
    server = await make_proxy(keys_file=str(keys))

    reply = await make_anthropic(server, api_key=key).messages.create(
        model=MODEL, max_tokens=8, messages=HELLO
    )
    assert reply.content
    sent = upstream.requests[-1].headers
    # A shieldgate key is the proxy's alone: it goes upstream in no header.
    assert key not in json.dumps(dict(sent))

    near_miss = other[:-1] + ("1" if other.endswith("0") else "0")  # not a key: one character off
    for api_key in ("sk-wrong", near_miss):
        with pytest.raises(anthropic.AuthenticationError) as denied:
            await make_anthropic(server, api_key=api_key).messages.create(
                model=MODEL, max_tokens=8, messages=HELLO
            )
        assert anthropic_error(denied.value.response.content, "authentication_error")
        assert api_key not in denied.value.response.text
    body = {"model": MODEL, "max_tokens": 8, "messages": HELLO}
    status, _, raw = await post(http, server, body, headers={"x-api-key": ""})
    assert status == 401 and "x-api-key" in anthropic_error(raw, "authentication_error")
    # The same key in both headers is one key; two different keys are none.
    status, _, _ = await post(
        http, server, body, headers={"x-api-key": key, "Authorization": f"Bearer {key}"}
    )
    assert status == 200
    status, _, raw = await post(
        http, server, body, headers={"x-api-key": key, "Authorization": f"Bearer {other}"}
    )
    assert status == 401 and "Two different" in anthropic_error(raw, "authentication_error")
    # Elsewhere the key is read from Authorization only, as before.
    chat = {"model": MODEL, "messages": HELLO}
    status, _, raw = await post(
        http, server, chat, headers={"x-api-key": key}, path="/v1/chat/completions"
    )
    assert status == 401 and json.loads(raw)["error"]["code"] == "invalid_api_key"
    assert len(upstream.requests) == 2


# ---- endpoint scoping --------------------------------------------------------------------

SCOPED = """
version: 1
name: scoped
input:
  - {id: chat-only, type: denylist, phrases: [launch codes], endpoints: [chat, responses]}
  - {id: messages-only, type: denylist, phrases: [customer ledger], endpoints: [messages]}
output:
  - {id: out-messages, type: denylist, phrases: [secret plan], endpoints: [messages]}
"""


async def test_shields_scoped_to_other_endpoints_take_no_part(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_anthropic: MakeAnthropic
) -> None:
    upstream.enqueue(
        Reply(body=json_bytes(chat_completion("the launch codes are 1234"))),
        Reply(body=json_bytes(chat_completion("the secret plan is ready"))),
    )
    client = make_anthropic(await make_proxy(SCOPED))
    ask: dict[str, Any] = {"model": MODEL, "max_tokens": 8}

    passed = await client.messages.create(
        messages=[{"role": "user", "content": "the launch codes?"}], **ask
    )
    blocked_in = await client.messages.create(
        messages=[{"role": "user", "content": "read the customer ledger"}], **ask
    )
    blocked_out = await client.messages.create(messages=HELLO, **ask)

    assert passed.content[0].text == "the launch codes are 1234"  # type: ignore[union-attr]
    assert blocked_in.stop_reason == "refusal" and blocked_out.stop_reason == "refusal"
    assert len(upstream.requests) == 2
