"""The MCP hop itself: listing a server's tools and calling one, safely.

The proxy now makes outbound calls a client asked for, so each hop is fenced in:

- **Where**: only the URL ``proxy.mcp.servers`` allowed (normalized there) is called. Redirects
  are never followed, not even within the origin (the SDK's transport follows those unless the
  HTTP client allows no redirect at all: ``max_redirects=0``); a redirect fails the hop.
- **What goes with it**: one HTTP client per hop, carrying only the headers the client gave for
  this server; no environment proxies or ``.netrc`` credentials (``trust_env=False``), no
  cookies kept between hops, none of the proxy's own keys or the client's ``Authorization``.
- **How long**: ``mcp_connect_timeout`` to connect, ``mcp_read_timeout`` of silence at most,
  ``mcp_call_timeout`` for the whole hop (session set-up included).
- **How much**: no HTTP response body of the server may exceed ``mcp_max_result_bytes``
  (counted as it arrives, by the transport), nor a result's text.
- **Failures** become ``McpError``, whose message is the proxy's own words — never the
  server's text, which no shield has read — and whose ``error_item`` is the ``mcp_call.error``
  a client sees. A tool that reports its own error (``isError``) is not a failure of the hop:
  its text is a result like any other, for the shields to check.

The official ``mcp`` SDK is the client (streamable HTTP), in ``proxy.mcp.session``, imported
only when a request uses an MCP tool: the SDK is the ``mcp`` extra (``available``). Its
loggers, and those of its HTTP library, are silenced: they log request URLs and parts of
answers (a token in a URL's query, a server's text no shield has read); the proxy logs the kind
of each failure instead.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from proxy.settings import Settings

__all__ = ["McpError", "McpLimits", "ToolResult", "available", "call_tool", "list_tools"]


@dataclass(frozen=True, slots=True)
class McpLimits:
    connect_timeout: float
    read_timeout: float
    call_timeout: float
    max_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> McpLimits:
        return cls(
            settings.mcp_connect_timeout,
            settings.mcp_read_timeout,
            settings.mcp_call_timeout,
            settings.mcp_max_result_bytes,
        )


class McpError(Exception):
    """A hop that failed. ``message`` is the proxy's own sentence; ``kind`` one of connect,
    timeout, http_status, redirect, too_large, protocol, bad_reply; ``code`` the HTTP status
    or JSON-RPC error code it carries."""

    def __init__(self, kind: str, message: str, code: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code

    def error_item(self) -> dict[str, Any]:
        """The ``error`` of a failed ``mcp_call`` item (``McpToolCallError``)."""
        if self.kind == "protocol":
            return {"type": "mcp_protocol_error", "code": self.code, "message": self.message}
        return {"type": "http_error", "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a call returned, as text for the model; ``is_error``: the tool reported an error."""

    text: str
    is_error: bool


def available() -> bool:
    """Whether the MCP SDK can be imported (``pip install 'shieldgate[mcp]'``)."""
    try:
        importlib.import_module("proxy.mcp.session")
    except ImportError:
        return False
    return True


async def list_tools(url: str, headers: dict[str, str], limits: McpLimits) -> list[dict[str, Any]]:
    """The server's tools (``name``, ``description``, ``input_schema``, ``annotations``), as
    plain values read from the server's answer: hostile, for ``proxy.mcp.tools`` to vet."""
    from proxy.mcp import session as mcp_session

    return await mcp_session.list_tools(url, headers, limits)


async def call_tool(
    url: str,
    headers: dict[str, str],
    limits: McpLimits,
    name: str,
    arguments: dict[str, Any],
) -> ToolResult:
    """Calls one tool; its result as the text the model will read (after the shields)."""
    from proxy.mcp import session as mcp_session

    return await mcp_session.call_tool(url, headers, limits, name, arguments)
