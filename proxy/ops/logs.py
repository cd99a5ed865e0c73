"""Structured JSON logs: one object per line, with the request id of the request being served.

Log calls across the proxy pass values as ``%s`` arguments and structured fields in ``extra``;
none of them ever carries message content, so the JSON here holds none either.

aiohttp's own loggers are another matter: the text of its exceptions quotes the bytes of the
request (a parser error shows the line it choked on — which may be the prompt itself).
:class:`RedactExceptions` keeps their tracebacks (file, line, function: code, not data) but
drops every exception's message, and reduces errors caused by the client's bytes (a malformed
request, a body that does not decode) to one line naming the exception class.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from types import TracebackType
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web import RequestPayloadError

from proxy.serving.request_context import current_request_id

__all__ = [
    "CLIENT_ERRORS",
    "JsonFormatter",
    "RedactExceptions",
    "configure_logging",
    "redact_aiohttp_logs",
    "redacted_traceback",
]

# aiohttp's loggers: ``aiohttp.server`` above all (parser errors), the others for good measure.
_AIOHTTP_LOGGERS = (
    "aiohttp.access",
    "aiohttp.client",
    "aiohttp.internal",
    "aiohttp.server",
    "aiohttp.web",
    "aiohttp.websocket",
)
# Errors the client's bytes caused: not a fault of shieldgate, and no traceback is of use.
CLIENT_ERRORS: tuple[type[BaseException], ...] = (
    HttpProcessingError,
    RequestPayloadError,
    ConnectionError,
)

# Attributes every LogRecord has; anything else came in through ``extra=`` and is kept.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            entry["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        elif record.exc_text:  # set by RedactExceptions
            entry["error"] = record.exc_text
        return json.dumps(entry, default=str)


def redacted_traceback(exc: BaseException) -> str:
    """A traceback in the usual layout whose exceptions show their class, never their text
    (nor their notes): the frames name code, the messages may quote data."""
    chain: list[tuple[BaseException, str | None]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    link: str | None = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append((current, link))
        if current.__cause__ is not None:
            current, link = current.__cause__, "direct cause"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, link = current.__context__, "context"
        else:
            current = None
    parts: list[str] = []
    for error, why in reversed(chain):
        tb: TracebackType | None = error.__traceback__
        if tb is not None:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(traceback.format_tb(tb))
        parts.append(f"{type(error).__module__}.{type(error).__qualname__}\n")
        if why == "direct cause":
            parts.append(
                "\nThe above exception was the direct cause of the following exception:\n\n"
            )
        elif why == "context":
            parts.append(
                "\nDuring handling of the above exception, another exception occurred:\n\n"
            )
    return "".join(parts).rstrip("\n")


class RedactExceptions(logging.Filter):
    """Drops the text of exceptions logged by aiohttp, which may quote the client's bytes.

    An error the client's bytes caused becomes one line, ``<message>: <ExceptionClass>``,
    without traceback; any other keeps its traceback, with each exception's class in place
    of its message."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc_info = record.exc_info
        if not exc_info or exc_info[1] is None:
            return True
        exc = exc_info[1]
        record.exc_info = None
        if isinstance(exc, CLIENT_ERRORS):
            record.msg = f"{record.getMessage()}: {type(exc).__name__}"
            record.args = None
            record.exc_text = None
        else:
            record.exc_text = redacted_traceback(exc)
        return True


def redact_aiohttp_logs() -> None:
    """Installs :class:`RedactExceptions` on aiohttp's loggers (once; any later call is a
    no-op). ``configure_logging`` does, and so does ``create_app``."""
    for name in _AIOHTTP_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactExceptions) for f in logger.filters):
            logger.addFilter(RedactExceptions())


def configure_logging(level: str, *, json_format: bool = True) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if json_format:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    redact_aiohttp_logs()
