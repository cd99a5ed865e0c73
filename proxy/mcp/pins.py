"""The pins file: MCP servers' tool fingerprints, reviewed and kept in git.

``shieldgate mcp pin URL`` lists a server's tools and prints its entry; an operator reviews
the descriptions it shows (as comments), commits the file, and names it in the
``mcp_pins_file`` setting. For a server the file names, its fingerprints win over the record
the proxy made when it first listed the server (``proxy.mcp.pinning``)::

    version: 1
    servers:
      https://tools.internal/mcp:        # the URL as the proxy calls it (normalized)
        sha256: 9f2c...                   # the server's fingerprint (optional; checked)
        tools:
          get_weather:
            sha256: 41ab...               # the tool's fingerprint
            fields:                       # optional: name which fields changed
              description: 0c1d...
              input_schema: 77e0...
              annotations: 44136f...

Fingerprints are those of ``proxy.mcp.fingerprints``. The file is read strictly: an unknown
key, a digest that is not 64 hex digits, a URL the proxy would not call, two entries for one
URL or a server ``sha256`` that is not its tools' is an error naming the file and the key. It
is reloaded with the policies (file change or SIGHUP): a file that no longer loads keeps the
pins in force and the policy is reported stale.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from proxy.mcp.fingerprints import FIELDS, ServerPrint, ToolPrint
from proxy.mcp.servers import normalized_url
from proxy.settings import read_yaml_file

__all__ = ["PinSource", "Pins", "PinsFileError", "load_pins", "pins_file_problem", "render_pins"]

_DIGEST = r"^[0-9a-f]{64}$"
VERSION = 1


class PinsFileError(ValueError):
    """The pins file cannot be used; the message names the file and what is wrong."""


class _Fields(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str | None = Field(default=None, pattern=_DIGEST)
    input_schema: str | None = Field(default=None, pattern=_DIGEST)
    annotations: str | None = Field(default=None, pattern=_DIGEST)


class _Tool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str = Field(pattern=_DIGEST)
    fields: _Fields = _Fields()


class _Server(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str | None = Field(default=None, pattern=_DIGEST)
    tools: dict[str, _Tool]


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = Field(ge=VERSION, le=VERSION)
    servers: dict[str, _Server]


class Pins:
    """The pinned fingerprints, by normalized server URL."""

    def __init__(self, servers: Mapping[str, ServerPrint] | None = None) -> None:
        self.servers = dict(servers or {})

    def for_url(self, url: str) -> ServerPrint | None:
        return self.servers.get(url)


def load_pins(path: str | Path) -> Pins:
    """Reads and checks a pins file; raises PinsFileError."""
    try:
        document = read_yaml_file(path, "pins file")
    except ValueError as exc:
        raise PinsFileError(str(exc)) from None
    try:
        parsed = _File.model_validate(document)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        raise PinsFileError(f"{path}: {where or 'the file'}: {message}") from None
    servers: dict[str, ServerPrint] = {}
    for url, server in parsed.servers.items():
        try:
            normalized = normalized_url(url)
        except ValueError as exc:
            raise PinsFileError(f"{path}: servers.{url}: the URL {exc}") from None
        if normalized in servers:
            raise PinsFileError(f"{path}: servers.{url}: a second entry for {normalized}")
        pinned = ServerPrint(
            {
                name: ToolPrint(
                    name,
                    tool.sha256,
                    {key: value for key in FIELDS if (value := getattr(tool.fields, key))},
                )
                for name, tool in server.tools.items()
            }
        )
        if server.sha256 is not None and server.sha256 != pinned.fingerprint:
            raise PinsFileError(
                f"{path}: servers.{url}.sha256 is not the fingerprint of the tools pinned "
                "below it (edited by hand? pin the server again, or drop the server's sha256)"
            )
        servers[normalized] = pinned
    return Pins(servers)


def pins_file_problem(path: str) -> str | None:
    """For ``shieldgate serve``: why the pins file cannot be used, or None."""
    try:
        load_pins(path)
    except PinsFileError as exc:
        return f"invalid MCP pins file:\n{exc}"
    return None


class PinSource:
    """The pins in force and their file, reloaded with the policies (a companion of
    ``proxy.ops.policy_source.PolicySource``): a file that does not load keeps the pins in force."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.pins = load_pins(self.path)

    def prepare(self, policies: object) -> Callable[[], None]:
        pins = load_pins(self.path)

        def commit() -> None:
            self.pins = pins

        return commit


def render_pins(url: str, printed: ServerPrint, listing: Sequence[Mapping[str, Any]]) -> str:
    """A pins file for one server, its tools' descriptions shown as comments for review.
    Several servers: copy each one's entry (the lines under ``servers:``) into one file."""
    descriptions = {
        raw["name"]: raw.get("description") for raw in listing if isinstance(raw.get("name"), str)
    }
    lines = [
        "# MCP tool pins (shieldgate mcp pin): review each tool's description before committing.",
        f"version: {VERSION}",
        "servers:",
        f"  {_scalar(url)}:",
        f"    sha256: {printed.fingerprint}",
        "    tools:" + ("" if printed.tools else " {}"),
    ]
    for name in sorted(printed.tools):
        tool = printed.tools[name]
        lines.append(f"      {_scalar(name)}:")
        # One line whatever the text holds: JSON escapes (ASCII only) keep a line break or a
        # character YAML refuses from ending the comment or the file.
        shown = json.dumps(descriptions.get(name), ensure_ascii=True)
        lines.append(f"        # description: {shown}")
        lines.append(f"        sha256: {tool.fingerprint}")
        lines.append("        fields:")
        lines += [f"          {key}: {tool.fields[key]}" for key in FIELDS]
    return "\n".join(lines) + "\n"


def _scalar(value: str) -> str:
    """A mapping key as YAML reads it back: a JSON string (JSON is YAML), ASCII only."""
    return json.dumps(value, ensure_ascii=True)
