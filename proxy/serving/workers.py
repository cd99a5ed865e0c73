"""``shieldgate serve --workers N``: N processes sharing one port with SO_REUSEPORT.

The parent is a small supervisor, not a server:

1. It binds (without listening) a socket with SO_REUSEPORT to the address, which proves the
   port is free and, for ``--port 0``, picks the port every worker will use (N workers
   binding port 0 would get N different ports).
2. It starts N workers, ``python -m proxy.serving.workers``, each in its own process group, and
   hands
   each the resolved settings as one JSON line on its stdin (secrets included, never on a
   command line or in the environment). A worker loads the policy, listens with SO_REUSEPORT
   (the kernel spreads new connections over the workers) and answers one JSON line on its
   stdout: ``{"ready": URL}`` or ``{"error": MESSAGE, "code": N}``.
3. Once every worker is ready it prints the single line ``shieldgate listening on URL``.
4. It forwards SIGTERM and SIGINT (graceful shutdown in every worker) and SIGHUP (policy
   reload) to the workers, and exits when they have exited: 0 after a clean stop.

Nothing is restarted. A worker that exits on its own makes the parent stop the others and exit
with that worker's status (128 + signal when it was killed), so that whatever supervises the
parent (systemd, Kubernetes, Docker's restart policy) sees the failure and restarts the whole
server. A worker whose parent dies (SIGKILL) sees end of file on its stdin and shuts down.

Little needs sharing between the workers: the policy is read from the same file by each,
the SQLite responses store is one file several processes may share (a PostgreSQL one is shared
anyway), and the audit trail's hash key is made once here so that all workers hash a value
alike. Metrics are the exception: the parent makes a directory for this run (inside
``PROMETHEUS_MULTIPROC_DIR`` when that is set, else the system's temporary directory) and
hands it to every worker as ``PROMETHEUS_MULTIPROC_DIR``, so that ``/metrics``, whichever
worker answers, adds up all of them (see ``proxy.ops.metrics``). A worker's live gauges are dropped
when it exits, and the directory is deleted when the parent is done.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any

from proxy.settings import Settings

__all__ = ["reserve_port", "serve_workers", "worker_main"]

log = logging.getLogger("shieldgate.workers")

EXIT_FAILURE = 1
MULTIPROC_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (the first address ``host`` resolves to) with the
    options the workers' listening sockets use, so that binding it proves they can bind too.
    It never listens, so it never takes a connection. Raises OSError."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio does on POSIX
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # as asyncio does
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def serve_workers(settings: Settings) -> int:
    """Runs ``settings.workers`` worker processes until they stop; returns the exit status."""
    if not hasattr(socket, "SO_REUSEPORT"):
        print("shieldgate: --workers needs SO_REUSEPORT, which this system lacks", file=sys.stderr)
        return 2
    try:
        reservation = reserve_port(settings.host, settings.port)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f"{settings.host}:{settings.port}"
        print(f"shieldgate: cannot listen on {where}: {reason}", file=sys.stderr)
        return EXIT_FAILURE
    if settings.responses_db == ":memory:":
        log.warning(
            "responses_db is :memory: with %d workers: each worker has its own store, so a "
            "stored response is found only when the same worker answers",
            settings.workers,
        )
    shared = settings.model_copy(
        update={
            "port": reservation.getsockname()[1],
            "audit_hash_key": settings.audit_hash_key or secrets.token_hex(32),
        }
    )
    # Made before any worker imports prometheus-client, which reads the variable at import.
    metrics_dir = tempfile.mkdtemp(
        prefix="shieldgate-metrics-", dir=os.environ.get(MULTIPROC_VARIABLE) or None
    )
    try:
        return _Supervisor(shared, reservation, metrics_dir).run()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


@dataclass(eq=False)
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    stdin: IO[bytes]
    stdout: IO[bytes]
    pending: bytes = b""
    ready_url: str | None = None
    reload_pending: bool = False  # a SIGHUP came before it was ready
    error: tuple[str, int] | None = None

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    def signal(self, signum: int) -> None:
        # os.kill rather than Popen.send_signal: this runs inside a signal handler. The pid
        # cannot have been reused: a child is reaped (returncode set) only by the main loop.
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signum)


class _Supervisor:
    def __init__(self, settings: Settings, reservation: socket.socket, metrics_dir: str) -> None:
        self.settings = settings
        self.reservation: socket.socket | None = reservation
        self.metrics_dir = metrics_dir
        self.workers: list[_Worker] = []
        self.stop_signal: int | None = None  # the signal that asked for the stop
        self.status: int | None = None  # the exit status, once a worker failed

    def run(self) -> int:
        previous = {
            signum: signal.signal(signum, self._on_signal)
            for signum in (*_STOP_SIGNALS, signal.SIGHUP)
        }
        try:
            for index in range(self.settings.workers):
                self.workers.append(self._start(index))
                if self.stop_signal is not None:  # a stop came while we were starting them
                    self.workers[-1].signal(self.stop_signal)
            self._supervise()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._release_port()
            for worker in self.workers:  # only after an unexpected error in this function
                if worker.running:
                    worker.signal(signal.SIGKILL)
                    worker.process.wait()
        return 0 if self.status is None else self.status

    def _start(self, index: int) -> _Worker:
        process = subprocess.Popen(
            [sys.executable, "-m", "proxy.serving.workers"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Its own process group: a Ctrl-C in a terminal reaches the parent only, which
            # forwards it, so every worker sees each signal exactly once.
            process_group=0,
            env={**os.environ, MULTIPROC_VARIABLE: self.metrics_dir},
        )
        assert process.stdin is not None and process.stdout is not None
        worker = _Worker(index, process, process.stdin, process.stdout)
        config = {"index": index, "settings": self.settings.model_dump(mode="json")}
        try:
            process.stdin.write(json.dumps(config).encode() + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            pass  # it died at once; its exit is noticed like any other
        # stdin stays open: its end of file tells the worker that the parent is gone.
        return worker

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            # Only to workers that are ready: before that, SIGHUP's default action would kill
            # them. One that is not ready yet gets it once it is: it may have read the policy
            # file before the edit this SIGHUP announces (the port accepts connections as soon
            # as the first worker listens, so "ready" is not all of them).
            for worker in self.workers:
                if worker.ready_url is not None:
                    worker.signal(signum)
                else:
                    worker.reload_pending = True
            return
        if self.stop_signal is None:
            self.stop_signal = signum
        for worker in self.workers:
            worker.signal(signum)

    def _supervise(self) -> None:
        with selectors.DefaultSelector() as selector:
            for worker in self.workers:
                selector.register(worker.stdout, selectors.EVENT_READ, worker)
            announced = False
            while selector.get_map():
                for key, _ in selector.select():
                    worker = key.data
                    data = os.read(key.fd, 65536)
                    if data:
                        self._read_messages(worker, data)
                        continue
                    # End of file: the worker exited (it never closes its stdout otherwise).
                    selector.unregister(key.fileobj)
                    worker.stdout.close()
                    worker.stdin.close()
                    code = worker.process.wait()
                    self._forget_gauges(worker)
                    self._exited(worker, code)
                if not announced and all(w.ready_url for w in self.workers):
                    announced = True
                    if self.stop_signal is None and self.status is None:
                        self._release_port()  # the workers' sockets hold the port now
                        urls = {w.ready_url for w in self.workers}
                        print(f"shieldgate listening on {urls.pop()}", flush=True)

    def _read_messages(self, worker: _Worker, data: bytes) -> None:
        *lines, worker.pending = (worker.pending + data).split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):  # not ours: something printed; pass it on
                sys.stderr.buffer.write(line + b"\n")
                sys.stderr.flush()
            elif "ready" in message:
                worker.ready_url = str(message["ready"])
                if worker.reload_pending:  # checked after ready_url: no SIGHUP falls between
                    worker.reload_pending = False
                    worker.signal(signal.SIGHUP)
            elif "error" in message:
                worker.error = (str(message["error"]), int(message["code"]))

    def _exited(self, worker: _Worker, code: int) -> None:
        clean = code == 0 or (self.stop_signal is not None and code == -self.stop_signal)
        if clean and self.stop_signal is not None:
            return
        status = code if code > 0 else 128 - code if code < 0 else EXIT_FAILURE
        if self.status is None:
            self.status = status
            if worker.error is not None:
                message, status = worker.error
                self.status = status
                print(f"shieldgate: {message}", file=sys.stderr, flush=True)
            else:
                log.error(
                    "worker %d (pid %d) exited with status %d; stopping the others",
                    worker.index,
                    worker.process.pid,
                    code,
                    extra={"worker": worker.index, "pid": worker.process.pid, "code": code},
                )
            for other in self.workers:
                other.signal(signal.SIGTERM)

    def _forget_gauges(self, worker: _Worker) -> None:
        """Its live gauges (streams in flight...) no longer count; its counters still do."""
        from prometheus_client.multiprocess import mark_process_dead

        mark_process_dead(worker.process.pid, self.metrics_dir)  # type: ignore[no-untyped-call]

    def _release_port(self) -> None:
        if self.reservation is not None:
            self.reservation.close()
            self.reservation = None


# --- the worker side ------------------------------------------------------------------------


def _report(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class _WorkerField(logging.Filter):
    """Adds ``"worker": N`` to every JSON log line of worker N."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def filter(self, record: logging.LogRecord) -> bool:
        record.worker = self.index
        return True


