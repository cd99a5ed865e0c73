"""Evaluating a policy stage on plain texts or messages, outside the proxy.

The policy's own cases, ``shieldgate scan`` and the shield evaluation all go through here: the
same shields and the same engine (``shields.scan``) the proxy runs, without HTTP.

Remote shields run only when the caller passes a ``BlockingRemote`` (the network is opt-in for
offline tools); otherwise they are listed in ``Evaluation.skipped``. As in the proxy, they run
after the local shields, on the text those left, and not at all when a local shield blocked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shields.base import Action, Finding, Role, Stage, Verdict, verdict_of
from shields.pipeline import BlockingRemote, latest_message
from shields.policy import CompiledPolicy
from shields.remote import JudgeRequest, RemoteShield
from shields.scan import check_request, check_text, merge_redactions, redact

__all__ = ["Evaluation", "TextResult", "evaluate"]


@dataclass(frozen=True, slots=True)
class TextResult:
    role: Role | None
    text: str
    findings: tuple[Finding, ...]
    redacted: str  # the text as it would be forwarded (input) or sent (output)


@dataclass(frozen=True, slots=True)
class Evaluation:
    verdict: Verdict
    texts: tuple[TextResult, ...]
    request_findings: tuple[Finding, ...]  # request-wide checks (input stage)
    skipped: tuple[str, ...] = ()  # remote shields not asked (no network given)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for t in self.texts for f in t.findings) + self.request_findings


def evaluate(
    policy: CompiledPolicy,
    stage: Stage,
    texts: Sequence[tuple[Role | None, str]],
    *,
    remote: BlockingRemote | None = None,
) -> Evaluation:
    """What the policy decides for these texts (messages at input; reply texts at output)."""
    shields = policy.shields(stage)
    fail_closed = policy.spec.on_error == "block"
    results = []
    for role, text in texts:
        found = check_text(shields, text, role=role, fail_closed=fail_closed)
        redacted = redact(text, 0, merge_redactions(found)) if policy.enforcing else text
        results.append(TextResult(role, text, tuple(found), redacted))
    request_findings: list[Finding] = []
    if stage is Stage.INPUT:
        messages = [(role or Role.USER, text) for role, text in texts]
        request_findings = check_request(shields, messages, fail_closed=fail_closed)
    everything = [f for r in results for f in r.findings] + request_findings
    skipped: tuple[str, ...] = ()
    remote_shields = policy.remote(stage)
    if remote_shields and verdict_of(everything) is not Verdict.BLOCK:
        if remote is None:
            skipped = tuple(s.id for s in remote_shields)
        else:
            results = _with_remote(policy, stage, remote_shields, results, remote)
            everything = [f for r in results for f in r.findings] + request_findings
    verdict = verdict_of(everything) if policy.enforcing else Verdict.ALLOW
    return Evaluation(verdict, tuple(results), tuple(request_findings), skipped)


def _with_remote(
    policy: CompiledPolicy,
    stage: Stage,
    shields: Sequence[RemoteShield],
    results: list[TextResult],
    remote: BlockingRemote,
) -> list[TextResult]:
    checks: list[tuple[int, RemoteShield, JudgeRequest]] = []
    if stage is Stage.INPUT:
        conversation = tuple((r.role or Role.USER, r.redacted) for r in results)
        for shield in shields:
            index = latest_message(shield, conversation)
            if index is not None:
                text = conversation[index][1]
                request = JudgeRequest(stage, text, conversation[: index + 1], policy.name)
                checks.append((index, shield, request))
    else:
        for index, result in enumerate(results):
            for shield in shields:
                if result.redacted:
                    request = JudgeRequest(stage, result.redacted, (), policy.name)
                    checks.append((index, shield, request))
    found = remote.run(
        [(shield, request) for _, shield, request in checks],
        policy_on_error=policy.spec.on_error,
        enforcing=policy.enforcing,
    )
    updated = list(results)
    for (index, _, _), findings in zip(checks, found, strict=True):
        if not findings:
            continue
        result = updated[index]
        redacted = result.redacted
        if policy.enforcing:
            for finding in findings:
                if finding.action is Action.REDACT and not finding.monitor:
                    redacted = finding.placeholder  # a remote verdict covers the whole text
        updated[index] = TextResult(
            result.role, result.text, result.findings + tuple(findings), redacted
        )
    return updated
