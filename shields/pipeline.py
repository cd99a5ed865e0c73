"""Running a stage's remote shields on one request: concurrently, bounded, fail closed.

Local shields run first and synchronously (they take microseconds); only when none of them
blocks are the remote shields asked, on the text as the local shields left it — so a value a
local shield redacts never reaches a third-party judge, and a local block costs no remote call.
The remote shields then run at once, side by side; the first enforced block cancels the calls
still in flight (its answer is final: nothing the others say can unblock the text).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from shields.base import Finding, Role
from shields.remote import (
    JudgeRequest,
    RemoteBackends,
    RemoteShield,
    failure_finding,
    failure_kind,
)
from shields.verdict import Enforcement

__all__ = [
    "BlockingRemote",
    "FailureSink",
    "check_one",
    "latest_message",
    "run_remote",
]

# Called once per failed remote check with the shield and a bounded kind of failure (for
# metrics): connect, timeout, status_5xx, bad_answer, ...
FailureSink = Callable[[RemoteShield, str], None]


async def check_one(
    shield: RemoteShield,
    request: JudgeRequest,
    backends: RemoteBackends,
    policy_on_error: str = "block",
    on_failure: FailureSink | None = None,
) -> list[Finding]:
    """One remote shield's findings; a failure becomes a ``shield_error`` finding (or none)."""
    try:
        return await shield.check(request, backends)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if on_failure is not None:
            on_failure(shield, failure_kind(exc))
        return failure_finding(shield, exc, shield.fail_closed(policy_on_error))


def latest_message(shield: RemoteShield, conversation: Sequence[tuple[Role, str]]) -> int | None:
    """The index of the latest non-empty message the shield applies to: what it judges at the
    input stage (with the conversation up to it as context)."""
    for index in range(len(conversation) - 1, -1, -1):
        role, text = conversation[index]
        if text and shield.applies_to(role):
            return index
    return None


class BlockingRemote:
    """Remote checks for synchronous callers (``shieldgate test --remote``, ``scan --remote``):
    one private event loop for the whole command, so clients and connections are reused."""

    def __init__(self, backends: RemoteBackends) -> None:
        self.backends = backends
        self._runner = asyncio.Runner()
        # Every failed check so far, as (shield id, kind): a failure that the policy turns
        # into a block (or into nothing) must still be visible to ``shieldgate test``.
        self.failures: list[tuple[str, str]] = []

    def run(
        self,
        checks: Sequence[tuple[RemoteShield, JudgeRequest]],
        *,
        policy_on_error: str = "block",
        enforcing: bool = True,
    ) -> list[list[Finding]]:
        return self._runner.run(
            run_remote(
                checks,
                self.backends,
                policy_on_error=policy_on_error,
                enforcing=enforcing,
                on_failure=self._failed,
            )
        )

    def _failed(self, shield: RemoteShield, kind: str) -> None:
        self.failures.append((shield.id, kind))

    def close(self, closing: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        if closing is not None:
            self._runner.run(closing())
        self._runner.close()


async def run_remote(
    checks: Sequence[tuple[RemoteShield, JudgeRequest]],
    backends: RemoteBackends,
    *,
    policy_on_error: str = "block",
    enforcing: bool = True,
    on_failure: FailureSink | None = None,
) -> list[list[Finding]]:
    """The findings of each (shield, request) pair, in order; a failed check gives a
    ``shield_error`` block finding (or nothing, under ``on_error: allow``). Once one check
    blocks, the others are cancelled and count as having found nothing."""
    if not checks:
        return []
    if len(checks) == 1:
        shield, request = checks[0]
        return [await check_one(shield, request, backends, policy_on_error, on_failure)]
    rule = Enforcement(enforcing)
    tasks = [
        asyncio.ensure_future(check_one(shield, request, backends, policy_on_error, on_failure))
        for shield, request in checks
    ]
    try:
        for next_done in asyncio.as_completed(tasks):
            if rule.blocks(await next_done):
                break
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        # Let cancelled calls unwind (close their connections) before the caller moves on.
        await asyncio.gather(*tasks, return_exceptions=True)
    return [task.result() if task.done() and not task.cancelled() else [] for task in tasks]
