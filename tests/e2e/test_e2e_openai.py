"""End to end: the official ``openai`` SDK -> the real proxy -> the scripted fake upstream.

Every test runs the proxy's real server code on a real socket. Where the wire format itself is
the contract (byte-for-byte relaying, the refusal and error forms of issue #2 section 7) the
proxy's response is also read with plain aiohttp and compared byte for byte.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import random
import socket
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import openai
import pydantic
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED_OUT, DONE, REFUSAL, USER
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

MakeClient = Callable[..., openai.AsyncOpenAI]

GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # an output redaction of the default policy

ERROR_STYLE_POLICY = """
version: 1
name: strict-errors
refusal: {message: "Blocked by policy.", style: error}
stream: {holdback_chars: 32}
input:
  - {id: weapons, type: denylist, phrases: ["build a bomb"], action: block}
output:
  - {id: weapons, type: denylist, phrases: ["synthesize sarin"], action: block}
"""

MONITOR_POLICY = """
version: 1
name: watcher
mode: monitor
input:
  - {id: weapons, type: denylist, phrases: ["build a bomb"], action: block}
output:
  - {id: weapons, type: denylist, phrases: ["synthesize sarin"], action: block}
"""


# ---- helpers -----------------------------------------------------------------------------


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": USER, **extra}


def sse_datas(raw: bytes) -> list[bytes]:
    """The data payloads of a ``data: ...\\n\\n`` stream; fails on any other framing."""
    assert raw.endswith(b"\n\n"), raw[-80:]
    events = raw[:-2].split(b"\n\n")
    for event in events:
        assert event.startswith(b"data: ") and b"\n" not in event, event
    return [event[len(b"data: ") :] for event in events]


def sse_chunks(raw: bytes) -> list[dict[str, Any]]:
    """The JSON chunks of a stream that must end in ``[DONE]`` (which is not returned)."""
    datas = sse_datas(raw)
    assert datas[-1] == b"[DONE]"
    assert b"[DONE]" not in datas[:-1]
    return [json.loads(data) for data in datas[:-1]]


def delta_text(chunks: list[dict[str, Any]], key: str = "content", index: int = 0) -> str:
    return "".join(
        choice["delta"].get(key) or ""
        for c in chunks
        for choice in c.get("choices") or []
        if choice["index"] == index
    )


def content_events(text: str, sizes: list[int] | None = None, piece: int = 3) -> list[Any]:
    """Content deltas for ``text`` (given piece sizes, else fixed ``piece``), role first."""
    parts: list[str] = []
    i = 0
    while i < len(text):
        size = sizes[len(parts) % len(sizes)] if sizes else piece
        parts.append(text[i : i + size])
        i += size
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": part}) for part in parts]
    return events


async def post(
    http: aiohttp.ClientSession,
    proxy: RunningServer,
    body: dict[str, Any] | bytes,
    *,
    path: str = "/v1/chat/completions",
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    hdrs = {"Content-Type": "application/json", "Authorization": "Bearer sk-client"}
    hdrs.update(headers or {})
    async with http.post(f"{proxy.url}{path}", data=data, headers=hdrs) as resp:
        return resp.status, resp.headers, await resp.read()


def assert_openai_error(body: bytes, *, type: str, code: str | None) -> dict[str, Any]:
    payload = json.loads(body)
    assert set(payload) == {"error"}
    error = payload["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"] == type
    assert error["code"] == code
    return error


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- transparency: allowed replies -------------------------------------------------------


async def test_non_stream_allowed_reply_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    completion = chat_completion(
        "Hello there, wörld €",
        extra={"system_fingerprint": "fp_1", "x_vendor": {"latency_ms": [1, 2.5, None]}},
    )
    body = json.dumps(completion, indent=1, ensure_ascii=True).encode()  # not how we'd encode it
    upstream.enqueue(Reply(body=body, headers={"content-type": "application/json; charset=utf-8"}))
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(
        model="fake-model", messages=USER, temperature=0.5
    )

    assert raw.http_response.status_code == 200
    assert raw.http_response.content == body
    assert raw.headers["content-type"] == "application/json; charset=utf-8"
    assert raw.headers["x-shieldgate-policy"] == "default"
    assert "x-shieldgate-blocked" not in raw.headers
    parsed = raw.parse()
    assert parsed.choices[0].message.content == "Hello there, wörld €"
    assert parsed.system_fingerprint == "fp_1"
    assert parsed.usage is not None and parsed.usage.total_tokens == 12
    # The request went upstream exactly as the SDK sent it.
    [forwarded] = upstream.requests
    assert (forwarded.method, forwarded.path) == ("POST", "/v1/chat/completions")
    assert forwarded.body == raw.http_request.content
    assert forwarded.json()["temperature"] == 0.5


async def test_gzip_reply_is_relayed_decoded(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    plain = json_bytes(chat_completion("compressed hello"))
    upstream.enqueue(
        Reply(
            body=gzip.compress(plain),
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )
    )
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(model="fake-model", messages=USER)

    assert raw.http_response.content == plain
    assert raw.parse().choices[0].message.content == "compressed hello"


async def test_request_body_is_forwarded_unchanged(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    sent = (
        b'{ "model":"m","messages":[{"role":"user","content":"caf\\u00e9 \xe2\x82\xac"}],'
        b'"logit_bias": {"50256": -100}, "seed": 7 }'
    )
    status, _, _ = await post(http, proxy, sent, path="/v1/chat/completions?api-version=2")
    assert status == 200
    [forwarded] = upstream.requests
    assert forwarded.body == sent
    assert forwarded.query_string == "api-version=2"


def rich_stream_events() -> list[Any]:
    """n=2 with logprobs, unknown fields, reasoning, a refusal delta and a usage chunk."""
    logprobs = {
        "content": [{"token": "Hé", "logprob": -0.25, "bytes": [72, 195, 169], "top_logprobs": []}]
    }

    def two(d0: dict[str, Any], d1: dict[str, Any], **choice_extra: Any) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "fake-model",
            "system_fingerprint": "fp_x",
            "x_vendor_field": {"nested": [1, None, "ü"]},
            "choices": [
                {
                    "index": 0,
                    "delta": d0,
                    "logprobs": logprobs,
                    "finish_reason": None,
                    **choice_extra,
                },
                {"index": 1, "delta": d1, "logprobs": None, "finish_reason": None, **choice_extra},
            ],
        }

    events: list[Any] = [
        two({"role": "assistant", "content": ""}, {"role": "assistant", "refusal": ""}),
        two({"reasoning_content": "thinking about wörlds"}, {"refusal": "I can"}),
        two({"content": "Héllo "}, {"refusal": "not do that €"}, stop_reason=None),
    ]
    events += [two({"content": f"word{i} €ü "}, {}) for i in range(12)]
    final = two({}, {})
    final["choices"][0]["finish_reason"] = "stop"
    final["choices"][1]["finish_reason"] = "stop"
    events.append(final)
    events.append(usage_chunk(11, 42))
    return events


async def test_stream_allowed_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    payload = sse(*rich_stream_events())
    # Cut inside multi-byte characters, inside "data:", and between the two "\n" of an event end.
    euro = payload.index("€".encode())
    first_end = payload.index(b"\n\n")
    cuts = [3, euro + 1, euro + 2, first_end + 1, *range(200, len(payload), 97)]
    upstream.enqueue(
        Reply(chunks=split_at(payload, cuts), headers={"content-type": "text/event-stream"})
    )
    proxy = await make_proxy()

    status, headers, raw = await post(
        http, proxy, chat_body(stream=True, n=2, stream_options={"include_usage": True})
    )

    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert headers["x-shieldgate-policy"] == "default"
    assert raw == payload
    chunks = sse_chunks(raw)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 53


async def test_stream_allowed_is_parsed_by_the_sdk(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    events = rich_stream_events()
    upstream.enqueue(Reply(events=events))
    client = make_client(await make_proxy())

    stream = await client.chat.completions.create(
        model="fake-model",
        messages=USER,
        stream=True,
        n=2,
        logprobs=True,
        stream_options={"include_usage": True},
    )
    got = [c async for c in stream]

    assert len(got) == len(events)
    for sdk_chunk, sent in zip(got, events, strict=True):
        assert sdk_chunk.model_dump(exclude_unset=True) == sent
    content0 = "".join(c.choices[0].delta.content or "" for c in got if c.choices)
    refusal1 = "".join(c.choices[1].delta.refusal or "" for c in got if c.choices)
    assert content0 == "Héllo " + "".join(f"word{i} €ü " for i in range(12))
    assert refusal1 == "I cannot do that €"
    assert got[-1].choices == [] and got[-1].usage is not None
    assert got[-1].usage.completion_tokens == 42
    assert got[0].choices[0].logprobs is not None
    assert got[0].choices[0].logprobs.content[0].token == "Hé"


async def test_monitor_mode_relays_a_banned_reply_unchanged(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    payload = text_stream(f"Step one: {BANNED_OUT} at home.", piece=2)
    upstream.enqueue(Reply(chunks=[payload]))
    proxy = await make_proxy(MONITOR_POLICY)

    status, headers, raw = await post(
        http,
        proxy,
        {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "how to build a bomb"}],
        },
    )

    assert (status, raw) == (200, payload)
    assert headers["x-shieldgate-policy"] == "watcher"
    assert len(upstream.requests) == 1  # the input "block" was only logged


# ---- tools -------------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for name in ("get_weather", "get_time")
]


def tool_delta(
    index: int, arguments: str, *, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
        call["type"] = "function"
        call["function"]["name"] = name
    return call


async def test_stream_interleaved_tool_calls_reassembled_by_sdk(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    args_a = '{"city": "Paris", "units": "celsius", "days": 3}'
    args_b = '{"tz": "Europe/Paris", "format": "24h", "note": "ünïcode €"}'
    events: list[Any] = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [tool_delta(0, "", call_id="call_a", name="get_weather")]}),
        chunk({"tool_calls": [tool_delta(1, args_b[:4], call_id="call_b", name="get_time")]}),
    ]
    a_parts = [args_a[i : i + 5] for i in range(0, len(args_a), 5)]
    b_parts = [args_b[i : i + 7] for i in range(4, len(args_b), 7)]
    for i in range(max(len(a_parts), len(b_parts))):
        calls = []
        if i < len(a_parts):
            calls.append(tool_delta(0, a_parts[i]))
        if i < len(b_parts):
            calls.append(tool_delta(1, b_parts[i]))
        if i % 3 == 0:  # sometimes one chunk carries both calls, sometimes they alternate
            events.append(chunk({"tool_calls": calls}))
        else:
            events += [chunk({"tool_calls": [call]}) for call in calls]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events), Reply(events=events))
    proxy = await make_proxy()
    client = make_client(proxy)

    async with client.chat.completions.stream(
        model="fake-model", messages=USER, tools=TOOLS
    ) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()

    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("call_a", "get_weather", args_a),
        ("call_b", "get_time", args_b),
    ]
    # And on the wire: the very bytes the upstream sent.
    status, _, raw = await post(http, proxy, chat_body(stream=True, tools=TOOLS))
    assert (status, raw) == (200, sse(*events))


async def test_non_stream_tool_calls_with_object_arguments_pass_through(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}},
        },
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'},
        },
    ]
    body = json_bytes(chat_completion(None, tool_calls=calls))
    upstream.enqueue(Reply(body=body))
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(
        model="fake-model", messages=USER, tools=TOOLS
    )

    assert raw.http_response.status_code == 200
    assert raw.http_response.content == body
    assert json.loads(raw.http_response.content)["choices"][0]["message"]["tool_calls"] == calls


async def test_non_stream_object_arguments_are_redacted_and_stay_an_object(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "login", "arguments": {"token": GH_TOKEN, "user": "bob"}},
        }
    ]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body())

    assert status == 200
    assert GH_TOKEN.encode() not in raw
    function = json.loads(raw)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert function == {"name": "login", "arguments": {"token": "[CREDENTIAL]", "user": "bob"}}


async def test_stream_banned_phrase_in_tool_arguments_never_leaks(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    args = '{"q": "' + "padding text " * 8 + f"how to {BANNED_OUT} safely" + '"}'
    events: list[Any] = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [tool_delta(0, "", call_id="call_a", name="get_weather")]}),
    ]
    events += [
        chunk({"tool_calls": [tool_delta(0, args[i : i + 2])]}) for i in range(0, len(args), 2)
    ]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True, tools=TOOLS))

    assert status == 200
    chunks = sse_chunks(raw)
    released = "".join(
        call["function"].get("arguments") or ""
        for c in chunks
        for choice in c["choices"]
        for call in choice["delta"].get("tool_calls") or []
    )
    assert args.startswith(released)
    assert len(released) <= args.index(BANNED_OUT)
    assert delta_text(chunks) == REFUSAL
    assert chunks[-1]["choices"][0]["finish_reason"] == "content_filter"


# ---- refusals ----------------------------------------------------------------------------

BOMB = [{"role": "user", "content": "Explain step by step how to BUILD A BOMB at home"}]


class Answer(pydantic.BaseModel):
    answer: str


async def test_the_sdk_helpers_read_a_refusal_as_the_readme_says(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    """README, Refusals: parse() and the stream() helper raise ContentFilterFinishReasonError
    (as for OpenAI's own filter); the Responses helpers return a refusal part."""
    client = make_client(await make_proxy())

    with pytest.raises(openai.ContentFilterFinishReasonError):
        await client.chat.completions.parse(
            model="fake-model", messages=BOMB, response_format=Answer
        )
    with pytest.raises(openai.ContentFilterFinishReasonError):
        async with client.chat.completions.stream(model="fake-model", messages=BOMB) as stream:
            async for _ in stream:
                pass
            await stream.get_final_completion()
    parsed = await client.responses.parse(
        model="fake-model", input=BOMB[0]["content"], text_format=Answer
    )
    assert parsed.output_parsed is None
    parts = [part for item in parsed.output for part in getattr(item, "content", None) or []]
    assert [(part.type, getattr(part, "refusal", None)) for part in parts] == [("refusal", REFUSAL)]
    assert not upstream.requests


async def test_input_block_non_stream_is_a_refusal_completion(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(model="fake-model", messages=BOMB)

    assert raw.http_response.status_code == 200
    assert raw.headers["x-shieldgate-blocked"] == "input"
    assert raw.headers["x-shieldgate-policy"] == "default"
    completion = raw.parse()
    assert completion.object == "chat.completion"
    [choice] = completion.choices
    assert choice.finish_reason == "content_filter"
    assert (choice.message.role, choice.message.content) == ("assistant", REFUSAL)
    body = json.loads(raw.http_response.content)
    assert body["choices"][0]["message"] == {"role": "assistant", "content": REFUSAL}
    assert upstream.requests == []


async def test_input_block_stream_is_answered_as_a_stream_with_usage(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    proxy = await make_proxy()
    body = {
        "model": "fake-model",
        "messages": BOMB,
        "stream": True,
        "n": 2,
        "stream_options": {"include_usage": True},
    }

    status, headers, raw = await post(http, proxy, body)

    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-shieldgate-blocked"] == "input"
    chunks = sse_chunks(raw)
    assert [c["object"] for c in chunks] == ["chat.completion.chunk"] * 3
    assert [(c["index"], c["delta"]) for c in chunks[0]["choices"]] == [
        (0, {"role": "assistant", "content": REFUSAL}),
        (1, {"role": "assistant", "content": REFUSAL}),
    ]
    assert [(c["index"], c["finish_reason"]) for c in chunks[1]["choices"]] == [
        (0, "content_filter"),
        (1, "content_filter"),
    ]
    assert chunks[2]["choices"] == [] and set(chunks[2]["usage"]) >= {"total_tokens"}
    assert raw.endswith(b"\n\n" + DONE)

    client = make_client(proxy)
    stream = await client.chat.completions.create(model="fake-model", messages=BOMB, stream=True)
    got = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in got) == REFUSAL
    assert got[-1].choices[0].finish_reason == "content_filter"
    assert upstream.requests == []


async def test_output_block_non_stream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion(f"Sure. To {BANNED_OUT} you first"))))
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(model="fake-model", messages=USER)

    assert raw.http_response.status_code == 200
    assert b"sarin" not in raw.http_response.content
    assert raw.headers.get("x-shieldgate-blocked") != "input"
    assert raw.headers["x-shieldgate-blocked"] == "output"  # as the README promises
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert [(c.message.content, c.finish_reason) for c in completion.choices] == [
        (REFUSAL, "content_filter")
    ]
    assert len(upstream.requests) == 1


