"""Hot reload: file edits and SIGHUP swap policies atomically; invalid edits are rejected."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from shields.policy import load_policy
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream, Reply, text_stream

POLICY_A = """
name: policy-a
output:
  - {id: hide-alpha, type: denylist, phrases: [alpha], action: redact, placeholder: "[A]"}
"""
POLICY_B = """
name: policy-b
output:
  - {id: hide-beta, type: denylist, phrases: [beta], action: redact, placeholder: "[B]"}
"""
EXPECTED = {"policy-a": "[A] and beta", "policy-b": "alpha and [B]"}


def write(path: Path, text: str) -> None:
    # Write then rename, as editors and ConfigMap updates do: a reader never sees half a file.
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


async def stream_text(http: aiohttp.ClientSession, url: str) -> tuple[str, str]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    async with http.post(f"{url}/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        raw = await resp.read()
        policy = resp.headers["x-shieldgate-policy"]
    text = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                text += choice["delta"].get("content") or ""
    return policy, text


async def readyz(http: aiohttp.ClientSession, url: str) -> dict:  # type: ignore[type-arg]
    async with http.get(f"{url}/readyz") as resp:
        assert resp.status == 200
        return await resp.json()  # type: ignore[no-any-return]


async def wait_for(predicate, deadline: float = 2.0) -> float:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while not await predicate():
        assert time.monotonic() - started < deadline, "not within the deadline"
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_edit_is_picked_up_within_two_seconds(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    path = tmp_path / "policy.yaml"
    write(path, POLICY_A)
    upstream.default_reply = Reply(
        body=text_stream("alpha and beta"), headers={"content-type": "text/event-stream"}
    )
    proxy = await make_proxy(load_policy(path), policy=str(path), policy_reload_interval=0.2)
    assert await stream_text(http, proxy.url) == ("policy-a", EXPECTED["policy-a"])
    write(path, POLICY_B)

    async def switched() -> bool:
        return (await stream_text(http, proxy.url))[0] == "policy-b"

    assert await wait_for(switched) < 2.0
    assert await stream_text(http, proxy.url) == ("policy-b", EXPECTED["policy-b"])
    status = await readyz(http, proxy.url)
    assert status["policy"]["name"] == "policy-b" and status["policy"]["reloads"] == 1


async def test_invalid_edit_keeps_the_last_good_policy(
    tmp_path: Path,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "policy.yaml"
    write(path, POLICY_A)
    upstream.default_reply = Reply(
        body=text_stream("alpha and beta"), headers={"content-type": "text/event-stream"}
    )
    proxy = await make_proxy(load_policy(path), policy=str(path), policy_reload_interval=0.1)
    write(path, POLICY_B.replace("phrases: [beta]", "phrases: []"))

    async def stale() -> bool:
        return bool((await readyz(http, proxy.url))["policy"]["stale"])

    await wait_for(stale)
    status = (await readyz(http, proxy.url))["policy"]
    assert status["name"] == "policy-a" and status["reload_failures"] == 1
    # The error's text goes to the log (and to /readyz with a client key: test_readyz_auth).
    assert status["error"] and "needs at least one entry" in caplog.text
    assert await stream_text(http, proxy.url) == ("policy-a", EXPECTED["policy-a"])
    write(path, POLICY_B)

    async def fixed() -> bool:
        return not (await readyz(http, proxy.url))["policy"]["stale"]

    await wait_for(fixed)
    assert await stream_text(http, proxy.url) == ("policy-b", EXPECTED["policy-b"])


async def test_reload_under_concurrent_requests_never_mixes_policies(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    path = tmp_path / "policy.yaml"
    write(path, POLICY_A)
    # Slow streams, so that many are in flight while the policy flips underneath them.
    upstream.default_reply = Reply(
        chunks=[text_stream("alpha and beta", piece=2)[i : i + 40] for i in range(0, 2000, 40)],
        chunk_delay=0.005,
        headers={"content-type": "text/event-stream"},
    )
    proxy = await make_proxy(load_policy(path), policy=str(path), policy_reload_interval=0.02)
    stop = asyncio.Event()

    async def flip() -> None:
        flips = 0
        while not stop.is_set():
            write(path, POLICY_B if flips % 2 == 0 else POLICY_A)
            flips += 1
            await asyncio.sleep(0.03)

    async def staggered(delay: float) -> tuple[str, str]:
        await asyncio.sleep(delay)
        return await stream_text(http, proxy.url)

    flipper = asyncio.create_task(flip())
    results = await asyncio.gather(*(staggered(i * 0.01) for i in range(60)))
    stop.set()
    await flipper
    for policy, text in results:
        assert text == EXPECTED[policy]
    assert {policy for policy, _ in results} == {"policy-a", "policy-b"}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_sighup_reloads_the_served_policy(tmp_path: Path, upstream: FakeUpstream) -> None:
    path = tmp_path / "policy.yaml"
    write(path, POLICY_A)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHIELDGATE_", "OPENAI_"))}
    env["SHIELDGATE_POLICY_RELOAD_INTERVAL"] = "0"  # polling off: only the signal can reload
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "proxy", "serve", "--port", "0", "--policy", str(path),
        "--upstream", upstream.base_url,
        stdout=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        url = line.strip().rsplit(" ", 1)[-1]
        async with aiohttp.ClientSession() as http:
            assert (await readyz(http, url))["policy"]["name"] == "policy-a"
            write(path, POLICY_B)
            await asyncio.sleep(0.3)
            assert (await readyz(http, url))["policy"]["name"] == "policy-a"
            process.send_signal(signal.SIGHUP)

            async def reloaded() -> bool:
                return (await readyz(http, url))["policy"]["name"] == "policy-b"

            await wait_for(reloaded)
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0
