"""Large request bodies are parsed and checked off the event loop.

Reading and checking a request is pure CPU: a 4 MiB body of 125,000 tiny messages costs about
0.8 s to parse and 2 s to check, and on the event loop that is 2.8 s in which no other request
is answered (health checks included). Above ``OFF_LOOP_BYTES`` the work runs on a worker thread
instead: the interpreter switches threads every few milliseconds (``sys.getswitchinterval``),
so the loop keeps serving while the large request is checked. Small bodies — nearly all of
them — stay on the loop, where a thread hop would cost more than the work.

The work done there is the same code with the same inputs: the request's own objects (which
the input stage rewrites in place) and immutable shields; the context (request id for log
lines) goes with it (``asyncio.to_thread`` copies it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["OFF_LOOP_BYTES", "off_loop_if_large"]

# ~25 ms of parsing and checking at the slowest (tiny messages); below it the loop is faster.
OFF_LOOP_BYTES = 64 * 1024

_P = ParamSpec("_P")
_T = TypeVar("_T")


async def off_loop_if_large(
    size: int, work: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """``work(*args, **kwargs)``: on the loop for a body under ``OFF_LOOP_BYTES``, else on a
    worker thread. Exceptions (a 400 for a bad body, say) come back as they were raised."""
    if size < OFF_LOOP_BYTES:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)
