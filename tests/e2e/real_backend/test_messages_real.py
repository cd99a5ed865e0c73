"""The official ``anthropic`` SDK through shieldgate in front of a real llama.cpp server.

The Messages API is served over the server's chat completions: the same request asked directly
as a chat request and through the proxy as a Messages request gives the same answer (greedy
decoding, ``temperature: 0``), streamed and not; a tool call comes back as a ``tool_use`` block
and its ``tool_result`` is a request llama.cpp accepts; a phrase banned for the output never
reaches the client, whichever way it is asked.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import anthropic
import openai
import pytest

from proxy.demo.llama_server import LlamaServer
from proxy.serving.server import RunningServer

Guarded = Callable[..., Awaitable[RunningServer]]

GREETING = "Say hello to Ada in one short sentence."
# Greedy decoding; temperature is no longer a named parameter of this SDK version.
GREEDY: dict[str, Any] = {"extra_body": {"temperature": 0}}
WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
REFUSAL = "Blocked by the real-backend test policy."


def anthropic_for(server: RunningServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-local", max_retries=0, timeout=120
    )


async def direct_answer(llama: LlamaServer, prompt: str, max_tokens: int) -> str:
    async with openai.AsyncOpenAI(
        base_url=llama.base_url, api_key="sk-local", max_retries=0, timeout=120
    ) as direct:
        reply = await direct.chat.completions.create(
            model=llama.model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0,
        )
    return reply.choices[0].message.content or ""


async def test_messages_are_the_chat_answer_create_and_stream(
    llama: LlamaServer, guarded: Guarded
) -> None:
    expected = await direct_answer(llama, GREETING, 24)
    client = anthropic_for(await guarded())
    params: dict[str, Any] = {
        "model": llama.model,
        "max_tokens": 24,
        "messages": [{"role": "user", "content": GREETING}],
        **GREEDY,
    }
    async with client:
        reply = await client.messages.create(**params)
        async with client.messages.stream(**params) as stream:
            streamed = "".join([piece async for piece in stream.text_stream])
            final = await stream.get_final_message()

    assert expected
    assert [block.type for block in reply.content] == ["text"]
    assert reply.content[0].text == expected  # type: ignore[union-attr]
    assert streamed == expected
    assert final.stop_reason == reply.stop_reason
    assert reply.stop_reason in ("end_turn", "max_tokens")
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_tool_use_and_its_result_round_trip(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    """llama.cpp's call (``function_call`` and ``tool_calls`` in every streamed delta) becomes
    one ``tool_use`` block, and sending its result back (the reply's blocks as they came, then
    a ``tool_result``) is a request llama.cpp accepts."""
    client = anthropic_for(await guarded())
    question = {"role": "user", "content": "What is the weather in Paris?"}
    params: dict[str, Any] = {"model": llama.model, "max_tokens": 48, "tools": [WEATHER], **GREEDY}
    force = {"type": "tool", "name": "get_weather"}
    async with client:
        if stream:
            async with client.messages.stream(
                messages=[question], tool_choice=force, **params
            ) as events:
                first = await events.get_final_message()
        else:
            first = await client.messages.create(messages=[question], tool_choice=force, **params)
        calls = [block for block in first.content if block.type == "tool_use"]
        assert [call.name for call in calls] == ["get_weather"]
        assert first.stop_reason == "tool_use"
        assert isinstance(calls[0].input, dict)
        follow_up = await client.messages.create(
            messages=[
                question,
                {"role": "assistant", "content": first.content},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": calls[0].id, "content": "Sunny"}
                    ],
                },
            ],
            **{**params, "max_tokens": 24},
        )
    assert follow_up.content and follow_up.content[0].type in ("text", "tool_use")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_an_output_block_with_a_real_model(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    prompt = "Repeat after me: the quick brown fox jumps over the lazy sleeping dog."
    text = await direct_answer(llama, prompt, 40)
    words = re.findall(r"[A-Za-z]{4,}", text)
    assert len(words) >= 3, f"the model's answer is too short to test with: {text!r}"
    word = words[len(words) // 2]
    policy = f"""
version: 1
name: real-guard
refusal: {{message: "{REFUSAL}"}}
output:
  - {{id: banned, type: denylist, phrases: ["{word}"], action: block}}
"""
    client = anthropic_for(await guarded(policy))
    params: dict[str, Any] = {
        "model": llama.model,
        "max_tokens": 40,
        "messages": [{"role": "user", "content": prompt}],
        **GREEDY,
    }
    async with client:
        if stream:
            async with client.messages.stream(**params) as events:
                received = "".join([piece async for piece in events.text_stream])
                final = await events.get_final_message()
        else:
            final = await client.messages.create(**params)
            received = "".join(b.text for b in final.content if b.type == "text")

    assert word.casefold() not in received.casefold()
    assert received.endswith(REFUSAL)
    assert final.stop_reason == "refusal"
    # What came before the refusal is the model's own text, up to the banned word.
    before = received.removesuffix(REFUSAL).removesuffix("\n\n")
    assert text.startswith(before)
