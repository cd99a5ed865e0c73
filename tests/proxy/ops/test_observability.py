"""Request ids, metrics, the audit trail, JSON logs and the stream concurrency limit."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
from pathlib import Path

import aiohttp
import pytest

from proxy.ops.logs import JsonFormatter
from proxy.ops.metrics import Metrics
from proxy.serving.request_context import current_request_id
from proxy.serving.server import GC_YOUNG_THRESHOLD, freeze_startup_heap
from proxy.state import STREAM_SLOTS
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    json_bytes,
    text_stream,
)

CARD_POLICY = """
name: cards
input:
  - {id: cards, type: regex, patterns: ['\\b4111[ -]?1111[ -]?1111[ -]?1111\\b'], action: redact}
  - {id: bombs, type: denylist, phrases: [build a bomb]}
output:
  - {id: watch-word, type: denylist, phrases: [banana], mode: monitor}
"""
CARD = "4111 1111 1111 1111"


def chat_body(text: str, *, stream: bool = False) -> dict[str, object]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}


async def test_request_ids_are_accepted_or_made_and_returned(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    url = f"{proxy.url}/v1/chat/completions"
    async with http.post(url, json=chat_body("hi"), headers={"x-request-id": "abc-123"}) as r:
        assert r.headers["x-request-id"] == "abc-123"
    async with http.post(url, json=chat_body("hi"), headers={"x-request-id": "bad id"}) as r:
        made = r.headers["x-request-id"]
        assert made != "bad id" and len(made) == 32
    async with http.get(f"{proxy.url}/nowhere") as r:  # errors carry one too
        assert r.status == 404 and len(r.headers["x-request-id"]) == 32
    assert upstream.requests[0].headers["x-request-id"] == "abc-123"


def metric(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_metrics_count_known_traffic(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy(CARD_POLICY, metrics_models=("m",))
    url = f"{proxy.url}/v1/chat/completions"
    upstream.enqueue(
        Reply(body=json_bytes(chat_completion("a banana"))),
        Reply(body=text_stream("more banana"), headers={"content-type": "text/event-stream"}),
    )
    for body in (chat_body(f"card {CARD}"), chat_body("x", stream=True), chat_body("build a bomb")):
        async with http.post(url, json=body) as resp:
            await resp.read()
    async with http.post(url, json={**chat_body("x"), "model": "secret-client-model"}) as resp:
        await resp.read()
    async with http.get(f"{proxy.url}/metrics") as resp:
        assert resp.status == 200 and resp.content_type == "text/plain"
        text = await resp.text()
    route = "/v1/chat/completions"
    assert metric(text, "shieldgate_requests_total", route=route, status="200", model="m") == 3
    assert metric(text, "shieldgate_requests_total", route=route, model="other") == 1
    assert "secret-client-model" not in text  # clients cannot mint label values
    assert metric(text, "shieldgate_findings_total", shield="cards", action="redact") == 1
    assert metric(text, "shieldgate_findings_total", shield="bombs", action="block") == 1
    assert metric(text, "shieldgate_findings_total", shield="watch-word", mode="monitor") == 2
    assert metric(text, "shieldgate_streams_in_flight") == 0
    assert metric(text, "shieldgate_held_bytes") == 0
    assert metric(text, "shieldgate_stage_seconds_count", stage="input") == 4


async def test_audit_trail_has_decisions_but_no_raw_pii(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = await make_proxy(CARD_POLICY, audit_log=str(audit), audit_hash_key="k1")
    url = f"{proxy.url}/v1/chat/completions"
    for text in (f"card {CARD}", f"again {CARD}"):
        async with http.post(url, json=chat_body(text), headers={"x-request-id": "r1"}) as r:
            await r.read()
    await proxy.close()  # flushes the queued records
    raw = audit.read_text()
    assert CARD not in raw and CARD.replace(" ", "") not in raw and "4111" not in raw
    records = [json.loads(line) for line in raw.splitlines()]
    assert len(records) == 2
    first = records[0]
    keys = ("request_id", "policy", "stage", "endpoint", "shield", "type", "action")
    assert {k: first[k] for k in keys} == {
        "request_id": "r1",
        "policy": "cards",
        "stage": "input",
        "endpoint": "chat",
        "shield": "cards",
        "type": "regex",
        "action": "redact",
    }
    assert (first["start"], first["end"], first["mode"]) == (5, 24, "enforce")
    # The same value hashes the same, so a leak can be traced without keeping the value.
    assert records[0]["match_hash"] == records[1]["match_hash"]
    assert len(first["match_hash"]) == 32


async def test_concurrency_limit_refuses_instead_of_queueing(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.default_reply = Reply(
        body=text_stream("slow stream " * 4),
        headers={"content-type": "text/event-stream"},
        delay_before_headers=1.0,
    )
    proxy = await make_proxy(max_concurrent_streams=2)
    url = f"{proxy.url}/v1/chat/completions"

    async def one() -> tuple[int, str | None]:
        async with http.post(url, json=chat_body("x", stream=True)) as resp:
            await resp.read()
            return resp.status, resp.headers.get("Retry-After")

    first = [asyncio.create_task(one()) for _ in range(2)]
    slots = proxy.app[STREAM_SLOTS]
    for _ in range(200):  # until both streams hold their slot (the upstream answers late)
        if slots.in_use == 2:
            break
        await asyncio.sleep(0.01)
    assert await one() == (503, "1")
    # A Responses stream takes a slot from the same pool: it is no way around the limit.
    responses_body = {"model": "m", "input": "x", "stream": True}
    async with http.post(f"{proxy.url}/v1/responses", json=responses_body) as resp:
        assert (resp.status, resp.headers.get("Retry-After")) == (503, "1")
    assert [r[0] for r in await asyncio.gather(*first)] == [200, 200]
    assert (await one())[0] == 200  # slots come back
    async with http.post(f"{proxy.url}/v1/responses", json=responses_body) as resp:
        await resp.read()
        assert resp.status == 200
    assert slots.in_use == 0


def test_json_logs_carry_the_request_id_and_extra_fields() -> None:
    record = logging.makeLogRecord(
        {"name": "shieldgate.findings", "msg": "finding %s", "args": ("x",), "levelno": 20,
         "levelname": "INFO", "shield": "cards"}
    )  # fmt: skip
    token = current_request_id.set("req-9")
    try:
        entry = json.loads(JsonFormatter().format(record))
    finally:
        current_request_id.reset(token)
    assert entry["request_id"] == "req-9" and entry["shield"] == "cards"
    assert entry["message"] == "finding x" and entry["level"] == "info"


async def test_readyz_reports_an_unreachable_upstream(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # A port nothing listens on: bind one, then close it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proxy = await make_proxy(upstream=f"http://127.0.0.1:{port}/v1")
    async with http.get(f"{proxy.url}/readyz") as resp:
        body = await resp.json()
        assert resp.status == 503
    assert body["status"] == "not ready" and body["upstream"]["reachable"] is False
    async with http.get(f"{proxy.url}/healthz") as resp:
        assert resp.status == 200  # alive all the same: liveness must not restart it


async def test_readyz_probes_the_upstream_once_per_ttl(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    connections = 0

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proxy = await make_proxy(upstream=f"http://127.0.0.1:{port}/v1", readyz_upstream_ttl=60)
        for _ in range(5):
            async with http.get(f"{proxy.url}/readyz") as resp:
                assert resp.status == 200
                assert (await resp.json())["upstream"] == {"reachable": True, "error": None}
        await asyncio.sleep(0.05)
        assert connections == 1  # cached: probes do not hammer the upstream
    finally:
        server.close()
        await server.wait_closed()


async def test_request_timeout_bounds_a_non_stream_request(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The upstream answers its headers at once but drips the body: read_timeout never fires.
    body = json_bytes(chat_completion("slow"))
    upstream.enqueue(
        Reply(chunks=[body[i : i + 4] for i in range(0, len(body), 4)], chunk_delay=0.05)
    )
    proxy = await make_proxy(request_timeout=0.5)
    started = asyncio.get_running_loop().time()
    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body("x")) as resp:
        reply = await resp.json()
    assert resp.status == 504 and reply["error"]["code"] == "upstream_timeout"
    assert asyncio.get_running_loop().time() - started < 3


def test_metric_children_are_remembered_and_stay_the_metrics_own() -> None:
    metrics = Metrics()
    child = metrics.child(metrics.requests, "/r", "200", "p", "-", "other")
    assert child is metrics.child(metrics.requests, "/r", "200", "p", "-", "other")
    assert child is metrics.requests.labels("/r", "200", "p", "-", "other")
    # The same label values on another metric are another child.
    assert metrics.child(metrics.stage_seconds, "input", "chat") is not metrics.child(
        metrics.remote_seconds, "input", "chat"
    )
    child.inc()
    metrics.child(metrics.stage_seconds, "input", "chat").observe(0.001)
    text = metrics.render().decode()
    assert metric(text, "shieldgate_requests_total", route="/r", policy="p") == 1
    assert metric(text, "shieldgate_stage_seconds_count", stage="input") == 1
    assert metric(text, "shieldgate_remote_check_seconds_count", stage="input") == 0


def test_metric_children_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("proxy.ops.metrics._CHILDREN_LIMIT", 3)
    metrics = Metrics()
    for shield in "abcde":
        metrics.child(
            metrics.findings, "input", "p", shield, "regex", "block", "enforce", "chat"
        ).inc()
    assert len(metrics._children) <= 3
    text = metrics.render().decode()  # every child still counts, remembered or not
    assert all(metric(text, "shieldgate_findings_total", shield=s) == 1 for s in "abcde")
    metrics.child(metrics.findings, "input", "p", "a", "regex", "block", "enforce", "chat").inc()
    assert metric(metrics.render().decode(), "shieldgate_findings_total", shield="a") == 2


def test_freezing_the_startup_heap_makes_young_collections_rarer() -> None:
    before = gc.get_threshold()
    try:
        freeze_startup_heap()
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.parametrize(
    ("path", "body", "end"),
    [
        ("/v1/chat/completions", chat_body("Say hello", stream=True), b"data: [DONE]"),
        (
            "/v1/responses",
            {"model": "m", "stream": True, "input": "Say hello"},
            b"event: response.completed",
        ),
    ],
    ids=["chat", "responses"],
)
async def test_a_streamed_reply_observes_the_held_characters(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    path: str,
    body: dict[str, object],
    end: bytes,
) -> None:
    """Both stream handlers pass ``on_held`` to their guard: shieldgate_stream_held_chars is
    observed once per read that released events (it stayed empty while they did not)."""
    proxy = await make_proxy()
    name = "shieldgate_stream_held_chars_count"
    async with http.get(f"{proxy.url}/metrics") as resp:
        assert metric(await resp.text(), name) == 0
    text = "Hello! How can I help you today?"
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + 4]}) for i in range(0, len(text), 4)]
    # Paced, a read per event: a read that ends the stream releases through end(), not a read.
    upstream.enqueue(Reply(events=[*events, chunk({}, finish_reason="stop")], chunk_delay=0.02))
    async with http.post(f"{proxy.url}{path}", json=body) as resp:
        assert resp.status == 200 and resp.content_type == "text/event-stream"
        assert end in await resp.read()
    async with http.get(f"{proxy.url}/metrics") as resp:
        assert metric(await resp.text(), name) > 0
