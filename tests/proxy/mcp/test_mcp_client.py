"""The MCP hop (``proxy.mcp.client``) against a real MCP server and hostile HTTP servers: tools
listed and called, and every failure a clean ``McpError`` in the proxy's own words: timeouts,
a per-call deadline, redirects never followed, error statuses, oversized answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from proxy.mcp.client import McpError, McpLimits, call_tool, list_tools
from tests.support.mcp_server import INJECTION, McpTestServer

LIMITS = McpLimits(connect_timeout=1.0, read_timeout=2.0, call_timeout=3.0, max_bytes=64 * 1024)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Starts an aiohttp server answering every request with ``handler``; its MCP URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_lists_and_calls_tools(mcp: McpTestServer) -> None:
    tools = await list_tools(mcp.url, {}, LIMITS)
    by_name = {tool["name"]: tool for tool in tools}
    assert set(by_name) == {"echo", "weather", "slow", "fail", "big"}
    assert by_name["echo"]["description"] == "Returns the text it is given."
    assert by_name["echo"]["input_schema"]["properties"]["text"]["type"] == "string"
    result = await call_tool(mcp.url, {}, LIMITS, "echo", {"text": "héllo"})
    assert (result.text, result.is_error) == ("héllo", False)
    assert mcp.tool_calls("echo") == [{"text": "héllo"}]
    report = await call_tool(mcp.url, {}, LIMITS, "weather", {"city": "Oslo"})
    assert INJECTION in report.text


async def test_a_tool_error_is_a_result_not_a_failure(mcp: McpTestServer) -> None:
    result = await call_tool(mcp.url, {}, LIMITS, "fail", {"text": "x"})
    assert result.is_error
    # The server's SDK reports the failure without the exception's text.
    assert "10.0.0.7" not in result.text


async def test_only_the_given_headers_go_to_the_server(mcp: McpTestServer) -> None:
    await call_tool(
        mcp.url, {"X-Team": "blue", "Authorization": "Bearer t1"}, LIMITS, "echo", {"text": "a"}
    )
    assert mcp.requests, "the server saw no request"
    for headers in mcp.requests:
        assert headers["x-team"] == "blue"
        assert headers["authorization"] == "Bearer t1"
        assert headers["user-agent"] == "shieldgate"
        assert "cookie" not in headers


async def test_the_call_deadline_stops_a_slow_tool(mcp: McpTestServer) -> None:
    limits = McpLimits(connect_timeout=1.0, read_timeout=5.0, call_timeout=0.5, max_bytes=65536)
    started = time.monotonic()
    with pytest.raises(McpError) as caught:
        await call_tool(mcp.url, {}, limits, "slow", {"seconds": 3})
    assert time.monotonic() - started < 2.0
    assert caught.value.kind == "timeout"
    assert caught.value.message == "the MCP call took longer than 0.5 s"
    assert caught.value.error_item() == {
        "type": "http_error",
        "code": 504,
        "message": "the MCP call took longer than 0.5 s",
    }


async def test_the_read_timeout_stops_a_silent_server(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    async def silent(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(1.5)  # past the read timeout; short, as teardown waits for it
        return web.Response()

    url = await serve(silent)
    limits = McpLimits(connect_timeout=1.0, read_timeout=0.3, call_timeout=5.0, max_bytes=65536)
    started = time.monotonic()
    with pytest.raises(McpError) as caught:
        await list_tools(url, {}, limits)
    assert time.monotonic() - started < 2.0
    assert caught.value.kind == "timeout"


async def test_an_oversized_result_fails(mcp: McpTestServer) -> None:
    with pytest.raises(McpError) as caught:
        await call_tool(mcp.url, {}, LIMITS, "big", {"size": 200_000})
    assert caught.value.kind == "too_large"
    assert caught.value.message == "the MCP server's answer is larger than 65536 bytes"
    small = await call_tool(mcp.url, {}, LIMITS, "big", {"size": 1000})
    assert small.text == "x" * 1000


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_redirects_are_never_followed(
    mcp: McpTestServer, serve: Callable[[Handler], Awaitable[str]], status: int
) -> None:
    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": mcp.url})

    url = await serve(redirect)
    with pytest.raises(McpError) as caught:
        await list_tools(url, {"Authorization": "Bearer only-for-the-first"}, LIMITS)
    assert caught.value.kind == "redirect"
    assert mcp.requests == []  # the redirect's target heard nothing


async def test_a_redirect_within_the_origin_is_not_followed_either(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    seen: list[str] = []

    async def redirect(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        return web.Response(status=307, headers={"Location": "/elsewhere"})

    url = await serve(redirect)
    with pytest.raises(McpError) as caught:
        await list_tools(url, {}, LIMITS)
    assert caught.value.kind == "redirect"
    assert "/elsewhere" not in seen


async def test_an_error_status_is_named_without_the_servers_text(
    serve: Callable[[Handler], Awaitable[str]],
) -> None:
    async def broken(request: web.Request) -> web.StreamResponse:
        return web.Response(status=500, text="stack trace with password=hunter2")

    url = await serve(broken)
    with pytest.raises(McpError) as caught:
        await list_tools(url, {}, LIMITS)
    assert caught.value.kind == "http_status"
    assert caught.value.code == 500
    assert "hunter2" not in caught.value.message


async def test_an_unreadable_answer_fails(serve: Callable[[Handler], Awaitable[str]]) -> None:
    async def junk(request: web.Request) -> web.StreamResponse:
        return web.Response(text="not json at all", content_type="application/json")

    url = await serve(junk)
    with pytest.raises(McpError) as caught:
        await list_tools(url, {}, LIMITS)
    assert caught.value.kind in ("protocol", "bad_reply")
    assert "not json" not in caught.value.message


async def test_an_unreachable_server_fails_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(McpError) as caught:
        await list_tools("http://127.0.0.1:1/mcp", {}, LIMITS)
    assert caught.value.kind == "connect"
    assert time.monotonic() - started < 2.0
