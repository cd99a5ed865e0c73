"""A SIGHUP sent the moment ``shieldgate serve``'s port accepts connections reloads the policy;
it never kills the server (SIGHUP's default action) because a handler was not in place yet.

Real subprocesses on a fixed free port: a thread connects in a tight loop and signals the
instant a connection is accepted — before the ready line, which comes later.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from tests.support.fake_upstream import FakeUpstream

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

POLICY_A = "name: policy-a\noutput:\n  - {id: a, type: denylist, phrases: [alpha], action: block}\n"
POLICY_B = "name: policy-b\noutput:\n  - {id: b, type: denylist, phrases: [beta], action: block}\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def signal_once_accepting(port: int, pid: int, edit: Path, deadline: float) -> float:
    """Connects until the port accepts, then edits the policy and sends SIGHUP at once;
    returns when the port first accepted."""
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError("the server never listened") from None
            time.sleep(0.0005)
            continue
        edit.write_text(POLICY_B)
        os.kill(pid, signal.SIGHUP)
        return time.monotonic()


@pytest.mark.parametrize("workers", [1, 2])
async def test_sighup_as_soon_as_the_port_accepts_reloads_and_keeps_serving(
    tmp_path: Path, upstream: FakeUpstream, workers: int
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY_A)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIELDGATE_", "OPENAI_"))}
    env["SHIELDGATE_POLICY_RELOAD_INTERVAL"] = "0"  # polling off: only the signal reloads
    stderr = tmp_path / "stderr.log"  # a file: a pipe nobody reads could fill and block
    with stderr.open("wb") as errors:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "proxy", "serve", "--port", str(port), "--policy", str(path),
            "--upstream", upstream.base_url, "--workers", str(workers),
            stdout=asyncio.subprocess.PIPE, stderr=errors, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        await asyncio.to_thread(signal_once_accepting, port, process.pid, path, deadline)
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.decode().startswith("shieldgate listening on "), line
        url = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            while True:
                assert process.returncode is None, "the server died"
                # Every worker must have reloaded: ask on new connections, which the kernel
                # spreads over the workers.
                names = set()
                for _ in range(8 * workers):
                    async with http.get(f"{url}/readyz", headers={"Connection": "close"}) as resp:
                        names.add((await resp.json())["policy"]["name"])
                if names == {"policy-b"}:
                    break
                assert time.monotonic() < deadline, f"not reloaded everywhere: {names}"
                await asyncio.sleep(0.05)
        assert process.returncode is None
    finally:
        if process.returncode is None:
            process.terminate()
        code = await asyncio.wait_for(process.wait(), 15)
    assert code == 0, stderr.read_text(errors="replace")[-2000:]
