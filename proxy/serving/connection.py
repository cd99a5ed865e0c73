"""aiohttp's own handling of a connection, with its error answers and logs made the proxy's.

Before any route or middleware runs, aiohttp answers some requests itself: one it cannot parse
(bad framing, a bad chunk size, an absurd ``Content-Length``, bytes after ``Connection:
close``), an unsupported ``Content-Encoding``, an ``Expect`` header. Its answers are plain
text that quotes the offending bytes, and its logs do the same — which may be the prompt
itself. :class:`ProxyRunner` serves connections with a handler whose answers are in OpenAI's
error shape (400, 415, 417; nothing of the request quoted) and whose logs name the error's
class only. :func:`expect_continue` grants ``100 Continue`` only to a body within the size
limit: a larger one gets its 413 at once. The handler also bounds a client's time for a
request's headers and body and, optionally, its connections per address (:class:`ClientLimits`).

This hooks into aiohttp below its public API (``web.RequestHandler``, the runner's server
factory). If a later aiohttp changes those, :class:`ProxyRunner` falls back to aiohttp's own
server and logs a warning once: the answers are then aiohttp's, the logs still redacted by
``proxy.ops.logs``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from aiohttp import HttpVersion11, hdrs, web
from aiohttp import __version__ as aiohttp_version
from aiohttp.http_exceptions import BadHttpMethod, ContentEncodingError, HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader

from proxy.errors import ClientBodyTimeout, error_body, json_response
from proxy.ops.logs import CLIENT_ERRORS
from proxy.state import SETTINGS, body_too_large

__all__ = ["ClientLimits", "ProxyRunner", "expect_continue"]

log = logging.getLogger("shieldgate.server")


async def expect_continue(request: web.Request) -> web.StreamResponse | None:
    """The ``Expect`` handler of every route: ``100-continue`` is granted only to a body the
    proxy would read (its ``Content-Length`` within ``max_body_bytes``); any other expectation
    is a 417. Runs before the middlewares, so the answers are built here, in OpenAI's shape."""
    expect = request.headers.get(hdrs.EXPECT, "")
    if expect.strip().lower() != "100-continue":
        body = error_body(
            "Unsupported Expect header: only 100-continue is supported",
            type="invalid_request_error",
            code="expectation_failed",
        )
        response = json_response(body, status=417)
        response.force_close()  # the body, if it follows, is not read
        return response
    length = request.content_length
    limit = request.app[SETTINGS].max_body_bytes
    if length is not None and length > limit:
        return body_too_large(limit).response()  # closes the connection: no body is read
    if request.version == HttpVersion11:
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        # As aiohttp's own handler does: the interim answer is not the response's start.
        request.writer.output_size = 0
    return None


def _aiohttp_error(status: int, exc: BaseException | None) -> web.Response:
    """The OpenAI-shaped answer for an error aiohttp meets outside the app's middlewares. No
    text of aiohttp's goes in: its parser errors quote the bytes they choked on."""
    if isinstance(exc, ContentEncodingError):
        status = 415
        message = (
            "The request's Content-Encoding is not supported: send it as gzip, deflate or "
            "uncompressed"
        )
        code = "unsupported_content_encoding"
    elif isinstance(exc, HttpProcessingError):
        message = (
            f"shieldgate could not parse the HTTP request ({type(exc).__name__}): check its "
            "request line, headers and framing (Content-Length or chunked Transfer-Encoding; "
            "no bytes after the end of the body)"
        )
        code = "invalid_http_request"
    elif status == 500:
        return json_response(
            error_body("Internal error in shieldgate", type="server_error", code="internal_error"),
            status=500,
        )
    else:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        message = f"{status} {phrase}"
        code = None
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json_response(error_body(message, type=kind, code=code), status=status)


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """What a client's connection may take (see ``Settings``): ``header_timeout`` seconds for a
    request's headers, ``body_timeout`` seconds of silence within a body, and at most
    ``per_address`` connections per client address (0: no limit)."""

    header_timeout: float = 60.0
    body_timeout: float = 60.0
    per_address: int = 0


