"""Typed application state and the small helpers every handler shares."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from proxy.clients.auth import client_key_of
from proxy.errors import BadRequest, PayloadTooLarge, ProxyError, UndecodableBody
from proxy.mcp.pins import PinSource
from proxy.ops.audit import AuditContext, AuditTrail
from proxy.ops.metrics import Metrics
from proxy.ops.policy_source import PolicySource
from proxy.serving.readiness import UpstreamProbe
from proxy.serving.request_context import note_verdict, request_id_of
from proxy.settings import Settings
from proxy.store.responses import ResponseStore
from proxy.stream.remote_checks import RemoteContext
from proxy.upstream.client import Upstream
from proxy.upstream.remote_backends import HttpBackends
from shields.base import Action, Finding, Role, Shield, Stage, Verdict
from shields.openai.input_cache import InputCache
from shields.policy import CompiledPolicy

__all__ = [
    "AUDIT",
    "BLOCKED_HEADER",
    "INPUT_CACHE",
    "MCP_PINS",
    "METRICS",
    "MODEL",
    "POLICY",
    "POLICY_HASH_HEADER",
    "POLICY_HEADER",
    "REMOTE_BACKENDS",
    "RESPONSE_STORE",
    "SETTINGS",
    "STREAM_SLOTS",
    "UPSTREAM",
    "UPSTREAM_PROBE",
    "StreamSlots",
    "body_too_large",
    "choose_policy",
    "fingerprint_for",
    "policy_for",
    "read_body",
    "record_findings",
    "remote_context",
    "tenant_of",
]

POLICY_HEADER = "x-shieldgate-policy"
POLICY_HASH_HEADER = "x-shieldgate-policy-hash"
BLOCKED_HEADER = "x-shieldgate-blocked"

findings_log = logging.getLogger("shieldgate.findings")


SETTINGS = web.AppKey("settings", Settings)
POLICY = web.AppKey("policy", PolicySource)
METRICS = web.AppKey("metrics", Metrics)


class StreamSlots:
    """A counter, not a semaphore: a request over the limit must be refused, never queued."""

    def __init__(self, limit: int) -> None:
        self.limit = limit  # 0: unlimited
        self.in_use = 0

    def acquire(self) -> bool:
        if self.limit and self.in_use >= self.limit:
            return False
        self.in_use += 1
        return True

    def release(self) -> None:
        self.in_use -= 1


STREAM_SLOTS = web.AppKey("stream_slots", StreamSlots)
UPSTREAM_PROBE = web.AppKey("upstream_probe", UpstreamProbe)
# The model a request asked for, once its body is parsed (for the bounded metrics label).
MODEL = web.RequestKey("model", str)
AUDIT = web.AppKey("audit", AuditTrail)
# The input stage's per-text outcomes, remembered across requests (``input_cache_bytes``).
INPUT_CACHE = web.AppKey("input_cache", InputCache)
UPSTREAM = web.AppKey("upstream", Upstream)
RESPONSE_STORE = web.AppKey("response_store", ResponseStore)
REMOTE_BACKENDS = web.AppKey("remote_backends", HttpBackends)
# The MCP pins file's pins (``mcp_pins_file``), when there is one (``proxy.mcp.pinning``).
MCP_PINS = web.AppKey("mcp_pins", PinSource)
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
    """Routes the request to a policy: the client key's policy, if it has one; then (only
    where the operator allows it) the client's ``x-shieldgate-policy`` header; then the
    requested model; then the default."""
    if model is not None:
        request[MODEL] = model
    requested = request.headers.get(POLICY_HEADER)
    key = client_key_of(request)
    key_policy = key.policy if key is not None else None
    policies = request.app[POLICY].policies
    if key_policy is not None and key_policy not in policies.policies:
        # Keys and policies reload together, checked against each other: only a request
        # authenticated just before such a reload can get here. Never fall back to weaker rules.
        raise ProxyError(f"The policy of this client key ({key_policy!r}) is not loaded; retry")
    try:
        policy = policies.choose(model=model, requested=requested, key_policy=key_policy)
    except KeyError:
        # The client's header is quoted back, cut short: an error body is no place to
        # reflect kilobytes of whatever a client sent.
        shown = requested if requested is None or len(requested) <= 64 else requested[:64] + "..."
        raise BadRequest(f"Unknown policy {shown!r}", param=POLICY_HEADER) from None
    request[_REQUEST_POLICY] = policy
    return policy


def body_too_large(limit: int) -> BadRequest:
    """The 413 for a body over ``limit`` bytes, in the words of the error middleware's."""
    return PayloadTooLarge(f"Request body is larger than the limit of {limit} bytes")


