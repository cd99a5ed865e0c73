"""Per-request identity: the request id (accepted from the client or made here) and tenant,
and what the shields decided for the request (for its access-log line).

The id travels in ``x-request-id`` both ways and in every log line written while the request
is handled (a context variable, so log calls deep in the stack need no plumbing).
"""

from __future__ import annotations

import contextvars
import random
import re
from collections.abc import Awaitable, Callable

from aiohttp import web

from shields.base import Verdict

__all__ = [
    "REQUEST_ID_HEADER",
    "begin_request",
    "current_request_id",
    "note_verdict",
    "noted_verdict",
    "request_id_middleware",
    "request_id_of",
]

REQUEST_ID_HEADER = "x-request-id"
# A client's id is echoed into logs and headers: only a short, plain token is accepted.
_VALID_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_REQUEST_ID = web.RequestKey("request_id", str)
_VERDICT = web.RequestKey("verdict", Verdict)
current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "shieldgate_request_id", default=None
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_new_id = random.getrandbits


def request_id_of(request: web.Request) -> str:
    return request.get(_REQUEST_ID) or "-"


def note_verdict(request: web.Request, verdict: Verdict) -> None:
    """Records an enforced decision of a stage; a block outweighs a redaction, whatever the
    order (input redacted, then the output blocked, say)."""
    if request.get(_VERDICT) is not Verdict.BLOCK:
        request[_VERDICT] = verdict


def noted_verdict(request: web.Request) -> Verdict | None:
    """The strongest decision recorded for the request; None when no shield acted on it."""
    return request.get(_VERDICT)


@web.middleware
async def request_id_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    token = begin_request(request)
    try:
        return await handler(request)
    finally:
        current_request_id.reset(token)


def begin_request(request: web.Request) -> contextvars.Token[str | None]:
    """Gives the request its id (the client's, when a plain token) and makes it the current
    one; the caller resets ``current_request_id`` with the token returned when done. The
    proxy's own app does this within its one middleware (``proxy.serving.middleware``)."""
    offered = request.headers.get(REQUEST_ID_HEADER, "")
    # 32 random hex digits, like uuid4().hex. An id correlates log lines, it guards nothing:
    # Python's generator is enough, and unlike os.urandom it needs no system call per request.
    request_id = (
        offered if offered and _VALID_ID.fullmatch(offered) else _new_id(128).to_bytes(16).hex()
    )
    request[_REQUEST_ID] = request_id
    return current_request_id.set(request_id)
