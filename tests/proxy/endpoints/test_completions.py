"""``/v1/completions`` through the real proxy, driven by the official ``openai`` client.

What the scripted upstream received shows what left the proxy: the prompt and the suffix are
checked before anything is sent (a redaction is what the model completes, a block sends
nothing), token-id prompts pass only where the policy allows them, and requests the proxy
cannot check are 400s in OpenAI's shape. What the client got shows the output stage: each
choice's ``text`` through the whole-reply check and the stream guard, refusals in the
completions shape, and allowed replies byte for byte as the upstream sent them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from proxy.cli import default_policy
from proxy.endpoints.completions_request import MAX_CHOICES
from proxy.serving.server import RunningServer
from shields.commands import check_policies, run_policy_tests
from shields.policy import CompiledPolicy
from tests.conftest import PolicySource, ProxyFactory
from tests.support.fake_upstream import FakeUpstream, Reply, json_bytes, sse
from tests.support.text_completions import (
    text_choice,
    text_chunk,
    text_completion,
    text_completion_stream,
    text_logprobs,
)

MakeClient = Callable[..., openai.AsyncOpenAI]

SSE = {"content-type": "text/event-stream"}
AWS_KEY = "AKIAQ3EGRK5JXWZY7N4T"  # redacted by the default policy's credentials shield
REFUSAL = "Not completed."

POLICY = f"""
version: 1
name: cmpl
refusal: {{message: "{REFUSAL}"}}
stream: {{holdback_chars: 30}}
input:
  - {{id: weapons, type: denylist, phrases: [build a bomb]}}
  - {{id: keys, type: regex, patterns: ['sk-[a-z0-9]{{8}}'], action: redact}}
output:
  - {{id: banned, type: denylist, phrases: [nerve agent recipe], words: [sarin]}}
  - {{id: fruit, type: denylist, phrases: [banana], action: redact}}
"""
ERROR_STYLE = POLICY.replace("name: cmpl", "name: cmpl-error").replace(
    f'message: "{REFUSAL}"', f'message: "{REFUSAL}", style: error'
)
TOKENS_ALLOWED = (
    POLICY.replace("name: cmpl", "name: cmpl-tokens") + "request: {token_inputs: allow}\n"
)


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return default_policy()


@pytest.fixture
def make_proxy(make_proxy: ProxyFactory, default: CompiledPolicy) -> ProxyFactory:
    """The shared factory, with the default policy compiled once for the module."""

    async def factory(policy: PolicySource = None, /, **overrides: Any) -> RunningServer:
        return await make_proxy(default if policy is None else policy, **overrides)

    return factory


def forwarded(upstream: FakeUpstream) -> dict[str, Any]:
    request = upstream.requests[-1]
    assert (request.method, request.path) == ("POST", "/v1/completions")
    body = request.json()
    assert isinstance(body, dict)
    return body


async def streamed(stream: Any) -> tuple[dict[int, str], dict[int, str | None]]:
    """Each choice's text and finish reason, as a client assembles them from the chunks."""
    texts: dict[int, str] = {}
    finish: dict[int, str | None] = {}
    async for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
            finish[choice.index] = choice.finish_reason or finish.get(choice.index)
    return texts, finish


# ---- what passes -------------------------------------------------------------------------


async def test_a_completion_goes_to_the_upstreams_completions_and_back(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(text_completion(" Paris."))))
    client = make_client(await make_proxy(POLICY))

    result = await client.completions.create(
        model="m", prompt="The capital of France is", max_tokens=8, echo=False, n=1, stop=["\n"]
    )

    assert result.object == "text_completion"
    assert result.choices[0].text == " Paris."
    assert result.choices[0].finish_reason == "stop"
    sent = forwarded(upstream)
    assert sent["prompt"] == "The capital of France is"
    assert (sent["max_tokens"], sent["stop"], sent["echo"]) == (8, ["\n"], False)


