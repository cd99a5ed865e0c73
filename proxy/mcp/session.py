"""The MCP SDK side of the hop (``proxy.mcp.client``): the official ``mcp`` client over
streamable HTTP, on an HTTP client fenced in as ``proxy.mcp.client`` describes. Imported only
when a request uses an MCP tool: the SDK is the ``mcp`` extra, not a dependency of the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

from proxy.mcp.client import McpError, McpLimits, ToolResult
from shields import json_codec

__all__ = ["call_tool", "list_tools", "result_text"]

log = logging.getLogger("shieldgate.mcp")

for _name in ("mcp", "mcp_types", "httpx2"):
    # Their lines quote URLs and answers (see proxy.mcp.client).
    logging.getLogger(_name).setLevel(logging.CRITICAL + 1)

_T = TypeVar("_T")
# A listing longer than this is cut short (a server paging for ever cannot hold a request).
_MAX_PAGES = 16
_MAX_TOOLS = 256
_USER_AGENT = "shieldgate"


class _TooLarge(Exception):
    pass


class _LimitedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, transport: _Transport) -> None:
        self._inner = inner
        self._transport = transport

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for piece in self._inner:
            size += len(piece)
            if size > self._transport.max_bytes:
                self._transport.too_large = True
                raise _TooLarge
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Transport(httpx2.AsyncBaseTransport):
    """httpx2's transport, counting every response body and remembering what it saw (a
    redirect, an error status) so that a failure is named by what happened on the wire
    rather than by the SDK's message for it."""

    def __init__(self, max_bytes: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False)
        self.max_bytes = max_bytes
        self.too_large = False
        self.redirect: int | None = None
        self.error_status: int | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        status = response.status_code
        if 300 <= status < 400:
            self.redirect = status
        elif status >= 400 and self.error_status is None:
            self.error_status = status
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _LimitedStream(response.stream, self)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


@contextlib.asynccontextmanager
async def _client(
    url: str, headers: dict[str, str], limits: McpLimits, transport: _Transport
) -> AsyncIterator[Client]:
    timeout = httpx2.Timeout(limits.read_timeout, connect=limits.connect_timeout)
    async with httpx2.AsyncClient(
        headers={**headers, "User-Agent": _USER_AGENT},
        timeout=timeout,
        follow_redirects=False,
        max_redirects=0,
        trust_env=False,
        transport=transport,
    ) as http:
        mcp_transport = streamable_http_client(
            url, http_client=http, max_sse_event_size=limits.max_bytes
        )
        async with Client(mcp_transport, cache=None) as client:
            yield client


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _classify(exc: BaseException, transport: _Transport, limits: McpLimits) -> McpError:
    leaves = _leaves(exc)
    if transport.too_large or any(isinstance(leaf, _TooLarge) for leaf in leaves):
        return McpError(
            "too_large", f"the MCP server's answer is larger than {limits.max_bytes} bytes", 502
        )
    if transport.redirect is not None:
        return McpError(
            "redirect", "the MCP server answered with a redirect, which is not followed", 502
        )
    if transport.error_status is not None:
        status = transport.error_status
        return McpError("http_status", f"the MCP server answered HTTP {status}", status)
    if any(isinstance(leaf, TimeoutError | httpx2.TimeoutException) for leaf in leaves):
        return McpError(
            "timeout", f"the MCP server did not answer in time ({limits.read_timeout:g} s)", 504
        )
    if any(isinstance(leaf, httpx2.ConnectError | OSError) for leaf in leaves):
        return McpError("connect", "the MCP server could not be reached", 502)
    for leaf in leaves:
        if isinstance(leaf, MCPError):
            code = leaf.error.code if isinstance(leaf.error.code, int) else -32603
            return McpError("protocol", f"the MCP server answered with an error ({code})", code)
    return McpError("bad_reply", "the MCP server's answer could not be read", 502)


async def _hop(
    url: str,
    headers: dict[str, str],
    limits: McpLimits,
    operation: Callable[[Client], Awaitable[_T]],
) -> _T:
    transport = _Transport(limits.max_bytes)
    done = False
    result: _T | None = None
    try:
        async with (
            asyncio.timeout(limits.call_timeout),
            _client(url, headers, limits, transport) as client,
        ):
            result = await operation(client)
            done = True
    except McpError:
        raise
    except TimeoutError:
        if not done:
            raise McpError(
                "timeout",
                f"the MCP call took longer than {limits.call_timeout:g} s",
                504,
            ) from None
        log.info("MCP session did not close in time")
    except Exception as exc:
        if not done or transport.too_large:
            error = _classify(exc, transport, limits)
            log.info("MCP hop failed: %s", error.kind, extra={"mcp_error": error.kind})
            raise error from None
        # The answer was complete; only closing the session failed.
        log.info("MCP session did not close cleanly: %s", type(exc).__name__)
    assert done
    return result  # type: ignore[return-value]  # set whenever done


def _tool_dict(tool: Any) -> dict[str, Any]:
    annotations = tool.annotations
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "annotations": annotations.model_dump() if annotations is not None else None,
    }


async def list_tools(url: str, headers: dict[str, str], limits: McpLimits) -> list[dict[str, Any]]:
    """The server's tools (``name``, ``description``, ``input_schema``, ``annotations``), as
    plain values read from the server's answer: hostile, for ``proxy.mcp.tools`` to vet."""

    async def listing(client: Client) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += [_tool_dict(tool) for tool in page.tools]
            cursor = page.next_cursor
            if cursor is None or len(tools) >= _MAX_TOOLS:
                break
        return tools[:_MAX_TOOLS]

    return await _hop(url, headers, limits, listing)


async def call_tool(
    url: str,
    headers: dict[str, str],
    limits: McpLimits,
    name: str,
    arguments: dict[str, Any],
) -> ToolResult:
    """Calls one tool; its result as the text the model will read (after the shields)."""

    async def calling(client: Client) -> CallToolResult:
        return await client.call_tool(name, arguments)

    result = await _hop(url, headers, limits, calling)
    text = result_text(result)
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise McpError(
            "too_large", f"the tool's result is larger than {limits.max_bytes} bytes", 502
        )
    return ToolResult(text, bool(result.is_error))


def result_text(result: CallToolResult) -> str:
    """A result's content as the text a chat model reads: its text blocks (and embedded text
    resources) in order; other blocks (images, audio, links, binary resources) are named, not
    passed; a result with no text but structured content is that content as JSON."""
    texts: list[str] = []
    has_text = False
    for block in result.content:
        if isinstance(block, TextContent):
            texts.append(block.text)
            has_text = True
        elif isinstance(block, EmbeddedResource) and isinstance(
            block.resource, TextResourceContents
        ):
            texts.append(block.resource.text)
            has_text = True
        else:
            texts.append(f"[{getattr(block, 'type', 'unknown')} content not shown]")
    if not has_text and result.structured_content is not None:
        return json_codec.dumps(result.structured_content).decode("utf-8", "surrogatepass")
    return "\n".join(texts)
