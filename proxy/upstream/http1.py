"""A lean HTTP/1.1 client for the one upstream: pooled keep-alive connections, llhttp's parser.

Why not aiohttp's ``ClientSession``, which the proxy used before: it costs 70-110 µs of CPU per
request on this machine against 15-25 µs here (``bench/perf/overhead_bench.py``; py-spy put it at
a fifth of the proxy's whole time per non-stream request). The proxy talks to one origin, POSTs
JSON and reads JSON or an event stream back: it needs none of a general client's URL handling,
cookies, redirects, proxies or tracing. What it does need is kept, and kept strict, since the
upstream's bytes are hostile:

- parsing by ``httptools`` (llhttp, Node's parser): framing by Content-Length or chunked as the
  RFC says, anything else (a bad status line, a header with a CR, a chunk size that is not hex,
  both framings at once) is an error, not a guess;
- a reply is usable once its headers are in; its body goes into an ``aiohttp.StreamReader``
  (the class aiohttp's own client uses), with the same flow control: past 128 KB unread the
  connection stops reading, so a slow client slows the upstream instead of filling memory;
- a body cut off before its framing says it ends fails its reader with ``ClientPayloadError``;
  a body without framing ends when the connection does;
- ``read_timeout``: the longest silence while the upstream owes bytes (not while our own
  reader is full); ``connect_timeout``: to get a connection, waiting for a pool slot included;
- a connection goes back to the pool only after a complete reply the upstream allows to keep
  alive, and is closed when anything arrives on it unasked; a reply abandoned mid-body
  closes its connection, so the upstream stops generating;
- a reused connection the upstream closed before answering (its idle timeout racing our
  request) is retried once on a new connection: nothing of the request was answered;
- ``Accept-Encoding: identity`` is sent; a gzip or deflate body sent anyway is decoded, any
  other coding is refused.

Errors are aiohttp's classes, which the rest of the proxy already tells apart:
``ClientConnectionError`` (and ``ServerDisconnectedError``, ``ClientOSError``) before a reply,
``ServerTimeoutError`` (a ``TimeoutError``) for silence, :class:`InvalidReply` for bytes that
are not HTTP, ``ClientPayloadError`` inside a body.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import zlib
from typing import TYPE_CHECKING, cast

import aiohttp
import httptools
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from proxy.upstream.inflate import Inflater, readable_codings

if TYPE_CHECKING:
    from aiohttp.base_protocol import BaseProtocol

__all__ = ["Http1Pool", "InvalidReply", "UpstreamReply"]

_READ_LIMIT = 2**16  # the reader's low-water mark; it pauses the connection at twice this
_IDLE_SECONDS = 15.0  # an idle pooled connection is closed after this (aiohttp's default too)
# Headers the pool writes itself: a caller's copy of one could frame the request twice.
_OWN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding", "te"}
)
_BAD_HEADER_CHARS = ("\r", "\n", "\0")
# What a reply's head may take (llhttp sets no bound): aiohttp's client limits, which are also
# what the proxy's clients accept when the headers are relayed to them.
_MAX_HEAD_BYTES = 64 * 1024
_MAX_HEADER_LINE = 8190
_MAX_HEADERS = 128
_INFLATE_STEP = 64 * 1024  # decoded bytes handed to the reader at a time


class InvalidReply(aiohttp.ClientError):
    """The upstream answered with bytes that are not an HTTP reply the proxy can read."""


def _decode(raw: bytes) -> str:
    # As aiohttp decodes headers: undecodable bytes survive as surrogates, never as an error.
    return raw.decode("utf-8", "surrogateescape")


class UpstreamReply:
    """What the proxy reads of an upstream reply: status, headers, the body as a reader."""

    __slots__ = ("_connection", "content", "headers", "status", "url")

    def __init__(
        self,
        connection: _Connection,
        status: int,
        headers: CIMultiDictProxy[str],
        content: aiohttp.StreamReader,
        url: URL,
    ) -> None:
        self._connection: _Connection | None = connection
        self.status = status
        self.headers = headers
        self.content = content
        self.url = url

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters (``application/octet-stream`` when
        the upstream named none, as aiohttp says)."""
        raw = self.headers.get("Content-Type")
        if not raw:
            return "application/octet-stream"
        return raw.partition(";")[0].strip().lower() or "application/octet-stream"

    @property
    def charset(self) -> str | None:
        raw = self.headers.get("Content-Type")
        if not raw:
            return None
        for parameter in raw.split(";")[1:]:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "charset":
                return value.strip().strip('"').lower() or None
        return None

    def close(self) -> None:
        """Abandons the reply: a body still arriving is cut off and its connection closed."""
        connection = self._connection
        self._connection = None
        if connection is not None:
            connection.abandon(self)