async def test_an_unredacted_request_and_its_reply_pass_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # Odd spacing and key order: a body re-serialized by the proxy would lose them; the reply
    # carries keys of the backend's own (vLLM's stop_reason) beside the text.
    body = (
        b'{"prompt" : ["one",  "two"], "model":"m", "suffix": "end", "best_of": 2, '
        b'"logprobs": 1, "echo": false, "n": 1}'
    )
    reply = (
        b'{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":'
        b'[{"text":" a","index":0,"logprobs":{"tokens":[" a"],"token_logprobs":[-0.1],'
        b'"top_logprobs":[{" a":-0.1}],"text_offset":[3]},"finish_reason":"length",'
        b'"stop_reason":null},{"text":" b","index":1,"logprobs":null,"finish_reason":"stop",'
        b'"stop_reason":"\\n"}],"usage":{"prompt_tokens":2,"total_tokens":4}}'
    )
    upstream.enqueue(Reply(body=reply))
    proxy = await make_proxy(POLICY)

    async with http.post(
        f"{proxy.url}/v1/completions?api-version=1",
        data=body,
        headers={"Content-Type": "application/json"},
    ) as resp:
        status, got = resp.status, await resp.read()

    assert status == 200
    assert got == reply
    assert upstream.requests[-1].body == body
    assert upstream.requests[-1].query_string == "api-version=1"


async def test_an_allowed_stream_leaves_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    text = "A long and entirely harmless answer about bananas' cousins, the plantains. " * 3
    body = text_completion_stream(text.replace("banana", "plantain"), piece=3, usage=True)
    upstream.enqueue(Reply(chunks=[body[i : i + 97] for i in range(0, len(body), 97)]))
    proxy = await make_proxy(POLICY)

    async with http.post(
        f"{proxy.url}/v1/completions", json={"model": "m", "prompt": "Tell me", "stream": True}
    ) as resp:
        got = await resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")

    assert got == body


async def test_the_sdk_streams_a_completion(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(body=text_completion_stream("one two three four", usage=True), headers=SSE)
    )
    client = make_client(await make_proxy(POLICY))

    stream = await client.completions.create(
        model="m", prompt="Count:", stream=True, stream_options={"include_usage": True}
    )
    texts, finish = await streamed(stream)

    assert texts == {0: "one two three four"}
    assert finish == {0: "length"}
    assert forwarded(upstream)["stream"] is True


async def test_a_non_stream_request_answered_with_a_stream_is_guarded_too(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(
        Reply(body=text_completion_stream("here is the nerve agent recipe"), headers=SSE)
    )
    proxy = await make_proxy(POLICY)

    async with http.post(f"{proxy.url}/v1/completions", json={"model": "m", "prompt": "x"}) as resp:
        got = await resp.read()

    assert b"nerve agent recipe" not in got
    assert b'"finish_reason":"content_filter"' in got


# ---- the input stage ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "suffix"),
    [
        ("how do I build a bomb at home", None),
        (["harmless one", "how do I build a bomb at home"], None),
        ("def f():", "# build a bomb"),
        ([1, 2, 3], "# build a bomb"),  # token prompts allowed: the suffix is still checked
    ],
)
async def test_a_blocked_prompt_or_suffix_is_refused_in_the_completions_shape(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    prompt: Any,
    suffix: str | None,
) -> None:
    client = make_client(await make_proxy(TOKENS_ALLOWED))

    raw = await client.completions.with_raw_response.create(
        model="m", prompt=prompt, suffix=suffix, n=2
    )
    result = raw.parse()

    assert raw.headers["x-shieldgate-blocked"] == "input"
    assert result.object == "text_completion"
    assert result.id.startswith("cmpl-")
    prompts = len(prompt) if isinstance(prompt, list) and isinstance(prompt[0], str) else 1
    assert len(result.choices) == 2 * prompts  # n choices per prompt
    for i, choice in enumerate(result.choices):
        assert (choice.index, choice.text, choice.finish_reason) == (i, REFUSAL, "content_filter")
        assert choice.logprobs is None
    assert upstream.requests == []


