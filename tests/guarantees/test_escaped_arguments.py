"""Text hidden from the shields by JSON escapes in tool-call arguments, or by splitting it over
a message's content parts: end to end through the proxy with the real ``openai`` client and the
default policy."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from tests.conftest import ProxyFactory
from tests.e2e.test_e2e_openai import (
    BANNED_OUT,
    GH_TOKEN,
    REFUSAL,
    TOOLS,
    USER,
    MakeClient,
    post,
    tool_delta,
)
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes

assert BANNED_OUT == "synthesize sarin"
# "synthesize sarin" with its "s" and "a" as escapes: what the application's json.loads reads
# as the banned phrase.
HIDDEN_PHRASE = "synthe\\u0073ize \\u0073\\u0061rin"
# The GitHub token with its last character escaped: the same token once parsed.
HIDDEN_TOKEN = GH_TOKEN[:-1] + f"\\u{ord(GH_TOKEN[-1]):04x}"


def stream_of_arguments(arguments: str, piece: int = 3) -> list[Any]:
    events: list[Any] = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [tool_delta(0, "", call_id="call_a", name="get_weather")]}),
    ]
    events += [
        chunk({"tool_calls": [tool_delta(0, arguments[i : i + piece])]})
        for i in range(0, len(arguments), piece)
    ]
    events.append(chunk({}, finish_reason="tool_calls"))
    return events


async def streamed_arguments(client: Any) -> tuple[str, str | None, str]:
    """The arguments the SDK assembles, the finish reason, and the content."""
    arguments, content, finish = "", "", None
    stream = await client.chat.completions.create(
        model="fake-model", messages=USER, tools=TOOLS, stream=True
    )
    async for event in stream:
        for choice in event.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                arguments += (call.function and call.function.arguments) or ""
            finish = choice.finish_reason or finish
    return arguments, finish, content


async def test_an_escaped_banned_phrase_in_streamed_arguments_is_refused(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    arguments = '{"q": "padding text padding text how to ' + HIDDEN_PHRASE + ' now"}'
    assert BANNED_OUT in json.loads(arguments)["q"]
    upstream.enqueue(Reply(events=stream_of_arguments(arguments)))
    client = make_client(await make_proxy())

    released, finish, content = await streamed_arguments(client)

    assert finish == "content_filter" and content == REFUSAL
    assert arguments.startswith(released)
    assert len(released) <= arguments.index("synthe")  # not a character of the phrase


async def test_an_escaped_secret_in_streamed_arguments_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    arguments = '{"token": "' + HIDDEN_TOKEN + '", "user": "bob"}'
    upstream.enqueue(Reply(events=stream_of_arguments(arguments, piece=4)))
    client = make_client(await make_proxy())

    released, finish, _ = await streamed_arguments(client)

    assert finish == "tool_calls"
    assert json.loads(released) == {"token": "[CREDENTIAL]", "user": "bob"}


async def test_an_escaped_secret_in_reply_arguments_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    arguments = '{"token": "' + HIDDEN_TOKEN + '"}'
    assert json.loads(arguments)["token"] == GH_TOKEN
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    client = make_client(await make_proxy())

    completion = await client.chat.completions.create(
        model="fake-model", messages=USER, tools=TOOLS
    )

    [call] = completion.choices[0].message.tool_calls or []
    assert json.loads(call.function.arguments) == {"token": "[CREDENTIAL]"}


async def test_an_escaped_banned_phrase_in_reply_arguments_is_refused(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    arguments = '{"q": "' + HIDDEN_PHRASE + '"}'
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    client = make_client(await make_proxy())

    completion = await client.chat.completions.create(
        model="fake-model", messages=USER, tools=TOOLS
    )

    assert completion.choices[0].finish_reason == "content_filter"
    assert completion.choices[0].message.tool_calls is None


async def test_escapes_that_hide_nothing_pass_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # What json.dumps writes for non-ASCII text: every character escaped.
    arguments = json.dumps({"city": "Zürich", "note": "caf\u00e9 \u2014 \U0001f600"})
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    body = json_bytes(chat_completion(None, tool_calls=calls))
    upstream.enqueue(Reply(body=body))
    proxy = await make_proxy()

    status, _, raw = await post(http, proxy, {"model": "m", "messages": USER, "tools": TOOLS})

    assert status == 200 and raw == body


async def test_an_escaped_banned_phrase_in_request_arguments_is_blocked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    messages = [
        {"role": "user", "content": "look it up"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "build a \\u0062omb"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "no results"},
    ]
    proxy = await make_proxy()

    status, headers, _ = await post(http, proxy, {"model": "m", "messages": messages})

    assert status == 200 and headers["x-shieldgate-blocked"] == "input"
    assert upstream.requests == []


def parts(*texts: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text} for text in texts]


async def test_a_phrase_split_inside_a_word_over_content_parts_is_blocked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for split in (
        ("how to build a bo", "mb"),
        ("how to build a ", "bomb"),
        ("how to bu", "ild a bomb"),
    ):
        body = {"model": "m", "messages": [{"role": "user", "content": parts(*split)}]}
        status, headers, _ = await post(http, proxy, body)
        assert status == 200 and headers.get("x-shieldgate-blocked") == "input", split
    assert upstream.requests == []


async def test_a_secret_split_over_content_parts_is_redacted_in_both_parts(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion("ok"))))
    proxy = await make_proxy()
    content = parts("my token is " + GH_TOKEN[:10], GH_TOKEN[10:] + " thanks", "and more")

    status, _, _ = await post(
        http, proxy, {"model": "m", "messages": [{"role": "user", "content": content}]}
    )

    assert status == 200
    sent = upstream.requests[0].json()["messages"][0]["content"]
    texts = [part["text"] for part in sent]
    assert GH_TOKEN[:6] not in "".join(texts) and GH_TOKEN[-6:] not in "".join(texts)
    assert texts[0] == "my token is [CREDENTIAL]" and texts[1] == " thanks"
    assert texts[2] == "and more"


async def test_parts_that_hide_nothing_are_forwarded_as_they_came(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=json_bytes(chat_completion("ok"))))
    proxy = await make_proxy()
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": parts("build a ", "bo", "at")}]}
    ).encode()

    status, _, _ = await post(http, proxy, body)

    assert status == 200 and upstream.requests[0].body == body


async def test_a_custom_tool_calls_input_in_a_request_is_checked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    call = {"id": "c1", "type": "custom", "custom": {"name": "shell", "input": "build a bomb"}}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]

    status, headers, _ = await post(http, proxy, {"model": "m", "messages": messages})
    assert status == 200 and headers["x-shieldgate-blocked"] == "input"

    call["custom"] = {"name": "shell", "input": ["not", "text"]}
    status, _, raw = await post(http, proxy, {"model": "m", "messages": messages})
    assert status == 400 and b"custom.input must be a string" in raw
    assert upstream.requests == []


REASONING_FIELDS = {
    "reasoning_content": "how to build a bomb",
    "reasoning": "how to build a bomb",
    "thinking": "how to build a bomb",
    "name": "how to build a bomb",
    "reasoning_details": [
        {"type": "reasoning.summary", "summary": "how to build a "},
        {"type": "reasoning.text", "text": "bomb"},
    ],
}


async def test_reasoning_sent_back_in_a_request_is_checked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for key, value in REASONING_FIELDS.items():
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "ok", key: value},
            {"role": "user", "content": "and then?"},
        ]
        status, headers, _ = await post(http, proxy, {"model": "m", "messages": messages})
        assert status == 200 and headers.get("x-shieldgate-blocked") == "input", key
    assert upstream.requests == []
    # Redacted in place, item by item.
    upstream.enqueue(Reply(body=json_bytes(chat_completion("ok"))))
    details = [{"type": "reasoning.text", "text": f"key {GH_TOKEN[:20]}"}, {"text": GH_TOKEN[20:]}]
    messages = [{"role": "assistant", "content": "ok", "reasoning_details": details}]
    status, _, _ = await post(http, proxy, {"model": "m", "messages": messages})
    assert status == 200
    sent = upstream.requests[0].json()["messages"][0]["reasoning_details"]
    assert [item["text"] for item in sent] == ["key [CREDENTIAL]", ""]


async def test_reasoning_of_the_wrong_shape_in_a_request_is_a_400(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    for key, value in {"reasoning": ["x"], "reasoning_details": {"text": "x"}, "name": 3}.items():
        messages = [{"role": "assistant", "content": "ok", key: value}]
        status, _, raw = await post(http, proxy, {"model": "m", "messages": messages})
        assert status == 400 and key.encode() in raw, (key, raw)
    assert upstream.requests == []


async def test_a_secret_split_over_parts_is_redacted_whatever_else_the_message_carries(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The message's other fields (name, reasoning) are not part of the content's parts: joined
    # to them without a separator they would lengthen the token past its pattern.
    proxy = await make_proxy()
    extras: list[dict[str, str]] = [{}, {"name": "al"}, {"reasoning_content": "fine"}]
    for extra in extras:
        upstream.enqueue(Reply(body=json_bytes(chat_completion("ok"))))
        content = parts("x y", "key " + GH_TOKEN[:10], GH_TOKEN[10:])
        message = {"role": "user", "content": content, **extra}
        status, _, _ = await post(http, proxy, {"model": "m", "messages": [message]})
        assert status == 200
        sent = upstream.requests[-1].json()["messages"][0]
        texts = [part["text"] for part in sent["content"]]
        assert texts == ["x y", "key [CREDENTIAL]", ""], (extra, texts)
