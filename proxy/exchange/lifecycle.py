"""One guarded exchange: a client request carried through its whole lifecycle.

Every endpoint that reaches the model is a *dialect* on this one lifecycle (``Dialect``):

1. the dialect parses the client's request into the chat-completions request the shields read
   and the upstream gets (``ChatRequest``);
2. the input stage: local shields (off the loop for a large body), then the remote ones on what
   the local ones left; a block is answered by the dialect's refusal before anything is sent;
3. a stream takes a stream slot; any other request runs under ``request_timeout``
   (``Deadline``), which a stream answering it takes over once its first byte is sent;
4. the request goes upstream; an error status is relayed with its message checked
   (``relay_error_reply``), a whole JSON reply is checked by the output stage
   (``check_json_reply``) and answered by the dialect, a stream is relayed through the stream
   guard by ``pump`` into what the dialect renders. A dialect whose replies hold no text
   (embeddings: vectors) says so by implementing ``TextlessReplies``: its whole replies are
   relayed without an output stage. A dialect whose upstream answers in legacy completions
   (``choices[].text``) says so by implementing ``ShapedReplies``: its replies are checked, and
   its streams guarded, in that shape.

A request that ends with an assistant message has the model continue it (a prefill, read by
``shields.openai.prefill`` from the chat request as it went upstream, for every dialect): the
output stage reads each choice's content after the prefill's text, whole or streamed.

The policy an exchange runs under is the chosen policy's view for the dialect's endpoint
(``CompiledPolicy.for_endpoint(dialect.route)``): shields scoped to other endpoints take no part.

The exchange records what every request records whatever its dialect: the stages' findings
(log, metrics, audit), their timings, ``shieldgate_verdicts_total`` once per stage decided, the
upstream's timings and failures, the streams in flight and the bytes they hold — each metric
with the dialect's ``route`` as its ``endpoint`` label. A dialect adds only what is its own: its
request's shape, its answers' shape and what it stores.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from proxy.endpoints.chat_request import ChatRequest, conversation_of
from proxy.errors import Overloaded, UpstreamError, UpstreamTimeout, start_response
from proxy.exchange.envelope_check import envelope_findings
from proxy.exchange.header_check import guarded_response_headers
from proxy.exchange.refusal import StreamContext
from proxy.exchange.remote_checks import check_input_remote, check_reply_remote
from proxy.exchange.reply_check import check_error_body, check_reply, reported_error
from proxy.ops.metrics import Metrics
from proxy.serving.off_loop import check_on_loop, scan_on_loop
from proxy.state import (
    INPUT_CACHE,
    METRICS,
    STREAM_SLOTS,
    UPSTREAM,
    choose_policy,
    fingerprint_for,
    record_findings,
    remote_context,
)
from proxy.stream.guard import EndRenderer, GuardState, StreamGuard
from proxy.stream.remote_checks import RemoteContext, upstream_reads
from proxy.stream.sse import SSEDecoder, SSEError
from proxy.upstream.client import host_of, log_failure
from proxy.upstream.http1 import UpstreamReply
from shields import json_codec
from shields.base import Stage, Verdict
from shields.openai.errors import MalformedReply
from shields.openai.input_check import begin_input_check, check_input_texts
from shields.openai.prefill import prefill_of
from shields.openai.text_completion import ReplyShape, check_text_completion
from shields.policy import CompiledPolicy
from shields.verdict import StageOutcome

__all__ = [
    "BeforeUpstream",
    "CheckedReply",
    "Deadline",
    "Dialect",
    "EventRelay",
    "Exchange",
    "GuardedRelay",
    "ShapedReplies",
    "TextlessReplies",
    "UpstreamCall",
]

log = logging.getLogger("shieldgate.proxy")

_READ_CHUNK = 64 * 1024
# 2xx statuses that carry no body (RFC 9110 15.3.5, 15.3.6).
_NO_BODY = frozenset({204, 205})

_Out = TypeVar("_Out")
_Released = TypeVar("_Released", covariant=True)


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    """What goes upstream: the body, the headers and query it goes with, and the upstream path
    (relative to the upstream's base URL)."""

    body: bytes
    headers: dict[str, str]
    query: str = ""
    path: str = "chat/completions"


@dataclass(slots=True)
class CheckedReply:
    """A non-stream completion after the output stage: redactions written into ``completion``;
    ``error`` is the answer to send instead when the upstream reported an error in it."""

    completion: dict[str, Any]
    outcome: StageOutcome
    error: web.Response | None = None


class Dialect(Protocol):
    """What an endpoint adds to the exchange: its request's and its answers' shapes."""

    @property
    def route(self) -> str:
        """Its endpoint's name (``shields.spec.ENDPOINTS``): the policy's view it runs under,
        and the metrics label of its upstream calls."""
        ...

    @property
    def model(self) -> str | None:
        """The model the client named: it may choose the policy."""
        ...

    @property
    def stream(self) -> bool:
        """The client asked for a stream."""
        ...

    @property
    def chat(self) -> ChatRequest:
        """The request the input stage checks and (as checked) goes upstream; set by
        ``prepare``."""
        ...

    async def prepare(self, exchange: Exchange) -> None:
        """Once the policy is chosen, before the input stage: what the dialect must load or
        translate to have its ``chat`` request."""

    def input_checked(self, outcome: StageOutcome) -> None:
        """The input stage has decided (local, then again after the remote shields)."""

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall: ...

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        """A block before any byte was sent: the input, or a whole reply."""
        ...

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        """A whole reply the output stage passed (redactions written into it)."""
        ...

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        """An upstream stream: build the guard (``Exchange.stream_guard``) and ``pump`` it."""
        ...


@runtime_checkable
class TextlessReplies(Protocol):
    """A dialect whose whole replies carry no text for the output stage (embeddings: vectors).

    The exchange hands such a dialect its 2xx non-stream reply as it came, instead of reading
    it as a ``chat.completion`` (``check_json_reply``) — which would refuse it as a reply with
    unknown fields. Its ``answer_reply`` is then never called; errors are relayed as for every
    dialect, and a stream goes to its ``relay_stream``.
    """

    async def answer_unchecked(
        self, exchange: Exchange, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse: ...


@runtime_checkable
class BeforeUpstream(Protocol):
    """A dialect with work of its own between the input stage and the upstream call: the
    Responses API's MCP tools (listing their servers, running the calls a client approved),
    which must not happen for an input the shields blocked, and whose texts the model reads.

    It runs within the request's deadline or stream slot. Its answer, if any, is sent instead
    of calling the upstream (a refusal: something it checked was blocked)."""

    async def before_upstream(self, exchange: Exchange) -> web.StreamResponse | None: ...


@runtime_checkable
class ShapedReplies(Protocol):
    """A dialect whose upstream does not answer in chat completions: ``reply_shape`` says in
    which shape its replies are read (``ReplyShape.TEXT``: legacy completions, each choice's
    text in ``text``). The exchange checks its whole replies (``check_json_reply``) and guards
    its streams (``stream_guard``) in that shape; every other dialect's are chat completions.
    """

    @property
    def reply_shape(self) -> ReplyShape: ...


class GuardedRelay(Protocol[_Released]):
    """The stream guard as a dialect wraps it: upstream reads in, what may be sent out."""

    @property
    def guard(self) -> StreamGuard: ...

    @property
    def closed(self) -> bool: ...

    def feed(self, data: bytes) -> _Released:
        """One network read; may raise ``SSEError`` (the pump fails the stream)."""
        ...

    def checks(self) -> _Released: ...

    def end(self) -> _Released: ...

    def fail(self, message: str) -> _Released: ...


def _caller(request: web.Request) -> bytes:
    """Who is asking, as the input cache tells callers apart: a digest of the request's
    credential (``Authorization``, or Anthropic's ``x-api-key``), never the credential."""
    headers = request.headers
    credential = f"{headers.get('Authorization', '')}\n{headers.get('x-api-key', '')}"
    return hashlib.blake2b(credential.encode("utf-8", "surrogateescape"), digest_size=16).digest()


# Which dialect classes implement which of the protocols above (``_implements``).
_IMPLEMENTED: dict[tuple[type, type], bool] = {}


def _implements(dialect: object, protocol: type) -> bool:
    """``isinstance(dialect, protocol)`` for the runtime-checkable protocols above, worked out
    once per dialect class: Python 3.11 lists a protocol's members again at every such
    ``isinstance`` (10-30 µs here), and a request asked three of them. Dialects implement them
    with class members (methods, properties, class attributes), the same for every instance."""
    key = (type(dialect), protocol)
    known = _IMPLEMENTED.get(key)
    if known is None:
        known = _IMPLEMENTED[key] = isinstance(dialect, protocol)
    return known


class Deadline:
    """A non-stream request's ``request_timeout``, which a relayed stream takes over once its
    response has started (a 504 can no longer be sent then).

    ``asyncio.timeout``'s rules for this one use, without its context manager's two
    coroutines and state machine per request: when the time comes the request's task is
    cancelled, and on the way out (``leave``) that cancellation is the deadline's to turn into
    a timeout only if nothing else cancelled the task meanwhile (``Task.uncancel``)."""

    __slots__ = ("_cancelling", "_expired", "_handle", "_task", "_when", "limit", "until")

    def __init__(self, limit: float) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline needs a task")
        self.limit = limit
        self.until: float | None = None  # when it falls (loop time), once handed over
        self._task = task
        self._cancelling = task.cancelling()
        self._expired = False
        self._when = loop.time() + limit
        self._handle: asyncio.TimerHandle | None = loop.call_at(self._when, self._expire)

    def _expire(self) -> None:
        self._task.cancel()
        self._expired = True
        self._handle = None

    def hand_over(self) -> None:
        """Stops the deadline here; the stream keeps ``until``."""
        if self._expired:
            raise RuntimeError("the deadline has fallen already")
        self.until = self._when
        self._stop()

    def leave(self, exc: BaseException | None) -> bool:
        """The request's work is done, with ``exc`` raised (None: it returned): whether the
        deadline fell and cancelled it, so that ``exc`` is the deadline's timeout."""
        self._stop()
        if not self._expired:
            return False
        self._expired = False
        return self._task.uncancel() <= self._cancelling and type(exc) is asyncio.CancelledError

    def _stop(self) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel()
            self._handle = None

    def message(self) -> str:
        return f"The request took longer than {self.limit:g} s"


class Exchange:
    """One request through the proxy, from its parsed body to the last byte of its answer."""

    def __init__(self, request: web.Request, dialect: Dialect, body_size: int) -> None:
        self.request = request
        self.dialect = dialect
        self.body_size = body_size
        self.app = request.app  # a chain of properties: looked up once
        self.metrics: Metrics = self.app[METRICS]
        chosen = choose_policy(request, model=dialect.model)
        self.policy: CompiledPolicy = chosen.for_endpoint(dialect.route)
        self.endpoint = dialect.route  # the ``endpoint`` label of every metric it records
        self.reply_shape = (
            cast(ShapedReplies, dialect).reply_shape
            if _implements(dialect, ShapedReplies)
            else ReplyShape.CHAT
        )
        self.fingerprint = fingerprint_for(request)
        self.deadline: Deadline | None = None
        # A whole upstream reply once the output stage has checked it.
        self.checked_reply: CheckedReply | None = None

    # -- the lifecycle -----------------------------------------------------------------------

    async def run(self) -> web.StreamResponse:
        await self.dialect.prepare(self)
        outcome = await self._input_stage()
        if outcome.blocked:
            return await self.dialect.refuse(self, Stage.INPUT)
        if self.dialect.stream:
            with self._stream_slot():
                return await self._forward(outcome.redacted)
        limit = self.app[UPSTREAM].settings.request_timeout
        if not limit:
            return await self._forward(outcome.redacted)
        deadline = self.deadline = Deadline(limit)
        try:
            response = await self._forward(outcome.redacted)
        except BaseException as exc:
            # A TimeoutError from within counts as the deadline's too, as it did when this
            # was ``async with asyncio.timeout(limit)`` around the call.
            if deadline.leave(exc) or isinstance(exc, TimeoutError):
                raise UpstreamTimeout(deadline.message()) from None
            raise
        deadline.leave(None)
        return response

    async def _input_stage(self) -> StageOutcome:
        dialect, policy, metrics, endpoint = self.dialect, self.policy, self.metrics, self.endpoint
        started = time.perf_counter()
        cache, chat, size = self.app[INPUT_CACHE], dialect.chat, self.body_size
        # Each caller has a cache of its own: a text another one sent is not answered sooner.
        caller = _caller(self.request)
        if check_on_loop(size, len(chat.texts)):
            # Texts the cache remembers cost a lookup: only a long scan of new text is worth
            # a thread hop (see proxy.serving.off_loop).
            pending = begin_input_check(
                policy, chat, fingerprint=self.fingerprint, cache=cache, partition=caller
            )
            if scan_on_loop(size, pending.to_scan):
                checked = pending.finish()
            else:
                checked = await asyncio.to_thread(pending.finish)
        else:
            checked = await asyncio.to_thread(
                check_input_texts,
                policy,
                chat,
                fingerprint=self.fingerprint,
                cache=cache,
                partition=caller,
            )
        elapsed = time.perf_counter() - started
        metrics.child(metrics.stage_seconds, "input", endpoint).observe(elapsed)
        outcome = checked.outcome
        if checked.remembered:
            metrics.child(metrics.input_cache_hits, endpoint).inc(checked.remembered)
        if checked.scanned:
            metrics.child(metrics.input_cache_misses, endpoint).inc(checked.scanned)
            if checked.evicted:
                metrics.child(metrics.input_cache_evictions, endpoint).inc(checked.evicted)
            metrics.input_cache_bytes.set(cache.bytes)
        record_findings(self.request, Stage.INPUT, outcome.findings, endpoint)
        dialect.input_checked(outcome)
        if policy.input_remote and not outcome.blocked:
            started = time.perf_counter()
            remote = await check_input_remote(policy, dialect.chat, self.remote_context())
            elapsed = time.perf_counter() - started
            metrics.child(metrics.remote_seconds, "input", endpoint).observe(elapsed)
            record_findings(self.request, Stage.INPUT, remote.findings, endpoint)
            outcome = outcome.merge(remote)
            dialect.input_checked(outcome)
        self.record_verdict(Stage.INPUT, outcome.verdict)
        return outcome

    async def _forward(self, redacted: bool) -> web.StreamResponse:
        if _implements(self.dialect, BeforeUpstream):
            answer = await cast(BeforeUpstream, self.dialect).before_upstream(self)
            if answer is not None:
                return answer
        upstream = self.app[UPSTREAM]
        call = self.dialect.upstream_call(self, redacted)
        metrics, endpoint = self.metrics, self.endpoint
        started = time.perf_counter()
        async with upstream.request(
            "POST",
            call.path,
            headers=call.headers,
            body=call.body,
            query=call.query,
            endpoint=endpoint,
        ) as reply:
            metrics.child(metrics.upstream_ttfb, endpoint).observe(time.perf_counter() - started)
            try:
                return await self._answer(reply)
            finally:
                metrics.child(metrics.upstream_seconds, endpoint).observe(
                    time.perf_counter() - started
                )

    async def _answer(self, reply: UpstreamReply) -> web.StreamResponse:
        if reply.status >= 300:
            body = await self.read_upstream_body(reply)
            return relay_error_reply(self.policy, reply.status, self.relayed_headers(reply), body)
        if reply.content_type == "text/event-stream":
            if reply.status in _NO_BODY:
                # A body after a status that forbids one would corrupt the connection.
                raise UpstreamError(
                    f"The upstream sent a stream with HTTP {reply.status}, which has no body"
                )
            return await self.dialect.relay_stream(self, reply)
        body = await self.read_upstream_body(reply)
        if _implements(self.dialect, TextlessReplies):
            return await cast(TextlessReplies, self.dialect).answer_unchecked(self, body, reply)
        checked = self.checked_reply = await self.check_json_reply(body, reply.status)
        if checked.error is not None:
            return checked.error
        if checked.outcome.blocked:
            return await self.dialect.refuse(self, Stage.OUTPUT)
        return await self.dialect.answer_reply(self, checked, body, reply)

    # -- what dialects share -----------------------------------------------------------------

    def passed_reply(
        self, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.Response:
        """A whole reply in the upstream's own dialect that the output shields let through:
        its bytes as they came, or the reply written anew where a redaction changed it."""
        if checked.outcome.redacted:
            body = json_codec.dumps(checked.completion)
        return web.Response(body=body, status=reply.status, headers=self.relayed_headers(reply))

    def relayed_headers(self, reply: UpstreamReply) -> CIMultiDict[str]:
        """The upstream's response headers that go to the client with its reply: the
        end-to-end ones the output shields pass (``proxy.exchange.header_check``)."""
        return guarded_response_headers(self.request, reply.headers, self.endpoint, self.policy)

    def record_verdict(self, stage: Stage, verdict: Verdict) -> None:
        metrics = self.metrics
        # The members themselves, not their ``value``s: they are the same strings.
        metrics.child(metrics.verdicts, stage, self.policy.name, verdict, self.endpoint).inc()

    def remote_context(self) -> RemoteContext:
        conversation = conversation_of(self.dialect.chat)
        return remote_context(self.request, self.policy, conversation, self.endpoint)

    @contextlib.contextmanager
    def _stream_slot(self) -> Iterator[None]:
        """Streams are long-lived: past ``max_concurrent_streams`` a new one is turned away at
        once (503 + Retry-After) instead of piling up behind the others."""
        slots = self.app[STREAM_SLOTS]
        if not slots.acquire():
            self.metrics.rejected.labels("concurrency").inc()
            raise Overloaded("Too many streams in flight; retry shortly", retry_after=1)
        try:
            yield
        finally:
            slots.release()

    async def read_upstream_body(self, reply: UpstreamReply) -> bytes:
        """The whole body of a non-stream upstream reply, up to ``max_upstream_body_bytes``
        (UpstreamError past it, or when the reply breaks off)."""
        limit = self.app[UPSTREAM].settings.max_upstream_body_bytes
        content = reply.content
        parts: list[bytes] = []
        size = 0
        try:
            while True:
                data = await content.read(_READ_CHUNK)
                if not data:
                    break
                size += len(data)
                if size > limit:
                    raise UpstreamError(f"The upstream reply is larger than {limit} bytes")
                parts.append(data)
                if content.at_eof() and content.exception() is None:
                    # The next read would return b"": the usual reply, in one read.
                    break
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise UpstreamError(f"The upstream reply broke off: {type(exc).__name__}") from None
        return b"".join(parts)  # one part: that part itself, not a copy

    async def check_json_reply(self, body: bytes, status: int) -> CheckedReply:
        """Reads and checks a non-stream ``chat.completion`` (local then remote output shields).

        Raises UpstreamError when it cannot be read: a reply the proxy cannot read is a reply
        it cannot check (fail closed).
        """
        policy, metrics, request = self.policy, self.metrics, self.request
        try:
            # A repeated key would be read one way here and maybe another by the client.
            completion = json_codec.loads(body, unique_keys=True)
            if not isinstance(completion, dict):
                raise MalformedReply("the reply is not a JSON object")
            reported = reported_error(policy, completion, status)
            if reported is not None:
                # A success status around an error: answered as the error it is, and none of
                # the reply's other fields (which no shield read) goes with it.
                log.warning("the upstream reported an error in an HTTP %d reply", status)
                metrics.child(metrics.upstream_errors, "bad_reply", self.endpoint).inc()
                error = web.Response(body=reported, status=502, content_type="application/json")
                return CheckedReply(completion, StageOutcome(), error)
            started = time.perf_counter()
            chat, endpoint, shape = self.dialect.chat, self.endpoint, self.reply_shape
            if shape is ReplyShape.TEXT:
                outcome = check_text_completion(
                    policy, completion, n=chat.n, fingerprint=self.fingerprint
                )
            else:
                outcome = check_reply(
                    policy,
                    completion,
                    n=chat.n,
                    tools=chat.tool_names,
                    fingerprint=self.fingerprint,
                    prefill=prefill_of(chat.body),
                )
            if not outcome.blocked:
                self._check_envelope(completion)
            elapsed = time.perf_counter() - started
            metrics.child(metrics.stage_seconds, "output", endpoint).observe(elapsed)
            record_findings(request, Stage.OUTPUT, outcome.findings, endpoint)
            if policy.output_remote and not outcome.blocked:
                started = time.perf_counter()
                remote = await check_reply_remote(
                    policy, completion, self.remote_context(), shape=shape
                )
                elapsed = time.perf_counter() - started
                metrics.child(metrics.remote_seconds, "output", endpoint).observe(elapsed)
                record_findings(request, Stage.OUTPUT, remote.findings, endpoint)
                outcome = outcome.merge(remote)
        except (json_codec.InvalidJSON, MalformedReply) as exc:
            raise UpstreamError(
                f"The upstream sent a reply that cannot be checked: {exc}"
            ) from None
        self.record_verdict(Stage.OUTPUT, outcome.verdict)
        return CheckedReply(completion, outcome)

    def _check_envelope(self, completion: dict[str, Any]) -> None:
        """The strings around the answer (``proxy.exchange.envelope_check``): an enforced
        finding there fails the reply."""
        found = envelope_findings(self.policy, completion)
        if not found:
            return
        record_findings(self.request, Stage.OUTPUT, found, self.endpoint)
        if self.policy.enforcement.enforced(found):
            raise UpstreamError("The upstream sent a reply with flagged text outside its answer")

    def stream_guard(
        self,
        render_end: EndRenderer | None = None,
        context: StreamContext | None = None,
    ) -> StreamGuard:
        """The output stage of a streamed reply, in the dialect's reply shape; ``render_end``:
        how the dialect renders the stream's end (by default, as the chat stream's last
        bytes); ``context``: the one ``render_end`` renders with, if the dialect made it."""
        policy, chat, endpoint = self.policy, self.dialect.chat, self.endpoint
        if context is None:
            context = StreamContext(model=chat.model, n=chat.n, include_usage=chat.include_usage)
        return StreamGuard(
            policy,
            context,
            on_held=self.metrics.child(self.metrics.held_chars, endpoint).observe,
            on_finding=lambda finding: record_findings(
                self.request, Stage.OUTPUT, [finding], endpoint
            ),
            fingerprint=self.fingerprint,
            remote=self.remote_context() if policy.output_remote else None,
            tools=chat.tool_names,
            render_end=render_end,
            shape=self.reply_shape,
            prefill=prefill_of(chat.body),
        )

    async def relay_events(self, reply: UpstreamReply, guard: StreamGuard) -> web.StreamResponse:
        """A stream relayed in the upstream's own dialect (chat completions, legacy
        completions): what the guard releases is the client's stream — the upstream's events
        as they came, unless a redaction rewrote them — ended as ``guard.render_end`` says."""
        relay = EventRelay(guard)
        response = web.StreamResponse(status=reply.status, headers=self.relayed_headers(reply))
        # A non-stream request answered with a stream: its deadline can no longer be a 504 once
        # the response starts, so the stream keeps it and ends in an in-band error past it.
        if self.deadline is not None:
            self.deadline.hand_over()
        await start_response(self.request, response)

        async def write(data: bytes | memoryview) -> bool:
            if data:
                await response.write(data)
            return True

        if await self.pump(reply, relay, write):
            await response.write_eof()
        return response

    async def pump(
        self,
        reply: UpstreamReply,
        relay: GuardedRelay[_Out],
        emit: Callable[[_Out], Awaitable[bool]],
    ) -> bool:
        """Upstream reads -> guard -> ``emit``, one network read at a time, until the stream has
        ended; False when the client left (``emit`` said so, or the connection reset).

        Past a deadline handed over (a non-stream request's), the stream fails. Returning leaves
        the caller's ``async with`` on the upstream response, which closes it if unfinished:
        a block stops the upstream at once.
        """
        guard, metrics, endpoint = relay.guard, self.metrics, self.endpoint
        in_flight = metrics.child(metrics.streams_in_flight, endpoint)
        held_bytes = metrics.child(metrics.held_bytes, endpoint)
        deadline = self.deadline.until if self.deadline is not None else None
        limit = asyncio.timeout_at(deadline)
        held = 0  # this stream's share of the held-bytes gauge
        failure: tuple[str, str] | None = None
        counted = False  # an upstream failure the guard found is counted once
        host = host_of(reply.url)
        in_flight.inc()
        try:
            async with limit, contextlib.aclosing(upstream_reads(reply.content, guard)) as reads:
                async for data in reads:
                    if data is None:  # a remote shield's verdict arrived
                        out = relay.checks()
                    elif data:
                        out = relay.feed(data)
                    else:
                        out = relay.end()
                    if guard.state is GuardState.FAILED and not counted:
                        # The guard failed the stream on what the upstream sent: an invalid
                        # event, or an end before every choice finished.
                        counted = True
                        kind = "broken_stream" if not data else "bad_reply"
                        metrics.child(metrics.upstream_errors, kind, endpoint).inc()
                        log_failure("broken_stream" if not data else "invalid_reply", host)
                    held_bytes.inc(guard.held_bytes - held)
                    held = guard.held_bytes
                    if not await emit(out):
                        return False
                    if relay.closed:
                        break
        except SSEError:
            failure = ("bad_reply", "The upstream sent an oversized stream event")
        except (TimeoutError, aiohttp.ClientError) as exc:
            if deadline is not None and limit.expired():
                assert self.deadline is not None
                failure = ("timeout", self.deadline.message())
            else:
                failure = ("broken_stream", f"The upstream stream broke off: {type(exc).__name__}")
        except ConnectionResetError:
            log.info("client disconnected mid-stream")
            return False
        finally:
            held_bytes.dec(held)
            in_flight.dec()
            guard.cancel_checks()
        if failure is not None:
            kind, message = failure
            metrics.child(metrics.upstream_errors, kind, endpoint).inc()
            log_failure("invalid_reply" if kind == "bad_reply" else kind, host)
            try:
                if not await emit(relay.fail(message)):
                    return False
            except ConnectionResetError:
                log.info("client disconnected mid-stream")
                return False
        verdict = guard.verdict
        if verdict is not None:
            self.record_verdict(Stage.OUTPUT, verdict)
        return True


class EventRelay:
    """The guard as ``pump`` drives it when its released bytes are the client's stream itself
    (``Exchange.relay_events``): each network read framed and fed, the end as rendered."""

    def __init__(self, guard: StreamGuard) -> None:
        self._guard = guard
        self._decoder = SSEDecoder()

    @property
    def guard(self) -> StreamGuard:
        return self._guard

    @property
    def closed(self) -> bool:
        return self._guard.closed

    def feed(self, data: bytes) -> bytes | memoryview:
        return self._guard.feed_read(self._decoder, data)

    def checks(self) -> bytes:
        return self._guard.collect_checks()

    def end(self) -> bytes:
        return self._guard.end(truncated=bool(self._decoder.finish()))

    def fail(self, message: str) -> bytes:
        return self._guard.fail(message)


def relay_error_reply(
    policy: CompiledPolicy, status: int, headers: CIMultiDict[str], body: bytes
) -> web.Response:
    """An upstream error status keeps its status and shape (the client's SDK maps them to its
    exceptions); its message is upstream text, checked by the output shields like a reply."""
    checked = check_error_body(policy, body, status)
    if checked is not None:
        headers.popall("Content-Type", None)
        return web.Response(
            body=checked, status=status, headers=headers, content_type="application/json"
        )
    return web.Response(body=body, status=status, headers=headers)
