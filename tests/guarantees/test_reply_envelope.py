"""A whole reply's envelope — the strings around its answer — passes the output shields.

An upstream can put text where no answer goes: the reply's ``id``, ``model``,
``system_fingerprint``, ``service_tier``, a choice's ``finish_reason``, ``usage``, keys of its
own at any level, a message's ``annotations``, a tool call's ``id``, an audio answer's ``id``,
a key's very name. A finding the policy enforces there fails the reply (502), and not one byte
of it reaches the client; a clean envelope goes as it came, every time (its strings are
remembered once passed).
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import DONE, REPO_ROOT
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    json_bytes,
    sse,
    usage_chunk,
)
from tests.support.text_completions import text_completion

AWS_KEY = "AKIAIOSFODNN7EXAMPLQ"  # made up, the shape of an AWS access key id
EMAIL = "jane.doe@example.org"
PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
USER = [{"role": "user", "content": "What is the weather like?"}]


def openai_like() -> dict[str, Any]:
    """A reply as OpenAI sends one today: every envelope field a client may read."""
    reply = chat_completion("Sunny, 21 degrees.")
    reply.update(
        id="chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        model="gpt-4o-2024-08-06",
        system_fingerprint="fp_7568d46099",
        service_tier="default",
        usage={
            "prompt_tokens": 12,
            "completion_tokens": 6,
            "total_tokens": 18,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
    )
    reply["choices"][0]["message"]["annotations"] = []
    return reply


def with_key(where: str) -> Callable[[dict[str, Any]], None]:
    def put(reply: dict[str, Any]) -> None:
        choice = reply["choices"][0]
        message = choice["message"]
        if where in ("id", "model", "system_fingerprint", "service_tier"):
            reply[where] = f"x-{AWS_KEY}"
        elif where == "finish_reason":
            choice["finish_reason"] = AWS_KEY
        elif where == "usage":
            reply["usage"]["note"] = AWS_KEY
        elif where == "top-level":
            reply["debug"] = {"trace": [{"secret": AWS_KEY}]}
        elif where == "choice":
            choice["provider"] = {"raw": f"key {AWS_KEY}"}
        elif where == "key-name":
            reply[AWS_KEY] = 1
        elif where == "annotation":
            message["annotations"] = [
                {
                    "type": "url_citation",
                    "url_citation": {
                        "url": f"https://evil.example/?k={AWS_KEY}",
                        "title": "weather",
                        "start_index": 0,
                        "end_index": 5,
                    },
                }
            ]
        elif where == "tool-call-id":
            message["tool_calls"] = [
                {
                    "id": f"call_{AWS_KEY}",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                }
            ]
        else:
            assert where == "audio-id"
            message["audio"] = {"id": AWS_KEY, "data": "", "transcript": "Sunny.", "expires_at": 1}

    return put


PLACES = [
    "id",
    "model",
    "system_fingerprint",
    "service_tier",
    "finish_reason",
    "usage",
    "top-level",
    "choice",
    "key-name",
    "annotation",
    "tool-call-id",
    "audio-id",
]


async def ask(
    http: aiohttp.ClientSession,
    proxy: RunningServer,
    path: str = "chat/completions",
    body: dict[str, Any] | None = None,
) -> tuple[int, bytes]:
    payload = body or {"model": "m", "messages": USER}
    async with asyncio.timeout(8), http.post(f"{proxy.url}/v1/{path}", json=payload) as resp:
        return resp.status, await resp.read()


@pytest.mark.parametrize("where", PLACES)
async def test_a_secret_in_the_envelope_fails_the_reply(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, where: str
) -> None:
    reply = openai_like()
    with_key(where)(reply)
    upstream.enqueue(Reply(body=json_bytes(reply)))
    body: dict[str, Any] = {"model": "m", "messages": USER}
    if where == "tool-call-id":
        body["tools"] = [{"type": "function", "function": {"name": "get_weather"}}]

    status, raw = await ask(http, await make_proxy(), body=body)

    assert status == 502, raw
    assert json.loads(raw)["error"]["code"] == "upstream_error"
    assert AWS_KEY.encode() not in raw


async def test_a_clean_envelope_goes_as_it_came_every_time(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for n in range(3):
        reply = openai_like()
        reply["id"] = f"chatcmpl-{n}B9MHDbslfkBeAs8l4bebGdF"
        sent = json_bytes(reply)
        upstream.enqueue(Reply(body=sent))
        status, raw = await ask(http, proxy)
        assert status == 200 and raw == sent


async def test_a_flagged_envelope_string_is_never_remembered_as_passed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for _ in range(3):
        reply = openai_like()
        reply["model"] = AWS_KEY
        upstream.enqueue(Reply(body=json_bytes(reply)))
        status, raw = await ask(http, proxy)
        assert status == 502 and AWS_KEY.encode() not in raw


async def test_a_redacting_policy_fails_an_envelope_it_would_redact(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = openai_like()
    reply["service_tier"] = f"owner {EMAIL}"
    upstream.enqueue(Reply(body=json_bytes(reply)))

    status, raw = await ask(http, await make_proxy(PII_POLICY))

    assert status == 502 and EMAIL.encode() not in raw


async def test_a_legacy_completion_envelope_is_read_too(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = text_completion(" sunny.")
    clean = json_bytes(reply)
    flagged = copy.deepcopy(reply)
    flagged["id"] = f"cmpl-{AWS_KEY}"
    upstream.enqueue(Reply(body=clean))
    upstream.enqueue(Reply(body=json_bytes(flagged)))
    proxy = await make_proxy()
    body = {"model": "m", "prompt": "The weather is"}

    assert await ask(http, proxy, "completions", body) == (200, clean)
    status, raw = await ask(http, proxy, "completions", body)
    assert status == 502 and AWS_KEY.encode() not in raw


async def test_monitor_mode_relays_the_envelope(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = openai_like()
    reply["service_tier"] = EMAIL
    sent = json_bytes(reply)
    upstream.enqueue(Reply(body=sent))
    monitor = PII_POLICY.replace("version: 1\n", "version: 1\nmode: monitor\n")

    assert await ask(http, await make_proxy(monitor)) == (200, sent)


# ---- streams ---------------------------------------------------------------------------------

TOKENS = ["Sunny", ",", " 21", " degrees", "."]


def stream_of(*, last: dict[str, Any] | None = None, **fields: Any) -> bytes:
    """A chat stream of ``TOKENS``, each chunk built with ``fields`` (``id``, ``model``,
    ``extra``), then ``last`` (a chunk of its own) if given, then the end."""
    events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""}, **fields)]
    events += [chunk({"content": token}, **fields) for token in TOKENS]
    events.append(chunk({}, finish_reason="stop", **fields))
    if last is not None:
        events.append(last)
    return sse(*events)


def assert_failed_without(raw: bytes, secret: str = AWS_KEY) -> None:
    assert secret.encode() not in raw
    assert raw.endswith(DONE) and b"upstream_error" in raw, raw[-300:]


@pytest.mark.parametrize(
    "fields",
    [
        {"id": f"chatcmpl-{AWS_KEY}"},
        {"model": AWS_KEY},
        {"extra": {"system_fingerprint": f"fp_{AWS_KEY}"}},
        {"extra": {"debug": {"k": AWS_KEY}}},
    ],
    ids=["id", "model", "fingerprint", "extra"],
)
async def test_a_secret_in_every_chunks_envelope_fails_the_stream_before_any_text(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    fields: dict[str, Any],
) -> None:
    upstream.enqueue(Reply(body=stream_of(**fields)))

    status, raw = await ask(
        http, await make_proxy(), body={"model": "m", "messages": USER, "stream": True}
    )

    assert status == 200
    assert_failed_without(raw)
    assert b"Sunny" not in raw  # the first event already carried it


@pytest.mark.parametrize(
    "last",
    [
        chunk({}, finish_reason=f"stop {AWS_KEY}"),
        {**usage_chunk(), "usage": {"note": AWS_KEY, "total_tokens": 3}},
        chunk({"role": "assistant"}, extra={"service_tier": AWS_KEY}),
    ],
    ids=["finish-reason", "usage", "service-tier"],
)
async def test_a_secret_in_one_late_chunks_envelope_fails_the_stream(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    last: dict[str, Any],
) -> None:
    upstream.enqueue(Reply(body=stream_of(last=last)))

    status, raw = await ask(
        http, await make_proxy(), body={"model": "m", "messages": USER, "stream": True}
    )

    assert status == 200
    assert_failed_without(raw)


async def test_a_tool_call_id_in_a_stream_is_read(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    call = {
        "index": 0,
        "id": f"call_{AWS_KEY}",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }
    upstream.enqueue(
        Reply(
            body=sse(
                chunk({"role": "assistant", "tool_calls": [call]}),
                chunk({}, finish_reason="tool_calls"),
            )
        )
    )
    body = {
        "model": "m",
        "messages": USER,
        "stream": True,
        "tools": [{"type": "function", "function": {"name": "get_weather"}}],
    }

    status, raw = await ask(http, await make_proxy(), body=body)

    assert status == 200
    assert_failed_without(raw)


async def test_a_clean_stream_goes_as_it_came(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for n in range(2):
        sent = stream_of(id=f"chatcmpl-{n}x9", extra={"system_fingerprint": "fp_7568d46099"})
        upstream.enqueue(Reply(body=sent))
        status, raw = await ask(http, proxy, body={"model": "m", "messages": USER, "stream": True})
        assert status == 200 and raw == sent


@pytest.mark.parametrize("per_read", [False, True], ids=["one-read", "event-per-read"])
async def test_an_event_of_the_learned_shape_with_keys_smuggled_into_its_text_is_read(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, per_read: bool
) -> None:
    # Clean events teach the guard their shape (the bytes around the text); then an event with
    # the same bytes around a "text" that closes the string and adds keys of its own.
    def event(text: bytes) -> bytes:
        return (
            b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
            b'"choices":[{"index":0,"delta":{"content":"' + text + b'"},"finish_reason":null}]}\n\n'
        )

    smuggled = b'hi","annotations":["' + AWS_KEY.encode() + b'"],"refusal":"'
    events = [event(b"Hel"), event(b"lo"), event(b" there"), event(smuggled), event(b"!")]
    events.append(b"data: [DONE]\n\n")
    reply = Reply(chunks=events) if per_read else Reply(body=b"".join(events))
    reply.headers = {"Content-Type": "text/event-stream"}
    upstream.enqueue(reply)

    status, raw = await ask(
        http, await make_proxy(), body={"model": "m", "messages": USER, "stream": True}
    )

    assert status == 200
    assert_failed_without(raw)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_secret_as_the_name_of_an_empty_message_key_fails_the_reply(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, stream: bool
) -> None:
    # A key holding no text passes the message's readers (LiteLLM's null fields); its name is
    # upstream text all the same.
    if stream:
        upstream.enqueue(
            Reply(
                body=sse(
                    chunk({"content": "Sunny", AWS_KEY: None}), chunk({}, finish_reason="stop")
                )
            )
        )
    else:
        reply = openai_like()
        reply["choices"][0]["message"][AWS_KEY] = None
        upstream.enqueue(Reply(body=json_bytes(reply)))

    status, raw = await ask(
        http, await make_proxy(), body={"model": "m", "messages": USER, "stream": stream}
    )

    assert AWS_KEY.encode() not in raw
    assert status == 502 or (status == 200 and raw.endswith(DONE) and b"upstream_error" in raw)


LENGTH_ONLY = """
version: 1
name: short
output:
  - {id: short, type: length, max_chars_per_message: 12}
"""


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_length_limit_counts_the_answer_not_its_envelope(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, stream: bool
) -> None:
    # The envelope and headers run to hundreds of characters; the answer is 6.
    reply = openai_like()
    reply["choices"][0]["message"]["content"] = "Sunny."
    if stream:
        short = {"role": "assistant", "content": "Sunny."}
        sent = sse(chunk(short), chunk({}, finish_reason="stop"))
    else:
        sent = json_bytes(reply)
    upstream.enqueue(Reply(body=sent, headers={"X-Request-Trace": "a-long-trace-value-0123"}))

    status, raw = await ask(
        http, await make_proxy(LENGTH_ONLY), body={"model": "m", "messages": USER, "stream": stream}
    )

    assert status == 200 and raw == sent
