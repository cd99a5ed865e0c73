"""Remote shields: a model's or a service's judgement, asked over the network.

A remote shield judges a whole text with its conversation as context (``JudgeRequest``) and
answers with findings. This module owns what every remote shield shares and that needs no
network code: the spec fields (timeout, retries, ``on_error``, cache, streaming cadence), the
retry loop inside the timeout budget, the verdict cache, and the failure -> finding rule.

The network itself is not here (``shields/`` holds no HTTP code): the caller passes a
``RemoteBackends`` object, which the proxy implements with the ``openai`` client and aiohttp.
Backends raise ``RemoteCallError`` for what went wrong on the wire; shields raise
``RemoteAnswerError`` for an answer they cannot read. Both end in the same place: a shield error,
which blocks unless the spec's (or the policy's) ``on_error`` says ``allow`` — never "safe by
default".
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from shields.base import Action, Finding, Role, Scanner, Shield, Stage
from shields.spec import ShieldSpecBase, StrictModel

__all__ = [
    "CacheSettings",
    "JudgeRequest",
    "RemoteAnswerError",
    "RemoteBackends",
    "RemoteCallError",
    "RemoteShield",
    "RemoteSpec",
    "StreamCheckSettings",
    "VerdictCache",
    "Vote",
    "failure_finding",
    "failure_kind",
    "remote_shields",
]

log = logging.getLogger("shieldgate.shields.remote")

# Waiting between attempts never uses more than this share of what is left of the budget, so
# a retry always has time to be made.
_MAX_WAIT_SHARE = 0.5


class CacheSettings(StrictModel):
    # Entries; 0 turns the cache off. A verdict is kept for ``ttl_seconds``.
    size: int = Field(default=1024, ge=0, le=1_000_000)
    ttl_seconds: float = Field(default=300.0, gt=0, le=86_400)


class StreamCheckSettings(StrictModel):
    # A stream's text is judged every ``every_chars`` new characters and once at its end.
    every_chars: int = Field(default=1000, ge=16, le=1_000_000)
    # after_check: an event leaves once the judge has passed the text it carries (safe, adds
    # latency). immediately: the stream flows; a later unsafe verdict stops the rest (weaker:
    # text before that verdict has been seen by the client).
    release: Literal["after_check", "immediately"] = "after_check"


class RemoteSpec(ShieldSpecBase):
    # The whole budget of one check, retries included.
    timeout: float = Field(default=10.0, gt=0, le=600)
    # Extra attempts after a connection error, a 429 or a 5xx, while the budget lasts.
    retries: int = Field(default=2, ge=0, le=10)
    # What a failed check means; unset: the policy's ``on_error``.
    on_error: Literal["block", "allow"] | None = None
    cache: CacheSettings = CacheSettings()
    stream: StreamCheckSettings = StreamCheckSettings()


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What a remote shield is asked to judge.

    ``text`` is the text under judgement: at the input stage a turn — one or more consecutive
    messages the shield's roles cover, on one side (the assistant's, or the rest: system,
    developer, user, tool), joined by newlines — and at the output stage the reply (one
    choice's text as the client joins it). ``conversation`` is what the model reads before it
    (after input redaction), oldest first: at the input stage the messages the shield covers,
    up to and including the judged turn (its last entries); at the output stage the request's
    whole conversation, system prompts and tool definitions included, and NOT the reply —
    shields that need it as the assistant's turn append ``text`` themselves.
    """

    stage: Stage
    text: str
    conversation: tuple[tuple[Role, str], ...] = ()
    policy: str = ""

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(self.stage.value.encode())
        for role, text in self.conversation:
            h.update(b"\x00" + role.value.encode() + b"\x00")
            h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x01")
        h.update(self.text.encode("utf-8", "surrogatepass"))
        return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Vote:
    """One reason a remote shield gives against the text: a category, a rule, a reason."""

    label: str
    action: Action
    # For ``redact``: the text to put in place of the judged text.
    replacement: str | None = None
    # Reported, never enforced (a judge's category the policy does not enforce).
    monitor: bool = False
    # The part of the judged text the vote is about, as (start, end) offsets into it; unset:
    # all of it (a judge answers about the whole text; a classifier about one window of it).
    span: tuple[int, int] | None = None


class RemoteCallError(Exception):
    """The call failed on the wire. ``retryable``: a connection error, a 429 or a 5xx."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        kind: str = "error",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kind = kind  # bounded: connect, timeout, status_429, status_5xx, status_4xx, ...
        self.retry_after = retry_after


class RemoteAnswerError(Exception):
    """The service answered, but not in a form the shield can read (fails closed)."""


class RemoteBackends(Protocol):
    """The network calls remote shields make; implemented outside ``shields/``."""

    async def chat(self, spec: Any, messages: list[dict[str, str]]) -> str:
        """An OpenAI-compatible chat completion; returns the first choice's message text."""

    async def moderate(self, spec: Any, text: str) -> dict[str, Any]:
        """An OpenAI-compatible ``/moderations`` call; returns the reply as JSON."""

    async def post_json(self, spec: Any, payload: dict[str, Any]) -> Any:
        """POSTs ``payload`` as JSON to the spec's URL; returns the parsed JSON reply."""