class _RequestHandler(web.RequestHandler):
    """aiohttp's handler of one connection, with its own error answers and logs replaced: the
    answers in OpenAI's error shape, the logs without the request's bytes (see proxy.ops.logs);
    and with the time a client has for a request's headers and body bounded.

    aiohttp bounds neither: its only timer closes a connection idle *between* requests
    (``keepalive_timeout``, 3630 s, also armed when a connection opens), so a client that
    sends half its headers holds the connection for an hour, and one that sends half its body
    holds it, and a handler task waiting for the rest, for as long as it likes.

    - Headers: from the connection's start for its first request, and from the first byte of
      each later one (an idle keep-alive connection is aiohttp's to close, on its keep-alive
      timer), ``header_timeout`` seconds until the request's headers are complete; past it the
      connection is closed without an answer (as nginx's ``client_header_timeout``, though
      nginx answers 408: a client that has not finished its request line may not read one).
    - Body: at most ``body_timeout`` seconds between two reads of the body's bytes (as
      nginx's ``client_body_timeout``), not for the body as a whole: a large body on a slow
      link must not fail because it is large. Past it the body fails with
      :class:`ClientBodyTimeout` — its handler answers 408 — and the connection is closed
      after the answer. Time during which the proxy itself stopped reading (its buffer full)
      does not count.
    """

    _body: StreamReader | None = None  # the body the parser was filling last
    _header_since: float | None = None  # when the headers now awaited began (None: none are)
    _header_timer: asyncio.TimerHandle | None = None
    _body_read_at = 0.0  # when the body last had bytes
    _body_timer: asyncio.TimerHandle | None = None
    _address: str | None = None  # the client's address, while it is counted

    def __init__(self, manager: _Server, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._server = manager
        self._limits = manager.limits

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if not self._admit(transport):
            return
        self._header_since = self._loop.time()
        self._arm_header_timer(self._limits.header_timeout)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_timers()
        if self._address is not None:
            self._server.release(self._address)
            self._address = None
        super().connection_lost(exc)

    def _admit(self, transport: asyncio.BaseTransport) -> bool:
        """Counts the connection against its address's cap; closes it when over the cap.
        Closing, not answering 503: an answer needs the request read first, and the client
        that holds too many connections is the one that may never send it."""
        if self._limits.per_address <= 0:
            return True
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else None
        if address is None:
            return True
        if not self._server.admit(address):
            self.force_close()
            return False
        self._address = address
        return True

    def data_received(self, data: bytes) -> None:
        now = self._loop.time()
        if data and self._header_since is None and not self._in_body():
            self._header_since = now  # the first byte of a new request
            if self._header_timer is None:
                self._arm_header_timer(self._limits.header_timeout)
            # Else the timer armed for an earlier request is still pending: when it fires it
            # finds this request's start and waits the rest of its time (``_header_expired``).
            # Not re-arming per request saves a timer's creation and cancellation on each.
        # aiohttp 3.14's C parser, on an error in the middle of a body (a chunk size that is
        # not hex, say), queues a 400 for after the current request but leaves that request's
        # body open: its handler would wait for the rest of it as long as the client keeps
        # the connection. Failing the body ends the wait with the error every broken body
        # gives (a 400 from read_body, which closes the connection).
        messages = getattr(self, "_messages", None)
        queued = len(messages) if messages is not None else 0
        super().data_received(data)
        if messages is None:
            return
        for message, payload in itertools.islice(messages, queued, None):
            self._header_since = None  # headers complete (or refused: a 400 closes)
            if isinstance(message, RawRequestMessage):
                self._body = payload
            elif self._body is not None:
                body, self._body = self._body, None
                if not body.is_eof() and body.exception() is None:
                    body.set_exception(web.RequestPayloadError("The request's framing broke"))
        # A header timer left pending once the headers are complete lapses when it fires
        # (``_header_since`` is None then), or serves the next request's headers.
        if self._in_body():
            self._body_read_at = now
            if self._body_timer is None:
                self._arm_body_timer(self._limits.body_timeout)

    def _in_body(self) -> bool:
        body = self._body
        return body is not None and not body.is_eof() and body.exception() is None

    def _arm_header_timer(self, delay: float) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self._loop.call_later(delay, self._header_expired)

    def _arm_body_timer(self, delay: float) -> None:
        self._body_timer = self._loop.call_later(delay, self._body_expired)

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_timer = None

    def _header_expired(self) -> None:
        self._header_timer = None
        since = self._header_since
        if since is None or self.transport is None:
            return
        if getattr(self, "_request_in_progress", False):
            # A pipelined request's headers, begun while an earlier request is answered:
            # that answer is not cut off for them. Looked at again when it may be done.
            self._arm_header_timer(self._limits.header_timeout)
            return
        left = since + self._limits.header_timeout - self._loop.time()
        if left > 0:
            self._arm_header_timer(left)
            return
        self.logger.info(
            "closed a connection from %s: its request headers did not arrive within %gs",
            self._peer_address(),
            self._limits.header_timeout,
        )
        self.force_close()

    def _body_expired(self) -> None:
        self._body_timer = None
        body = self._body
        if body is None or not self._in_body() or self.transport is None:
            return
        now = self._loop.time()
        if getattr(self, "_reading_paused", False):
            # The proxy stopped reading (the body's buffer is full): not the client's silence.
            self._body_read_at = now
        left = self._body_read_at + self._limits.body_timeout - now
        if left > 0:
            self._arm_body_timer(left)
            return
        self.logger.info(
            "request body from %s stopped arriving for %gs: answering 408",
            self._peer_address(),
            self._limits.body_timeout,
        )
        # Its handler, reading the body, answers 408; no later request is read on this
        # connection, whose rest of a body would be taken for one.
        body.set_exception(
            ClientBodyTimeout(
                f"The request body stopped arriving: nothing came for "
                f"{self._limits.body_timeout:g} seconds"
            )
        )
        self.close()

    def _peer_address(self) -> str:
        transport = self.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        return str(peer[0]) if isinstance(peer, tuple) and peer else "?"

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if isinstance(exc, HttpProcessingError):
            # The client's bytes, not a fault here: one line, no traceback, no bytes. A bad
            # method on a new connection is mostly a scanner or TLS on the plain port.
            level = logging.DEBUG if isinstance(exc, BadHttpMethod) else logging.INFO
            self.logger.log(
                level,
                "rejected a malformed request from %s: %s",
                request.remote,
                type(exc).__name__,
            )
        elif exc is not None:
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
        else:
            self.logger.warning("Error %d handling request from %s", status, request.remote)
        if request.writer.output_size > 0:
            raise ConnectionError(
                "Response is sent already, cannot send another response with the error message"
            )
        response = _aiohttp_error(status, exc)
        response.force_close()
        return response

    def log_exception(self, *args: Any, **kw: Any) -> None:
        exc = kw.get("exc_info")
        if isinstance(exc, (*CLIENT_ERRORS, ClientBodyTimeout)):
            # E.g. "Unhandled exception" from draining the rest of a body that does not
            # decode, after the handler's 400 for it: the client's doing, not news.
            message = args[0] % args[1:] if len(args) > 1 else args[0]
            self.logger.debug("%s: %s", message, type(exc).__name__)
            return
        # Anything else with its traceback, the exceptions' text dropped (proxy.ops.logs).
        super().log_exception(*args, **kw)

    async def finish_response(
        self, request: web.BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        if (
            isinstance(resp, web.HTTPException)
            and resp.status >= 400
            and resp.content_type != "application/json"
        ):
            # Raised outside the middlewares (the default ``Expect`` handler of an unknown
            # path): answered in the same shape as everything else, and, as aiohttp's own
            # error answers, on a connection closed after it (a body may follow, unread).
            converted = _aiohttp_error(resp.status, None)
            if hdrs.ALLOW in resp.headers:
                converted.headers[hdrs.ALLOW] = resp.headers[hdrs.ALLOW]
            converted.force_close()
            resp = converted
        return await super().finish_response(request, resp, start_time)


class _Server(web.Server):
    """aiohttp's server with our handler, and the count of connections per client address."""

    def __init__(self, *args: Any, limits: ClientLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self._per_address: dict[str, int] = {}
        self._warned: set[str] = set()  # addresses at their cap that were logged once

    def __call__(self) -> web.RequestHandler:
        return _RequestHandler(self, loop=self._loop, **self._kwargs)

    def admit(self, address: str) -> bool:
        """Counts a new connection from ``address``; False (not counted) when it holds the
        most it may already."""
        count = self._per_address.get(address, 0)
        if count >= self.limits.per_address:
            if address not in self._warned:  # once while at the cap, not once per connection
                self._warned.add(address)
                log.warning(
                    "refusing connections from %s: it holds %d, the most one address may",
                    address,
                    count,
                )
            return False
        self._per_address[address] = count + 1
        return True

    def release(self, address: str) -> None:
        count = self._per_address.get(address, 0) - 1
        if count > 0:
            self._per_address[address] = count
        else:
            self._per_address.pop(address, None)
        self._warned.discard(address)


# The methods of aiohttp's handler that _RequestHandler overrides: aiohttp must still call
# them for the overrides to take effect. (``_Server`` reads ``_loop`` and ``_kwargs`` of the
# runner's server: their absence is an AttributeError where it is built.)
_OVERRIDDEN = ("data_received", "handle_error", "finish_response", "log_exception")


class ProxyRunner(web.AppRunner):
    """``web.AppRunner`` whose connections are handled by :class:`_RequestHandler`: the
    runner every way of serving uses (see ``proxy.serving.server.make_runner``)."""

    def __init__(
        self, app: web.Application, *, limits: ClientLimits | None = None, **kwargs: Any
    ) -> None:
        super().__init__(app, **kwargs)
        self._limits = limits if limits is not None else ClientLimits()

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        try:
            ours = _Server(
                server.request_handler,
                request_factory=server.request_factory,
                handler_cancellation=server.handler_cancellation,
                loop=server._loop,
                limits=self._limits,
                **server._kwargs,
            )
            if not all(hasattr(web.RequestHandler, name) for name in _OVERRIDDEN):
                raise AttributeError("aiohttp's connection handler changed")
        except (AttributeError, TypeError) as exc:
            log.warning(
                "aiohttp %s: serving with its own error answers (%s)",
                aiohttp_version,
                type(exc).__name__,
            )
            return server
        return ours
