"""The proxy's input cache (issue 21): a conversation resent turn by turn is scanned once.

Through the real server in front of the fake upstream: the earlier turns of a chat conversation
are answered from the cache (``shieldgate_input_cache_hits_total``) and only the new ones are
scanned (``_misses_total``), a remembered redaction is written into the forwarded body again,
``input_cache_bytes: 0`` turns the cache off, and a Responses API conversation continued with
``previous_response_id`` does not scan its stored turns again. Each caller (credential) has
a part of the cache of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream, Reply, chunk, sse

GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # redacted by the default policy


async def cache_metrics(http: aiohttp.ClientSession, proxy: RunningServer) -> dict[str, float]:
    async with http.get(f"{proxy.url}/metrics") as response:
        text = await response.text()
    found = {"hits": 0.0, "misses": 0.0, "bytes": 0.0}
    for line in text.splitlines():
        for name in found:
            metric = "_total" if name != "bytes" else ""
            series = f"shieldgate_input_cache_{name}{metric}"
            # Summed over the endpoints (a label of the counters, not of the shared size).
            if line.startswith((series + " ", series + "{")):
                found[name] += float(line.rsplit(" ", 1)[1])
    return found


async def chat(
    http: aiohttp.ClientSession,
    proxy: RunningServer,
    messages: list[dict[str, Any]],
    key: str = "sk-one",
) -> dict[str, Any]:
    body = {"model": "m", "messages": messages}
    headers = {"Authorization": f"Bearer {key}"}
    async with http.post(
        f"{proxy.url}/v1/chat/completions", json=body, headers=headers
    ) as response:
        assert response.status == 200, await response.text()
        reply: dict[str, Any] = await response.json()
        return reply


async def test_a_conversation_is_scanned_turn_by_turn(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    conversation = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": f"my token is {GH_TOKEN}, keep it safe"},
    ]
    await chat(http, proxy, conversation)
    counted = await cache_metrics(http, proxy)
    assert (counted["hits"], counted["misses"]) == (0, 2)
    assert counted["bytes"] > 0

    conversation += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "what was it again?"},
    ]
    await chat(http, proxy, conversation)
    counted = await cache_metrics(http, proxy)
    assert (counted["hits"], counted["misses"]) == (2, 4)
    # The remembered redaction is in what went upstream, as on the first turn.
    forwarded = [m["content"] for m in upstream.requests[-1].json()["messages"]]
    assert forwarded[1] == "my token is [CREDENTIAL], keep it safe"
    assert GH_TOKEN not in json.dumps(forwarded)


async def test_callers_do_not_share_what_is_remembered(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # A remembered text is answered sooner than a scanned one: another caller must not be
    # able to tell by the time that someone sent it.
    proxy = await make_proxy()
    messages = [{"role": "user", "content": "a text only one caller sent"}]
    await chat(http, proxy, messages, key="sk-one")
    await chat(http, proxy, messages, key="sk-two")
    counted = await cache_metrics(http, proxy)
    assert (counted["hits"], counted["misses"]) == (0, 2)
    await chat(http, proxy, messages, key="sk-two")
    counted = await cache_metrics(http, proxy)
    assert (counted["hits"], counted["misses"]) == (1, 2)


async def test_no_cache_scans_every_text_every_time(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy(input_cache_bytes=0)
    messages = [{"role": "user", "content": f"token {GH_TOKEN}"}]
    for _ in range(2):
        await chat(http, proxy, messages)
        assert upstream.requests[-1].json()["messages"][0]["content"] == "token [CREDENTIAL]"
    assert await cache_metrics(http, proxy) == {"hits": 0, "misses": 0, "bytes": 0}


async def test_stored_responses_are_not_scanned_again(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    tmp_path: Path,
) -> None:
    proxy = await make_proxy(responses_db=str(tmp_path / "responses.sqlite3"))
    previous: str | None = None
    counts: list[tuple[float, float]] = []
    for turn in range(3):
        upstream.enqueue(Reply(body=_stream(f"answer number {turn}")))
        body: dict[str, Any] = {"model": "m", "input": f"question number {turn}"}
        if previous is not None:
            body["previous_response_id"] = previous
        async with http.post(f"{proxy.url}/v1/responses", json=body) as response:
            assert response.status == 200, await response.text()
            previous = (await response.json())["id"]
        counted = await cache_metrics(http, proxy)
        counts.append((counted["hits"], counted["misses"]))
    # Running totals. Turn 1 scans its question; turn 2 its own and the stored answer of turn 1
    # (output text, new to the input stage), not turn 1's question; turn 3 likewise scans two
    # texts, and its three stored ones are remembered.
    assert counts == [(0, 1), (1, 3), (4, 5)]
    sent = upstream.requests[-1].json()["messages"]
    assert [m["content"] for m in sent] == [
        "question number 0",
        "answer number 0",
        "question number 1",
        "answer number 1",
        "question number 2",
    ]


def _stream(text: str) -> bytes:
    return sse(chunk({"role": "assistant", "content": text}), chunk({}, finish_reason="stop"))
