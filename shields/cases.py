"""Running a policy's own ``cases``: the same shields and the same engine the proxy uses.

Modelled on ``opa test``: each case states a stage, a text (or messages), the verdict it expects,
optionally the shield that must fire and the text after redaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from shields.base import Finding, Role, Stage, Verdict, verdict_of
from shields.policy import Case, CompiledPolicy
from shields.scan import check_request, check_text, merge_redactions, redact

__all__ = ["CaseResult", "run_case", "run_cases"]


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    verdict: Verdict
    findings: tuple[Finding, ...]
    redacted: str | None
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


def run_case(policy: CompiledPolicy, case: Case) -> CaseResult:
    shields = policy.shields(case.stage)
    fail_closed = policy.spec.on_error == "block"
    texts: list[tuple[Role | None, str]]
    if case.messages is not None:
        texts = [(m.role, m.content) for m in case.messages]
    else:
        assert case.text is not None
        texts = [(Role.USER if case.stage is Stage.INPUT else None, case.text)]
    findings: list[Finding] = []
    outputs: list[str] = []
    for role, text in texts:
        found = check_text(shields, text, role=role, fail_closed=fail_closed)
        findings += found
        outputs.append(redact(text, 0, merge_redactions(found)))
    if case.stage is Stage.INPUT:
        messages = [(role or Role.USER, text) for role, text in texts]
        findings += check_request(shields, messages, fail_closed=fail_closed)
    verdict = verdict_of(findings) if policy.enforcing else Verdict.ALLOW
    redacted = outputs[0] if case.text is not None else None
    problems = []
    if verdict is not case.expect:
        problems.append(f"expected {case.expect.value}, got {verdict.value}")
    if case.shield is not None and case.shield not in {f.shield_id for f in findings}:
        problems.append(f"expected shield {case.shield!r} to fire")
    if case.redacted is not None and redacted != case.redacted:
        problems.append(f"expected redacted text {case.redacted!r}, got {redacted!r}")
    return CaseResult(case, verdict, tuple(findings), redacted, tuple(problems))


def run_cases(policy: CompiledPolicy) -> list[CaseResult]:
    return [run_case(policy, case) for case in policy.spec.cases]
