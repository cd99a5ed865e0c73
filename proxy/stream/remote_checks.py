"""Remote shields on a stream: when to ask them, and waiting on them beside the upstream.

A remote shield cannot be asked per chunk. For each text channel of the stream (see
``stream_guard``) it judges the accumulated text every ``stream.every_chars`` characters and once
at the end, with at most ONE call in flight per shield and stream: while a call runs, new text
accumulates, and the next call judges all of it (checkpoints passed meanwhile are coalesced).
A 4,000-character answer with ``every_chars: 1000`` costs at most five calls per shield.

What is judged is the channel's text up to the local shields' safe point, with their redactions
applied: a value a local shield redacts never reaches a remote judge, and every character judged
is final.

``release: after_check`` shields hold the stream: the guard releases an event only when these
shields have passed the text it carries (``judged_end``). ``release: immediately`` shields
hold nothing; a later unsafe verdict stops the rest of the stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import aiohttp

from shields.base import Action, Finding, Role, Stage
from shields.pipeline import FailureSink, check_one
from shields.remote import JudgeRequest, RemoteBackends, RemoteShield

__all__ = ["RemoteContext", "RemoteStreamChecks", "upstream_reads"]


@dataclass(frozen=True, slots=True)
class RemoteContext:
    """What a stream's remote checks need from the request: the network and the conversation."""

    backends: RemoteBackends
    conversation: tuple[tuple[Role, str], ...]
    policy: str = ""
    on_failure: FailureSink | None = None


class JudgedChannel(Protocol):
    """The guard's view of one channel's text (``stream_guard._Channel``)."""

    judged_end: int
    safe_end: int  # the local shields' safe point: how far a judge may look

    def judge_text(self, end: int) -> str:
        """The channel's text up to ``end``, with the local redactions applied."""
        ...


@dataclass(slots=True)
class _Progress:
    requested: int = 0  # channel offset reached by the latest call made
    passed: int = 0  # channel offset reached by the latest text passed


@dataclass(slots=True)
class _Call:
    shield: RemoteShield
    channel: Any
    end: int


@dataclass(slots=True)
class RemoteStreamChecks:
    shields: Sequence[RemoteShield]
    context: RemoteContext
    policy_on_error: str = "block"
    progress: dict[tuple[str, int], _Progress] = field(default_factory=dict)
    running: dict[asyncio.Task[list[Finding]], _Call] = field(default_factory=dict)
    calls: int = 0
    # The shields that hold events until they have passed them (``release: after_check``).
    holding: tuple[RemoteShield, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.holding = tuple(s for s in self.shields if s.spec.stream.release == "after_check")

    @property
    def holds(self) -> bool:
        return bool(self.holding)

    @property
    def tasks(self) -> set[asyncio.Task[list[Finding]]]:
        return set(self.running)

    def _progress(self, shield: RemoteShield, channel: Any) -> _Progress:
        key = (shield.id, id(channel))
        found = self.progress.get(key)
        if found is None:
            found = self.progress[key] = _Progress()
        return found

    def schedule(self, channels: Sequence[JudgedChannel], *, final: bool) -> None:
        """Starts the calls that are due: a shield with nothing in flight judges the channel
        furthest behind, once it is ``every_chars`` ahead (any amount ahead when ``final``)."""
        busy = {call.shield.id for call in self.running.values()}
        for shield in self.shields:
            if shield.id in busy:
                continue
            due: tuple[int, JudgedChannel, int] | None = None
            for channel in channels:
                end = channel.safe_end
                behind = end - self._progress(shield, channel).requested
                if behind <= 0 or (not final and behind < shield.spec.stream.every_chars):
                    continue
                if due is None or behind > due[0]:
                    due = (behind, channel, end)
            if due is None:
                continue
            _, channel, end = due
            text = channel.judge_text(end)
            self._progress(shield, channel).requested = end
            request = JudgeRequest(
                Stage.OUTPUT, text, self.context.conversation, self.context.policy
            )
            task = asyncio.ensure_future(
                check_one(
                    shield,
                    request,
                    self.context.backends,
                    self.policy_on_error,
                    self.context.on_failure,
                )
            )
            self.running[task] = _Call(shield, channel, end)
            self.calls += 1

    def harvest(self) -> list[tuple[Any, list[Finding]]]:
        """The findings of the calls that completed, per channel; advances ``judged_end``."""
        results: list[tuple[Any, list[Finding]]] = []
        for task in [t for t in self.running if t.done()]:
            call = self.running.pop(task)
            findings = task.result()
            # A redaction cannot be applied to a stream whose earlier text may have left: in a
            # stream a remote "redact" stops the rest like a block.
            findings = [
                replace(f, action=Action.BLOCK) if f.action is Action.REDACT else f
                for f in findings
            ]
            progress = self._progress(call.shield, call.channel)
            progress.passed = max(progress.passed, call.end)
            if self.holding:
                call.channel.judged_end = min(
                    self._progress(s, call.channel).passed for s in self.holding
                )
            results.append((call.channel, findings))
        return results

    def pending(self, channels: Sequence[JudgedChannel]) -> bool:
        """True while a call runs or some channel's end has not been judged by every shield."""
        if self.running:
            return True
        return any(
            self._progress(s, ch).requested < ch.safe_end for s in self.shields for ch in channels
        )

    def cancel(self) -> None:
        for task in self.running:
            task.cancel()
        self.running.clear()


class _Checked(Protocol):
    @property
    def closed(self) -> bool: ...

    @property
    def check_tasks(self) -> set[asyncio.Task[list[Finding]]]: ...


async def upstream_reads(
    content: aiohttp.StreamReader, guard: _Checked
) -> AsyncGenerator[bytes | None, None]:
    """The upstream body read by read (``b""`` at its end), interleaved with ``None`` each time a
    remote check completes — so a verdict releases held text without waiting for the next
    upstream byte. Without remote checks this is a plain read loop."""
    read: asyncio.Future[bytes] | None = None
    ended = False
    try:
        while not guard.closed:
            tasks = guard.check_tasks
            if not tasks:
                if ended:
                    return
                data = await (read if read is not None else content.readany())
                read = None
                ended = not data
                yield data
                continue
            if read is None and not ended:
                read = asyncio.ensure_future(content.readany())
            waiting: set[asyncio.Future[Any]] = set(tasks)
            if read is not None:
                waiting.add(read)
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if read is not None and read in done:
                data = read.result()
                read = None
                ended = not data
                yield data
            if done & tasks:
                yield None
    finally:
        if read is not None and not read.done():
            read.cancel()
