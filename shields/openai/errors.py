"""The shapes the dialect's readers cannot check, as errors of their own (no HTTP here)."""

from __future__ import annotations

__all__ = ["MalformedReply", "RequestShapeError"]


class RequestShapeError(ValueError):
    """A request the reader refuses: a shape it cannot check, or text where it does not read.

    ``param`` names the offending field as OpenAI's errors do (``messages[0].role``); ``code``
    is OpenAI's error code when there is one (``unknown_parameter``). The proxy answers with
    a 400 carrying all three (``proxy.errors.bad_request``).
    """

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


class MalformedReply(ValueError):
    """The upstream sent a shape the proxy cannot check: fail closed."""
