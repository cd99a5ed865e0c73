"""``require_approval``: a call of a tool that needs the client's approval ends the response with
an ``mcp_approval_request``; a follow-up (``previous_response_id``) with an
``mcp_approval_response`` runs it (its stored arguments checked again by the output shields,
its result by the input shields) or tells the model it was declined. End to end with the
``openai`` client, the real MCP server and the scripted upstream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.responses import Response

from proxy.mcp.loop import DECLINED
from shields.routing import load_policy_set
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT
from tests.support.fake_upstream import FakeUpstream
from tests.support.mcp_helpers import (
    MODEL,
    call_turn,
    mcp_tool,
    sent_bodies,
    start_proxy,
    text_turn,
)
from tests.support.mcp_server import McpTestServer


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


def validated(response: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = response.model_dump(mode="json")
    Response.model_validate(dumped)
    return dumped


def asking_tool(url: str, **extra: Any) -> dict[str, Any]:
    """The MCP tool with OpenAI's default approval (``always``): no ``require_approval``."""
    tool = mcp_tool(url, **extra)
    del tool["require_approval"]
    return tool


def approval(request_id: str, approve: bool) -> dict[str, Any]:
    return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": approve}


async def asked(
    client: Any, upstream: FakeUpstream, mcp: McpTestServer, tools: list[dict[str, Any]]
) -> dict[str, Any]:
    """A first response whose model calls echo, which needs approval."""
    upstream.enqueue(call_turn(("echo", '{"text": "approved text"}')))
    response = validated(
        await client.responses.create(model=MODEL, input="Echo, please", tools=tools)
    )
    assert [item["type"] for item in response["output"]] == [
        "mcp_list_tools",
        "mcp_approval_request",
    ]
    return response


async def test_a_call_that_needs_approval_ends_the_turn_and_runs_once_approved(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    tools = [mcp_tool(mcp.url, require_approval="always")]
    first = await asked(client, upstream, mcp, tools)
    request = first["output"][1]
    assert (request["name"], request["server_label"]) == ("echo", "tests")
    assert json.loads(request["arguments"]) == {"text": "approved text"}
    assert first["status"] == "completed"
    assert mcp.tool_calls() == []  # nothing runs before the client says so
    assert len(upstream.requests) == 1

    upstream.enqueue(text_turn("The echo said: approved text."))
    second = validated(
        await client.responses.create(
            model=MODEL,
            previous_response_id=first["id"],
            input=[approval(request["id"], True)],
            tools=tools,
        )
    )
    assert [item["type"] for item in second["output"]] == ["mcp_call", "message"]
    call = second["output"][0]
    assert call["approval_request_id"] == request["id"]
    assert (call["status"], call["output"]) == ("completed", "approved text")
    assert mcp.tool_calls() == [{"text": "approved text"}]
    assert mcp.listings() == 1  # the listing was reused
    messages = sent_bodies(upstream)[-1]["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "tool"]
    assert messages[1]["tool_calls"][0]["function"]["name"] == "echo"
    assert messages[2]["content"] == "approved text"


async def test_a_declined_call_is_not_run_and_the_model_is_told(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    tools = [asking_tool(mcp.url)]  # require_approval defaults to always, as OpenAI's
    first = await asked(client, upstream, mcp, tools)
    upstream.enqueue(text_turn("Understood, I will not echo."))
    second = validated(
        await client.responses.create(
            model=MODEL,
            previous_response_id=first["id"],
            input=[approval(first["output"][1]["id"], False)],
            tools=tools,
        )
    )
    assert [item["type"] for item in second["output"]] == ["message"]
    assert mcp.tool_calls() == []
    assert sent_bodies(upstream)[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": first["output"][1]["id"],
        "content": DECLINED,
    }


async def test_approval_per_tool(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    tools = [mcp_tool(mcp.url, require_approval={"never": {"tool_names": ["echo"]}})]
    upstream.enqueue(
        call_turn(("echo", '{"text": "free"}'), ("big", '{"size": 3}')),
    )
    response = validated(await client.responses.create(model=MODEL, input="go", tools=tools))
    # echo runs; big needs approval, which ends the response after this turn.
    assert [item["type"] for item in response["output"]] == [
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
    ]
    assert mcp.tool_calls() == [{"text": "free"}]
    assert response["output"][2]["name"] == "big"
    assert len(upstream.requests) == 1


async def test_an_unknown_approval_request_is_a_400(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    tools = [asking_tool(mcp.url)]
    first = await asked(client, upstream, mcp, tools)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model=MODEL,
            previous_response_id=first["id"],
            input=[approval("mcpr_forged", True)],
            tools=tools,
        )
    assert caught.value.param == "input[0].approval_request_id"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model=MODEL, input=[approval(first["output"][1]["id"], True)], tools=tools
        )
    assert caught.value.param == "previous_response_id"
    assert mcp.tool_calls() == []


async def test_approved_arguments_are_checked_again_before_the_call(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    """An approval request made under a policy without output shields: the follow-up runs
    under one with them (another model's route), and the stored arguments are checked by it
    before the call."""
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "lax.yaml").write_text("version: 1\nname: lax\n")
    (folder / "default.yaml").write_text(
        "version: 1\nname: default\noutput:\n"
        f"  - {{id: mass-harm, type: denylist, phrases: ['{BANNED_OUT}'], action: block}}\n"
    )
    (folder / "routes.yaml").write_text(
        "default: default\nmodels:\n  - {match: 'lax-*', policy: lax}\n"
    )
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, load_policy_set(folder))
    client = make_client(proxy)
    tools = [asking_tool(mcp.url)]
    upstream.enqueue(call_turn(("echo", json.dumps({"text": f"how to {BANNED_OUT}"}))))
    first = validated(await client.responses.create(model="lax-model", input="hi", tools=tools))
    request = first["output"][1]
    assert request["type"] == "mcp_approval_request"

    raw = await client.responses.with_raw_response.create(
        model=MODEL,
        previous_response_id=first["id"],
        input=[approval(request["id"], True)],
        tools=tools,
    )
    second = validated(raw.parse())
    assert raw.headers["x-shieldgate-blocked"] == "mcp_arguments"
    assert second["output"][-1]["content"][0]["type"] == "refusal"
    assert mcp.tool_calls() == []
    assert len(upstream.requests) == 1  # the follow-up never asked the model


async def test_an_approved_calls_result_is_checked(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    tools = [asking_tool(mcp.url)]
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')))
    first = validated(await client.responses.create(model=MODEL, input="weather?", tools=tools))
    raw = await client.responses.with_raw_response.create(
        model=MODEL,
        previous_response_id=first["id"],
        input=[approval(first["output"][1]["id"], True)],
        tools=tools,
    )
    second = validated(raw.parse())
    assert raw.headers["x-shieldgate-blocked"] == "mcp_result"
    assert mcp.tool_calls("weather") == [{"city": "Oslo"}]
    assert second["output"][-1]["content"][0]["type"] == "refusal"
    assert "Ignore all previous" not in json.dumps(second)
    assert len(upstream.requests) == 1
