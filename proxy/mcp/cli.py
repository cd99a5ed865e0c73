"""``shieldgate mcp``: pinning MCP servers' tools (``proxy.mcp.pinning``).

- ``shieldgate mcp pin URL [--header 'K: V']...``: lists the server's tools, as the proxy does
  (the same client, limits and URL normalization), and prints a pins file for it on stdout,
  each tool's description shown as a comment for review. Nothing is stored.
- ``shieldgate mcp forget URL``: deletes the server's first-use record from the store the
  settings name (``responses_db``), so that its next listing is recorded and trusted anew —
  for a change that was reviewed without pinning the server.

Imported only by these commands: the MCP SDK and the store stay out of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from proxy.mcp.servers import normalized_url
from proxy.settings import Settings

__all__ = ["forget_command", "parse_headers", "pin_command", "settings_for"]

EXIT_USAGE = 2


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``--header 'Name: value'`` flags; ValueError naming a malformed one (never its value,
    which may be a token)."""
    headers: dict[str, str] = {}
    for value in values:
        name, colon, rest = value.partition(":")
        name = name.strip()
        if not colon or not name or any(c.isspace() for c in name):
            raise ValueError(f"--header {name[:64]!r}: expected 'Name: value'")
        headers[name] = rest.strip()
    return headers


def pin_command(
    url: str, header_values: Sequence[str], settings: Settings, out: TextIO, err: TextIO
) -> int:
    """Lists the server's tools and writes their pins to ``out``; 1 when the server could
    not be listed, 2 on bad arguments."""
    from proxy.mcp.client import McpError, McpLimits, available, list_tools
    from proxy.mcp.fingerprints import server_print
    from proxy.mcp.pins import render_pins

    try:
        normalized = normalized_url(url)
        headers = parse_headers(header_values)
    except ValueError as exc:
        print(f"shieldgate: {url[:200]!r}: {exc}", file=err)
        return EXIT_USAGE
    if not available():
        print("shieldgate: the MCP SDK is not installed (pip install 'shieldgate[mcp]')", file=err)
        return EXIT_USAGE
    try:
        listing = asyncio.run(list_tools(normalized, headers, McpLimits.of(settings)))
    except McpError as exc:
        print(f"shieldgate: cannot list the tools of {normalized}: {exc.message}", file=err)
        return 1
    printed = server_print(listing)
    out.write(render_pins(normalized, printed, listing))
    print(
        f"shieldgate: pinned {len(printed.tools)} tools of {normalized}; "
        "review each description above before committing the file",
        file=err,
    )
    return 0


def forget_command(url: str, settings: Settings, out: TextIO, err: TextIO) -> int:
    """Deletes the server's first-use record; 1 when it had none."""
    from proxy.mcp.pinning import server_key
    from proxy.store.responses import StoreStartupError, open_response_store

    try:
        normalized = normalized_url(url)
    except ValueError as exc:
        print(f"shieldgate: {url[:200]!r}: {exc}", file=err)
        return EXIT_USAGE

    async def forget() -> bool:
        store = await open_response_store(settings)
        try:
            return await store.forget_tool_record(server_key(normalized))
        finally:
            await store.close()

    try:
        forgotten = asyncio.run(forget())
    except StoreStartupError as exc:
        print(f"shieldgate: {exc}", file=err)
        return EXIT_USAGE
    if not forgotten:
        print(f"shieldgate: no first-use record of {normalized}", file=err)
        return 1
    print(f"forgot the first-use record of {normalized}", file=out)
    return 0


def settings_for(config: Mapping[str, Any] | None) -> Settings:
    """The settings the commands read (``mcp_*`` limits, ``responses_db``), as ``serve``
    would: flags are not taken here, ``SHIELDGATE_*`` variables and the config file are."""
    return Settings.from_sources({}, config=config)
