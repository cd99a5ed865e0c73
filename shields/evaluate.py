"""Evaluating a policy stage on plain texts or messages, outside the proxy.

The policy's own cases, ``shieldgate scan`` and the shield evaluation all go through here: the
same shields and the same engine (``shields.scan``) the proxy runs, without HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shields.base import Finding, Role, Stage, Verdict, verdict_of
from shields.policy import CompiledPolicy
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

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for t in self.texts for f in t.findings) + self.request_findings


def evaluate(
    policy: CompiledPolicy, stage: Stage, texts: Sequence[tuple[Role | None, str]]
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
    verdict = verdict_of(everything) if policy.enforcing else Verdict.ALLOW
    return Evaluation(verdict, tuple(results), tuple(request_findings))
