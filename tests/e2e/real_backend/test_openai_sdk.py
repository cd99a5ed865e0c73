"""The official ``openai`` SDK through shieldgate in front of a real llama.cpp server.

What is compared is what a user compares: the same request sent directly and through the proxy
gives the same answer (greedy decoding, ``temperature=0``, so the model is deterministic), tool
calls included, on chat completions and on the Responses API served over the chat backend.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest

from proxy.demo.llama_server import LlamaServer
from proxy.serving.server import RunningServer

Guarded = Callable[..., Awaitable[RunningServer]]

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# The Responses API's flat form of the same tool.
WEATHER_TOOL_FLAT: dict[str, Any] = {"type": "function", **WEATHER_TOOL["function"]}
FORCE_WEATHER: dict[str, Any] = {"type": "function", "function": {"name": "get_weather"}}
GREETING = [{"role": "user", "content": "Say hello to Ada in one short sentence."}]


def client_for(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-local", max_retries=0, timeout=120)


async def test_chat_reply_is_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    params: dict[str, Any] = {"model": llama.model, "messages": GREETING}
    params.update(max_tokens=24, temperature=0)
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await direct.chat.completions.create(**params)
        got = await via.chat.completions.create(**params)
    assert expected.choices[0].message.content
    assert got.choices[0].message.content == expected.choices[0].message.content
    assert got.choices[0].finish_reason == expected.choices[0].finish_reason


async def test_chat_stream_is_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    params: dict[str, Any] = {"model": llama.model, "messages": GREETING, "stream": True}
    params.update(max_tokens=24, temperature=0)
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await _streamed_text(await direct.chat.completions.create(**params))
        got = await _streamed_text(await via.chat.completions.create(**params))
    assert expected
    assert got == expected


async def _streamed_text(stream: Any) -> str:
    parts = []
    async for event in stream:
        for choice in event.choices:
            parts.append(choice.delta.content or "")
    return "".join(parts)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_chat_tool_call_is_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    proxy = await guarded()
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    params: dict[str, Any] = {"model": llama.model, "messages": messages, "max_tokens": 48}
    params.update(tools=[WEATHER_TOOL], tool_choice=FORCE_WEATHER, temperature=0)
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await _tool_call(direct, params, stream)
        got = await _tool_call(via, params, stream)
    assert expected[0] == "get_weather"
    json.loads(expected[1])  # the model's arguments are JSON (the server's grammar forces it)
    assert got == expected


async def _tool_call(client: openai.AsyncOpenAI, params: dict[str, Any], stream: bool) -> Any:
    """``(name, arguments)`` of the first tool call.

    Streamed, the name is taken from the first delta that carries it: llama.cpp repeats it in
    every delta, and the SDK's stream helpers would join the copies (directly as through the
    proxy, which relays the bytes as they came)."""
    if not stream:
        reply = await client.chat.completions.create(**params)
        call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
        return call.function.name, call.function.arguments  # type: ignore[union-attr]
    name, arguments = None, ""
    async for event in await client.chat.completions.create(stream=True, **params):
        for delta_call in event.choices[0].delta.tool_calls or [] if event.choices else []:
            assert delta_call.index == 0
            function = delta_call.function
            if function is not None:
                name = name or function.name
                arguments += function.arguments or ""
    return name, arguments


async def test_responses_text_through_the_proxy(llama: LlamaServer, guarded: Guarded) -> None:
    proxy = await guarded()
    async with client_for(f"{proxy.url}/v1") as via, client_for(llama.base_url) as direct:
        expected = await direct.chat.completions.create(
            model=llama.model,
            messages=GREETING,
            max_tokens=24,
            temperature=0,  # type: ignore[arg-type]
        )
        reply = await via.responses.create(
            model=llama.model, input=GREETING[0]["content"], max_output_tokens=24, temperature=0
        )
        async with via.responses.stream(
            model=llama.model, input=GREETING[0]["content"], max_output_tokens=24, temperature=0
        ) as events:
            streamed = await events.get_final_response()
    assert reply.status == "completed"
    assert reply.output_text == expected.choices[0].message.content
    assert streamed.output_text == reply.output_text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_responses_tool_call_and_its_result_round_trip(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    """The call llama.cpp streams (``function_call`` and ``tool_calls`` in every delta) becomes a
    ``function_call`` item, and sending its result back (an assistant turn with tool calls and
    no text, then a tool message) is a request llama.cpp accepts."""
    proxy = await guarded()
    params: dict[str, Any] = {"model": llama.model, "max_output_tokens": 48, "temperature": 0}
    params.update(
        tools=[WEATHER_TOOL_FLAT], tool_choice={"type": "function", "name": "get_weather"}
    )
    question = "What is the weather in Paris?"
    async with client_for(f"{proxy.url}/v1") as via:
        if stream:
            async with via.responses.stream(input=question, **params) as events:
                first = await events.get_final_response()
        else:
            first = await via.responses.create(input=question, **params)
        calls = [item for item in first.output if item.type == "function_call"]
        assert [call.name for call in calls] == ["get_weather"]
        json.loads(calls[0].arguments)
        follow_up = await via.responses.create(
            model=llama.model,
            max_output_tokens=24,
            temperature=0,
            tools=[WEATHER_TOOL_FLAT],
            input=[
                {"role": "user", "content": question},
                {
                    "type": "function_call",
                    "call_id": calls[0].call_id,
                    "name": calls[0].name,
                    "arguments": calls[0].arguments,
                },
                {"type": "function_call_output", "call_id": calls[0].call_id, "output": "Sunny"},
            ],
        )
    # The model goes on until max_output_tokens: "incomplete" is llama.cpp's "length".
    assert follow_up.status in ("completed", "incomplete")
    assert follow_up.output_text
