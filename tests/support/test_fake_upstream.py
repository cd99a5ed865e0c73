"""Checks that FakeUpstream really does what proxy tests rely on it to do.

Every test talks to the fake with a plain aiohttp client over real TCP, so a
passing proxy test built on the fake means the proxy handled real wire behaviour.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator

import aiohttp
import pytest

from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    error_body,
    json_bytes,
    models_list,
    split_at,
    sse,
    text_stream,
    usage_chunk,
)


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    async with FakeUpstream() as up:
        yield up


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def test_replies_in_order_with_repeat_then_default(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.enqueue(
        Reply(status=503, body=json_bytes(error_body("busy")), repeat=2),
        Reply(body=json_bytes(models_list("m1", "m2"))),
    )
    assert upstream.pending == 3
    url = f"{upstream.base_url}/chat/completions"

    for _ in range(2):
        async with session.post(url, json={}) as resp:
            assert resp.status == 503
            assert (await resp.json())["error"]["message"] == "busy"
    # GET /v1/models is served from the same queue.
    async with session.get(f"{upstream.base_url}/models") as resp:
        assert resp.status == 200
        assert [m["id"] for m in (await resp.json())["data"]] == ["m1", "m2"]
    assert upstream.pending == 0

    # Empty queue: the default reply is a minimal valid chat.completion.
    async with session.post(url, json={}) as resp:
        assert resp.status == 200
        assert resp.headers["content-type"] == "application/json"
        # A plain body is sent with Content-Length, like a real non-stream reply.
        assert resp.headers["content-length"] == str(len(await resp.read()))
        body = await resp.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "ok"}
    assert [r.method for r in upstream.requests] == ["POST", "POST", "GET", "POST"]


async def test_request_recording(upstream: FakeUpstream, session: aiohttp.ClientSession) -> None:
    payload = {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}
    async with session.post(
        f"{upstream.base_url}/chat/completions?api-version=1",
        json=payload,
        headers={"Authorization": "Bearer sk-test", "X-Trace": "abc"},
    ) as resp:
        await resp.read()

    [req] = upstream.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.query_string == "api-version=1"
    assert req.headers["authorization"] == "Bearer sk-test"  # case-insensitive lookup
    assert req.headers["X-TRACE"] == "abc"
    assert req.json() == payload
    assert req.received_at <= time.monotonic()


async def test_chunks_arrive_as_separate_reads(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    body = sse(chunk({"content": "héllo"}))
    cut = body.index("é".encode()) + 1  # inside the two-byte "é"
    pieces = split_at(body, [cut, cut + 4])
    with pytest.raises(UnicodeDecodeError):
        pieces[0].decode()
    upstream.enqueue(Reply(chunks=pieces, chunk_delay=0.05))

    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        assert resp.headers["transfer-encoding"] == "chunked"
        reads = [data async for data in resp.content.iter_any()]
    assert reads == pieces


async def test_events_reply_is_sse_with_done(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    events: list[dict[str, object] | str | bytes] = [chunk({"content": "a"}), "not json"]
    upstream.enqueue(Reply(events=events))
    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        assert await resp.read() == sse(*events)


@pytest.mark.parametrize("streamed", [True, False], ids=["chunked", "content-length"])
async def test_drop_after_bytes_cuts_connection_after_exact_bytes(
    upstream: FakeUpstream, session: aiohttp.ClientSession, streamed: bool
) -> None:
    data = b"0123456789abcdef"
    if streamed:
        upstream.enqueue(Reply(chunks=split_at(data, [4, 8, 12]), drop_after_bytes=7))
    else:
        upstream.enqueue(Reply(body=data, drop_after_bytes=7))

    received = b""
    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        with pytest.raises(aiohttp.ClientPayloadError):
            async for piece in resp.content.iter_any():
                received += piece
    assert received == data[:7]
    # The fake cut the connection itself; that is not a client disconnect.
    assert upstream.disconnects == []


async def test_stall_then_client_close_records_disconnect(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=text_stream("hello world"), stall_after_bytes=10))

    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        received = b""
        while len(received) < 10:
            received += await resp.content.readany()
        assert received == text_stream("hello world")[:10]
        closed_at = time.monotonic()
        resp.close()  # drops the connection mid-body

    noticed_at = await upstream.wait_for_disconnect(timeout=1.0)
    assert noticed_at is not None
    assert 0 <= noticed_at - closed_at < 1.0
    assert upstream.disconnects == [noticed_at]
    # Each disconnect is returned once.
    assert await upstream.wait_for_disconnect(timeout=0.05) is None


async def test_delay_before_headers_times_out_client(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(delay_before_headers=5.0))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with session.post(
            f"{upstream.base_url}/chat/completions",
            json={},
            timeout=aiohttp.ClientTimeout(total=0.2),
        ):
            pass
    assert time.monotonic() - started < 1.0
    # The request was received before the delay, and the hang-up is noticed.
    assert len(upstream.requests) == 1
    assert await upstream.wait_for_disconnect(timeout=1.0) is not None


async def test_close_does_not_hang_on_stalled_reply(session: aiohttp.ClientSession) -> None:
    up = FakeUpstream()
    await up.start()
    up.enqueue(Reply(body=b"{}", stall_after_bytes=0))
    async with session.get(f"{up.base_url}/models") as resp:
        assert resp.status == 200  # headers were sent before the stall
        started = time.monotonic()
        await up.close()
        assert time.monotonic() - started < 1.0
        with pytest.raises(aiohttp.ClientPayloadError):
            await resp.read()
    # Shutting the fake down is not the client going away.
    assert up.disconnects == []


def test_builders() -> None:
    assert sse({"a": "é"}, "[x", b"raw", done=True) == (
        'data: {"a":"é"}\n\n'.encode() + b"data: [x\n\ndata: raw\n\ndata: [DONE]\n\n"
    )
    assert sse({"a": 1}, done=False) == b'data: {"a":1}\n\n'

    completion = chat_completion(
        None, tool_calls=[{"id": "t1"}], usage=False, extra={"system_fingerprint": "fp"}
    )
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    assert completion["choices"][0]["message"]["tool_calls"] == [{"id": "t1"}]
    assert "usage" not in completion
    assert completion["system_fingerprint"] == "fp"
    assert usage_chunk(1, 2)["usage"] == {
        "prompt_tokens": 1,
        "completion_tokens": 2,
        "total_tokens": 3,
    }

    body = text_stream("hello wörld", piece=4, usage=True)
    assert body.endswith(b"data: [DONE]\n\n")
    events = [json.loads(line[6:]) for line in body.split(b"\n\n")[:-2]]
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    content = [e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]]
    assert content[:3] == ["hell", "o wö", "rld"]
    assert "".join(content) == "hello wörld"
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert events[-1]["choices"] == [] and events[-1]["usage"]["total_tokens"] == 12

    data = "aé€".encode()
    assert split_at(data, [2, 4, 2, 0, len(data)]) == [b"a\xc3", b"\xa9\xe2", b"\x82\xac"]
    with pytest.raises(ValueError):
        split_at(data, [99])


def test_reply_rejects_contradictory_scripts() -> None:
    with pytest.raises(ValueError):
        Reply(chunks=[b"a"], events=[{}])
    with pytest.raises(ValueError):
        Reply(drop_after_bytes=1, stall_after_bytes=1)
    with pytest.raises(ValueError):
        Reply(repeat=0)
    with pytest.raises(ValueError):
        Reply(chunks=[b"a"], generate=lambda: [b"b"])


async def test_no_disconnect_for_completed_stream(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(chunks=split_at(text_stream("abc"), [10, 20])))
    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        assert await resp.read() == text_stream("abc")
    await asyncio.sleep(0.02)
    assert upstream.disconnects == []


async def test_responder_answers_what_the_queue_does_not(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.responder = lambda request: Reply(body=json_bytes({"echo": request.json()["n"]}))
    upstream.enqueue(Reply(status=503, body=b"{}"))
    url = f"{upstream.base_url}/chat/completions"

    async with session.post(url, json={"n": 1}) as resp:
        assert resp.status == 503  # the queue first
    for n in (2, 3):
        async with session.post(url, json={"n": n}) as resp:
            assert await resp.json() == {"echo": n}


async def test_generated_body_is_written_lazily_and_counted(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    made: list[int] = []

    def body() -> Iterator[bytes]:
        for i in range(3):
            made.append(i)
            yield b"data: %d\n\n" % i

    upstream.enqueue(Reply(generate=body, send_buffer=4096))
    async with session.post(f"{upstream.base_url}/chat/completions", json={}) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        assert await resp.read() == b"data: 0\n\ndata: 1\n\ndata: 2\n\n"
    [request] = upstream.requests
    assert (request.bytes_sent, request.completed, made) == (27, True, [0, 1, 2])


async def test_drop_before_headers_answers_nothing(
    upstream: FakeUpstream, session: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(drop_before_headers=True))
    with pytest.raises(aiohttp.ServerDisconnectedError):
        async with session.post(f"{upstream.base_url}/chat/completions", json={}):
            pass
    [request] = upstream.requests
    assert (request.bytes_sent, request.completed) == (0, False)
    assert upstream.disconnects == []  # the fake hung up, not the client
