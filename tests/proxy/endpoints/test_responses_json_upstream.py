"""The Responses API over an upstream that ignores ``"stream": true`` and answers in JSON.

``POST /v1/responses`` always asks the upstream for a stream. Some servers answer with one
``chat.completion`` all the same: the proxy checks it whole with the output stage (as
``/v1/chat/completions`` checks a non-stream reply) and translates it into the response object
or the full Responses event sequence, with the official ``openai`` client on the other end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.proxy.endpoints.test_responses import (
    BANNED_OUT,
    EMPTY_POLICY,
    ERROR_STYLE_POLICY,
    GH_TOKEN,
    MODEL,
    REFUSAL,
    MakeClient,
    Proxy,
    final_of,
    parse_events,
    post,
    squeeze,
    types,
    validated,
)
from tests.support.constants import REPO_ROOT
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, json_bytes

PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
EMAIL = "jane.doe@example.org"

TEXT_SEQUENCE = [
    "created",
    "in_progress",
    "output_item.added",
    "content_part.added",
    "output_text.delta",
    "output_text.done",
    "content_part.done",
    "output_item.done",
    "completed",
]
REFUSAL_SEQUENCE = [
    "created",
    "in_progress",
    "output_item.added",
    "content_part.added",
    "refusal.delta",
    "refusal.done",
    "content_part.done",
    "output_item.done",
    "completed",
]


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> Proxy:
    async def start(policy: Any = None, /, **settings: Any) -> RunningServer:
        settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
        return await make_proxy(policy, **settings)

    return start


def json_reply(content: str | None, **kwargs: Any) -> Reply:
    """One ``chat.completion``, sent as ``application/json`` to the streaming request."""
    return Reply(body=json_bytes(chat_completion(content, **kwargs)))


async def stream_raw(
    http: aiohttp.ClientSession, server: RunningServer, text: str = "hi"
) -> tuple[Any, bytes, list[dict[str, Any]]]:
    status, headers, raw = await post(http, server, {"model": MODEL, "input": text, "stream": True})
    assert status == 200, raw
    assert headers["content-type"].startswith("text/event-stream")
    return headers, raw, parse_events(raw)


def output_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


# ---- allowed replies ---------------------------------------------------------------------


async def test_a_clean_json_reply_becomes_the_response_object(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(json_reply("Hello from JSON, wörld €"))
    server = await proxy()
    client = make_client(server)

    raw = await client.responses.with_raw_response.create(model=MODEL, input="hi")

    assert raw.http_response.status_code == 200
    assert upstream.requests[-1].json()["stream"] is True  # it was asked for a stream
    response = validated(raw.parse())
    assert response.status == "completed"
    assert response.output_text == "Hello from JSON, wörld €"
    [message] = response.output
    assert message.type == "message" and message.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (5, 7)
    # Stored like any other response.
    async with http.get(
        f"{server.url}/v1/responses/{response.id}", headers={"Authorization": "Bearer sk-client"}
    ) as got:
        assert got.status == 200
        assert await got.json() == json.loads(raw.http_response.content)


async def test_a_clean_json_reply_becomes_the_whole_event_sequence(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(json_reply("Streamed from JSON."), json_reply("And via the helper."))
    server = await proxy()

    _, _, events = await stream_raw(http, server)
    assert squeeze(types(events)) == TEXT_SEQUENCE
    assert output_text(events) == "Streamed from JSON."
    assert final_of(events)["usage"]["total_tokens"] == 12

    client = make_client(server)
    async with client.responses.stream(model=MODEL, input="hi") as helper:
        seen = [event.type async for event in helper]
        final = await helper.get_final_response()
    assert seen[0] == "response.created" and seen[-1] == "response.completed"
    assert validated(final).output_text == "And via the helper."


async def test_tool_calls_and_reasoning_in_a_json_reply_are_translated(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    completion = chat_completion(
        "Let me check.",
        tool_calls=[
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    )
    # After the content, as some servers order a message's keys: still the first item.
    completion["choices"][0]["message"]["reasoning_content"] = "The user wants weather."
    upstream.enqueue(Reply(body=json_bytes(completion)))
    client = make_client(await proxy())

    response = validated(await client.responses.create(model=MODEL, input="weather?"))

    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    assert response.output_text == "Let me check."
    call = response.output[2]
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments) == (
        "call_a",
        "get_weather",
        '{"city": "Paris"}',
    )


# ---- output shields ----------------------------------------------------------------------


async def test_a_banned_phrase_in_a_json_reply_is_refused(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    bad = f"Sure: to {BANNED_OUT}, mix the precursors."
    upstream.enqueue(json_reply(bad), json_reply(bad), json_reply(bad))
    server = await proxy()
    client = make_client(server)

    raw = await client.responses.with_raw_response.create(model=MODEL, input="tell me")
    assert raw.http_response.status_code == 200
    assert raw.headers["x-shieldgate-blocked"] == "output"
    assert b"sarin" not in raw.http_response.content
    [message] = validated(raw.parse()).output
    assert message.model_dump(mode="json")["content"] == [{"type": "refusal", "refusal": REFUSAL}]

    headers, body, events = await stream_raw(http, server)
    assert headers["x-shieldgate-blocked"] == "output"
    assert b"sarin" not in body
    assert types(events) == REFUSAL_SEQUENCE
    assert final_of(events)["output"][0]["content"] == [{"type": "refusal", "refusal": REFUSAL}]

    async with client.responses.stream(model=MODEL, input="tell me") as helper:
        got = [event async for event in helper]
        final = await helper.get_final_response()
    assert not any(e.type == "response.output_text.delta" for e in got)
    assert validated(final).model_dump(mode="json")["output"][0]["content"] == [
        {"type": "refusal", "refusal": REFUSAL}
    ]


async def test_a_blocked_json_reply_under_refusal_style_error_is_a_400(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    bad = f"Sure: to {BANNED_OUT}, mix the precursors."
    upstream.enqueue(json_reply(bad), json_reply(bad))
    client = make_client(await proxy(ERROR_STYLE_POLICY))

    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model=MODEL, input="tell me", stream=stream)
        assert caught.value.code == "content_filter"
        assert "sarin" not in caught.value.response.text


async def test_pii_in_a_json_reply_is_redacted(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient, http: aiohttp.ClientSession
) -> None:
    text = f"Write to {EMAIL} for a refund."
    upstream.enqueue(json_reply(text), json_reply(text))
    server = await proxy(PII_POLICY)
    client = make_client(server)

    raw = await client.responses.with_raw_response.create(model=MODEL, input="who do I ask?")
    assert "x-shieldgate-blocked" not in raw.headers
    assert EMAIL.encode() not in raw.http_response.content
    assert validated(raw.parse()).output_text == "Write to [EMAIL] for a refund."

    _, body, events = await stream_raw(http, server)
    assert EMAIL.encode() not in body
    assert output_text(events) == "Write to [EMAIL] for a refund."
    assert final_of(events)["output"][0]["content"][0]["text"] == "Write to [EMAIL] for a refund."


async def test_a_secret_in_a_json_reply_is_redacted_by_the_default_policy(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    upstream.enqueue(json_reply(f"Use {GH_TOKEN} to log in."))
    client = make_client(await proxy())

    response = await client.responses.create(model=MODEL, input="token?")

    assert response.output_text == "Use [CREDENTIAL] to log in."


# ---- fail closed -------------------------------------------------------------------------


MALFORMED = {
    "not JSON": b'{"choices": [{"message": {"content": "synthesize sar',
    "not an object": b'["synthesize sarin"]',
    "a message that is not an object": json_bytes(
        {"object": "chat.completion", "choices": [{"index": 0, "message": ["synthesize sarin"]}]}
    ),
    "a choices that is not a list": json_bytes(
        {"object": "chat.completion", "choices": {"message": {"content": "synthesize sarin"}}}
    ),
    # A client's parser might keep the first of two values: the one no shield read.
    "a repeated key": b'{"object":"chat.completion","choices":[{"index":0,"message":'
    b'{"role":"assistant","content":"synthesize sarin","content":"fine"}}]}',
}


@pytest.mark.parametrize("policy", [None, EMPTY_POLICY], ids=["default", "no shields"])
@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_json_reply_fails_closed(
    upstream: FakeUpstream,
    proxy: Proxy,
    http: aiohttp.ClientSession,
    body: bytes,
    policy: str | None,
) -> None:
    upstream.enqueue(
        *[Reply(body=body, headers={"content-type": "application/json"}) for _ in range(2)]
    )
    server = await proxy(policy)

    for stream in (False, True):
        status, headers, raw = await post(
            http, server, {"model": MODEL, "input": "hi", "stream": stream}
        )
        assert status == 502, raw
        assert headers["content-type"].startswith("application/json")
        assert b"sarin" not in raw
        assert json.loads(raw)["error"]["message"].startswith(
            "The upstream sent a reply that cannot be checked"
        )


async def test_a_json_reply_reporting_an_error_is_a_502_with_the_error_alone(
    upstream: FakeUpstream, proxy: Proxy, make_client: MakeClient
) -> None:
    body = {"error": {"message": "model overloaded", "type": "server_error"}, "choices": []}
    upstream.enqueue(Reply(body=json_bytes(body)))
    client = make_client(await proxy())

    with pytest.raises(openai.InternalServerError) as caught:
        await client.responses.create(model=MODEL, input="hi")

    assert caught.value.status_code == 502
    assert caught.value.response.json() == {"error": body["error"]}
