"""Running a policy's own ``cases``: the same shields and the same engine the proxy uses.

Modelled on ``opa test``: each case states a stage, a text (or messages), the verdict it expects,
optionally the shield that must fire, the text after redaction and the endpoint whose view of the
policy decides it (``chat`` unless it says).

With remote shields called (``--remote``), a remote shield that fails to answer is an error of
the case, not a result: under ``on_error: block`` the failure blocks, and a case expecting a
block would otherwise pass with the judge unreachable. A case that states ``expect_error``
tests exactly that failure instead.
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
    # Remote checks that failed unexpectedly, as "shield <id>: <kind>": the case could not be
    # decided (the verdict is what the failure made of it).
    errors: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.problems and not self.errors

    @property
    def skipped(self) -> bool:
        """The case needs a remote shield that was not asked (no ``--remote``): it names one,
        or it expects one to fail."""
        skipped = self.evaluation.skipped
        if self.case.expect_error:
            return bool(skipped)
        return self.case.shield is not None and self.case.shield in skipped

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
    before = len(remote.failures) if remote is not None else 0
    # Decided by the view of the endpoint the case names: a shield scoped to other endpoints
    # takes no part.
    view = policy.for_endpoint(case.endpoint)
    evaluation = evaluate(view, case.stage, texts, remote=remote)
    failures = remote.failures[before:] if remote is not None else []
    if CaseResult(case, evaluation, ()).skipped:
        return CaseResult(case, evaluation, ())
    problems = []
    unexpected = failures
    if case.expect_error:
        # ``shield`` then names the remote shield that must fail (under ``on_error: allow``
        # a failure leaves no finding to fire); without it, any remote failure will do.
        expected = [f for f in failures if case.shield is None or f[0] == case.shield]
        unexpected = [f for f in failures if f not in expected]
        if not expected:
            which = "a remote shield" if case.shield is None else f"remote shield {case.shield!r}"
            problems.append(f"expected {which} to fail, but it answered")
    errors = tuple(f"remote shield {shield!r} failed: {kind}" for shield, kind in unexpected)
    if evaluation.verdict is not case.expect:
        problems.append(f"expected {case.expect.value}, got {evaluation.verdict.value}")
    fired = {f.shield_id for f in evaluation.findings}
    if case.shield is not None and not case.expect_error and case.shield not in fired:
        problems.append(f"expected shield {case.shield!r} to fire")
    result = CaseResult(case, evaluation, ())
    if case.redacted is not None and result.redacted != case.redacted:
        problems.append(f"expected redacted text {case.redacted!r}, got {result.redacted!r}")
    return CaseResult(case, evaluation, tuple(problems), errors)


def run_cases(policy: CompiledPolicy, *, remote: BlockingRemote | None = None) -> list[CaseResult]:
    return [run_case(policy, case, remote=remote) for case in policy.spec.cases]
