"""Every error the proxy answers with, as OpenAI-shaped JSON, through one middleware.

Clients are OpenAI SDKs: they parse ``{"error": {"message", "type", "param", "code"}}`` into
typed exceptions, so even a 404 for an unknown path or a 413 for a huge body uses that shape.
On the Anthropic surface (``/v1/messages``) the same errors are rewritten in Anthropic's shape
(``anthropic_errors``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from aiohttp import web

from shields import json_codec
from shields.openai.errors import RequestShapeError

__all__ = [
    "ANTHROPIC_PATH",
    "BadRequest",
    "ClientBodyTimeout",
    "ClosingError",
    "ExternalConnectorError",
    "McpToolsChanged",
    "McpUnavailable",
    "NotFound",
    "Overloaded",
    "PayloadTooLarge",
    "ProxyError",
    "StoreUnavailable",
    "UndecodableBody",
    "UpstreamError",
    "UpstreamTimeout",
    "anthropic_answer",
    "anthropic_error_body",
    "anthropic_error_type",
    "anthropic_errors",
    "anthropic_path",
    "bad_request",
    "error_answer",
    "error_body",
    "error_middleware",
    "json_response",
    "read_as_bad_request",
    "send_event_stream",
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


async def send_event_stream(
    request: web.Request, stream: bytes, *, headers: dict[str, str] | None = None
) -> web.StreamResponse:
    """A whole event stream of the proxy's own (a refusal, an answer whose events were all
    known before the first byte), sent at once."""
    response = web.StreamResponse(headers=headers)
    response.content_type = "text/event-stream"
    await start_response(request, response)
    await response.write(stream)
    await response.write_eof()
    return response


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


class ExternalConnectorError(ProxyError):
    """A remote tool server the request needs failed before the model was asked anything (an
    MCP server's tool listing): 424, as OpenAI answers it."""

    status = 424
    type = "external_connector_error"
    code = "mcp_list_tools_failed"


class McpToolsChanged(ExternalConnectorError):
    """An MCP server's tools are not the ones pinned or first seen, and the setting
    ``mcp_tool_changes`` is ``refuse_server`` (``proxy.mcp.pinning``)."""

    code = "mcp_tools_changed"


class McpUnavailable(ProxyError):
    """MCP servers are configured but the MCP SDK is not installed (the ``mcp`` extra)."""

    status = 501
    code = "mcp_unavailable"


def bad_request(error: RequestShapeError) -> BadRequest:
    """A request the library's reader refused (``shields.openai``), as the proxy answers it:
    a 400 in OpenAI's error shape, with the reader's message, ``param`` and ``code``."""
    return BadRequest(error.message, param=error.param, code=error.code)


@contextlib.contextmanager
def read_as_bad_request() -> Iterator[None]:
    """Reading a request with the library's reader: its shape errors become ``bad_request``."""
    try:
        yield
    except RequestShapeError as exc:
        raise bad_request(exc) from None


class ClosingError(BadRequest):
    """An error after which the connection is closed: what is left of the request's bytes on
    it cannot be trusted to frame the next request."""

    def response(self) -> web.Response:
        response = super().response()
        response.force_close()
        return response


class PayloadTooLarge(ClosingError):
    status = 413
    code = "payload_too_large"


class UndecodableBody(ClosingError):
    """Corrupt ``Content-Encoding`` or broken chunked framing."""

    code = "invalid_body"


class ClientBodyTimeout(ClosingError):
    """The request's body stopped arriving: the answer is a 408, on a connection closed after
    it (the rest of the body, if it ever comes, is not read)."""

    status = 408
    code = "request_timeout"


class NotFound(ProxyError):
    status = 404
    type = "invalid_request_error"


class StoreUnavailable(ProxyError):
    """The responses store failed (a database down): worth retrying once it is back."""

    status = 503
    type = "server_error"
    code = "store_unavailable"
    # A few seconds: the PostgreSQL store's pool reconnects within them once the database is
    # back (see proxy.store.postgres).
    retry_after = 5

    def response(self) -> web.Response:
        response = super().response()
        response.headers["Retry-After"] = str(self.retry_after)
        return response


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
    """Renders ProxyError, aiohttp's HTTP errors and bugs as OpenAI error JSON
    (``error_answer``). The proxy's own app runs it within its one middleware
    (``proxy.serving.middleware``)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except Exception as exc:
            return error_answer(request, exc, max_body_bytes)

    return middleware


def error_answer(request: web.Request, exc: Exception, max_body_bytes: int) -> web.StreamResponse:
    """The answer to an exception a handler raised: a ProxyError's own response, aiohttp's
    404/405/413 in OpenAI's shape, a 500 for anything else (logged); once a response has
    started, the connection aborted instead (``_abort``). Any other aiohttp HTTP exception
    (a status without an OpenAI-shaped answer here) is raised again, for aiohttp to send."""
    if isinstance(exc, ProxyError):
        if (started := _started(request)) is not None:
            return _abort(request, started, exc)
        return exc.response()
    if isinstance(exc, web.HTTPException):
        if (started := _started(request)) is not None:
            return _abort(request, started, exc)
        if exc.status not in _HTTP_ERRORS:
            raise exc
        kind, code, template = _HTTP_ERRORS[exc.status]
        message = template.format(path=request.path, method=request.method, limit=max_body_bytes)
        return json_response(error_body(message, type=kind, code=code), status=exc.status)
    if (started := _started(request)) is not None:
        return _abort(request, started, exc)
    log.error(
        "unhandled error on %s %s",
        request.method,
        request.path,
        exc_info=(type(exc), exc, exc.__traceback__),
    )
    body = error_body("Internal error in shieldgate", type="server_error", code="internal_error")
    return json_response(body, status=500)


# The Anthropic Messages surface: its clients are Anthropic SDKs, which read errors in Anthropic's
# shape, ``{"type": "error", "error": {"type", "message"}}``.
ANTHROPIC_PATH = "/v1/messages"

# Anthropic's error type for each status its API answers with (its "Errors" page); 503 is the
# proxy's own "too many streams", which Anthropic's API says with 529.
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def anthropic_path(path: str) -> bool:
    """Whether ``path`` is on the Anthropic surface (``/v1/messages`` and below)."""
    return path == ANTHROPIC_PATH or path.startswith(ANTHROPIC_PATH + "/")


def anthropic_error_type(status: int) -> str:
    kind = _ANTHROPIC_TYPES.get(status)
    if kind is not None:
        return kind
    return "invalid_request_error" if status < 500 else "api_error"


def anthropic_error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


@web.middleware
async def anthropic_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """On the Anthropic surface, every error answer in Anthropic's shape, whoever made it: the
    error middleware's (``ProxyError`` and aiohttp's 404/405/413), the auth middleware's 401,
    the exchange's relayed upstream errors (their message as the output shields checked it).
    One rewrite here rather than a second error shape in every place that answers an error.
    Placed outside ``error_middleware``, which turns every exception into a response first.
    (The proxy's own app does the same within its one middleware: ``anthropic_answer``.)"""
    response = await handler(request)
    anthropic_answer(request, response)
    return response


def anthropic_answer(request: web.Request, response: web.StreamResponse) -> None:
    """Rewrites ``response`` in Anthropic's error shape when it is an error answer not sent
    yet, to a request on the Anthropic surface (``anthropic_errors``)."""
    if (
        response.status >= 400
        and isinstance(response, web.Response)
        and not response.prepared
        and anthropic_path(request.path)
    ):
        _to_anthropic(response)


def _to_anthropic(response: web.Response) -> None:
    """Rewrites an error response's body in place (status and headers kept): its ``message``
    in Anthropic's shape, the type from the status. A body already in that shape stays; one
    with no message (a relayed body the shields had no reason to rewrite, not OpenAI-shaped)
    becomes a generic message of its status."""
    message = None
    body = response.body
    if isinstance(body, bytes | bytearray):
        try:
            parsed = json_codec.loads(bytes(body))
        except json_codec.InvalidJSON:
            parsed = None
        if isinstance(parsed, dict):
            if parsed.get("type") == "error" and isinstance(parsed.get("error"), dict):
                return
            error = parsed.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                message = error["message"]
    if message is None:
        message = f"HTTP {response.status}: {response.reason}"
    kind = anthropic_error_type(response.status)
    response.body = json_codec.dumps(anthropic_error_body(kind, message))
    response.content_type = "application/json"


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
