"""The stream guard: relays an upstream chat-completions stream so that nothing blocked leaks.

Every upstream event enters a FIFO queue, remembering which text channels it carries and at
which offsets (one channel per choice and field: content, reasoning, refusal, each tool call's
arguments by index). Each channel feeds its new text to the output shields' scanners. An event
leaves once every channel it touches is *safe* past the text it carries — scanned at least
``holdback_chars`` further — and events leave strictly in order. A block discards the queue and
ends the stream with the refusal; a redaction rewrites queued events before they leave.

Allowed events leave as the exact bytes the upstream sent. The guard does no I/O: the handler
feeds it events and writes what it returns, which keeps this logic testable event by event.
"""

from __future__ import annotations

import enum
import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.errors import error_body
from proxy.openai_texts import MalformedReply, TextField, reply_fields
from proxy.refusal import StreamContext, content_filter_error, refusal_stream, stream_error
from proxy.sse import SSEEvent, encode_data
from shields.base import Action, Finding
from shields.policy import CompiledPolicy
from shields.scan import RedactionSpan, TextScan, merge_redactions, redact

__all__ = ["GuardState", "StreamGuard"]

log = logging.getLogger("shieldgate.stream")

_DONE_DATA = b"[DONE]"
_MAX_KEPT_FINDINGS = 1000


class GuardState(enum.Enum):
    OPEN = "open"
    DONE = "done"  # the upstream finished and everything was released
    BLOCKED = "blocked"  # a shield blocked: refusal sent
    FAILED = "failed"  # the upstream misbehaved: error sent


@dataclass(slots=True)
class _Channel:
    scan: TextScan
    redactions: list[Finding] = field(default_factory=list)
    spans: list[RedactionSpan] = field(default_factory=list)


@dataclass(slots=True)
class _Queued:
    raw: bytes
    chunk: dict[str, Any] | None = None
    segments: list[tuple[_Channel, int, int]] = field(default_factory=list)


FindingSink = Callable[[Finding], None]


