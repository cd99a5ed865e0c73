"""A fast fake OpenAI-compatible upstream for the benchmarks, run in its own process.

A bare ``asyncio.Protocol`` speaking just enough HTTP/1.1 (keep-alive, ``Content-Length``
request bodies, chunked streamed replies), so that it costs a few microseconds per request and
the proxy, not the fake, is what a benchmark measures. Every reply is built once and cached.

``POST /v1/chat/completions`` answers by the request's ``model``:

``bench-json``         ``harness.COMPLETION``, a non-stream ``chat.completion`` (about 1 KB).
``stream-SIZE[-CHUNK[-SEED]]``  SIZE characters of prose (``harness.make_stream``, seed
                       SEED, default 1 + SIZE) in CHUNK-character (default 4)
                       ``chat.completion.chunk`` events, sent as fast as the socket takes
                       them, in 64 KiB writes.
``slow-EVENTS-MS``     EVENTS 4-character events, one every MS milliseconds.

Anything else is a 404 in OpenAI's error shape. ``GET /v1/models`` lists the models.

Run: ``python -m bench.perf.fake_upstream [--host 127.0.0.1] [--port 0] [--loop auto]``. It prints
``fake upstream listening on URL`` once ready and runs until SIGTERM, SIGINT, or the end of
its standard input when that is a pipe (its parent, the benchmark, is gone).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import stat
import sys
from collections.abc import Callable, Coroutine
from typing import Any, cast

import orjson

from bench.perf.harness import COMPLETION, make_events, resolve_loop, slow_events

WRITE_SIZE = 64 * 1024
STREAM_CHUNK = 4
MAX_HEAD = 64 * 1024


def _response(status: str, content_type: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)
_JSON_REPLY = _response("200 OK", "application/json", COMPLETION)
_MODELS = _response(
    "200 OK",
    "application/json",
    json.dumps(
        {"object": "list", "data": [{"id": "bench-json", "object": "model", "owned_by": "bench"}]}
    ).encode(),
)


def _not_found(message: str) -> bytes:
    error = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return _response("404 Not Found", "application/json", json.dumps(error).encode())


def _chunk(data: bytes | memoryview) -> bytes:
    return b"%x\r\n" % len(data) + bytes(data) + b"\r\n"


class _Cache:
    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.slow: dict[str, tuple[list[bytes], float]] = {}

    def stream_body(self, model: str) -> bytes | None:
        if model not in self.bodies:
            try:
                numbers = [int(n) for n in model.removeprefix("stream-").split("-")]
            except ValueError:
                return None
            if not 1 <= len(numbers) <= 3 or min(numbers[:2]) < 1:
                return None
            size, chunk, seed = numbers + [numbers[0], STREAM_CHUNK, 1 + numbers[0]][len(numbers) :]
            _, events = make_events(size, chunk, seed)
            self.bodies[model] = b"".join(events)
        return self.bodies[model]

    def slow_stream(self, model: str) -> tuple[list[bytes], float] | None:
        if model not in self.slow:
            found = slow_events(model)
            if found is None:
                return None
            _, events, interval = found
            self.slow[model] = ([_chunk(e) for e in events], interval)
        return self.slow[model]


class Connection(asyncio.Protocol):
    """One client connection; requests are answered in order, one at a time."""

    def __init__(self, cache: _Cache, tasks: set[asyncio.Task[None]]) -> None:
        self.cache = cache
        self.tasks = tasks
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.streaming: asyncio.Task[None] | None = None
        self.writable: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports have the methods of asyncio.Transport without subclassing it.
        self.transport = cast(asyncio.Transport, transport)
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.streaming is not None:
            self.streaming.cancel()
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)
        self.writable = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.streaming is None:
            self._answer()

    def _answer(self) -> None:
        assert self.transport is not None
        while self.streaming is None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self.transport.close()
                return
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            method, target = lines[0].split(" ", 2)[:2]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "transfer-encoding":
                    # Not needed by any benchmark client: say so rather than misparse.
                    self.transport.write(_response("501 Not Implemented", "text/plain", b"no"))
                    self.transport.close()
                    return
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + 4 : total])
            del self.buffer[:total]
            self._route(method, target.split("?", 1)[0], body)

    def _route(self, method: str, path: str, body: bytes) -> None:
        assert self.transport is not None
        if method == "GET" and path.endswith("/models"):
            self.transport.write(_MODELS)
            return
        if method != "POST" or not path.endswith("/chat/completions"):
            self.transport.write(_not_found(f"no route {method} {path}"))
            return
        try:
            # orjson: a benchmark's request may be a megabyte of conversation, which Python's
            # parser would spend milliseconds on, in both paths alike, as noise.
            model = orjson.loads(body).get("model")
        except (ValueError, AttributeError):
            model = None
        if model == "bench-json":
            self.transport.write(_JSON_REPLY)
        elif isinstance(model, str) and model.startswith("stream-"):
            stream = self.cache.stream_body(model)
            if stream is None:
                self.transport.write(_not_found(f"no model {model!r}"))
            else:
                self._spawn(self._send_fast(stream))
        elif isinstance(model, str) and model.startswith("slow-"):
            slow = self.cache.slow_stream(model)
            if slow is None:
                self.transport.write(_not_found(f"no model {model!r}"))
            else:
                self._spawn(self._send_slow(*slow))
        else:
            self.transport.write(_not_found(f"no model {model!r}"))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.streaming = task
        self.tasks.add(task)
        task.add_done_callback(self._streamed)

    def _streamed(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self.streaming = None
        if self.transport is not None and not self.transport.is_closing() and self.buffer:
            self._answer()

    async def _drain(self) -> None:
        if self.writable is not None:
            await self.writable

    async def _send_fast(self, body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(_STREAM_HEAD)
        view = memoryview(body)
        for start in range(0, len(view), WRITE_SIZE):
            if self.transport.is_closing():
                return
            self.transport.write(_chunk(view[start : start + WRITE_SIZE]))
            await self._drain()
        self.transport.write(b"0\r\n\r\n")

    async def _send_slow(self, chunks: list[bytes], interval: float) -> None:
        assert self.transport is not None
        self.transport.write(_STREAM_HEAD)
        for chunk in chunks:
            if self.transport.is_closing():
                return
            self.transport.write(chunk)
            await asyncio.sleep(interval)
        self.transport.write(b"0\r\n\r\n")


async def serve(
    host: str, port: int, on_ready: Callable[[str], None], *, standalone: bool = False
) -> None:
    """Serves until cancelled; ``standalone`` (the script) also stops on SIGTERM and SIGINT,
    and on the end of standard input when that is a pipe."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    if standalone:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    cache = _Cache()
    tasks: set[asyncio.Task[None]] = set()
    server = await loop.create_server(
        lambda: Connection(cache, tasks), host, port, backlog=4096, reuse_address=True
    )
    if standalone and stat.S_ISFIFO(os.fstat(0).st_mode):

        def parent_readable() -> None:
            if not os.read(0, 4096):  # end of file: the benchmark is gone
                loop.remove_reader(0)
                stop.set()

        loop.add_reader(0, parent_readable)
    bound = server.sockets[0].getsockname()
    on_ready(f"http://{bound[0]}:{bound[1]}")
    try:
        await stop.wait()
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    args = parser.parse_args()
    factory = None
    if resolve_loop(args.loop) == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop

    def ready(url: str) -> None:
        print(f"fake upstream listening on {url}", flush=True)

    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve(args.host, args.port, ready, standalone=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
