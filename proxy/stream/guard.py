"""The stream guard: relays an upstream chat-completions stream so that nothing blocked leaks.

Every upstream event enters a FIFO queue, remembering which text channels it carries and at
which offsets (one channel per choice and field: content, reasoning, refusal, each tool call's
arguments by index). Each channel feeds its new text to the output shields' scanners. An event
leaves once every channel it touches is *safe* past the text it carries — scanned at least
``holdback_chars`` further — and events leave strictly in order. A block discards the queue and
ends the stream with the refusal; a redaction rewrites queued events before they leave.

Side channels: a choice's ``logprobs`` repeat its tokens, and ``audio.data`` speaks its
transcript. Once a redaction has touched any text channel of a choice, every event of that
choice that leaves afterwards and carries non-null ``logprobs`` leaves with them null (the event
re-encoded), and, once the redaction was in the choice's audio transcript, with ``audio.data``
empty. Events that left before the redaction was found carried none of its text (hold-back),
and an honest server's logprobs carry only their own event's tokens.

Scanning is batched by network read: ``feed`` only buffers an event's text, and ``flush`` —
called by the handler after the events of one read — scans every channel that got text. A
fast upstream packs hundreds of tiny deltas into one read, so they cost one scan; a slow one
sends a delta per read, which is then scanned (and released, or blocked) at once.

Allowed events leave as the exact bytes the upstream sent, but for what the shields do not
read and a client may: a comment line leaves empty, and ``id``, ``event``, ``retry`` and unknown
fields not at all (``proxy.stream.sse.data_only``). The guard does no I/O: the handler
feeds it events and writes what it returns, which keeps this logic testable event by event.

The stream is a chat-completions stream by default; with ``shape=ReplyShape.TEXT`` it is a
legacy completions stream (``/v1/completions``), whose choices carry their text in ``text``
(one channel per choice, ``shields.openai.text_completion``) instead of a delta. Everything
else — queue, release rule, redaction rewrite, side channels, runs — is the same.

A request that ends with an assistant message has the model continue it (a *prefill*,
``shields.openai.prefill``): each choice's content channel then starts with the prefill's text,
scanned as text already released and never emitted, so a phrase split between the prefill and
the reply is found before the reply's part of it leaves. Its offsets count the prefill
(``_Channel.base``); findings wholly inside it are the input stage's and are dropped.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from proxy.errors import error_body
from proxy.exchange.envelope_check import envelope_strings
from proxy.exchange.refusal import StreamContext, content_filter_error, refusal_stream, stream_error
from proxy.stream.remote_checks import RemoteContext, RemoteStreamChecks
from proxy.stream.runs import EventRun, EventTemplate, learn_template
from proxy.stream.sse import SSEDecoder, SSEEvent, data_only, encode_data
from shields import json_codec
from shields.base import Action, Finding, Verdict
from shields.json_escapes import JsonEscapedScan
from shields.openai.channels import CallChannel, Channel, FieldChannel, is_json_text
from shields.openai.errors import MalformedReply
from shields.openai.prefill import PREFILL_FIELD, reply_findings
from shields.openai.reply import READERS as _READERS
from shields.openai.reply import TEXT_KEYS as _TEXT_KEYS
from shields.openai.reply import (
    check_choice_keys,
    check_message_key,
    choice_message,
    reply_fields,
)
from shields.openai.reply_check import name_shields, withhold_side_channels
from shields.openai.stream_indices import StreamIndices
from shields.openai.text_completion import TEXT_FIELD, ReplyShape, text_choice_field
from shields.policy import CompiledPolicy
from shields.scan import RedactionSpan, TextScan, check_text, merge_redactions, redact

__all__ = ["EndRenderer", "GuardState", "StreamEnd", "StreamGuard", "chat_stream_end"]

log = logging.getLogger("shieldgate.stream")

_DONE_DATA = b"[DONE]"
# The channels of a choice's answer text (a chat delta's content, a completion's text): a
# refusal after some of it was sent is set apart from it (``StreamEnd.content_sent``).
_ANSWER_FIELDS = frozenset({"content", TEXT_FIELD})
# Delta keys whose calls carry a name (``StreamIndices.names``).
_NAMED = frozenset({"tool_calls", "function_call"})
_MAX_KEPT_FINDINGS = 1000
# Text buffered before a scan even without flush(): bounds memory for one enormous read.
_MAX_UNSCANNED_CHARS = 256 * 1024
_NO_TASKS: set[asyncio.Task[list[Finding]]] = set()
# Times a stream may learn the shape of its events anew (``proxy/stream/runs.py``): an upstream
# whose events all differ (a per-event nonce) stops costing the attempts after a few.
_MAX_TEMPLATES = 8
# Envelope strings a stream remembers as passed: its id, model and keys, and room to spare.
_MAX_ENVELOPE_STRINGS = 1024
# A read shorter than this many events is taken event by event: a run's fixed cost (a few
# C calls and objects) exceeds the per-event path's below ~4 events.
_RUN_EVENTS = 4
# Until the shape is learned, a read is framed this much at a time first: a fast upstream's
# first read holds thousands of events, and the shape is learned from one of the first few.
_LEARNING_BYTES = 4096


class GuardState(enum.Enum):
    OPEN = "open"
    DONE = "done"  # the upstream finished and everything was released
    BLOCKED = "blocked"  # a shield blocked: refusal sent
    FAILED = "failed"  # the upstream misbehaved: error sent


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """How a guarded stream ended, for a dialect to render (``EndRenderer``).

    ``DONE``: everything was released; ``done_raw`` is the upstream's ``[DONE]`` event as it
    came (empty when the upstream ended without one). ``BLOCKED``: a shield blocked; nothing
    held was released, and ``content_sent`` are the choices some of whose content had already
    left (a refusal there is set apart from it). ``FAILED``: the upstream misbehaved or the
    guard could not go on; ``message`` is the proxy's own words, never upstream text.
    """

    state: GuardState
    message: str = ""
    content_sent: frozenset[int] = frozenset()
    done_raw: bytes = b""


# What a dialect sends after the released events once the stream has ended.
EndRenderer = Callable[[StreamEnd], bytes]


def chat_stream_end(policy: CompiledPolicy, context: StreamContext) -> EndRenderer:
    """The chat-completions stream's last bytes: ``[DONE]`` as it came, the policy's refusal
    (a refusal stream, or an in-band ``content_filter`` error), or an in-band error."""
    refusal = policy.spec.refusal

    def render(end: StreamEnd) -> bytes:
        if end.state is GuardState.DONE:
            return end.done_raw
        if end.state is GuardState.BLOCKED:
            if refusal.style == "error":
                return stream_error(content_filter_error(refusal.message))
            return refusal_stream(refusal.message, context, separated=end.content_sent)
        return stream_error(error_body(end.message, type="upstream_error", code="upstream_error"))

    return render


@dataclass(slots=True, eq=False)
class _Channel:
    key: Channel
    scan: TextScan | JsonEscapedScan
    received: int = 0  # characters fed so far
    safe_end: int = 0  # no later finding can touch a character before this offset
    pending: list[str] = field(default_factory=list)  # fed, not yet scanned
    choice: int = 0  # the choice index the channel belongs to
    audio: bool = False  # the channel is the choice's audio transcript
    redactions: list[Finding] = field(default_factory=list)
    spans: list[RedactionSpan] = field(default_factory=list)
    # Remote shields only: the whole text so far, and how far the holding ones have passed it.
    texts: list[str] | None = None
    judged_end: int = 0
    # The prefill's length on a content channel that continues one: text scanned before the
    # reply's first character, never emitted (``StreamGuard._seed``).
    base: int = 0

    def judge_text(self, end: int) -> str:
        assert self.texts is not None
        text = "".join(self.texts)
        self.texts[:] = [text]
        return redact(text[:end], 0, self.spans)


@dataclass(slots=True)
class _Queued:
    raw: bytes | memoryview  # a memoryview only for a run (``EventRun.raw``)
    # The event's JSON, kept as bytes: parsed again only to redact (a parsed chunk is ~5x the
    # size of its bytes, and a stream holds a window of them).
    data: bytes | None = None
    segments: list[tuple[_Channel, int, int]] = field(default_factory=list)
    run: EventRun | None = None  # a run of look-alike events, released in parts
    # The choices whose ``logprobs`` or ``audio`` the event carries: withheld once a
    # redaction touched the choice (``_render``).
    side: tuple[int, ...] = ()
    # The calls whose name this event brings: it waits until each is decided
    # (``StreamIndices.undecided``), so a name's first piece never leaves alone.
    names: tuple[CallChannel, ...] = ()


FindingSink = Callable[[Finding], None]


class _UpstreamReported(Exception):
    """The upstream sent an in-band ``{"error": ...}`` event."""


class StreamGuard:
    """Feed it upstream events in order; write what it returns; stop when ``closed``."""

    def __init__(
        self,
        policy: CompiledPolicy,
        context: StreamContext,
        *,
        on_finding: FindingSink | None = None,
        on_held: Callable[[int], None] | None = None,
        max_held_bytes: int = 16 * 1024 * 1024,
        fingerprint: Callable[[str], str] | None = None,
        remote: RemoteContext | None = None,
        adaptive_holdback: bool = True,
        tools: frozenset[str] | None = None,
        render_end: EndRenderer | None = None,
        shape: ReplyShape = ReplyShape.CHAT,
        prefill: str = "",
    ) -> None:
        self._policy = policy
        # The assistant text each choice's content continues (a legacy completion has none).
        self._prefill = "" if shape is ReplyShape.TEXT else prefill
        # A legacy completions stream: each choice's text is its ``text`` (``_read_text``).
        self._text = shape is ReplyShape.TEXT
        self._chunk_texts = _text_chunk_texts if self._text else _chunk_texts
        # The dialect's rendering of the end; by default the chat stream's own. A dialect that
        # renders the typed ``ending`` itself sets a renderer of nothing.
        self.render_end = render_end or chat_stream_end(policy, context)
        self.ending: StreamEnd | None = None
        self._rule = policy.enforcement
        self._context = context
        self._shields = policy.output_shields
        self._checks: RemoteStreamChecks | None = None
        if policy.output_remote:
            if remote is None:
                raise ValueError("a policy with remote output shields needs a RemoteContext")
            self._checks = RemoteStreamChecks(
                policy.output_remote, remote, policy_on_error=policy.spec.on_error
            )
        self._scanning = bool(self._shields) or self._checks is not None
        # Hold back only where a finding can change the reply: an enforcing policy.
        self._holding = policy.enforcing and (
            bool(self._shields) or (self._checks is not None and self._checks.holds)
        )
        self._judging = policy.enforcing and self._checks is not None and self._checks.holds
        # The upstream has finished; the last remote verdicts are awaited before the end.
        self._ending = False
        self._done_raw = b""
        self._holdback = policy.holdback
        # Release up to every scanner's open candidate (``TextScan``'s adaptive rule), with
        # ``holdback_chars`` as the bound; False: the fixed window (benchmarks compare them).
        self._adaptive = adaptive_holdback
        self._channels: dict[Channel, _Channel] = {}
        # The channels of each choice's text fields by field name: the per-token path finds
        # its channel without building a key (``_read_chunk``).
        self._fields: list[dict[str, _Channel]] = [{} for _ in context.choices]
        self._queue: deque[_Queued] = deque()
        self._held_bytes = 0
        self._max_held_bytes = max_held_bytes
        self._on_finding = on_finding
        # A finding with the channel it is on, for a dialect that records some channels'
        # findings itself (the Responses API names an MCP call's arguments by their hop). It
        # returns True when it recorded the finding; ``on_finding`` is then not told.
        self.on_channel_finding: Callable[[Channel, Finding], bool] | None = None
        # Told, once per scan that released events, how many scanned characters stay held.
        self._on_held = on_held
        self._fingerprint = fingerprint
        self._finished_choices: set[int] = set()
        # The request's ``n``: a context starts with one choice per choice asked for.
        # ``tools``: the names the request declared; a call to another fails the stream.
        self._indices = StreamIndices(len(context.choices), tools)
        # Choices a redaction touched (any channel), and those whose audio transcript it did.
        self._redacted_choices: set[int] = set()
        self._muted_audio: set[int] = set()
        self._observed = False
        self._unscanned: list[_Channel] = []  # channels with text waiting for flush()
        self._decided = False  # a held name was decided since the last flush()
        self._template: EventTemplate | None = None
        # Envelope strings this stream's events passed (``_check_envelope``), and the shields
        # that read them (not ``length``: an envelope is no answer text).
        self._envelope_passed: set[str] = {""}
        self._envelope_shields = name_shields(self._shields)
        self._templates_left = _MAX_TEMPLATES
        self.state = GuardState.OPEN
        self.findings: list[Finding] = []

    @property
    def closed(self) -> bool:
        return self.state is not GuardState.OPEN

    @property
    def blocked(self) -> bool:
        # A method, not an inline comparison: scanning changes ``state`` behind the caller's back.
        return self.state is GuardState.BLOCKED

    @property
    def verdict(self) -> Verdict | None:
        """The output stage's verdict once the stream has ended (None while open, or when it
        failed: a failure is an error, not a verdict)."""
        if self.state is GuardState.BLOCKED:
            return Verdict.BLOCK
        if self.state is not GuardState.DONE:
            return None
        return Verdict.REDACT if self._redacted_choices else Verdict.ALLOW

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    @property
    def check_tasks(self) -> set[asyncio.Task[list[Finding]]]:
        """Remote checks in flight: the handler waits on them beside the upstream."""
        checks = self._checks
        return checks.tasks if checks is not None and checks.running else _NO_TASKS

    @property
    def template(self) -> EventTemplate | None:
        """The shape of this stream's text events once learned: the handler passes it to
        ``SSEDecoder.feed_runs``, which then hands whole runs of them to ``feed``."""
        return self._template

    @property
    def remote_calls(self) -> int:
        return self._checks.calls if self._checks is not None else 0

    # -- events in ---------------------------------------------------------------------------

    def feed(self, event: SSEEvent | EventRun) -> bytes:
        if self.state is not GuardState.OPEN or self._ending:
            return b""
        if type(event) is EventRun:
            return bytes(self._feed_run(event))
        assert type(event) is SSEEvent
        data = event.data
        if not self._scanning:
            if data is not None and len(data) < 16 and data.strip() == _DONE_DATA:
                return self._finish(event.raw)
            if data is not None and self._template is None and self._templates_left:
                self._learn_unscanned(event.raw, data)
            return event.raw
        raw = data_only(event.raw)
        if raw is not event.raw:  # comments' text, id, event...: read by no shield
            event = SSEEvent(raw, data, event.event)
        if data is not None and len(data) < 16 and data.strip() == _DONE_DATA:
            return self._finish(event.raw)
        item = _Queued(event.raw)
        if data is not None:
            try:
                self._read_chunk(data, item)
            except MalformedReply as exc:
                return self.fail(f"The upstream sent an invalid stream event: {exc}")
            except _UpstreamReported:
                return self._release() + self.fail("The upstream reported an error mid-stream")
            if len(item.segments) == 1 and self._templates_left:
                self._check_template(event.raw, data, item.side, *item.segments[0])
        if self.blocked:
            return self._refusal(held=item)
        if not self._holding:
            return event.raw
        queue = self._queue
        if not queue and not item.segments and not item.names:
            # Nothing ahead of it and no text of its own: nothing to hold, but its logprobs
            # or audio may belong to a redacted choice.
            return bytes(self._render(item)) if item.side else event.raw
        queue.append(item)
        self._held_bytes += len(item.raw)
        if self._held_bytes > self._max_held_bytes:
            return self.fail("The upstream stream holds too much unreleasable data")
        return b""

    def _feed_run(self, run: EventRun) -> bytes | memoryview:
        if not self._scanning:
            return run.raw
        if not self._queue and not run.template.side_choices:
            # Text-less events with nothing held before them leave at once on the per-event
            # path, even when a later event of the run blocks: so they do here.
            parts = run.textless_head()
            if parts is not None:
                head, rest = parts
                return bytes(head.raw) + bytes(self._feed_run(rest))
        item = _Queued(run.raw, run=run, side=run.template.side_choices)
        # A run continues its call: a name its first event brought is decided.
        self._decided |= self._indices.decide(run.template.channel)
        if run.text:
            self._feed_text(run.template.channel, run.text, item)
        if self.blocked:
            return self._refusal(held=item)
        if not self._holding:
            return run.raw
        if not self._queue and not item.segments:
            return self._render(item) if item.side else run.raw
        self._queue.append(item)
        self._held_bytes += len(run.raw)
        if self._held_bytes > self._max_held_bytes:
            return self.fail("The upstream stream holds too much unreleasable data")
        return b""

    def _learn_unscanned(self, raw: bytes, data: bytes) -> None:
        # Nothing to scan, but runs still spare the per-event framing: learn the shape from
        # the first event with one text.
        try:
            texts = self._chunk_texts(json_codec.loads(data, unique_keys=True))
        except (json_codec.InvalidJSON, MalformedReply):
            return
        if len(texts) == 1:
            self._templates_left -= 1
            channel, text = texts[0]
            self._template = learn_template(raw, data, channel, text, self._chunk_texts)

    def _check_template(
        self,
        raw: bytes,
        data: bytes,
        side: tuple[int, ...],
        channel: _Channel,
        start: int,
        end: int,
    ) -> None:
        """Learns the shape of a one-text event, or forgets a learned shape it does not fit."""
        template = self._template
        if template is not None:
            if raw.startswith(template.head) and raw.endswith(template.tail):
                return  # it fits: it only came outside a run
            self._template = None  # the events changed shape (say, a new timestamp)
        pending = channel.pending
        if not pending or len(pending[-1]) != end - start:
            return  # its text was scanned already (an enormous read): try another event
        self._templates_left -= 1
        self._template = learn_template(
            raw, data, channel.key, pending[-1], self._chunk_texts, side_choices=side
        )

    def call_name(self, channel: Channel) -> str | None:
        """The name of the tool call whose arguments are on ``channel``, once it came."""
        return self._indices.name_of(channel)

    def feed_read(self, decoder: SSEDecoder, data: bytes) -> bytes | memoryview:
        """One network read: framed by ``decoder`` (in runs once the events' shape is known),
        fed, and flushed; returns what may leave. Raises ``SSEError`` from the decoder."""
        out: list[bytes | memoryview] = []
        if self._template is None and self._templates_left and len(data) > _LEARNING_BYTES:
            out += [self.feed(event) for event in decoder.feed(data[:_LEARNING_BYTES])]
            data = data[_LEARNING_BYTES:]
        template = self._template
        if template is not None and len(data) < _RUN_EVENTS * template.fixed_bytes:
            template = None  # a read of a few events (a model's pace): the per-event path
        for event in decoder.feed_runs(data, template):
            if type(event) is EventRun:
                out.append(self._feed_run(event))
            else:
                assert type(event) is SSEEvent
                out.append(self.feed(event))
        self._flush_into(out)
        parts = [part for part in out if part]
        # Usually one part, a view of the read, holds all its events: not copied once more.
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def flush(self) -> bytes:
        """Scans the text fed since the last flush; returns the events that may now leave."""
        out: list[bytes | memoryview] = []
        self._flush_into(out)
        return b"".join(out)

    def _flush_into(self, out: list[bytes | memoryview]) -> None:
        if self.state is not GuardState.OPEN or not (self._unscanned or self._decided):
            return
        self._decided = False
        channels, self._unscanned = self._unscanned, []
        for channel in channels:
            self._scan(channel)
        if self.blocked:
            out.append(self._refusal())
            return
        if self._checks is not None:
            self._checks.schedule(list(self._channels.values()), final=False)
        if self._holding:
            parts = len(out)
            self._release_into(out)
            if self._on_held is not None and len(out) > parts:
                self._on_held(self._held_chars())

    def _held_chars(self) -> int:
        """Characters scanned but still held on the channel of the first event held."""
        if not self._queue:
            return 0
        return max((c.received - start for c, start, _ in self._queue[0].segments), default=0)

    def collect_checks(self) -> bytes:
        """Applies the remote verdicts that arrived; returns what may now leave."""
        checks = self._checks
        if checks is None or self.state is not GuardState.OPEN:
            return b""
        for channel, findings in checks.harvest():
            if findings:
                self._handle(channel, findings)
        if self.blocked:
            return self._refusal()
        channels = list(self._channels.values())
        checks.schedule(channels, final=self._ending)
        if self._ending and not checks.pending(channels):
            released = self._release()
            return released + self._ended(StreamEnd(GuardState.DONE, done_raw=self._done_raw))
        return self._release() if self._holding else b""

    def end(self, *, truncated: bool = False) -> bytes:
        """The upstream response ended (EOF). ``truncated``: it stopped mid-event."""
        if self.closed or self._ending:
            return b""
        choices = self._context.choices
        if not truncated and choices and choices <= self._finished_choices:
            # Every choice said why it stopped; some servers then omit [DONE].
            return self._finish(b"")
        return self.fail("The upstream stream ended before it was complete")

    def fail(self, message: str) -> bytes:
        """Fail closed: nothing still held is released; the client gets an in-band error."""
        if self.closed:
            return b""
        log.warning("failing stream closed: %s", message)
        self._discard()
        return self._ended(StreamEnd(GuardState.FAILED, message=message))

    # -- internals ---------------------------------------------------------------------------

    def _read_chunk(self, data: bytes, item: _Queued) -> None:
        try:
            # A repeated key would be read one way here and maybe another by the client; a
            # run of events (sse_runs) has the shape of one event read here.
            chunk = json_codec.loads(data, unique_keys=True)
        except json_codec.DuplicateKey:
            raise MalformedReply("an event has the same key twice") from None
        except json_codec.InvalidJSON:
            raise MalformedReply("data is not valid JSON") from None
        if not isinstance(chunk, dict):
            raise MalformedReply("data is not a JSON object")
        item.data = data
        if not self._observed:
            self._observed = True
            self._context.observe(chunk)
        if chunk.get("error") is not None:
            # An in-band error's message is upstream text the shields have not seen, and
            # whatever comes beside it (``choices`` too) belongs to an error: the stream ends
            # with the proxy's own error instead.
            raise _UpstreamReported()
        self._check_envelope(chunk, item.raw)
        choices = chunk.get("choices")
        if choices is None:
            return  # usage chunk, or a field we do not know: no text
        if not isinstance(choices, list):
            raise MalformedReply("`choices` is not a list")
        indices = self._indices
        # One event naming a choice twice: a client takes a first chunk's choices by position.
        named: set[int] | None = set() if len(choices) > 1 else None
        text_shape = self._text
        for choice in choices:
            if type(choice) is not dict:
                raise MalformedReply("a choice is not an object")
            if text_shape:
                text_field = text_choice_field(choice)  # keys, an integer index, its text
                index = choice["index"]
            else:
                check_choice_keys(choice)
                index = choice.get("index", 0)
            # Inline, the common case: an int among the choices open. Anything else must be
            # the next choice to open (``StreamIndices``), or the stream fails closed.
            if type(index) is not int or not 0 <= index < indices.choices:
                indices.open_choice(index)
            if named is not None:
                if index in named:
                    raise MalformedReply("an event names one choice `index` twice")
                named.add(index)
            if choice.get("finish_reason") is not None:
                self._finished_choices.add(index)
            if text_shape:
                if choice.get("logprobs") is not None:
                    item.side += (index,)
                if text_field is not None:
                    channel = self._fields[index].get(TEXT_FIELD)
                    if channel is None:
                        channel = self._open_channel(text_field.channel)
                    self._feed(channel, text_field.text, item)
                continue
            if "message" in choice or "text" in choice:
                choice_message(choice, stream=True)  # raises on text outside the delta
            delta = choice.get("delta")
            if choice.get("logprobs") is not None or (
                type(delta) is dict and delta.get("audio") is not None
            ):
                item.side += (index,)
            if type(delta) is not dict:
                if delta is not None:
                    raise MalformedReply("a choice's delta is not an object")
                continue
            for key, value in delta.items():
                if type(value) is str and key in _TEXT_KEYS:
                    # The common case, once per streamed token: no generator, no TextField,
                    # no channel key built.
                    if value:
                        channel = self._fields[index].get(key)
                        if channel is None:
                            channel = self._open_channel(FieldChannel(index, key))
                        self._feed(channel, value, item)
                elif key not in _READERS:
                    check_message_key(key, value)  # the role, or no text a client could read
                elif value is not None:
                    # Tool calls, content parts and wrong types take the general reader. It
                    # yields fields in the delta's key order, which _render relies on.
                    fields = reply_fields({key: value}, index, stream=True, indices=indices)
                    for text_field in fields:
                        self._feed_text(text_field.channel, text_field.text, item)
                    if key in _NAMED:
                        names, decided = indices.names(key, value, index)
                        self._decided |= decided
                        if names:
                            item.names += tuple(call for call, _ in names)
                            self._check_names([name for _, name in names])

    def _check_envelope(self, chunk: dict[str, Any], raw: bytes | memoryview) -> None:
        """An event's envelope (``proxy.exchange.envelope_check``: its id, model, a choice's
        finish reason, keys an upstream adds...) through the output shields: an enforced
        finding fails the stream. An event of the learned shape (the template's bytes around
        one valid string body: ``EventTemplate.holds``) has the envelope of the event it was
        learned from, read then; the strings this stream's events repeat (its id, its
        model) are read once."""
        if not self._envelope_shields:
            return
        template = self._template
        if template is not None and template.holds(raw if type(raw) is bytes else bytes(raw)):
            return
        passed = self._envelope_passed
        new = [text for text in dict.fromkeys(envelope_strings(chunk)) if text not in passed]
        if not new:
            return
        found = check_text(
            self._envelope_shields, "\n".join(new), fail_closed=self._rule.fail_closed
        )
        if not found:
            if len(passed) < _MAX_ENVELOPE_STRINGS:
                passed.update(new)
            return
        if self._on_finding is not None:
            for finding in found:
                self._on_finding(finding)
        if self._rule.enforced(found):
            raise MalformedReply("an event carries flagged text outside its answer")

    def _check_names(self, names: list[str]) -> None:
        """Tool-call names, each whole as the client now holds it: a name comes whole in its
        call's first delta, so it is checked at once rather than held as a channel that never
        ends. A redaction in a name blocks (a renamed call is no tool the client has); the
        remote shields judge the calls' arguments, not their names."""
        for name in names:
            findings = check_text(
                name_shields(self._shields),
                name,
                fail_closed=self._rule.fail_closed,
                fingerprint=self._fingerprint,
            )
            for finding in findings:
                if len(self.findings) < _MAX_KEPT_FINDINGS:
                    self.findings.append(finding)
                if self._on_finding is not None:
                    self._on_finding(finding)
                if self._rule.counts(finding):
                    # A redaction in a name blocks too: a renamed call is no tool the client has.
                    self.state = GuardState.BLOCKED

    def _feed_text(self, key: Channel, text: str, item: _Queued) -> None:
        channel = self._channels.get(key)
        if channel is None:
            channel = self._open_channel(key)
        self._feed(channel, text, item)

    def _feed(self, channel: _Channel, text: str, item: _Queued) -> None:
        # Runs once per streamed token: only bookkeeping here, the scanning is in flush().
        start = channel.received
        end = channel.received = start + len(text)
        pending = channel.pending
        if not pending:
            self._unscanned.append(channel)
        pending.append(text)
        item.segments.append((channel, start, end))
        if end - channel.scan.received > _MAX_UNSCANNED_CHARS:
            self._scan(channel)  # one enormous read: do not buffer it all

    def _open_channel(self, key: Channel) -> _Channel:
        text_scan = TextScan(
            self._shields,
            holdback=self._holdback,
            adaptive=self._adaptive,
            fail_closed=self._rule.fail_closed,
            fingerprint=self._fingerprint,
        )
        scan = JsonEscapedScan(text_scan) if is_json_text(key) else text_scan
        channel = _Channel(key, scan, choice=key.choice, audio=key.field == "audio")
        self._channels[key] = channel
        if type(key) is FieldChannel:
            self._fields[key.choice][key.field] = channel
        if self._checks is not None:
            channel.texts = []
        if self._prefill and type(key) is FieldChannel and key.field == PREFILL_FIELD:
            self._seed(channel, self._prefill)
        return channel

    def _seed(self, channel: _Channel, prefill: str) -> None:
        """Starts a content channel with the prefill its choice continues: scanned, as if it
        had been released, so the reply's first characters are read after it. Remote judges
        read it too (their text and the channel's offsets stay one)."""
        channel.base = channel.received = len(prefill)
        if channel.texts is not None:
            channel.texts.append(prefill)
        findings = channel.scan.feed(prefill)
        if findings:
            self._handle(channel, findings)
        channel.safe_end = channel.scan.safe_end

    def _scan(self, channel: _Channel) -> None:
        if not channel.pending:
            return
        text = "".join(channel.pending)
        channel.pending.clear()
        if channel.texts is not None:
            channel.texts.append(text)
        scan = channel.scan
        findings = scan.feed(text)
        if findings:
            self._handle(channel, findings)
        channel.safe_end = scan.safe_end

    def _handle(self, channel: _Channel, findings: list[Finding]) -> None:
        hook = self.on_channel_finding
        base = channel.base
        if base:
            # After a prefill: only what runs into the reply is the reply's, and it is told in
            # the reply's offsets; its redaction starts at the reply's first character.
            findings = reply_findings(findings, base)
        for finding in findings:
            if len(self.findings) < _MAX_KEPT_FINDINGS:
                self.findings.append(finding)
            if (hook is None or not hook(channel.key, finding)) and self._on_finding is not None:
                self._on_finding(finding)
            if not self._rule.counts(finding):
                continue
            if finding.action is Action.BLOCK:
                self.state = GuardState.BLOCKED
            else:
                if base:
                    finding = replace(finding, start=finding.start + base, end=finding.end + base)
                channel.redactions.append(finding)
                channel.spans = merge_redactions(channel.redactions)
                self._redacted_choices.add(channel.choice)
                if channel.audio:
                    self._muted_audio.add(channel.choice)

    def _release(self) -> bytes:
        out: list[bytes | memoryview] = []
        self._release_into(out)
        return b"".join(out)

    def _release_into(self, out: list[bytes | memoryview]) -> None:
        queue = self._queue
        judging = self._judging
        undecided = self._indices.undecided
        while queue:
            item = queue[0]
            if item.names and not undecided.isdisjoint(item.names):
                return
            for channel, start, end in item.segments:
                if end > channel.safe_end or (judging and end > channel.judged_end):
                    if item.run is not None:
                        out.append(self._release_part(item, channel, start, end))
                    return
            queue.popleft()
            self._held_bytes -= len(item.raw)
            out.append(self._render(item))

    def _release_part(
        self, item: _Queued, channel: _Channel, start: int, end: int
    ) -> bytes | memoryview:
        """Releases the events at the front of a run that are safe; the rest stays queued."""
        assert item.run is not None
        limit = channel.safe_end
        if self._judging and channel.judged_end < limit:
            limit = channel.judged_end
        parts = item.run.split(limit - start)
        if parts is None:
            return b""
        front, rest = parts
        middle = start + len(front.text)
        item.raw, item.run, item.segments = rest.raw, rest, [(channel, middle, end)]
        self._held_bytes -= len(front.raw)
        return self._render(_Queued(front.raw, None, [(channel, start, middle)], front, item.side))

    def _render(self, item: _Queued) -> bytes | memoryview:
        """The event's bytes as received, unless a redaction overlaps the text it carries or
        it carries the ``logprobs`` or ``audio`` of a choice a redaction touched."""
        if not self._redacted_choices:
            # No redaction yet (a channel's spans come with its choice's entry here): the
            # usual case, once per released event, without the generator below.
            return item.raw
        touched = any(
            span.start < end and span.end > start
            for channel, start, end in item.segments
            if channel.spans
            for span in channel.spans
        )
        side = item.side
        withheld = bool(side) and not self._redacted_choices.isdisjoint(side)
        if not touched and not withheld:
            return item.raw
        if item.run is not None:
            return self._render_run(item)
        assert item.data is not None
        chunk = json_codec.loads(item.data)
        choices = chunk["choices"]
        if touched:
            fields = (
                [f for choice in choices if (f := text_choice_field(choice)) is not None]
                if self._text
                else [
                    text_field
                    for choice in choices
                    for text_field in reply_fields(
                        choice.get("delta"), choice.get("index", 0), stream=True
                    )
                ]
            )
            for text_field, (channel, start, _) in zip(fields, item.segments, strict=True):
                text_field.write(redact(text_field.text, start, channel.spans))
        changed = touched
        if withheld:
            redacted, muted = self._redacted_choices, self._muted_audio
            for choice in choices:
                index = choice.get("index", 0)
                if index in redacted:
                    changed |= withhold_side_channels(
                        choice, choice.get("delta"), audio=index in muted
                    )
        if not changed:
            return item.raw  # say, audio without data in a choice whose content was redacted
        return encode_data(json_codec.dumps(chunk))

    def _render_run(self, item: _Queued) -> bytes:
        """A run touched by a redaction: its events are rewritten one by one."""
        assert item.run is not None
        if item.segments:
            channel: _Channel | None
            channel, offset, _ = item.segments[0]
        else:
            channel, offset = None, 0  # a run of empty texts, rewritten for its logprobs
        out: list[bytes | memoryview] = []
        for raw, data, text in item.run.events():
            segments = []
            if text:
                assert channel is not None
                segments.append((channel, offset, offset + len(text)))
            out.append(self._render(_Queued(raw, data, segments, side=item.side)))
            offset += len(text)
        return b"".join(out)

    def _finish(self, done_raw: bytes) -> bytes:
        self._indices.undecided.clear()  # no piece of a name can follow the end
        for channel in self._channels.values():
            self._scan(channel)
            self._handle(channel, channel.scan.finish())
            channel.safe_end = channel.scan.safe_end
        if self.blocked:
            return self._refusal()
        checks = self._checks
        if checks is not None:
            channels = list(self._channels.values())
            checks.schedule(channels, final=True)
            if checks.pending(channels):
                # The last verdicts decide whether the end may leave (``collect_checks``).
                self._ending = True
                self._done_raw = done_raw
                return self._release() if self._holding else b""
        released = self._release()
        return released + self._ended(StreamEnd(GuardState.DONE, done_raw=done_raw))

    def _refusal(self, *, held: _Queued | None = None) -> bytes:
        """The refusal tail; ``held``: the event being fed, which has not left (nor queued)."""
        content_sent = frozenset(self._content_sent(held))
        self._discard()
        return self._ended(StreamEnd(GuardState.BLOCKED, content_sent=content_sent))

    def _ended(self, end: StreamEnd) -> bytes:
        self.state = end.state
        self.ending = end
        return self.render_end(end)

    def _content_sent(self, held: _Queued | None) -> set[int]:
        """The choices some of whose content has left (their refusal is set apart from it).

        Events leave in order, so what left of a channel is the text before the first segment
        of it still held; a channel no held event touches has left whole.
        """
        held_from: dict[_Channel, int] = {}
        for item in [*self._queue, held] if held is not None else self._queue:
            for channel, start, _ in item.segments:
                held_from.setdefault(channel, start)
        return {
            key.choice
            for key, channel in self._channels.items()
            if key.field in _ANSWER_FIELDS
            and held_from.get(channel, channel.received) > channel.base
        }

    def _discard(self) -> None:
        self._queue.clear()
        self._held_bytes = 0
        self.cancel_checks()

    def cancel_checks(self) -> None:
        """Stops the remote calls in flight (a block, a failure, the client left)."""
        if self._checks is not None:
            self._checks.cancel()


def _text_chunk_texts(chunk: Any) -> list[tuple[Channel, str]]:
    """``_chunk_texts`` for a legacy completions stream: each choice's ``text``."""
    if not isinstance(chunk, dict) or chunk.get("error") is not None:
        raise MalformedReply("not a chunk")
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    texts = []
    for choice in choices:
        if type(choice) is not dict:
            raise MalformedReply("a choice is not an object")
        text_field = text_choice_field(choice)
        if text_field is not None:
            texts.append((text_field.channel, text_field.text))
    return texts


def _chunk_texts(chunk: Any) -> list[tuple[Channel, str]]:
    """Every text of a parsed stream chunk with its channel: what ``feed`` would find in it."""
    if not isinstance(chunk, dict) or chunk.get("error") is not None:
        raise MalformedReply("not a chunk")
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    texts = []
    for choice in choices:
        if type(choice) is not dict or type(choice.get("index", 0)) is not int:
            raise MalformedReply("a choice is not an object with an integer index")
        delta = choice_message(choice, stream=True)
        for text_field in reply_fields(delta, choice.get("index", 0), stream=True):
            texts.append((text_field.channel, text_field.text))
    return texts
