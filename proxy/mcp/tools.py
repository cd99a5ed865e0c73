"""The ``type: mcp`` tools of a Responses request, and the tools an MCP server lists for it.

A client hands the proxy a remote MCP server (``server_label``, ``server_url``, ``headers``,
``authorization``, ``allowed_tools``, ``require_approval``, ``server_description``): this module
reads that object strictly (every key known, a 400 naming what is wrong), decides per listed
tool whether it is offered to the model (``allowed_tools``) and whether a call needs the
client's approval (``require_approval``, ``always`` by default, as OpenAI's), and turns the
listed tools into the chat ``function`` tools the model sees.

The client's ``headers`` (and ``authorization``, sent as ``Authorization: Bearer``) belong to
their server alone: they are never echoed in a response, never stored, and never sent anywhere
else (``proxy.mcp.client`` opens one HTTP client per server with only these headers).

Everything an MCP server returns is hostile: a tool whose name is not a function name the chat
API accepts is not offered; only boolean hints of its annotations are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from proxy.errors import BadRequest

__all__ = [
    "ApprovalRule",
    "McpServerSpec",
    "McpTool",
    "McpTools",
    "ToolFilter",
    "hints_of",
    "listed_tool",
    "parse_mcp_tool",
]

_LABEL = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The function names chat backends accept (OpenAI's rule): a listed tool outside it is skipped.
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
# Headers the transport sets itself, or that would change how the request is framed or routed.
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "proxy-authorization",
        "proxy-connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    }
)
_MAX_HEADERS = 32
_MAX_HEADER_BYTES = 16 * 1024
_KEYS = frozenset(
    {
        "type",
        "server_label",
        "server_url",
        "headers",
        "authorization",
        "allowed_tools",
        "require_approval",
        "server_description",
        # Accepted only when null (or what asks for nothing): OpenAI's own connectors.
        "connector_id",
        "tunnel_id",
        "defer_loading",
        "allowed_callers",
    }
)
_ANNOTATION_HINTS = {
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """``tool_names`` and/or ``read_only``: a tool matches when every criterion given holds."""

    names: frozenset[str] | None = None
    read_only: bool | None = None

    def matches(self, name: str, read_only: bool | None) -> bool:
        if self.names is not None and name not in self.names:
            return False
        if self.read_only is not None and bool(read_only) != self.read_only:
            return False
        return self.names is not None or self.read_only is not None


@dataclass(frozen=True, slots=True)
class ApprovalRule:
    """``require_approval``: ``always`` (the default), ``never``, or per tool (``always`` and
    ``never`` filters; a tool both name is asked about, one neither names too)."""

    mode: str = "always"  # always | never | filter
    always: ToolFilter | None = None
    never: ToolFilter | None = None

    def needs_approval(self, name: str, read_only: bool | None) -> bool:
        if self.mode != "filter":
            return self.mode == "always"
        if self.always is not None and self.always.matches(name, read_only):
            return True
        return not (self.never is not None and self.never.matches(name, read_only))


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One ``type: mcp`` tool of a request."""

    label: str
    url: str  # as the client wrote it; ``proxy.mcp.servers`` decides whether and where to call
    headers: dict[str, str] = field(repr=False)
    allowed: ToolFilter | None
    approval: ApprovalRule
    description: str | None
    at: str  # where it is in the request (``tools[2]``), for error messages

    def echo(self) -> dict[str, Any]:
        """The tool as a response repeats it: without ``headers`` and ``authorization``."""
        echoed: dict[str, Any] = {
            "type": "mcp",
            "server_label": self.label,
            "server_url": self.url,
            "headers": None,
            "server_description": self.description,
            "allowed_tools": None,
            "require_approval": self.approval.mode if self.approval.mode != "filter" else None,
        }
        if self.allowed is not None:
            echoed["allowed_tools"] = _dump_filter(self.allowed)
        if self.approval.mode == "filter":
            echoed["require_approval"] = {
                key: _dump_filter(rule)
                for key, rule in (("always", self.approval.always), ("never", self.approval.never))
                if rule is not None
            }
        return echoed