async def read_body(request: web.Request) -> bytes:
    """The request's body, decoded (``Content-Encoding``) and at most ``max_body_bytes`` long.

    A ``Content-Length`` over the limit is refused before a byte is read. aiohttp enforces the
    limit while reading too (a chunked or compressed body) and raises its 413, which the error
    middleware renders in OpenAI's shape. A body that cannot be decoded — corrupt gzip or
    deflate, broken chunked framing — is a 400; aiohttp's message is not passed on (it may
    quote the client's bytes)."""
    limit = request.app[SETTINGS].max_body_bytes
    length = request.content_length
    if length is not None and length > limit:
        raise body_too_large(limit)
    try:
        return await request.read()
    except (web.RequestPayloadError, HttpProcessingError) as exc:
        raise UndecodableBody(
            f"The request body could not be decoded ({type(exc).__name__}): check its "
            "Content-Encoding and framing"
        ) from None


def tenant_of(request: web.Request) -> str:
    """The tenant of the request's client key; ``-`` when client authentication is off."""
    key = client_key_of(request)
    return key.tenant if key is not None else "-"


def fingerprint_for(request: web.Request) -> Callable[[str], str] | None:
    """The audit trail's keyed hash of matched text, when there is an audit trail."""
    audit = request.app[AUDIT]
    return audit.fingerprint if audit.enabled else None


def remote_context(
    request: web.Request,
    policy: CompiledPolicy,
    conversation: Iterable[tuple[Role, str]],
    endpoint: str,
) -> RemoteContext:
    """What this request's remote shields need; failures are counted per policy, shield and
    endpoint."""
    metrics = request.app[METRICS]

    def failed(shield: Shield, kind: str) -> None:
        metrics.child(metrics.remote_failures, policy.name, shield.id, kind, endpoint).inc()

    return RemoteContext(
        request.app[REMOTE_BACKENDS], tuple(conversation), policy.name, on_failure=failed
    )


def record_findings(
    request: web.Request,
    stage: Stage,
    findings: Sequence[Finding],
    endpoint: str,
    *,
    hop: str | None = None,
) -> None:
    """Logs, counts and audits each finding — which shield, which rule, where, on which
    endpoint — and never the text itself. ``hop``: the MCP hop the text was on
    (``mcp_tools``, ``mcp_arguments``, ``mcp_result``; see ``proxy.mcp.checks``), named in the
    log line, the audit record and ``shieldgate_mcp_findings_total``."""
    if not findings:  # most requests: nothing to look up
        return
    policy = policy_for(request)
    metrics = request.app[METRICS]
    audit = request.app[AUDIT]
    context: AuditContext | None = None
    # Asked once, not per finding: the ``extra`` fields are built only for a log that is kept.
    logged = findings_log.isEnabledFor(logging.INFO)
    for finding in findings:
        monitor = finding.monitor or not policy.enforcing
        mode = "monitor" if monitor else "enforce"
        if not monitor:  # what the request's access-log line reports
            blocked = finding.action is Action.BLOCK
            note_verdict(request, Verdict.BLOCK if blocked else Verdict.REDACT)
        if logged:
            findings_log.info(
                "finding %s %s/%s %s %s",
                stage.value,
                finding.shield_id,
                finding.label,
                finding.action.value,
                mode,
                extra={
                    **({"hop": hop} if hop is not None else {}),
                    "stage": stage.value,
                    "endpoint": endpoint,
                    "policy": policy.name,
                    "tenant": tenant_of(request),
                    "shield": finding.shield_id,
                    "shield_type": finding.shield_type,
                    "label": finding.label,
                    "action": finding.action.value,
                    "mode": mode,
                    "span": [finding.start, finding.end],
                },
            )
        metrics.child(
            metrics.findings,
            stage.value,
            policy.name,
            finding.shield_id,
            finding.shield_type,
            finding.action.value,
            mode,
            endpoint,
        ).inc()
        if hop is not None:
            metrics.child(
                metrics.mcp_findings,
                hop,
                policy.name,
                finding.shield_id,
                finding.action.value,
                mode,
            ).inc()
        if audit.enabled:
            if context is None:
                context = AuditContext(
                    request_id_of(request), tenant_of(request), policy.name, policy.digest
                )
            audit.record(context, stage, finding, monitor, hop=hop, endpoint=endpoint)
