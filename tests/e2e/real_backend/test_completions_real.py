"""``/v1/completions`` through shieldgate in front of a real llama.cpp server.

llama.cpp's server (llama-cpp-python's, serving SmolLM2-135M) answers a legacy completion as
OpenAI does: a ``text_completion`` whose choices carry ``text``, ``index``, ``logprobs`` and
``finish_reason``; a stream is one such chunk per token (``"logprobs": null`` unless asked
for), then a chunk with an empty text and the finish reason, then ``[DONE]``. It ignores ``n``,
serves ``suffix`` and ``echo`` (the prompt is echoed in a whole reply only, not in a stream),
and answers a list of prompts or token ids with a 500.

With greedy decoding the model says the same thing every time, so what a user compares is
compared: the same request sent directly and through the proxy gives the same completion, the
same events (but their ids and timestamps), and a word of the model's own answer, banned,
never reaches the client.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import openai
import pytest

from proxy.demo.llama_server import LlamaServer
from proxy.serving.server import RunningServer

Guarded = Callable[..., Awaitable[RunningServer]]

PROMPT = "The capital of France is"
PARAMS: dict[str, Any] = {"max_tokens": 16, "temperature": 0}
REFUSAL = "Blocked by the real-backend test policy."
GH_TOKEN = "ghp_W4nQ8zR2kL7vT5yB9cX3mH6jF1sD0aGe2uPo"


def banning_policy(word: str) -> str:
    return f"""
version: 1
name: real-completions
refusal: {{message: "{REFUSAL}"}}
output:
  - {{id: banned, type: denylist, phrases: ["{word}"]}}
"""


def client_for(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-local", max_retries=0, timeout=120)


async def streamed_text(stream: Any) -> tuple[str, str | None]:
    text, finish = "", None
    async for chunk in stream:
        for choice in chunk.choices:
            text += choice.text
            finish = choice.finish_reason or finish
    return text, finish


async def test_a_completion_is_the_same_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    params = {"model": llama.model, "prompt": PROMPT, "logprobs": 2, **PARAMS}
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await direct.completions.create(**params)
        got = await via.completions.create(**params)
    assert expected.choices[0].text
    assert got.choices[0].text == expected.choices[0].text
    assert got.choices[0].finish_reason == expected.choices[0].finish_reason
    assert got.choices[0].logprobs == expected.choices[0].logprobs


async def test_a_streamed_completion_is_the_same_events_direct_and_through_the_proxy(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    body = {"model": llama.model, "prompt": PROMPT, "stream": True, "logprobs": 1, **PARAMS}

    async def events(base_url: str) -> list[Any]:
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{base_url}/completions", json=body) as resp,
        ):
            assert resp.status == 200
            raw = await resp.read()
        out = []
        for event in raw.split(b"\n\n"):
            if event:
                data = (
                    json.loads(event.removeprefix(b"data: ")) if b"[DONE]" not in event else "DONE"
                )
                if isinstance(data, dict):
                    data.pop("id"), data.pop("created")  # differ from one request to the next
                out.append(data)
        return out

    expected = await events(llama.base_url)
    got = await events(f"{proxy.url}/v1")
    assert len(expected) > 3 and expected[-1] == "DONE"
    assert got == expected


async def test_the_sdk_stream_gives_the_same_text_as_direct(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    params = {"model": llama.model, "prompt": PROMPT, "stream": True, **PARAMS}
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await streamed_text(await direct.completions.create(**params))
        got = await streamed_text(await via.completions.create(**params))
    assert expected[0]
    assert got == expected


@pytest.mark.parametrize(
    "extra",
    [{"echo": True}, {"suffix": "\n\nprint(add(1, 2))"}, {"stop": ["."]}, {"best_of": 1}],
    ids=["echo", "suffix", "stop", "best_of"],
)
async def test_echo_suffix_and_stop_pass_as_they_would_directly(
    llama: LlamaServer, guarded: Guarded, extra: dict[str, Any]
) -> None:
    proxy = await guarded()
    prompt = "def add(a, b):" if "suffix" in extra else PROMPT
    params = {"model": llama.model, "prompt": prompt, **PARAMS, **extra}
    async with client_for(llama.base_url) as direct, client_for(f"{proxy.url}/v1") as via:
        expected = await direct.completions.create(**params)
        got = await via.completions.create(**params)
    assert got.choices[0].text == expected.choices[0].text
    if extra.get("echo"):
        assert got.choices[0].text.startswith(PROMPT)


async def test_a_credential_in_the_prompt_never_reaches_the_model(
    llama: LlamaServer, guarded: Guarded
) -> None:
    proxy = await guarded()
    async with client_for(f"{proxy.url}/v1") as via:
        reply = await via.completions.create(
            model=llama.model,
            prompt=f"My token is {GH_TOKEN} and",
            echo=True,  # the model's echo shows the prompt as it received it
            max_tokens=4,
            temperature=0,
        )
    text = reply.choices[0].text
    assert text.startswith("My token is [CREDENTIAL] and")
    assert GH_TOKEN not in text


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_word_of_the_models_own_answer_never_reaches_the_client(
    llama: LlamaServer, guarded: Guarded, stream: bool
) -> None:
    async with client_for(llama.base_url) as direct:
        answer = await direct.completions.create(model=llama.model, prompt=PROMPT, **PARAMS)
    text = answer.choices[0].text
    words = re.findall(r"[A-Za-z]{4,}", text)
    assert len(words) >= 2, f"the model's answer is too short to test with: {text!r}"
    word = words[len(words) // 2]
    proxy = await guarded(banning_policy(word))
    async with client_for(f"{proxy.url}/v1") as via:
        if stream:
            received, finish = await streamed_text(
                await via.completions.create(
                    model=llama.model, prompt=PROMPT, stream=True, **PARAMS
                )
            )
            # What the model wrote before the word may have left, then the refusal, set apart.
            assert received.endswith(REFUSAL)
            sent = received[: -len(REFUSAL)].removesuffix("\n\n")
            assert text.startswith(sent)
            assert len(sent) <= text.casefold().index(word.casefold())
        else:
            reply = await via.completions.create(model=llama.model, prompt=PROMPT, **PARAMS)
            received, finish = reply.choices[0].text, reply.choices[0].finish_reason
            assert received == REFUSAL
    assert finish == "content_filter"
    assert word.casefold() not in received.casefold()