class VerdictCache:
    """Bounded LRU of verdicts with a time to live, keyed by a hash of the judged input.

    Only answers are cached, never failures: a judge that was down is asked again.
    """

    def __init__(self, size: int, ttl: float, clock: Callable[[], float] = time.monotonic):
        self._size = size
        self._ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, tuple[Vote, ...]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> tuple[Vote, ...] | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] < self._clock():
            if entry is not None:
                del self._entries[key]
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, key: str, votes: tuple[Vote, ...]) -> None:
        if self._size <= 0:
            return
        self._entries[key] = (self._clock() + self._ttl, votes)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class _NoScanner(Scanner):
    def feed(self, chunk: Any) -> list[Finding]:
        return []


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, RemoteCallError) and exc.retryable


class RemoteShield(Shield):
    """A shield whose verdict comes from a remote service.

    Remote shields are not scanners: the policy keeps them apart from the local shields
    (``CompiledPolicy.remote_shields``), and the proxy calls ``check`` on whole texts — at the
    input stage once per request, at the output stage on the reply (in streams every
    ``stream.every_chars`` characters and at the end).
    """

    remote: ClassVar[bool] = True
    spec: RemoteSpec

    def __init__(self, spec: RemoteSpec) -> None:
        super().__init__(spec)
        self.spec = spec
        self.cache = VerdictCache(spec.cache.size, spec.cache.ttl_seconds)
        # Identical requests judged at the same moment share one call (a client retrying, a
        # burst of the same prompt).
        self._in_flight: dict[str, asyncio.Future[tuple[Vote, ...]]] = {}

    @property
    def max_match(self) -> int:
        return 0  # judged on whole texts; the stream guard holds text for it by other means

    def scanner(self) -> Scanner:
        return _NoScanner()

    def fail_closed(self, policy_on_error: str) -> bool:
        return (self.spec.on_error or policy_on_error) == "block"

    @abstractmethod
    async def judge(self, request: JudgeRequest, backends: RemoteBackends) -> list[Vote]:
        """One attempt: ask the service and read its answer."""

    async def check(self, request: JudgeRequest, backends: RemoteBackends) -> list[Finding]:
        """The findings for ``request``; raises on failure (see ``failure_finding``)."""
        key = f"{self.id}\x00{request.digest()}"
        votes = self.cache.get(key)
        while votes is None:
            shared = self._in_flight.get(key)
            if shared is None:
                votes = await self._call_shared(key, request, backends)
                break
            try:
                votes = await asyncio.shield(shared)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not shared.cancelled() or (task is not None and task.cancelling()):
                    raise
                # The request that made the call went away (its client left): ask again.
                votes = self.cache.get(key)
        return [self._finding(vote, len(request.text)) for vote in votes]

    async def _call_shared(
        self, key: str, request: JudgeRequest, backends: RemoteBackends
    ) -> tuple[Vote, ...]:
        future: asyncio.Future[tuple[Vote, ...]] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            votes = await self._call(request, backends)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # marked as retrieved: waiters, if any, still get it
            raise
        finally:
            self._in_flight.pop(key, None)
        future.set_result(votes)
        self.cache.put(key, votes)
        return votes

    async def _call(self, request: JudgeRequest, backends: RemoteBackends) -> tuple[Vote, ...]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.spec.timeout

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            backoff = wait_exponential(multiplier=0.05, max=2.0)(state)
            if isinstance(exc, RemoteCallError) and exc.retry_after is not None:
                backoff = max(backoff, exc.retry_after)
            return min(backoff, max(deadline - loop.time(), 0.0) * _MAX_WAIT_SHARE)

        async with asyncio.timeout_at(deadline):
            retrying = AsyncRetrying(
                stop=stop_after_attempt(self.spec.retries + 1),
                wait=wait,
                retry=retry_if_exception(_retryable),
                reraise=True,
            )
            async for attempt in retrying:
                with attempt:
                    votes = await self.judge(request, backends)
        return tuple(votes)

    def _finding(self, vote: Vote, length: int) -> Finding:
        # A verdict is about the whole judged text unless the vote names a part of it.
        start, end = vote.span if vote.span is not None else (0, length)
        return Finding(
            shield_id=self.id,
            shield_type=self.type_name,
            label=vote.label,
            action=vote.action,
            start=start,
            end=end,
            placeholder=vote.replacement if vote.replacement is not None else self.spec.placeholder,
            monitor=self.monitor or vote.monitor,
        )


def failure_finding(shield: Shield, exc: BaseException, fail_closed: bool) -> list[Finding]:
    """A failed remote check: a block (fail closed) or nothing (``on_error: allow``).

    Logged with the shield and the kind of failure, never the text.
    """
    kind = failure_kind(exc)
    log.error("shield %s (%s) failed: %s", shield.id, shield.type_name, kind)
    if not fail_closed:
        return []
    return [shield.error_finding()]


def failure_kind(exc: BaseException) -> str:
    """A bounded name for what went wrong (logs and a metrics label)."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, RemoteCallError):
        return exc.kind
    if isinstance(exc, RemoteAnswerError):
        return "bad_answer"
    return type(exc).__name__


def remote_shields(shields: Sequence[Shield]) -> tuple[RemoteShield, ...]:
    return tuple(s for s in shields if isinstance(s, RemoteShield))
