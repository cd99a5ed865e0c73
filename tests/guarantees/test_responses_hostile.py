"""The Responses API against a hostile upstream and hostile requests, end to end.

The real proxy runs in front of the scripted fake upstream; clients are the official ``openai``
package where it can send the request, plain aiohttp where the exact bytes matter (or the SDK
would refuse to send them). An upstream's own error text is upstream output the shields have not
passed: it must never reach any byte the client receives. Bad requests are 400s, never 500s,
and never reach the upstream.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.endpoints.responses_request import parse_responses_request
from proxy.endpoints.responses_stream import GuardedResponseStream, ResponseTranslator
from proxy.exchange.refusal import StreamContext
from proxy.serving.server import RunningServer
from proxy.stream.guard import StreamGuard
from proxy.stream.sse import encode_data
from proxy.stream.translated import UPSTREAM_REPORTED, no_tail
from shields.policy import parse_policy
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT, MODEL
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chunk,
    error_body,
    json_bytes,
    usage_chunk,
)

MakeClient = Callable[..., openai.AsyncOpenAI]
# Text only the upstream ever says: if any of it reaches the client, upstream text leaked.
SECRET = "UPSTREAM-ONLY-7f3a9c"
EMPTY_POLICY = "version: 1\nname: empty\n"


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> Callable[..., Any]:
    async def start(policy: Any = None, /, **settings: Any) -> RunningServer:
        settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
        return await make_proxy(policy, **settings)

    return start


async def post(
    http: aiohttp.ClientSession, server: RunningServer, body: dict[str, Any] | bytes
) -> tuple[int, str, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-client"}
    async with http.post(f"{server.url}/v1/responses", data=data, headers=headers) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), await resp.read()


def data_events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]


def assert_openai_error(raw: bytes, status: int, expected: int) -> dict[str, Any]:
    assert status == expected, raw
    error: dict[str, Any] = json.loads(raw)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    return error


# ---- A: an upstream's in-band error never becomes the client's error message ----------------


def in_band_errors() -> Iterator[Any]:
    hello = chunk({"role": "assistant", "content": "hello there, "})
    for policy_name, policy in (("default", None), ("no-output-shields", EMPTY_POLICY)):
        yield pytest.param(
            policy, [hello, {"error": {"message": f"echo {SECRET}"}}], id=f"{policy_name}-error"
        )
        yield pytest.param(
            policy,
            [hello, {"error": {"message": f"echo {SECRET}", "code": SECRET}, "choices": []}],
            id=f"{policy_name}-error-with-choices",
        )
        yield pytest.param(policy, [hello, {"error": f"echo {SECRET}"}], id=f"{policy_name}-str")


@pytest.mark.parametrize(("policy", "events"), list(in_band_errors()))
async def test_upstream_in_band_error_text_never_reaches_the_client(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    policy: str | None,
    events: list[Any],
) -> None:
    upstream.enqueue(Reply(events=events, repeat=4))
    server = await proxy(policy)

    # Streaming, raw bytes: response.failed with the proxy's own message.
    status, _, raw = await post(http, server, {"model": MODEL, "input": "hi", "stream": True})
    assert status == 200
    assert SECRET.encode() not in raw
    final = data_events(raw)[-1]
    assert final["type"] == "response.failed"
    assert final["response"]["error"]["message"] == UPSTREAM_REPORTED

    # Non-streaming, raw bytes: a 502 with the same message.
    status, _, raw = await post(http, server, {"model": MODEL, "input": "hi"})
    assert SECRET.encode() not in raw
    assert assert_openai_error(raw, status, 502)["message"] == UPSTREAM_REPORTED

    # The SDK sees the same.
    client = make_client(server)
    stream = await client.responses.create(model=MODEL, input="hi", stream=True)
    got = [event async for event in stream]
    assert got[-1].type == "response.failed"
    assert SECRET not in "".join(event.model_dump_json() for event in got)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model=MODEL, input="hi")
    assert caught.value.status_code == 502
    assert SECRET not in str(caught.value) and SECRET not in json.dumps(caught.value.body)


def test_the_failure_message_is_the_guards_own_typed_end() -> None:
    # What a guard releases before it fails is upstream data; an upstream event there
    # carrying an `error` must not become the response's message. The guard says how the
    # stream ended as a typed value, so nothing is parsed back out of bytes.
    policy = parse_policy("name: p\noutput:\n  - {id: d, type: denylist, phrases: [zz]}\n")
    guard = StreamGuard(
        policy, StreamContext(model="m", n=1, include_usage=True), render_end=no_tail
    )
    echo = parse_responses_request(b'{"model": "m", "input": "x"}').echo
    translator = ResponseTranslator(response_id="resp_1", model="m", echo=echo)
    stream = GuardedResponseStream(guard, translator, policy.spec.refusal)
    passed = encode_data(json_bytes({"choices": [{"index": 0, "delta": {"content": "ok"}}]}))
    upstream_error = encode_data(json_bytes({"error": {"message": SECRET}, "choices": []}))
    events = stream.feed(passed + upstream_error)
    assert guard.ending is not None and guard.ending.message == UPSTREAM_REPORTED
    assert events[-1]["type"] == "response.failed"
    assert events[-1]["response"]["error"]["message"] == UPSTREAM_REPORTED
    assert SECRET not in json.dumps(events)


# ---- B: upstream error bodies are read whole and checked as on chat completions -------------


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_an_upstream_error_message_the_shields_block_is_withheld(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    stream: bool,
) -> None:
    blocked = json_bytes(
        error_body(f"you asked: how to {BANNED_OUT}", type="invalid_request_error")
    )
    upstream.enqueue(Reply(status=400, body=blocked), Reply(status=400, body=blocked))
    server = await proxy()

    status, content_type, raw = await post(
        http, server, {"model": MODEL, "input": "hi", "stream": stream}
    )
    error = assert_openai_error(raw, status, 400)
    assert BANNED_OUT.encode() not in raw
    assert "withheld" in error["message"]
    assert error["type"] == "invalid_request_error"  # the shape and status stay the upstream's
    assert content_type == "application/json"

    client = make_client(server)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input="hi", stream=stream)
    assert BANNED_OUT not in str(caught.value)


@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_an_upstream_error_body_that_cannot_be_checked_is_replaced(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    stream: bool,
) -> None:
    text = f"internal: how to {BANNED_OUT} {SECRET}".encode()
    plain = Reply(status=500, body=text, headers={"content-type": "text/plain"})
    upstream.enqueue(plain, plain)
    server = await proxy()

    status, content_type, raw = await post(
        http, server, {"model": MODEL, "input": "hi", "stream": stream}
    )
    error = assert_openai_error(raw, status, 500)
    assert SECRET.encode() not in raw and BANNED_OUT.encode() not in raw
    assert error["message"] == "The upstream returned an error (HTTP 500)"
    assert content_type == "application/json"

    client = make_client(server)
    with pytest.raises(openai.InternalServerError) as caught:
        await client.responses.create(model=MODEL, input="hi", stream=stream)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("policy", [None, EMPTY_POLICY], ids=["default", "no-output-shields"])
@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_a_large_upstream_error_body_in_several_writes_is_relayed_whole(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    http: aiohttp.ClientSession,
    policy: str | None,
    stream: bool,
) -> None:
    body = json_bytes(error_body("x" * 200_000, type="invalid_request_error"))
    pieces = [body[:70_000], body[70_000:140_000], body[140_000:]]
    upstream.enqueue(
        Reply(
            status=400,
            chunks=pieces,
            chunk_delay=0.05,
            headers={"content-type": "application/json"},
        )
    )
    server = await proxy(policy)

    status, _, raw = await post(http, server, {"model": MODEL, "input": "hi", "stream": stream})

    assert status == 400
    assert raw == body  # all of it, valid JSON, not the first network read


async def test_an_oversized_upstream_error_body_is_a_502(
    upstream: FakeUpstream, proxy: Callable[..., Any], http: aiohttp.ClientSession
) -> None:
    body = json_bytes(error_body(f"{SECRET} " + "x" * 8_000))
    upstream.enqueue(
        Reply(status=400, chunks=[body[:3_000], body[3_000:]], chunk_delay=0.05, repeat=1)
    )
    server = await proxy(max_upstream_body_bytes=4_096)

    status, _, raw = await post(http, server, {"model": MODEL, "input": "hi"})

    assert_openai_error(raw, status, 502)
    assert SECRET.encode() not in raw


# ---- C: a non-stream request has request_timeout in all --------------------------------------


def pings() -> Iterator[bytes]:
    for _ in range(60):
        yield b": ping\n\n"


def trickled_text() -> Iterator[bytes]:
    for i in range(60):
        yield encode_data(json_bytes(chunk({"content": f"word{i} "})))


@pytest.mark.parametrize("generate", [pings, trickled_text], ids=["pings", "text"])
async def test_a_trickling_upstream_is_cut_at_request_timeout(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    generate: Callable[[], Iterator[bytes]],
) -> None:
    # Never silent for read_timeout (2 s), but 60 writes 0.1 s apart take 6 s in all.
    trickle = Reply(
        generate=generate, chunk_delay=0.1, headers={"content-type": "text/event-stream"}
    )
    upstream.enqueue(trickle, trickle)
    server = await proxy(request_timeout=1.0)

    started = time.monotonic()
    status, content_type, raw = await post(http, server, {"model": MODEL, "input": "hi"})
    elapsed = time.monotonic() - started

    error = assert_openai_error(raw, status, 504)
    assert error["code"] == "upstream_timeout"
    assert content_type == "application/json"
    assert b"word" not in raw
    assert 0.9 < elapsed < 3.0
    assert await upstream.wait_for_disconnect(2.0) is not None  # the upstream was let go

    client = make_client(server)
    with pytest.raises(openai.APIStatusError) as caught:
        await client.responses.create(model=MODEL, input="hi")
    assert caught.value.status_code == 504


async def test_request_timeout_does_not_cut_a_stream(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    events: list[Any] = [chunk({"content": f"w{i} "}) for i in range(8)]
    events += [chunk({}, finish_reason="stop"), usage_chunk()]
    upstream.enqueue(Reply(events=events, chunk_delay=0.1))
    client = make_client(await proxy(request_timeout=0.3))

    stream = await client.responses.create(model=MODEL, input="hi", stream=True)
    got = [event async for event in stream]

    assert got[-1].type == "response.completed"
    assert got[-1].response.output_text == "".join(f"w{i} " for i in range(8))


# ---- D and E: hostile request values are 400s that name the parameter ------------------------


BAD_VALUES = [
    ("role list", b'{"model":"m","input":[{"role":["user"],"content":"x"}]}', "input[0].role"),
    ("role object", b'{"model":"m","input":[{"role":{"a":1},"content":"x"}]}', "input[0].role"),
    ("role number", b'{"model":"m","input":[{"role":1,"content":"x"}]}', "input[0].role"),
    (
        "role list, typed message",
        b'{"model":"m","input":[{"type":"message","role":["user"],"content":"x"}]}',
        "input[0].role",
    ),
    (
        "allowed tool name list",
        b'{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],'
        b'"tool_choice":{"type":"allowed_tools","mode":"auto",'
        b'"tools":[{"type":"function","name":["f"]}]}}',
        "tool_choice.tools[0].name",
    ),
    (
        "allowed tools mode list",
        b'{"model":"m","input":"x","tools":[{"type":"function","name":"f"}],'
        b'"tool_choice":{"type":"allowed_tools","mode":["auto"],'
        b'"tools":[{"type":"function","name":"f"}]}}',
        "tool_choice",
    ),
    ("truncation list", b'{"model":"m","input":"x","truncation":["auto"]}', "truncation"),
    ("background zero", b'{"model":"m","input":"x","background":0}', "background"),
    ("temperature NaN", b'{"model":"m","input":"x","temperature":NaN}', "temperature"),
    ("temperature Infinity", b'{"model":"m","input":"x","temperature":Infinity}', "temperature"),
    ("temperature -Infinity", b'{"model":"m","input":"x","temperature":-Infinity}', "temperature"),
    ("temperature 1e999", b'{"model":"m","input":"x","temperature":1e999}', "temperature"),
    (
        "temperature huge int",
        b'{"model":"m","input":"x","temperature":1' + b"0" * 400 + b"}",
        "temperature",
    ),
    ("top_p NaN", b'{"model":"m","input":"x","top_p":NaN}', "top_p"),
    (
        "tool parameters NaN",
        b'{"model":"m","input":"x","tools":[{"type":"function","name":"f",'
        b'"parameters":{"type":"object","properties":{"n":{"type":"number","maximum":NaN}}}}]}',
        "tools[0].parameters",
    ),
    (
        "schema Infinity",
        b'{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s",'
        b'"schema":{"type":"number","minimum":[1,{"x":-Infinity}]}}}}',
        "text.format.schema",
    ),
]


@pytest.mark.parametrize(
    ("body", "param"), [(b, p) for _, b, p in BAD_VALUES], ids=[n for n, _, _ in BAD_VALUES]
)
@pytest.mark.parametrize("stream", [False, True], ids=["non-stream", "stream"])
async def test_hostile_request_values_are_400_naming_the_parameter(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    http: aiohttp.ClientSession,
    body: bytes,
    param: str,
    stream: bool,
) -> None:
    if stream:
        body = body[:-1] + b',"stream":true}'
    server = await proxy()

    status, content_type, raw = await post(http, server, body)

    error = assert_openai_error(raw, status, 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert content_type == "application/json"
    assert upstream.requests == []


async def test_finite_numbers_still_reach_the_upstream(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    events = [chunk({"content": "ok"}), chunk({}, finish_reason="stop"), usage_chunk()]
    upstream.enqueue(Reply(events=events))
    client = make_client(await proxy())

    response = await client.responses.create(
        model=MODEL,
        input=[{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}],
        temperature=0,
        top_p=0.5,
    )

    assert response.output_text == "ok"
    sent = upstream.requests[-1].json()
    assert sent["temperature"] == 0 and sent["top_p"] == 0.5
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