def released_before_refusal(content: str) -> str:
    """The text a stream released before its refusal: the refusal is exactly REFUSAL when
    nothing of the choice's content was sent before it, else exactly "\n\n" + REFUSAL."""
    assert content.endswith(REFUSAL)
    released = content.removesuffix(REFUSAL)
    if released:
        assert released.endswith("\n\n") and released != "\n\n", released
        released = released.removesuffix("\n\n")
    return released


def stream_with_banned_phrase(prefix_len: int = 90) -> tuple[str, list[Any], int]:
    """Content with BANNED_OUT after ``prefix_len`` chars; events; bytes up to the phrase's end."""
    prefix = ("Well, here is a long and harmless preamble. " * 5)[:prefix_len]
    text = prefix + BANNED_OUT + " by mixing the following precursors in a flask"
    events = content_events(text, piece=3)
    cut, seen = 0, 0
    for event in events:
        cut += len(sse(event, done=False))
        seen += len(event["choices"][0]["delta"]["content"])
        if seen >= len(prefix) + len(BANNED_OUT):
            break
    return text, events, cut


async def test_output_block_mid_stream_discards_and_closes_upstream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    text, events, cut = stream_with_banned_phrase()
    # The upstream stalls right after the banned phrase: only the proxy can end this stream.
    # (A proxy that scans in fixed-size batches only sees the phrase when more text arrives,
    # so it would wait for read_timeout and answer upstream_error instead of refusing.)
    upstream.enqueue(Reply(events=events, stall_after_bytes=cut))
    proxy = await make_proxy()

    started = time.monotonic()
    status, _, raw = await post(
        http, proxy, chat_body(stream=True, stream_options={"include_usage": True})
    )

    assert time.monotonic() - started < 1.5
    assert status == 200
    chunks = sse_chunks(raw)
    released = delta_text(chunks[:-3])
    assert text.startswith(released)
    assert len(released) <= text.index(BANNED_OUT)
    refusal, stop, usage = chunks[-3:]
    # Was `== REFUSAL`: a refusal after text already sent is set apart from it by a blank
    # line (cc74faf), and the adaptive hold-back has sent the preamble before the phrase.
    assert refusal["choices"][0]["delta"]["content"] == ("\n\n" if released else "") + REFUSAL
    assert stop["choices"][0]["finish_reason"] == "content_filter"
    assert usage["choices"] == [] and "usage" in usage
    assert await upstream.wait_for_disconnect(1.0) is not None


