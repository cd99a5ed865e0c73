"""The lean upstream client (proxy/upstream/http1.py) against scripted servers on real sockets.

Each test's server is an ``asyncio.start_server`` whose handler plays one connection; it reads
requests with a small parser of its own so the scripts can answer, stall, cut off or misbehave
exactly where a hostile or flaky upstream would.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest

from proxy.upstream.http1 import Http1Pool, InvalidReply

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]

OK_BODY = b'{"ok": true}'


def reply(body: bytes = OK_BODY, *, head: str = "", status: str = "200 OK") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{head}\r\n"
    ).encode() + body


async def read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One request's head and body (by Content-Length); None at end of connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed_by_client = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer, self.connections)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[tuple[Server, str]]:
    server = Server(handler)
    listener = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield server, f"http://127.0.0.1:{port}/v1"
    finally:
        listener.close()


@asynccontextmanager
async def pool_for(url: str, **options: float) -> AsyncIterator[Http1Pool]:
    pool = Http1Pool(
        url,
        limit=int(options.get("limit", 0)),
        connect_timeout=options.get("connect_timeout", 5.0),
        read_timeout=options.get("read_timeout", 5.0),
    )
    try:
        yield pool
    finally:
        await pool.close()


async def post(pool: Http1Pool, body: bytes = b"{}") -> tuple[int, bytes]:
    reply_ = await pool.request("POST", "/v1/chat/completions", {"X-Test": "1"}, body)
    try:
        return reply_.status, await reply_.content.read()
    finally:
        reply_.close()


def answering(*replies: bytes, then_close: bool = False) -> Handler:
    """Answers each request on a connection with the next of ``replies``, in turn."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        for data in replies:
            if await read_request(reader) is None:
                return
            writer.write(data)
            await writer.drain()
        if not then_close:
            await reader.read()

    return handler


async def test_a_connection_is_reused_for_the_next_request() -> None:
    script = answering(reply(), reply(), reply())
    async with serving(script) as (server, url), pool_for(url) as pool:
        for _ in range(3):
            assert await post(pool) == (200, OK_BODY)
    assert server.connections == 1


async def test_the_request_carries_host_length_and_identity_encoding() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        request = await read_request(reader)
        assert request is not None
        seen.append(request)
        writer.write(reply())
        await writer.drain()

    async with serving(handler) as (_, url), pool_for(url) as pool:
        await post(pool, b'{"a": 1}')
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat/completions HTTP/1.1"
    assert f"Host: {url.split('/')[2]}".encode() in lines
    assert b"Content-Length: 8" in lines
    assert b"Accept-Encoding: identity" in lines
    assert b"X-Test: 1" in lines
    assert body == b'{"a": 1}'


async def test_connection_close_is_honoured() -> None:
    closing = reply(head="Connection: close\r\n")
    script = answering(closing, then_close=True)
    async with serving(script) as (server, url), pool_for(url) as pool:
        assert await post(pool) == (200, OK_BODY)
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 2


async def test_a_pooled_connection_closed_before_answering_is_retried_once_on_a_new_one() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        if n == 1:
            await read_request(reader)
            writer.write(reply())
            await writer.drain()
            await read_request(reader)  # the second request: dropped unanswered
            return
        await answering(reply())(reader, writer, n)

    async with serving(handler) as (server, url), pool_for(url) as pool:
        assert await post(pool) == (200, OK_BODY)
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 2


async def test_a_new_connection_closed_before_answering_is_an_error() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)

    async with serving(handler) as (server, url), pool_for(url) as pool:
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await post(pool)
    assert server.connections == 1  # not retried by the pool: the retry loop above decides


async def test_a_body_cut_short_of_its_length_fails_its_reader() -> None:
    cut = reply(b"0123456789")[:-4]
    async with serving(answering(cut, then_close=True)) as (_, url), pool_for(url) as pool:
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(pool)


async def test_a_chunked_body_cut_off_fails_its_reader() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    async with serving(answering(head, then_close=True)) as (_, url), pool_for(url) as pool:
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(pool)


async def test_a_body_without_framing_ends_with_its_connection() -> None:
    unframed = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"
    script = answering(unframed, then_close=True)
    async with serving(script) as (server, url), pool_for(url) as pool:
        assert await post(pool) == (200, b"all of it")
        assert await post(pool) == (200, b"all of it")
    assert server.connections == 2


async def test_chunked_and_gzip_bodies_are_decoded() -> None:
    packed = gzip.compress(b"x" * 5000)
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
        + b"".join(
            f"{len(packed[i : i + 100]):x}\r\n".encode() + packed[i : i + 100] + b"\r\n"
            for i in range(0, len(packed), 100)
        )
        + b"0\r\n\r\n"
    )
    async with serving(answering(chunked, reply())) as (server, url), pool_for(url) as pool:
        assert await post(pool) == (200, b"x" * 5000)
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 1


