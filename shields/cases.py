"""Running a policy's own ``cases``: the same shields and the same engine the proxy uses.

Modelled on ``opa test``: each case states a stage, a text (or messages), the verdict it expects,
optionally the shield that must fire and the text after redaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from shields.base import Role, Stage
from shields.evaluate import Evaluation, evaluate
from shields.pipeline import BlockingRemote
from shields.policy import Case, CompiledPolicy

__all__ = ["CaseResult", "run_case", "run_cases"]


@dataclass(frozen=True, slots=True)
class CaseResult:
    case: Case
    evaluation: Evaluation
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def skipped(self) -> bool:
        """The case names a remote shield that was not asked (no ``--remote``)."""
        return self.case.shield is not None and self.case.shield in self.evaluation.skipped

    @property
    def redacted(self) -> str | None:
        return self.evaluation.texts[0].redacted if self.case.text is not None else None


def run_case(
    policy: CompiledPolicy, case: Case, *, remote: BlockingRemote | None = None
) -> CaseResult:
    texts: list[tuple[Role | None, str]]
    if case.messages is not None:
        texts = [(m.role, m.content) for m in case.messages]
    else:
        assert case.text is not None
        texts = [(Role.USER if case.stage is Stage.INPUT else None, case.text)]
    evaluation = evaluate(policy, case.stage, texts, remote=remote)
    if case.shield is not None and case.shield in evaluation.skipped:
        return CaseResult(case, evaluation, ())
    problems = []
    if evaluation.verdict is not case.expect:
        problems.append(f"expected {case.expect.value}, got {evaluation.verdict.value}")
    if case.shield is not None and case.shield not in {f.shield_id for f in evaluation.findings}:
        problems.append(f"expected shield {case.shield!r} to fire")
    result = CaseResult(case, evaluation, ())
    if case.redacted is not None and result.redacted != case.redacted:
        problems.append(f"expected redacted text {case.redacted!r}, got {result.redacted!r}")
    return CaseResult(case, evaluation, tuple(problems))


def run_cases(policy: CompiledPolicy, *, remote: BlockingRemote | None = None) -> list[CaseResult]:
    return [run_case(policy, case, remote=remote) for case in policy.spec.cases]
