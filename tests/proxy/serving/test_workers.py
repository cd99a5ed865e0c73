"""Operating shieldgate (issue 6, items 6 and 7): graceful shutdown, ``--workers N``, gunicorn,
and the deployment files in ``deploy/``.

Shutdown and workers are tested as real processes (``python -m proxy serve``, as
``tests/proxy/serving/test_cli.py`` does) against a fake upstream in this process. Which worker
answered a
connection is read from ``/proc`` (Linux): the server side of the TCP connection is a socket
inode, and the worker holding that inode among its file descriptors is the one serving it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from proxy.ops.metrics import Metrics
from proxy.serving.server import start_server
from proxy.settings import Settings
from shields.policy import parse_policy
from shields.routing import load_policy_set
from tests.conftest import FAST_SETTINGS
from tests.proxy.serving.test_cli import Proxy, clean_env, running_proxy, write_policy
from tests.support.constants import REPO_ROOT
from tests.support.fake_upstream import FakeUpstream, Reply, chunk

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and sockets as on POSIX")

ROOT = REPO_ROOT
DEPLOY = ROOT / "deploy"
EXIT_TIMEOUT = 20.0  # generous: only a failure waits this long
# Events pass straight through: no output shields, no hold-back.
RELAY_POLICY = "version: 1\nname: relay\nstream: {holdback_chars: 0}\n"
PROMPT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}

linux_proc = pytest.mark.skipif(
    not Path("/proc/net/tcp").exists(), reason="reads sockets and processes from Linux /proc"
)


def slow_stream(parts: int, delay: float) -> Reply:
    events: list[dict[str, Any] | str | bytes] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": f"part{i} "}) for i in range(parts)]
    events.append(chunk({}, finish_reason="stop"))
    return Reply(events=events, chunk_delay=delay)


def expected_text(parts: int) -> str:
    return "".join(f"part{i} " for i in range(parts))


async def next_data(response: aiohttp.ClientResponse) -> bytes | None:
    """The next SSE ``data:`` value of a streamed reply; None at the end of the body."""
    while True:
        line = await response.content.readline()
        if not line:
            return None
        if line.startswith(b"data: "):
            return line[len(b"data: ") :].rstrip(b"\r\n")


def content_of(data: bytes) -> str:
    if data == b"[DONE]":
        return ""
    return "".join(c["delta"].get("content") or "" for c in json.loads(data)["choices"])


async def refused(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    writer.close()
    with suppress(ConnectionError):
        await writer.wait_closed()
    return False


async def exit_of(proxy: Proxy) -> tuple[int, str, str]:
    """Waits for the process to exit: its status, the rest of stdout, stderr."""
    try:
        out, err = await asyncio.wait_for(proxy.process.communicate(), EXIT_TIMEOUT)
    except TimeoutError:
        pytest.fail(f"the proxy did not exit within {EXIT_TIMEOUT}s")
    assert proxy.process.returncode is not None
    return proxy.process.returncode, out.decode(errors="replace"), err.decode(errors="replace")


# --- graceful shutdown ----------------------------------------------------------------------


@dataclass
class Reading:
    """A streamed reply read in the background: each ``data:`` value with its arrival time."""

    events: list[tuple[float, bytes]] = field(default_factory=list)
    cut: bool = False  # the body ended before [DONE]

    @property
    def text(self) -> str:
        return "".join(content_of(data) for _, data in self.events)

    @property
    def done(self) -> bool:
        return bool(self.events) and self.events[-1][1] == b"[DONE]"


async def read_stream(response: aiohttp.ClientResponse, reading: Reading) -> None:
    try:
        while (data := await next_data(response)) is not None:
            reading.events.append((time.monotonic(), data))
    except aiohttp.ClientPayloadError:
        pass  # cut off mid-body
    reading.cut = not reading.done


async def test_sigterm_refuses_new_connections_and_drains_streams_up_to_the_grace_period(
    tmp_path: Path,
) -> None:
    grace = 2.0
    short_parts, short_delay = 10, 0.08  # ends about 0.8 s after SIGTERM: within the grace
    policy = write_policy(tmp_path, "relay", RELAY_POLICY)
    async with FakeUpstream() as upstream:
        upstream.enqueue(slow_stream(short_parts, short_delay), slow_stream(100, 0.2))  # 20 s
        env = clean_env(SHIELDGATE_SHUTDOWN_GRACE=str(grace))
        args = ("--upstream", upstream.base_url, "--policy", str(policy))
        async with (
            running_proxy(*args, env=env) as proxy,
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
        ):
            url = f"{proxy.url}/v1/chat/completions"
            short, long = Reading(), Reading()
            async with (
                session.post(url, json=PROMPT) as short_response,
                session.post(url, json=PROMPT) as long_response,
            ):
                for response in (short_response, long_response):
                    assert response.status == 200
                    first = await next_data(response)  # both streams are under way
                    assert first is not None and content_of(first) == ""
                readers = [
                    asyncio.create_task(read_stream(short_response, short)),
                    asyncio.create_task(read_stream(long_response, long)),
                ]
                proxy.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()

                # The listening socket closes at once: new connections are refused...
                while not await refused(proxy.host, proxy.port):
                    assert time.monotonic() - signalled < 5, "accepting 5 s after SIGTERM"
                    await asyncio.sleep(0.02)
                refused_at = time.monotonic()
                assert proxy.process.returncode is None  # ...while it still serves.

                code, stdout, stderr = await exit_of(proxy)
                exited_after = time.monotonic() - signalled
                await asyncio.gather(*readers)

            # The short stream ran to its end after new connections were refused.
            assert short.done and not short.cut
            assert short.text == expected_text(short_parts)
            assert short.events[-1][0] - refused_at > 0.3
            # The long one was cut when the grace period ran out; the process then exited 0.
            assert long.cut and long.events, long.events
            assert code == 0, stderr
            assert grace * 0.9 < exited_after < grace + 5, exited_after
            assert stdout == ""
            assert "Traceback" not in stderr, stderr
            assert "requests in flight get up to 2s" in stderr
        # Cancelling the long stream's handler closed its upstream response; only that one.
        assert await upstream.wait_for_disconnect(5) is not None
        assert len(upstream.disconnects) == 1


@pytest.mark.parametrize("grace", [0.0, 1.0])
async def test_close_gives_a_stream_the_grace_period_in_all(
    grace: float, upstream: FakeUpstream, http: aiohttp.ClientSession
) -> None:
    # aiohttp waits for a handler in flight twice its shutdown_timeout, and a timeout of 0
    # means no timeout at all: make_runner accounts for both.
    upstream.enqueue(slow_stream(parts=100, delay=0.1))  # 10 s
    settings = Settings(upstream=upstream.base_url, port=0, shutdown_grace=grace, **FAST_SETTINGS)
    server = await start_server(settings, parse_policy(RELAY_POLICY, source="relay"))
    async with http.post(f"{server.url}/v1/chat/completions", json=PROMPT) as response:
        assert await next_data(response) is not None
        started = time.monotonic()
        await server.close()
        took = time.monotonic() - started
        reading = Reading()
        await read_stream(response, reading)
    assert reading.cut
    assert grace <= took < grace + 0.5, took


# --- /proc: who serves a connection ---------------------------------------------------------


def children_of(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def socket_inodes(pid: int) -> set[int]:
    inodes = set()
    with suppress(FileNotFoundError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[len("socket:[") : -1]))
    return inodes


def tcp_sockets() -> list[tuple[int, int, str, int]]:
    """(local port, remote port, state, inode) of every TCP socket in this namespace."""
    rows = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                rows.append(
                    (
                        int(local.rsplit(":", 1)[1], 16),
                        int(remote.rsplit(":", 1)[1], 16),
                        state,
                        int(inode),
                    )
                )
    return rows


LISTEN, ESTABLISHED = "0A", "01"


def listeners(port: int, pids: set[int]) -> set[int]:
    """Which of ``pids`` hold a listening socket on ``port``."""
    inodes = {i for lp, _, state, i in tcp_sockets() if lp == port and state == LISTEN}
    return {pid for pid in pids if socket_inodes(pid) & inodes}


async def request_on_new_connection(
    proxy: Proxy, workers: set[int], path: str = "/healthz"
) -> tuple[int, dict[str, str]]:
    """GET ``path`` on a fresh connection; (pid of the worker that served it, headers)."""
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: shieldgate\r\n\r\n".encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        status_line, *lines = head.strip().split("\r\n")
        assert status_line.startswith("HTTP/1.1 200"), head
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines)}
        await reader.readexactly(int(headers["content-length"]))
        # The connection is kept alive: the worker's end of it is still open. Find it.
        client_port = writer.get_extra_info("sockname")[1]
        inodes = {
            i
            for lp, rp, state, i in tcp_sockets()
            if lp == proxy.port and rp == client_port and state == ESTABLISHED
        }
        serving = [pid for pid in workers if socket_inodes(pid) & inodes]
        assert len(serving) == 1, (serving, inodes)
        return serving[0], headers
    finally:
        writer.close()
        with suppress(ConnectionError):
            await writer.wait_closed()


# --- shieldgate serve --workers N -----------------------------------------------------------


@linux_proc
async def test_two_workers_share_the_port_both_answer_and_all_signals_are_forwarded(
    tmp_path: Path,
) -> None:
    policy = write_policy(tmp_path, "first")
    env = clean_env(SHIELDGATE_POLICY_RELOAD_INTERVAL="0")  # only SIGHUP reloads
    async with running_proxy("--workers", "2", "--policy", str(policy), env=env) as proxy:
        workers = children_of(proxy.process.pid)
        assert len(workers) == 2, workers
        # The ready line came once both were listening, on the one port it names.
        assert listeners(proxy.port, workers) == workers
        assert proxy.process.pid not in listeners(proxy.port, {proxy.process.pid})

        answered: dict[int, int] = {}
        for _ in range(20):
            pid, headers = await request_on_new_connection(proxy, workers)
            answered[pid] = answered.get(pid, 0) + 1
            assert headers["x-shieldgate-policy"] == "first"
        assert set(answered) == workers, answered  # the kernel spread them over both

        # SIGHUP to the parent reloads the policy in every worker.
        write_policy(tmp_path, "first", "version: 1\nname: second\n")
        proxy.process.send_signal(signal.SIGHUP)
        reloaded: set[int] = set()
        deadline = time.monotonic() + 15
        while reloaded != workers:
            assert time.monotonic() < deadline, f"reloaded only in {reloaded} of {workers}"
            pid, headers = await request_on_new_connection(proxy, workers)
            if headers["x-shieldgate-policy"] == "second":
                reloaded.add(pid)

        # SIGTERM to the parent stops every worker; the parent exits 0 after them.
        proxy.process.send_signal(signal.SIGTERM)
        code, stdout, stderr = await exit_of(proxy)
        assert code == 0, stderr
        assert stdout == "", "one ready line only"
        assert "Traceback" not in stderr, stderr
        assert stderr.count('"message": "stopped"') == 2, stderr
        assert not any(alive(pid) for pid in workers)


@linux_proc
async def test_a_worker_that_dies_stops_the_others_and_fails_the_parent() -> None:
    async with running_proxy("--workers", "2") as proxy:
        workers = children_of(proxy.process.pid)
        assert len(workers) == 2, workers
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        code, _, stderr = await exit_of(proxy)
        assert code == 128 + signal.SIGKILL, stderr
        assert f"(pid {victim}) exited with status -9; stopping the others" in stderr
        assert stderr.count('"message": "stopped"') == 1, stderr  # the other one, gracefully
        assert not any(alive(pid) for pid in workers)


async def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env() if env is None else env,
    )
    out, err = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_workers_on_a_busy_port_fail_before_starting_any_worker() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, stdout, stderr = await run_cli("serve", "--workers", "2", "--port", str(port))
    assert code == 1, stderr
    assert stdout == ""
    assert (
        stderr.strip() == f"shieldgate: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


@asynccontextmanager
async def worker(settings: Settings, index: int = 0) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m proxy.serving.workers`` given its settings the way ``serve_workers`` does."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy.serving.workers",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    assert process.stdin is not None
    config = {"index": index, "settings": settings.model_dump(mode="json")}
    process.stdin.write(json.dumps(config).encode() + b"\n")
    await process.stdin.drain()
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_worker_reports_a_bad_policy_to_its_parent(tmp_path: Path) -> None:
    bad = write_policy(tmp_path, "bad", "version: 1\nname: bad\ninput: 3\n")
    async with worker(Settings(policy=str(bad), port=0)) as process:
        out, err = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT)
    assert process.returncode == 2, err
    message = json.loads(out)
    assert message["code"] == 2
    assert message["error"].startswith("invalid policy:\n") and str(bad) in message["error"]


async def test_a_worker_whose_parent_is_gone_shuts_down() -> None:
    # End of file on its stdin is what a worker sees when its parent is killed.
    async with worker(Settings(port=0), index=3) as process:
        assert process.stdout is not None and process.stdin is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        url = json.loads(line)["ready"]
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+", url)
        process.stdin.close()
        _, err = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT)
    assert process.returncode == 0, err
    stderr = err.decode()
    assert "parent process gone" in stderr
    assert all(json.loads(line)["worker"] == 3 for line in stderr.splitlines()), stderr


# --- gunicorn -------------------------------------------------------------------------------


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The factory configures logging as the CLI does; other tests keep theirs."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def shieldgate_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("SHIELDGATE_") or name == "OPENAI_BASE_URL":
            monkeypatch.delenv(name)
    return monkeypatch


@pytest.mark.usefixtures("root_logging")
async def test_gunicorn_app_factory_serves_and_drains_like_the_cli(
    tmp_path: Path, upstream: FakeUpstream, shieldgate_env: pytest.MonkeyPatch
) -> None:
    from aiohttp import web

    from proxy.serving.gunicorn_app import app

    policy = write_policy(tmp_path, "relay", RELAY_POLICY)
    shieldgate_env.setenv("SHIELDGATE_UPSTREAM", upstream.base_url)
    shieldgate_env.setenv("SHIELDGATE_POLICY", str(policy))
    shieldgate_env.setenv("SHIELDGATE_LOG_LEVEL", "warning")
    # What aiohttp's GunicornWebWorker requires of `proxy.serving.gunicorn_app:app`...
    assert inspect.iscoroutinefunction(app)
    runner = await app()
    assert isinstance(runner, web.AppRunner)
    # ...and what it does with it: set up, then serve on the socket the arbiter bound.
    await runner.setup()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        site = web.SockSite(runner, sock)
        await site.start()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        parts = 8
        upstream.enqueue(slow_stream(parts, 0.1))
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            async with session.get(f"{url}/healthz") as response:
                assert response.status == 200
                assert response.headers["x-shieldgate-policy"] == "relay"
            async with session.post(f"{url}/v1/chat/completions", json=PROMPT) as response:
                assert await next_data(response) is not None
                # The worker's SIGTERM ends in runner.cleanup(): the stream still finishes.
                cleanup = asyncio.create_task(runner.cleanup())
                reading = Reading()
                await read_stream(response, reading)
                await cleanup
    assert reading.done and reading.text == expected_text(parts)
    assert upstream.requests[-1].path == "/v1/chat/completions"


@pytest.mark.skipif(importlib.util.find_spec("gunicorn") is None, reason="gunicorn not installed")
async def test_under_gunicorn(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, "under-gunicorn")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gunicorn",
        "proxy.serving.gunicorn_app:app",
        "--worker-class",
        "aiohttp.GunicornWebWorker",
        "--bind",
        "127.0.0.1:0",
        "--workers",
        "2",
        "--graceful-timeout",
        "10",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=clean_env(SHIELDGATE_POLICY=str(policy)),
    )
    assert process.stderr is not None
    try:
        port = None
        while port is None:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            assert line, "gunicorn exited before listening"
            if match := re.search(r"Listening at: http://127\.0\.0\.1:([0-9]+)", line):
                port = int(match[1])
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
            session.get(f"http://127.0.0.1:{port}/healthz") as response,
        ):
            assert response.status == 200
            assert response.headers["x-shieldgate-policy"] == "under-gunicorn"
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(process.communicate(), EXIT_TIMEOUT)
        assert process.returncode == 0, err.decode()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


# --- deploy/ --------------------------------------------------------------------------------

KUBERNETES = DEPLOY / "kubernetes"
POLICY_DIR = "/etc/shieldgate/policies"


def deploy_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.is_file())


def test_every_file_in_deploy_parses() -> None:
    files = deploy_files()
    for path in files:
        text = path.read_text()
        if path.suffix in {".yaml", ".yml"}:
            documents = list(yaml.safe_load_all(text))
            assert documents and all(isinstance(d, dict) for d in documents), path
        elif path.suffix == ".json":
            assert isinstance(json.loads(text), dict), path
        elif path.name not in {"Dockerfile", "Dockerfile.dockerignore"}:
            pytest.fail(f"{path}: no check for this kind of file yet")
    names = {str(p.relative_to(DEPLOY)) for p in files}
    assert {"Dockerfile", "grafana/shieldgate.json", "kubernetes/deployment.yaml"} <= names


def kubernetes_objects() -> dict[tuple[str, str], dict[str, Any]]:
    objects = {}
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document.get("kind") != "Kustomization":
                objects[document["kind"], document["metadata"]["name"]] = document
    return objects


def test_kubernetes_example_fits_together(tmp_path: Path) -> None:
    objects = kubernetes_objects()
    deployment = objects["Deployment", "shieldgate"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (container,) = pod["spec"]["containers"]

    # Probes: readiness on /readyz, liveness on /healthz, on the port the proxy listens on.
    (port,) = container["ports"]
    assert (port["name"], port["containerPort"]) == ("http", 8080)
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    args = container["args"]
    assert container["command"] == ["shieldgate"] and args[0] == "serve"
    assert args[args.index("--port") + 1] == "8080"
    assert args[args.index("--host") + 1] == "0.0.0.0"

    # Policies: the ConfigMap, mounted as the directory --policy names, and valid.
    policy_dir = args[args.index("--policy") + 1]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    (policy_volume,) = [n for n, m in mounts.items() if m["mountPath"] == policy_dir]
    configmap = objects["ConfigMap", volumes[policy_volume]["configMap"]["name"]]
    for name, body in configmap["data"].items():
        (tmp_path / name).write_text(body)
    policies = load_policy_set(tmp_path)
    assert policies.default.name == "default"
    assert policies.default.spec.input and policies.default.spec.output

    # Every SHIELDGATE_* variable is a setting, and the literal values are valid settings.
    env = {e["name"]: e for e in container["env"]}
    for name in env:
        assert name.startswith("SHIELDGATE_"), name
        assert name.removeprefix("SHIELDGATE_").lower() in Settings.model_fields, name
    literal = {name: e["value"] for name, e in env.items() if "value" in e}
    settings = Settings.from_sources({}, environ=literal)
    assert settings.workers == 1  # one process per pod: scale out with replicas
    # Streams in flight can finish before the kubelet's SIGKILL.
    pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    budget = pod["spec"]["terminationGracePeriodSeconds"]
    assert budget > settings.shutdown_grace + float(pre_stop[1])
    # Stored responses: every replica's, in PostgreSQL, its URL (and password) from the Secret.
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    store = env["SHIELDGATE_RESPONSES_DB"]["valueFrom"]["secretKeyRef"]
    assert store["name"] == "shieldgate" and not store.get("optional")
    with_store = Settings.from_sources(
        {}, environ={**literal, "SHIELDGATE_RESPONSES_DB": "postgresql://u:p@db:5432/sg"}
    )
    assert with_store.responses_db_is_postgres and with_store.responses_retention_days > 0
    hpa_max = objects["HorizontalPodAutoscaler", "shieldgate"]["spec"]["maxReplicas"]
    assert hpa_max * settings.responses_db_pool_size < 100  # PostgreSQL's max_connections
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True

    service = objects["Service", "shieldgate"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http"]

    hpa = objects["HorizontalPodAutoscaler", "shieldgate"]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "shieldgate")
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]

    budget_object = objects["PodDisruptionBudget", "shieldgate"]
    assert budget_object["spec"]["selector"]["matchLabels"].items() <= labels.items()

    # kustomization.yaml applies every file of the directory, with the container's image.
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    others = {p.name for p in KUBERNETES.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == others
    assert [i["name"] for i in kustomization["images"]] == [container["image"]]


def dockerfile_instructions() -> list[tuple[str, str]]:
    logical, lines = "", []
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        if not logical and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if raw.endswith("\\"):
            logical += raw[:-1] + " "
            continue
        logical += raw
        instruction, _, rest = logical.strip().partition(" ")
        lines.append((instruction.upper(), rest.strip()))
        logical = ""
    return lines


def test_dockerfile(tmp_path: Path) -> None:
    instructions = dockerfile_instructions()
    values = {}
    for instruction, rest in instructions:
        values.setdefault(instruction, []).append(rest)
    assert values["FROM"] == ["python:3.11-slim"]
    (user,) = values["USER"]
    assert user.split(":")[0] not in {"0", "root"}
    assert values["EXPOSE"] == ["8080"]
    (healthcheck,) = values["HEALTHCHECK"]
    assert "http://127.0.0.1:8080/healthz" in healthcheck
    (cmd,) = values["CMD"]
    assert json.loads(cmd) == ["shieldgate", "serve", "--host", "0.0.0.0", "--policy", POLICY_DIR]
    assert any(run.startswith("pip install .") for run in values["RUN"])
    for copy in values["COPY"]:
        *sources, _ = copy.split()
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    # The policy directory the image serves holds the packaged default policy.
    (tmp_path / "default.yaml").write_bytes((ROOT / "policies" / "default.yaml").read_bytes())
    assert f"{POLICY_DIR}/default.yaml" in " ".join(values["RUN"])
    assert load_policy_set(tmp_path).default.name == "default"


METRIC = re.compile(r"\bshieldgate_[a-z_]+\b")


def exposed_series() -> dict[str, set[str]]:
    """Every series name /metrics can show, with the labels it carries."""
    series: dict[str, set[str]] = {}
    for metric in vars(Metrics()).values():
        if not isinstance(metric, MetricWrapperBase):
            continue
        suffixes = {
            "counter": ["_total"],
            "gauge": [""],
            "histogram": ["_bucket", "_sum", "_count"],
        }
        for suffix in suffixes[metric._type]:
            series[metric._name + suffix] = set(metric._labelnames)
    return series


def test_grafana_dashboard_shows_the_proxys_metrics() -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "shieldgate.json").read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    series = exposed_series()
    used: set[str] = set()
    for panel in panels:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = set(METRIC.findall(expr))
            assert names, expr
            unknown = names - series.keys()
            assert not unknown, (
                f"{panel['title']}: {unknown} is not a metric of proxy/ops/metrics.py"
            )
            used |= names
            # Labels grouped by or matched on must exist on the metrics of the query.
            labels = set().union(*(series[n] for n in names)) | {"le", "instance"}
            grouped = {
                label.strip()
                for group in re.findall(r"\bby \(([^)]*)\)", expr)
                for label in group.split(",")
            }
            matched = set(re.findall(r"(\w+)=~?\"", expr))
            assert grouped | matched <= labels, (panel["title"], (grouped | matched) - labels)
    wanted = {
        "shieldgate_requests_total",  # by status and policy
        "shieldgate_findings_total",  # by shield, action and mode
        "shieldgate_stage_seconds_bucket",  # p50 / p99
        "shieldgate_upstream_ttfb_seconds_bucket",
        "shieldgate_streams_in_flight",
        "shieldgate_held_bytes",
        "shieldgate_upstream_retries_total",
        "shieldgate_upstream_errors_total",
        "shieldgate_policy_reloads_total",
        "shieldgate_policy_stale",
    }
    assert wanted <= used, wanted - used
