"""Two ways blocked text once reached clients: indices a client maps elsewhere than the guard,
and the parts of an upstream error body no shield read.

Indices. The stream guard keeps one channel per choice ``index`` and tool-call ``index``; the
SDK's ``ChatCompletionStreamState`` assembles lists (a first chunk's choices and a first delta's
calls by position, later ones by index: ``-1`` is the last entry, an index past the end is
appended) and a ``choices[0]`` loop reads positions. An index they could map differently — not
an integer, negative, past the request's ``n``, skipping one that has not come yet, named twice
in one list, or past 127 tool calls — fails the stream closed (an in-band ``upstream_error``,
then ``[DONE]``), on the bulk path too; in a whole reply an index that is no possible position
is a 502. On the Responses API alike.

Error bodies. Every string of a relayed upstream error body — ``param``, ``code``, ``type``,
``metadata.raw``, sibling keys, the keys themselves — goes through the output shields: a
blocked string is withheld, a redaction made in place, and a body that cannot be relayed field
by field (a flagged key, a key twice) becomes a generic error of its status.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.exchange.refusal import StreamContext
from proxy.serving.server import RunningServer
from proxy.stream.guard import GuardState, StreamGuard
from proxy.stream.sse import SSEDecoder
from shields.policy import parse_policy
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED, USER
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse

MakeClient = Callable[..., openai.AsyncOpenAI]

POLICY = """
version: 1
name: leaks
stream: {holdback_chars: 32}
output:
  - id: weapons
    type: denylist
    phrases: ["build a bomb"]
    action: block
  - id: codes
    type: regex
    patterns: ['SECRET-[0-9]{4}']
    action: redact
    placeholder: "[X]"
