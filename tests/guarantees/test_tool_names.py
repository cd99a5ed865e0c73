"""Tool-call names are output text, and a call must name a declared tool (issue 14, item 4).

A ``function.name`` (or ``custom.name``) reaches the client and the agent framework that
dispatches on it. The output shields check it in whole replies and streams; a request that
declared ``tools`` gets no call to any other name (a 502, or the in-band ``upstream_error``).
In a stream the name comes whole in its call's first delta, and llama.cpp repeats it in every
delta: a repeated name is no new text. Through the real proxy and the scripted upstream.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import openai
import pytest

from tests.conftest import ProxyFactory
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    json_bytes,
    llamacpp_tool_chunks,
    sse,
)

REFUSAL = "Sorry, I can't help with that."
POLICY = f"""
version: 1
name: names
refusal: {{message: "{REFUSAL}"}}
stream: {{holdback_chars: 64}}
output:
  - id: forbidden
    type: regex
    patterns: ['forbidden_[a-z]+']
  - id: hidden
    type: regex
    patterns: ['hidden_[a-z]+']
    action: redact
"""
USER = [{"role": "user", "content": "hi"}]
SSE = {"content-type": "text/event-stream"}
TOOLS: Any = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]


def call(name: str, arguments: str = "{}", **extra: Any) -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        **extra,
    }


def name_delta(name: str | None, arguments: str = "", index: int = 0) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {
        "tool_calls": [{"index": index, "id": "call_1", "type": "function", "function": function}]
    }


@pytest.mark.parametrize("name", ["forbidden_tool", "hidden_tool"])
async def test_a_flagged_name_in_a_reply_blocks(
    name: str, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    # A redaction in a name blocks too: a renamed call is no tool the client has.
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=[call(name)]))))
    client = make_client(await make_proxy(POLICY))
    reply = await client.chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == REFUSAL
    assert not reply.choices[0].message.tool_calls


async def test_a_call_to_an_undeclared_tool_is_a_502(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=[call("rm_rf")]))))
    client = make_client(await make_proxy(POLICY))
    with pytest.raises(openai.APIStatusError) as raised:
        await client.chat.completions.create(model="m", messages=USER, tools=TOOLS)
    assert raised.value.status_code == 502
    assert "rm_rf" not in str(raised.value.body)


async def test_a_flagged_name_in_a_stream_never_leaves(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    events = [chunk({"role": "assistant", "content": None}), chunk(name_delta("forbidden_x"))]
    events += [chunk(name_delta(None, piece)) for piece in ('{"a"', ": 1}")]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events))
    proxy = await make_proxy(POLICY)
    sent = {"model": "m", "messages": USER, "stream": True}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=sent) as response:
        raw = await response.read()
    assert b"forbidden_" not in raw
    assert REFUSAL.encode() in raw and raw.endswith(b"data: [DONE]\n\n")


async def test_a_name_sent_in_pieces_fails_closed_and_its_first_piece_never_leaves(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The SDK's stream accumulator appends a name's pieces: "forbid" + "den_x". The proxy
    # checks names whole, so pieces fail the stream, and the event with the first piece is
    # held until the next event of its call: paced, it would have left before the second.
    events = [chunk(name_delta("forbid")), chunk(name_delta("den_x", "{}"))]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events, chunk_delay=0.2))
    proxy = await make_proxy(POLICY)
    sent = {"model": "m", "messages": USER, "stream": True}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=sent) as response:
        raw = await response.read()
    assert b"forbid" not in raw and b"den_x" not in raw
    assert b'"upstream_error"' in raw and raw.endswith(b"data: [DONE]\n\n")


async def test_a_whole_name_alone_leaves_at_the_end_unchanged(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # A call whose one event carries the whole name and arguments waits for the end.
    events = [chunk(name_delta("get_weather", "{}")), chunk({}, finish_reason="tool_calls")]
    upstream.enqueue(Reply(events=events, chunk_delay=0.05))
    proxy = await make_proxy(POLICY)
    sent = {"model": "m", "messages": USER, "stream": True}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=sent) as response:
        raw = await response.read()
    assert raw == sse(*events)


async def test_a_stream_may_call_only_declared_tools(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    cases = [
        (["get_weather", "get_weather", "get_weather"], True),  # llama.cpp's repetition
        (["get_weather", "rm_rf"], False),  # a name that changes mid-call
        (["rm_rf"], False),
    ]
    proxy = await make_proxy(POLICY)
    sent = {"model": "m", "messages": USER, "stream": True, "tools": TOOLS}
    for names, allowed in cases:
        events: list[Any] = [chunk(name_delta(name, f'"{i}"')) for i, name in enumerate(names)]
        events.append(chunk({}, finish_reason="tool_calls"))
        upstream.enqueue(Reply(events=events))
        async with http.post(f"{proxy.url}/v1/chat/completions", json=sent) as response:
            raw = await response.read()
        if allowed:
            assert raw == sse(*events)
        else:
            assert b"rm_rf" not in raw
            assert b'"upstream_error"' in raw and raw.endswith(b"data: [DONE]\n\n")


async def test_llamacpp_repeated_names_pass_and_an_undeclared_one_fails(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    pieces = ['{"city"', ': "Paris"}']
    upstream.enqueue(
        Reply(chunks=llamacpp_tool_chunks("get_weather", pieces), headers=SSE),
        Reply(chunks=llamacpp_tool_chunks("rm_rf", pieces), headers=SSE),
    )
    client = make_client(await make_proxy(POLICY))
    stream = await client.chat.completions.create(
        model="m", messages=USER, tools=TOOLS, stream=True
    )
    arguments = "".join(
        [
            call.function.arguments or ""
            async for part in stream
            for call in part.choices[0].delta.tool_calls or []
            if call.function is not None
        ]
    )
    assert json.loads(arguments) == {"city": "Paris"}
    stream = await client.chat.completions.create(
        model="m", messages=USER, tools=TOOLS, stream=True
    )
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass


async def test_responses_refuse_a_call_to_an_undeclared_tool(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    events = [chunk(name_delta("rm_rf", "{}")), chunk({}, finish_reason="tool_calls")]
    upstream.enqueue(Reply(events=events))
    client = make_client(await make_proxy(POLICY))
    tools: Any = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    with pytest.raises(openai.APIStatusError) as raised:
        await client.responses.create(model="m", input="hi", tools=tools)
    assert raised.value.status_code == 502
    assert "rm_rf" not in str(raised.value.body)
