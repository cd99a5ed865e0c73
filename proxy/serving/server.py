"""Running the app on a socket: used by the CLI, its workers and the end-to-end tests alike.

Shutdown is graceful (aiohttp's ``AppRunner.cleanup``, checked against aiohttp 3.14): the
listening socket closes first, so a new connection is refused at once; idle keep-alive
connections are closed; requests in flight — streams included — run on for up to
``settings.shutdown_grace`` seconds in all (see :func:`shutdown_timeout`); whatever is still
running then is cancelled, which closes its upstream response as a client disconnect does;
last the app's cleanup closes the upstream session, the response store and the audit trail.

:func:`run` runs the server's coroutine on uvloop when it is installed (``loop="auto"``), which
costs the proxy 2–16% less CPU per non-stream request than asyncio's own loop
(``bench/perf/overhead_bench.py``, both loops in one run). Most of a request's time is aiohttp's and
shieldgate's Python code, which no event loop speeds up, hence no more than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from aiohttp import web

from proxy.app import create_app
from proxy.ops.policy_source import PolicySource
from proxy.serving.connection import ClientLimits, ProxyRunner
from proxy.settings import Settings
from proxy.state import POLICY
from shields.policy import CompiledPolicy
from shields.routing import PolicySet

__all__ = [
    "GC_YOUNG_THRESHOLD",
    "EventLoop",
    "RunningServer",
    "freeze_startup_heap",
    "loop_factory",
    "make_runner",
    "run",
    "serve",
    "shutdown_timeout",
    "start_server",
]

log = logging.getLogger("shieldgate.server")

# Connections waiting to be accepted. aiohttp's default of 128 overflows when hundreds of
# clients connect at once (a burst of streams): the kernel then drops their SYNs and each
# retries after 1, 3, 7, 15, 31 s — seconds of extra time to first byte, measured with
# bench/perf/memory_bench.py. 2048 is gunicorn's default; the kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 2048

# See ``freeze_startup_heap``: CPython's default is 700.
GC_YOUNG_THRESHOLD = 10_000

EventLoop = Literal["auto", "asyncio", "uvloop"]
_T = TypeVar("_T")


def loop_factory(kind: EventLoop = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop to serve on: ``auto`` is uvloop when it is installed, else asyncio's own
    (None); ``uvloop`` raises RuntimeError when it is not installed."""
    if kind == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if kind == "uvloop":
            raise RuntimeError("the uvloop event loop was asked for but is not installed") from None
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, _T], *, loop: EventLoop = "auto") -> _T:
    """``asyncio.run(main)`` on the event loop ``loop`` names (see :func:`loop_factory`)."""
    try:
        factory = loop_factory(loop)
    except RuntimeError:
        main.close()  # never to be awaited: no "coroutine was never awaited" warning
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def freeze_startup_heap() -> None:
    """Moves everything alive now (modules, the compiled policies, the app) out of the garbage
    collector's reach, and makes its young-generation collections rarer.

    Those hundreds of thousands of long-lived objects are otherwise traversed again by every
    full collection, and a stream's per-event allocations trigger one every few thousand
    events: about a quarter of the guarded stream path's CPU time went there
    (bench/perf/stream_bench.py, py-spy). Objects made later (a reloaded policy) are collected as
    usual.

    CPython collects its youngest generation whenever 700 more container objects are alive
    than at the last collection. The requests in flight cross that line by themselves, many
    times a second at 64 concurrent requests, and each collection walks all their objects only
    to find them alive and move them to the next generation, where they are walked again: some
    10% of the proxy's CPU time per non-stream request at that concurrency (collection times
    from ``gc.callbacks`` under bench/perf/overhead_bench.py's load). A request frees what it made
    by reference counting, not by the collector, so waiting for ``GC_YOUNG_THRESHOLD`` objects
    instead costs little memory and leaves reference cycles collected all the same.
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, older, oldest)


def make_runner(app: web.Application, settings: Settings) -> web.AppRunner:
    """The runner every way of serving uses (CLI, workers, gunicorn); aiohttp's own error
    answers (a request it cannot parse) in OpenAI's shape, and the client's time for headers
    and body and its connections bounded, see :class:`ProxyRunner`."""
    return ProxyRunner(
        app,
        limits=ClientLimits(
            header_timeout=settings.client_header_timeout,
            body_timeout=settings.client_body_timeout,
            per_address=settings.max_connections_per_client,
        ),
        # When a client disconnects its handler is cancelled, which closes the upstream
        # response even while the proxy is waiting for the upstream's next bytes.
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=shutdown_timeout(settings.shutdown_grace),
    )


def shutdown_timeout(grace: float) -> float:
    """aiohttp's ``shutdown_timeout`` giving requests in flight ``grace`` seconds in all.

    aiohttp 3.14 waits for a handler in flight twice: up to ``shutdown_timeout`` for it to
    finish, then — after a "cancel" that only fails further reads of the request body, which
    a streaming handler has long finished — up to ``shutdown_timeout`` again, and only then
    cancels its task. So a stream gets twice the timeout: half the grace each. And a timeout
    of 0 means no timeout at all there, so "no grace" is a thousandth of a second.
    """
    return max(grace / 2, 0.001)


class _Reloads:
    """SIGHUP's handler: reloads the policy source, or, before there is one, remembers to."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._source: PolicySource | None = None
        self._pending = False
        self._tasks: set[asyncio.Task[bool]] = set()

    def request(self) -> None:
        if self._source is None:
            self._pending = True
            return
        task = self._loop.create_task(self._source.reload())
        self._tasks.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._tasks.discard)

    def attach(self, source: PolicySource) -> None:
        self._source = source
        if self._pending:
            self._pending = False
            self.request()


