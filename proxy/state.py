"""Typed application state and the small helpers every handler shares."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiohttp import web

from proxy.errors import BadRequest
from proxy.policy_source import PolicySource
from proxy.response_store import ResponseStore
from proxy.settings import Settings
from proxy.upstream import Upstream
from shields.base import Finding, Stage
from shields.policy import CompiledPolicy

__all__ = [
    "BLOCKED_HEADER",
    "POLICY",
    "POLICY_HASH_HEADER",
    "POLICY_HEADER",
    "RESPONSE_STORE",
    "SETTINGS",
    "UPSTREAM",
    "choose_policy",
    "policy_for",
    "read_body",
    "record_findings",
]

POLICY_HEADER = "x-shieldgate-policy"
POLICY_HASH_HEADER = "x-shieldgate-policy-hash"
BLOCKED_HEADER = "x-shieldgate-blocked"

audit_log = logging.getLogger("shieldgate.findings")


SETTINGS = web.AppKey("settings", Settings)
POLICY = web.AppKey("policy", PolicySource)
UPSTREAM = web.AppKey("upstream", Upstream)
RESPONSE_STORE = web.AppKey("response_store", ResponseStore)
_REQUEST_POLICY = web.RequestKey("policy", CompiledPolicy)


def policy_for(request: web.Request) -> CompiledPolicy:
    """The policy for this request, fixed at its first use (the default one if no route chose
    another): a reload in the middle of a request never changes the rules it runs under."""
    policy = request.get(_REQUEST_POLICY)
    if policy is None:
        policy = request.app[POLICY].policies.default
        request[_REQUEST_POLICY] = policy
    return policy


def choose_policy(request: web.Request, *, model: str | None) -> CompiledPolicy:
    """Routes the request to a policy by the requested model (and, only where the operator
    allows it, the client's ``x-shieldgate-policy`` header)."""
    requested = request.headers.get(POLICY_HEADER)
    try:
        policy = request.app[POLICY].policies.choose(model=model, requested=requested)
    except KeyError:
        raise BadRequest(f"Unknown policy {requested!r}", param=POLICY_HEADER) from None
    request[_REQUEST_POLICY] = policy
    return policy


async def read_body(request: web.Request) -> bytes:
    # aiohttp enforces client_max_size while reading and raises 413, which the error
    # middleware renders in OpenAI's shape.
    return await request.read()


def record_findings(request: web.Request, stage: Stage, findings: Iterable[Finding]) -> None:
    """Logs each finding — which shield, which rule, where — and never the text itself."""
    policy = policy_for(request)
    for finding in findings:
        audit_log.info(
            "finding stage=%s policy=%s shield=%s type=%s label=%s action=%s span=%d:%d%s",
            stage.value,
            policy.name,
            finding.shield_id,
            finding.shield_type,
            finding.label,
            finding.action.value,
            finding.start,
            finding.end,
            " monitor" if finding.monitor or not policy.enforcing else "",
        )