async def test_output_block_mid_stream_upstream_keeps_talking(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    # The upstream goes on after the phrase, then stalls: the proxy must stop reading, send the
    # refusal, end the response (no waiting for the upstream) and hang up on the upstream.
    text, events, _ = stream_with_banned_phrase()
    stalled = Reply(events=events, stall_after_bytes=len(sse(*events)))
    upstream.enqueue(stalled, stalled)
    proxy = await make_proxy()

    started = time.monotonic()
    status, _, raw = await post(http, proxy, chat_body(stream=True))  # reads up to EOF

    assert time.monotonic() - started < 1.5  # well under read_timeout (2 s)
    assert status == 200
    assert await upstream.wait_for_disconnect(1.0) is not None
    chunks = sse_chunks(raw)
    assert delta_text(chunks).endswith(REFUSAL)

    stream = await make_client(proxy).chat.completions.create(
        model="fake-model", messages=USER, stream=True
    )
    got = [c async for c in stream]
    content = "".join(c.choices[0].delta.content or "" for c in got)
    # The refusal is "\n\n" + REFUSAL after released text, REFUSAL alone otherwise (cc74faf).
    released = released_before_refusal(content)
    assert text.startswith(released) and len(released) <= text.index(BANNED_OUT)
    assert got[-1].choices[0].finish_reason == "content_filter"
    assert await upstream.wait_for_disconnect(1.0) is not None


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_style_error_input_block_is_http_400(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, stream: bool
) -> None:
    client = make_client(await make_proxy(ERROR_STYLE_POLICY))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="fake-model", messages=BOMB, stream=stream)

    error = caught.value
    assert error.status_code == 400
    assert error.code == "content_filter"
    assert json.loads(error.response.content) == {
        "error": {
            "message": "Blocked by policy.",
            "type": "invalid_request_error",
            "param": None,
            "code": "content_filter",
        }
    }
    assert error.response.headers["x-shieldgate-blocked"] == "input"
    assert error.response.headers["x-shieldgate-policy"] == "strict-errors"
    assert upstream.requests == []


