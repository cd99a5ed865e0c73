"""The MCP allow-list (``proxy.mcp.servers``) and its setting: deny by default, prefixes compared
by origin and whole path segments, URLs that could reach elsewhere than they say refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from proxy.mcp.servers import McpAllowList, allowed_server
from proxy.settings import Settings

ALLOWED = McpAllowList(("http://tools.internal:9000/mcp", "https://docs.example.com"))


def test_nothing_is_allowed_by_default() -> None:
    assert McpAllowList(()).check("http://tools.internal:9000/mcp") is None
    assert Settings().mcp_servers == ()


@pytest.mark.parametrize(
    ("url", "called"),
    [
        ("http://tools.internal:9000/mcp", "http://tools.internal:9000/mcp"),
        ("http://tools.internal:9000/mcp/docs", "http://tools.internal:9000/mcp/docs"),
        ("http://TOOLS.internal:9000/mcp?team=a", "http://tools.internal:9000/mcp?team=a"),
        ("https://docs.example.com/anything/at/all", "https://docs.example.com/anything/at/all"),
        ("https://docs.example.com:443/mcp", "https://docs.example.com/mcp"),
    ],
)
def test_allowed_urls_are_called_as_normalized(url: str, called: str) -> None:
    assert ALLOWED.check(url) == called


@pytest.mark.parametrize(
    "url",
    [
        "http://tools.internal:9000/mcpx",  # a prefix of a segment is no parent path
        "http://tools.internal:9001/mcp",  # another port
        "https://tools.internal:9000/mcp",  # another scheme
        "http://tools.internal/mcp",  # the default port is another port
        "http://docs.example.com/mcp",  # http where https is allowed
        "http://tools.internal:9000@evil.example/mcp",  # userinfo: a request to evil.example
        "http://user:pw@tools.internal:9000/mcp",
        "http://tools.internal:9000/mcp/../admin",  # dot segments
        "http://tools.internal:9000/mcp/./x",
        "http://tools.internal:9000/mcp/%2e%2e/admin",  # encoded dots
        "http://tools.internal:9000/mcp%2F..%2Fadmin",  # encoded slashes
        "http://tools.internal:9000/mcp%5c..%5cadmin",  # encoded backslashes
        "http://tools.internal:9000/mcp#frag",
        "http://tools.internal:9000/mcp\\..\\admin",
        "ftp://tools.internal:9000/mcp",
        "http://169.254.169.254/latest/meta-data",
        "not a url",
        "http://tools.internal:9000/mcp\n",
    ],
)
def test_refused_urls(url: str) -> None:
    assert ALLOWED.check(url) is None


def test_setting_from_a_comma_separated_variable() -> None:
    settings = Settings.from_sources(
        {}, {"SHIELDGATE_MCP_SERVERS": "http://a.internal:1/mcp, https://b.example"}
    )
    assert settings.mcp_servers == ("http://a.internal:1/mcp", "https://b.example")


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("tools.internal/mcp", "http:// or https://"),
        ("http://u:p@tools.internal/mcp", "user name or password"),
        ("http://tools.internal/mcp?x=1", "query string"),
        ("http://tools.internal/a/../mcp", "dot segments"),
    ],
)
def test_bad_prefixes_are_setting_errors(prefix: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        Settings(mcp_servers=(prefix,))
    with pytest.raises(ValueError, match=problem):
        allowed_server(prefix)
