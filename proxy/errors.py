"""Every error the proxy answers with, as OpenAI-shaped JSON, through one middleware.

Clients are OpenAI SDKs: they parse ``{"error": {"message", "type", "param", "code"}}`` into
typed exceptions, so even a 404 for an unknown path or a 413 for a huge body uses that shape.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from proxy import json_codec

__all__ = [
    "BadRequest",
    "Overloaded",
    "PayloadTooLarge",
    "ProxyError",
    "UpstreamError",
    "UpstreamTimeout",
    "error_body",
    "error_middleware",
    "json_response",
    "start_response",
]

log = logging.getLogger("shieldgate.proxy")


# The response a handler has started sending (status and headers): past that point an error
# can no longer become a response of its own.
_STARTED = web.RequestKey("started_response", web.StreamResponse)


async def start_response(request: web.Request, response: web.StreamResponse) -> None:
    """``response.prepare(request)``, remembered: a later error aborts the connection instead
    of writing a second response into the first one's body."""
    request[_STARTED] = response
    await response.prepare(request)


def _started(request: web.Request) -> web.StreamResponse | None:
    started = request.get(_STARTED)
    if started is None and request.writer.output_size > 0:
        # Bytes went out through a response prepared without start_response: the same case.
        started = web.StreamResponse()
    return started


def error_body(
    message: str, *, type: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def json_response(
    payload: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    # json_codec, not orjson: payloads may echo hostile text holding lone surrogates.
    return web.Response(
        body=json_codec.dumps(payload),
        status=status,
        content_type="application/json",
        headers=headers,
    )


class ProxyError(Exception):
    status = 500
    type = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        if code is not None:
            self.code = code

    def response(self) -> web.Response:
        body = error_body(self.message, type=self.type, code=self.code, param=self.param)
        return json_response(body, status=self.status)


class BadRequest(ProxyError):
    status = 400
    type = "invalid_request_error"


class PayloadTooLarge(BadRequest):
    status = 413
    code = "payload_too_large"


class UpstreamError(ProxyError):
    status = 502
    type = "upstream_error"
    code = "upstream_error"


class Overloaded(ProxyError):
    """Turned away before any work, with a hint when to come back."""

    status = 503
    type = "server_error"
    code = "overloaded"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def response(self) -> web.Response:
        response = super().response()
        response.headers["Retry-After"] = str(self.retry_after)
        return response


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"


_HTTP_ERRORS = {
    404: (
        "not_found_error",
        "not_found",
        "Unknown path {path}: shieldgate only serves the endpoints it can guard",
    ),
    405: (
        "invalid_request_error",
        "method_not_allowed",
        "Method {method} is not allowed on {path}",
    ),
    413: (
        "invalid_request_error",
        "payload_too_large",
        "Request body is larger than the limit of {limit} bytes",
    ),
}


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error_middleware(max_body_bytes: int) -> Any:
    """Renders ProxyError, aiohttp's HTTP errors and bugs as OpenAI error JSON."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ProxyError as exc:
            if (started := _started(request)) is not None:
                return _abort(request, started, exc)
            return exc.response()
        except web.HTTPException as exc:
            if (started := _started(request)) is not None:
                return _abort(request, started, exc)
            if exc.status not in _HTTP_ERRORS:
                raise
            kind, code, template = _HTTP_ERRORS[exc.status]
            message = template.format(
                path=request.path, method=request.method, limit=max_body_bytes
            )
            return json_response(error_body(message, type=kind, code=code), status=exc.status)
        except Exception as exc:
            if (started := _started(request)) is not None:
                return _abort(request, started, exc)
            log.exception("unhandled error on %s %s", request.method, request.path)
            body = error_body(
                "Internal error in shieldgate", type="server_error", code="internal_error"
            )
            return json_response(body, status=500)

    return middleware


def _abort(request: web.Request, started: web.StreamResponse, exc: Exception) -> web.StreamResponse:
    """An error once a response has started: a second response would be written into the
    first one's body, so the connection is aborted instead — every client sees that as a
    broken response (an unterminated body), never as a complete one."""
    if isinstance(exc, ConnectionError):
        log.info("client disconnected on %s %s", request.method, request.path)
    elif isinstance(exc, ProxyError | web.HTTPException):
        # The exception's type only: its message may quote upstream text.
        log.warning(
            "%s after the response started on %s %s: connection aborted",
            type(exc).__name__,
            request.method,
            request.path,
        )
    else:
        log.error(
            "unhandled %s after the response started on %s %s: connection aborted",
            type(exc).__name__,
            request.method,
            request.path,
            exc_info=(type(exc), exc, exc.__traceback__),
        )
    transport = request.transport
    if transport is not None:
        transport.abort()
    return started  # aiohttp's write_eof on it then finds the connection closed
