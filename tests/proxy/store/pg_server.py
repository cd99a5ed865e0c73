"""A real PostgreSQL server for the tests: Debian's ``postgresql`` package, run by hand.

``initdb`` makes a cluster in a temporary directory and ``postgres`` serves it on a free loopback
port (no Unix socket), with password authentication for every connection. PostgreSQL refuses
to run as root: as root, the cluster belongs to the ``postgres`` user the package creates (else
``nobody``) and its programs run as that user.

The server is a child of the test process, not a daemon (``pg_ctl start`` would detach it): it
is asked to stop (a fast shutdown) when the process that started it dies, however it dies — a
test run killed by a timeout leaves no server behind. Directories that such runs left are
deleted by the next one once they are an hour old.

Durability is traded for speed (``fsync``, ``synchronous_commit`` and ``full_page_writes`` off):
the tests stop the server, but never the machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

__all__ = ["ADMIN", "PostgresServer", "find_bindir", "running_postgres"]

ADMIN = "shieldgate_admin"
_START_TIMEOUT = 60.0  # seconds
_PREFIX = "shieldgate-pg-"
_PR_SET_PDEATHSIG = 1
# How the server is asked to stop (PostgreSQL's shutdown modes).
_STOP_SIGNALS = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}


def _stop_with_parent() -> None:
    """In the server's process, before it runs: a fast shutdown when its parent dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def find_bindir() -> Path | None:
    """The newest installed PostgreSQL's programs (``/usr/lib/postgresql/N/bin``), else the
    directory of an ``initdb`` on PATH."""
    candidates = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    candidates.sort(key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    bindir: Path
    root: Path  # the temporary directory: data/, the log, the password file
    port: int = field(default_factory=_free_port)
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    user: pwd.struct_passwd | None = None  # who runs it, when we are root
    process: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def url(self, dbname: str = "postgres", user: str = ADMIN, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return (
            f"postgresql://{quote(user, safe='')}:{quote(secret, safe='')}"
            f"@127.0.0.1:{self.port}/{quote(dbname, safe='')}"
        )

    def _as_user(self) -> dict[str, object]:
        if self.user is None:
            return {}
        return {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}

    def _env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"}

    def _log_tail(self) -> str:
        log = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return log[-2000:]

    def _run(self, *args: str) -> None:
        result = subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            env=self._env(),
            **self._as_user(),  # type: ignore[arg-type]
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}\n"
                + self._log_tail()
            )

    def init(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.user is not None:
            for path in (self.root, pwfile):
                os.chown(path, self.user.pw_uid, self.user.pw_gid)
        self._run(
            "initdb",
            "--pgdata",
            str(self.datadir),
            "--username",
            ADMIN,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()
        settings = {
            "port": str(self.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": "''",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "100",
            "shared_buffers": "32MB",
        }
        with (self.datadir / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def start(self) -> None:
        """Starts the server and waits until it accepts connections."""
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(self.bindir / "postgres"), "-D", str(self.datadir)],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=self._env(),
                preexec_fn=_stop_with_parent,  # runs after the switch to the server's user
                **self._as_user(),  # type: ignore[arg-type]
            )
        deadline = time.monotonic() + _START_TIMEOUT
        while not self._accepts():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"postgres exited with {self.process.returncode}\n{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                self.stop("immediate")
                raise RuntimeError(f"postgres did not start within {_START_TIMEOUT}s")
            time.sleep(0.05)

    def _accepts(self) -> bool:
        import psycopg

        try:
            psycopg.connect(self.url(), connect_timeout=2).close()
        except psycopg.OperationalError:
            return False
        return True

    def stop(self, mode: str = "fast") -> None:
        """``fast``: every connection is cut (clients see the database go away)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(_STOP_SIGNALS[mode])
        try:
            self.process.wait(_START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _forget_old_runs() -> None:
    """Deletes what killed test runs left: their servers stopped with them (see the module's
    docstring), so an hour-old directory is no one's."""
    now = time.time()
    for path in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        with contextlib.suppress(OSError):
            if now - path.stat().st_mtime > 3600 and not (path / "data/postmaster.pid").exists():
                shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def running_postgres(bindir: Path) -> Iterator[PostgresServer]:
    """A started server for the length of the block; its files are deleted after it."""
    user = None
    if os.geteuid() == 0:
        for name in ("postgres", "nobody"):
            with contextlib.suppress(KeyError):
                user = pwd.getpwnam(name)
                break
        if user is None:
            raise RuntimeError("PostgreSQL cannot run as root, and there is no other user")
    # Under /tmp rather than pytest's directory: that one is private to us, and the server's
    # user must reach its files.
    _forget_old_runs()
    root = Path(tempfile.mkdtemp(prefix=_PREFIX))
    server = PostgresServer(bindir, root, user=user)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
