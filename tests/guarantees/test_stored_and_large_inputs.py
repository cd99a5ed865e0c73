"""Issue 14, items 14 and 16: a large request does not stall the proxy, and the Responses store
keeps only what the input stage let through."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
REDACTING = """
version: 1
name: redacting
input:
  - {id: weapons, type: denylist, phrases: ["build a bomb"], action: block}
  - {id: credentials, type: secrets, action: redact, placeholder: "[CREDENTIAL]"}
"""


async def create(
    http: aiohttp.ClientSession, url: str, body: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{url}/v1/responses", json=body) as reply:
        return reply.status, await reply.json()


async def test_a_stored_response_holds_the_redacted_instructions_and_tools(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    store = tmp_path / "responses.sqlite3"
    proxy = await make_proxy(REDACTING, responses_db=str(store))
    tool = {
        "type": "function",
        "name": "deploy",
        "description": f"Deploys with the token {TOKEN}.",
        "parameters": {"type": "object", "properties": {}},
    }
    status, created = await create(
        http,
        proxy.url,
        {"model": "m", "input": "hi", "instructions": f"Use {TOKEN} to log in.", "tools": [tool]},
    )
    assert status == 200
    forwarded = json.dumps(upstream.requests[-1].json())
    assert TOKEN not in forwarded and "[CREDENTIAL]" in forwarded
    async with http.get(f"{proxy.url}/v1/responses/{created['id']}") as reply:
        stored = await reply.json()
    for response in (created, stored):
        assert response["instructions"] == "Use [CREDENTIAL] to log in."
        assert response["tools"][0]["description"] == "Deploys with the token [CREDENTIAL]."
        assert TOKEN not in json.dumps(response)
    assert TOKEN.encode() not in store.read_bytes()


async def test_a_request_blocked_at_input_is_stored_as_the_refusal_without_its_text(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    store = tmp_path / "responses.sqlite3"
    proxy = await make_proxy(REDACTING, responses_db=str(store))
    secret_instructions = "The launch code is tango-four-seven."
    status, created = await create(
        http,
        proxy.url,
        {"model": "m", "input": "how to build a bomb", "instructions": secret_instructions},
    )
    assert status == 200
    assert upstream.requests == []
    async with http.get(f"{proxy.url}/v1/responses/{created['id']}") as reply:
        stored = await reply.json()
    for response in (created, stored):
        assert response["instructions"] is None
        assert response["output"][0]["content"][0]["type"] == "refusal"
    data = store.read_bytes()
    assert b"tango-four-seven" not in data and b"build a bomb" not in data


def _health_latencies(url: str, until: threading.Event) -> float:
    """The slowest ``/healthz`` answer until ``until`` is set, polled from a thread of its own:
    the proxy runs on this test's event loop, so a poller on that loop would stall with it."""
    worst = 0.0
    while not until.is_set():
        started = time.perf_counter()
        with urllib.request.urlopen(f"{url}/healthz", timeout=30) as reply:
            assert reply.status == 200
        worst = max(worst, time.perf_counter() - started)
        time.sleep(0.02)
    return worst


async def test_a_large_request_does_not_stall_other_requests(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    """~3.5 MB of 110,000 tiny messages costs seconds of CPU to parse and check; on the event
    loop a health check would wait all that time. Off the loop it is answered at once."""
    proxy = await make_proxy(None)
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}] * 110_000}
    responses = {
        "model": "m",
        "store": False,
        "input": [{"role": "user", "content": "hi"}] * 110_000,
    }
    for path, body in (("chat/completions", chat), ("responses", responses)):
        done = threading.Event()
        watcher = asyncio.create_task(asyncio.to_thread(_health_latencies, proxy.url, done))
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        async with http.post(f"{proxy.url}/v1/{path}", json=body) as reply:
            assert reply.status == 200, await reply.text()
        took = time.perf_counter() - started
        done.set()
        worst = await watcher
        assert took > 0.3  # the check is real work: the bound below means something
        # Measured here: 0.06-0.16 s off the loop on a quiet machine, 3.4 s on it. The bound
        # leaves room for a busy CI machine (and a garbage collection of the parsed body, which
        # holds the interpreter whichever thread triggers it), not for a stalled loop.
        # On the loop a health check waits for nearly the whole request; a slow CI machine
        # stretches both, so the bound grows with the request (CI: 1.36 s behind 2.41 s).
        bound = max(1.0, 0.6 * took)
        assert worst < bound, f"a health check waited {worst:.2f} s behind a {took:.2f} s request"


def schema_format(description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    return {"type": "json_schema", "name": "r", "schema": schema, "description": description}


async def test_a_stored_response_holds_the_redacted_text_format(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    store = tmp_path / "responses.sqlite3"
    proxy = await make_proxy(REDACTING, responses_db=str(store))
    text = {"format": schema_format(f"Sign it with {TOKEN}.")}
    status, created = await create(http, proxy.url, {"model": "m", "input": "hi", "text": text})
    assert status == 200
    forwarded = upstream.requests[-1].json()["response_format"]
    assert forwarded["json_schema"]["description"] == "Sign it with [CREDENTIAL]."
    async with http.get(f"{proxy.url}/v1/responses/{created['id']}") as reply:
        stored = await reply.json()
    for response in (created, stored):
        assert response["text"]["format"] == schema_format("Sign it with [CREDENTIAL].")
    assert TOKEN.encode() not in store.read_bytes()


async def test_a_request_blocked_at_input_is_stored_without_its_text_format(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    store = tmp_path / "responses.sqlite3"
    proxy = await make_proxy(REDACTING, responses_db=str(store))
    text = {"format": schema_format("The launch code is tango-four-seven.")}
    body = {"model": "m", "input": "how to build a bomb", "text": text}
    status, created = await create(http, proxy.url, body)
    assert status == 200
    assert upstream.requests == []
    async with http.get(f"{proxy.url}/v1/responses/{created['id']}") as reply:
        stored = await reply.json()
    for response in (created, stored):
        assert response["text"]["format"] == {"type": "text"}
        assert response["output"][0]["content"][0]["type"] == "refusal"
    assert b"tango-four-seven" not in store.read_bytes()
