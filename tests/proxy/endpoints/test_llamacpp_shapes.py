"""End to end: the shapes a real llama.cpp server (llama-cpp-python's) sends, and what they broke.

- A streamed tool call carries the call twice in every delta, as the legacy ``function_call``
  and as ``tool_calls[0]``, repeating the name and id each time (``: ping`` comments between
  events, no usage chunk): the Responses API turns it into one ``function_call`` item, and fails
  closed when the two copies disagree or a stream mixes them (the guard checks them apart).
- Returning a tool result: the assistant turn carrying ``tool_calls`` has ``content: ""``, never
  ``null`` (which llama.cpp answers with a 500).
- A block after some text was sent: the refusal is set apart by a blank line (chat and
  Responses streams), and the Responses API's final response lists every item it streamed.

The fake upstream sends the bytes of ``tests.support.fake_upstream.llamacpp_tool_chunks``; clients
are
the official ``openai`` SDK, or plain aiohttp where the exact events matter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.proxy.endpoints.test_responses import (
    BANNED_OUT,
    MODEL,
    REFUSAL,
    WEATHER_TOOL,
    final_of,
    stream_events,
    types,
    upstream_body,
    validated,
)
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chunk,
    json_bytes,
    llamacpp_tool_chunks,
    llamacpp_tool_completion,
    sse,
    usage_chunk,
)

MakeClient = Callable[..., openai.AsyncOpenAI]
ARGUMENTS = '{"city": "Paris"}'
PIECES = ['{"ci', 'ty": ', '"Par', 'is"}']
CALL_ID = "call__0_get_weather_cmpl-xyz"
TOOLS: Any = [WEATHER_TOOL]
PREAMBLE = "Here is a long and harmless answer that goes on for a while. " * 6  # > hold-back
SEPARATOR = "\n\n"


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, tmp_path: Path) -> Callable[..., Any]:
    async def start(policy: Any = None, /, **settings: Any) -> RunningServer:
        settings.setdefault("responses_db", str(tmp_path / "responses.sqlite3"))
        return await make_proxy(policy, **settings)

    return start


def llamacpp_reply(pieces: list[str] = PIECES, *, chunk_delay: float = 0.0) -> Reply:
    return Reply(
        chunks=llamacpp_tool_chunks("get_weather", pieces),
        headers={"content-type": "text/event-stream"},
        chunk_delay=chunk_delay,
    )


def dumped(item: Any) -> Any:
    """An SDK item as JSON, without the fields the SDK's parsing helpers add (``parsed``)."""
    return json.loads(item.model_dump_json(exclude_none=True))


def calls_of(output: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (item["call_id"], item["name"], item["arguments"], item["status"])
        for item in output
        if item["type"] == "function_call"
    ]


# ---- 1. tool calls: function_call and tool_calls in one delta ---------------------------------