async def test_style_error_output_block_non_stream_is_http_400(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion(f"ok: {BANNED_OUT}"))))
    client = make_client(await make_proxy(ERROR_STYLE_POLICY))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.chat.completions.create(model="fake-model", messages=USER)

    assert caught.value.code == "content_filter"
    assert json.loads(caught.value.response.content)["error"] == {
        "message": "Blocked by policy.",
        "type": "invalid_request_error",
        "param": None,
        "code": "content_filter",
    }


async def test_style_error_mid_stream_is_an_in_band_error_event(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    text, events, _ = stream_with_banned_phrase()
    upstream.enqueue(Reply(events=events), Reply(events=events))
    proxy = await make_proxy(ERROR_STYLE_POLICY)

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    error_event = (
        b'data: {"error":{"message":"Blocked by policy.","type":"invalid_request_error",'
        b'"param":null,"code":"content_filter"}}\n\n'
    )
    assert raw.endswith(b"\n\n" + error_event + DONE)
    assert b"event:" not in raw
    released = delta_text([json.loads(d) for d in sse_datas(raw)[:-2]])
    assert text.startswith(released) and len(released) <= text.index(BANNED_OUT)

    stream = await make_client(proxy).chat.completions.create(
        model="fake-model", messages=USER, stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert caught.value.code == "content_filter"
    assert caught.value.message == "Blocked by policy."


# ---- redaction ---------------------------------------------------------------------------


async def test_input_redaction_rewrites_the_forwarded_body(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy())
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "my key is AKIAQ3EGRK5JXWZY7N4T, why does it fail?"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this one: ghp_W4nQ8zR2kL7vT5yB9cX3mH6jF1sD0aGe2uPo"},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
            ],
        },
    ]

    reply = await client.chat.completions.create(
        model="fake-model", messages=messages, temperature=0.2
    )

    assert reply.choices[0].message.content == "ok"
    [forwarded] = upstream.requests
    assert b"AKIAQ3EGRK5JXWZY7N4T" not in forwarded.body
    assert b"ghp_0123" not in forwarded.body
    sent = forwarded.json()
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "my key is [CREDENTIAL], why does it fail?"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this one: [CREDENTIAL]"},
                {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}},
            ],
        },
    ]
    assert (sent["model"], sent["temperature"]) == ("fake-model", 0.2)
    assert forwarded.headers["content-type"] == "application/json"