@dataclass(slots=True)
class RunningServer:
    runner: web.AppRunner
    app: web.Application
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def open_connections(self) -> int:
        server = self.runner.server
        return 0 if server is None else len(server.connections)

    async def close(self) -> None:
        """Stops listening, waits up to the grace period for requests in flight, closes."""
        await self.runner.cleanup()


async def start_server(
    settings: Settings, policy: CompiledPolicy | PolicySet, *, reuse_port: bool = False
) -> RunningServer:
    """Listens on ``settings.host:port``. ``reuse_port`` sets SO_REUSEPORT, so that several
    processes can share the port (``shieldgate serve --workers N``)."""
    runner = make_runner(create_app(settings, policy), settings)
    await runner.setup()
    site = web.TCPSite(
        runner,
        settings.host,
        settings.port,
        reuse_port=reuse_port or None,
        backlog=LISTEN_BACKLOG,
    )
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    port = settings.port
    for address in runner.addresses:
        if isinstance(address, tuple):
            port = address[1]
            break
    return RunningServer(runner=runner, app=runner.app, host=settings.host, port=port)


async def serve(
    settings: Settings,
    policies: PolicySet,
    on_ready: Callable[[str], None],
    *,
    reuse_port: bool = False,
    parent_fd: int | None = None,
) -> None:
    """Serves until SIGTERM or SIGINT, then shuts down gracefully; SIGHUP reloads the policy.

    ``on_ready(url)`` is called once the socket listens and the signal handlers are in place:
    whoever waits for it may signal right after. With ``parent_fd`` (a pipe from a parent
    process), end of file on it — the parent died — stops the server as SIGTERM would.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    log.debug("event loop: %s", type(loop).__module__.partition(".")[0])
    # Every handler is in place before the socket listens: a client (or an orchestrator) that
    # sees the port open may signal at once, and SIGHUP's default action would kill the
    # server. A SIGHUP before the app exists is kept and served once it does.
    reloads = _Reloads(loop)
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGHUP, reloads.request)
    server = await start_server(settings, policies, reuse_port=reuse_port)
    freeze_startup_heap()
    reloads.attach(server.app[POLICY])
    if parent_fd is not None:

        def parent_readable() -> None:
            if not os.read(parent_fd, 4096):  # end of file: the parent is gone
                loop.remove_reader(parent_fd)
                log.warning("parent process gone, shutting down")
                stop.set()

        loop.add_reader(parent_fd, parent_readable)
    on_ready(server.url)
    try:
        await stop.wait()
    finally:
        log.info(
            "shutting down: not accepting connections; %d open, requests in flight get up to "
            "%gs to finish",
            server.open_connections,
            settings.shutdown_grace,
        )
        if parent_fd is not None:
            loop.remove_reader(parent_fd)
        await server.close()
        log.info("stopped")