async def test_a_content_coding_it_cannot_read_is_an_invalid_reply() -> None:
    brotli = reply(b"\x0b\x02\x80hi\x03", head="Content-Encoding: br\r\n")
    async with serving(answering(brotli)) as (_, url), pool_for(url) as pool:
        with pytest.raises(InvalidReply):
            await post(pool)


async def test_a_corrupt_gzip_body_fails_its_reader() -> None:
    corrupt = reply(b"\x1f\x8b\x08\x00garbage-not-deflate", head="Content-Encoding: gzip\r\n")
    async with serving(answering(corrupt)) as (_, url), pool_for(url) as pool:
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(pool)


async def test_an_interim_100_continue_is_skipped() -> None:
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + reply()
    async with serving(answering(interim)) as (_, url), pool_for(url) as pool:
        assert await post(pool) == (200, OK_BODY)


@pytest.mark.parametrize(
    "garbage",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n",
    ],
    ids=["not-http", "header-without-colon", "two-framings", "upgrade", "huge-head"],
)
async def test_bytes_that_are_not_a_readable_reply_are_an_invalid_reply(garbage: bytes) -> None:
    async with serving(answering(garbage)) as (_, url), pool_for(url) as pool:
        with pytest.raises(InvalidReply):
            await post(pool)


async def test_a_second_unasked_reply_keeps_the_connection_out_of_the_pool() -> None:
    script = answering(reply() + reply(b'{"smuggled": 1}'), reply())
    async with serving(script) as (server, url), pool_for(url) as pool:
        assert await post(pool) == (200, OK_BODY)
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 2


async def test_silence_before_the_head_is_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async with serving(handler) as (_, url), pool_for(url, read_timeout=0.2) as pool:
        with pytest.raises(TimeoutError):
            await post(pool)


async def test_silence_inside_the_body_fails_its_reader_with_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        writer.write(reply(b"0123456789")[:-5])
        await writer.drain()
        await asyncio.sleep(5)

    async with serving(handler) as (_, url), pool_for(url, read_timeout=0.2) as pool:
        with pytest.raises(TimeoutError):
            await post(pool)


async def test_a_steady_trickle_is_not_silence() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        body = b"0123456789"
        writer.write(reply(body)[: -len(body)])
        for byte in body:
            await asyncio.sleep(0.05)
            writer.write(bytes([byte]))
            await writer.drain()

    async with serving(handler) as (_, url), pool_for(url, read_timeout=0.2) as pool:
        assert await post(pool) == (200, b"0123456789")


async def test_the_pool_limit_queues_requests_on_the_connections_it_has() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        while await read_request(reader) is not None:
            await asyncio.sleep(0.05)
            writer.write(reply())
            await writer.drain()

    async with serving(handler) as (server, url), pool_for(url, limit=1) as pool:
        results = await asyncio.gather(*(post(pool) for _ in range(4)))
    assert results == [(200, OK_BODY)] * 4
    assert server.connections == 1


async def test_waiting_for_a_connection_past_connect_timeout_is_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        await asyncio.sleep(1)
        writer.write(reply())
        await writer.drain()

    async with serving(handler) as (_, url), pool_for(url, limit=1, connect_timeout=0.2) as pool:
        first = asyncio.create_task(post(pool))
        await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):
            await post(pool)
        assert await first == (200, OK_BODY)


async def test_an_abandoned_reply_closes_its_connection() -> None:
    gone = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        if n > 1:
            await answering(reply())(reader, writer, n)
            return
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\nstart")
        await writer.drain()
        if await reader.read() == b"":
            gone.set()

    async with serving(handler) as (server, url), pool_for(url) as pool:
        upstream_reply = await pool.request("POST", "/v1/x", {}, b"{}")
        assert await upstream_reply.content.readany() == b"start"
        upstream_reply.close()
        await asyncio.wait_for(gone.wait(), 2)
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 2


async def test_a_cancelled_request_closes_its_connection() -> None:
    gone = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        if await reader.read() == b"":
            gone.set()

    async with serving(handler) as (_, url), pool_for(url) as pool:
        task = asyncio.create_task(post(pool))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(gone.wait(), 2)


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\x00b"])
async def test_a_header_value_with_a_line_break_is_refused_before_sending(value: str) -> None:
    async with serving(answering(reply())) as (server, url), pool_for(url) as pool:
        with pytest.raises(ValueError):
            await pool.request("POST", "/v1/x", {"X-Test": value}, b"{}")
    assert server.connections == 0


