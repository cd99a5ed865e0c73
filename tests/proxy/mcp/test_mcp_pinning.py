"""MCP tool pinning through the proxy: a real MCP server (``tests/support/mcp_server.py``) that
changes
its tools between requests, the scripted upstream, the official ``openai`` client.

The first listing of a server is recorded (first use); a later listing whose tool changed is
judged by the ``mcp_tool_changes`` setting: the tool withheld (``refuse_tool``, the default),
the request refused (``refuse_server``), or let through (``monitor``) — each recorded in the
metrics and the audit trail. A pins file (``mcp_pins_file``, written by ``shieldgate mcp
pin``) wins over first-use records. Stream and not."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.mcp.fingerprints import server_print
from proxy.mcp.pins import PinsFileError, load_pins, render_pins
from proxy.serving.server import RunningServer
from proxy.state import MCP_PINS
from tests.conftest import ProxyFactory
from tests.proxy.mcp.test_mcp_loop import validated
from tests.proxy.mcp.test_mcp_stream import final, stream
from tests.proxy.serving.test_cli import clean_env
from tests.support.fake_upstream import FakeUpstream
from tests.support.mcp_helpers import MODEL, mcp_tool, sent_bodies, start_proxy, text_turn
from tests.support.mcp_server import McpTestServer

ALL_TOOLS = {"echo", "weather", "slow", "fail", "big"}
# A change no shield minds: pinning alone must catch it.
CHANGED = "The weather report for a city, in degrees Fahrenheit, with a seven-day outlook."


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


def offered(upstream: FakeUpstream, request: int = -1) -> dict[str, str]:
    """The MCP tools the upstream was offered in a request: name -> description."""
    tools = sent_bodies(upstream)[request].get("tools") or []
    return {tool["function"]["name"]: tool["function"].get("description") for tool in tools}


async def ask(client: openai.AsyncOpenAI, url: str, **extra: Any) -> dict[str, Any]:
    return validated(
        await client.responses.create(model=MODEL, input="weather?", tools=[mcp_tool(url, **extra)])
    )


def listing_item(response: dict[str, Any]) -> dict[str, Any]:
    [item] = [item for item in response["output"] if item["type"] == "mcp_list_tools"]
    return item


async def metrics_text(proxy: RunningServer) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"{proxy.url}/metrics") as reply:
        return await reply.text()


def pin_lines(metrics: str) -> list[str]:
    return sorted(line for line in metrics.splitlines() if line.startswith("shieldgate_mcp_pins"))


def audit_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_changed_tool_is_withheld_and_the_others_stay(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, audit_log=str(audit))
    client = make_client(proxy)
    upstream.enqueue(text_turn("Sunny."), text_turn("Sunny again."))

    first = await ask(client, mcp.url)
    assert set(offered(upstream)) == ALL_TOOLS
    assert listing_item(first)["error"] is None

    mcp.redescribe("weather", CHANGED)
    second = await ask(client, mcp.url)
    # The model is not offered the changed tool, nor its new text; the others stay.
    assert set(offered(upstream)) == ALL_TOOLS - {"weather"}
    assert CHANGED not in json.dumps(sent_bodies(upstream)[-1])
    item = listing_item(second)
    assert {tool["name"] for tool in item["tools"]} == ALL_TOOLS - {"weather"}
    assert "'weather' (description)" in item["error"]
    assert "first listed" in item["error"]
    assert second["output"][-1]["content"][0]["text"] == "Sunny again."

    # ``server``: the allow-list prefix that let the server in (start_proxy: its URL).
    lines = pin_lines(await metrics_text(proxy))
    assert f'shieldgate_mcp_pins_total{{outcome="first_use",server="{mcp.url}"}} 5.0' in lines
    assert f'shieldgate_mcp_pins_total{{outcome="unchanged",server="{mcp.url}"}} 4.0' in lines
    assert f'shieldgate_mcp_pins_total{{outcome="refused_tool",server="{mcp.url}"}} 1.0' in lines

    [record] = audit_records(audit)
    assert record["event"] == "mcp_tool_change"
    assert (record["tool"], record["change"], record["outcome"]) == (
        "weather",
        "changed",
        "refused_tool",
    )
    assert record["fields"] == ["description"]
    assert record["trust"] == "first_use"
    assert record["old_sha256"] != record["new_sha256"]
    assert record["old_fields"]["input_schema"] == record["new_fields"]["input_schema"]
    assert record["old_fields"]["description"] != record["new_fields"]["description"]
    assert record["old_server_sha256"] != record["new_server_sha256"]
    assert record["server"] == mcp.url and record["server_label"] == "tests"
    # Digests only: neither description's text is in the trail.
    assert "Fahrenheit" not in audit.read_text()
    assert "weather report" not in audit.read_text()


async def test_the_first_use_record_is_kept_and_a_change_is_withheld_every_time(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    upstream.enqueue(text_turn("a"), text_turn("b"), text_turn("c"))
    await ask(client, mcp.url)
    mcp.redescribe("weather", CHANGED)
    await ask(client, mcp.url)
    await ask(client, mcp.url)  # the change did not become the record
    assert "weather" not in offered(upstream, -1)
    assert "weather" not in offered(upstream, -2)
    # Changed back: trusted again.
    mcp.redescribe("weather", "The weather report for a city.")
    upstream.enqueue(text_turn("d"))
    await ask(client, mcp.url)
    assert offered(upstream)["weather"] == "The weather report for a city."


async def test_a_new_tool_counts_as_a_change(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, audit_log=str(audit))
    client = make_client(proxy)
    upstream.enqueue(text_turn("a"), text_turn("b"))
    await ask(client, mcp.url)
    mcp.add_tool("send_mail", "Sends an email to anyone.")
    response = await ask(client, mcp.url)
    assert set(offered(upstream)) == ALL_TOOLS
    assert "'send_mail' (new tool)" in listing_item(response)["error"]
    [record] = audit_records(audit)
    assert (record["tool"], record["change"], record["old_sha256"]) == ("send_mail", "new", None)


async def test_refuse_server_refuses_the_request_before_the_model_is_asked(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, mcp_tool_changes="refuse_server")
    client = make_client(proxy)
    upstream.enqueue(text_turn("a"))
    await ask(client, mcp.url)
    mcp.redescribe("weather", CHANGED)
    with pytest.raises(openai.APIStatusError) as caught:
        await ask(client, mcp.url)
    assert caught.value.status_code == 424
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "external_connector_error"
    assert body["code"] == "mcp_tools_changed"
    assert body["param"] == "tools[0].server_url"
    assert "'weather' (description)" in body["message"]
    assert CHANGED not in body["message"]
    assert len(upstream.requests) == 1  # only the first request reached the model
    assert f'outcome="refused_server",server="{mcp.url}"}} 1.0' in await metrics_text(proxy)


async def test_refuse_server_refuses_a_stream_with_an_error_before_it_starts(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url, mcp_tool_changes="refuse_server")
    upstream.enqueue(text_turn("a"))
    await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    mcp.redescribe("echo", "Returns the text it is given, in capitals.")
    async with http.post(
        f"{proxy.url}/v1/responses",
        json={"model": MODEL, "stream": True, "input": "hi", "tools": [mcp_tool(mcp.url)]},
        headers={"Authorization": "Bearer sk-client"},
    ) as reply:
        assert reply.status == 424
        error = (await reply.json())["error"]
    assert error["code"] == "mcp_tools_changed"
    assert "'echo' (description)" in error["message"]
    assert len(upstream.requests) == 1


async def test_a_withheld_tool_in_a_stream(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    proxy = await start_proxy(make_proxy, tmp_path, mcp.url)
    upstream.enqueue(text_turn("a"), text_turn("b"))
    await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    mcp.redescribe("weather", CHANGED)
    events = await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    [done] = [
        event
        for event in events
        if event["type"] == "response.output_item.done"
        and event["item"]["type"] == "mcp_list_tools"
    ]
    assert {tool["name"] for tool in done["item"]["tools"]} == ALL_TOOLS - {"weather"}
    assert "'weather' (description)" in done["item"]["error"]
    assert listing_item(final(events))["error"] == done["item"]["error"]
    assert set(offered(upstream)) == ALL_TOOLS - {"weather"}


async def test_monitor_lets_the_change_through_and_records_it(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    http: aiohttp.ClientSession,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = await start_proxy(
        make_proxy, tmp_path, mcp.url, mcp_tool_changes="monitor", audit_log=str(audit)
    )
    client = make_client(proxy)
    upstream.enqueue(text_turn("a"), text_turn("b"), text_turn("c"))
    await ask(client, mcp.url)
    mcp.redescribe("weather", CHANGED)
    response = await ask(client, mcp.url)
    assert offered(upstream)["weather"] == CHANGED
    assert listing_item(response)["error"] is None
    events = await stream(http, proxy, {"input": "hi", "tools": [mcp_tool(mcp.url)]})
    assert offered(upstream)["weather"] == CHANGED
    assert listing_item(final(events))["error"] is None
    records = audit_records(audit)
    assert [(r["tool"], r["outcome"]) for r in records] == [("weather", "monitored")] * 2
    assert f'outcome="monitored",server="{mcp.url}"}} 2.0' in await metrics_text(proxy)


async def test_only_offered_tools_are_judged(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(
        await start_proxy(make_proxy, tmp_path, mcp.url, mcp_tool_changes="refuse_server")
    )
    upstream.enqueue(text_turn("a"), text_turn("b"))
    await ask(client, mcp.url)
    mcp.redescribe("weather", CHANGED)
    # A request that does not offer the changed tool is not refused: it cannot reach the model.
    response = await ask(client, mcp.url, allowed_tools=["echo"])
    assert set(offered(upstream)) == {"echo"}
    assert listing_item(response)["error"] is None


async def pin_with_the_cli(url: str, *headers: str) -> str:
    """``shieldgate mcp pin URL`` in a process of its own; its stdout."""
    args = [sys.executable, "-m", "proxy.cli", "mcp", "pin", url]
    for header in headers:
        args += ["--header", header]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    assert "review each description" in err.decode()
    return out.decode()


async def test_the_cli_pins_a_real_server(tmp_path: Path, mcp: McpTestServer) -> None:
    from proxy.mcp import session as mcp_session
    from proxy.mcp.client import McpLimits

    text = await pin_with_the_cli(mcp.url, "X-Team: release")
    # The header went to the server with the listing.
    assert any(request.get("x-team") == "release" for request in mcp.requests)
    # What it printed is a pins file the proxy loads, with the server's fingerprints.
    path = tmp_path / "pins.yaml"
    path.write_text(text)
    pinned = load_pins(path).for_url(mcp.url)
    listing = await mcp_session.list_tools(mcp.url, {}, McpLimits(5, 5, 10, 1 << 20))
    assert pinned is not None
    assert pinned.fingerprint == server_print(listing).fingerprint
    assert set(pinned.tools) == ALL_TOOLS
    # Descriptions are shown for review, as comments.
    assert '# description: "Returns the text it is given."' in text
    assert text == render_pins(mcp.url, server_print(listing), listing)


async def test_the_cli_fails_cleanly_on_a_server_it_cannot_reach() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy.cli",
        "mcp",
        "pin",
        "http://127.0.0.1:1/mcp",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 1
    assert out == b""
    assert "could not be reached" in err.decode()


async def test_pins_win_over_first_use_records(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    pins = tmp_path / "pins.yaml"
    pins.write_text(await pin_with_the_cli(mcp.url))  # reviewed: the original tools
    mcp.redescribe("weather", CHANGED)
    # A proxy without the pins file records the changed listing as its first use...
    unpinned = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    upstream.enqueue(text_turn("a"), text_turn("b"), text_turn("c"))
    await ask(unpinned, mcp.url)
    assert offered(upstream)["weather"] == CHANGED
    # ...and one with it (the same store) judges by the pins: the change is withheld.
    audit = tmp_path / "audit.jsonl"
    pinned_proxy = await start_proxy(
        make_proxy, tmp_path, mcp.url, mcp_pins_file=str(pins), audit_log=str(audit)
    )
    response = await ask(make_client(pinned_proxy), mcp.url)
    assert set(offered(upstream)) == ALL_TOOLS - {"weather"}
    assert "since they were pinned" in listing_item(response)["error"]
    [record] = audit_records(audit)
    assert (record["trust"], record["tool"], record["fields"]) == (
        "pinned",
        "weather",
        ["description"],
    )
    # With the pins file, the first request to a server with no record is judged too.
    assert record["old_server_sha256"] == load_pins(pins).servers[mcp.url].fingerprint


async def test_a_pinned_server_is_judged_from_its_first_request(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    pins = tmp_path / "pins.yaml"
    pins.write_text(await pin_with_the_cli(mcp.url))
    mcp.add_tool("send_mail", "Sends an email to anyone.")
    proxy = await start_proxy(
        make_proxy, tmp_path, mcp.url, mcp_pins_file=str(pins), mcp_tool_changes="refuse_server"
    )
    with pytest.raises(openai.APIStatusError) as caught:
        await ask(make_client(proxy), mcp.url)
    assert caught.value.status_code == 424
    assert "'send_mail' (new tool)" in str(caught.value.body)
    assert "since they were pinned" in str(caught.value.body)
    assert upstream.requests == []


async def test_an_edited_pins_file_is_reloaded(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    pins = tmp_path / "pins.yaml"
    pins.write_text(await pin_with_the_cli(mcp.url))
    mcp.redescribe("weather", CHANGED)
    proxy = await start_proxy(
        make_proxy, tmp_path, mcp.url, mcp_pins_file=str(pins), policy_reload_interval=0.05
    )
    client = make_client(proxy)
    upstream.enqueue(text_turn("a"), text_turn("b"))
    await ask(client, mcp.url)
    assert "weather" not in offered(upstream)
    # Reviewed and pinned again: the new description is trusted.
    pins.write_text(await pin_with_the_cli(mcp.url))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if proxy.app[MCP_PINS].pins.for_url(mcp.url) == load_pins(pins).for_url(mcp.url):
            break
    await ask(client, mcp.url)
    assert offered(upstream)["weather"] == CHANGED


async def test_a_broken_pins_file_does_not_start_the_server(
    make_proxy: ProxyFactory, tmp_path: Path
) -> None:
    pins = tmp_path / "pins.yaml"
    pins.write_text(
        "version: 1\nservers:\n  http://127.0.0.1:9/mcp:\n    tools: {a: {sha256: x}}\n"
    )
    with pytest.raises(PinsFileError, match=r"pins.yaml: servers\..*sha256"):
        await start_proxy(make_proxy, tmp_path, "http://127.0.0.1:9/mcp", mcp_pins_file=str(pins))


async def test_a_store_that_fails_fails_the_request_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    unusable = str(tmp_path / "no such directory" / "responses.sqlite3")
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url, responses_db=unusable))
    with pytest.raises(openai.APIStatusError) as caught:
        await ask(client, mcp.url)
    assert caught.value.status_code == 503
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "store_unavailable"
    assert upstream.requests == []
    # A pinned server needs no store: its pins decide.
    pins = tmp_path / "pins.yaml"
    pins.write_text(await pin_with_the_cli(mcp.url))
    pinned = make_client(
        await start_proxy(
            make_proxy, tmp_path, mcp.url, responses_db=unusable, mcp_pins_file=str(pins)
        )
    )
    upstream.enqueue(text_turn("a"))
    await ask(pinned, mcp.url)
    assert set(offered(upstream)) == ALL_TOOLS


async def forget_with_the_cli(url: str, database: Path) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy.cli",
        "mcp",
        "forget",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=clean_env(SHIELDGATE_RESPONSES_DB=str(database)),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, (out + err).decode()


async def test_forget_makes_the_next_listing_the_first_use(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
) -> None:
    client = make_client(await start_proxy(make_proxy, tmp_path, mcp.url))
    upstream.enqueue(text_turn("a"), text_turn("b"), text_turn("c"))
    await ask(client, mcp.url)
    mcp.redescribe("weather", CHANGED)
    await ask(client, mcp.url)
    assert "weather" not in offered(upstream)
    code, said = await forget_with_the_cli(mcp.url, tmp_path / "responses.sqlite3")
    assert code == 0, said
    assert f"forgot the first-use record of {mcp.url}" in said
    await ask(client, mcp.url)  # recorded anew: the change reviewed is trusted
    assert offered(upstream)["weather"] == CHANGED
    code, said = await forget_with_the_cli(
        "http://127.0.0.1:1/other", tmp_path / "responses.sqlite3"
    )
    assert code == 1 and "no first-use record" in said