def _stop_before_serving(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def worker_main() -> int:
    """One worker: settings from stdin, serve until signalled (or until stdin ends)."""
    # Until the event loop takes over the signals: a stop is a clean exit, a reload is moot.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _stop_before_serving)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    config = json.loads(sys.stdin.buffer.readline() or b"null")
    if not isinstance(config, dict):
        return EXIT_FAILURE  # not started by serve_workers
    settings = Settings.model_validate(config["settings"])

    from proxy.cli import load_policies
    from proxy.ops.logs import configure_logging
    from proxy.serving.server import run, serve
    from proxy.store.responses import StoreStartupError
    from shields.policy import PolicyError

    configure_logging(settings.log_level, json_format=settings.log_format == "json")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_WorkerField(int(config["index"])))
    try:
        policies = load_policies(settings)
    except PolicyError as exc:
        _report({"error": f"invalid policy:\n{exc}", "code": 2})
        return 2
    try:
        run(  # on uvloop when it is installed
            serve(
                settings,
                policies,
                lambda url: _report({"ready": url}),
                reuse_port=True,
                parent_fd=sys.stdin.fileno(),
            )
        )
    except StoreStartupError as exc:
        _report({"error": str(exc), "code": 2})
        return 2
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = f"{settings.host}:{settings.port}"
        _report({"error": f"cannot listen on {where}: {reason}", "code": EXIT_FAILURE})
        return EXIT_FAILURE
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