class StreamGuard:
    """Feed it upstream events in order; write what it returns; stop when ``closed``."""

    def __init__(
        self,
        policy: CompiledPolicy,
        context: StreamContext,
        *,
        on_finding: FindingSink | None = None,
        max_held_bytes: int = 16 * 1024 * 1024,
        batch_chars: int | None = None,
    ) -> None:
        self._policy = policy
        self._context = context
        self._shields = policy.output_shields
        self._scanning = bool(self._shields)
        # Hold back only where a finding can change the reply: an enforcing policy.
        self._holding = self._scanning and policy.enforcing
        self._holdback = policy.holdback
        # Scanning every 4-character delta costs one call per shield per delta; scanning in
        # batches of half the hold-back keeps the added delay within 1.5x the hold-back.
        self._batch_chars = batch_chars if batch_chars is not None else max(1, self._holdback // 2)
        self._channels: dict[tuple[Any, ...], _Channel] = {}
        self._queue: deque[_Queued] = deque()
        self._held_bytes = 0
        self._max_held_bytes = max_held_bytes
        self._on_finding = on_finding
        self._finished_choices: set[int] = set()
        self.state = GuardState.OPEN
        self.findings: list[Finding] = []

    @property
    def closed(self) -> bool:
        return self.state is not GuardState.OPEN

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    # -- events in ---------------------------------------------------------------------------

    def feed(self, event: SSEEvent) -> bytes:
        if self.closed:
            return b""
        data = event.data
        if data is not None and data.strip() == _DONE_DATA:
            return self._finish(event.raw)
        if not self._scanning:
            return event.raw
        item = _Queued(event.raw)
        if data is not None:
            try:
                self._read_chunk(data, item)
            except MalformedReply as exc:
                return self.fail(f"The upstream sent an invalid stream event: {exc}")
        if self.state is GuardState.BLOCKED:
            return self._refusal()
        if not self._holding:
            return event.raw
        self._queue.append(item)
        self._held_bytes += len(item.raw)
        if self._held_bytes > self._max_held_bytes:
            return self.fail("The upstream stream holds too much unreleasable data")
        return self._release()

    def end(self, *, truncated: bool = False) -> bytes:
        """The upstream response ended (EOF). ``truncated``: it stopped mid-event."""
        if self.closed:
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
        self.state = GuardState.FAILED
        return stream_error(error_body(message, type="upstream_error", code="upstream_error"))

    # -- internals ---------------------------------------------------------------------------

    def _read_chunk(self, data: bytes, item: _Queued) -> None:
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            try:  # orjson refuses NaN and huge integers, which Python's json accepts
                chunk = json.loads(data)
            except ValueError:
                raise MalformedReply("data is not valid JSON") from None
        if not isinstance(chunk, dict):
            raise MalformedReply("data is not a JSON object")
        item.chunk = chunk
        self._context.observe(chunk)
        choices = chunk.get("choices")
        if choices is None:
            return  # usage chunk, error object, or a field we do not know: no text
        if not isinstance(choices, list):
            raise MalformedReply("`choices` is not a list")
        for choice in choices:
            if not isinstance(choice, dict) or not isinstance(choice.get("index", 0), int):
                raise MalformedReply("a choice is not an object with an integer index")
            index = choice.get("index", 0)
            self._context.choices.add(index)
            if choice.get("finish_reason") is not None:
                self._finished_choices.add(index)
            for text_field in reply_fields(choice.get("delta"), index, stream=True):
                self._feed_field(text_field, item)

    def _feed_field(self, text_field: TextField, item: _Queued) -> None:
        channel = self._channels.get(text_field.channel)
        if channel is None:
            channel = _Channel(
                TextScan(
                    self._shields,
                    holdback=self._holdback,
                    fail_closed=self._policy.spec.on_error == "block",
                    batch_chars=self._batch_chars,
                )
            )
            self._channels[text_field.channel] = channel
        start = channel.scan.received
        self._handle(channel, channel.scan.feed(text_field.text))
        item.segments.append((channel, start, start + len(text_field.text)))

    def _handle(self, channel: _Channel, findings: list[Finding]) -> None:
        for finding in findings:
            if len(self.findings) < _MAX_KEPT_FINDINGS:
                self.findings.append(finding)
            if self._on_finding is not None:
                self._on_finding(finding)
            if finding.monitor or not self._policy.enforcing:
                continue
            if finding.action is Action.BLOCK:
                self.state = GuardState.BLOCKED
            else:
                channel.redactions.append(finding)
                channel.spans = merge_redactions(channel.redactions)

    def _release(self) -> bytes:
        out: list[bytes] = []
        queue = self._queue
        while queue:
            item = queue[0]
            if any(end > channel.scan.safe_end for channel, _, end in item.segments):
                break
            queue.popleft()
            self._held_bytes -= len(item.raw)
            out.append(self._render(item))
        return b"".join(out)

    def _render(self, item: _Queued) -> bytes:
        """The event's bytes as received, unless a redaction overlaps the text it carries."""
        if not any(
            span.start < end and span.end > start
            for channel, start, end in item.segments
            for span in channel.spans
        ):
            return item.raw
        assert item.chunk is not None
        fields = [
            text_field
            for choice in item.chunk["choices"]
            for text_field in reply_fields(choice.get("delta"), choice.get("index", 0), stream=True)
        ]
        for text_field, (channel, start, _) in zip(fields, item.segments, strict=True):
            text_field.write(redact(text_field.text, start, channel.spans))
        return encode_data(orjson.dumps(item.chunk))

    def _finish(self, done_raw: bytes) -> bytes:
        for channel in self._channels.values():
            self._handle(channel, channel.scan.finish())
        if self.state is GuardState.BLOCKED:
            return self._refusal()
        released = self._release()
        self.state = GuardState.DONE
        return released + done_raw

    def _refusal(self) -> bytes:
        self._discard()
        refusal = self._policy.spec.refusal
        if refusal.style == "error":
            return stream_error(content_filter_error(refusal.message))
        return refusal_stream(refusal.message, self._context)

    def _discard(self) -> None:
        self._queue.clear()
        self._held_bytes = 0
