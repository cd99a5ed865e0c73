"""Text that a client joins is checked joined: content parts and ``reasoning_details`` items of
one choice, in whole replies and streams; and the Responses translation never joins text that
was checked apart (two reasoning keys, choices or tool calls claiming one index)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import REPO_ROOT, USER
from tests.support.fake_upstream import FakeUpstream, Reply, chunk, json_bytes

PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
EMAIL = "jane.doe@example.org"


def completion(*choices: dict[str, Any]) -> bytes:
    return json_bytes(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": list(choices),
        }
    )


def choice(message: dict[str, Any], index: int = 0) -> dict[str, Any]:
    return {"index": index, "message": {"role": "assistant", **message}, "finish_reason": "stop"}


def text_parts(*texts: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text} for text in texts]


async def chat(proxy: RunningServer, http: aiohttp.ClientSession, stream: bool = False) -> bytes:
    body = {"model": "m", "messages": USER, "stream": stream}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        return await resp.read()


async def responses_output(
    proxy: RunningServer, http: aiohttp.ClientSession, stream: bool
) -> list[dict[str, Any]]:
    body = {"model": "m", "input": "hi", "stream": stream, "store": False}
    async with http.post(f"{proxy.url}/v1/responses", json=body) as resp:
        assert resp.status == 200
        raw = await resp.read()
    if not stream:
        output: list[dict[str, Any]] = json.loads(raw)["output"]
        return output
    datas = [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    final = json.loads(datas[-1])
    assert final["type"] == "response.completed", final
    output = final["response"]["output"]
    return output


SPLIT_REPLIES = {
    "content parts split inside a word": {"content": text_parts("how to build a bo", "mb")},
    "reasoning_details items": {
        "content": "ok",
        "reasoning_details": [
            {"type": "reasoning.summary", "summary": "how to build a "},
            {"type": "reasoning.text", "text": "bomb"},
        ],
    },
}


async def test_a_phrase_split_over_the_parts_of_a_whole_reply_is_refused(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for name, message in SPLIT_REPLIES.items():
        upstream.enqueue(Reply(body=completion(choice(message))))
        raw = await chat(proxy, http)
        assert b"bomb" not in raw and b"content_filter" in raw, name


async def test_a_phrase_split_over_parts_in_one_delta_is_refused(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for name, delta in SPLIT_REPLIES.items():
        events = [chunk({"role": "assistant"}), chunk(delta), chunk({}, finish_reason="stop")]
        upstream.enqueue(Reply(events=events))
        raw = await chat(proxy, http, stream=True)
        assert b"bomb" not in raw and b"content_filter" in raw, name


async def test_an_email_split_over_two_parts_is_redacted_in_both(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    parts = text_parts("write to jane.doe@exa", "mple.org today", " or later")
    upstream.enqueue(Reply(body=completion(choice({"content": parts}))))
    proxy = await make_proxy(PII_POLICY)

    raw = await chat(proxy, http)

    texts = [part["text"] for part in json.loads(raw)["choices"][0]["message"]["content"]]
    assert texts == ["write to [EMAIL]", " today", " or later"]


def output_texts(output: list[dict[str, Any]]) -> str:
    return json.dumps(output)


async def test_responses_never_joins_two_reasoning_keys(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    message = {"content": "ok", "reasoning_content": "how to build a ", "reasoning": "bomb"}
    for stream in (False, True):
        upstream.enqueue(Reply(body=completion(choice(message))))
        output = await responses_output(proxy, http, stream)
        [reasoning] = [item for item in output if item["type"] == "reasoning"]
        assert reasoning["content"] == [{"type": "reasoning_text", "text": "how to build a "}]
    # A stream whose deltas alternate keys: the first key is the reasoning.
    deltas = [{"reasoning_content": "how to build a "}, {"reasoning": "bomb"}, {"content": "ok"}]
    events = [chunk({"role": "assistant"}), *map(chunk, deltas), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events))
    output = await responses_output(proxy, http, stream=True)
    assert "bomb" not in output_texts(output) and "how to build a " in output_texts(output)


async def test_responses_reads_a_json_reply_as_the_output_stage_read_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    # Two choices claiming index 0: only the first is the answer.
    two = completion(choice({"content": "how to build a "}), choice({"content": "bomb"}, index=0))
    # Two tool calls claiming index 0: two calls, never one joined call.
    calls = [
        {
            "index": 0,
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": '{"q": "how to build a '},
        },
        {
            "index": 0,
            "id": "c2",
            "type": "function",
            "function": {"name": "g", "arguments": 'bomb"}'},
        },
    ]
    for stream in (False, True):
        upstream.enqueue(Reply(body=two))
        output = await responses_output(proxy, http, stream)
        assert "bomb" not in output_texts(output)
        upstream.enqueue(Reply(body=completion(choice({"content": None, "tool_calls": calls}))))
        output = await responses_output(proxy, http, stream)
        assert [item["name"] for item in output] == ["f", "g"]
        assert [item["arguments"] for item in output] == ['{"q": "how to build a ', 'bomb"}']
