"""Every MCP hop is guarded by the request's policy, end to end (non-stream; the streamed form
is in ``test_mcp_stream.py``):

- ``mcp_result``: what a tool returns is checked as tool-role text before the model reads it
  (an injection never reaches the upstream; a credential is redacted in what the model reads,
  in ``mcp_call.output`` and in the stored response);
- ``mcp_arguments``: a call's final arguments are checked by the output shields before the call
  is made (a blocked call never reaches the MCP server);
- ``mcp_tools``: the tool definitions a server lists are checked before the model sees them;
- findings name their hop in the audit trail, the metrics and the log; monitor mode and remote
  shields behave as at every stage; the MCP server gets only the headers given for it.

Each test would fail without its check: the text it looks for would reach the upstream, the
server or the client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from openai.types.responses import Response

from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT, REFUSAL
from tests.support.fake_judges import Answer, FakeJudges
from tests.support.fake_upstream import FakeUpstream
from tests.support.mcp_helpers import MODEL, call_turn, mcp_tool, sent_text, start_proxy, text_turn
from tests.support.mcp_server import INJECTION, McpTestServer

GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # redacted both ways by the default policy


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


async def create(
    http: aiohttp.ClientSession, proxy: Any, body: dict[str, Any]
) -> tuple[int, Any, dict[str, Any]]:
    """A raw POST /v1/responses (headers matter here); the response is validated."""
    async with http.post(
        f"{proxy.url}/v1/responses",
        json={"model": MODEL, **body},
        headers={"Authorization": "Bearer sk-client"},
    ) as reply:
        payload = await reply.json()
        if reply.status == 200:
            Response.model_validate(payload)
        return reply.status, reply.headers, payload


def kinds(response: dict[str, Any]) -> list[str]:
    return [item["type"] for item in response["output"]]


# ---- mcp_result ----------------------------------------------------------------------------


async def test_an_injection_in_a_result_never_reaches_the_model(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')), text_turn("Sunny."))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    status, headers, response = await create(
        http, proxy, {"input": "Weather in Oslo?", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 200
    assert headers["x-shieldgate-blocked"] == "mcp_result"
    assert mcp.tool_calls("weather") == [{"city": "Oslo"}]  # the call ran...
    assert len(upstream.requests) == 1  # ...and its result was never sent for a next turn
    assert "Ignore all previous instructions" not in sent_text(upstream)
    # A non-stream client gets the refusal alone, and nothing of the result.
    assert kinds(response) == ["message"]
    assert response["output"][0]["content"][0] == {"type": "refusal", "refusal": REFUSAL}
    assert "Ignore all previous" not in json.dumps(response)
    async with http.get(
        f"{proxy.url}/v1/responses/{response['id']}", headers={"Authorization": "Bearer sk-client"}
    ) as stored:
        assert "Ignore all previous" not in await stored.text()


async def test_a_credential_in_a_result_is_redacted_where_it_is_read(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    # A policy without output shields: the key goes to the server in the arguments, and
    # comes back in the result, where the input shields find it.
    arguments = json.dumps({"text": f"the key is {GH_TOKEN}"})
    upstream.enqueue(call_turn(("echo", arguments)), text_turn("Done."))
    policy = (
        "version: 1\nname: results-only\ninput:\n"
        "  - {id: credentials, type: secrets, action: redact, placeholder: '[CREDENTIAL]'}\n"
    )
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, policy)
    status, _, response = await create(
        http, proxy, {"input": "Echo my key", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 200
    assert mcp.tool_calls("echo") == [{"text": f"the key is {GH_TOKEN}"}]  # no output shields
    call = next(item for item in response["output"] if item["type"] == "mcp_call")
    assert call["output"] == "the key is [CREDENTIAL]"
    second = upstream.requests[1].json()
    assert second["messages"][-1]["content"] == "the key is [CREDENTIAL]"
    async with http.get(
        f"{proxy.url}/v1/responses/{response['id']}", headers={"Authorization": "Bearer sk-client"}
    ) as stored:
        kept = await stored.json()
    assert next(i for i in kept["output"] if i["type"] == "mcp_call")["output"] == (
        "the key is [CREDENTIAL]"
    )


async def test_a_blocked_result_under_refusal_style_error_is_a_400(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    policy = (
        "version: 1\nname: errors\nrefusal: {message: Blocked., style: error}\n"
        "input:\n  - {id: indirect, type: injection, roles: [tool], threshold: 0.5}\n"
    )
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, policy)
    status, headers, body = await create(
        http, proxy, {"input": "Weather?", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 400
    assert body["error"]["code"] == "content_filter"
    assert headers["x-shieldgate-blocked"] == "mcp_result"
    assert len(upstream.requests) == 1


async def test_monitor_mode_lets_the_result_through_and_records_the_finding(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    policy = (
        "version: 1\nname: watching\nmode: monitor\n"
        "input:\n  - {id: indirect, type: injection, roles: [tool], threshold: 0.5}\n"
    )
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')), text_turn("Sunny."))
    audit = tmp_path / "audit.jsonl"
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, policy, audit_log=str(audit))
    status, headers, _ = await create(
        http, proxy, {"input": "Weather?", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 200 and "x-shieldgate-blocked" not in headers
    assert INJECTION in upstream.requests[1].json()["messages"][-1]["content"]
    await proxy.close()
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["hop"], r["stage"], r["mode"]) for r in records] == [
        ("mcp_result", "input", "monitor")
    ]


async def test_remote_input_shields_judge_results(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    async with FakeJudges() as judges:
        seen: list[str] = []

        def hook(body: Any) -> Answer:
            seen.append(body["text"])
            blocked = "sunny" in body["text"]
            return Answer(json={"action": "block" if blocked else "allow"})

        judges.webhook = hook
        policy = (
            "version: 1\nname: hooked\ninput:\n"
            f"  - {{id: hook, type: webhook, url: '{judges.url}/hook', timeout: 5}}\n"
        )
        upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')), text_turn("Sunny."))
        proxy = await start_proxy(make_proxy, tmp_path, mcp.url, policy)
        status, headers, _ = await create(
            http, proxy, {"input": "Weather?", "tools": [mcp_tool(mcp.url)]}
        )
    assert status == 200
    assert headers["x-shieldgate-blocked"] == "mcp_result"
    assert any(text.startswith("Weather in Oslo: sunny") for text in seen)
    assert len(upstream.requests) == 1


# ---- mcp_arguments -------------------------------------------------------------------------


async def test_blocked_arguments_never_reach_the_server(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(call_turn(("echo", json.dumps({"text": f"how to {BANNED_OUT} at home"}))))
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    status, headers, response = await create(
        http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 200
    assert headers["x-shieldgate-blocked"] == "output"
    assert mcp.tool_calls() == []
    assert "tools/call" not in mcp.methods
    assert len(upstream.requests) == 1
    assert kinds(response) == ["message"]
    assert response["output"][0]["content"][0]["refusal"] == REFUSAL


async def test_redacted_arguments_are_what_the_server_gets(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(
        call_turn(("echo", json.dumps({"text": f"key {GH_TOKEN}"})), piece=5),
        text_turn("Done."),
    )
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    status, _, response = await create(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    assert status == 200
    assert mcp.tool_calls("echo") == [{"text": "key [CREDENTIAL]"}]
    call = next(item for item in response["output"] if item["type"] == "mcp_call")
    assert json.loads(call["arguments"]) == {"text": "key [CREDENTIAL]"}
    assert GH_TOKEN not in json.dumps(response)


# ---- mcp_tools -----------------------------------------------------------------------------


async def test_a_poisoned_tool_definition_blocks_before_the_model_is_asked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    async with McpTestServer(poisoned_description=f"Looks things up. {INJECTION}") as poisoned:
        proxy = await start_proxy(make_proxy, tmp_path, poisoned.url)
        status, headers, response = await create(
            http, proxy, {"input": "hi", "tools": [mcp_tool(poisoned.url)]}
        )
    assert status == 200
    assert headers["x-shieldgate-blocked"] == "mcp_tools"
    assert upstream.requests == []
    assert kinds(response) == ["message"]
    assert "Ignore all previous" not in json.dumps(response)


async def test_a_tool_definition_is_redacted_where_the_model_reads_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    async with McpTestServer(poisoned_description=f"Use the key {GH_TOKEN}.") as server:
        upstream.enqueue(text_turn("ok"))
        proxy = await start_proxy(make_proxy, tmp_path, server.url)
        status, _, response = await create(
            http,
            proxy,
            {"input": "hi", "tools": [mcp_tool(server.url, allowed_tools=["secret_tool"])]},
        )
    assert status == 200
    (tool,) = upstream.requests[0].json()["tools"]
    assert tool["function"]["description"] == "Use the key [CREDENTIAL]."
    listing = response["output"][0]
    assert listing["tools"][0]["description"] == "Use the key [CREDENTIAL]."
    assert GH_TOKEN not in json.dumps(response)


# ---- hop names, credentials ----------------------------------------------------------------


async def test_findings_name_their_hop_in_audit_metrics_and_log(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, audit_log=str(audit))
    tools = [mcp_tool(mcp.url)]
    caplog.set_level(logging.INFO, logger="shieldgate.findings")
    upstream.enqueue(call_turn(("weather", '{"city": "Oslo"}')))
    await create(http, proxy, {"input": "one", "tools": tools})
    upstream.enqueue(call_turn(("echo", json.dumps({"text": BANNED_OUT}))))
    await create(http, proxy, {"input": "two", "tools": tools})
    async with McpTestServer(poisoned_description=INJECTION) as poisoned:
        await create(
            http,
            await start_proxy(make_proxy, tmp_path, poisoned.url, audit_log=str(audit)),
            {"input": "three", "tools": [mcp_tool(poisoned.url)]},
        )
    async with http.get(f"{proxy.url}/metrics") as reply:
        metrics = await reply.text()
    await proxy.close()

    hops = {
        (record["hop"], record["stage"], record["shield"])
        for line in audit.read_text().splitlines()
        if "hop" in (record := json.loads(line))
    }
    assert hops == {
        ("mcp_result", "input", "indirect-injection"),
        ("mcp_arguments", "output", "mass-harm"),
        ("mcp_tools", "input", "indirect-injection"),
    }
    assert (
        'shieldgate_mcp_findings_total{action="block",hop="mcp_result",mode="enforce",'
        'policy="default",shield="indirect-injection"} 1.0'
    ) in metrics
    assert 'hop="mcp_arguments"' in metrics
    # weather ran and its result was blocked; echo's blocked arguments never made a call.
    assert 'shieldgate_mcp_hops_total{kind="call",outcome="blocked"} 1.0' in metrics
    assert 'kind="call",outcome="ok"' not in metrics
    assert 'shieldgate_mcp_hops_total{kind="list",outcome="ok"} 2.0' in metrics
    logged = {getattr(r, "hop", None) for r in caplog.records if r.name == "shieldgate.findings"}
    assert {"mcp_result", "mcp_arguments", "mcp_tools"} <= logged


async def test_the_server_gets_only_the_headers_given_for_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    async with McpTestServer(name="a") as a, McpTestServer(name="b") as b:
        upstream.enqueue(
            call_turn(("echo", '{"text": "x"}')),  # server a's (b offers only "big")
            text_turn("done"),
        )
        proxy = await start_proxy(
            make_proxy,
            tmp_path,
            a.url,
            mcp_servers=(a.url, b.url),
            upstream_api_key="sk-operator-secret",
        )
        tools = [
            mcp_tool(
                a.url,
                server_label="a",
                allowed_tools=["echo"],
                headers={"X-Team": "a"},
                authorization="tok-a",
            ),
            mcp_tool(b.url, server_label="b", allowed_tools=["big"], headers={"X-Team": "b"}),
        ]
        status, _, _ = await create(http, proxy, {"input": "hi", "tools": tools})
    assert status == 200
    assert a.requests and b.requests
    for headers in a.requests:
        assert headers["authorization"] == "Bearer tok-a"
        assert headers["x-team"] == "a"
    for headers in b.requests:
        assert "authorization" not in headers  # neither a's token, the client's nor the proxy's
        assert headers["x-team"] == "b"
    everything = json.dumps(a.requests + b.requests)
    assert "sk-client" not in everything and "sk-operator-secret" not in everything
    stored = (tmp_path / "responses.sqlite3").read_bytes()
    assert b"tok-a" not in stored and b"X-Team" not in stored


async def test_a_block_in_a_later_turn_is_named_output(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    upstream.enqueue(
        call_turn(("echo", '{"text": "a"}')), text_turn(f"Here is how to {BANNED_OUT}")
    )
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    status, headers, response = await create(
        http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]}
    )
    assert status == 200
    assert headers["x-shieldgate-blocked"] == "output"
    assert kinds(response) == ["message"]
    assert BANNED_OUT not in json.dumps(response)
