"""Running the app on a socket: used by the CLI, its workers and the end-to-end tests alike.

Shutdown is graceful (aiohttp's ``AppRunner.cleanup``, checked against aiohttp 3.14): the
listening socket closes first, so a new connection is refused at once; idle keep-alive
connections are closed; requests in flight — streams included — run on for up to
``settings.shutdown_grace`` seconds in all (see :func:`shutdown_timeout`); whatever is still
running then is cancelled, which closes its upstream response as a client disconnect does;
last the app's cleanup closes the upstream session, the response store and the audit trail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from proxy.app import create_app
from proxy.settings import Settings
from proxy.state import POLICY
from shields.policy import CompiledPolicy
from shields.routing import PolicySet

__all__ = ["RunningServer", "make_runner", "serve", "shutdown_timeout", "start_server"]

log = logging.getLogger("shieldgate.server")


def make_runner(app: web.Application, settings: Settings) -> web.AppRunner:
    """The runner every way of serving uses (CLI, workers, gunicorn)."""
    return web.AppRunner(
        app,
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
    site = web.TCPSite(runner, settings.host, settings.port, reuse_port=reuse_port or None)
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
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    server = await start_server(settings, policies, reuse_port=reuse_port)
    source = server.app[POLICY]
    reloads: set[asyncio.Task[bool]] = set()

    def reload() -> None:
        task = loop.create_task(source.reload())
        reloads.add(task)
        task.add_done_callback(reloads.discard)

    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGHUP, reload)
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
