"""MCP tool pinning: a server whose tools changed after they were trusted (the "rug pull").

A server's tools are text the model obeys; one reviewed as harmless may later carry
instructions in a description, a wider input schema, or a ``readOnlyHint`` that takes it out
of an approval rule. So every fresh listing is fingerprinted (``proxy.mcp.fingerprints``) and
compared, tool by tool, with what is trusted for its URL:

1. **pinned**: the server's entry in the pins file (``mcp_pins_file``, reviewed, in git;
   ``proxy.mcp.pins``). When there is one, it alone decides;
2. **first use**: otherwise the listing the proxy recorded the first time it listed that URL,
   in the shared store (``ResponseStore.keep_tool_record``: the responses' SQLite file or
   PostgreSQL database), keyed by a digest of the URL. The first listing is recorded and
   trusted.

Only the tools offered to the model (after ``allowed_tools``) are judged: a tool the request
does not offer cannot reach the model. A tool whose fingerprint differs is **changed**; a tool
the trusted fingerprint does not have is **new** and counts as a change too (unreviewed text
reaching the model is the threat, whether it came as an edit or as an addition; a tool removed
is none). What follows is the ``mcp_tool_changes`` setting's:

- ``refuse_tool`` (default): the changed tools are withheld — not offered to the model, absent
  from the ``mcp_list_tools`` item, whose ``error`` names them; the others stay;
- ``refuse_server``: the request is refused, a 424 ``mcp_tools_changed`` naming the tools,
  before the model is asked;
- ``monitor``: offered as listed, and recorded.

Every change is logged, audited (which tool, which fields, old and new digests) and counted in
``shieldgate_mcp_pins_total``; a first-use record is never updated by a change (the operator
accepts a change by pinning it, or by ``shieldgate mcp forget``). A store that fails fails the
request (503): a listing that cannot be compared is not offered.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yarl import URL

from proxy.errors import McpToolsChanged, StoreUnavailable
from proxy.mcp.fingerprints import ServerPrint, ToolChange, changes, server_print
from proxy.mcp.pins import PinSource
from proxy.mcp.servers import allow_list
from proxy.mcp.tools import McpServerSpec
from proxy.ops.audit import AuditContext
from proxy.serving.request_context import request_id_of
from proxy.state import AUDIT, MCP_PINS, RESPONSE_STORE, SETTINGS, policy_for, tenant_of

if TYPE_CHECKING:
    from proxy.exchange.lifecycle import Exchange

__all__ = ["PinVerdict", "judge_listing", "server_key", "shown_url"]

log = logging.getLogger("shieldgate.mcp")


def server_key(url: str) -> str:
    """The store's key of a server: a digest of its normalized URL (a URL may carry a token
    in its query; the store keeps none)."""
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def shown_url(url: str) -> str:
    """The URL without its query, for logs, the audit trail and the store."""
    return str(URL(url).with_query(None).with_fragment(None))


@dataclass(frozen=True, slots=True)
class PinVerdict:
    """What the listing may offer: ``withheld``, tools not to offer; ``notice``, the
    ``mcp_list_tools`` item's ``error`` saying so."""

    withheld: frozenset[str] = frozenset()
    notice: str | None = None