"""


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> RunningServer:
    return await make_proxy(POLICY, responses_db=str(tmp_path / "responses.sqlite3"))


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, path: str, body: dict[str, Any] | bytes
) -> tuple[int, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-test"}
    async with asyncio.timeout(8), http.post(f"{proxy.url}{path}", data=data, headers=headers) as r:
        return r.status, await r.read()


def data_events(raw: bytes) -> list[bytes]:
    return [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]


def choice(delta: dict[str, Any], index: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}


def event(*choices: dict[str, Any]) -> dict[str, Any]:
    body = chunk({})
    body["choices"] = list(choices)
    return body


def call(index: Any, arguments: str, name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
        return {"index": index, "id": f"call_{name}", "type": "function", "function": function}
    return {"index": index, "function": function}


async def sdk_view(client: openai.AsyncOpenAI, **extra: Any) -> tuple[str, bool]:
    """Everything the SDK's stream state assembled (each snapshot as JSON), and whether the
    stream ended in an error."""
    seen: list[str] = []
    try:
        async with client.chat.completions.stream(model="m", messages=USER, **extra) as stream:
            async for update in stream:
                if update.type == "chunk":
                    seen.append(update.snapshot.model_dump_json())
    except openai.APIError:
        return "".join(seen), True
    return "".join(seen), False


# ---- 1. choice indices in a stream ------------------------------------------------------------

FIRST = choice({"role": "assistant", "content": "how to build a "}, 0)

CHOICE_CASES: dict[str, tuple[int, list[dict[str, Any]]]] = {
    # The SDK's state indexes its list: -1 is the last choice, the one the phrase began in.
    "negative": (1, [event(FIRST), event(choice({"content": "bomb"}, -1))]),
    "past-n": (1, [event(FIRST), event(choice({"content": "bomb"}, 1))]),
    "far-past-n": (1, [event(FIRST), event(choice({"content": "bomb"}, 2**40))]),
    # Choice 1 first: the SDK takes it as its list's first entry, where choice 0 then goes.
    "skipping": (
        2,
        [
            event(choice({"role": "assistant", "content": "how to build a "}, 1)),
            event(choice({"content": "bomb"}, 0)),
        ],
    ),
    # Two entries for choice 0 in the first chunk: the SDK's list has the second at position
    # 1, where choice 1 then goes.
    "twice-in-one-event": (
        2,
        [
            event(choice({"role": "assistant", "content": "ok"}, 0), FIRST),
            event(choice({"content": "bomb"}, 1)),
        ],
    ),
}


@pytest.mark.parametrize("case", CHOICE_CASES)
async def test_a_choice_index_a_client_maps_elsewhere_fails_the_stream_closed(
    upstream: FakeUpstream,
    proxy: RunningServer,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    case: str,
) -> None:
    n, events = CHOICE_CASES[case]
    events = [*events, chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events), Reply(events=events))

    seen, failed = await sdk_view(make_client(proxy), n=n)
    assert failed and BANNED not in seen

    status, raw = await post(
        http, proxy, "/v1/chat/completions", {"messages": USER, "stream": True, "n": n}
    )
    assert status == 200 and BANNED.split()[-1].encode() not in raw
    *_, error, done = data_events(raw)
    assert json.loads(error)["error"]["code"] == "upstream_error" and done == b"[DONE]"


# ---- 2. tool-call indices in a stream ---------------------------------------------------------

OPEN = '{"q": "how to build a '
TOOL_CASES: dict[str, list[list[dict[str, Any]]]] = {
    "negative": [[call(0, OPEN, "f")], [call(-1, 'bomb"}')]],
    # Call 2 before call 1: the SDK appends it at position 1, where call 1 then goes.
    "skipping": [[call(0, "{}", "f")], [call(2, OPEN, "g")], [call(1, 'bomb"}')]],
    # Two entries for call 0 in a first delta: the SDK keeps the second at position 1.
    "twice-in-one-delta": [[call(0, "{}", "f"), call(0, OPEN)], [call(1, 'bomb"}', "g")]],
    "past-the-limit": [[call(i, "{}", f"f{i}")] for i in range(129)],
}


@pytest.mark.parametrize("case", TOOL_CASES)
async def test_a_tool_call_index_a_client_maps_elsewhere_fails_the_stream_closed(
    upstream: FakeUpstream,
    proxy: RunningServer,
    make_client: MakeClient,
    http: aiohttp.ClientSession,
    case: str,
) -> None:
    events: list[Any] = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"tool_calls": calls}) for calls in TOOL_CASES[case]]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events), Reply(events=events))

    seen, failed = await sdk_view(make_client(proxy))
    assert failed and BANNED not in seen.replace('\\"', "")

    status, raw = await post(
        http, proxy, "/v1/chat/completions", {"messages": USER, "stream": True}
    )
    assert status == 200
    *_, error, done = data_events(raw)
    assert json.loads(error)["error"]["code"] == "upstream_error" and done == b"[DONE]"


async def test_tool_calls_in_order_up_to_the_limit_pass_and_one_more_fails(
    upstream: FakeUpstream, proxy: RunningServer, make_client: MakeClient
) -> None:
    calls = [[call(i, f'{{"n": {i}}}', f"f{i}")] for i in range(128)]
    events: list[Any] = [chunk({"tool_calls": batch}) for batch in calls]
    events.append(chunk({"tool_calls": [call(1, "")]}))  # an open call continues
    upstream.enqueue(Reply(events=[*events, chunk({}, finish_reason="tool_calls")]))
    async with make_client(proxy).chat.completions.stream(model="m", messages=USER) as stream:
        final = await stream.get_final_completion()
    assert len(final.choices[0].message.tool_calls or []) == 128

    upstream.enqueue(Reply(events=[*events, chunk({"tool_calls": [call(128, "{}", "g")]})]))
    _, failed = await sdk_view(make_client(proxy))
    assert failed


# ---- 3. the bulk path checks no index of its own: it cannot carry a new one ---------------------


def test_the_bulk_path_hands_an_event_with_another_index_to_the_checked_path() -> None:
    guard = StreamGuard(parse_policy(POLICY), StreamContext(model="m", n=1, include_usage=False))
    decoder = SSEDecoder()
    first = sse(chunk({"role": "assistant"}), *[chunk({"content": "abcd"})] * 200, done=False)
    released = guard.feed_read(decoder, first)
    assert guard.template is not None  # the shape of the text events is learned
    assert bytes(released).count(b"abcd") > 150  # and runs of them leave in bulk

    hostile = [chunk({"content": "abcd"})] * 100 + [chunk({"content": "how to build a "})]
    hostile += [event(choice({"content": "bomb"}, -1))] + [chunk({"content": "abcd"})] * 100
    out = bytes(guard.feed_read(decoder, sse(*hostile)))
    assert guard.state is GuardState.FAILED
    assert b"bomb" not in out and b"build a" not in out
    assert b'"upstream_error"' in out


async def test_a_fast_stream_with_a_negative_index_in_one_read_fails_closed(
    upstream: FakeUpstream, proxy: RunningServer, make_client: MakeClient
) -> None:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": "abcd"})] * 300 + [chunk({"content": " how to build a "})]
    events += [event(choice({"content": "bomb"}, -1)), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(chunks=[sse(*events)]))  # one write: the proxy reads it in bulk

    stream = await make_client(proxy).chat.completions.create(model="m", messages=USER, stream=True)
    text = ""  # what a choices[0] loop shows
    with pytest.raises(openai.APIError):
        async for part in stream:
            if part.choices:
                text += part.choices[0].delta.content or ""
    assert BANNED not in text


# ---- 4. whole replies --------------------------------------------------------------------------


def completion_with(choices: list[dict[str, Any]]) -> bytes:
    return json_bytes(chat_completion(choices=choices))


def whole(content: str | None, index: Any, **message: Any) -> dict[str, Any]:
    return {
        "index": index,
        "message": {"role": "assistant", "content": content, **message},
        "finish_reason": "stop",
    }


async def test_a_whole_reply_with_an_impossible_index_is_a_502(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    two = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    # Allowed: the indices the request asked for, and tool calls labelled with positions.
    allowed = completion_with([whole("hi", 0), whole(None, 1, tool_calls=two)])
    upstream.enqueue(Reply(body=allowed))
    status, raw = await post(http, proxy, "/v1/chat/completions", {"messages": USER, "n": 2})
    assert (status, raw) == (200, allowed)

    hostile = [
        [whole("hi", -1)],
        [whole("hi", 1)],  # n is 1
        [whole("hi", "0")],
        [whole("hi", True)],
        [whole(None, 0, tool_calls=[{**two[0], "index": -1}, two[1]])],
        [whole(None, 0, tool_calls=[two[0], {**two[1], "index": 2}])],
        [whole(None, 0, tool_calls=[{**two[0], "index": False}, two[1]])],
    ]
    for choices in hostile:
        upstream.enqueue(Reply(body=completion_with(choices)))
        status, raw = await post(http, proxy, "/v1/chat/completions", {"messages": USER})
        assert status == 502, (choices, raw[:200])
        assert json.loads(raw)["error"]["code"] == "upstream_error"


# ---- 5. the Responses API ----------------------------------------------------------------------


async def test_responses_fails_on_an_index_it_cannot_map(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    streams = [
        [event(FIRST), event(choice({"content": "bomb"}, 1))],
        [
            chunk({"tool_calls": [call(0, OPEN, "f")]}),
            chunk({"tool_calls": [call(-1, 'bomb"}')]}),
        ],
    ]
    for events in streams:
        upstream.enqueue(Reply(events=[*events, chunk({}, finish_reason="stop")]))
        body = {"model": "m", "input": "hi", "stream": True, "store": False}
        status, raw = await post(http, proxy, "/v1/responses", body)
        assert status == 200 and b"bomb" not in raw
        kinds = [json.loads(data)["type"] for data in data_events(raw)]
        assert kinds[-1] == "response.failed", kinds

    upstream.enqueue(Reply(body=completion_with([whole("hi", -1)])))
    status, raw = await post(http, proxy, "/v1/responses", {"model": "m", "input": "hi"})
    assert status == 502, raw[:200]


# ---- 6. upstream error bodies ------------------------------------------------------------------

PHRASE = f"how to {BANNED}"


def openai_error(**extra: Any) -> dict[str, Any]:
    error = {"message": "Invalid request", "type": "invalid_request_error", "param": None}
    return {"error": {**error, "code": None, **extra}}


ERROR_CASES: dict[str, dict[str, Any]] = {
    "param": openai_error(param=PHRASE),
    "code": openai_error(code=PHRASE),
    "type": openai_error(type=PHRASE),
    "metadata.raw": openai_error(metadata={"raw": f'{{"detail": "{PHRASE}"}}', "provider": "x"}),
    "in a list": openai_error(details=[{"reason": "x"}, {"reason": PHRASE}]),
    "split over two fields": openai_error(param="how to build a", code="bomb"),
    "sibling key": {**openai_error(), "detail": PHRASE},
}


@pytest.mark.parametrize("case", ERROR_CASES)
async def test_every_string_of_an_error_body_is_checked(
    upstream: FakeUpstream, proxy: RunningServer, make_client: MakeClient, case: str
) -> None:
    body = json_bytes(ERROR_CASES[case])
    upstream.enqueue(Reply(status=400, body=body), Reply(status=400, body=body))

    with pytest.raises(openai.BadRequestError) as caught:
        await make_client(proxy).chat.completions.create(model="m", messages=USER)
    raw = caught.value.response.text
    assert "bomb" not in raw
    assert json.loads(raw)["error"]["message"] == "Invalid request"  # passed, so kept
    assert "withheld" in raw

    with pytest.raises(openai.BadRequestError) as caught:
        await make_client(proxy).responses.create(model="m", input="hi")
    assert "bomb" not in caught.value.response.text


async def test_an_error_body_with_a_flagged_key_or_a_key_twice_is_a_generic_error(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    flagged_key = json_bytes(openai_error(metadata={PHRASE: 1}))
    twice = b'{"error":{"message":"how to build a bomb","message":"fine","type":"x"}}'
    for body in (flagged_key, twice):
        upstream.enqueue(Reply(status=422, body=body))
        status, raw = await post(http, proxy, "/v1/chat/completions", {"messages": USER})
        assert status == 422 and b"bomb" not in raw
        assert json.loads(raw)["error"]["type"] == "upstream_error"


async def test_an_error_body_is_redacted_in_place(
    upstream: FakeUpstream, proxy: RunningServer, http: aiohttp.ClientSession
) -> None:
    body = openai_error(
        message="bad key SECRET-1234",
        code="SECRET-9999",
        metadata={"raw": "upstream said SECRET-4321 here", "n": 3},
    )
    upstream.enqueue(Reply(status=401, body=json_bytes(body)))
    status, raw = await post(http, proxy, "/v1/chat/completions", {"messages": USER})
    assert status == 401
    assert json.loads(raw) == openai_error(
        message="bad key [X]", code="[X]", metadata={"raw": "upstream said [X] here", "n": 3}
    )


async def test_a_2xx_reply_reporting_an_error_has_every_string_checked(
    upstream: FakeUpstream, proxy: RunningServer, make_client: MakeClient
) -> None:
    body = {"error": {"message": "overloaded", "metadata": {"raw": PHRASE}}, "choices": []}
    upstream.enqueue(Reply(body=json_bytes(body)))
    with pytest.raises(openai.APIStatusError) as caught:
        await make_client(proxy).chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == 502
    assert "bomb" not in caught.value.response.text
    assert json.loads(caught.value.response.text)["error"]["message"] == "overloaded"