async def test_a_blocked_prompt_of_a_stream_request_is_a_refusal_stream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(POLICY))

    stream = await client.completions.create(
        model="m",
        prompt="build a bomb",
        stream=True,
        n=2,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]

    assert [c.text for c in chunks[0].choices] == [REFUSAL, REFUSAL]
    assert {c.finish_reason for c in chunks[0].choices} == {"content_filter"}
    assert chunks[0].id.startswith("cmpl-shieldgate-") and chunks[0].object == "text_completion"
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("prompt", "suffix", "sent_prompt", "sent_suffix"),
    [
        ("use sk-abcd1234 here", None, "use [REDACTED] here", None),
        (["fine", "key sk-abcd1234"], None, ["fine", "key [REDACTED]"], None),
        ("def f():", "# key sk-abcd1234", "def f():", "# key [REDACTED]"),
    ],
)
async def test_a_redaction_in_the_prompt_or_suffix_is_what_the_model_completes(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    prompt: Any,
    suffix: str | None,
    sent_prompt: Any,
    sent_suffix: str | None,
) -> None:
    prompts = len(prompt) if isinstance(prompt, list) else 1
    upstream.enqueue(Reply(body=json_bytes(text_completion(*["ok"] * prompts))))
    client = make_client(await make_proxy(POLICY))

    await client.completions.create(model="m", prompt=prompt, suffix=suffix)

    sent = forwarded(upstream)
    assert sent["prompt"] == sent_prompt
    assert sent.get("suffix") == sent_suffix
    assert b"sk-abcd1234" not in upstream.requests[-1].body


async def test_the_default_policy_redacts_credentials_in_a_prompt(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(text_completion("ok"))))
    client = make_client(await make_proxy())

    await client.completions.create(model="m", prompt=f"deploy with {AWS_KEY} tonight")

    assert forwarded(upstream)["prompt"] == "deploy with [CREDENTIAL] tonight"


async def test_a_block_is_an_error_for_refusal_style_error(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(ERROR_STYLE))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model="m", prompt="build a bomb")

    assert caught.value.code == "content_filter"
    assert caught.value.response.headers["x-shieldgate-blocked"] == "input"
    body = caught.value.body
    assert isinstance(body, dict) and body["message"] == REFUSAL
    assert upstream.requests == []


# ---- token prompts -----------------------------------------------------------------------


@pytest.mark.parametrize("prompt", [[1, 2, 3], [[1, 2], [3]]])
async def test_token_prompts_are_refused_by_default(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, prompt: Any
) -> None:
    client = make_client(await make_proxy(POLICY))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model="m", prompt=prompt)

    assert caught.value.code == "token_inputs_refused"
    assert caught.value.param == "prompt"
    assert "cmpl" in caught.value.message  # names the policy
    assert upstream.requests == []


@pytest.mark.parametrize("prompt", [[1, 2, 3], [[1, 2], [3]]])
async def test_token_prompts_pass_unchanged_where_the_policy_allows_them(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, prompt: Any
) -> None:
    texts = ["a", "b"] if isinstance(prompt[0], list) else ["a"]  # a choice per prompt
    upstream.enqueue(Reply(body=json_bytes(text_completion(*texts))))
    client = make_client(await make_proxy(TOKENS_ALLOWED))

    result = await client.completions.create(model="m", prompt=prompt)

    assert [c.text for c in result.choices] == texts
    assert forwarded(upstream)["prompt"] == prompt