async def test_a_llamacpp_tool_call_stream_is_one_function_call_item(
    upstream: FakeUpstream, proxy: Callable[..., Any], http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(llamacpp_reply())
    server = await proxy()

    _, got = await stream_events(http, server, input="Weather in Paris?", tools=TOOLS)

    assert "failed" not in types(got)
    added = [e["item"] for e in got if e["type"] == "response.output_item.added"]
    assert [(item["type"], item["name"]) for item in added] == [("function_call", "get_weather")]
    deltas = [e["delta"] for e in got if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == PIECES  # each piece once, though every delta carried it twice
    final = final_of(got)
    assert final["status"] == "completed"
    assert calls_of(final["output"]) == [(CALL_ID, "get_weather", ARGUMENTS, "completed")]
    assert final["usage"] is None  # the server ignores include_usage: nothing to count


@pytest.mark.parametrize("helper", ["create", "stream"])
async def test_a_llamacpp_tool_call_with_the_sdk(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient, helper: str
) -> None:
    upstream.enqueue(llamacpp_reply(), llamacpp_reply())
    client = make_client(await proxy())

    if helper == "create":
        response = await client.responses.create(model=MODEL, input="Weather?", tools=TOOLS)
        events = [
            e
            async for e in await client.responses.create(
                model=MODEL, input="Weather?", tools=TOOLS, stream=True
            )
        ]
        assert events[-1].type == "response.completed"
        streamed = events[-1].response
    else:
        async with client.responses.stream(model=MODEL, input="Weather?", tools=TOOLS) as s:
            events = [e async for e in s]
            response = await s.get_final_response()
        async with client.responses.stream(model=MODEL, input="Weather?", tools=TOOLS) as s:
            streamed = await s.get_final_response()
    for final in (response, streamed):
        [call] = validated(final).output
        assert call.type == "function_call"
        assert (call.call_id, call.name, call.arguments) == (CALL_ID, "get_weather", ARGUMENTS)
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [e.arguments for e in done] == [ARGUMENTS]


async def test_a_llamacpp_json_reply_with_both_call_shapes(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    # A server that ignores "stream": true answers with one chat.completion carrying both.
    reply = Reply(body=json_bytes(llamacpp_tool_completion("get_weather", ARGUMENTS)))
    upstream.enqueue(reply)
    client = make_client(await proxy())

    response = await client.responses.create(model=MODEL, input="Weather?", tools=TOOLS)

    [call] = validated(response).output
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments) == (CALL_ID, "get_weather", ARGUMENTS)


async def test_a_legacy_function_call_alone_is_call_index_0(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    events = [chunk({"role": "assistant", "content": None})]
    events += [chunk({"function_call": {"name": "get_weather", "arguments": p}}) for p in PIECES]
    events.append(chunk({}, finish_reason="function_call"))
    upstream.enqueue(Reply(events=events))
    client = make_client(await proxy())

    response = await client.responses.create(model=MODEL, input="Weather?", tools=TOOLS)

    [call] = validated(response).output
    assert call.type == "function_call"
    assert (call.name, call.arguments, call.status) == ("get_weather", ARGUMENTS, "completed")
    assert call.call_id.startswith("call_")


def _other_arguments(i: int, piece: str) -> dict[str, Any]:
    return {"name": "get_weather", "arguments": piece.upper()}


def _other_name(i: int, piece: str) -> dict[str, Any]:
    return {"name": "delete_files", "arguments": piece}


def _legacy_only_first(i: int, piece: str) -> dict[str, Any] | None:
    return {"name": "get_weather", "arguments": piece} if i == 0 else None


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(
            llamacpp_tool_chunks("get_weather", PIECES, legacy=_other_arguments), id="arguments"
        ),
        pytest.param(llamacpp_tool_chunks("get_weather", PIECES, legacy=_other_name), id="name"),
        pytest.param(
            # The name repeated in each delta must be the same name.
            [
                sse(chunk({"tool_calls": [call]}), done=False)
                for call in (
                    {"index": 0, "id": "c", "function": {"name": "get_weather", "arguments": ""}},
                    {"index": 0, "id": "c", "function": {"name": "rm_rf", "arguments": "{}"}},
                )
            ]
            + [sse(chunk({}, finish_reason="tool_calls"))],
            id="renamed",
        ),
    ],
)
async def test_call_copies_that_disagree_fail_closed(
    upstream: FakeUpstream, proxy: Callable[..., Any], http: aiohttp.ClientSession, events: Any
) -> None:
    reply = Reply(chunks=events, headers={"content-type": "text/event-stream"})
    upstream.enqueue(llamacpp_reply(), reply, reply)
    server = await proxy()

    # Copies that agree make one call...
    _, agreeing = await stream_events(http, server, input="Weather?", tools=TOOLS)
    assert calls_of(final_of(agreeing)["output"]) == [
        (CALL_ID, "get_weather", ARGUMENTS, "completed")
    ]
    # ...copies that do not, no call at all.
    _, got = await stream_events(http, server, input="Weather?", tools=TOOLS)

    assert got[-1]["type"] == "response.failed"
    message = got[-1]["response"]["error"]["message"]
    assert message.startswith("The upstream sent an invalid stream event"), message
    assert "rm_rf" not in json.dumps(got) and "delete_files" not in json.dumps(got)
    async with http.post(
        f"{server.url}/v1/responses",
        json={"model": MODEL, "input": "Weather?", "tools": TOOLS},
        headers={"Authorization": "Bearer sk-client"},
    ) as resp:
        assert resp.status == 502


def _legacy(arguments: str, name: str | None = None) -> dict[str, Any]:
    function = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
    return chunk({"function_call": function})


def _tool(arguments: str, name: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
    if name is not None:
        call |= {"id": "call_1", "type": "function", "function": {**call["function"], "name": name}}
    return chunk({"tool_calls": [call]})


@pytest.mark.parametrize("first, then", [(_legacy, _tool), (_tool, _legacy)])
async def test_a_phrase_split_between_the_two_call_shapes_is_never_joined(
    upstream: FakeUpstream,
    proxy: Callable[..., Any],
    http: aiohttp.ClientSession,
    first: Callable[..., dict[str, Any]],
    then: Callable[..., dict[str, Any]],
) -> None:
    # The guard checks `function_call` and `tool_calls` as two texts: one half of a banned
    # phrase in each passes both; the translation must not join them into one item.
    arguments = json.dumps({"note": BANNED_OUT})
    half = arguments.index("sarin")
    end = chunk({}, finish_reason="tool_calls")
    whole = [first(ARGUMENTS[:5], name="get_weather"), first(ARGUMENTS[5:]), end]
    mixed = [first(arguments[:half], name="get_weather"), then(arguments[half:]), end]
    upstream.enqueue(llamacpp_reply(), Reply(events=whole), Reply(events=mixed))
    server = await proxy()

    # Both shapes in each delta, the same call twice, make a call; so does either alone...
    _, both = await stream_events(http, server, input="go", tools=TOOLS)
    assert calls_of(final_of(both)["output"]) == [(CALL_ID, "get_weather", ARGUMENTS, "completed")]
    _, alone = await stream_events(http, server, input="go", tools=TOOLS)
    [(_, name, sent, status)] = calls_of(final_of(alone)["output"])
    assert (name, sent, status) == ("get_weather", ARGUMENTS, "completed")
    # ...the two mixed in one stream fail it.
    _, got = await stream_events(http, server, input="go", tools=TOOLS)

    assert got[-1]["type"] == "response.failed"
    assert "sarin" not in json.dumps(got)


async def test_a_banned_phrase_in_a_llamacpp_tool_call_is_refused(
    upstream: FakeUpstream, proxy: Callable[..., Any], http: aiohttp.ClientSession
) -> None:
    arguments = json.dumps({"note": PREAMBLE + BANNED_OUT + " then more" * 30})
    pieces = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    upstream.enqueue(llamacpp_reply(pieces, chunk_delay=0.001))  # a read per event
    server = await proxy()

    _, got = await stream_events(http, server, input="go", tools=TOOLS)

    assert "sarin" not in json.dumps(got)
    final = final_of(got)
    assert [item["type"] for item in final["output"]] == ["function_call", "message"]
    call = final["output"][0]
    assert call["status"] == "incomplete" and arguments.startswith(call["arguments"])
    assert call["arguments"] and call["name"] == "get_weather"
    # No answer text was sent before the block: the refusal needs no separator.
    assert final["output"][1]["content"] == [{"type": "refusal", "refusal": REFUSAL}]


# ---- 2. returning a tool result ------------------------------------------------------------


async def test_a_tool_result_round_trip_never_sends_null_content(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    final_answer = Reply(events=[chunk({"content": "Sunny."}), chunk({}, finish_reason="stop")])
    upstream.enqueue(llamacpp_reply(), final_answer, final_answer)
    client = make_client(await proxy())

    first = await client.responses.create(model=MODEL, input="Weather in Paris?", tools=TOOLS)
    [call] = first.output
    assert call.type == "function_call"
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
    second = await client.responses.create(
        model=MODEL, previous_response_id=first.id, tools=TOOLS, input=[output]
    )
    # The same turn sent whole, without a stored response.
    stateless = await client.responses.create(
        model=MODEL,
        tools=TOOLS,
        store=False,
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            output,
        ],
    )

    assert second.output_text == stateless.output_text == "Sunny."
    expected = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": CALL_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ARGUMENTS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": CALL_ID, "content": "sunny"},
    ]
    assert upstream_body(upstream, 1)["messages"] == expected
    assert upstream_body(upstream, 2)["messages"] == expected


