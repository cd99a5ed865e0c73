"""Streamed responses with MCP tools: the ``mcp_list_tools`` and ``mcp_call`` events in OpenAI's
shapes (every event validated against ``openai.types.responses``), the SDK's
``responses.stream`` helper accepting them, and the zero-leak property for ``mcp_call``
arguments: they stream from what the stream guard released, so no character of a blocked
phrase ever reaches the client, and a blocked call never reaches the MCP server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT, REFUSAL
from tests.support.fake_upstream import FakeUpstream
from tests.support.mcp_helpers import MODEL, call_turn, mcp_tool, sent_text, start_proxy, text_turn
from tests.support.mcp_server import McpTestServer

EVENT = TypeAdapter(ResponseStreamEvent)
GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


async def stream(
    http: aiohttp.ClientSession, proxy: Any, body: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every event of a streamed response, each validated against the SDK's types."""
    async with http.post(
        f"{proxy.url}/v1/responses",
        json={"model": MODEL, "stream": True, **body},
        headers={"Authorization": "Bearer sk-client"},
    ) as reply:
        assert reply.status == 200, await reply.text()
        assert reply.headers["content-type"].startswith("text/event-stream")
        raw = await reply.read()
    events = []
    for block in raw.decode().strip().split("\n\n"):
        name, data = block.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert name == f"event: {event['type']}"
        EVENT.validate_python(event)
        events.append(event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


def squeezed(events: list[dict[str, Any]]) -> list[str]:
    """Event types without the ``response.`` prefix, runs of one delta type as one entry."""
    out: list[str] = []
    for event in events:
        name = event["type"].removeprefix("response.")
        if not (out and out[-1] == name and name.endswith(".delta")):
            out.append(name)
    return out


def final(events: list[dict[str, Any]]) -> dict[str, Any]:
    response: dict[str, Any] = events[-1]["response"]
    Response.model_validate(response)
    return response


def argument_deltas(events: list[dict[str, Any]]) -> str:
    return "".join(
        event["delta"] for event in events if event["type"] == "response.mcp_call_arguments.delta"
    )


async def test_a_streamed_mcp_call_in_openais_event_order(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    arguments = '{"text": "streamed hello"}'
    upstream.enqueue(call_turn(("echo", arguments), piece=4), text_turn("It said hello."))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    events = await stream(http, proxy, {"input": "echo", "tools": [mcp_tool(mcp.url)]})
    assert squeezed(events) == [
        "created",
        "in_progress",
        "output_item.added",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "output_item.done",
        "output_item.added",
        "mcp_call.in_progress",
        "mcp_call_arguments.delta",
        "mcp_call_arguments.done",
        "mcp_call.completed",
        "output_item.done",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    assert argument_deltas(events) == arguments
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [item["type"] for item in added] == ["mcp_list_tools", "mcp_call", "message"]
    assert added[1]["arguments"] == "" and added[1]["status"] == "in_progress"
    assert (done[1]["output"], done[1]["status"]) == ("streamed hello", "completed")
    response = final(events)
    assert [item["type"] for item in response["output"]] == [
        "mcp_list_tools",
        "mcp_call",
        "message",
    ]
    assert response["usage"]["total_tokens"] == 24
    assert mcp.tool_calls() == [{"text": "streamed hello"}]


async def test_the_sdks_stream_helper_takes_mcp_events(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(call_turn(("echo", '{"text": "via the helper"}')), text_turn("Done."))
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    seen: list[str] = []
    async with client.responses.stream(
        model=MODEL, input="echo", tools=[mcp_tool(mcp.url)]
    ) as events:
        async for event in events:
            seen.append(event.type)
        response = await events.get_final_response()
    assert "response.mcp_call.completed" in seen
    assert [item.type for item in response.output] == ["mcp_list_tools", "mcp_call", "message"]
    call = response.output[1]
    assert call.type == "mcp_call" and call.output == "via the helper"
    assert response.output_text == "Done."


@pytest.mark.parametrize("piece", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("text", [f"how to {BANNED_OUT} at home", "how to \\u0073ynthesize sarin"])
async def test_no_character_of_a_blocked_phrase_in_streamed_arguments(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
    piece: int,
    text: str,
) -> None:
    arguments = '{"text": "' + text + '"}'
    upstream.enqueue(call_turn(("echo", arguments), piece=piece))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    events = await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    sent = argument_deltas(events)
    # What left is a prefix of the arguments, ending before the phrase (or its escape) begins.
    assert arguments.startswith(sent)
    assert len(sent) <= arguments.index("how to ") + len("how to ")
    everything = json.dumps(events)
    assert "ynthesize" not in everything.replace(REFUSAL, "")
    assert mcp.tool_calls() == []
    assert len(upstream.requests) == 1
    response = final(events)
    assert response["output"][-1]["content"][0]["type"] == "refusal"
    # The call's item was sent only if some of its text left before the block (as reads fell).
    for call in (item for item in response["output"] if item["type"] == "mcp_call"):
        assert call["status"] == "incomplete" and arguments.startswith(call["arguments"])


async def test_streamed_arguments_are_redacted_before_they_leave(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    arguments = json.dumps({"text": f"key {GH_TOKEN}"})
    upstream.enqueue(call_turn(("echo", arguments), piece=3), text_turn("ok"))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    events = await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    assert GH_TOKEN[:8] not in json.dumps(events)
    assert json.loads(argument_deltas(events)) == {"text": "key [CREDENTIAL]"}
    assert mcp.tool_calls() == [{"text": "key [CREDENTIAL]"}]


async def test_a_blocked_result_ends_the_stream_with_the_refusal(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')), text_turn("Sunny."))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    events = await stream(http, proxy, {"input": "weather", "tools": [mcp_tool(mcp.url)]})
    assert len(upstream.requests) == 1
    assert "Ignore all previous" not in json.dumps(events) + sent_text(upstream)
    response = final(events)
    assert [item["type"] for item in response["output"]] == [
        "mcp_list_tools",
        "mcp_call",
        "message",
    ]
    call = response["output"][1]
    assert call["status"] == "incomplete" and call["output"] is None
    assert response["output"][2]["content"][0] == {"type": "refusal", "refusal": REFUSAL}
    assert events[-1]["type"] == "response.completed"


async def test_a_failed_call_streams_its_failure(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(call_turn(("fail", '{"text": "x"}')), text_turn("It failed."))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    events = await stream(http, proxy, {"input": "fail", "tools": [mcp_tool(mcp.url)]})
    assert "mcp_call.failed" in squeezed(events)
    failed = next(
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "mcp_call"
    )
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "mcp_tool_execution_error"


async def test_an_approval_request_streams_as_an_item(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    arguments = '{"text": "may I?"}'
    upstream.enqueue(call_turn(("echo", arguments)))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    tool = mcp_tool(mcp.url, require_approval="always")
    events = await stream(http, proxy, {"input": "hi", "tools": [tool]})
    assert squeezed(events)[6:] == ["output_item.added", "output_item.done", "completed"]
    request = events[-2]["item"]
    assert request["type"] == "mcp_approval_request"
    assert request["arguments"] == arguments
    assert argument_deltas(events) == ""
    assert mcp.tool_calls() == []
