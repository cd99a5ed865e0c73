"""``/metrics`` of several processes serving one port (issue 21, part 3): whichever worker
answers a scrape, it reports every worker's requests — under ``shieldgate serve --workers 2``
and under gunicorn with ``proxy.serving.gunicorn_conf``. Run as real processes; which worker served
a
request is read from Linux's /proc (see tests/proxy/serving/test_workers.py)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.proxy.serving.test_cli import Proxy, clean_env, running_proxy
from tests.proxy.serving.test_workers import (
    EXIT_TIMEOUT,
    children_of,
    linux_proc,
    request_on_new_connection,
)

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="processes as on POSIX"), linux_proc]

MIN_REQUESTS = 24


def healthz_count(exposition: str) -> float:
    for family in text_string_to_metric_families(exposition):
        if family.name == "shieldgate_requests":
            return sum(
                s.value
                for s in family.samples
                if s.name == "shieldgate_requests_total" and s.labels["route"] == "/healthz"
            )
    return 0.0


async def scrape(url: str) -> str:
    # A new connection each time: any worker may answer.
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as s,
        s.get(f"{url}/metrics") as reply,
    ):
        assert reply.status == 200
        return await reply.text()


def gone(path: str) -> bool:
    return not os.path.exists(path)


async def workers_of(pid: int, exclude: int | None = None) -> set[int]:
    """Two worker processes of ``pid`` (gunicorn forks them after it listens)."""
    while True:
        workers = children_of(pid) - {exclude}
        if len(workers) >= 2:
            return workers
        await asyncio.sleep(0.1)


def directory_with_files_of(pid: int) -> str:
    """The metrics directory holding a worker's files (a forked worker's variable, set after
    its arbiter started, is not in /proc/PID/environ)."""
    found = {
        str(path.parent)
        for path in Path(tempfile.gettempdir()).glob(f"shieldgate-metrics-*/*_{pid}.db")
    }
    assert len(found) == 1, found
    return found.pop()


def metrics_dir_of(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    (value,) = [v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return value.split(b"=", 1)[1].decode()


async def every_worker_counted(proxy: Proxy, workers: set[int]) -> None:
    """Requests on new connections until each worker has answered some (SO_REUSEPORT spreads
    them at random; gunicorn's workers take turns accepting on one socket, and one still
    loading the app takes none), then scrapes: each must count them all."""
    answered: dict[int, int] = {}
    deadline = time.monotonic() + 120
    while len(answered) < len(workers) or sum(answered.values()) < MIN_REQUESTS:
        assert time.monotonic() < deadline, f"not every worker answered: {answered}"
        # A few at once: a worker busy with one leaves the next to another.
        served = await asyncio.gather(
            *(request_on_new_connection(proxy, workers) for _ in range(4))
        )
        for pid, _ in served:
            answered[pid] = answered.get(pid, 0) + 1
    total = sum(answered.values())
    for _ in range(6):
        # Neither worker alone has them all: only the sum of both matches.
        assert healthz_count(await scrape(proxy.url)) == total, answered


async def test_metrics_of_shieldgate_serve_workers_add_up(tmp_path: Path) -> None:
    env = clean_env(SHIELDGATE_LOG_LEVEL="warning")
    async with running_proxy("--workers", "2", env=env) as proxy:
        workers = children_of(proxy.process.pid)
        assert len(workers) == 2
        directory = {metrics_dir_of(pid) for pid in workers}
        assert len(directory) == 1  # one directory for the run, shared
        (shared,) = directory
        assert os.path.basename(shared).startswith("shieldgate-metrics-")
        await every_worker_counted(proxy, workers)
        proxy.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proxy.process.communicate(), EXIT_TIMEOUT)
    assert proxy.process.returncode == 0
    assert gone(shared)  # deleted with the run


async def test_metrics_under_gunicorn_add_up(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:proxy.serving.gunicorn_conf",
        "proxy.serving.gunicorn_app:app",
        "--bind",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--graceful-timeout",
        "10",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(SHIELDGATE_LOG_LEVEL="warning"),
    )
    assert process.stderr is not None
    try:
        port = None
        while port is None:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "gunicorn exited before listening"
            if match := re.search(r"Listening at: http://127\.0\.0\.1:([0-9]+)", line):
                port = int(match[1])
        proxy = Proxy(process, "", "127.0.0.1", port)
        workers = await workers_of(process.pid)
        # Until both have loaded the app, a connection may wait in the listening queue.
        await every_worker_counted(proxy, workers)
        (shared,) = {directory_with_files_of(pid) for pid in workers}

        # A worker replaced (killed here) keeps its counts; the new one adds to them.
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        workers = await workers_of(process.pid, exclude=victim)
        answered = set()
        deadline = time.monotonic() + 120
        while len(answered) < 2:
            assert time.monotonic() < deadline, f"only {answered} of {workers} answered"
            pid, _ = await request_on_new_connection(proxy, workers)
            answered.add(pid)
        total = healthz_count(await scrape(proxy.url))
        assert total >= MIN_REQUESTS + 2, total

        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT)
        assert process.returncode == 0, err.decode()
        assert gone(shared)
    finally:
        if process.returncode is None:  # a failure: still a clean stop, which deletes the dir
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), EXIT_TIMEOUT)
            except TimeoutError:
                process.kill()
                await process.wait()