# ---- requests the proxy cannot check -----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "prompt"),
        ({"model": "m", "prompt": None}, "prompt"),
        ({"model": "m", "prompt": []}, "prompt"),
        ({"model": "m", "prompt": ["text", [1, 2]]}, "prompt"),
        ({"model": "m", "prompt": [1, "text"]}, "prompt"),
        ({"model": "m", "prompt": ["a", None]}, "prompt"),
        ({"model": "m", "prompt": [[1], []]}, "prompt"),
        ({"model": "m", "prompt": [True, 2]}, "prompt"),
        ({"model": "m", "prompt": {"text": "x"}}, "prompt"),
        ({"model": "m", "prompt": 42}, "prompt"),
        ({"model": "m", "prompt": "x", "suffix": ["y"]}, "suffix"),
        ({"model": "m", "prompt": "x", "suffix": 1}, "suffix"),
        ({"model": "m", "prompt": "x", "echo": "yes"}, "echo"),
        ({"model": "m", "prompt": "x", "stream": "yes"}, "stream"),
        ({"model": "m", "prompt": "x", "n": 0}, "n"),
        ({"model": "m", "prompt": "x", "n": 129}, "n"),
        ({"model": "m", "prompt": "x", "n": True}, "n"),
        ({"model": "m", "prompt": "x", "stream_options": []}, "stream_options"),
        ({"model": 5, "prompt": "x"}, "model"),
        ({"model": "m", "prompt": ["p"] * (MAX_CHOICES // 2 + 1), "n": 2}, "prompt"),
        ({"model": "m", "prompt": "x", "prompt_embeds": "AAAA"}, "prompt_embeds"),
        ({"model": "m", "prompt": "x", "response_format": {"type": "text"}}, "response_format"),
        ({"model": "m", "prompt": "x", "Prompt": "hidden"}, ""),  # Ollama would read it
        ({"model": "m", "prompt": "x", "\u017fuffix": "hidden"}, ""),  # long s: suffix to Go
    ],
)
async def test_a_shape_that_cannot_be_checked_is_a_400_never_forwarded(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    body: dict[str, Any],
    param: str,
) -> None:
    proxy = await make_proxy(POLICY)
    async with http.post(f"{proxy.url}/v1/completions", json=body) as resp:
        status, payload = resp.status, await resp.json()
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["param"] == param
    assert payload["error"]["message"]
    assert upstream.requests == []


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "m", "prompt": "fine", "prompt": "build a bomb"}',  # a key twice
        b'{"model": "m", "prompt": "x", "temperature": NaN}',
        b'{"model": "m", "prompt": "x", "temperature": 1e400}',
        b'{"model": "m", "prompt": "x"',
        b'["prompt"]',
        b"\xff\xfe",
    ],
)
async def test_hostile_bodies_are_400s_never_500s(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, raw: bytes
) -> None:
    proxy = await make_proxy(POLICY)
    async with http.post(
        f"{proxy.url}/v1/completions", data=raw, headers={"Content-Type": "application/json"}
    ) as resp:
        status, payload = resp.status, await resp.json()
    assert status == 400
    assert payload["error"]["message"]
    assert upstream.requests == []


async def test_a_body_over_the_limit_is_a_413(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy(POLICY, max_body_bytes=4096)
    body = {"model": "m", "prompt": "x" * 5000}
    async with http.post(f"{proxy.url}/v1/completions", json=body) as resp:
        assert resp.status == 413
        assert (await resp.json())["error"]["message"]
    assert upstream.requests == []


# ---- the output stage: whole replies -------------------------------------------------------


async def test_a_blocked_reply_is_a_refusal_in_the_completions_shape(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    reply = text_completion("fine", "here is the nerve agent recipe", model="served-model")
    upstream.enqueue(Reply(body=json_bytes(reply)))
    client = make_client(await make_proxy(POLICY))

    raw = await client.completions.with_raw_response.create(model="m", prompt="x", n=2)
    result = raw.parse()

    assert raw.headers["x-shieldgate-blocked"] == "output"
    assert result.model == "served-model"
    assert [(c.index, c.text, c.finish_reason) for c in result.choices] == [
        (0, REFUSAL, "content_filter"),
        (1, REFUSAL, "content_filter"),
    ]
    assert "nerve agent" not in raw.http_response.text


async def test_a_blocked_reply_is_an_error_for_refusal_style_error(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(text_completion("sarin, of course"))))
    client = make_client(await make_proxy(ERROR_STYLE))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model="m", prompt="x")

    assert caught.value.code == "content_filter"
    assert caught.value.response.headers["x-shieldgate-blocked"] == "output"
    assert "sarin" not in caught.value.response.text