async def test_output_redaction_non_stream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(
            body=json_bytes(
                chat_completion(f"Use {GH_TOKEN} to log in.", extra={"system_fingerprint": "fp_9"})
            )
        )
    )
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(model="fake-model", messages=USER)

    assert GH_TOKEN.encode() not in raw.http_response.content
    completion = raw.parse()
    assert completion.choices[0].message.content == "Use [CREDENTIAL] to log in."
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.id, completion.system_fingerprint) == ("chatcmpl-fake", "fp_9")
    assert completion.usage is not None and completion.usage.total_tokens == 12


async def test_output_redaction_stream_token_split_into_tiny_chunks(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    text = (
        "Here is the token you asked for: "
        + GH_TOKEN
        + " - keep it secret and never paste it into a chat window, ever again."
    )
    rng = random.Random(20240601)
    sizes = [rng.randint(1, 3) for _ in range(len(text))]
    events = content_events(text, sizes=sizes)
    events.append(chunk({}, finish_reason="stop"))
    upstream.enqueue(Reply(events=events), Reply(events=events))
    proxy = await make_proxy()
    expected = text.replace(GH_TOKEN, "[CREDENTIAL]")

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    datas = sse_datas(raw)
    assert datas[-1] == b"[DONE]"
    sent = [json_bytes(e) for e in events]
    assert len(datas) - 1 == len(sent)  # redaction rewrites events; it never drops or adds one
    chunks = [json.loads(d) for d in datas[:-1]]
    assert delta_text(chunks) == expected
    assert (
        sum("[CREDENTIAL]" in (c["choices"][0]["delta"].get("content") or "") for c in chunks) == 1
    )
    start, end = text.index(GH_TOKEN), text.index(GH_TOKEN) + len(GH_TOKEN)
    offset = 0
    for got, original, event in zip(datas, sent, events, strict=False):
        piece = event["choices"][0]["delta"].get("content") or ""
        if offset + len(piece) <= start or offset >= end:
            assert got == original  # events the token does not touch leave unchanged
        offset += len(piece)

    stream = await make_client(proxy).chat.completions.create(
        model="fake-model", messages=USER, stream=True
    )
    assert "".join([c.choices[0].delta.content or "" async for c in stream]) == expected


# ---- upstream errors and retries ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "exc_type", "etype"),
    [
        (400, openai.BadRequestError, "invalid_request_error"),
        (404, openai.NotFoundError, "not_found_error"),
        (500, openai.InternalServerError, "server_error"),
    ],
)
async def test_upstream_error_is_relayed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    status: int,
    exc_type: type[openai.APIStatusError],
    etype: str,
) -> None:
    body = json_bytes(error_body(f"upstream says {status}", type=etype, code=f"c{status}"))
    upstream.enqueue(Reply(status=status, body=body))
    client = make_client(await make_proxy())

    with pytest.raises(exc_type) as caught:
        await client.chat.completions.create(model="fake-model", messages=USER, stream=True)

    error = caught.value
    assert error.status_code == status
    assert error.response.content == body
    assert error.code == f"c{status}"
    assert f"upstream says {status}" in error.message
    assert error.response.headers["x-shieldgate-policy"] == "default"
    assert len(upstream.requests) == 1  # 4xx and 500 are not retried


