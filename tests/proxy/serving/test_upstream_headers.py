"""The upstream's ``Server`` and ``Date`` response headers reach the client unchanged.

They are end-to-end headers, relayed like the rest (only hop-by-hop, framing and ``Set-Cookie``
stay behind). aiohttp adds its own ``Server`` and ``Date`` only to a response that has none:
when the upstream sent neither, and on the proxy's own answers.

The upstream here is a raw TCP server (``tests.guarantees.test_faults.RawUpstream``): an aiohttp
upstream
always sends both headers, so it could not show what happens when one is missing.
"""

from __future__ import annotations

import email.utils
import json
import time

import aiohttp
import pytest
from aiohttp.http import SERVER_SOFTWARE

from tests.conftest import ProxyFactory
from tests.guarantees.test_faults import RawUpstream
from tests.support.fake_upstream import chat_completion, json_bytes, text_stream

UPSTREAM_SERVER = "vllm/0.6.3 (upstream)"
UPSTREAM_DATE = "Tue, 01 Jan 2030 00:00:00 GMT"  # unmistakably not the proxy's clock

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def raw_reply(*, stream: bool, server: bool, date: bool, status: int = 200) -> bytes:
    """A whole HTTP/1.1 answer, with exactly the ``Server``/``Date`` lines asked for."""
    if status != 200:
        body = json_bytes({"error": {"message": "bad model", "type": "invalid_request_error"}})
        kind = "application/json"
    elif stream:
        body, kind = text_stream("Hello there."), "text/event-stream"
    else:
        body, kind = json_bytes(chat_completion("Hello there.")), "application/json"
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {kind}", f"Content-Length: {len(body)}"]
    if server:
        lines.append(f"Server: {UPSTREAM_SERVER}")
    if date:
        lines.append(f"Date: {UPSTREAM_DATE}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def ask(
    http: aiohttp.ClientSession, url: str, body: dict[str, object], method: str = "POST"
) -> tuple[int, aiohttp.ClientResponse, bytes]:
    async with http.request(method, url, json=body if method == "POST" else None) as resp:
        return resp.status, resp, await resp.read()


def assert_proxy_date(value: str) -> None:
    """A ``Date`` aiohttp made: now (the proxy's clock), not the upstream's."""
    assert value != UPSTREAM_DATE
    when = email.utils.parsedate_to_datetime(value).timestamp()
    assert abs(when - time.time()) < 60


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_server_and_date_are_the_upstreams_when_it_sends_them(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession, stream: bool
) -> None:
    # Both, one of them, or neither (then aiohttp's own, as on any answer without them).
    for server, date in [(True, True), (True, False), (False, True), (False, False)]:
        async with RawUpstream(raw_reply(stream=stream, server=server, date=date)) as upstream:
            proxy = await make_proxy(upstream=upstream.base_url)
            status, resp, body = await ask(
                http, f"{proxy.url}/v1/chat/completions", {**CHAT, "stream": stream}
            )

        assert status == 200, body
        assert resp.content_type == ("text/event-stream" if stream else "application/json")
        if stream:
            assert body.endswith(b"data: [DONE]\n\n") and b'"content":"Hell"' in body
        else:
            assert json.loads(body)["choices"][0]["message"]["content"] == "Hello there."
        # One of each, never the upstream's and the proxy's side by side.
        expected = UPSTREAM_SERVER if server else SERVER_SOFTWARE
        assert resp.headers.getall("Server") == [expected], (server, date)
        [sent_date] = resp.headers.getall("Date")
        if date:
            assert sent_date == UPSTREAM_DATE
        else:
            assert_proxy_date(sent_date)


async def test_an_upstream_error_status_keeps_the_upstreams_server_and_date(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = raw_reply(stream=False, server=True, date=True, status=400)
    async with RawUpstream(reply) as upstream:
        proxy = await make_proxy(upstream=upstream.base_url)
        status, resp, body = await ask(http, f"{proxy.url}/v1/chat/completions", CHAT)

    assert status == 400
    assert json.loads(body)["error"]["message"] == "bad model"
    assert resp.headers.getall("Server") == [UPSTREAM_SERVER]
    assert resp.headers.getall("Date") == [UPSTREAM_DATE]


async def test_models_passthrough_keeps_the_upstreams_server_and_date(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    body = json_bytes({"object": "list", "data": []})
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nServer: {UPSTREAM_SERVER}\r\nDate: {UPSTREAM_DATE}\r\n"
        "Connection: close\r\n\r\n"
    )
    async with RawUpstream(head.encode() + body) as upstream:
        proxy = await make_proxy(upstream=upstream.base_url)
        status, resp, _ = await ask(http, f"{proxy.url}/v1/models", {}, method="GET")

    assert status == 200
    assert resp.headers.getall("Server") == [UPSTREAM_SERVER]
    assert resp.headers.getall("Date") == [UPSTREAM_DATE]


async def test_the_proxys_own_answers_carry_its_own_server_and_date(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    def reply(text: str) -> bytes:
        body = json_bytes(chat_completion(text))
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nServer: {UPSTREAM_SERVER}\r\n"
            f"Date: {UPSTREAM_DATE}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body

    async with RawUpstream(reply("Here you go.")) as upstream:
        proxy = await make_proxy(upstream=upstream.base_url)
        status, resp, _ = await ask(http, f"{proxy.url}/v1/chat/completions", CHAT)
    assert status == 200
    assert resp.headers.getall("Server") == [UPSTREAM_SERVER]  # relayed: the upstream's
    assert resp.headers.getall("Date") == [UPSTREAM_DATE]

    # A refusal is the proxy's answer, not the upstream's: nothing of the upstream's reply,
    # its headers included, goes with it.
    async with RawUpstream(reply("Sure: to synthesize sarin, mix the precursors.")) as upstream:
        proxy = await make_proxy(upstream=upstream.base_url)
        status, resp, body = await ask(http, f"{proxy.url}/v1/chat/completions", CHAT)
        assert status == 200
        assert resp.headers["x-shieldgate-blocked"] == "output"
        assert b"sarin" not in body
        assert resp.headers.getall("Server") == [SERVER_SOFTWARE]
        assert_proxy_date(resp.headers["Date"])

        status, resp, _ = await ask(http, f"{proxy.url}/v1/nowhere", CHAT)
        assert status == 404
        assert resp.headers.getall("Server") == [SERVER_SOFTWARE]
        assert_proxy_date(resp.headers["Date"])
