"""Fingerprints of an MCP server's tools, and what changed between two of them.

A "rug pull" is a tool server that changes its tools after they were reviewed: a harmless
``get_weather`` whose description later carries instructions for the model. To notice it, each
tool a server lists is reduced to a fingerprint of what the model reads of it and what the
proxy decides by:

- ``description`` and ``input_schema``: the text and the schema the model reads;
- ``annotations``: the boolean hints the proxy keeps (``readOnlyHint``...), because
  ``allowed_tools`` and ``require_approval`` filters decide by ``read_only``: a tool that
  starts calling itself read-only could slip out of an approval rule;
- the ``name``, which is the key of the tool in a fingerprint.

Each field is hashed on its own (so a change can be named by field), and the tool's fingerprint
is the SHA-256 of its canonical JSON: ``{"annotations", "description", "input_schema",
"name"}`` with keys sorted at every level, no whitespace, non-ASCII and control characters as
``\\u`` escapes (so a lone surrogate a hostile server sent still has one spelling). A server's
fingerprint is the SHA-256 of the canonical JSON of its tools' ``name -> fingerprint`` map.
Digests are lowercase hex.

Pure functions: no I/O. ``proxy.mcp.pinning`` decides what a change means.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from proxy.mcp.tools import hints_of

__all__ = [
    "FIELDS",
    "ServerPrint",
    "ToolChange",
    "ToolPrint",
    "canonical_json",
    "changes",
    "digest",
    "server_print",
    "tool_print",
]

# The fields of a tool that are fingerprinted one by one (the name is the tool's key).
FIELDS = ("description", "input_schema", "annotations")


def canonical_json(value: Any) -> bytes:
    """``value`` as one byte string that any equal value also gives: sorted keys, no
    whitespace, ASCII only."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True
    ).encode("ascii")


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolPrint:
    """One tool's fingerprint and the digest of each of its ``FIELDS``."""

    name: str
    fingerprint: str
    fields: Mapping[str, str]

    def dump(self) -> dict[str, Any]:
        return {"sha256": self.fingerprint, "fields": dict(self.fields)}


def tool_print(raw: Mapping[str, Any]) -> ToolPrint | None:
    """The fingerprint of one tool of a listing (as ``proxy.mcp.client.list_tools`` returns
    it); None for an entry without a string name (no tool anyone can call)."""
    name = raw.get("name")
    if not isinstance(name, str):
        return None
    values = {
        "description": raw.get("description"),
        "input_schema": raw.get("input_schema"),
        "annotations": hints_of(raw.get("annotations")),
    }
    return ToolPrint(
        name=name,
        fingerprint=digest({"name": name, **values}),
        fields={key: digest(values[key]) for key in FIELDS},
    )


@dataclass(frozen=True, slots=True)
class ServerPrint:
    """The fingerprints of the tools one server listed, by name."""

    tools: Mapping[str, ToolPrint]

    @property
    def fingerprint(self) -> str:
        return digest({name: tool.fingerprint for name, tool in self.tools.items()})

    def dump(self) -> dict[str, Any]:
        """As stored (first use) and as written in a pins file."""
        return {
            "sha256": self.fingerprint,
            "tools": {name: self.tools[name].dump() for name in sorted(self.tools)},
        }

    @classmethod
    def load(cls, record: Mapping[str, Any]) -> ServerPrint:
        """A stored ``dump()``; ValueError when it is not one."""
        tools = record.get("tools")
        if not isinstance(tools, dict):
            raise ValueError("a first-use record without its tools")
        loaded: dict[str, ToolPrint] = {}
        for name, tool in tools.items():
            fields = tool.get("fields") if isinstance(tool, dict) else None
            if not (
                isinstance(tool, dict)
                and isinstance(tool.get("sha256"), str)
                and isinstance(fields, dict)
                and all(isinstance(fields.get(key), str) for key in FIELDS)
            ):
                raise ValueError("a first-use record with a malformed tool")
            loaded[name] = ToolPrint(name, tool["sha256"], {key: fields[key] for key in FIELDS})
        return cls(loaded)


def server_print(listing: Iterable[Mapping[str, Any]]) -> ServerPrint:
    """The fingerprint of a server's listing. A name listed twice keeps its first entry (the
    proxy refuses such a listing anyway: the model's calls would be ambiguous)."""
    tools: dict[str, ToolPrint] = {}
    for raw in listing:
        printed = tool_print(raw)
        if printed is not None and printed.name not in tools:
            tools[printed.name] = printed
    return ServerPrint(tools)


@dataclass(frozen=True, slots=True)
class ToolChange:
    """A tool whose fingerprint is not the trusted one: ``changed`` (``fields`` says which),
    or ``new`` (the trusted fingerprint has no tool of that name)."""

    name: str
    kind: str  # changed | new
    fields: tuple[str, ...]
    old: ToolPrint | None
    new: ToolPrint


def changes(trusted: ServerPrint, current: ServerPrint, names: Iterable[str]) -> list[ToolChange]:
    """The tools among ``names`` whose fingerprint in ``current`` differs from ``trusted``'s.
    A tool ``trusted`` has and ``current`` lacks is no change: a tool that is gone cannot
    carry anything to the model."""
    found: list[ToolChange] = []
    for name in names:
        new = current.tools.get(name)
        if new is None:
            continue
        old = trusted.tools.get(name)
        if old is None:
            found.append(ToolChange(name, "new", FIELDS, None, new))
        elif old.fingerprint != new.fingerprint:
            # A pin may lack field digests (written by hand): then every field is suspect.
            fields = (
                tuple(key for key in FIELDS if old.fields.get(key) != new.fields.get(key)) or FIELDS
            )
            found.append(ToolChange(name, "changed", fields, old, new))
    return found
