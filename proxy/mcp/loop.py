"""The MCP side of one Responses request: its servers' tools, the calls the model makes on them,
and the loop of inference turns that feeds their results back.

The dialect (``proxy.endpoints.responses``) drives the turns; this module decides and does the MCP
part:

1. **Listing**, after the input stage passed (``before_upstream``): each server's tools are
   listed (``proxy.mcp.client``), or taken from the ``mcp_list_tools`` item of the previous
   response for the same label and URL, filtered by ``allowed_tools``; a fresh listing is
   compared with the server's pins or first-use record (``proxy.mcp.pinning``: a tool that
   changed is withheld, or the request refused), and the tools are checked as the
   ``mcp_tools`` hop (``proxy.mcp.checks``) before the model sees them. A listing that fails is
   a 424 before anything else happens. A tool name offered twice (two servers, or a server and
   a function tool) is a 400: the model's call would be ambiguous.
2. **Calls**: after each turn, the turn's ``mcp_call`` items are run in order: the arguments
   were checked by the output shields as they streamed (the stream guard), the result is
   checked as the ``mcp_result`` hop before anything reads it. A blocked result ends the
   response with the refusal; a failed hop (``McpError``) fails the call with the proxy's own
   message, which the model is told (``mcp_model_text``), and the loop goes on.
3. **Turns**: another inference turn follows while the model called MCP tools and nothing ended
   the response: a function call (the client's to run), an approval request, a length stop, a
   refusal or a failure. ``mcp_max_turns`` bounds the turns: the last allowed one is sent with
   ``tool_choice: none``. ``mcp_max_calls`` (or the request's lower ``max_tool_calls``) bounds
   the calls: those past it are not run (failed, and the model told why), and the next turn is
   the last. A ``tool_choice`` that forces a call applies to the first turn only (or every turn
   would call a tool).
4. **Approvals**: a call of a tool ``require_approval`` covers becomes an
   ``mcp_approval_request`` and ends the response; the client's ``mcp_approval_response`` in a
   follow-up (``previous_response_id``) names it. An approved call's arguments, as stored, are
   checked again by the output shields (``mcp_arguments``) before it runs; a declined one is
   not run and the model is told so.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from proxy.endpoints.responses_request import ApprovalResponse, ResponsesRequest
from proxy.endpoints.responses_stream import ResponseTranslator, refusal_events
from proxy.errors import BadRequest, ExternalConnectorError
from proxy.mcp.checks import MCP_RESULT, check_result, check_tools
from proxy.mcp.client import McpError, McpLimits, call_tool, list_tools
from proxy.mcp.pinning import judge_listing
from proxy.mcp.servers import allow_list
from proxy.mcp.tools import McpServerSpec, McpTool, McpTools, listed_tool
from proxy.settings import Settings
from proxy.store.responses import StoredResponse
from proxy.stream.translated import Event
from shields import json_codec

if TYPE_CHECKING:
    from proxy.exchange.lifecycle import Exchange

__all__ = ["DECLINED", "CallEnd", "Emit", "McpRun", "Step"]

Emit = Callable[[list[Event]], Awaitable[bool]]
_T = TypeVar("_T")
# What the model reads of a call the client declined to approve.
DECLINED = "Error: the user declined to approve this call, so it was not run."


class Step(enum.Enum):
    NEXT_TURN = "next_turn"
    DONE = "done"  # the response has ended (its last events emitted)
    GONE = "gone"  # the client left


@dataclass(frozen=True, slots=True)
class CallEnd:
    """How one call ended: its checked output, or the error it failed with; ``blocked``: its
    result was blocked (the response ends with the refusal)."""

    output: str | None = None
    error: dict[str, Any] | None = None
    blocked: bool = False


def _execution_error(message: str) -> dict[str, Any]:
    return {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": message}]}


@dataclass(slots=True)
class Listing:
    blocked: bool = False
    fresh: list[tuple[str, list[McpTool]]] = field(default_factory=list)  # listed now, by label
    # By label: the listing's ``error``, naming tools withheld because they changed.
    notices: dict[str, str] = field(default_factory=dict)


class McpRun:
    """The MCP tools of one request and what has been done with them."""

    def __init__(
        self, parsed: ResponsesRequest, settings: Settings, previous: StoredResponse | None
    ) -> None:
        allowed = allow_list(settings.mcp_servers)
        self.servers: dict[str, tuple[McpServerSpec, str]] = {}
        for spec in parsed.mcp_servers:
            url = allowed.check(spec.url)
            assert url is not None, "prepare() refuses servers that are not allowed"
            self.servers[spec.label] = (spec, url)
        self.limits = McpLimits.of(settings)
        self.max_turns = settings.mcp_max_turns
        self.max_calls = min(
            settings.mcp_max_calls, parsed.max_tool_calls or settings.mcp_max_calls
        )
        self.previous = previous
        self.tools = McpTools()
        self.definitions: list[dict[str, Any]] = []  # the chat tools the model sees (checked)
        self.turns = 0  # inference turns started
        self.calls = 0  # calls run (or attempted)
        self.blocked_hop: str | None = None  # the hop whose block ended the response

    # -- listing -----------------------------------------------------------------------------

    async def list_tools(self, exchange: Exchange, function_names: frozenset[str]) -> Listing:
        listing = Listing()
        offered: list[McpTool] = []
        owners: dict[str, str] = {name: "a function tool" for name in function_names}
        for label, (spec, url) in self.servers.items():
            stored = self._stored_listing(spec)
            raw = stored if stored is not None else await self._list(exchange, spec, url)
            tools = [tool for tool in (listed_tool(spec, each) for each in raw) if tool is not None]
            for tool in tools:
                if tool.name in owners:
                    raise BadRequest(
                        f"The tool name {tool.name!r} is offered both by the MCP server "
                        f"{label!r} and by {owners[tool.name]}: the model's calls would be "
                        "ambiguous",
                        param=f"{spec.at}.allowed_tools",
                    )
                owners[tool.name] = f"the MCP server {label!r}"
            if stored is None:
                # A fresh listing is compared with the server's pins or first-use record: a
                # tool that changed since may be withheld, or the request refused.
                verdict = await judge_listing(
                    exchange, spec, url, raw, [tool.name for tool in tools]
                )
                tools = [tool for tool in tools if tool.name not in verdict.withheld]
                if verdict.notice is not None:
                    listing.notices[label] = verdict.notice
                listing.fresh.append((label, tools))
            offered += tools
        checked = await check_tools(exchange, offered)
        if checked.outcome.blocked:
            listing.blocked = True
            return listing
        self.tools = McpTools(checked.tools)
        self.definitions = [tool.definition() for tool in checked.tools]
        listing.fresh = [
            (label, [tool for tool in checked.tools if tool.server == label])
            for label, _ in listing.fresh
        ]
        return listing

    async def _list(
        self, exchange: Exchange, spec: McpServerSpec, url: str
    ) -> list[dict[str, Any]]:
        try:
            listed = await self._timed(exchange, "list", list_tools(url, spec.headers, self.limits))
        except McpError as exc:
            raise ExternalConnectorError(
                f"Error retrieving tool list from MCP server {spec.label!r}: {exc.message}",
                param=f"{spec.at}.server_url",
            ) from None
        exchange.metrics.child(exchange.metrics.mcp_hops, "list", "ok").inc()
        return listed

    def _stored_listing(self, spec: McpServerSpec) -> list[dict[str, Any]] | None:
        """The tools the previous response listed for this label, if it listed them from the
        same URL: reused instead of listing again (re-checked, re-filtered)."""
        if self.previous is None:
            return None
        response = self.previous.response
        same_server = any(
            isinstance(tool, dict)
            and tool.get("type") == "mcp"
            and tool.get("server_label") == spec.label
            and tool.get("server_url") == spec.url
            for tool in response.get("tools") or []
        )
        if not same_server:
            return None
        for item in response.get("output") or []:
            if (
                isinstance(item, dict)
                and item.get("type") == "mcp_list_tools"
                and item.get("server_label") == spec.label
                and isinstance(item.get("tools"), list)
            ):
                return [tool for tool in item["tools"] if isinstance(tool, dict)]
        return None

    # -- calls -------------------------------------------------------------------------------

    async def call(self, exchange: Exchange, item_id: str, name: str, arguments: str) -> CallEnd:
        """Runs one call whose arguments were checked; checks its result."""
        tool = self.tools.get(name)
        assert tool is not None, "only MCP tools' calls become mcp_call items"
        spec, url = self.servers[tool.server]
        self.calls += 1
        try:
            raw = arguments.encode("utf-8", "surrogatepass")
            parsed = json_codec.loads(raw, allow_nan=False) if arguments.strip() else {}
        except json_codec.InvalidJSON:
            parsed = None
        if not isinstance(parsed, dict):
            exchange.metrics.child(exchange.metrics.mcp_hops, "call", "bad_arguments").inc()
            return CallEnd(
                error={
                    "type": "mcp_protocol_error",
                    "code": -32602,
                    "message": "the call's arguments are not a JSON object; it was not run",
                }
            )
        try:
            result = await self._timed(
                exchange, "call", call_tool(url, spec.headers, self.limits, name, parsed)
            )
        except McpError as exc:
            return CallEnd(error=exc.error_item())
        outcome, text = await check_result(exchange, item_id, result.text)
        counted = "blocked" if outcome.blocked else "tool_error" if result.is_error else "ok"
        exchange.metrics.child(exchange.metrics.mcp_hops, "call", counted).inc()
        if outcome.blocked:
            self.blocked_hop = MCP_RESULT
            return CallEnd(blocked=True)
        if result.is_error:
            return CallEnd(error=_execution_error(text))
        return CallEnd(output=text)

    async def _timed(self, exchange: Exchange, kind: str, hop: Awaitable[_T]) -> _T:
        """A hop, timed; a failed one counted by how it failed (``McpError.kind``)."""
        metrics = exchange.metrics
        started = time.perf_counter()
        try:
            return await hop
        except McpError as exc:
            metrics.child(metrics.mcp_hops, kind, exc.kind).inc()
            raise
        finally:
            metrics.child(metrics.mcp_seconds, kind).observe(time.perf_counter() - started)

    # -- approvals ---------------------------------------------------------------------------

    def approval_request(self, approval: ApprovalResponse) -> tuple[McpTool, str]:
        """The tool and stored arguments of the approval request ``approval`` answers; a 400
        when the previous response made no such request, or its tool is not offered now."""
        output = self.previous.response.get("output") if self.previous is not None else None
        for item in output or []:
            if (
                isinstance(item, dict)
                and item.get("type") == "mcp_approval_request"
                and item.get("id") == approval.request_id
            ):
                tool = self.tools.get(str(item.get("name")))
                arguments = item.get("arguments")
                if (
                    tool is None
                    or tool.server != item.get("server_label")
                    or not isinstance(arguments, str)
                ):
                    raise BadRequest(
                        f"{approval.at}: the approved call's tool is not among this request's "
                        "MCP tools",
                        param=f"{approval.at}.approval_request_id",
                    )
                return tool, arguments
        raise BadRequest(
            f"{approval.at}: the previous response made no approval request "
            f"{approval.request_id[:64]!r}",
            param=f"{approval.at}.approval_request_id",
        )

    # -- turns -------------------------------------------------------------------------------

    @property
    def last_turn(self) -> bool:
        """The turn about to start is the last one that may call tools' results back."""
        return self.turns >= self.max_turns or self.calls >= self.max_calls

    def tool_choice(self, requested: Any, translated: Any) -> Any:
        """The chat ``tool_choice`` for the turn about to start (None: the backend's default);
        ``requested``: the client's, ``translated``: what the request's own translation made
        of it for its function tools."""
        if self.last_turn or requested == "none":
            return "none"
        if self.turns > 1:
            return None  # a forced call only in the first turn
        if isinstance(requested, dict) and requested.get("type") == "mcp":
            name = requested.get("name")
            if name is None:
                return "required"
            tool = self.tools.get(name)
            if tool is None or tool.server != requested.get("server_label"):
                raise BadRequest(
                    f"tool_choice names the MCP tool {str(name)[:64]!r}, which the server "
                    f"{str(requested.get('server_label'))[:64]!r} does not offer",
                    param="tool_choice",
                )
            return {"type": "function", "function": {"name": name}}
        if requested == "required":
            return "required"
        return translated  # a function the client forced, allowed_tools' mode

    async def after_turn(
        self, exchange: Exchange, translator: ResponseTranslator, emit: Emit
    ) -> Step:
        """Runs the MCP calls of the turn that ended and decides what comes next."""
        calls = translator.turn_calls()
        mcp_calls = [call for call in calls if call.kind == "mcp_call"]
        if translator.finish_reason == "length":
            # Cut short: the calls' arguments may be too; nothing runs, the response ends.
            return await _end(emit, translator.complete())
        over_turns = self.turns >= self.max_turns
        for call in mcp_calls:
            if over_turns or self.calls >= self.max_calls:
                limit = (
                    f"the limit of {self.max_turns} inference turns"
                    if over_turns
                    else f"the limit of {self.max_calls} MCP calls"
                )
                events = translator.mcp_call_done(
                    call.item_id,
                    error=_execution_error(f"Not run: {limit} for one response was reached"),
                )
                exchange.metrics.child(exchange.metrics.mcp_hops, "call", "not_run").inc()
            else:
                end = await self.call(exchange, call.item_id, call.name, call.arguments)
                if end.blocked:
                    refusal = exchange.policy.spec.refusal
                    return await _end(emit, refusal_events(translator, refusal))
                events = translator.mcp_call_done(call.item_id, output=end.output, error=end.error)
            if not await emit(events):
                return Step.GONE
        ends_here = any(call.kind != "mcp_call" for call in calls)
        if not mcp_calls or ends_here or over_turns:
            return await _end(emit, translator.complete())
        return Step.NEXT_TURN


async def _end(emit: Emit, events: list[Event]) -> Step:
    return Step.DONE if await emit(events) else Step.GONE
