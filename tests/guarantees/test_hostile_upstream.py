"""A hostile upstream (and a hostile client's strings echoed into replies): what it may not do.

Each test scripts one way an upstream (or a client's ``model``) could slip text past the output
shields or break the connection's framing, and states what the client receives: never a byte of
the blocked text, never a 500, never a second response written into the first one's body.

- an ``error`` beside ``choices``, in a stream event or in a 2xx JSON reply;
- text in fields the proxy did not read (``audio.transcript``, a choice's ``text``, a stream
  choice's ``message``, a reply choice's ``delta``) and tool-call deltas without an ``index``;
- a non-stream request's deadline falling while a stream answering it is relayed;
- lone surrogates in ``model`` or ``id`` echoed into a streamed refusal;
- a 204 labelled ``text/event-stream``;
- the query string, which must reach the upstream still percent-encoded.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from yarl import URL

from proxy.errors import UpstreamTimeout, error_middleware, start_response
from proxy.serving.server import RunningServer
from shields.openai.errors import MalformedReply
from shields.openai.reply import choice_message, reply_fields
from tests.conftest import ProxyFactory
from tests.support.constants import DONE, REFUSAL, USER
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    chunk,
    error_body,
    json_bytes,
    sse,
)

MakeClient = Callable[..., openai.AsyncOpenAI]

BANNED = "synthesize sarin"  # blocked on input and output by policies/default.yaml
SSE_HEADERS = {"content-type": "text/event-stream"}

# One redacting shield with a short hold-back, to see redaction reach the new text channels.
REDACT_POLICY = """
version: 1
name: redact
stream: {holdback_chars: 17}  # "synthesize sarin" and a character of look-ahead
output:
  - id: weapons
    type: denylist
    phrases: ["synthesize sarin"]
    action: block
  - id: codes
    type: regex
    patterns: ['SECRET-[0-9]{4}']
    action: redact
    placeholder: "[X]"
