"""``/readyz`` tells anyone whether the proxy is ready and the policies' hashes; a failed reload's
error text (the policy file's path, the bad pattern) and the upstream probe's error only a
request with a valid client key. Without a keys file they go to the log only."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from proxy.clients.keys import new_key
from proxy.serving.readiness import WITHHELD_ERROR
from shields.policy import load_policy
from tests.conftest import ProxyFactory
from tests.proxy.serving.test_auth import write_keys

GOOD = """
name: guarded
output:
  - {id: words, type: denylist, phrases: [alpha], action: block}
"""
# The secret a reviewer found quoted back: the pattern of an edit that does not compile.
BAD_PATTERN = "internal-codename-(zephyr"
BAD = f"""
name: guarded
output:
  - {{id: codes, type: regex, patterns: ["{BAD_PATTERN}"], action: block}}
"""


async def readyz(
    http: aiohttp.ClientSession, url: str, key: str | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    async with http.get(f"{url}/readyz", headers=headers) as resp:
        body: dict[str, Any] = await resp.json()
        return resp.status, body


async def broken_reload(
    tmp_path: Path, make_proxy: ProxyFactory, http: aiohttp.ClientSession, **settings: Any
) -> tuple[str, Path]:
    """A proxy whose policy file got an edit that does not load (rejected, stale)."""
    path = tmp_path / "policy.yaml"
    path.write_text(GOOD)
    proxy = await make_proxy(
        load_policy(path), policy=str(path), policy_reload_interval=0.05, **settings
    )
    path.write_text(BAD)
    deadline = time.monotonic() + 5
    while not (await readyz(http, proxy.url))[1]["policy"]["stale"]:
        assert time.monotonic() < deadline, "the bad edit was never seen"
        await asyncio.sleep(0.05)
    return proxy.url, path


def assert_withheld(body: dict[str, Any], path: Path) -> None:
    text = str(body)
    assert BAD_PATTERN not in text and "zephyr" not in text
    assert str(path) not in text and path.name not in text
    policy = body["policy"]
    assert body["status"] == "ready" and policy["stale"] is True
    assert policy["error"] == WITHHELD_ERROR
    assert policy["name"] == "guarded" and policy["hash"]
    assert policy["policies"] == {"guarded": policy["hash"]}


async def test_a_failed_reloads_error_needs_a_client_key(
    tmp_path: Path, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    key, entry = new_key("ops")
    keys = write_keys(tmp_path / "keys.yaml", entry)
    url, path = await broken_reload(tmp_path, make_proxy, http, keys_file=str(keys))
    for presented in (None, "sg-000000000000-" + "0" * 64, "not-a-key"):
        status, body = await readyz(http, url, presented)
        assert status == 200  # probes carry no key: readiness itself stays open
        assert_withheld(body, path)
    status, body = await readyz(http, url, key)
    assert status == 200
    error = body["policy"]["error"]
    assert str(path) in error and BAD_PATTERN in error


async def test_without_keys_the_error_text_goes_to_the_log_only(
    tmp_path: Path,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, path = await broken_reload(tmp_path, make_proxy, http)
    status, body = await readyz(http, url, "sk-anything")
    assert status == 200
    assert_withheld(body, path)
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "shieldgate.policy")
    assert BAD_PATTERN in logged


async def test_the_upstream_probes_error_needs_a_client_key(
    tmp_path: Path, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    key, entry = new_key("ops")
    keys = write_keys(tmp_path / "keys.yaml", entry)
    proxy = await make_proxy(upstream=f"http://127.0.0.1:{port}/v1", keys_file=str(keys))
    status, body = await readyz(http, proxy.url)
    assert status == 503 and body["status"] == "not ready"
    assert body["upstream"] == {"reachable": False, "error": None}
    status, body = await readyz(http, proxy.url, key)
    assert status == 503 and body["upstream"]["error"] == "ConnectionRefusedError"
