"""The one rule that turns a stage's findings into what happens to the text.

Every place that decides — the proxy's input stage, whole replies, error bodies, the stream
guard, remote checks, ``shieldgate scan`` and ``test`` — decides through ``Enforcement``, so
the rule is written once:

- a policy in ``monitor`` mode enforces nothing (findings are logged, audited and counted);
- a finding of a shield in monitor mode is never enforced;
- block beats redact: one enforced block finding blocks the whole text;
- a shield that failed under ``on_error: block`` reported a ``shield_error`` block finding
  (``Shield.error_finding``), so failing closed is the same rule; ``fail_closed`` travels here
  for the scans that need to know it.

``StageOutcome`` is what one stage produced for one exchange (local and remote shields merged):
its findings, whether it blocked, whether it changed text by redacting. Its ``verdict`` is what
``shieldgate_verdicts_total`` counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from shields.base import Action, Finding, Verdict, verdict_of
from shields.scan import RedactionSpan, merge_redactions

__all__ = ["Enforcement", "StageOutcome"]


@dataclass(frozen=True, slots=True)
class Enforcement:
    """How a policy enforces what its shields find (``CompiledPolicy.enforcement``)."""

    enforcing: bool = True  # the policy's mode is ``enforce``
    fail_closed: bool = True  # the policy's ``on_error`` is ``block``

    def counts(self, finding: Finding) -> bool:
        """Whether the finding is enforced (not merely observed)."""
        return self.enforcing and not finding.monitor

    def enforced(self, findings: Iterable[Finding]) -> list[Finding]:
        if not self.enforcing:
            return []
        return [finding for finding in findings if not finding.monitor]

    def blocks(self, findings: Iterable[Finding]) -> bool:
        return self.enforcing and any(
            finding.action is Action.BLOCK and not finding.monitor for finding in findings
        )

    def redactions(self, findings: Iterable[Finding]) -> list[RedactionSpan]:
        """The enforced redactions as sorted, non-overlapping spans (none when not enforcing)."""
        return merge_redactions(findings) if self.enforcing else []

    def verdict(self, findings: Sequence[Finding]) -> Verdict:
        return verdict_of(findings) if self.enforcing else Verdict.ALLOW


@dataclass(slots=True)
class StageOutcome:
    """One stage of one exchange: every finding (monitor ones too), and what was enforced.

    ``redacted`` means a redaction changed text that goes on (a redaction that had to block
    instead — in a tool-call name — counts as ``blocked``).
    """

    findings: list[Finding] = field(default_factory=list)
    blocked: bool = False
    redacted: bool = False

    @property
    def verdict(self) -> Verdict:
        if self.blocked:
            return Verdict.BLOCK
        return Verdict.REDACT if self.redacted else Verdict.ALLOW

    def merge(self, later: StageOutcome) -> StageOutcome:
        """This outcome followed by a later one of the same stage (remote after local)."""
        return StageOutcome(
            self.findings + later.findings,
            self.blocked or later.blocked,
            self.redacted or later.redacted,
        )
