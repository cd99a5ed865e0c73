"""Which MCP servers the proxy may call for a client: the operator's allow-list of URL prefixes.

A ``type: mcp`` tool of a Responses request names a server by URL, and the proxy then makes
HTTP requests to it from inside the operator's network. Without an allow-list any client could
point the proxy at an internal address (a metadata service, an admin port). So servers are
denied by default: only a URL under one of the ``mcp_servers`` setting's prefixes is called.

A prefix is an ``http://`` or ``https://`` URL: its scheme, host and port must be the client's
exactly, and its path must be the client's path or a parent of it at a segment boundary
(``http://tools.internal:9000/mcp`` allows ``/mcp`` and ``/mcp/docs``, never ``/mcpx`` nor
another port). A client URL is refused outright, before any comparison, when it carries
userinfo (``http://allowed.host@evil.host/`` is a request to evil.host), a fragment, dot
segments or percent-encoded dots, slashes or backslashes: forms where the path a server acts on
could differ from the one compared here. The URL that is called is the one compared, as this
module normalized it.

Labels are not part of the allow-list: a client chooses its ``server_label`` freely, so a label
proves nothing about where a request goes.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from yarl import URL

__all__ = ["AllowedServer", "McpAllowList", "allow_list", "allowed_server", "normalized_url"]

# Percent-encoded '.', '/' and '\': a server may decode them into a path other than the one
# compared (``/mcp/%2e%2e/admin``).
_ENCODED_PATH_TRICKS = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AllowedServer:
    """One prefix of the allow-list."""

    scheme: str
    host: str
    port: int
    path: str  # no trailing slash, "" for the whole origin

    def allows(self, url: URL) -> bool:
        if (url.scheme, url.host, url.port) != (self.scheme, self.host, self.port):
            return False
        path = url.raw_path
        return path == self.path or path.startswith(self.path + "/") or not self.path

    def __str__(self) -> str:
        return str(URL.build(scheme=self.scheme, host=self.host, port=self.port, path=self.path))


def _parse(value: str) -> URL:
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in value):
        raise ValueError("has a space, a control character or a backslash")
    try:
        url = URL(value)
    except ValueError as exc:
        raise ValueError(f"is not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("is not an http:// or https:// URL with a host")
    if url.user is not None or url.password is not None:
        raise ValueError("carries a user name or password")
    if url.fragment or value.endswith("#"):
        raise ValueError("carries a fragment")
    raw_path = url.raw_path
    segments = value.split("?", 1)[0].split("/")[3:]
    if any(s in (".", "..") for s in segments) or _ENCODED_PATH_TRICKS.search(raw_path):
        raise ValueError("has dot segments or percent-encoded dots, slashes or backslashes")
    return url


def normalized_url(value: str) -> str:
    """A server URL as the proxy calls it (and keys its pins by); ValueError saying what is
    wrong with it."""
    return str(_parse(value.strip()))


def allowed_server(value: str) -> AllowedServer:
    """An allow-list entry from the operator's settings; ValueError saying what is wrong."""
    url = _parse(value.strip())
    if url.query_string:
        raise ValueError("carries a query string (an allowed prefix is an origin and a path)")
    assert url.host is not None and url.port is not None  # _parse: http(s) with a host
    return AllowedServer(url.scheme, url.host, url.port, url.raw_path.rstrip("/"))


class McpAllowList:
    """The servers the ``mcp_servers`` setting allows; empty: none (deny by default)."""

    def __init__(self, prefixes: tuple[str, ...]) -> None:
        self.servers = tuple(allowed_server(prefix) for prefix in prefixes)

    def check(self, value: str) -> str | None:
        """The URL to call for a client's ``server_url`` (normalized), or None when it is
        refused: not allowed, or in a form that could reach elsewhere than it says."""
        try:
            url = _parse(value)
        except ValueError:
            return None
        if not any(server.allows(url) for server in self.servers):
            return None
        return str(url)

    def prefix_of(self, url: str) -> str:
        """The first prefix that allows ``url`` (a URL ``check`` returned), as written in the
        settings' normalized form: an operator's name for a server, fit for a metrics label."""
        parsed = URL(url)
        for server in self.servers:
            if server.allows(parsed):
                return str(server)
        return "other"


@functools.lru_cache(maxsize=8)
def allow_list(prefixes: tuple[str, ...]) -> McpAllowList:
    """The allow-list of a ``mcp_servers`` setting, built once per value."""
    return McpAllowList(prefixes)
