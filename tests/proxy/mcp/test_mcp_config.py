"""MCP servers are called only when the operator allows them: a request naming any other is a
clear OpenAI-shaped 400, decided before anything is sent anywhere (neither the upstream nor the
server hears of it); a ``type: mcp`` tool is read strictly."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream
from tests.support.mcp_server import McpTestServer


@pytest.fixture
async def mcp() -> AsyncIterator[McpTestServer]:
    async with McpTestServer() as server:
        yield server


async def start(make_proxy: ProxyFactory, tmp_path: Path, **settings: Any) -> RunningServer:
    settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
    return await make_proxy(None, **settings)


def mcp_tool(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "tests", "server_url": url, **extra}


@pytest.mark.parametrize("configured", [(), ("http://127.0.0.1:1/mcp",)])
async def test_a_server_the_operator_did_not_allow_is_a_400(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    mcp: McpTestServer,
    configured: tuple[str, ...],
) -> None:
    client = make_client(await start(make_proxy, tmp_path, mcp_servers=configured))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="m", input="hi", tools=[mcp_tool(mcp.url, require_approval="never")]
        )
    error = caught.value
    assert error.status_code == 400
    assert error.code == "mcp_server_not_allowed"
    assert error.param == "tools[0].server_url"
    assert "not allowed" in error.message and "mcp_servers" in error.message
    assert upstream.requests == []
    assert mcp.requests == []


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"server_url": "http://x"}, "tools[0].server_label"),
        ({"server_label": "bad label!", "server_url": "http://x"}, "tools[0].server_label"),
        ({"server_label": "a"}, "tools[0].server_url"),
        ({"server_label": "a", "server_url": "http://x", "color": "red"}, "tools[0].color"),
        (
            {"server_label": "a", "server_url": "http://x", "headers": {"Host": "evil"}},
            "tools[0].headers",
        ),
        (
            {"server_label": "a", "server_url": "http://x", "headers": {"X-A": "1\r\nX-B: 2"}},
            "tools[0].headers",
        ),
        (
            {
                "server_label": "a",
                "server_url": "http://x",
                "headers": {"authorization": "Bearer a"},
                "authorization": "b",
            },
            "tools[0].authorization",
        ),
        (
            {"server_label": "a", "server_url": "http://x", "require_approval": "sometimes"},
            "tools[0].require_approval",
        ),
        (
            {"server_label": "a", "server_url": "http://x", "allowed_tools": "echo"},
            "tools[0].allowed_tools",
        ),
        (
            {"server_label": "a", "server_url": "http://x", "connector_id": "connector_gmail"},
            "tools[0].connector_id",
        ),
    ],
)
async def test_malformed_mcp_tools_are_400s_naming_the_field(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    tool: dict[str, Any],
    param: str,
) -> None:
    client = make_client(await start(make_proxy, tmp_path, mcp_servers=("http://x",)))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="m", input="hi", tools=[{"type": "mcp", **tool}])
    assert caught.value.param == param
    assert upstream.requests == []


async def test_two_servers_with_one_label_are_a_400(
    make_proxy: ProxyFactory, make_client: Any, tmp_path: Path
) -> None:
    client = make_client(await start(make_proxy, tmp_path, mcp_servers=("http://x",)))
    tool = {"type": "mcp", "server_label": "a", "server_url": "http://x/1"}
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="m", input="hi", tools=[tool, tool])
    assert caught.value.param == "tools[1].server_label"


async def test_other_built_in_tools_stay_a_clear_400(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any, tmp_path: Path
) -> None:
    client = make_client(await start(make_proxy, tmp_path, mcp_servers=("http://x",)))
    for kind in ("web_search", "file_search"):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model="m", input="hi", tools=[{"type": kind}])
        assert caught.value.param == "tools[0].type"
        assert f"'{kind}'" in caught.value.message
    assert upstream.requests == []


def test_the_proxy_imports_without_the_mcp_sdk() -> None:
    """The SDK is the ``mcp`` extra: a proxy installed without it must still start."""
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "import proxy.app, proxy.endpoints.responses, proxy.mcp.client\n"
        "assert not proxy.mcp.client.available()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


async def test_mcp_tools_without_the_sdk_are_a_501(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = make_client(await start(make_proxy, tmp_path, mcp_servers=("http://x",)))
    monkeypatch.setitem(sys.modules, "mcp", None)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "proxy.mcp.session", raising=False)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model="m", input="hi", tools=[mcp_tool("http://x/mcp")])
    assert caught.value.status_code == 501
    assert "pip install 'shieldgate[mcp]'" in caught.value.message
    assert upstream.requests == []
