"""The shields at each MCP hop, by the request's policy, and findings named by their hop.

Three hops carry text between the model and an MCP server, and each is checked where it
matters, before anything acts on it:

- ``mcp_tools``: the tool definitions a server lists (names, descriptions, input schemas) are
  text the model will read, written by a third party: checked by the input shields as
  tool-role text (so the tool profile applies, e.g. the default policy's indirect-injection
  shield) before they are offered. A redaction changes what the model reads (and what the
  ``mcp_list_tools`` item shows); one that touches a name or leaves a schema that is no longer
  a JSON object blocks (a renamed tool is no tool the server has).
- ``mcp_arguments``: a call's final arguments are the model's output, checked by the output
  shields before the call is made. On a streamed turn the stream guard does it, channel by
  channel, as for every tool call (its findings on an MCP call's channel are named by this
  hop: ``name_arguments_hop``); a call the client approved in a later request is checked here
  whole (``check_arguments``), as a non-stream reply is.
- ``mcp_result``: what a call returned is checked by the input shields as tool-role text
  before the model reads it; the checked text is what the model reads and what the client
  sees as ``mcp_call.output``.

Remote shields run after the local ones as at every stage, on what they left. Findings go to
the log, metrics and audit trail like any other (``record_findings``), with their hop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proxy.endpoints.chat_request import check_input, parse_chat_request
from proxy.exchange.remote_checks import check_input_remote, check_reply_remote
from proxy.exchange.reply_check import check_reply
from proxy.mcp.tools import McpTool
from proxy.serving.off_loop import off_loop_if_large
from proxy.state import record_findings
from shields import json_codec
from shields.base import Finding, Stage
from shields.openai.channels import Channel
from shields.verdict import StageOutcome

if TYPE_CHECKING:
    from proxy.exchange.lifecycle import Exchange
    from proxy.stream.guard import StreamGuard

__all__ = [
    "MCP_ARGUMENTS",
    "MCP_RESULT",
    "MCP_TOOLS",
    "CheckedTools",
    "check_arguments",
    "check_result",
    "check_tools",
    "name_arguments_hop",
    "record_hop",
]

MCP_TOOLS = "mcp_tools"
MCP_ARGUMENTS = "mcp_arguments"
MCP_RESULT = "mcp_result"


def record_hop(exchange: Exchange, stage: Stage, hop: str, findings: list[Finding]) -> None:
    record_findings(exchange.request, stage, findings, exchange.endpoint, hop=hop)


async def _input_hop(exchange: Exchange, messages: list[dict[str, Any]], hop: str) -> StageOutcome:
    """The input stage over ``messages`` (tool messages the proxy built), redactions written
    into them."""
    body = {"model": exchange.dialect.chat.model, "messages": messages}
    raw = json_codec.dumps(body)
    chat = parse_chat_request(raw)
    policy = exchange.policy
    outcome = await off_loop_if_large(
        len(raw), check_input, policy, chat, fingerprint=exchange.fingerprint
    )
    record_hop(exchange, Stage.INPUT, hop, outcome.findings)
    if policy.input_remote and not outcome.blocked:
        remote = await check_input_remote(policy, chat, exchange.remote_context())
        record_hop(exchange, Stage.INPUT, hop, remote.findings)
        outcome = outcome.merge(remote)
    # The checked texts: parse_chat_request read a copy (from ``raw``), written in place.
    messages[:] = chat.body["messages"]
    return outcome


@dataclass(slots=True)
class CheckedTools:
    outcome: StageOutcome
    tools: list[McpTool]  # as checked (redactions in); empty when blocked


def _schema_text(tool: McpTool) -> str:
    return json_codec.dumps(tool.input_schema).decode("utf-8", "surrogatepass")


async def check_tools(exchange: Exchange, tools: list[McpTool]) -> CheckedTools:
    """The ``mcp_tools`` hop: each tool's name, description and schema as one tool message
    (its three texts as parts)."""
    if not tools:
        return CheckedTools(StageOutcome(), [])
    messages: list[dict[str, Any]] = [
        {
            "role": "tool",
            "tool_call_id": f"mcp_tool_{i}",
            "content": [
                {"type": "text", "text": tool.name},
                {"type": "text", "text": tool.description or ""},
                {"type": "text", "text": _schema_text(tool)},
            ],
        }
        for i, tool in enumerate(tools)
    ]
    outcome = await _input_hop(exchange, messages, MCP_TOOLS)
    if outcome.blocked:
        return CheckedTools(outcome, [])
    if not outcome.redacted:
        return CheckedTools(outcome, tools)
    checked: list[McpTool] = []
    for tool, message in zip(tools, messages, strict=True):
        name, description, schema_text = (part["text"] for part in message["content"])
        try:
            schema = json_codec.loads(schema_text.encode("utf-8", "surrogatepass"))
        except json_codec.InvalidJSON:
            schema = None
        if name != tool.name or not isinstance(schema, dict):
            outcome.blocked = True
            return CheckedTools(outcome, [])
        kept = tool.description if tool.description is None else description
        checked.append(
            McpTool(
                server=tool.server,
                name=tool.name,
                description=kept,
                input_schema=schema,
                annotations=tool.annotations,
                needs_approval=tool.needs_approval,
            )
        )
    return CheckedTools(outcome, checked)


async def check_result(exchange: Exchange, call_id: str, text: str) -> tuple[StageOutcome, str]:
    """The ``mcp_result`` hop: a call's result as the tool message the model would read; the
    checked text (redactions in)."""
    messages: list[dict[str, Any]] = [{"role": "tool", "tool_call_id": call_id, "content": text}]
    outcome = await _input_hop(exchange, messages, MCP_RESULT)
    checked = messages[0]["content"]
    assert isinstance(checked, str)
    return outcome, checked


async def check_arguments(
    exchange: Exchange, name: str, arguments: str
) -> tuple[StageOutcome, str]:
    """The ``mcp_arguments`` hop for a call not streamed in this request (one the client
    approved): the arguments as the model's whole reply calling the tool, through the output
    shields; the checked arguments (redactions in)."""
    function: dict[str, Any] = {"name": name, "arguments": arguments}
    call = {"id": "mcp", "type": "function", "function": function}
    completion: dict[str, Any] = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ]
    }
    policy = exchange.policy
    outcome = check_reply(
        policy, completion, n=1, tools=frozenset({name}), fingerprint=exchange.fingerprint
    )
    record_hop(exchange, Stage.OUTPUT, MCP_ARGUMENTS, outcome.findings)
    if policy.output_remote and not outcome.blocked:
        remote = await check_reply_remote(policy, completion, exchange.remote_context())
        record_hop(exchange, Stage.OUTPUT, MCP_ARGUMENTS, remote.findings)
        outcome = outcome.merge(remote)
    checked = function["arguments"]
    assert isinstance(checked, str)
    return outcome, checked


def name_arguments_hop(exchange: Exchange, guard: StreamGuard, mcp_names: frozenset[str]) -> None:
    """Findings the stream guard makes on an MCP call's arguments are recorded as the
    ``mcp_arguments`` hop's (the guard checks them as it checks every tool call's)."""

    def on_channel_finding(channel: Channel, finding: Finding) -> bool:
        if guard.call_name(channel) not in mcp_names:
            return False
        record_hop(exchange, Stage.OUTPUT, MCP_ARGUMENTS, [finding])
        return True

    guard.on_channel_finding = on_channel_finding