"""


def chat_body(**extra: Any) -> dict[str, Any]:
    return {"model": "fake-model", "messages": USER, **extra}


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, body: dict[str, Any] | bytes
) -> tuple[int, str, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        asyncio.timeout(8),
        http.post(
            f"{proxy.url}/v1/chat/completions",
            data=data,
            headers={"Content-Type": "application/json"},
        ) as resp,
    ):
        return resp.status, resp.headers.get("x-shieldgate-blocked", ""), await resp.read()


def events(raw: bytes) -> list[Any]:
    """A proxy stream parsed strictly: ``data: X`` events only, ending with [DONE]."""
    assert raw.endswith(DONE), raw[-200:]
    out = []
    for event in raw[: -len(DONE)].split(b"\n\n")[:-1]:
        assert event.startswith(b"data: ") and b"\n" not in event, event[:200]
        out.append(json.loads(event[len(b"data: ") :]))
    return out


def in_band_error(raw: bytes) -> dict[str, Any]:
    """The error of a stream that ended with one (its last event before [DONE])."""
    parsed = events(raw)
    assert parsed and "error" in parsed[-1], raw[-300:]
    assert not any("error" in event for event in parsed[:-1])
    error: dict[str, Any] = parsed[-1]["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def refused(raw: bytes) -> bool:
    return any(
        choice.get("finish_reason") == "content_filter"
        for event in events(raw)
        for choice in event.get("choices") or []
    )


def assert_openai_error(raw: bytes, status: int, got: int) -> dict[str, Any]:
    assert got == status, raw[:300]
    error: dict[str, Any] = json.loads(raw)["error"]
    assert isinstance(error["message"], str) and error["message"]
    return error


# ---- 1. an in-band error with choices beside it ---------------------------------------------


@pytest.mark.parametrize(
    "choices",
    [[], [{"index": 0, "delta": {"content": "ECHOED-TEXT"}, "finish_reason": None}]],
    ids=["empty-choices", "choices-with-text"],
)
async def test_a_stream_error_event_with_choices_ends_in_the_proxys_own_error(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    choices: list[Any],
) -> None:
    reported = {"error": {"message": f"echo ECHOED-TEXT {BANNED}"}, "choices": choices}
    upstream.enqueue(Reply(events=[chunk({"role": "assistant", "content": "hello "}), reported]))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    assert b"ECHOED-TEXT" not in raw and BANNED.encode() not in raw
    error = in_band_error(raw)
    assert (error["type"], error["code"]) == ("upstream_error", "upstream_error")
    assert error["message"] == "The upstream reported an error mid-stream"


async def test_the_sdk_sees_an_error_event_with_choices_as_an_error(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    reported = {"error": {"message": f"echo {BANNED}"}, "choices": []}
    upstream.enqueue(Reply(events=[chunk({"content": "hello "}), reported]))
    client = make_client(await make_proxy())

    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert BANNED not in str(caught.value)


# ---- 2. a 2xx JSON reply that reports an error -----------------------------------------------


async def test_a_200_reply_with_a_blocked_error_message_is_a_502_without_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes({"error": {"message": f"Sure: {BANNED} at home"}})))
    client = make_client(await make_proxy())

    with pytest.raises(openai.APIStatusError) as caught:
        await client.chat.completions.create(model="m", messages=USER)

    assert caught.value.status_code == 502
    assert BANNED not in caught.value.response.text
    assert "withheld" in caught.value.message


async def test_a_200_reply_with_a_string_error_and_choices_is_a_generic_502(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=json_bytes({"error": f"how to {BANNED}", "choices": []})))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body())

    error = assert_openai_error(raw, 502, status)
    assert BANNED.encode() not in raw
    assert error["type"] == "upstream_error"


async def test_a_200_reply_with_an_allowed_error_keeps_it_and_drops_the_choices(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The error's message passes the shields; the choice beside it, never read, must not go.
    reply = chat_completion(BANNED, extra=error_body("Rate limit reached"))
    upstream.enqueue(Reply(body=json_bytes(reply)))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body())

    error = assert_openai_error(raw, 502, status)
    assert error["message"] == "Rate limit reached"
    assert BANNED.encode() not in raw and b"choices" not in raw


# ---- 5. text in fields that were not read ---------------------------------------------------


def audio_reply(transcript: str) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "audio": {"id": "audio_1", "data": "", "expires_at": 1, "transcript": transcript},
    }
    return chat_completion(choices=[{"index": 0, "message": message, "finish_reason": "stop"}])


async def test_a_blocked_audio_transcript_is_refused(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(audio_reply(f"Here is how to {BANNED}."))))
    client = make_client(await make_proxy())

    reply = await client.chat.completions.with_raw_response.create(model="m", messages=USER)

    assert reply.headers["x-shieldgate-blocked"] == "output"
    assert BANNED not in reply.http_response.text
    completion = reply.parse()
    assert completion.choices[0].message.content == REFUSAL
    assert completion.choices[0].finish_reason == "content_filter"


async def test_an_audio_transcript_is_redacted_in_place(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(audio_reply("The code is SECRET-1234, keep it."))))
    client = make_client(await make_proxy(REDACT_POLICY))

    completion = await client.chat.completions.create(model="m", messages=USER)

    audio = completion.choices[0].message.audio
    assert audio is not None and audio.transcript == "The code is [X], keep it."
    assert audio.id == "audio_1"


def audio_events(text: str, piece: int = 3) -> list[dict[str, Any] | str | bytes]:
    parts = [text[i : i + piece] for i in range(0, len(text), piece)]
    out: list[dict[str, Any] | str | bytes] = [
        chunk({"role": "assistant", "audio": {"id": "audio_1"}})
    ]
    out += [chunk({"audio": {"transcript": part}}) for part in parts]
    out.append(chunk({"audio": {"data": "AAAA", "expires_at": 1}}))
    out.append(chunk({}, finish_reason="stop"))
    return out


async def test_a_blocked_phrase_split_across_streamed_transcript_deltas_never_leaks(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    text = "Well then. Here is how to " + BANNED + " in three steps."
    upstream.enqueue(Reply(events=audio_events(text)))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    assert refused(raw)
    # Not even a piece of the phrase: every transcript delta that left came before it.
    sent = "".join(
        (choice["delta"].get("audio") or {}).get("transcript") or ""
        for event in events(raw)
        for choice in event["choices"]
    )
    assert text.startswith(sent) and len(sent) <= text.index(BANNED)
    assert b"sarin" not in raw and b"synth" not in raw


async def test_a_streamed_transcript_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    text = "Your code: SECRET-4321. Read it back slowly, please, to be sure."
    upstream.enqueue(Reply(events=audio_events(text)))
    client = make_client(await make_proxy(REDACT_POLICY))

    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    transcript = ""
    async for event in stream:
        for choice in event.choices:
            audio = getattr(choice.delta, "audio", None)
            transcript += (audio.transcript if audio is not None else None) or ""

    assert transcript == text.replace("SECRET-4321", "[X]")


MISPLACED_JSON = {
    "choice-text": {"index": 0, "text": f"how to {BANNED}", "finish_reason": "stop"},
    "choice-delta": {"index": 0, "delta": {"content": BANNED}, "finish_reason": "stop"},
    "text-beside-message": {
        "index": 0,
        "message": {"role": "assistant", "content": "fine"},
        "text": BANNED,
        "finish_reason": "stop",
    },
}


@pytest.mark.parametrize("choice", list(MISPLACED_JSON.values()), ids=list(MISPLACED_JSON))
async def test_reply_text_outside_the_message_is_a_502(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    choice: dict[str, Any],
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=[choice]))))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body())

    error = assert_openai_error(raw, 502, status)
    assert BANNED.encode() not in raw
    assert error["code"] == "upstream_error"


MISPLACED_STREAM = {
    "choice-message": {"index": 0, "message": {"content": f"how to {BANNED}"}},
    "choice-text": {"index": 0, "text": f"how to {BANNED}"},
    "text-beside-delta": {"index": 0, "delta": {"content": "fine"}, "text": BANNED},
}


@pytest.mark.parametrize("choice", list(MISPLACED_STREAM.values()), ids=list(MISPLACED_STREAM))
async def test_stream_text_outside_the_delta_ends_in_an_error_event(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    choice: dict[str, Any],
) -> None:
    events_ = [chunk({"role": "assistant", "content": ""}), {"choices": [choice]}]
    upstream.enqueue(Reply(events=[*events_, chunk({}, finish_reason="stop")]))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    assert BANNED.encode() not in raw
    assert "invalid stream event" in in_band_error(raw)["message"]


# A repeated key: the proxy reads the last value, a client's parser may keep the first.
DUPLICATE_REPLY = (
    b'{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"how to ' + BANNED.encode() + b'",'
    b'"content":"fine"},"finish_reason":"stop"}]}'
)


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
async def test_a_reply_with_a_repeated_key_is_a_502_without_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, spaced: bool
) -> None:
    body = DUPLICATE_REPLY.replace(b'","', b'", "') if spaced else DUPLICATE_REPLY
    upstream.enqueue(Reply(body=body))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body())

    error = assert_openai_error(raw, 502, status)
    assert BANNED.encode() not in raw and b"content" not in raw
    assert "same key twice" in error["message"]


async def test_a_stream_event_with_a_repeated_key_ends_in_an_error_event(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    repeated = (
        '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
        f'"delta":{{"content":"how to {BANNED}","content":"fine"}},"finish_reason":null}}]}}'
    )
    events_ = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hi"}), repeated]
    upstream.enqueue(Reply(events=[*events_, chunk({}, finish_reason="stop")]))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    assert BANNED.encode() not in raw
    assert "invalid stream event" in in_band_error(raw)["message"]


async def test_empty_misplaced_fields_are_no_reason_to_fail() -> None:
    assert choice_message({"message": {"content": "a"}, "text": "", "delta": None}, stream=False)
    assert choice_message({"delta": {"content": "a"}, "message": {}}, stream=True)


def tool_delta(arguments: str, **call: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [{**call, "function": {"arguments": arguments}}]})


@pytest.mark.parametrize(
    "calls",
    [
        # One call split across deltas, the continuation without an index.
        [
            tool_delta("how to synth", index=0, id="c1", type="function"),
            tool_delta("esize sarin now"),
        ],
        # Two calls in one delta without indexes, then a continuation: by list position the
        # continuation would join the first call and the phrase be checked in halves.
        [
            chunk(
                {
                    "tool_calls": [
                        {"id": "a", "function": {"name": "f", "arguments": "x"}},
                        {"id": "b", "function": {"name": "g", "arguments": "how to synth"}},
                    ]
                }
            ),
            tool_delta("esize sarin"),
        ],
    ],
    ids=["continuation-without-index", "two-calls-without-index"],
)
async def test_a_streamed_tool_call_without_an_index_fails_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    calls: list[dict[str, Any] | str | bytes],
) -> None:
    upstream.enqueue(Reply(events=[*calls, chunk({}, finish_reason="tool_calls")]))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, chat_body(stream=True))

    assert status == 200
    assert b"esize sarin" not in raw and b"synth" not in raw
    assert "integer `index`" in in_band_error(raw)["message"]


def test_tool_call_indexes_are_required_in_streams_only() -> None:
    calls = [{"function": {"arguments": "{}"}}]
    assert [f.channel for f in reply_fields({"tool_calls": calls}, 0, stream=False)] == [
        (0, "tool_calls", 0)
    ]
    with pytest.raises(MalformedReply):
        list(reply_fields({"tool_calls": calls}, 0, stream=True))
    with pytest.raises(MalformedReply):
        list(reply_fields({"tool_calls": [{"index": True, **calls[0]}]}, 0, stream=True))


def test_audio_transcript_is_a_channel_of_its_own() -> None:
    message = {"content": "hi", "audio": {"id": "a", "transcript": "spoken"}}
    fields = list(reply_fields(message, 2, stream=False))
    assert [(f.channel, f.text) for f in fields] == [
        ((2, "content"), "hi"),
        ((2, "audio"), "spoken"),
    ]
    fields[1].write("[X]")
    assert message["audio"] == {"id": "a", "transcript": "[X]"}
    for bad in ({"audio": "spoken"}, {"audio": {"transcript": 5}}):
        with pytest.raises(MalformedReply):
            list(reply_fields(bad, 0, stream=True))


# ---- 8. a deadline falling after the response started ---------------------------------------


def endless(piece: bytes) -> Callable[[], Iterator[bytes]]:
    def generate() -> Iterator[bytes]:
        while True:
            yield piece

    return generate


@pytest.mark.parametrize(
    "piece",
    [b": ping\n\n", sse(chunk({"content": "more words "}), done=False)],
    ids=["comments", "text"],
)
async def test_a_stream_answering_a_non_stream_request_ends_cleanly_at_its_deadline(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, piece: bytes
) -> None:
    upstream.enqueue(Reply(generate=endless(piece), chunk_delay=0.1, headers=SSE_HEADERS))
    proxy = await make_proxy(request_timeout=1.0)

    started = time.monotonic()
    status, _, raw = await post(http, proxy, chat_body())  # read() returns: the body ended

    assert status == 200
    assert 0.9 < time.monotonic() - started < 4
    assert b"HTTP/1.1" not in raw
    if piece.startswith(b":"):
        raw = raw.replace(b":\n\n", b"")  # comments are relayed without their text
    error = in_band_error(raw)
    assert error["message"] == "The request took longer than 1 s"
    assert await upstream.wait_for_disconnect(2)


async def test_a_non_stream_request_past_its_deadline_before_any_byte_is_still_a_504(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion("late")), delay_before_headers=2))
    proxy = await make_proxy(request_timeout=0.5, read_timeout=5.0, retry_attempts=1)

    status, _, raw = await post(http, proxy, chat_body())

    assert assert_openai_error(raw, 504, status)["code"] == "upstream_timeout"


@pytest.fixture
async def failing_app() -> AsyncIterator[int]:
    """A server with the proxy's error middleware whose handlers fail after starting a reply."""

    async def after_start(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await start_response(request, response)
        await response.write(b"data: {}\n\n")
        raise UpstreamTimeout("The request took longer than 1 s")

    async def after_plain_prepare(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"partial")
        raise RuntimeError("a bug")

    async def started_nothing_written(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await start_response(request, response)
        raise UpstreamTimeout("late")

    app = web.Application(middlewares=[error_middleware(1024)])
    app.router.add_get("/after-start", after_start)
    app.router.add_get("/after-plain-prepare", after_plain_prepare)
    app.router.add_get("/started-nothing-written", started_nothing_written)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield runner.addresses[0][1]
    await runner.cleanup()


@pytest.mark.parametrize(
    "path", ["/after-start", "/after-plain-prepare", "/started-nothing-written"]
)
async def test_an_error_after_the_response_started_aborts_instead_of_a_second_response(
    failing_app: int, path: str
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", failing_app)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    received = b""
    async with asyncio.timeout(3):  # the connection is closed: no hang
        while data := await reader.read(65536):
            received += data
    writer.close()

    assert len(re.findall(rb"HTTP/1\.1 \d{3}", received)) == 1, received
    assert received.startswith(b"HTTP/1.1 200")
    # The body is visibly cut, never complete (the headers alone may end in "0\r\n\r\n":
    # a request id ending in 0).
    body = received.partition(b"\r\n\r\n")[2]
    assert not body.endswith(b"0\r\n\r\n"), body
    assert b"upstream_timeout" not in received and b"internal_error" not in received


# ---- 9. lone surrogates echoed into a streamed refusal --------------------------------------


async def test_a_lone_surrogate_in_the_model_does_not_break_a_streamed_input_refusal(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    body = (
        b'{"model":"m\\ud800","stream":true,"messages":[{"role":"user","content":"'
        + BANNED.encode()
        + b'"}]}'
    )
    proxy = await make_proxy()

    status, blocked, raw = await post(http, proxy, body)

    assert (status, blocked) == (200, "input")
    assert refused(raw)
    assert {event["model"] for event in events(raw)} == {"m\ud800"}
    assert not upstream.requests


async def test_lone_surrogates_in_upstream_ids_do_not_break_a_streamed_output_refusal(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    first = b'{"id":"x\\ud800","model":"\\udfff","choices":[{"index":0,"delta":{"content":"how to '
    upstream.enqueue(Reply(events=[first + BANNED.encode() + b'"}}]}']))
    proxy = await make_proxy(REDACT_POLICY.replace("{holdback_chars: 17}", "{holdback_chars: 32}"))

    status, _, raw = await post(http, proxy, chat_body(stream=True, n=1))

    assert status == 200
    assert BANNED.encode() not in raw
    assert refused(raw)
    assert {(event["id"], event["model"]) for event in events(raw)} == {("x\ud800", "\udfff")}


# ---- 11. a stream on a status without a body ------------------------------------------------


@pytest.mark.parametrize("status", [204, 205])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_an_event_stream_on_a_bodiless_status_is_a_502(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    status: int,
    stream: bool,
) -> None:
    upstream.enqueue(Reply(status=status, headers=SSE_HEADERS))
    proxy = await make_proxy()

    got, _, raw = await post(http, proxy, chat_body(stream=stream))

    error = assert_openai_error(raw, 502, got)
    assert (error["type"], error["code"]) == ("upstream_error", "upstream_error")


# ---- the query string ----------------------------------------------------------------------


async def test_the_query_string_reaches_the_upstream_still_percent_encoded(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    lines: list[bytes] = []
    reply = json_bytes(chat_completion("hi"))

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines.append(head.split(b"\r\n", 1)[0])
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        if length:
            await reader.readexactly(int(length.group(1)))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(reply) + reply
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proxy = await make_proxy(upstream=f"http://127.0.0.1:{port}/v1")
        url = f"{proxy.url}/v1/chat/completions?a=%26b%3Dc&q=%E2%82%AC&p=%2541&s=a+b"
        async with http.post(URL(url, encoded=True), json=chat_body()) as resp:
            assert resp.status == 200
    finally:
        server.close()
        await server.wait_closed()

    assert lines == [b"POST /v1/chat/completions?a=%26b%3Dc&q=%E2%82%AC&p=%2541&s=a+b HTTP/1.1"]