# ---- 3. the refusal is set apart from text already sent ---------------------------------------


def blocked_after(prefix: str) -> list[Any]:
    # The banned phrase follows ``prefix`` at once (it used to follow "and then ", which the
    # fixed window always held; the adaptive hold-back may send it), so what may be released
    # before the block is exactly a prefix of ``prefix``, and nothing with ``prefix`` "".
    text = prefix + BANNED_OUT + " by mixing the following precursors"
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + 4]}) for i in range(0, len(text), 4)]
    return [*events, chunk({}, finish_reason="stop"), usage_chunk()]


async def chat_stream(client: openai.AsyncOpenAI, **kwargs: Any) -> dict[int, str]:
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Tell me"}], stream=True, **kwargs
    )
    texts: dict[int, str] = {}
    async for got in stream:
        for choice in got.choices:
            texts[choice.index] = texts.get(choice.index, "") + (choice.delta.content or "")
    return texts


async def test_a_chat_refusal_after_released_text_starts_with_a_blank_line(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(events=blocked_after(PREAMBLE), chunk_delay=0.001), Reply(events=blocked_after(""))
    )
    client = make_client(await proxy())

    [content] = (await chat_stream(client)).values()
    released, refusal = content.split(SEPARATOR)
    assert released and PREAMBLE.startswith(released)  # some text passed before the block
    assert refusal == REFUSAL

    # Nothing passed before the block: the refusal alone.
    assert await chat_stream(client) == {0: REFUSAL}


