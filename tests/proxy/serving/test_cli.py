"""The ``shieldgate serve`` command line, run as a real subprocess (issue 2, sections 1 and 4).

Every test starts the CLI the way a user does (``python -m proxy serve`` or the ``shieldgate``
console script) with ``--port 0``, waits for the one ready line on stdout, talks to the printed
address over real TCP, and stops the process with SIGTERM. The upstream is a tiny real aiohttp
server started by the test, so the upstream resolution order and the credentials handling are
proved by what actually arrives at the other end of a socket.

Startup failures (bad policies, bad flags, a busy port) are run concurrently once per module
to keep the suite fast; each case is still its own test.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.support.constants import MODULE

pytestmark = pytest.mark.skipif(os.name != "posix", reason="signals and sockets as on POSIX")

READY_TIMEOUT = 60.0  # generous: a cold interpreter on a loaded machine; only a failure waits
STOP_TIMEOUT = 5.0
READY_LINE = re.compile(r"shieldgate listening on http://(?P<host>[^\s/]+):(?P<port>[0-9]+)")
POLICY_HEADER = "x-shieldgate-policy"


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without anything that would steer the proxy, plus ``extra``.

    PYTHONUNBUFFERED is dropped too: the ready line must arrive because the CLI flushes it,
    not because the test made stdout unbuffered.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SHIELDGATE_") and key not in {"OPENAI_BASE_URL", "PYTHONUNBUFFERED"}
    }
    env.update(extra)
    return env


def write_policy(directory: Path, name: str, body: str | None = None) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(body if body is not None else f"version: 1\nname: {name}\n")
    return path


# --- a running proxy -----------------------------------------------------------------------


@dataclass
class Proxy:
    process: asyncio.subprocess.Process
    ready_line: str
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@asynccontextmanager
async def running_proxy(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    command: tuple[str, ...] = MODULE,
    port: str = "0",
) -> AsyncIterator[Proxy]:
    """Starts ``<command> serve --port 0 <args>``, yields once the ready line is out.

    The process is always killed on the way out; tests that check a clean shutdown call
    :func:`stop` themselves first.
    """
    process = await asyncio.create_subprocess_exec(
        *command,
        "serve",
        "--port",
        port,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env() if env is None else env,
        cwd=cwd,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        try:
            raw = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT)
        except TimeoutError:
            pytest.fail(f"no ready line within {READY_TIMEOUT}s")
        if not raw:
            code = await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            stderr = (await process.stderr.read()).decode(errors="replace")
            pytest.fail(f"the proxy exited with {code} before it was ready:\n{stderr}")
        line = raw.decode()
        match = READY_LINE.fullmatch(line.rstrip("\n"))
        assert match, f"unexpected ready line: {line!r}"
        yield Proxy(process, line, match["host"], int(match["port"]))
    finally:
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
            await process.wait()


async def stop(proxy: Proxy, signum: int = signal.SIGTERM) -> tuple[str, str]:
    """Signals the proxy and checks it exits 0 promptly; returns the rest of stdout, stderr."""
    proxy.process.send_signal(signum)
    try:
        out, err = await asyncio.wait_for(proxy.process.communicate(), STOP_TIMEOUT)
    except TimeoutError:
        pytest.fail(f"the proxy did not exit within {STOP_TIMEOUT}s of {signum!r}")
    stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    assert proxy.process.returncode == 0, f"exit code {proxy.process.returncode}:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    assert stdout == "", f"more than the one ready line on stdout: {stdout!r}"
    return stdout, stderr


async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict, object]:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
        session.get(url, headers=headers) as response,
    ):
        body = await response.read()
        return response.status, dict(response.headers), json.loads(body)


# --- a tiny real upstream ------------------------------------------------------------------


@dataclass
class Upstream:
    name: str
    base_url: str  # includes /v1, like a real OpenAI-compatible server's base URL
    authorizations: list[str | None] = field(default_factory=list)

    @property
    def models(self) -> dict[str, object]:
        return {
            "object": "list",
            "data": [{"id": f"model-of-{self.name}", "object": "model", "owned_by": self.name}],
        }


@asynccontextmanager
async def fake_upstream(name: str, port: int = 0) -> AsyncIterator[Upstream]:
    """An OpenAI-compatible server on 127.0.0.1 whose GET /v1/models names it."""
    box: list[Upstream] = []

    async def models(request: web.Request) -> web.Response:
        upstream = box[0]
        upstream.authorizations.append(request.headers.get("Authorization"))
        return web.json_response(upstream.models)

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", port)
        await site.start()
        bound = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        box.append(Upstream(name, f"http://127.0.0.1:{bound}/v1"))
        yield box[0]
    finally:
        await runner.cleanup()


# --- ready line, /healthz, shutdown, console script ----------------------------------------


async def test_ready_line_then_healthz_then_clean_sigterm_exit(tmp_path: Path) -> None:
    # cwd is an empty directory: the default policy must come from the package, not from ./
    async with running_proxy(cwd=tmp_path) as proxy:
        assert proxy.ready_line == f"shieldgate listening on http://127.0.0.1:{proxy.port}\n"
        assert 0 < proxy.port < 65536
        status, headers, body = await get(f"{proxy.url}/healthz")
        assert status == 200
        assert body == {"status": "ok"}
        assert headers[POLICY_HEADER] == "default"
        await stop(proxy)


async def test_console_script_serves() -> None:
    script = shutil.which("shieldgate", path=str(Path(sys.executable).parent))
    assert script is not None, "the `shieldgate` console script is not installed next to python"
    async with running_proxy(command=(script,)) as proxy:
        status, headers, body = await get(f"{proxy.url}/healthz")
        assert (status, body, headers[POLICY_HEADER]) == (200, {"status": "ok"}, "default")
        await stop(proxy)


# --- upstream resolution: --upstream > $SHIELDGATE_UPSTREAM > $OPENAI_BASE_URL > default ---


@pytest.mark.parametrize(
    ("use_flag", "use_shieldgate_env", "use_openai_env", "winner"),
    [
        pytest.param(True, True, True, "flag", id="flag-beats-both-variables"),
        pytest.param(False, True, True, "shieldgate-env", id="SHIELDGATE_UPSTREAM-beats-OPENAI"),
        pytest.param(False, False, True, "openai-env", id="OPENAI_BASE_URL-alone"),
    ],
)
async def test_upstream_resolution_order(
    use_flag: bool, use_shieldgate_env: bool, use_openai_env: bool, winner: str
) -> None:
    async with (
        fake_upstream("flag") as by_flag,
        fake_upstream("shieldgate-env") as by_shieldgate_env,
        fake_upstream("openai-env") as by_openai_env,
    ):
        upstreams = {u.name: u for u in (by_flag, by_shieldgate_env, by_openai_env)}
        args = ("--upstream", by_flag.base_url) if use_flag else ()
        extra = {}
        if use_shieldgate_env:
            extra["SHIELDGATE_UPSTREAM"] = by_shieldgate_env.base_url
        if use_openai_env:
            extra["OPENAI_BASE_URL"] = by_openai_env.base_url
        async with running_proxy(*args, env=clean_env(**extra)) as proxy:
            status, headers, body = await get(
                f"{proxy.url}/v1/models", headers={"Authorization": "Bearer client-key"}
            )
            assert status == 200
            assert body == upstreams[winner].models
            assert headers[POLICY_HEADER] == "default"
            await stop(proxy)
        # Without $SHIELDGATE_UPSTREAM_API_KEY the client's Authorization goes through as is.
        assert upstreams[winner].authorizations == ["Bearer client-key"]
        for name, upstream in upstreams.items():
            if name != winner:
                assert upstream.authorizations == [], f"{name} was contacted"


async def test_upstream_defaults_to_localhost_8000() -> None:
    try:
        upstream_cm = fake_upstream("default-port", port=8000)
        upstream = await upstream_cm.__aenter__()
    except OSError:
        pytest.skip("127.0.0.1:8000 is taken on this machine")
    try:
        assert upstream.base_url == "http://127.0.0.1:8000/v1"
        # Empty variables count as unset.
        env = clean_env(SHIELDGATE_UPSTREAM="", OPENAI_BASE_URL="")
        async with running_proxy(env=env) as proxy:
            status, _, body = await get(f"{proxy.url}/v1/models")
            assert (status, body) == (200, upstream.models)
            await stop(proxy)
    finally:
        await upstream_cm.__aexit__(None, None, None)


# --- upstream credentials -------------------------------------------------------------------


async def test_upstream_api_key_from_env_replaces_the_clients() -> None:
    key = "upstream-secret-123"
    async with fake_upstream("keyed") as upstream:
        env = clean_env(SHIELDGATE_UPSTREAM_API_KEY=key)
        async with running_proxy("--upstream", upstream.base_url, env=env) as proxy:
            status, headers, body = await get(
                f"{proxy.url}/v1/models", headers={"Authorization": "Bearer client-key"}
            )
            assert (status, body) == (200, upstream.models)
            _, stderr = await stop(proxy)
        assert upstream.authorizations == [f"Bearer {key}"]
        assert key not in json.dumps(headers)  # the proxy's key never goes back to the client
        assert key not in stderr


# --- policy resolution: --policy > $SHIELDGATE_POLICY > packaged default --------------------
# (the packaged default is checked by test_ready_line_then_healthz_then_clean_sigterm_exit)


def blocking_policy(directory: Path, name: str) -> Path:
    """A policy called ``name`` that blocks prompts containing ``forbidden <name>``."""
    return write_policy(
        directory,
        name,
        f"version: 1\nname: {name}\ninput:\n"
        f"  - {{id: ban, type: denylist, phrases: ['forbidden {name}'], action: block}}\n",
    )


@pytest.mark.parametrize(
    ("use_flag", "expected", "signum"),
    [
        pytest.param(True, "from-flag", signal.SIGTERM, id="flag-beats-SHIELDGATE_POLICY"),
        # Stopped with SIGINT (Ctrl-C) this time: that must be a clean exit 0 as well.
        pytest.param(False, "from-env", signal.SIGINT, id="SHIELDGATE_POLICY-beats-default"),
    ],
)
async def test_policy_resolution_order(
    tmp_path: Path, use_flag: bool, expected: str, signum: int
) -> None:
    by_flag = blocking_policy(tmp_path, "from-flag")
    by_env = blocking_policy(tmp_path, "from-env")
    args = ("--policy", str(by_flag)) if use_flag else ()
    env = clean_env(SHIELDGATE_POLICY=str(by_env))
    async with running_proxy(*args, env=env) as proxy:
        status, headers, _ = await get(f"{proxy.url}/healthz")
        assert status == 200
        assert headers[POLICY_HEADER] == expected
        # Not just the name: the shields of that file are the ones enforced (the default
        # upstream is never contacted for a request blocked at input).
        prompt = {"model": "m", "messages": [{"role": "user", "content": f"FORBIDDEN {expected}"}]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{proxy.url}/v1/chat/completions", json=prompt) as response,
        ):
            assert response.status == 200
            assert response.headers[POLICY_HEADER] == expected
            assert response.headers["x-shieldgate-blocked"] == "input"
            reply = await response.json()
        assert reply["choices"][0]["finish_reason"] == "content_filter"
        await stop(proxy, signum)


# --- startup failures: exit code, stderr, no traceback, nothing on stdout -------------------


@dataclass(frozen=True)
class Rejected:
    id: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    policy: str | None = None  # body of ``bad.yaml`` in the case's directory, passed as --policy
    exit_code: int | None = 2  # None: any non-zero code
    # Substrings of stderr; "{policy}" is the policy file's path, "{port}" the busy port.
    expect: tuple[str, ...] = ()


REJECTED = [
    Rejected(
        "yaml-syntax-error",
        policy="version: 1\nname: broken\n  oops: [\n",
        expect=("{policy}:3:", "invalid YAML"),
    ),
    Rejected(
        "unknown-top-level-key",
        policy="version: 1\nname: x\nmodee: monitor\n",
        expect=("{policy}: modee: unknown key",),
    ),
    Rejected(
        "unknown-key-inside-a-shield",
        policy="version: 1\nname: x\noutput:\n"
        "  - {id: a, type: denylist, phrases: [x], phrasess: [y]}\n",
        expect=("{policy}: output[0].phrasess: unknown key",),
    ),
    Rejected(
        "unknown-shield-type",
        policy="version: 1\nname: x\ninput:\n  - {id: a, type: telepathy}\n",
        expect=("{policy}: input[0]", "unknown shield type 'telepathy'"),
    ),
    Rejected(
        "bad-regex",
        policy="version: 1\nname: x\noutput:\n  - id: a\n    type: regex\n    patterns: ['(']\n",
        expect=("{policy}: output[0].patterns[0]: bad regex '('", "missing )"),
    ),
    Rejected(
        "wrong-type",
        policy="version: 1\nname: x\nstream: {holdback_chars: lots}\n",
        expect=("{policy}: stream.holdback_chars:", "integer"),
    ),
    Rejected(
        "holdback-shorter-than-longest-match",
        policy="version: 1\nname: x\nstream: {holdback_chars: 5}\noutput:\n"
        "  - {id: long, type: denylist, phrases: [synthesize sarin]}\n",
        expect=("{policy}: stream.holdback_chars: 5", "output[0]", "17"),  # 16 and 1 of look-ahead
    ),
    Rejected(
        "missing-policy-file",
        args=("--policy", "{missing}"),
        expect=("{missing}: cannot read policy", "No such file"),
    ),
    Rejected("port-not-a-number", args=("--port", "abc"), expect=("--port", "'abc'")),
    Rejected("port-too-large", args=("--port", "70000"), expect=("port", "65535")),
    Rejected(
        "upstream-not-http",
        args=("--upstream", "ftp://x"),
        expect=("upstream", "http://", "'ftp://x'"),
    ),
    Rejected(
        "upstream-not-http-from-SHIELDGATE_UPSTREAM",
        env=(("SHIELDGATE_UPSTREAM", "ftp://example.com/v1"),),
        expect=("upstream", "'ftp://example.com/v1'"),
    ),
    # `--policy ""` used to override $SHIELDGATE_POLICY and silently select the packaged
    # default policy; `--host ""` used to bind every interface and print "http://:PORT".
    Rejected(
        "empty-policy-flag",
        args=("--policy", ""),
        env=(("SHIELDGATE_POLICY", "{missing}"),),
        expect=("policy", "empty"),
    ),
    Rejected("empty-host-flag", args=("--host", ""), expect=("host", "empty")),
    Rejected("unknown-flag", args=("--bogus",), expect=("unrecognized arguments: --bogus",)),
    Rejected(
        "port-already-in-use",
        args=("--port", "{port}"),
        exit_code=None,
        expect=("127.0.0.1:{port}", "in use"),
    ),
]


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str
    values: dict[str, str]


class RejectedRuns:
    """The REJECTED cases, all started at once; each outcome is collected when first asked for.

    Started when the module's first test starts (autouse), so these short-lived processes run
    alongside the slower tests above instead of after them.
    """

    def __init__(self, base: Path, busy_port: int) -> None:
        self._running: dict[str, tuple[subprocess.Popen[bytes], dict[str, str]]] = {}
        self._done: dict[str, Outcome] = {}
        for case in REJECTED:
            directory = base / case.id
            directory.mkdir()
            values = {"missing": str(directory / "no-such-policy.yaml"), "port": str(busy_port)}
            args = [a.format(**values) for a in case.args]
            if case.policy is not None:
                values["policy"] = str(write_policy(directory, "bad", case.policy))
                args += ["--policy", values["policy"]]
            if "--port" not in args:
                args += ["--port", "0"]
            process = subprocess.Popen(
                [*MODULE, "serve", *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=clean_env(**{k: v.format(**values) for k, v in case.env}),
                cwd=directory,
            )
            self._running[case.id] = (process, values)

    def outcome(self, case_id: str) -> Outcome:
        if case_id not in self._done:
            process, values = self._running[case_id]
            try:
                out, err = process.communicate(timeout=20)
            except subprocess.TimeoutExpired:  # it did not fail: it serves
                process.kill()
                out, err = process.communicate()
            self._done[case_id] = Outcome(
                process.returncode,
                out.decode(errors="replace"),
                err.decode(errors="replace"),
                values,
            )
        return self._done[case_id]

    def kill(self) -> None:
        for process, _ in self._running.values():
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture(scope="module", autouse=True)
def rejected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RejectedRuns]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        runs = RejectedRuns(tmp_path_factory.mktemp("rejected"), busy.getsockname()[1])
        try:
            yield runs
        finally:
            runs.kill()


@pytest.mark.parametrize("case", REJECTED, ids=[c.id for c in REJECTED])
def test_startup_failure_is_clean(case: Rejected, rejected: RejectedRuns) -> None:
    outcome = rejected.outcome(case.id)
    stderr = outcome.stderr
    if case.exit_code is None:
        assert outcome.exit_code > 0, stderr
    else:
        assert outcome.exit_code == case.exit_code, stderr
    assert "Traceback" not in stderr, stderr
    assert outcome.stdout == "", "nothing may reach stdout (no ready line)"
    assert stderr.strip(), "the problem must be explained on stderr"
    for expected in case.expect:
        assert expected.format(**outcome.values) in stderr, stderr


# --- regressions: bugs found while writing these tests --------------------------------------

# Widens the gap between the ready line and the installation of the signal handlers, the way
# a busy machine can deschedule the process right after it printed. Everything else is the
# real CLI, run as a real process. (Found with the ready line printed before the handlers were
# installed: an immediate SIGTERM then killed the process, exit -15, in ~1 of 6 plain runs.)
_SLOW_SIGNAL_SETUP = """
import sys, time
from asyncio import unix_events
original = unix_events._UnixSelectorEventLoop.add_signal_handler
def add_signal_handler(self, *args):
    time.sleep(0.5)
    return original(self, *args)
