"""Shared pieces of the MCP tests: the scripted upstream's tool-calling turns, the proxy with an
allowed MCP server, and reading what the upstream was sent."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import MODEL
from tests.support.fake_upstream import FakeUpstream, Reply, chunk, usage_chunk

__all__ = [
    "MODEL",
    "Proxy",
    "call_turn",
    "mcp_tool",
    "sent_bodies",
    "start_proxy",
    "text_turn",
]

Proxy = Callable[..., Awaitable[RunningServer]]


def mcp_tool(url: str, **extra: Any) -> dict[str, Any]:
    """A ``type: mcp`` tool for the test server; ``require_approval: never`` unless given."""
    return {
        "type": "mcp",
        "server_label": "tests",
        "server_url": url,
        "require_approval": "never",
        **extra,
    }


def call_turn(
    *calls: tuple[str, str], piece: int = 7, prompt: int = 5, completion: int = 7
) -> Reply:
    """One inference turn calling tools: each ``(name, arguments)`` streamed as tool-call
    deltas (the arguments in ``piece``-character pieces), then ``finish_reason: tool_calls``."""
    events: list[Any] = [chunk({"role": "assistant", "content": None})]
    for index, (name, arguments) in enumerate(calls):
        first = {
            "index": index,
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": name},
        }
        events.append(chunk({"tool_calls": [first]}))
        for i in range(0, len(arguments), piece):
            piece_call = {"index": index, "function": {"arguments": arguments[i : i + piece]}}
            events.append(chunk({"tool_calls": [piece_call]}))
    events.append(chunk({}, finish_reason="tool_calls"))
    events.append(usage_chunk(prompt, completion))
    return Reply(events=events)


def text_turn(text: str, *, piece: int = 4, prompt: int = 5, completion: int = 7) -> Reply:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + piece]}) for i in range(0, len(text), piece)]
    events.append(chunk({}, finish_reason="stop"))
    events.append(usage_chunk(prompt, completion))
    return Reply(events=events)


async def start_proxy(
    make_proxy: ProxyFactory, tmp_path: Path, mcp_url: str, policy: Any = None, **settings: Any
) -> RunningServer:
    """A proxy allowing the test MCP server (its whole origin), with a fresh response store."""
    settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
    settings.setdefault("mcp_servers", (mcp_url,))
    return await make_proxy(policy, **settings)


def sent_bodies(upstream: FakeUpstream) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = [request.json() for request in upstream.requests]
    return bodies


def sent_text(upstream: FakeUpstream) -> str:
    """Everything the upstream was sent, as one text (for "never reached the model")."""
    return "\n".join(json.dumps(body, ensure_ascii=False) for body in sent_bodies(upstream))