async def judge_listing(
    exchange: Exchange,
    spec: McpServerSpec,
    url: str,
    listing: Sequence[dict[str, Any]],
    offered: Sequence[str],
) -> PinVerdict:
    """Compares a fresh listing of ``url`` with its pins or first-use record; ``offered``:
    the names of the tools the request would offer the model. Raises ``McpToolsChanged``
    (refuse_server) or ``StoreUnavailable``."""
    app = exchange.app
    settings = app[SETTINGS]
    current = server_print(listing)
    pins: PinSource | None = app.get(MCP_PINS)
    pinned = pins.pins.for_url(url) if pins is not None else None
    trusted, first_use = (
        (pinned, False) if pinned is not None else await _first_use(exchange, url, current)
    )
    metrics = exchange.metrics
    server = allow_list(settings.mcp_servers).prefix_of(url)
    if first_use:
        metrics.child(metrics.mcp_pins, server, "first_use").inc(len(offered))
        return PinVerdict()
    found = changes(trusted, current, offered)
    policy = settings.mcp_tool_changes
    outcome = {
        "refuse_tool": "refused_tool",
        "refuse_server": "refused_server",
        "monitor": "monitored",
    }[policy]
    unchanged = len(offered) - len(found)
    if unchanged:
        metrics.child(metrics.mcp_pins, server, "unchanged").inc(unchanged)
    if not found:
        return PinVerdict()
    metrics.child(metrics.mcp_pins, server, outcome).inc(len(found))
    trust = "pinned" if pinned is not None else "first_use"
    for change in found:
        _record(exchange, spec, url, trust, outcome, change, trusted, current)
    described = ", ".join(
        f"{change.name!r} ({'new tool' if change.kind == 'new' else ', '.join(change.fields)})"
        for change in found
    )
    since = "they were pinned" if pinned is not None else "the proxy first listed them"
    if policy == "refuse_server":
        raise McpToolsChanged(
            f"The MCP server {spec.label!r} changed its tools since {since}: {described}. "
            "This proxy refuses a server whose tools changed until they are reviewed "
            "(setting mcp_tool_changes)",
            param=f"{spec.at}.server_url",
        )
    if policy == "monitor":
        return PinVerdict()
    return PinVerdict(
        withheld=frozenset(change.name for change in found),
        notice=f"Tools withheld because they changed since {since}: {described}",
    )


async def _first_use(
    exchange: Exchange, url: str, current: ServerPrint
) -> tuple[ServerPrint, bool]:
    """The server's first-use record, made from ``current`` when it has none; and whether it
    was made now. One read in the usual case; the insert only the first time."""
    store = exchange.app[RESPONSE_STORE]
    key = server_key(url)
    try:
        record = await store.tool_record(key)
        if record is None:
            mine = current.dump()
            record = await store.keep_tool_record(key, shown_url(url), mine)
            if record == mine:
                return current, True
        return ServerPrint.load(record), False
    except Exception:
        # Fail closed: tools that cannot be compared are not offered.
        log.exception("the MCP tool records could not be read or written")
        raise StoreUnavailable("The store of MCP tool records is unavailable") from None


def _record(
    exchange: Exchange,
    spec: McpServerSpec,
    url: str,
    trust: str,
    outcome: str,
    change: ToolChange,
    trusted: ServerPrint,
    current: ServerPrint,
) -> None:
    """The log line and the audit record of one change: digests, never the descriptions (a
    description is the server's text, possibly the very injection this catches, and may be
    long; the digests say what changed and match the pins file, where the text is reviewed)."""
    details: dict[str, Any] = {
        "server": shown_url(url),
        "server_label": spec.label,
        "trust": trust,
        "tool": change.name,
        "change": change.kind,
        "fields": list(change.fields),
        "outcome": outcome,
        "old_sha256": change.old.fingerprint if change.old is not None else None,
        "new_sha256": change.new.fingerprint,
        "old_fields": dict(change.old.fields) if change.old is not None else None,
        "new_fields": dict(change.new.fields),
        "old_server_sha256": trusted.fingerprint,
        "new_server_sha256": current.fingerprint,
    }
    request = exchange.request
    policy = policy_for(request)
    log.warning(
        "MCP tool %s %s on %s (%s): %s",
        change.name,
        change.kind,
        details["server"],
        ", ".join(change.fields),
        outcome,
        extra={**details, "policy": policy.name, "tenant": tenant_of(request)},
    )
    audit = exchange.app[AUDIT]
    if audit.enabled:
        context = AuditContext(
            request_id_of(request), tenant_of(request), policy.name, policy.digest
        )
        audit.record_tool_change(context, details, endpoint=exchange.endpoint)