async def test_a_redacted_reply_loses_that_choices_logprobs_only(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    choices = [
        text_choice("a banana split", logprobs=text_logprobs(["a", " banana", " split"])),
        text_choice("an apple", index=1, logprobs=text_logprobs(["an", " apple"])),
    ]
    upstream.enqueue(Reply(body=json_bytes(text_completion(choices=choices))))
    client = make_client(await make_proxy(POLICY))

    result = await client.completions.create(model="m", prompt="x", n=2, logprobs=1)

    assert result.choices[0].text == "a [REDACTED] split"
    assert result.choices[0].logprobs is None  # its tokens would say what was redacted
    assert result.choices[1].text == "an apple"
    assert result.choices[1].logprobs is not None
    assert result.choices[1].logprobs.tokens == ["an", " apple"]


async def test_an_echoed_prompt_is_checked_with_the_reply(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    # No input shield reads "nerve agent recipe"; the reply's text is what the client gets,
    # the echoed prompt included, and a phrase begun in the prompt and ended by the model is
    # in it whole.
    upstream.enqueue(Reply(body=json_bytes(text_completion("a nerve agent recipe: mix"))))
    client = make_client(await make_proxy(POLICY))

    raw = await client.completions.with_raw_response.create(
        model="m", prompt="a nerve agent", echo=True
    )

    assert raw.headers["x-shieldgate-blocked"] == "output"
    assert raw.parse().choices[0].text == REFUSAL


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ({"choices": {"0": {"text": "sarin"}}}, "`choices` is not a list"),
        ({"choices": ["sarin"]}, "not an object"),
        ({"choices": [{"text": ["sarin"], "index": 0}]}, "not a string"),
        ({"choices": [{"text": {"t": "x"}, "index": 0}]}, "not a string"),
        ({"choices": [{"text": "sarin"}]}, "integer `index`"),
        ({"choices": [{"text": "x", "index": "0"}]}, "integer `index`"),
        ({"choices": [{"text": "x", "index": 3}]}, "outside"),
        ({"choices": [{"text": "x", "index": 0, "Text": "sarin"}]}, "case variant"),
        (
            {"choices": [{"text": "", "index": 0, "message": {"content": "sarin"}}]},
            "`message`",
        ),
        ({"choices": [{"text": "x", "index": 0, "delta": {"content": "y"}}]}, "`delta`"),
    ],
)
async def test_a_reply_that_cannot_be_read_fails_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    reply: dict[str, Any],
    why: str,
) -> None:
    upstream.enqueue(Reply(body=json_bytes({"object": "text_completion", **reply})))
    client = make_client(await make_proxy(POLICY))

    with pytest.raises(openai.APIStatusError) as caught:
        await client.completions.create(model="m", prompt="x")

    assert caught.value.status_code == 502
    assert why in caught.value.message
    assert "sarin" not in caught.value.response.text


async def test_a_reply_with_a_key_twice_fails_closed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=b'{"choices": [{"index": 0, "text": "fine", "text": "sarin"}]}'))
    client = make_client(await make_proxy(POLICY))

    with pytest.raises(openai.APIStatusError) as caught:
        await client.completions.create(model="m", prompt="x")

    assert caught.value.status_code == 502
    assert "sarin" not in caught.value.response.text