def _dump_filter(rule: ToolFilter) -> dict[str, Any]:
    dumped: dict[str, Any] = {}
    if rule.names is not None:
        dumped["tool_names"] = sorted(rule.names)
    if rule.read_only is not None:
        dumped["read_only"] = rule.read_only
    return dumped


def parse_mcp_tool(tool: dict[str, Any], at: str) -> McpServerSpec:
    """A request's ``type: mcp`` tool, read strictly; BadRequest naming what is wrong."""
    for key in tool:
        if key not in _KEYS:
            raise BadRequest(f"Unknown parameter: '{at}.{key}'.", param=f"{at}.{key}")
    for key in ("connector_id", "tunnel_id"):
        if tool.get(key) is not None:
            raise BadRequest(
                f"{at}.{key}: connectors are not supported, only MCP servers given by server_url",
                param=f"{at}.{key}",
                code="unsupported_value",
            )
    if tool.get("defer_loading") not in (None, False):
        raise BadRequest(
            f"{at}.defer_loading is not supported",
            param=f"{at}.defer_loading",
            code="unsupported_value",
        )
    callers = tool.get("allowed_callers")
    if callers is not None and callers != ["direct"]:
        raise BadRequest(
            f"{at}.allowed_callers: programmatic calls are not supported",
            param=f"{at}.allowed_callers",
            code="unsupported_value",
        )
    label = tool.get("server_label")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise BadRequest(
            f"{at}.server_label must be 1 to 64 letters, digits, '_' or '-'",
            param=f"{at}.server_label",
        )
    url = tool.get("server_url")
    if not isinstance(url, str) or not url:
        raise BadRequest(f"{at}.server_url must be a URL", param=f"{at}.server_url")
    description = tool.get("server_description")
    if description is not None and not isinstance(description, str):
        raise BadRequest(
            f"{at}.server_description must be a string", param=f"{at}.server_description"
        )
    return McpServerSpec(
        label=label,
        url=url,
        headers=_headers(tool, at),
        allowed=_allowed_tools(tool.get("allowed_tools"), f"{at}.allowed_tools"),
        approval=_approval(tool.get("require_approval"), f"{at}.require_approval"),
        description=description,
        at=at,
    )


def _headers(tool: dict[str, Any], at: str) -> dict[str, str]:
    raw = tool.get("headers")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict) or len(raw) > _MAX_HEADERS:
        raise BadRequest(
            f"{at}.headers must be an object of at most {_MAX_HEADERS} string values",
            param=f"{at}.headers",
        )
    headers: dict[str, str] = {}
    size = 0
    for name, value in raw.items():
        if not _HEADER_NAME.fullmatch(name) or name.lower() in _RESERVED_HEADERS:
            raise BadRequest(
                f"{at}.headers: {name[:64]!r} is not a header an MCP request may carry",
                param=f"{at}.headers",
            )
        if not isinstance(value, str) or not value.isprintable() or not value.isascii():
            raise BadRequest(
                f"{at}.headers: the value of {name!r} must be printable ASCII text",
                param=f"{at}.headers",
            )
        if name.lower() in (known.lower() for known in headers):
            raise BadRequest(f"{at}.headers: {name!r} is given twice", param=f"{at}.headers")
        size += len(name) + len(value)
        headers[name] = value
    token = tool.get("authorization")
    if token is not None:
        if not isinstance(token, str) or not token.isprintable() or not token.isascii():
            raise BadRequest(
                f"{at}.authorization must be printable ASCII text", param=f"{at}.authorization"
            )
        if any(name.lower() == "authorization" for name in headers):
            raise BadRequest(
                f"{at}: give the token in authorization or in headers, not both",
                param=f"{at}.authorization",
            )
        headers["Authorization"] = f"Bearer {token}"
        size += len(token)
    if size > _MAX_HEADER_BYTES:
        raise BadRequest(f"{at}.headers are too large", param=f"{at}.headers")
    return headers


