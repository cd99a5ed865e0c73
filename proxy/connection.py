"""aiohttp's own handling of a connection, with its error answers and logs made the proxy's.

Before any route or middleware runs, aiohttp answers some requests itself: one it cannot parse
(bad framing, a bad chunk size, an absurd ``Content-Length``, bytes after ``Connection:
close``), an unsupported ``Content-Encoding``, an ``Expect`` header. Its answers are plain
text that quotes the offending bytes, and its logs do the same — which may be the prompt
itself. :class:`ProxyRunner` serves connections with a handler whose answers are in OpenAI's
error shape (400, 415, 417; nothing of the request quoted) and whose logs name the error's
class only. :func:`expect_continue` grants ``100 Continue`` only to a body within the size
limit: a larger one gets its 413 at once.

This hooks into aiohttp below its public API (``web.RequestHandler``, the runner's server
factory). If a later aiohttp changes those, :class:`ProxyRunner` falls back to aiohttp's own
server and logs a warning once: the answers are then aiohttp's, the logs still redacted by
``proxy.logs``.
"""

from __future__ import annotations

import itertools
import logging
from http import HTTPStatus
from typing import Any

from aiohttp import HttpVersion11, hdrs, web
from aiohttp import __version__ as aiohttp_version
from aiohttp.http_exceptions import BadHttpMethod, ContentEncodingError, HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import StreamReader

from proxy.errors import error_body, json_response
from proxy.logs import CLIENT_ERRORS
from proxy.state import SETTINGS, body_too_large

__all__ = ["ProxyRunner", "expect_continue"]

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


class _RequestHandler(web.RequestHandler):
    """aiohttp's handler of one connection, with its own error answers and logs replaced: the
    answers in OpenAI's error shape, the logs without the request's bytes (see proxy.logs)."""

    _body: StreamReader | None = None  # the body the parser was filling last

    def data_received(self, data: bytes) -> None:
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
            if isinstance(message, RawRequestMessage):
                self._body = payload
            elif self._body is not None:
                body, self._body = self._body, None
                if not body.is_eof() and body.exception() is None:
                    body.set_exception(web.RequestPayloadError("The request's framing broke"))

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
        if isinstance(exc, CLIENT_ERRORS):
            # E.g. "Unhandled exception" from draining the rest of a body that does not
            # decode, after the handler's 400 for it: the client's doing, not news.
            message = args[0] % args[1:] if len(args) > 1 else args[0]
            self.logger.debug("%s: %s", message, type(exc).__name__)
            return
        # Anything else with its traceback, the exceptions' text dropped (proxy.logs).
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
    def __call__(self) -> web.RequestHandler:
        return _RequestHandler(self, loop=self._loop, **self._kwargs)


# The methods of aiohttp's handler that _RequestHandler overrides: aiohttp must still call
# them for the overrides to take effect. (``_Server`` reads ``_loop`` and ``_kwargs`` of the
# runner's server: their absence is an AttributeError where it is built.)
_OVERRIDDEN = ("data_received", "handle_error", "finish_response", "log_exception")


class ProxyRunner(web.AppRunner):
    """``web.AppRunner`` whose connections are handled by :class:`_RequestHandler`: the
    runner every way of serving uses (see ``proxy.server.make_runner``)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        try:
            ours = _Server(
                server.request_handler,
                request_factory=server.request_factory,
                handler_cancellation=server.handler_cancellation,
                loop=server._loop,
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