async def test_503_twice_then_success_is_retried(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(status=503, body=json_bytes(error_body("busy")), repeat=2),
        Reply(body=json_bytes(chat_completion("third time lucky"))),
    )
    client = make_client(await make_proxy())

    reply = await client.chat.completions.create(model="fake-model", messages=USER)

    assert reply.choices[0].message.content == "third time lucky"
    assert len(upstream.requests) == 3
    assert len({r.body for r in upstream.requests}) == 1  # the same request each time


async def test_503_on_every_attempt_is_relayed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(status=503, body=json_bytes(error_body("still busy")), repeat=5))
    client = make_client(await make_proxy())

    with pytest.raises(openai.InternalServerError) as caught:
        await client.chat.completions.create(model="fake-model", messages=USER)

    assert caught.value.status_code == 503
    assert "still busy" in caught.value.message
    assert len(upstream.requests) == 3


async def test_429_with_retry_after_zero_is_retried(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(status=429, headers={"Retry-After": "0"}, body=json_bytes(error_body("slow"))),
        Reply(events=[*content_events("fine now"), chunk({}, finish_reason="stop")]),
    )
    client = make_client(await make_proxy(retry_backoff=5.0))

    started = time.monotonic()
    stream = await client.chat.completions.create(model="fake-model", messages=USER, stream=True)
    content = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert content == "fine now"
    assert len(upstream.requests) == 2
    # Retry-After: 0 was honoured instead of the (here huge) exponential backoff.
    assert time.monotonic() - started < 2.0


async def test_retry_after_is_honoured_up_to_the_cap(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(status=429, headers={"Retry-After": "120"}, body=b"{}"))
    client = make_client(await make_proxy(retry_after_cap=0.3))

    reply = await client.chat.completions.create(model="fake-model", messages=USER)

    assert reply.choices[0].message.content == "ok"
    first, second = upstream.requests
    assert 0.25 <= second.received_at - first.received_at < 1.5


async def test_unreachable_upstream_gives_502(
    make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(upstream=f"http://127.0.0.1:{free_port()}/v1"))

    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model="fake-model", messages=USER)

    assert time.monotonic() - started < 3.0
    assert caught.value.status_code == 502
    assert_openai_error(caught.value.response.content, type="upstream_error", code="upstream_error")
    assert caught.value.response.headers["x-shieldgate-policy"] == "default"


async def test_upstream_silent_before_headers_times_out_with_504(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(delay_before_headers=30.0, repeat=10))
    client = make_client(await make_proxy(read_timeout=0.3))

    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model="fake-model", messages=USER)

    assert time.monotonic() - started < 3.0
    assert caught.value.status_code == 504
    assert_openai_error(
        caught.value.response.content, type="upstream_error", code="upstream_timeout"
    )
    assert 1 <= len(upstream.requests) <= 3


# ---- mid-stream upstream faults ----------------------------------------------------------

LONG_TEXT = "".join(f"sentence number {i} is perfectly harmless. " for i in range(12))


def assert_upstream_error_tail(raw: bytes) -> list[dict[str, Any]]:
    datas = sse_datas(raw)
    assert datas[-1] == b"[DONE]"
    error = json.loads(datas[-2])
    assert set(error) == {"error"}
    assert error["error"]["code"] == "upstream_error"
    assert error["error"]["type"] == "upstream_error"
    return [json.loads(d) for d in datas[:-2]]


