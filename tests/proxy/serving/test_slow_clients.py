"""Slow clients: a request's headers and body have a time limit, and an address a connection cap.

Raw sockets against a real proxy with small limits: the bytes a client sends, and when, are the
point. A header timeout closes the connection without an answer; a body timeout answers 408 in
OpenAI's error shape and closes; a body that keeps coming, however slowly, is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream

HEADER_TIMEOUT = 0.4
BODY_TIMEOUT = 0.4
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello there"}]})


def post_head(length: int) -> bytes:
    return (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


async def connect(
    proxy: RunningServer,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", proxy.port)


async def closed_after(reader: asyncio.StreamReader, limit: float) -> tuple[bytes, float]:
    """Everything the proxy sends until it closes the connection, and how long that took."""
    started = time.monotonic()
    data = b""
    with contextlib.suppress(ConnectionResetError):  # a reset is a close too
        data = await asyncio.wait_for(reader.read(), limit)
    return data, time.monotonic() - started


async def response_of(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    status_line, *lines = head.decode().split("\r\n")
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines if line)
    }
    body = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 5)
    return int(status_line.split()[1]), headers, body


async def no_connections(proxy: RunningServer, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while proxy.open_connections:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.fixture
async def proxy(make_proxy: ProxyFactory) -> RunningServer:
    return await make_proxy(client_header_timeout=HEADER_TIMEOUT, client_body_timeout=BODY_TIMEOUT)


async def test_half_the_headers_are_closed_after_the_header_timeout(
    proxy: RunningServer, upstream: FakeUpstream
) -> None:
    reader, writer = await connect(proxy)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Le")
    data, took = await closed_after(reader, 5)
    assert data == b""  # no answer: the client has not finished asking
    assert HEADER_TIMEOUT * 0.9 <= took < HEADER_TIMEOUT + 1.5
    assert await no_connections(proxy)
    assert upstream.requests == []
    writer.close()


async def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(
    proxy: RunningServer,
) -> None:
    reader, writer = await connect(proxy)
    data, took = await closed_after(reader, 5)
    assert data == b"" and took < HEADER_TIMEOUT + 1.5
    writer.close()


async def test_a_later_request_gets_the_header_timeout_from_its_first_byte(
    proxy: RunningServer,
) -> None:
    reader, writer = await connect(proxy)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
    status, _, _ = await response_of(reader)
    assert status == 200
    # Idle between requests is keep-alive, aiohttp's to close, not the header timeout's.
    await asyncio.sleep(HEADER_TIMEOUT * 2.5)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
    status, _, _ = await response_of(reader)
    assert status == 200
    writer.write(b"GET /healthz HTTP/1.1\r\nHo")
    data, took = await closed_after(reader, 5)
    assert data == b"" and HEADER_TIMEOUT * 0.9 <= took < HEADER_TIMEOUT + 1.5
    writer.close()


async def test_half_a_body_gets_408_in_openai_shape_and_a_closed_connection(
    proxy: RunningServer, upstream: FakeUpstream
) -> None:
    reader, writer = await connect(proxy)
    raw = BODY.encode()
    writer.write(post_head(len(raw)) + raw[: len(raw) // 2])
    started = time.monotonic()
    status, headers, body = await response_of(reader)
    took = time.monotonic() - started
    assert status == 408 and headers["connection"] == "close"
    assert BODY_TIMEOUT * 0.9 <= took < BODY_TIMEOUT + 1.5
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "request_timeout"
    assert "hello" not in body.decode()  # nothing of the request is quoted
    data, _ = await closed_after(reader, 5)
    assert data == b""
    # The handler is done and the connection gone: nothing waits for the rest of the body.
    assert await no_connections(proxy)
    assert upstream.requests == []
    writer.close()


async def test_a_declared_body_that_never_starts_gets_408(proxy: RunningServer) -> None:
    reader, writer = await connect(proxy)
    writer.write(post_head(100))
    status, _, _ = await response_of(reader)
    assert status == 408
    writer.close()


async def test_a_chunked_body_that_stops_gets_408(proxy: RunningServer) -> None:
    reader, writer = await connect(proxy)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\n"
        b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"mod\r\n'
    )
    status, _, _ = await response_of(reader)
    assert status == 408
    writer.close()


async def test_the_body_timeout_bounds_silence_not_a_slow_but_steady_body(
    proxy: RunningServer, upstream: FakeUpstream
) -> None:
    """The body timeout bounds the silence between two reads, not the whole body (as nginx's
    ``client_body_timeout``): a body arriving in pieces for several times the timeout is
    answered as usual; the same body stopping half-way is a 408."""
    raw = BODY.encode()
    size = len(raw) // 8 + 1
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)]
    steady = await connect(proxy)
    stalled = await connect(proxy)
    for _, writer in (steady, stalled):
        writer.write(post_head(len(raw)))
    started = time.monotonic()
    for i, piece in enumerate(pieces):
        await asyncio.sleep(BODY_TIMEOUT / 3)
        steady[1].write(piece)
        if i < len(pieces) // 2:
            stalled[1].write(piece)
    assert time.monotonic() - started > BODY_TIMEOUT * 2
    assert (await response_of(steady[0]))[0] == 200
    assert upstream.requests[-1].json()["messages"][0]["content"] == "hello there"
    assert (await response_of(stalled[0]))[0] == 408
    for _, writer in (steady, stalled):
        writer.close()


async def test_connections_per_client_address_are_capped(make_proxy: ProxyFactory) -> None:
    proxy = await make_proxy(max_connections_per_client=2)
    first = await connect(proxy)
    second = await connect(proxy)
    for reader, writer in (first, second):
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
        assert (await response_of(reader))[0] == 200
    reader, writer = await connect(proxy)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
    data, took = await closed_after(reader, 5)
    assert data == b"" and took < 1.0  # refused at once, no answer
    writer.close()
    # One of the two leaves: its place is free again.
    first[1].close()
    await first[1].wait_closed()
    deadline = time.monotonic() + 2
    while True:
        reader, writer = await connect(proxy)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
        try:
            status = (await response_of(reader))[0]
        except (asyncio.IncompleteReadError, ConnectionResetError):
            assert time.monotonic() < deadline, "the freed place was never given again"
            writer.close()
            await asyncio.sleep(0.05)
            continue
        assert status == 200
        writer.close()
        break
    second[1].close()


async def test_headers_begun_while_an_earlier_timer_is_pending_get_their_full_time(
    proxy: RunningServer,
) -> None:
    # The header timer armed for a request is left pending after it (re-arming one per request
    # costs a timer each time): when it fires during a later request's headers, that request
    # still gets the whole timeout from its own first byte.
    reader, writer = await connect(proxy)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: proxy\r\n\r\n")
    status, _, _ = await response_of(reader)
    assert status == 200
    await asyncio.sleep(HEADER_TIMEOUT * 0.6)  # the first request's timer fires mid-headers
    writer.write(b"GET /healthz HTTP/1.1\r\nHo")
    data, took = await closed_after(reader, 5)
    assert data == b"" and HEADER_TIMEOUT * 0.9 <= took < HEADER_TIMEOUT + 1.5
    writer.close()
