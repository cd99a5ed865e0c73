"""Bad input is a 4xx and a bad upstream reply a 502 or an in-band error: never a 5xx of the
proxy's own, never a cut connection.

- JSON nested deeper than ``json_codec.MAX_DEPTH`` (254 levels, what orjson can write back): a
  request body is a 400 on chat completions and the Responses API; an upstream reply is a 502,
  a stream event an in-band ``upstream_error`` and ``[DONE]`` (a ``response.failed`` on the
  Responses API), an error body a generic error of its status. 255 to 1,024 levels once made
  the duplicate-key check raise a TypeError (a 500, or a cut stream).
- Response ids the store cannot hold (a lone surrogate, which SQLite cannot encode; an
  absurdly long one) are not found (400 for ``previous_response_id``, 404 on the path), never
  a 503 ``store_unavailable`` with a logged traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.serving.server import RunningServer
from shields import json_codec
from tests.conftest import ProxyFactory
from tests.support.constants import USER
from tests.support.fake_upstream import FakeUpstream, Reply, chunk, json_bytes

MakeClient = Callable[..., openai.AsyncOpenAI]
# Depths on both sides of every limit: orjson writes 254 and reads 1,024, Python's json
# recurses ~1,000 deep.
DEPTHS = [255, 600, 1024, 1025, 5000]
# Inside a reply's own object: up to 1,023 more levels reach what orjson reads but not writes.
UPSTREAM_DEPTHS = [255, 600, 1023]


def nested(depth: int, *, objects: bool = False) -> bytes:
    """``depth`` arrays (or objects) inside one another, as compact JSON."""
    if objects:
        return b'{"a":' * depth + b"1" + b"}" * depth
    return b"[" * depth + b"]" * depth


def chat_request(depth: int) -> bytes:
    return b'{"model":"m","messages":[{"role":"user","content":"hi"}],"x":' + nested(depth) + b"}"


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, path: str, body: bytes
) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-test"}
    async with asyncio.timeout(8), http.post(f"{proxy.url}{path}", data=body, headers=headers) as r:
        return r.status, await r.read()


def error_of(raw: bytes) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(raw)["error"]
    assert set(error) >= {"message", "type", "code"}
    return error


def data_events(raw: bytes) -> list[bytes]:
    return [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> RunningServer:
    return await make_proxy(responses_db=str(tmp_path / "responses.sqlite3"))


# ---- the codec --------------------------------------------------------------------------------


@pytest.mark.parametrize("unique_keys", [False, True])
@pytest.mark.parametrize("objects", [False, True])
def test_nesting_past_the_limit_is_invalid_json_and_at_it_is_read(
    unique_keys: bool, objects: bool
) -> None:
    at_limit = json_codec.loads(nested(json_codec.MAX_DEPTH, objects=objects))
    assert json_codec.dumps(at_limit) == nested(json_codec.MAX_DEPTH, objects=objects)
    for depth in DEPTHS:
        for data in (nested(depth, objects=objects), nested(depth, objects=objects) + b" "):
            with pytest.raises(json_codec.InvalidJSON, match="nested"):
                json_codec.loads(data, unique_keys=unique_keys)
    # Values only Python's parser reads (NaN, a huge integer, a lone surrogate) are bounded
    # alike, and a deep value orjson cannot write for another reason too.
    for inner in (b"NaN", b"1" + b"0" * 30, b'"\\ud800"'):
        deep = b"[" * 300 + inner + b"]" * 300
        with pytest.raises(json_codec.InvalidJSON, match="nested"):
            json_codec.loads(deep, unique_keys=unique_keys)
        shallow = b"[" * 200 + inner + b"]" * 200
        assert json_codec.loads(shallow, unique_keys=unique_keys) is not None


# ---- requests: a 400 ------------------------------------------------------------------------


async def test_a_deeply_nested_chat_request_is_a_400(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    for depth in DEPTHS:
        status, raw = await post(http, proxy, "/v1/chat/completions", chat_request(depth))
        assert status == 400, (depth, raw[:200])
        assert error_of(raw)["type"] == "invalid_request_error"
    assert upstream.requests == []


async def test_a_deeply_nested_chat_request_from_the_sdk_is_a_bad_request(
    upstream: FakeUpstream, proxy: RunningServer, make_client: MakeClient
) -> None:
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    client = make_client(proxy)
    with pytest.raises(openai.BadRequestError, match="nested"):
        await client.chat.completions.create(model="m", messages=USER, extra_body={"x": deep})  # type: ignore[arg-type]
    assert upstream.requests == []


async def test_a_deeply_nested_responses_request_is_a_400(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    for depth in DEPTHS:
        body = b'{"model":"m","input":"hi","metadata":{"a":"b"},"x":' + nested(depth) + b"}"
        status, raw = await post(http, proxy, "/v1/responses", body)
        assert status == 400, (depth, raw[:200])
        assert error_of(raw)["type"] == "invalid_request_error"
    assert upstream.requests == []


# ---- upstream replies: a 502, or an in-band error ----------------------------------------------


def deep_reply(depth: int) -> bytes:
    reply = json_bytes({"id": "x", "object": "chat.completion", "created": 1, "model": "m"})
    message = b'{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}'
    return reply[:-1] + b',"choices":[' + message + b'],"x":' + nested(depth) + b"}"


@pytest.mark.parametrize("depth", UPSTREAM_DEPTHS)
async def test_a_deeply_nested_upstream_reply_is_a_502(
    upstream: FakeUpstream,
    proxy: RunningServer,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    depth: int,
) -> None:
    upstream.enqueue(Reply(body=deep_reply(depth)), Reply(body=deep_reply(depth)))
    with pytest.raises(openai.APIStatusError) as caught:
        await make_client(proxy).chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == 502
    status, raw = await post(http, proxy, "/v1/responses", b'{"model":"m","input":"hi"}')
    assert status == 502, raw[:200]
    assert error_of(raw)["code"] == "upstream_error"


@pytest.mark.parametrize("depth", UPSTREAM_DEPTHS)
async def test_a_2xx_reply_reporting_a_deeply_nested_error_is_a_502(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession, depth: int
) -> None:
    body = b'{"error":{"message":"overloaded","metadata":' + nested(depth - 1) + b"}}"
    upstream.enqueue(Reply(body=body))
    status, raw = await post(http, proxy, "/v1/chat/completions", json_bytes({"messages": USER}))
    assert status == 502, raw[:200]
    assert error_of(raw)["code"] == "upstream_error"


@pytest.mark.parametrize("depth", UPSTREAM_DEPTHS)
async def test_a_deeply_nested_stream_event_ends_in_an_in_band_error(
    upstream: FakeUpstream,
    proxy: RunningServer,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    depth: int,
) -> None:
    events: list[Any] = [chunk({"role": "assistant", "content": "hello"})]
    events.append(json_bytes(chunk({"content": " there"}))[:-1] + b',"x":' + nested(depth) + b"}")
    upstream.enqueue(Reply(events=events), Reply(events=events), Reply(events=events))

    status, raw = await post(
        http, proxy, "/v1/chat/completions", json_bytes({"messages": USER, "stream": True})
    )
    assert status == 200
    *_, error, done = data_events(raw)
    assert json.loads(error)["error"]["code"] == "upstream_error" and done == b"[DONE]"

    stream = await make_client(proxy).chat.completions.create(model="m", messages=USER, stream=True)
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass

    body = b'{"model":"m","input":"hi","stream":true}'
    status, raw = await post(http, proxy, "/v1/responses", body)
    assert status == 200
    kinds = [json.loads(data)["type"] for data in data_events(raw)]
    assert kinds[-1] == "response.failed", kinds


async def test_a_deeply_nested_upstream_error_body_is_a_generic_error_of_its_status(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    body = b'{"error":{"message":"bad","type":"invalid_request_error","x":' + nested(600) + b"}}"
    upstream.enqueue(Reply(status=400, body=body), Reply(status=400, body=body))
    for path, request in (
        ("/v1/chat/completions", json_bytes({"messages": USER})),
        ("/v1/responses", b'{"model":"m","input":"hi"}'),
    ):
        status, raw = await post(http, proxy, path, request)
        assert status == 400, raw[:200]
        assert error_of(raw)["type"] == "upstream_error"
        assert len(raw) < 500


# ---- response ids the store cannot hold ---------------------------------------------------------


async def test_ids_the_store_cannot_hold_are_not_found(
    upstream: FakeUpstream,
    proxy: RunningServer,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    for previous in (b'"\\ud800"', b'"resp_\\udfff\\ud800x"', json_bytes("resp_" + "a" * 5000)):
        body = b'{"model":"m","input":"hi","previous_response_id":' + previous + b"}"
        status, raw = await post(http, proxy, "/v1/responses", body)
        assert status == 400, raw[:200]
        assert error_of(raw)["code"] == "previous_response_not_found"
    assert upstream.requests == []
    # On the path, aiohttp refuses raw bytes that are not UTF-8 and leaves a percent-escape of
    # them escaped, so no lone surrogate gets there; odd ids are still only not found.
    for method, path in (
        (b"GET", b"/v1/responses/resp_\xed\xa0\x80"),
        (b"DELETE", b"/v1/responses/resp_%ED%A0%80"),
        (b"GET", b"/v1/responses/resp_" + b"a" * 3000),
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        writer.write(method + b" " + path + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(5):
            raw = await reader.read()
        writer.close()
        assert int(raw.split(b" ", 2)[1]) in (400, 404), raw[:300]
    assert not [
        record for record in caplog.records if record.exc_info and "store" in record.message
    ]
