"""Guardrails on a real model's output: a blocked phrase never reaches the client.

A 135M model cannot be told reliably what to say, but with greedy decoding it says the same
thing every time. So each test first asks the model directly, picks a word from the middle of
its answer, bans that word in a policy, and asks again through shieldgate: the model writes the
same answer, and the client must get the text before the word and never the word itself — on
chat completions and the Responses API, stream and not.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest

from proxy.demo.llama_server import LlamaServer
from proxy.serving.server import RunningServer

Guarded = Callable[..., Awaitable[RunningServer]]

PROMPT = "Repeat after me: the quick brown fox jumps over the lazy sleeping dog."
REFUSAL = "Blocked by the real-backend test policy."
PARAMS: dict[str, Any] = {"max_tokens": 40, "temperature": 0}


def banning_policy(word: str) -> str:
    return f"""
version: 1
name: real-guard
refusal: {{message: "{REFUSAL}"}}
output:
  - {{id: banned, type: denylist, phrases: ["{word}"], action: block}}
"""


def client_for(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-local", max_retries=0, timeout=120)


async def model_answer(llama: LlamaServer) -> tuple[str, str]:
    """The model's direct answer to ``PROMPT`` and a word from its middle to ban."""
    async with client_for(llama.base_url) as direct:
        reply = await direct.chat.completions.create(
            model=llama.model, messages=[{"role": "user", "content": PROMPT}], **PARAMS
        )
    text = reply.choices[0].message.content or ""
    words = re.findall(r"[A-Za-z]{4,}", text)
    assert len(words) >= 3, f"the model's answer is too short to test with: {text!r}"
    return text, words[len(words) // 2]


def assert_nothing_of(word: str, received: str) -> None:
    assert word.casefold() not in received.casefold()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_chat_output_block_with_a_real_model(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    answer, word = await model_answer(llama)
    proxy = await guarded(banning_policy(word))
    messages: Any = [{"role": "user", "content": PROMPT}]
    async with client_for(f"{proxy.url}/v1") as via:
        if stream:
            received = ""
            finish = None
            events = await via.chat.completions.create(
                model=llama.model, messages=messages, stream=True, **PARAMS
            )
            async for event in events:
                for choice in event.choices:
                    received += choice.delta.content or ""
                    finish = choice.finish_reason or finish
        else:
            reply = await via.chat.completions.create(
                model=llama.model, messages=messages, **PARAMS
            )
            received = reply.choices[0].message.content or ""
            finish = reply.choices[0].finish_reason
    assert_nothing_of(word, received)
    assert received.endswith(REFUSAL)
    assert finish == "content_filter"
    if stream:
        # What came before the banned word was the model's own text, released as it came.
        released = received[: -len(REFUSAL)].rstrip("\n")
        assert answer.startswith(released)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_responses_output_block_with_a_real_model(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    _, word = await model_answer(llama)
    proxy = await guarded(banning_policy(word))
    params: dict[str, Any] = {"model": llama.model, "input": PROMPT, "temperature": 0}
    params["max_output_tokens"] = PARAMS["max_tokens"]
    async with client_for(f"{proxy.url}/v1") as via:
        if stream:
            streamed = ""
            async with via.responses.stream(**params) as events:
                async for event in events:
                    streamed += event.model_dump_json(warnings=False)
                final = await events.get_final_response()
            assert_nothing_of(word, streamed)
        else:
            final = await via.responses.create(**params)
    assert_nothing_of(word, final.model_dump_json(warnings=False))
    refusals = [
        part.refusal.strip()
        for item in final.output
        if item.type == "message"
        for part in item.content
        if part.type == "refusal"
    ]
    assert refusals == [REFUSAL]