async def test_upstream_drop_mid_stream_fails_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    # The drop falls inside the banned phrase (was: anywhere in LONG_TEXT, with the check that
    # the fixed window of 64 was still held; the adaptive hold-back releases harmless text at
    # once, so the phrase's first half is what must stay unreleased now).
    text = LONG_TEXT[:300] + BANNED_OUT + " and more. " + LONG_TEXT[:100]
    events = content_events(text, piece=4)
    payload = sse(*events, done=False)
    middle = 1 + (text.index(BANNED_OUT) + len(BANNED_OUT) // 2) // 4  # events[0] is the role
    drop = len(sse(*events[: middle + 1], done=False)) + 5  # inside the event after it
    complete = payload[:drop].count(b"\n\n")
    received = "".join(e["choices"][0]["delta"]["content"] for e in events[:complete])
    upstream.enqueue(
        Reply(
            chunks=split_at(payload, list(range(0, len(payload), 50))),
            drop_after_bytes=drop,
            repeat=2,
        )
    )
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    released = delta_text(assert_upstream_error_tail(raw))
    assert BANNED_OUT[:8] in received  # the proxy had been sent half the phrase
    assert received.startswith(released)
    # Nothing of the phrase was released, not even its first character.
    assert len(released) <= text.index(BANNED_OUT)
    assert len(upstream.requests) == 1  # never retried once bytes went out

    stream = await make_client(proxy).chat.completions.create(
        model="fake-model", messages=USER, stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert caught.value.code == "upstream_error"


async def test_upstream_non_json_line_fails_closed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    events = content_events(LONG_TEXT, piece=4)
    bad_at = len(events) // 2
    before = "".join(e["choices"][0]["delta"]["content"] for e in events[:bad_at])
    events.insert(bad_at, '{"choices": [{"index": 0, "delta": {"content": "tru')
    events.append(chunk({}, finish_reason="stop"))
    upstream.enqueue(Reply(events=events))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    released = delta_text(assert_upstream_error_tail(raw))
    assert before.startswith(released)
    assert len(released) <= len(before) - 64


async def test_upstream_stream_ending_without_finish_fails_closed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The text ends with the start of a banned phrase, held until it is decided: a stream that
    # ends without finishing must not flush it. (Was "cut short" and `== ""`: the fixed window
    # held all of it; the adaptive hold-back sends harmless text at once.)
    text = f"cut short: {BANNED_OUT[:10]}"
    upstream.enqueue(Reply(body=text_stream(text, finish_reason=None, done=False)))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    released = delta_text(assert_upstream_error_tail(raw))
    assert text.startswith(released) and len(released) <= text.index(BANNED_OUT[:10])


async def test_stream_without_done_after_every_choice_finished_is_relayed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
) -> None:
    # Some servers end the body after the finish_reason chunk and never send [DONE].
    payload = text_stream(LONG_TEXT, piece=5, done=False)
    upstream.enqueue(Reply(body=payload), Reply(body=payload))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))
    assert (status, raw) == (200, payload)

    stream = await make_client(proxy).chat.completions.create(
        model="fake-model", messages=USER, stream=True
    )
    assert "".join([c.choices[0].delta.content or "" async for c in stream]) == LONG_TEXT


# ---- client disconnects ------------------------------------------------------------------


async def test_client_disconnect_mid_stream_closes_upstream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    payload = text_stream(LONG_TEXT, piece=4)
    upstream.enqueue(Reply(body=payload, stall_after_bytes=len(payload) // 2))
    client = make_client(await make_proxy())

    stream = await client.chat.completions.create(model="fake-model", messages=USER, stream=True)
    first = await stream.__anext__()
    assert first.choices[0].delta.role == "assistant"
    await stream.close()
    closed_at = time.monotonic()

    noticed = await upstream.wait_for_disconnect(1.0)
    assert noticed is not None and noticed - closed_at < 1.0


async def test_client_disconnect_while_everything_is_held_back(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    payload = text_stream("short and held back", piece=4)
    upstream.enqueue(Reply(body=payload, stall_after_bytes=len(payload) - 30))
    proxy = await make_proxy()

    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body(stream=True)) as resp:
        assert resp.status == 200
        await asyncio.sleep(0.1)  # the proxy holds every event: nothing has arrived
        assert resp.content.at_eof() is False
        resp.close()

    assert await upstream.wait_for_disconnect(1.0) is not None


# ---- deny by default and the other endpoints ---------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/embeddings/extra"),  # /v1/embeddings itself is served (issue 20)
        ("POST", "/v1/files"),
        ("GET", "/anything"),
        ("POST", "/v1/completions/extra"),  # /v1/completions itself is served (issue 20)
        ("POST", "/v1/chat/completions/extra"),
        ("POST", "/v1/responses/resp_1/cancel"),  # /v1/responses itself is served (issue 7)
        ("GET", "/v1/responses/resp_1/input_items"),
        ("DELETE", "/v1/models/fake-model"),
    ],
)
async def test_unknown_paths_are_404_and_never_forwarded(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    method: str,
    path: str,
) -> None:
    proxy = await make_proxy()

    async with http.request(method, f"{proxy.url}{path}", json={"input": "x"}) as resp:
        status, body, headers = resp.status, await resp.read(), resp.headers

    assert status == 404
    assert headers["content-type"].startswith("application/json")
    assert headers["x-shieldgate-policy"] == "default"
    assert_openai_error(body, type="not_found_error", code="not_found")
    assert upstream.requests == []