async def test_only_a_choice_whose_content_was_sent_gets_the_separator(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    events = blocked_after(PREAMBLE)[:-2]
    # Choice 1 speaks late, and its text ends with the start of a banned phrase, so its event
    # is held (events leave whole) and holds back what follows (events leave in order) while
    # choice 0 has already sent part of its answer. (It said "Hi", held by the fixed window;
    # the adaptive hold-back need not hold that.)
    events.insert(len(events) // 2, chunk({"content": "Let me synth"}, index=1))
    upstream.enqueue(Reply(events=events, chunk_delay=0.001))
    client = make_client(await proxy())

    texts = await chat_stream(client, n=2)

    assert texts[0].endswith(SEPARATOR + REFUSAL)
    assert PREAMBLE.startswith(texts[0].removesuffix(SEPARATOR + REFUSAL))
    assert texts[1] == REFUSAL


# ---- 3 and 4. the Responses API: separator, and every streamed item in the final response ----


async def test_a_responses_block_mid_stream_keeps_every_streamed_item(
    upstream: FakeUpstream, proxy: Callable[..., Any], make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(events=blocked_after(PREAMBLE), chunk_delay=0.001),
        Reply(events=[chunk({"content": "k"})]),
        Reply(events=blocked_after(PREAMBLE), chunk_delay=0.001),
        Reply(events=blocked_after("")),
    )
    client = make_client(await proxy())

    async with client.responses.stream(model=MODEL, input="Tell me") as helper:
        events = [e async for e in helper]
        final = validated(await helper.get_final_response())

    released = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert released and PREAMBLE.startswith(released)
    [refusal_delta] = [e.delta for e in events if e.type == "response.refusal.delta"]
    assert refusal_delta == SEPARATOR + REFUSAL
    # The final response describes every item the client was sent, at the index it was sent.
    done = {e.output_index: e.item for e in events if e.type == "response.output_item.done"}
    added = [
        (e.output_index, e.item.type) for e in events if e.type == "response.output_item.added"
    ]
    assert added == [(0, "message"), (1, "message")]
    assert [dumped(item) for item in final.output] == [dumped(done[0]), dumped(done[1])]
    partial, refusal = final.output
    assert partial.type == refusal.type == "message"
    assert partial.status == "incomplete"
    assert partial.content[0].type == "output_text" and partial.content[0].text == released
    assert refusal.content[0].type == "refusal"
    assert refusal.content[0].refusal == SEPARATOR + REFUSAL
    assert final.output_text == released  # output_text reads only the answer's text

    # The stored response is the same object.
    stored = await client.responses.retrieve(final.id)
    assert dumped(stored) == dumped(final)
    # A continued conversation carries the refusal, not the text the block cut short.
    await client.responses.create(model=MODEL, previous_response_id=final.id, input="Why?")
    assert upstream_body(upstream)["messages"] == [
        {"role": "user", "content": "Tell me"},
        {"role": "assistant", "content": REFUSAL},
        {"role": "user", "content": "Why?"},
    ]

    # A non-stream client was sent nothing before the block: the refusal alone, as for a
    # blocked chat reply, and stored as answered.
    response = validated(await client.responses.create(model=MODEL, input="Tell me"))
    [refusal] = response.output
    assert refusal.type == "message" and refusal.content[0].type == "refusal"
    assert refusal.content[0].refusal == REFUSAL
    assert dumped(await client.responses.retrieve(response.id)) == dumped(response)

    # A block before any answer text was sent: no separator, no other item.
    async with client.responses.stream(model=MODEL, input="Tell me") as helper:
        events = [e async for e in helper]
        final = validated(await helper.get_final_response())
    assert "response.output_text.delta" not in [e.type for e in events]
    assert [e.delta for e in events if e.type == "response.refusal.delta"] == [REFUSAL]
    [refusal] = final.output
    assert refusal.type == "message" and refusal.content[0].type == "refusal"
    assert refusal.content[0].refusal == REFUSAL