class _Flow:
    """The reader's view of its connection for flow control, for as long as the reply is the
    connection's: a pooled connection serves the next request while an earlier reader may
    still hold unread bytes and ask to resume."""

    __slots__ = ("connected", "connection")

    def __init__(self, connection: _Connection) -> None:
        self.connection: _Connection | None = connection
        # Read by StreamReader before it waits; it never waits once the connection is gone,
        # since every ending feeds the end of the body or an error first.
        self.connected = True

    def pause_reading(self) -> None:
        if self.connection is not None:
            self.connection.pause()

    def resume_reading(self, resume_parser: bool = True) -> None:
        if self.connection is not None:
            self.connection.resume()


class _Connection(asyncio.Protocol):
    """One keep-alive connection to the upstream and the reply it is reading, if any."""

    def __init__(self, pool: Http1Pool) -> None:
        self._pool = pool
        self._loop = pool.loop
        self.transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.reused = False
        self.idle_timer: asyncio.TimerHandle | None = None
        self._reset()

    def _reset(self) -> None:
        self._expecting = False  # a request was sent and its reply is not complete
        self._unasked = False  # bytes came that answer no request
        self._headers_waiter: asyncio.Future[UpstreamReply] | None = None
        self._header_list: list[tuple[str, str]] = []
        self._informational = False
        self._reply: UpstreamReply | None = None
        self._reader: aiohttp.StreamReader | None = None
        self._flow: _Flow | None = None
        self._framed = False
        self._inflater: Inflater | None = None
        self._complete = False
        self._end_deferred = False  # framing complete, compressed bytes still to decode
        self._keep_alive = False
        self.received_any = False  # a byte of this request's reply came
        self._head_bytes = 0
        self._paused = False
        self._transport_paused = False
        self._sent_at = 0.0
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None

    # -- the request -------------------------------------------------------------------------

    def send(self, head: bytes, body: bytes | None) -> asyncio.Future[UpstreamReply]:
        """Writes a request; the future has the reply once its headers are in."""
        assert self.transport is not None and not self._expecting
        self._reset()
        self._expecting = True
        waiter = self._headers_waiter = self._loop.create_future()
        if body:
            self.transport.writelines((head, body))
        else:
            self.transport.write(head)
        self._sent_at = self._last_read = self._loop.time()
        self._timer = self._loop.call_at(self._sent_at + self._pool.read_timeout, self._silence)
        return waiter

    def abandon(self, reply: UpstreamReply) -> None:
        if self._reply is not reply:
            return  # complete and pooled already: the connection serves someone else now
        if not self._complete:
            self._fail_body(aiohttp.ClientPayloadError("The reply was abandoned"))
            self.abort()

    # -- flow control and timing -------------------------------------------------------------

    def pause(self) -> None:
        self._paused = True
        if not self._transport_paused and self.transport is not None:
            self._transport_paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        if not self._paused:
            return
        self._paused = False
        self._last_read = self._loop.time()  # the silence starts now, not when we paused
        if self._inflater is not None and self._inflater.pending:
            self._inflate()  # may fill the reader, and pause, again
            if self._end_deferred and not self._inflater.pending:
                self._end_deferred = False
                self._end_body()
                self._finish()
        if not self._paused and self._transport_paused and self.transport is not None:
            self._transport_paused = False
            self.transport.resume_reading()

    def _silence(self) -> None:
        self._timer = None
        if not self._expecting or self.transport is None:
            return
        now = self._loop.time()
        limit = self._pool.read_timeout
        if self._reply is not None and (self._paused or now - self._last_read < limit):
            # Our own reader is full (the client is slow), or bytes came meanwhile.
            start = now if self._paused else self._last_read
            self._timer = self._loop.call_at(start + limit, self._silence)
            return
        # No head within the limit (however it trickles in), or silence inside the body.
        error = aiohttp.ServerTimeoutError(f"No data from the upstream for {limit:g} s")
        self._fail(error)
        self.abort()

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if not self._expecting:
            self._unasked = True
        else:
            self.received_any = True
            self._last_read = self._loop.time()
            try:
                self._parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                self._fail(InvalidReply("The upstream switched protocols"))
            except httptools.HttpParserError as exc:
                # A callback's own error comes wrapped in HttpParserCallbackError.
                cause = exc.__context__
                self._fail(
                    cause
                    if isinstance(cause, InvalidReply)
                    else InvalidReply(f"The upstream's reply is not HTTP ({type(exc).__name__})")
                )
            if self._reply is None and not self._unasked:
                # A head still unfinished: bounded even while it never ends.
                self._head_bytes += len(data)
                if self._head_bytes > _MAX_HEAD_BYTES:
                    self._fail(InvalidReply("The upstream's reply head is too large"))
        if self._unasked:
            self.abort()
        elif self._complete and not self._end_deferred:
            self._finish()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._expecting and not self._complete:
            if self._reply is None:
                error: aiohttp.ClientError = (
                    aiohttp.ServerDisconnectedError()
                    if exc is None
                    else aiohttp.ClientOSError(getattr(exc, "errno", None), str(exc))
                )
                self._fail(error)
            elif self._framed or exc is not None:
                self._fail_body(
                    aiohttp.ClientPayloadError("The upstream connection closed mid-body")
                )
            else:  # a body without framing ends with its connection
                self._end_body()
        self._pool.lost(self)

    # -- llhttp's callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._complete:  # a second reply to one request
            self._unasked = True

    def on_header(self, name: bytes, value: bytes) -> None:
        headers = self._header_list
        size = len(name) + len(value)
        self._head_bytes += size
        if (
            len(headers) >= _MAX_HEADERS
            or size > _MAX_HEADER_LINE
            or self._head_bytes > _MAX_HEAD_BYTES
        ):
            raise InvalidReply("The upstream's reply head is too large")
        headers.append((_decode(name), _decode(value)))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            # An interim reply (100 Continue, 103 Early Hints): the real one follows.
            self._informational = True
            self._header_list = []
            return
        if not 200 <= status <= 599:
            raise InvalidReply("The upstream's reply has no valid status")
        headers = CIMultiDictProxy(CIMultiDict(self._header_list))
        coding = headers.get("Content-Encoding", "identity").strip().lower()
        if coding in readable_codings:
            self._inflater = Inflater(coding)
        elif coding not in ("identity", ""):
            raise InvalidReply("The upstream's reply uses a content coding the proxy cannot read")
        # Only a length or chunked framing says where the body ends; any other
        # Transfer-Encoding (identity) leaves the end to the connection's (RFC 9112 6.3).
        self._framed = (
            "Content-Length" in headers or "chunked" in headers.get("Transfer-Encoding", "").lower()
        )
        flow = self._flow = _Flow(self)
        reader = self._reader = aiohttp.StreamReader(
            cast("BaseProtocol", flow), _READ_LIMIT, loop=self._loop
        )
        reply = self._reply = UpstreamReply(self, status, headers, reader, self._pool.url)
        waiter, self._headers_waiter = self._headers_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)

    def on_body(self, body: bytes) -> None:
        reader = self._reader
        if reader is None:
            return
        if self._inflater is not None:
            self._inflater.push(body)
            self._inflate()
            return
        reader.feed_data(body)

    def _inflate(self) -> None:
        """Decodes pushed bytes into the reader until it is full (and pauses the connection)
        or they are all decoded: memory follows the reader's limit, not the compression ratio."""
        inflater, reader = self._inflater, self._reader
        assert inflater is not None and reader is not None
        try:
            while not self._paused:
                data = inflater.pull(_INFLATE_STEP)
                if not data:
                    return
                reader.feed_data(data)
        except zlib.error:
            self._fail(aiohttp.ClientPayloadError("The upstream's compressed body is corrupt"))
            self.abort()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        if self._complete:
            return
        self._complete = True
        # Asked here: once the callback returns, llhttp has reset what it knew of the reply.
        self._keep_alive = self._parser.should_keep_alive()
        if self._inflater is not None and self._inflater.pending:
            self._end_deferred = True  # the reader is full: resume() ends the body
            return
        self._end_body()

    # -- endings -----------------------------------------------------------------------------

    def _end_body(self) -> None:
        reader = self._reader
        if reader is None:
            return
        if self._inflater is not None:
            try:
                rest = self._inflater.end()
            except zlib.error:
                self._fail_body(
                    aiohttp.ClientPayloadError("The upstream's compressed body is cut off")
                )
                return
            if rest:
                reader.feed_data(rest)
        reader.feed_eof()

    def _finish(self) -> None:
        """The reply is complete: stop timing it, and pool the connection if it may stay."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flow is not None:
            self._flow.connection = None
        keep = self._keep_alive
        self._expecting = False
        self._reply = None
        self._paused = False
        if self._transport_paused and self.transport is not None:
            # The reader filled up with the reply's last bytes: it holds them all now.
            self._transport_paused = False
            self.transport.resume_reading()
        if keep and self.transport is not None and not self._unasked:
            self._pool.put_back(self)
        else:
            self.abort()

    def _fail(self, error: BaseException) -> None:
        """Fails whatever waits on this connection: the caller before the headers, the body's
        reader after them. The connection is never reused."""
        self._unasked = True  # not reusable
        waiter, self._headers_waiter = self._headers_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
            return
        self._fail_body(
            error
            if isinstance(error, aiohttp.ClientPayloadError | TimeoutError)
            else aiohttp.ClientPayloadError(str(error))
        )

    def _fail_body(self, error: BaseException) -> None:
        self._complete = True
        reader = self._reader
        if reader is not None and not reader.is_eof() and reader.exception() is None:
            reader.set_exception(error)

    def abort(self) -> None:
        self._unasked = True
        transport = self.transport
        if transport is not None:
            transport.abort()  # connection_lost follows, which tells the pool


class Http1Pool:
    """Connections to one origin (``scheme://host:port``), at most ``limit`` at once (0: no
    limit), each reused for as long as the upstream keeps it alive."""

    def __init__(
        self, base_url: str, *, limit: int, connect_timeout: float, read_timeout: float
    ) -> None:
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("the upstream must be an http:// or https:// URL with a host")
        self.url = url
        self.loop = asyncio.get_running_loop()
        self.read_timeout = read_timeout
        self._connect_timeout = connect_timeout
        self._limit = limit
        self._host = url.host
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = (
            ssl.create_default_context() if url.scheme == "https" else None
        )
        self.base_path = url.raw_path.rstrip("/")
        host = f"[{self._host}]" if ":" in self._host else self._host
        authority = host if url.port is None or url.is_default_port() else f"{host}:{url.port}"
        self._host_line = f"Host: {authority}\r\n"
        self._idle: list[_Connection] = []
        self._open = 0  # connections counted against the limit: idle, in use or connecting
        self._waiters: collections.deque[asyncio.Future[_Connection | None]] = collections.deque()
        self._closed = False

    # -- requests ----------------------------------------------------------------------------

    async def request(
        self, method: str, target: str, headers: dict[str, str], body: bytes | None
    ) -> UpstreamReply:
        """Sends ``method target`` and returns the reply once its headers are in."""
        head = self._head(method, target, headers, body)
        connection = await self._acquire()
        try:
            return await connection.send(head, body)
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            if not connection.reused or connection.received_any:
                raise
        except BaseException:
            # Cancelled (a deadline, a client that left) or failed: the upstream must stop.
            connection.abort()
            raise
        # The upstream closed a pooled connection as we used it: once more, on a new one.
        connection = await self._acquire(fresh=True)
        return await connection.send(head, body)

    def _head(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {target} HTTP/1.1\r\n", self._host_line]
        for name, value in headers.items():
            if name.lower() in _OWN_HEADERS:
                continue
            if any(c in name or c in value for c in _BAD_HEADER_CHARS) or ":" in name:
                raise ValueError("a header to the upstream holds a line break or a colon")
            lines.append(f"{name}: {value}\r\n")
        if body is not None or method == "POST":
            lines.append(f"Content-Length: {len(body) if body else 0}\r\n")
        lines.append("Accept-Encoding: identity\r\n\r\n")
        return "".join(lines).encode("utf-8", "surrogateescape")

    # -- the pool ----------------------------------------------------------------------------

    async def _acquire(self, *, fresh: bool = False) -> _Connection:
        while not fresh and self._idle:
            connection = self._idle.pop()
            if connection.idle_timer is not None:
                connection.idle_timer.cancel()
                connection.idle_timer = None
            if connection.transport is not None and not connection.transport.is_closing():
                connection.reused = True
                return connection
        if self._closed:
            raise aiohttp.ClientConnectionError("The upstream client is closed")
        async with asyncio.timeout(self._connect_timeout):
            if self._limit and self._open >= self._limit:
                waiter: asyncio.Future[_Connection | None] = self.loop.create_future()
                self._waiters.append(waiter)
                try:
                    handed = await waiter
                except BaseException:
                    if waiter.done() and not waiter.cancelled():
                        # Handed a slot (or a connection) just as we gave up: pass it on.
                        given = waiter.result()
                        if given is not None:
                            self.put_back(given)
                        else:
                            self._slot_freed()
                    elif not waiter.done():
                        self._waiters.remove(waiter)
                    raise
                if handed is not None:
                    handed.reused = True
                    return handed
            else:
                self._open += 1
            return await self._connect()

    async def _connect(self) -> _Connection:
        """A new connection, its slot already counted."""
        try:
            _, connection = await self.loop.create_connection(
                lambda: _Connection(self),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host if self._ssl is not None else None,
            )
        except BaseException as exc:
            self._slot_freed()
            if isinstance(exc, OSError) and not isinstance(exc, TimeoutError):
                raise aiohttp.ClientOSError(exc.errno, str(exc)) from None
            if isinstance(exc, ssl.SSLError):
                raise aiohttp.ClientConnectionError(str(exc)) from None
            raise
        return connection

    def put_back(self, connection: _Connection) -> None:
        """A connection that finished a reply and may be reused."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        if self._closed:
            connection.abort()
            return
        self._idle.append(connection)
        connection.idle_timer = self.loop.call_later(_IDLE_SECONDS, connection.abort)

    def lost(self, connection: _Connection) -> None:
        """A connection closed (by either side): its slot is free."""
        if connection.idle_timer is not None:
            connection.idle_timer.cancel()
            connection.idle_timer = None
        if connection in self._idle:
            self._idle.remove(connection)
        self._slot_freed()

    def _slot_freed(self) -> None:
        self._open -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._open += 1
                waiter.set_result(None)  # the waiter connects on its own
                return

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.abort()
        # Let the transports' connection_lost run before the loop goes away.
        await asyncio.sleep(0)