unix_events._UnixSelectorEventLoop.add_signal_handler = add_signal_handler
from proxy.cli import main
sys.exit(main())
"""


async def test_sigterm_right_after_the_ready_line_exits_cleanly() -> None:
    command = (sys.executable, "-c", _SLOW_SIGNAL_SETUP)
    async with running_proxy(command=command) as proxy:
        await stop(proxy)  # no request first: the ready line alone must mean "ready"


def test_config_file_feeds_settings_below_variables_and_flags(tmp_path: Path) -> None:
    from proxy.settings import Settings, read_config_file

    config = tmp_path / "shieldgate.yaml"
    config.write_text("port: 9000\nread_timeout: 30\nlog_format: text\nhost: 0.0.0.0\n")
    values = read_config_file(str(config))
    settings = Settings.from_sources(
        {"port": 9100}, {"SHIELDGATE_READ_TIMEOUT": "45"}, config=values
    )
    assert (settings.port, settings.read_timeout, settings.log_format, settings.host) == (
        9100,  # the flag wins
        45.0,  # the variable wins over the file
        "text",  # the file wins over the default
        "0.0.0.0",
    )
    config.write_text("colour: red\n")
    with pytest.raises(ValueError, match="unknown settings: colour"):
        read_config_file(str(config))
    result = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "unknown settings: colour" in result.stderr
    assert "Traceback" not in result.stderr


def test_openai_base_url_is_the_weakest_source_of_the_upstream() -> None:
    from proxy.settings import Settings

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9001/v1"}
    config = {"upstream": "http://127.0.0.1:9002/v1"}
    assert Settings.from_sources({}, env).upstream == "http://127.0.0.1:9001/v1"
    assert Settings.from_sources({}, env, config=config).upstream == "http://127.0.0.1:9002/v1"
    env["SHIELDGATE_UPSTREAM"] = "http://127.0.0.1:9003/v1"
    assert Settings.from_sources({}, env, config=config).upstream == "http://127.0.0.1:9003/v1"


@pytest.mark.parametrize(
    "upstream", ["http://127.0.0.1:8080/v1", "http://localhost:8080", "http://[::1]:8080/v1"]
)
def test_an_upstream_on_the_proxys_own_address_is_refused_at_start(upstream: str) -> None:
    # A client's OPENAI_BASE_URL pointing at the proxy, read as its upstream, would make every
    # request come back to the proxy.
    env = clean_env(SHIELDGATE_UPSTREAM="", OPENAI_BASE_URL=upstream)
    result = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--port", "8080"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "is this proxy's own address" in result.stderr and "Traceback" not in result.stderr
    # Another port on the same host is another server; and under gunicorn, whose --bind
    # decides the address, the settings' default port says nothing.
    from proxy.settings import Settings, upstream_loop_problem

    assert upstream_loop_problem(Settings(upstream=upstream, port=8080)) is not None
    assert upstream_loop_problem(Settings(upstream=upstream.replace("8080", "8000"))) is None
    assert Settings(upstream=upstream).upstream == upstream.rstrip("/")


def test_a_gunicorn_worker_boots_with_an_upstream_on_port_8080() -> None:
    # llama.cpp's default port is the proxy's default port: under gunicorn --bind decides
    # where the proxy listens, so the settings' default port is no reason to refuse. (In a
    # child process: the worker configures the process's logging.)
    probe = (
        "import asyncio\nfrom proxy.serving.gunicorn_app import app\n"
        "async def boot():\n    runner = await app()\n    await runner.cleanup()\n"
        "asyncio.run(boot())\nprint('BOOTED')\n"
    )
    env = clean_env(SHIELDGATE_UPSTREAM="http://127.0.0.1:8080/v1")
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0 and "BOOTED" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize("port", ["99999", "-5"])
def test_demo_with_a_port_out_of_range_is_a_one_line_usage_error(port: str) -> None:
    # Used to be an OverflowError traceback from the port probe. Checked before the model
    # starts, so this needs neither llama.cpp nor the model file.
    done = subprocess.run(
        [*MODULE, "demo", "--port", port],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=clean_env(),
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.decode() == "shieldgate demo: --port must be 0-65535\n"
    assert done.stdout == b""