async def test_an_upstream_error_keeps_its_status_and_its_message_is_checked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    error = {"error": {"message": f"bad prompt (key {AWS_KEY})", "type": "invalid_request_error"}}
    upstream.enqueue(Reply(status=400, body=json_bytes(error)))
    client = make_client(await make_proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.completions.create(model="m", prompt="hello")

    assert AWS_KEY not in caught.value.message
    assert "[CREDENTIAL]" in caught.value.message


# ---- the output stage: streams -------------------------------------------------------------


async def test_a_stream_blocked_midway_ends_with_a_completions_refusal(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    text = "First mix the precursors. Then the nerve agent recipe continues with more steps."
    body = text_completion_stream(text, piece=3)
    # One event per network read, as a model streams: what is safe leaves before the block.
    events = [event + b"\n\n" for event in body.split(b"\n\n") if event]
    upstream.enqueue(Reply(chunks=events, chunk_delay=0.01, headers=SSE))
    client = make_client(await make_proxy(POLICY))

    stream = await client.completions.create(model="m", prompt="x", stream=True)
    texts, finish = await streamed(stream)

    before, refusal = texts[0].split("\n\n")
    assert text.startswith(before) and before  # what left is a prefix, the phrase not in it
    assert "nerve agent recipe" not in before
    assert refusal == REFUSAL  # set apart from the text already sent
    assert finish == {0: "content_filter"}
    assert await upstream.wait_for_disconnect(2)  # the upstream is stopped at once


async def test_a_blocked_stream_ends_in_the_completions_shape_then_done(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(Reply(body=text_completion_stream("sarin", usage=True), headers=SSE))
    proxy = await make_proxy(POLICY)
    request = {
        "model": "m",
        "prompt": "x",
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    async with http.post(f"{proxy.url}/v1/completions", json=request) as resp:
        got = await resp.read()

    events = [line.removeprefix(b"data: ") for line in got.split(b"\n\n") if line]
    assert events[-1] == b"[DONE]"
    refusal, usage = json.loads(events[-3]), json.loads(events[-2])
    assert refusal["object"] == "text_completion" and refusal["id"] == "cmpl-fake"
    assert refusal["choices"] == [
        {"text": REFUSAL, "index": 0, "logprobs": None, "finish_reason": "content_filter"}
    ]
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == 0
    assert b"sarin" not in got


async def test_a_blocked_stream_is_an_in_band_error_for_refusal_style_error(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=text_completion_stream("fine words, then sarin"), headers=SSE))
    client = make_client(await make_proxy(ERROR_STYLE))

    stream = await client.completions.create(model="m", prompt="x", stream=True)
    with pytest.raises(openai.APIError) as caught:
        await streamed(stream)

    assert REFUSAL in caught.value.message


async def test_a_streamed_redaction_rewrites_the_text_and_withholds_later_logprobs(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    tokens = ["I", " like", " ban", "ana", " bread", "."]
    events: list[Any] = [text_chunk(token, logprobs=text_logprobs([token])) for token in tokens]
    events.append(text_chunk("", finish_reason="stop"))
    upstream.enqueue(Reply(body=sse(*events), headers=SSE))
    client = make_client(await make_proxy(POLICY))

    stream = await client.completions.create(model="m", prompt="x", stream=True, logprobs=1)
    chunks = [chunk async for chunk in stream]

    text = "".join(c.text for chunk in chunks for c in chunk.choices)
    assert text == "I like [REDACTED] bread."
    tokens_sent = [
        token
        for chunk in chunks
        for c in chunk.choices
        if c.logprobs
        for token in c.logprobs.tokens
    ]
    assert "ana" not in tokens_sent and " ban" not in tokens_sent


@pytest.mark.parametrize(
    ("events", "why"),
    [
        ([{"choices": {"index": 0, "text": "x"}}], "choices"),
        ([text_chunk("fine"), {"choices": [{"text": "sarin"}]}], "index"),
        ([{"choices": [{"index": 0, "text": ["sarin"]}]}], "text"),
        ([text_chunk("a", index=1)], "index"),  # skips choice 0
        ([text_chunk("a"), text_chunk("b", index=5)], "index"),
        ([{"choices": [{"index": 0, "text": "a", "delta": {"content": "sarin"}}]}], "delta"),
        ([b'{"choices": [{"index": 0, "text": "a", "text": "sarin"}]}'], "same key twice"),
        ([{"error": {"message": "sarin"}}], "reported an error"),
    ],
)
async def test_a_stream_that_cannot_be_read_ends_with_the_proxys_error(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    events: list[Any],
    why: str,
) -> None:
    upstream.enqueue(Reply(body=sse(*events), headers=SSE))
    proxy = await make_proxy(POLICY)

    async with http.post(
        f"{proxy.url}/v1/completions", json={"model": "m", "prompt": "x", "stream": True}
    ) as resp:
        got = await resp.read()

    payloads = [line.removeprefix(b"data: ") for line in got.split(b"\n\n") if line]
    assert payloads[-1] == b"[DONE]"
    error = json.loads(payloads[-2])["error"]
    assert error["code"] == "upstream_error" and why in error["message"]
    assert b"sarin" not in got


async def test_a_stream_cut_off_before_it_finished_fails(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(
            body=text_completion_stream("half an ans", finish_reason=None, done=False), headers=SSE
        )
    )
    client = make_client(await make_proxy(POLICY))

    stream = await client.completions.create(model="m", prompt="x", stream=True)
    with pytest.raises(openai.APIError) as caught:
        await streamed(stream)

    assert "ended before it was complete" in caught.value.message


# ---- endpoints, cases, metrics -------------------------------------------------------------

SCOPED = """
version: 1
name: scoped
input:
  - {id: chat-only, type: denylist, phrases: [launch codes], endpoints: [chat, messages]}
  - {id: completions-only, type: denylist, phrases: [internal api], endpoints: [completions]}
output:
  - {id: completions-out, type: denylist, phrases: [secret sauce], endpoints: [completions]}
cases:
  - {stage: input, text: "the internal api", expect: block, endpoint: completions}
  - {stage: input, text: "the internal api", expect: allow}
  - {stage: input, text: "the launch codes", expect: allow, endpoint: completions}
  - {stage: output, text: "the secret sauce", expect: block, endpoint: completions}
"""


async def test_shields_scoped_to_completions_run_only_there(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(SCOPED))
    upstream.enqueue(
        Reply(body=json_bytes(text_completion("fine"))),
        Reply(body=json_bytes(text_completion("the secret sauce"))),
    )

    blocked = await client.completions.with_raw_response.create(model="m", prompt="internal api")
    assert blocked.headers["x-shieldgate-blocked"] == "input"
    passed = await client.completions.create(model="m", prompt="launch codes")  # chat's shield
    assert passed.choices[0].text == "fine"
    refused = await client.completions.with_raw_response.create(model="m", prompt="y")
    assert refused.headers["x-shieldgate-blocked"] == "output"
    assert len(upstream.requests) == 2


def test_check_and_test_accept_completions_as_an_endpoint(tmp_path: Path) -> None:
    path = tmp_path / "scoped.yaml"
    path.write_text(SCOPED)
    out = io.StringIO()
    assert check_policies([path], out) == 0, out.getvalue()
    out = io.StringIO()
    assert run_policy_tests([path], out) == 0, out.getvalue()
    assert "4 passed, 0 failed" in out.getvalue()
    # A misspelt endpoint is refused, naming the key path.
    path.write_text(SCOPED.replace("endpoints: [completions]}", "endpoints: [completion]}", 1))
    out = io.StringIO()
    assert check_policies([path], out) == 1
    assert "scoped.yaml:6:" in out.getvalue() and "input[1].endpoints[0]" in out.getvalue()


async def test_completions_metrics_carry_their_endpoint(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, http: Any
) -> None:
    upstream.enqueue(
        Reply(body=json_bytes(text_completion("a banana"))),
        Reply(body=text_completion_stream("sarin"), headers=SSE),
    )
    proxy = await make_proxy(POLICY)
    client = make_client(proxy)
    await client.completions.create(model="m", prompt="hello")
    await streamed(await client.completions.create(model="m", prompt="hello", stream=True))
    await client.completions.create(model="m", prompt="build a bomb")

    async with http.get(f"{proxy.url}/metrics") as resp:
        text = await resp.text()

    assert 'shieldgate_upstream_seconds_count{endpoint="completions"} 2.0' in text
    for labels in (
        'endpoint="completions",policy="cmpl",stage="input",verdict="allow"} 2.0',
        'endpoint="completions",policy="cmpl",stage="input",verdict="block"} 1.0',
        'endpoint="completions",policy="cmpl",stage="output",verdict="redact"} 1.0',
        'endpoint="completions",policy="cmpl",stage="output",verdict="block"} 1.0',
    ):
        assert "shieldgate_verdicts_total{" + labels in text, labels
    assert 'action="redact",endpoint="completions",mode="enforce"' in text  # findings
    assert 'route="/v1/completions",status="200"' in text