async def test_get_on_chat_completions_is_an_openai_error(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    async with http.get(f"{proxy.url}/v1/chat/completions") as resp:
        assert resp.status == 405
        assert_openai_error(
            await resp.read(), type="invalid_request_error", code="method_not_allowed"
        )
    assert upstream.requests == []


async def test_healthz(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    async with http.get(f"{proxy.url}/healthz") as resp:
        assert resp.status == 200
        assert await resp.json() == {"status": "ok"}
    assert upstream.requests == []


async def test_models_are_relayed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    body = json_bytes(models_list("llama-3-8b", "qwen-2"))
    upstream.enqueue(Reply(body=body))
    client = make_client(await make_proxy())

    raw = await client.models.with_raw_response.list()

    assert raw.http_response.content == body
    assert raw.headers["x-shieldgate-policy"] == "default"
    assert [m.id async for m in raw.parse()] == ["llama-3-8b", "qwen-2"]
    [forwarded] = upstream.requests
    assert (forwarded.method, forwarded.path) == ("GET", "/v1/models")
    assert forwarded.headers["authorization"] == "Bearer sk-client"


# ---- bad input ---------------------------------------------------------------------------


def _msgs(*messages: Any) -> bytes:
    return json.dumps({"model": "m", "messages": list(messages)}).encode()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"this is not json", ["not valid JSON"]),
        (b'{"model": "m", "messages": [', ["not valid JSON"]),
        (b"\xff\xfe{}", ["not valid JSON"]),
        (b'[{"role": "user", "content": "hi"}]', ["JSON object"]),
        (b'"just a string"', ["JSON object"]),
        (b'{"model": "m"}', ["messages"]),
        (b'{"model": "m", "messages": "hi"}', ["messages", "list"]),
        (b'{"model": "m", "messages": {"role": "user"}}', ["messages", "list"]),
        (_msgs({"content": "hi"}), ["messages[0].role"]),
        (
            _msgs({"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}),
            ["messages[1].role", "wizard"],
        ),
        (_msgs({"role": "user", "content": 42}), ["messages[0].content"]),
        (_msgs({"role": "user", "content": [{"type": "hologram", "hologram": "x"}]}), ["hologram"]),
        (
            _msgs({"role": "user", "content": [{"type": "text", "text": 5}]}),
            ["messages[0].content[0].text"],
        ),
        (_msgs("not a message"), ["messages[0]"]),
    ],
    ids=[
        "not-json",
        "truncated-json",
        "not-utf8",
        "json-array",
        "json-string",
        "messages-missing",
        "messages-string",
        "messages-object",
        "role-missing",
        "role-unknown",
        "content-number",
        "part-type-unknown",
        "part-text-number",
        "message-not-object",
    ],
)
async def test_bad_input_is_400_and_never_forwarded(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    body: bytes,
    words: list[str],
) -> None:
    proxy = await make_proxy()

    status, headers, raw = await post(http, proxy, body)

    assert status == 400
    assert headers["content-type"].startswith("application/json")
    error = assert_openai_error(raw, type="invalid_request_error", code=None)
    for word in words:
        assert word in error["message"]
    assert upstream.requests == []


async def test_body_over_the_limit_is_413(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy(max_body_bytes=2048)
    big = _msgs({"role": "user", "content": "x" * 3000})

    status, _, raw = await post(http, proxy, big)

    assert status == 413
    error = assert_openai_error(raw, type="invalid_request_error", code="payload_too_large")
    assert "2048" in error["message"]
    assert upstream.requests == []
    # Just under the limit is fine.
    status, _, _ = await post(http, proxy, _msgs({"role": "user", "content": "x" * 1900}))
    assert status == 200


async def test_deeply_nested_json_is_400(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()

    # Valid JSON that Python's json module can only refuse with a RecursionError.
    status, _, raw = await post(http, proxy, b"[" * 100_000 + b"]" * 100_000)

    assert status == 400
    assert_openai_error(raw, type="invalid_request_error", code=None)
    assert upstream.requests == []


# ---- credentials and headers -------------------------------------------------------------


async def test_proxy_key_replaces_the_client_key(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(models_list())))
    client = make_client(await make_proxy(upstream_api_key="sk-proxy"), api_key="sk-client")

    await client.chat.completions.create(model="fake-model", messages=USER)
    await client.models.list()

    assert len(upstream.requests) == 2
    for forwarded in upstream.requests:
        assert forwarded.headers.getall("authorization") == ["Bearer sk-proxy"]
        assert not any("sk-client" in value for value in forwarded.headers.values())


async def test_client_authorization_is_forwarded_as_is(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()

    status, _, _ = await post(
        http, proxy, chat_body(), headers={"Authorization": "Bearer sk-client-XYZ"}
    )

    assert status == 200
    assert upstream.requests[0].headers.getall("authorization") == ["Bearer sk-client-XYZ"]


async def test_cookie_and_hop_by_hop_headers_are_not_forwarded(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    headers = {
        "Cookie": "session=s3cret",
        "Connection": "keep-alive, X-Hop-Custom",
        "X-Hop-Custom": "hop",
        "Keep-Alive": "timeout=5",
        "Proxy-Authorization": "Basic cHJveHk6cHc=",
        "TE": "trailers",
        "Trailer": "X-Checksum",
        "OpenAI-Organization": "org-1",
    }

    redacted = {"model": "m", "messages": [{"role": "user", "content": "AKIAQ3EGRK5JXWZY7N4T"}]}

    # A request forwarded as it is, and one the input stage rewrote.
    for body in (chat_body(), redacted):
        status, _, _ = await post(http, proxy, body, headers=headers)
        assert status == 200

    assert len(upstream.requests) == 2
    for forwarded in (r.headers for r in upstream.requests):
        for name in (
            "cookie",
            "x-hop-custom",
            "keep-alive",
            "proxy-authorization",
            "te",
            "trailer",
        ):
            assert name not in forwarded, name
        assert "X-Hop-Custom" not in forwarded.get("connection", "")
        assert forwarded["authorization"] == "Bearer sk-client"
        assert forwarded["openai-organization"] == "org-1"
