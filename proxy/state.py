"""Typed application state and the small helpers every handler shares."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from aiohttp import web

from proxy.policy_source import PolicySource
from proxy.settings import Settings
from proxy.upstream import Upstream
from shields.base import Finding, Stage
from shields.policy import CompiledPolicy

__all__ = [
    "BLOCKED_HEADER",
    "POLICY",
    "POLICY_HEADER",
    "SETTINGS",
    "UPSTREAM",
    "policy_for",
    "read_body",
    "record_findings",
]

POLICY_HEADER = "x-shieldgate-policy"
BLOCKED_HEADER = "x-shieldgate-blocked"

audit_log = logging.getLogger("shieldgate.findings")


SETTINGS = web.AppKey("settings", Settings)
POLICY = web.AppKey("policy", PolicySource)
UPSTREAM = web.AppKey("upstream", Upstream)
_REQUEST_POLICY = web.RequestKey("policy", CompiledPolicy)


def policy_for(request: web.Request) -> CompiledPolicy:
    """The policy for this request, fixed at its first use."""
    policy = request.get(_REQUEST_POLICY)
    if policy is None:
        policy = request.app[POLICY].current
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
