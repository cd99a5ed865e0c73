"""A guarded stream whose client gets another dialect's events (Messages, Responses).

``TranslatedStream`` feeds the upstream's SSE through the same ``StreamGuard`` as
``/v1/chat/completions`` and hands only what the guard releases, read back as
``chat.completion.chunk`` objects, to the dialect's translator: every event the client gets
carries text the output shields already passed, so the zero-leak guarantee holds by
construction, with no second hold-back logic to get wrong. The guard renders nothing at its
end (``no_tail``): how the stream ended comes typed (``StreamGuard.ending``) and the dialect
renders it (``_refuse``, ``_complete``); a failure ends the translation with the proxy's own
message.

A released event the translator cannot read (not JSON, not an object, an upstream ``error``,
a ``MalformedChunk``) fails the stream closed: the guard passes events it has no reason to
read (a policy without output shields), so the translator may be the first to find one.

No I/O here: the dialect feeds network reads in and writes what comes out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generic, Protocol, TypeVar

from proxy.stream.guard import GuardState, StreamEnd, StreamGuard
from proxy.stream.sse import SSEDecoder, SSEError
from shields import json_codec

__all__ = [
    "UPSTREAM_REPORTED",
    "ChunkTranslator",
    "Event",
    "MalformedChunk",
    "TranslatedStream",
    "no_tail",
]

Event = dict[str, Any]

# The proxy's own words for an upstream that reported an error mid-stream; its error text is
# never passed on (the same wording as the chat endpoint's in-band error, ``StreamGuard``).
UPSTREAM_REPORTED = "The upstream reported an error mid-stream"


class MalformedChunk(ValueError):
    """A released upstream event the translator cannot read: the stream fails."""


class ChunkTranslator(Protocol):
    """What a dialect's translator offers the stream: chat chunks in, its events out."""

    @property
    def ended(self) -> bool: ...

    def chunk(self, chunk: dict[str, Any]) -> list[Event]:
        """One released chunk's events; may raise ``MalformedChunk``."""
        ...

    def fail(self, message: str) -> list[Event]:
        """The events that end the stream as failed, with the proxy's own message."""
        ...


_T = TypeVar("_T", bound=ChunkTranslator)


def no_tail(end: StreamEnd) -> bytes:
    """The guard's end rendering for a translated stream: nothing (``TranslatedStream``
    renders the typed end as the dialect's events)."""
    return b""


class TranslatedStream(ABC, Generic[_T]):
    """Upstream bytes -> StreamGuard -> released chunks -> the translator's events.

    Sets the guard's ``render_end`` to ``no_tail``. A subclass renders a blocked and a done
    stream's end (``_refuse``, ``_complete``) and may end earlier (``closed``).
    """

    def __init__(self, guard: StreamGuard, translator: _T) -> None:
        guard.render_end = no_tail
        self.guard = guard
        self.translator = translator
        self._upstream = SSEDecoder()
        self._released = SSEDecoder()

    @property
    def closed(self) -> bool:
        return self.translator.ended

    @property
    def blocked(self) -> bool:
        return self.guard.blocked

    def feed(self, data: bytes) -> list[Event]:
        """One network read of the upstream body: framed, fed and flushed by the guard (in
        runs of look-alike events once it knows their shape, as for chat completions)."""
        try:
            released = self.guard.feed_read(self._upstream, data)
        except SSEError:
            return self.fail("The upstream sent an oversized stream event")
        return self._take(released)

    def checks(self) -> list[Event]:
        """Remote shields' verdicts arrived."""
        return self._take(self.guard.collect_checks())

    def end(self) -> list[Event]:
        """The upstream body ended."""
        if self.closed:
            return []
        return self._take(self.guard.end(truncated=bool(self._upstream.finish())))

    def fail(self, message: str) -> list[Event]:
        if self.closed:
            return []
        return self._take(self.guard.fail(message))

    @abstractmethod
    def _refuse(self) -> list[Event]:
        """The end of a stream a shield blocked, in the policy's refusal style."""

    @abstractmethod
    def _complete(self) -> list[Event]:
        """The end of a stream that finished as the upstream sent it."""

    def _take(self, released: bytes | memoryview) -> list[Event]:
        """Translates what one guard call released, then its end if it ended."""
        if self.closed:
            return []
        translator = self.translator
        events: list[Event] = []
        # What the guard released left its hold-back: it is translated even when the same
        # call ended the stream (a block or a failure stops what came after it, not before).
        for event in self._released.feed(bytes(released)):
            data = event.data
            if data is None or data.strip() == b"[DONE]":
                continue
            try:
                chunk = json_codec.loads(data)
            except json_codec.InvalidJSON:
                return events + self._broken("The upstream sent an invalid stream event")
            if not isinstance(chunk, dict):
                return events + self._broken(
                    "The upstream sent a stream event that is not an object"
                )
            if chunk.get("error") is not None:
                # Upstream text the shields have not seen (it may echo the prompt or a partial
                # answer): the stream fails with the proxy's own words, never with it.
                return events + self._broken(UPSTREAM_REPORTED)
            try:
                events += translator.chunk(chunk)
            except MalformedChunk as exc:
                return events + self._broken(f"The upstream sent an invalid stream event: {exc}")
        end = self.guard.ending
        if end is None:
            return events
        if end.state is GuardState.BLOCKED:
            return events + self._refuse()
        if end.state is GuardState.FAILED:
            return events + translator.fail(end.message)
        return events + self._complete()

    def _broken(self, message: str) -> list[Event]:
        # The guard passes events it has no reason to read (no output shields): the translator
        # is then the first to find a broken one, and fails the stream closed itself.
        self.guard.fail(message)
        return self.translator.fail(message)
