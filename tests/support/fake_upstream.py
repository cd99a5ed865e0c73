"""A scripted fake of the *outside world*: an OpenAI-compatible upstream server.

shieldgate's tests run the real proxy code and point it at this server instead
of a real model backend. Nothing inside shieldgate is faked here; the fake only
stands in for the remote HTTP peer, so the proxy's real HTTP client, streaming
and error handling are exercised over a real TCP connection on 127.0.0.1.

Each incoming request (any method, any path, including ``GET /v1/models``) is
recorded and answered with the next queued :class:`Reply`. A reply can script
the transport-level failures a real upstream produces: slow headers, bodies
trickled in separate writes, SSE frames split inside UTF-8 characters, a TCP
connection cut after N body bytes, or a stream that goes silent until the
client gives up. ``FakeUpstream.disconnects`` records when the client hung up
while a reply was still in progress, which lets tests prove the proxy releases
its upstream connection promptly. Each ``RecordedRequest.bytes_sent`` counts,
live, the body bytes the kernel accepted for that reply: with a ``generate``d
endless body and a small ``send_buffer`` it shows how far back-pressure from a
client that stopped reading let the upstream run ahead.

The builders at the bottom (``chat_completion``, ``chunk``, ``sse``,
``text_stream``, ``split_at`` ...) are pure functions producing wire-format
payloads, so tests can state exactly which bytes the upstream sends.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from types import TracebackType
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

__all__ = [
    "FakeUpstream",
    "RecordedRequest",
    "Reply",
    "chat_completion",
    "chunk",
    "error_body",
    "json_bytes",
    "llamacpp_sse",
    "llamacpp_tool_chunks",
    "llamacpp_tool_completion",
    "models_list",
    "split_at",
    "split_every",
    "sse",
    "text_stream",
    "usage_chunk",
]

SSE_DONE = b"data: [DONE]\n\n"
# Fixed so builder output is byte-for-byte deterministic across runs.
FAKE_CREATED = 1_700_000_000

# Prefixes of an SSE body (field names or a comment line), used to sniff a
# default content-type for raw bodies.
_SSE_PREFIXES = (b"data:", b"event:", b"id:", b"retry:", b":")


@dataclass
class Reply:
    """One scripted upstream response.

    The body is, in order of precedence: ``events`` (each encoded with
    :func:`sse` and sent as its own write, then ``data: [DONE]`` as a final write
    unless ``events_done`` is false), ``chunks`` (each sent as its own write),
    ``generate`` (called once per answer; each piece it yields is one write, produced
    only when it is written, so a body may be endless or far larger than memory), or
    ``body`` (one write). ``chunk_delay`` seconds pass between consecutive writes.

    A plain ``body`` is sent with ``Content-Length``, like a real non-streaming
    completion; ``chunks``/``events`` use chunked transfer encoding, like a real
    SSE stream. A ``content-length`` given in ``headers`` wins (aiohttp then
    truncates the body to it).

    Without an explicit ``content-type`` header one is inferred: ``events`` or a
    body starting like SSE gives ``text/event-stream``; a body starting with
    ``{`` or ``[`` gives ``application/json``; anything else gets aiohttp's
    default ``application/octet-stream``.

    ``drop_after_bytes``/``stall_after_bytes`` count payload bytes (excluding
    chunked-encoding framing). If the limit is beyond the end of the payload,
    the whole payload is sent and then the drop/stall happens instead of
    finishing the response.

    ``drop_before_headers`` closes the connection (after ``delay_before_headers``)
    without answering at all, as a crashing or overloaded server does.

    ``send_buffer`` sets the connection's kernel send buffer (SO_SNDBUF) before
    the reply is written; small values make back-pressure measurable in bytes.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None
    events: list[dict[str, Any] | str | bytes] | None = None
    events_done: bool = True
    chunk_delay: float = 0.0
    delay_before_headers: float = 0.0
    drop_after_bytes: int | None = None
    # aiohttp's client discards bytes still buffered in its StreamReader once the
    # connection error is set, so a drop immediately after the last write could
    # hide bytes the test expects to see. Pausing first lets the client read them.
    drop_delay: float = 0.05
    stall_after_bytes: int | None = None
    repeat: int = 1
    generate: Callable[[], Iterable[bytes]] | None = None
    send_buffer: int | None = None
    drop_before_headers: bool = False

    def __post_init__(self) -> None:
        given = [self.chunks is not None, self.events is not None, self.generate is not None]
        if sum(given) > 1:
            raise ValueError("give only one of chunks, events or generate")
        if self.body and any(given):
            raise ValueError(
                "body is ignored when chunks/events/generate are given; leave it empty"
            )
        if self.drop_after_bytes is not None and self.stall_after_bytes is not None:
            raise ValueError("give either drop_after_bytes or stall_after_bytes, not both")
        if self.repeat < 1:
            raise ValueError("repeat must be >= 1")
        for name in ("chunk_delay", "delay_before_headers", "drop_delay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("drop_after_bytes", "stall_after_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0")

    @property
    def streamed(self) -> bool:
        """True when the body goes out as several writes with chunked encoding."""
        return self.chunks is not None or self.events is not None or self.generate is not None

    def pieces(self) -> list[bytes]:
        """The body as the list of writes the server will perform."""
        return list(self.iter_pieces())

    def iter_pieces(self) -> Iterator[bytes]:
        """The writes, produced one at a time (a ``generate``d body may never end)."""
        if self.events is not None:
            for event in self.events:
                yield sse(event, done=False)
            if self.events_done:
                yield SSE_DONE
        elif self.chunks is not None:
            yield from self.chunks
        elif self.generate is not None:
            yield from self.generate()
        else:
            yield self.body

    def payload(self) -> bytes:
        """The complete body bytes, as a client would see them if nothing failed."""
        return b"".join(self.pieces())

    def response_headers(self) -> CIMultiDict[str]:
        headers: CIMultiDict[str] = CIMultiDict(self.headers)
        if "content-type" not in headers:
            sniffed = self._sniff_content_type()
            if sniffed is not None:
                headers["content-type"] = sniffed
        return headers

    def _sniff_content_type(self) -> str | None:
        if self.events is not None or self.generate is not None:
            return "text/event-stream"
        head = self.payload().lstrip()
        if head.startswith((b"{", b"[")):
            return "application/json"
        if head.startswith(_SSE_PREFIXES):
            return "text/event-stream"
        return None


@dataclass
class RecordedRequest:
    """A request as the fake upstream received it (body fully read)."""

    method: str
    path: str
    headers: CIMultiDict[str]
    body: bytes
    query_string: str = ""
    # time.monotonic() on arrival: lets tests measure retry backoff and the like.
    received_at: float = 0.0
    # Body bytes of the reply the kernel has accepted so far (updated while the reply is
    # written), and whether the reply was written to its scripted end.
    bytes_sent: int = 0
    completed: bool = False

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _Exchange:
    """Per-request bookkeeping so one hang-up is recorded at most once."""

    recorded: RecordedRequest
    # Set when the *server* deliberately ended the connection (drop_after_bytes):
    # the resulting cancellation is not a client disconnect.
    server_closed: bool = False
    disconnect_recorded: bool = False


class FakeUpstream:
    """A real aiohttp server on 127.0.0.1 answering every request from a FIFO queue.

    Usable as ``async with FakeUpstream() as upstream:`` or via start()/close().
    """

    def __init__(
        self,
        default_reply: Reply | None = None,
        responder: Callable[[RecordedRequest], Reply] | None = None,
    ) -> None:
        # Answer used whenever the queue is empty; tests may reassign it.
        self.default_reply: Reply = (
            default_reply
            if default_reply is not None
            else Reply(body=json_bytes(chat_completion()))
        )
        # When set, answers every request the queue does not, from the request itself
        # (concurrent clients each get their own reply whatever order they arrive in).
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        self.disconnects: list[float] = []
        self.port: int | None = None
        # Each entry is [reply, answers left]; the count lives here rather than on
        # the Reply so a test may enqueue the same Reply object more than once.
        self._queue: deque[list[Any]] = deque()
        self._runner: web.AppRunner | None = None
        self._closing = False
        self._active: set[asyncio.Transport] = set()
        self._disconnect_event = asyncio.Event()
        self._disconnects_returned = 0

    # ---- lifecycle -------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("FakeUpstream already started")
        # Generous body limit: request-size policing is the proxy's job, not the fake's.
        app = web.Application(client_max_size=64 * 1024 * 1024)
        # Catch-all so /v1/chat/completions, /v1/models and any unexpected path
        # are all recorded and scripted the same way.
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app,
            # Cancel the handler as soon as the client's connection is lost, so a
            # stalled or sleeping reply notices the hang-up immediately.
            handler_cancellation=True,
            access_log=None,
            # close() aborts in-flight replies first; this is only a backstop so a
            # teardown can never wait aiohttp's default 60 s.
            shutdown_timeout=1.0,
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is None:
            return
        self._closing = True
        # Stalled replies would otherwise wait for a client that may never hang up.
        for transport in list(self._active):
            transport.abort()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> FakeUpstream:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def origin(self) -> str:
        if self.port is None:
            raise RuntimeError("FakeUpstream not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"{self.origin}/v1"

    # ---- scripting -------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        for reply in replies:
            self._queue.append([reply, reply.repeat])

    @property
    def pending(self) -> int:
        """How many queued answers are still unused (repeats counted)."""
        return sum(left for _, left in self._queue)

    # The timeout parameter is part of the helper's agreed API; asyncio.timeout is
    # used inside it.
    async def wait_for_disconnect(self, timeout: float) -> float | None:  # noqa: ASYNC109
        """Return the next recorded disconnect time not returned by an earlier call.

        Disconnects recorded before this call count, so there is no race with a
        hang-up that happened first. Returns None if none arrives within timeout.
        """
        try:
            async with asyncio.timeout(timeout):
                while len(self.disconnects) <= self._disconnects_returned:
                    self._disconnect_event.clear()
                    await self._disconnect_event.wait()
        except TimeoutError:
            return None
        when = self.disconnects[self._disconnects_returned]
        self._disconnects_returned += 1
        return when

    # ---- serving ---------------------------------------------------------

    def _next_reply(self, recorded: RecordedRequest) -> Reply:
        if not self._queue:
            if self.responder is not None:
                return self.responder(recorded)
            return self.default_reply
        entry = self._queue[0]
        entry[1] -= 1
        if entry[1] == 0:
            self._queue.popleft()
        reply: Reply = entry[0]
        return reply

    def _record_disconnect(self, exchange: _Exchange) -> None:
        # A shutdown of the fake itself or a drop we caused is not the client leaving.
        if self._closing or exchange.server_closed or exchange.disconnect_recorded:
            return
        exchange.disconnect_recorded = True
        self.disconnects.append(time.monotonic())
        self._disconnect_event.set()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            headers=CIMultiDict(request.headers),
            body=body,
            query_string=request.query_string,
            received_at=time.monotonic(),
        )
        self.requests.append(recorded)
        reply = self._next_reply(recorded)
        exchange = _Exchange(recorded)
        transport = request.transport
        if transport is not None:
            self._active.add(transport)
        try:
            return await self._send(request, reply, exchange)
        except asyncio.CancelledError:
            # With handler_cancellation=True this is how aiohttp reports that the
            # client closed the connection while we were sleeping or stalled.
            self._record_disconnect(exchange)
            raise
        finally:
            if transport is not None:
                self._active.discard(transport)

    async def _send(
        self, request: web.Request, reply: Reply, exchange: _Exchange
    ) -> web.StreamResponse:
        if reply.delay_before_headers:
            await asyncio.sleep(reply.delay_before_headers)
        if reply.drop_before_headers:
            exchange.server_closed = True
            if request.transport is not None:
                request.transport.abort()
            # aiohttp tries to send this on the aborted transport and gives up quietly.
            return web.Response(status=500)

        resp = web.StreamResponse(status=reply.status)
        resp.headers.extend(reply.response_headers())
        if not reply.streamed and "content-length" not in resp.headers:
            resp.content_length = len(reply.body)
        limit = (
            reply.drop_after_bytes
            if reply.drop_after_bytes is not None
            else reply.stall_after_bytes
        )

        if reply.send_buffer is not None and request.transport is not None:
            sock = request.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, reply.send_buffer)

        try:
            # StreamResponse sends status line and headers right here.
            await resp.prepare(request)
            sent = 0
            for i, piece in enumerate(reply.iter_pieces()):
                if limit is not None and sent >= limit:
                    break
                if i and reply.chunk_delay:
                    await asyncio.sleep(reply.chunk_delay)
                if limit is not None:
                    piece = piece[: limit - sent]
                # Never write b"": in chunked encoding an empty chunk ends the body.
                if piece:
                    await resp.write(piece)
                    await _flush(request)
                    sent += len(piece)
                    exchange.recorded.bytes_sent = sent

            if reply.drop_after_bytes is not None:
                await asyncio.sleep(reply.drop_delay)
                exchange.server_closed = True
                if request.transport is not None:
                    request.transport.abort()
                # No await after the abort: aiohttp's own write_eof then hits the
                # closed transport and is treated as a premature disconnect.
                return resp

            if reply.stall_after_bytes is not None:
                # Wait forever; aiohttp cancels us when the client goes away.
                await asyncio.get_running_loop().create_future()

            await resp.write_eof()
            exchange.recorded.completed = True
        except ConnectionError:
            # A write hit a connection the client already closed.
            self._record_disconnect(exchange)
            if request.transport is not None:
                request.transport.abort()
        return resp


async def _flush(request: web.Request) -> None:
    """Wait until the kernel has taken every byte written so far.

    aiohttp only drains above a high-water mark; without this a following
    transport.abort() could discard bytes the reply promised to deliver.
    """
    # asyncio offers no event for "write buffer empty", hence polling; on loopback
    # the buffer is almost always empty already and the loop body never runs.
    while (t := request.transport) is not None and t.get_write_buffer_size():  # noqa: ASYNC110
        await asyncio.sleep(0.001)


# ---- builders --------------------------------------------------------------


def json_bytes(obj: Any) -> bytes:
    """Compact JSON, the same encoding :func:`sse` uses for data payloads."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def chat_completion(
    content: str | None = "ok",
    *,
    model: str = "fake-model",
    choices: list[dict[str, Any]] | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: bool | dict[str, int] = True,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A valid non-streaming ``chat.completion`` object.

    ``choices`` replaces the generated single choice entirely. ``usage`` may be
    a dict to use verbatim. ``extra`` is merged into the top level last, so it
    can add fields or override any generated one.
    """
    if choices is None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls is not None:
            message["tool_calls"] = tool_calls
        choices = [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ]
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": FAKE_CREATED,
        "model": model,
        "choices": choices,
    }
    if isinstance(usage, dict):
        out["usage"] = usage
    elif usage:
        out["usage"] = _usage(5, 7)
    if extra:
        out.update(extra)
    return out


def chunk(
    delta: dict[str, Any],
    *,
    index: int = 0,
    finish_reason: str | None = None,
    model: str = "fake-model",
    id: str = "chatcmpl-fake",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice; ``extra`` merges into the top level."""
    out: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": FAKE_CREATED,
        "model": model,
        "choices": [
            {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ],
    }
    if extra:
        out.update(extra)
    return out


def usage_chunk(
    prompt: int = 5,
    completion: int = 7,
    *,
    model: str = "fake-model",
    id: str = "chatcmpl-fake",
) -> dict[str, Any]:
    """The trailing chunk sent with ``stream_options.include_usage``: no choices."""
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": FAKE_CREATED,
        "model": model,
        "choices": [],
        "usage": _usage(prompt, completion),
    }


def sse(*payloads: dict[str, Any] | str | bytes, done: bool = True) -> bytes:
    """Encode payloads as SSE ``data:`` events, then ``data: [DONE]`` if done.

    Dicts become compact JSON; str/bytes are used verbatim as the data value, so
    tests can send malformed JSON or odd sentinels.
    """
    out = bytearray()
    for payload in payloads:
        if isinstance(payload, bytes):
            data = payload
        elif isinstance(payload, str):
            data = payload.encode()
        else:
            data = json_bytes(payload)
        out += b"data: " + data + b"\n\n"
    if done:
        out += SSE_DONE
    return bytes(out)


def text_stream(
    text: str,
    *,
    piece: int = 4,
    role: bool = True,
    finish_reason: str | None = "stop",
    usage: bool = False,
    done: bool = True,
    model: str = "fake-model",
) -> bytes:
    """A whole SSE body streaming ``text`` in ``piece``-character content deltas.

    The first chunk carries ``role: assistant`` (if role). A final empty-delta
    chunk carries ``finish_reason`` (omitted when it is None, to fake a stream
    that never finishes properly), then an optional usage chunk and [DONE].
    """
    if piece < 1:
        raise ValueError("piece must be >= 1")
    parts = [text[i : i + piece] for i in range(0, len(text), piece)] or [""]
    events: list[dict[str, Any] | str | bytes] = []
    for i, part in enumerate(parts):
        delta: dict[str, Any] = {"content": part}
        if role and i == 0:
            delta = {"role": "assistant", **delta}
        events.append(chunk(delta, model=model))
    if finish_reason is not None:
        events.append(chunk({}, finish_reason=finish_reason, model=model))
    if usage:
        events.append(usage_chunk(model=model))
    return sse(*events, done=done)


def split_at(data: bytes, offsets: list[int]) -> list[bytes]:
    """Split ``data`` at byte offsets, happily cutting multi-byte UTF-8 characters.

    Offsets are sorted and de-duplicated and those equal to 0 or len(data) are
    ignored, so no piece is empty (an empty write would end a chunked body) and
    ``b"".join(result) == data``. Offsets outside [0, len(data)] raise ValueError.
    """
    for offset in offsets:
        if not 0 <= offset <= len(data):
            raise ValueError(f"offset {offset} outside 0..{len(data)}")
    cuts = [0, *sorted({o for o in offsets if 0 < o < len(data)}), len(data)]
    return [data[a:b] for a, b in pairwise(cuts) if b > a]


def split_every(data: bytes, size: int) -> list[bytes]:
    """Split ``data`` into ``size``-byte pieces (size=1 gives a byte-at-a-time stream)."""
    if size < 1:
        raise ValueError("size must be >= 1")
    return [data[i : i + size] for i in range(0, len(data), size)]


def error_body(
    message: str, *, type: str = "server_error", code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error object, as upstreams return with 4xx/5xx statuses."""
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def models_list(*ids: str) -> dict[str, Any]:
    """A ``GET /v1/models`` response body listing ``ids`` (default: fake-model)."""
    return {
        "object": "list",
        "data": [
            {"id": model_id, "object": "model", "created": FAKE_CREATED, "owned_by": "fake"}
            for model_id in ids or ("fake-model",)
        ],
    }


# ---- llama-cpp-python's server -------------------------------------------------------------
#
# Its exact shapes (llama_cpp/llama_chat_format.py, ``_convert_completion_to_chat_function``,
# served by sse-starlette): every streamed delta of a tool call carries the call twice, as the
# legacy ``function_call`` and as ``tool_calls[0]``, with the name (and id) repeated each time;
# the data is ``json.dumps`` output, events end with CRLF, and ``: ping`` comments come between
# them. ``stream_options.include_usage`` is ignored: no usage chunk.


def llamacpp_sse(*payloads: dict[str, Any] | str) -> bytes:
    """Events as sse-starlette writes them: ``data: <json.dumps>`` and CRLF line ends."""
    return b"".join(
        b"data: "
        + (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        + b"\r\n\r\n"
        for payload in payloads
    )


def _llamacpp_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-xyz",
        "object": "chat.completion.chunk",
        "created": FAKE_CREATED,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
    }


def llamacpp_tool_chunks(
    name: str, pieces: list[str], *, ping: bool = True, legacy: Any = "same"
) -> list[bytes]:
    """The writes of a streamed tool call, one event per write (``pieces``: the arguments).

    ``legacy``: what each delta's ``function_call`` is — ``"same"`` (the server's behaviour), a
    callable ``(i, piece) -> dict | None`` to make it differ, or ``None`` to leave it out.
    """
    call_id = f"call__0_{name}_cmpl-xyz"
    writes = [
        llamacpp_sse(
            _llamacpp_chunk(
                {"role": "assistant", "content": None, "function_call": None, "tool_calls": None}
            )
        )
    ]
    for i, piece in enumerate(pieces):
        delta: dict[str, Any] = {"role": "assistant", "content": None}
        function_call: Any = {"name": name, "arguments": piece}
        if callable(legacy):
            function_call = legacy(i, piece)
        elif legacy is None:
            function_call = None
        if function_call is not None:
            delta["function_call"] = function_call
        delta["tool_calls"] = [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": piece},
            }
        ]
        writes.append(llamacpp_sse(_llamacpp_chunk(delta)))
        if ping and i == 0:
            writes.append(b": ping - 2025-01-01 00:00:00.000000+00:00\r\n\r\n")
    writes.append(llamacpp_sse(_llamacpp_chunk({}, "tool_calls"), "[DONE]"))
    return writes


def llamacpp_tool_completion(name: str, arguments: str) -> dict[str, Any]:
    """A non-stream ``chat.completion`` with a tool call, as llama-cpp-python answers it."""
    call_id = f"call__0_{name}_cmpl-xyz"
    function = {"name": name, "arguments": arguments}
    return {
        "id": "chatcmpl-xyz",
        "object": "chat.completion",
        "created": FAKE_CREATED,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "function_call": dict(function),
                    "tool_calls": [{"id": call_id, "type": "function", "function": function}],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": _usage(5, 7),
    }
