"""Large request bodies are parsed and checked off the event loop — when that work is long.

Reading and checking a request is pure CPU: a 4 MiB body of 125,000 tiny messages costs about
0.8 s to parse and 2 s to check, and on the event loop that is 2.8 s in which no other request
is answered (health checks included). Above ``OFF_LOOP_BYTES`` the work runs on a worker thread
instead: the interpreter switches threads every few milliseconds (``sys.getswitchinterval``),
so the loop keeps serving while the large request is checked. Small bodies — nearly all of
them — stay on the loop, where a thread hop would cost more than the work.

A hop is not free either: the loop must be woken when the thread is done, which on a busy
machine waits for a CPU — milliseconds per hop, measured under load (bench/perf/history_bench.py).
So a large body that is quick to read stays on the loop too: parsing costs about a microsecond
per 2 KB and a few microseconds per JSON object, so a body of up to ``CHEAP_BODY_BYTES`` with
at most ``CHEAP_BODY_OBJECTS`` objects (an agent's 400 KB conversation of a few hundred turns)
is read in a few milliseconds (``parse_on_loop``); and an input check whose texts the input
cache remembers costs a lookup per text (``check_on_loop``, ``scan_on_loop``). What stays long
— many tiny objects, much new text to scan — still goes to a thread.

The work done there is the same code with the same inputs: the request's own objects (which
the input stage rewrites in place) and immutable shields; the context (request id for log
lines) goes with it (``asyncio.to_thread`` copies it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = [
    "CHEAP_BODY_BYTES",
    "CHEAP_BODY_OBJECTS",
    "CHEAP_LOOKUPS",
    "CHEAP_SCAN_CHARS",
    "OFF_LOOP_BYTES",
    "check_on_loop",
    "off_loop_if_large",
    "off_loop_unless",
    "parse_on_loop",
    "scan_on_loop",
]

# ~25 ms of parsing and checking at the slowest (tiny messages); below it the loop is faster.
OFF_LOOP_BYTES = 64 * 1024
# A larger body read on the loop all the same: at most this size and this many JSON objects
# (messages, content parts, tool calls...), a few milliseconds of parsing.
CHEAP_BODY_BYTES = 2 * 1024 * 1024
CHEAP_BODY_OBJECTS = 1_000
# Input cache lookups done on the loop for a large body: about a microsecond each.
CHEAP_LOOKUPS = 2_000
# Scanning done on the loop for a large body, in characters (a scan's fixed cost counted as
# ``shields.openai.input_check.SCAN_COST_CHARS``): about 2 ms at 30 MB/s.
CHEAP_SCAN_CHARS = 64 * 1024

_P = ParamSpec("_P")
_T = TypeVar("_T")


def parse_on_loop(raw: bytes) -> bool:
    """Whether reading this body is short enough for the event loop: small, or large but made
    of few objects (counting braces is a pass in C: about 20 µs for 400 KB)."""
    if len(raw) < OFF_LOOP_BYTES:
        return True
    return len(raw) <= CHEAP_BODY_BYTES and raw.count(b"{") <= CHEAP_BODY_OBJECTS


def check_on_loop(body_size: int, texts: int) -> bool:
    """Whether an input check may start on the loop: its cache lookups are few."""
    return body_size < OFF_LOOP_BYTES or texts <= CHEAP_LOOKUPS


def scan_on_loop(body_size: int, to_scan: int) -> bool:
    """Whether the scanning an input check has left (``PendingCheck.to_scan``) is short
    enough for the loop."""
    return body_size < OFF_LOOP_BYTES or to_scan <= CHEAP_SCAN_CHARS


async def off_loop_unless(
    on_loop: bool, work: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """``work(*args, **kwargs)``: on the loop when ``on_loop``, else on a worker thread.
    Exceptions (a 400 for a bad body, say) come back as they were raised."""
    if on_loop:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)


async def off_loop_if_large(
    size: int, work: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
) -> _T:
    """``work(*args, **kwargs)``: on the loop for a body under ``OFF_LOOP_BYTES``, else on a
    worker thread. Exceptions (a 400 for a bad body, say) come back as they were raised."""
    return await off_loop_unless(size < OFF_LOOP_BYTES, work, *args, **kwargs)
