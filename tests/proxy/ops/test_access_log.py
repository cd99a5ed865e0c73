"""Operators see what happened: a warning per upstream failure, one access line per request.

Real proxies on port 0 in front of the scripted upstream (or of a port nothing listens on); the
log records are captured as the proxy wrote them and read back through the JSON formatter the
service runs with.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from typing import Any

import aiohttp
import openai
import pytest

from proxy.ops.logs import JsonFormatter
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    json_bytes,
    text_stream,
)

PROMPT = "my private question about quarterly numbers"


def free_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def as_json(record: logging.LogRecord) -> dict[str, Any]:
    """The line the service's JSON log format writes for ``record``."""
    entry: dict[str, Any] = json.loads(JsonFormatter().format(record))
    return entry


def lines_of(caplog: pytest.LogCaptureFixture, logger: str) -> list[dict[str, Any]]:
    return [as_json(r) for r in caplog.records if r.name == logger]


def chat_body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


async def test_an_unreachable_upstream_is_a_warning_without_the_request(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    port = free_port()
    # Credentials and a path in the upstream URL: a log names the host and port only.
    proxy = await make_proxy(upstream=f"http://user:pw-in-url@127.0.0.1:{port}/v1")
    headers = {"x-request-id": "req-upstream-down"}
    url = f"{proxy.url}/v1/chat/completions"
    async with http.post(url, json=chat_body(PROMPT), headers=headers) as resp:
        assert resp.status == 502
        await resp.read()

    warnings = [e for e in lines_of(caplog, "shieldgate.upstream") if e["level"] == "warning"]
    assert len(warnings) == 1, warnings
    warning = warnings[0]
    assert warning["kind"] == "connect_error"
    assert warning["upstream"] == f"127.0.0.1:{port}"
    assert warning["attempts"] == 3  # the default retry_attempts
    assert warning["request_id"] == "req-upstream-down"
    everything = "\n".join(json.dumps(as_json(r)) for r in caplog.records)
    assert "quarterly" not in everything and "pw-in-url" not in everything
    assert "/v1" not in warning["message"]
    # And the request itself got its access line, with the failure's status.
    [access] = lines_of(caplog, "shieldgate.access")
    assert (access["status"], access["verdict"]) == (502, "error")


async def test_a_5xx_from_the_upstream_is_logged_with_its_status(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    upstream.enqueue(Reply(status=500, body=b'{"error": {"message": "model crashed"}}'))
    client = make_client(await make_proxy())
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": PROMPT}]
        )
    [warning] = lines_of(caplog, "shieldgate.upstream")
    assert (warning["kind"], warning["status"], warning["attempts"]) == ("status_5xx", 500, 1)
    assert "crashed" not in json.dumps(warning)


async def test_every_request_gets_one_access_line(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    upstream.enqueue(Reply(body=json_bytes(chat_completion("four"))))
    proxy = await make_proxy()
    url = f"{proxy.url}/v1/chat/completions?secret=in-query"
    async with http.post(url, json=chat_body(PROMPT), headers={"x-request-id": "req-1"}) as resp:
        assert resp.status == 200
        await resp.read()

    [line] = lines_of(caplog, "shieldgate.access")
    assert line["level"] == "info"
    assert line["method"] == "POST"
    assert line["path"] == "/v1/chat/completions"  # never the query string
    assert line["status"] == 200
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] > 0
    assert line["policy"] == "default"
    assert line["verdict"] == "allow"
    assert line["stream"] is False
    assert line["request_id"] == "req-1"
    assert "in-query" not in json.dumps(line) and "quarterly" not in json.dumps(line)

    # What the shields decided is the verdict: a blocked input, a redacted one.
    caplog.clear()
    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body("build a bomb")) as r:
        assert r.status == 200 and r.headers["x-shieldgate-blocked"] == "input"
    key = "my key is AKIAQ3EGRK5JXWZY7N4T"
    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body(key)) as r:
        assert r.status == 200
    async with http.get(f"{proxy.url}/healthz") as r:
        assert r.status == 200
    lines = lines_of(caplog, "shieldgate.access")
    assert [(e["path"], e["verdict"]) for e in lines] == [
        ("/v1/chat/completions", "block"),
        ("/v1/chat/completions", "redact"),
        ("/healthz", "-"),
    ]


async def test_the_access_log_can_be_turned_off(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    proxy = await make_proxy(access_log=False)
    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body("hi")) as resp:
        assert resp.status == 200
    async with http.get(f"{proxy.url}/healthz") as resp:
        assert resp.status == 200
    assert lines_of(caplog, "shieldgate.access") == []


async def test_a_stream_is_logged_when_it_ends(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    delay, events = 0.05, 10
    body = text_stream("x" * 4 * (events - 2))  # a role-and-text event per 4 characters
    upstream.enqueue(
        Reply(
            chunks=[event + b"\n\n" for event in body.split(b"\n\n") if event],
            headers={"content-type": "text/event-stream"},
            chunk_delay=delay,
        )
    )
    proxy = await make_proxy()
    url = f"{proxy.url}/v1/chat/completions"
    async with http.post(url, json=chat_body("hi", stream=True)) as resp:
        assert resp.status == 200  # the stream has started ...
        await asyncio.sleep(2 * delay)
        assert lines_of(caplog, "shieldgate.access") == []  # ... and is not logged yet
        await resp.read()
    for _ in range(100):  # the handler returns right after the last byte
        if lines_of(caplog, "shieldgate.access"):
            break
        await asyncio.sleep(0.01)
    [line] = lines_of(caplog, "shieldgate.access")
    assert line["stream"] is True and line["status"] == 200 and line["verdict"] == "allow"
    assert line["duration_ms"] >= (events - 1) * delay * 1000 * 0.9  # the whole stream
