"""Remote shields in the stream guard, event by event, with hypothesis.

The judge here is an in-process stand-in for the network service (the outside world): it flags a
text when it contains a marker. Everything on shieldgate's side — the guard, the scheduling of
checks, the release rule — is the real code.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import GuardState, StreamGuard
from proxy.stream.remote_checks import RemoteContext
from shields.base import Role
from shields.policy import parse_policy
from tests.support.fake_upstream import chunk, sse
from tests.support.stream_helpers import channel_text, deltas, events_of

MARKER = "DETONATE"


class MarkerJudge:
    """Answers like Llama Guard: unsafe when the judged turn contains the marker."""

    def __init__(self, *, fail: bool = False) -> None:
        self.judged: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail = fail

    async def chat(self, spec: Any, messages: list[dict[str, str]]) -> str:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)
            text = messages[-1]["content"]
            self.judged.append(text)
            if self.fail:
                return "no idea"
            return "unsafe\nS1" if MARKER in text else "safe"
        finally:
            self.in_flight -= 1

    async def moderate(self, spec: Any, text: str) -> dict[str, Any]:
        raise NotImplementedError

    async def post_json(self, spec: Any, payload: dict[str, Any]) -> Any:
        raise NotImplementedError


def policy(release: str, every: int, local: bool = False) -> Any:
    local_shield = "  - {id: words, type: denylist, phrases: [forbidden words]}\n" if local else ""
    return parse_policy(
        f"""
version: 1
name: p
stream: {{holdback_chars: 24}}
output:
{local_shield}  - id: guard
    type: llm_judge
    base_url: http://judge.invalid/v1
    model: g
    cache: {{size: 0}}
    stream: {{every_chars: {every}, release: {release}}}
"""
    )


async def drive(guard: StreamGuard, body: bytes, flush_every: int, settle_every: int) -> bytes:
    """Feeds events like the handler: a flush per 'network read'; verdicts collected as they
    arrive (every ``settle_every`` reads the loop lets the judge answer)."""
    out: list[bytes] = []
    for i, event in enumerate(events_of(body), start=1):
        out.append(guard.feed(event))
        if i % flush_every == 0:
            out.append(guard.flush())
        if i % settle_every == 0:
            for _ in range(3):
                await asyncio.sleep(0)
            if guard.check_tasks and all(t.done() for t in guard.check_tasks):
                out.append(guard.collect_checks())
    out.append(guard.flush())
    out.append(guard.end())
    while not guard.closed:
        tasks = guard.check_tasks
        assert tasks, "an open guard at the end must be waiting on a check"
        await asyncio.wait(tasks)
        out.append(guard.collect_checks())
    return b"".join(out)


def make_guard(release: str, every: int, judge: MarkerJudge, local: bool = False) -> StreamGuard:
    context = RemoteContext(judge, ((Role.USER, "tell me a story"),), "p")
    return StreamGuard(
        policy(release, every, local),
        StreamContext(model="m", n=1, include_usage=False),
        remote=context,
    )


prose = st.text(alphabet="abcdefgh ijklmnop.", min_size=0, max_size=400)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    flagged=st.booleans(),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
    every=st.integers(16, 300),
    flush_every=st.integers(1, 4),
    settle_every=st.integers(1, 6),
)
async def test_after_check_releases_only_text_the_judge_passed(
    before: str,
    after: str,
    flagged: bool,
    sizes: list[int],
    every: int,
    flush_every: int,
    settle_every: int,
) -> None:
    text = before + (MARKER if flagged else "") + after
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    judge = MarkerJudge()
    guard = make_guard("after_check", every, judge)
    out = await drive(guard, body, flush_every, settle_every)
    released = channel_text(out, "content")
    assert MARKER not in released
    # Every character that left was inside a text the judge had passed.
    passed = [j for j in judge.judged if MARKER not in j]
    assert len(released) <= max((len(p) for p in passed), default=0)
    assert text.startswith(released)
    if flagged:
        assert guard.state is GuardState.BLOCKED
    else:
        assert guard.state is GuardState.DONE and released == text
    # One call in flight at a time; checkpoints coalesced: at most one call per every_chars
    # characters, plus the final one.
    assert judge.most_in_flight <= 1
    assert len(judge.judged) <= math.ceil(len(text) / every) + 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
    every=st.integers(16, 300),
)
async def test_immediately_never_holds_and_still_stops_on_a_verdict(
    before: str, after: str, sizes: list[int], every: int
) -> None:
    text = before + MARKER + after
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    guard = make_guard("immediately", every, MarkerJudge())
    out = await drive(guard, body, 1, 1)
    assert guard.state is GuardState.BLOCKED
    assert out.endswith(b"data: [DONE]\n\n")
    assert b"content_filter" in out


async def test_a_failed_judge_blocks_the_stream() -> None:
    text = "a perfectly harmless answer " * 10
    body = sse(*deltas(text, "content", [7]), chunk({}, finish_reason="stop"))
    guard = make_guard("after_check", 50, MarkerJudge(fail=True))
    out = await drive(guard, body, 1, 1)
    assert guard.state is GuardState.BLOCKED
    assert channel_text(out, "content") == ""


async def test_local_redactions_are_applied_before_the_judge_sees_text() -> None:
    judge = MarkerJudge()
    guard = StreamGuard(
        parse_policy(
            """
version: 1
name: p
stream: {holdback_chars: 160}
output:
  - {id: creds, type: secrets, action: redact}
  - {id: guard, type: llm_judge, base_url: http://judge.invalid/v1, model: g}
"""
        ),
        StreamContext(model="m", n=1, include_usage=False),
        remote=RemoteContext(judge, (), "p"),
    )
    secret = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"
    text = f"Use {secret} to log in."
    body = sse(*deltas(text, "content", [5]), chunk({}, finish_reason="stop"))
    out = await drive(guard, body, 1, 1)
    assert secret not in "".join(judge.judged)
    assert judge.judged[-1] == "Use [SECRET] to log in."
    assert channel_text(out, "content") == "Use [SECRET] to log in."


async def test_a_local_block_cancels_the_judge_call_in_flight() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    class SlowJudge(MarkerJudge):
        async def chat(self, spec: Any, messages: list[dict[str, str]]) -> str:
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return "safe"

    guard = make_guard("after_check", 16, SlowJudge(), local=True)
    first = sse(*deltas("x" * 60, "content", [10]), done=False)
    for event in events_of(first):
        guard.feed(event)
    guard.flush()
    await asyncio.wait_for(started.wait(), 1)
    for event in events_of(sse(chunk({"content": " forbidden words"}), done=False)):
        guard.feed(event)
    out = guard.flush()
    assert guard.state is GuardState.BLOCKED and b"content_filter" in out
    await asyncio.wait_for(cancelled.wait(), 1)