def _filter(value: dict[str, Any], at: str) -> ToolFilter:
    unknown = set(value) - {"tool_names", "read_only"}
    if unknown:
        raise BadRequest(f"Unknown parameter: '{at}.{sorted(unknown)[0]}'.", param=at)
    names = value.get("tool_names")
    if names is not None and (
        not isinstance(names, list) or not all(isinstance(name, str) for name in names)
    ):
        raise BadRequest(f"{at}.tool_names must be a list of strings", param=f"{at}.tool_names")
    read_only = value.get("read_only")
    if read_only is not None and not isinstance(read_only, bool):
        raise BadRequest(f"{at}.read_only must be a boolean", param=f"{at}.read_only")
    return ToolFilter(None if names is None else frozenset(names), read_only)


def _allowed_tools(value: Any, at: str) -> ToolFilter | None:
    if value is None:
        return None
    if isinstance(value, list):
        if not all(isinstance(name, str) for name in value):
            raise BadRequest(f"{at} must be a list of tool names or a filter", param=at)
        return ToolFilter(frozenset(value))
    if isinstance(value, dict):
        return _filter(value, at)
    raise BadRequest(f"{at} must be a list of tool names or a filter", param=at)


def _approval(value: Any, at: str) -> ApprovalRule:
    if value is None:
        return ApprovalRule()
    if isinstance(value, str) and value in ("always", "never"):
        return ApprovalRule(value)
    if isinstance(value, dict):
        unknown = set(value) - {"always", "never"}
        if unknown:
            raise BadRequest(f"Unknown parameter: '{at}.{sorted(unknown)[0]}'.", param=at)
        rules: dict[str, ToolFilter | None] = {}
        for key in ("always", "never"):
            rule = value.get(key)
            if rule is not None and not isinstance(rule, dict):
                raise BadRequest(f"{at}.{key} must be a filter object", param=f"{at}.{key}")
            rules[key] = None if rule is None else _filter(rule, f"{at}.{key}")
        return ApprovalRule("filter", rules["always"], rules["never"])
    raise BadRequest(f"{at} must be always, never or an object of filters", param=at)


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool an MCP server listed, as offered to the model (``definition``: checked by the
    input shields before the model sees it)."""

    server: str  # the server's label
    name: str
    description: str | None
    input_schema: dict[str, Any]
    annotations: dict[str, bool]
    needs_approval: bool

    def definition(self) -> dict[str, Any]:
        """The chat ``function`` tool the model sees."""
        function: dict[str, Any] = {"name": self.name, "parameters": self.input_schema}
        if self.description is not None:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def listed(self) -> dict[str, Any]:
        """The tool in an ``mcp_list_tools`` item."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "annotations": self.annotations or None,
        }


def hints_of(annotations: Any) -> dict[str, bool]:
    """The boolean hints of a listed tool's ``annotations`` (by their wire names), the only
    part of them the proxy keeps (``allowed_tools`` and approvals decide by ``readOnlyHint``)."""
    if not isinstance(annotations, dict):
        return {}
    return {
        wire: annotations[key]
        for key, wire in _ANNOTATION_HINTS.items()
        if isinstance(annotations.get(key), bool)
    }


def listed_tool(spec: McpServerSpec, raw: dict[str, Any]) -> McpTool | None:
    """A tool of a server's listing (``name``, ``description``, ``input_schema``, boolean
    hints), if it is one to offer the model: a function name, an object schema, and allowed
    by the request's ``allowed_tools``."""
    name, description, schema = raw.get("name"), raw.get("description"), raw.get("input_schema")
    if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name):
        return None
    if not isinstance(schema, dict) or (
        description is not None and not isinstance(description, str)
    ):
        return None
    annotations = hints_of(raw.get("annotations"))
    read_only = annotations.get("readOnlyHint")
    if spec.allowed is not None and not spec.allowed.matches(name, read_only):
        return None
    return McpTool(
        server=spec.label,
        name=name,
        description=description,
        input_schema=schema,
        annotations=annotations,
        needs_approval=spec.approval.needs_approval(name, read_only),
    )


class McpTools:
    """The MCP tools of one response, by the name the model calls them by."""

    def __init__(self, tools: Iterable[McpTool] = ()) -> None:
        self.by_name: dict[str, McpTool] = {}
        for tool in tools:
            self.by_name[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self.by_name

    def get(self, name: str) -> McpTool | None:
        return self.by_name.get(name)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.by_name)