async def test_a_body_larger_than_the_read_limit_arrives_whole_through_flow_control() -> None:
    big = bytes(range(256)) * 4096  # 1 MB: the reader pauses the connection several times

    async with serving(answering(reply(big), reply())) as (server, url), pool_for(url) as pool:
        upstream_reply = await pool.request("POST", "/v1/x", {}, b"{}")
        await asyncio.sleep(0.2)  # let the reader fill up and pause the connection
        received = bytearray()
        async for data in upstream_reply.content.iter_any():
            received += data
        upstream_reply.close()
        assert bytes(received) == big
        assert await post(pool) == (200, OK_BODY)
    assert server.connections == 1


async def test_content_type_and_charset_are_read_as_aiohttp_did() -> None:
    typed = reply(head="X-A: 1\r\n").replace(
        b"application/json", b'Application/JSON; Charset="UTF-8"'
    )
    async with serving(answering(typed)) as (_, url), pool_for(url) as pool:
        upstream_reply = await pool.request("POST", "/v1/x", {}, b"{}")
        assert upstream_reply.content_type == "application/json"
        assert upstream_reply.charset == "utf-8"
        assert upstream_reply.headers["x-a"] == "1"
        upstream_reply.close()


async def test_a_gzip_bomb_is_decoded_only_as_fast_as_the_body_is_read() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MB of zeros in ~64 KB
    script = answering(reply(bomb, head="Content-Encoding: gzip\r\n"))
    async with serving(script) as (_, url), pool_for(url) as pool:
        upstream_reply = await pool.request("POST", "/v1/x", {}, b"{}")
        await asyncio.sleep(0.2)  # everything compressed has arrived; the reader is full
        decoded_so_far = upstream_reply.content.total_bytes  # fed to the reader, none read
        assert decoded_so_far <= 4 * 64 * 1024
        total = 0
        async for data in upstream_reply.content.iter_any():
            total += len(data)
        upstream_reply.close()
    assert total == 64 * 1024 * 1024


async def test_gzip_members_one_after_another_are_all_decoded() -> None:
    members = gzip.compress(b'{"a": ') + gzip.compress(b"1}")
    script = answering(reply(members, head="Content-Encoding: gzip\r\n"))
    async with serving(script) as (_, url), pool_for(url) as pool:
        assert await post(pool) == (200, b'{"a": 1}')


async def test_bytes_after_the_last_gzip_member_fail_the_body() -> None:
    trailing = gzip.compress(b"{}") + b"AKIA trailing bytes"
    script = answering(reply(trailing, head="Content-Encoding: gzip\r\n"))
    async with serving(script) as (_, url), pool_for(url) as pool:
        with pytest.raises(aiohttp.ClientPayloadError):
            await post(pool)


async def test_raw_deflate_is_read_as_deflate() -> None:
    packer = zlib.compressobj(wbits=-15)
    raw = packer.compress(b"raw deflate body") + packer.flush()
    script = answering(reply(raw, head="Content-Encoding: deflate\r\n"))
    async with serving(script) as (_, url), pool_for(url) as pool:
        assert await post(pool) == (200, b"raw deflate body")


async def test_transfer_encoding_identity_leaves_the_end_to_the_connection() -> None:
    unframed = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nto the end"
    script = answering(unframed, then_close=True)
    async with serving(script) as (_, url), pool_for(url) as pool:
        assert await post(pool) == (200, b"to the end")


@pytest.mark.parametrize("status", [b"099", b"999", b"600"])
async def test_a_status_outside_http_is_an_invalid_reply(status: bytes) -> None:
    script = answering(b"HTTP/1.1 " + status + b" Odd\r\nContent-Length: 0\r\n\r\n")
    async with serving(script) as (_, url), pool_for(url) as pool:
        with pytest.raises(InvalidReply):
            await post(pool)


@pytest.mark.parametrize(
    "extra",
    ["X-Long: " + "a" * 9000 + "\r\n", "".join(f"X-H{i}: v\r\n" for i in range(150))],
    ids=["long-line", "many-headers"],
)
async def test_a_head_clients_could_not_take_is_an_invalid_reply(extra: str) -> None:
    async with serving(answering(reply(head=extra))) as (_, url), pool_for(url) as pool:
        with pytest.raises(InvalidReply):
            await post(pool)


async def test_a_head_trickling_in_past_read_timeout_is_a_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(40):
            await asyncio.sleep(0.05)
            writer.write(b"a")
            await writer.drain()

    async with serving(handler) as (_, url), pool_for(url, read_timeout=0.5) as pool:
        with pytest.raises(TimeoutError):
            await post(pool)
