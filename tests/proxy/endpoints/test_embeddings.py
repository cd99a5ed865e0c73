"""``/v1/embeddings`` through the real proxy, driven by the official ``openai`` client.

What the scripted upstream received shows what left the proxy: every input string is checked
before anything is sent, a redaction is what gets embedded, a block sends nothing, token ids
pass only where the policy allows them, and the vectors come back exactly as the upstream sent
them (there is no output stage).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

import aiohttp
import openai
import pytest

from proxy.cli import default_policy
from proxy.endpoints.embeddings_request import parse_embeddings_request
from proxy.serving.server import RunningServer
from shields.base import Shield, Stage
from shields.openai.input_check import check_input
from shields.policy import CompiledPolicy
from tests.conftest import PolicySource, ProxyFactory
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, json_bytes, sse

MakeClient = Callable[..., openai.AsyncOpenAI]

AWS_KEY = "AKIAQ3EGRK5JXWZY7N4T"  # redacted by the default policy's credentials shield
GH_TOKEN = "ghp_W4nQ8zR2kL7vT5yB9cX3mH6jF1sD0aGe2uPo"

# The default policy with the refusal style "message": embeddings still answer with an error.
MESSAGE_STYLE = """
version: 1
name: msgstyle
refusal: {message: "Not embedded.", style: message}
input:
  - id: weapons
    type: denylist
    phrases: [build a bomb]
"""

TOKENS_ALLOWED = """
version: 1
name: tokens-ok
request: {token_inputs: allow}
input:
  - id: weapons
    type: denylist
    phrases: [build a bomb]
"""

SCOPED = """
version: 1
name: scoped
input:
  - id: chat-only
    type: denylist
    phrases: [launch codes]
    endpoints: [chat, responses]
  - id: embeddings-only
    type: denylist
    phrases: [customer ledger]
    endpoints: [embeddings]
"""


@pytest.fixture(scope="module")
def default() -> CompiledPolicy:
    return default_policy()


@pytest.fixture
def make_proxy(make_proxy: ProxyFactory, default: CompiledPolicy) -> ProxyFactory:
    """The shared factory, with the default policy compiled once for the module (seconds on a
    loaded machine) rather than once per test."""

    async def factory(policy: PolicySource = None, /, **overrides: Any) -> RunningServer:
        return await make_proxy(default if policy is None else policy, **overrides)

    return factory


def vector(i: int, dims: int = 3) -> list[float]:
    return [round(0.25 * (i + 1) + 0.125 * d, 3) for d in range(dims)]


def embeddings_reply(count: int, *, encoding: str = "float", dims: int = 3) -> dict[str, Any]:
    """An OpenAI ``list`` of ``count`` embeddings, as a backend sends it."""
    data = []
    for i in range(count):
        values = vector(i, dims)
        embedding: Any = values
        if encoding == "base64":
            embedding = base64.b64encode(struct.pack(f"<{dims}f", *values)).decode()
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    return {
        "object": "list",
        "data": data,
        "model": "embed-model",
        "usage": {"prompt_tokens": 3 * count, "total_tokens": 3 * count},
    }


def forwarded_input(upstream: FakeUpstream) -> Any:
    request = upstream.requests[-1]
    assert request.method == "POST"
    assert request.path == "/v1/embeddings"
    return request.json()["input"]


# ---- what passes -------------------------------------------------------------------------


async def test_a_string_is_embedded_and_the_vector_relayed_as_it_came(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(1))))
    client = make_client(await make_proxy())

    result = await client.embeddings.create(
        model="embed-model", input="quarterly revenue grew", encoding_format="float"
    )

    assert [d.embedding for d in result.data] == [vector(0)]
    assert result.usage.total_tokens == 3
    assert forwarded_input(upstream) == "quarterly revenue grew"


async def test_the_sdk_default_base64_vectors_pass_untouched(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    # Without encoding_format the SDK asks for base64 and decodes it: the proxy must relay
    # the strings as they came for the floats to come out right.
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(2, encoding="base64"))))
    client = make_client(await make_proxy())

    result = await client.embeddings.create(model="embed-model", input=["alpha", "beta"])

    # Multiples of 1/8: exact in the float32 the base64 carries.
    assert [d.embedding for d in result.data] == [vector(0), vector(1)]
    assert upstream.requests[-1].json()["encoding_format"] == "base64"


async def test_an_unredacted_request_and_its_reply_pass_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # Odd spacing and key order: a body re-serialized by the proxy would lose them. The reply
    # holds keys no chat reply reader knows, which are the backend's to send.
    body = b'{"input" : ["one",  "two"], "model":"m", "dimensions": 3, "user": "u-1"}'
    reply = (
        b'{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]},'
        b'{"object":"embedding","index":1,"embedding":[0.25]}],"model":"m",'
        b'"usage":{"prompt_tokens":2,"total_tokens":2},"backend_extra":{"note":"x"}}'
    )
    upstream.enqueue(Reply(body=reply))
    proxy = await make_proxy()

    async with http.post(
        f"{proxy.url}/v1/embeddings?api-version=1",
        data=body,
        headers={"Content-Type": "application/json"},
    ) as resp:
        status, got = resp.status, await resp.read()

    assert status == 200
    assert got == reply
    assert upstream.requests[-1].body == body
    assert upstream.requests[-1].query_string == "api-version=1"


# ---- the input stage ---------------------------------------------------------------------


async def test_a_redaction_is_what_gets_embedded(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(1))))
    client = make_client(await make_proxy())

    response = await client.embeddings.with_raw_response.create(
        model="embed-model", input=f"deploy with key {AWS_KEY} tonight", encoding_format="float"
    )

    assert response.http_response.status_code == 200
    assert forwarded_input(upstream) == "deploy with key [CREDENTIAL] tonight"
    assert AWS_KEY.encode() not in upstream.requests[-1].body


async def test_every_string_of_a_batch_is_checked_and_redacted_in_place(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    inputs = [f"document {i} about invoices" for i in range(300)]
    inputs[7] = f"ops note: {AWS_KEY}"
    inputs[299] = f"token {GH_TOKEN} in the last one"
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(300))))
    client = make_client(await make_proxy())

    result = await client.embeddings.create(
        model="embed-model", input=inputs, encoding_format="float"
    )

    assert len(result.data) == 300
    sent = forwarded_input(upstream)
    expected = list(inputs)
    expected[7] = "ops note: [CREDENTIAL]"
    expected[299] = "token [CREDENTIAL] in the last one"
    assert sent == expected  # same count, same order: input i is still vector i


@pytest.mark.parametrize(
    "inputs",
    [
        "how do I build a bomb at home",
        ["harmless one", "how do I build a bomb at home", "harmless two"],
    ],
)
async def test_a_block_is_a_content_filter_error_and_nothing_goes_upstream(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, inputs: Any
) -> None:
    client = make_client(await make_proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="embed-model", input=inputs)

    assert caught.value.status_code == 400
    assert caught.value.code == "content_filter"
    assert caught.value.response.headers["x-shieldgate-blocked"] == "input"
    assert "I'm sorry" in caught.value.message
    assert upstream.requests == []


async def test_a_block_is_an_error_whatever_the_refusal_style(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(MESSAGE_STYLE))

    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input=["ok", "build a bomb"])

    assert caught.value.code == "content_filter"
    body = caught.value.body
    assert isinstance(body, dict) and body["message"] == "Not embedded."
    assert upstream.requests == []


def test_a_batch_is_scanned_with_one_scanner_per_shield_not_one_per_input(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The reading every shield gets: counted by wrapping the real shields' ``scanner``.
    policy = default_policy().for_endpoint("embeddings")  # its own: the shields are patched
    made: list[str] = []
    for shield in policy.shields(Stage.INPUT):
        original = shield.scanner

        def counting(original: Any = original, shield: Shield = shield) -> Any:
            made.append(shield.id)
            return original()

        monkeypatch.setattr(shield, "scanner", counting)
    body = {"model": "m", "input": [f"text number {i}" for i in range(500)]}
    parsed = parse_embeddings_request(json.dumps(body).encode())

    outcome = check_input(policy, parsed.chat)

    assert not outcome.findings
    applicable = {s.id for s in policy.shields(Stage.INPUT) if s.applies_to(None)}
    assert made and len(made) <= 2 * len(applicable)  # 500 inputs: not 500 of each


# ---- token ids -----------------------------------------------------------------------------


@pytest.mark.parametrize("tokens", [[15339, 1917], [[15339, 1917], [9906]]])
async def test_token_ids_are_refused_by_default(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, tokens: Any
) -> None:
    client = make_client(await make_proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input=tokens)

    assert caught.value.code == "token_inputs_refused"
    assert caught.value.param == "input"
    assert upstream.requests == []


@pytest.mark.parametrize("tokens", [[15339, 1917], [[15339, 1917], [9906]]])
async def test_token_ids_pass_unchecked_where_the_policy_allows_them(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, tokens: Any
) -> None:
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(len(tokens)))))
    client = make_client(await make_proxy(TOKENS_ALLOWED))

    result = await client.embeddings.create(model="m", input=tokens, encoding_format="float")

    assert len(result.data) == len(tokens)
    assert forwarded_input(upstream) == tokens


async def test_strings_are_still_checked_where_token_ids_are_allowed(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(TOKENS_ALLOWED))
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input="build a bomb")
    assert caught.value.code == "content_filter"
    assert upstream.requests == []


# ---- the request's shape -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"truncate": True}, "truncate"),  # a backend's extra: unknown, so refused
        ({"Input": "hidden text"}, "Input"),  # a Go server would read it as `input`
        ({"options": {"prompt": "x"}}, "options"),
    ],
)
async def test_an_unknown_key_is_a_400_naming_it(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    extra: dict[str, Any],
    param: str,
) -> None:
    client = make_client(await make_proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input="hello", extra_body=extra)

    assert caught.value.code == "unknown_parameter"
    assert caught.value.param == param
    assert f"'{param}'" in caught.value.message
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m"}, "input"),
        ({"model": "m", "input": []}, "input"),
        ({"model": "m", "input": None}, "input"),
        ({"model": "m", "input": ["text", [1, 2]]}, "input"),
        ({"model": "m", "input": [1, "text"]}, "input"),
        ({"model": "m", "input": [[1], []]}, "input"),
        ({"model": "m", "input": [True, 2]}, "input"),
        ({"model": "m", "input": {"text": "x"}}, "input"),
        ({"model": 5, "input": "x"}, "model"),
        ({"model": "m", "input": "x", "encoding_format": "int8"}, "encoding_format"),
        # Unhashable values: a 400, not a TypeError answered as a 500 (found by black-box QA).
        ({"model": "m", "input": "x", "encoding_format": []}, "encoding_format"),
        ({"model": "m", "input": "x", "encoding_format": {"type": "x"}}, "encoding_format"),
        ({"model": "m", "input": "x", "dimensions": 0}, "dimensions"),
        ({"model": "m", "input": "x", "dimensions": "3"}, "dimensions"),
        ({"model": "m", "input": "x", "user": 3}, "user"),
    ],
)
async def test_a_shape_that_cannot_be_checked_is_a_400(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    body: dict[str, Any],
    param: str,
) -> None:
    proxy = await make_proxy()
    async with http.post(f"{proxy.url}/v1/embeddings", json=body) as resp:
        status, payload = resp.status, await resp.json()
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert payload["error"]["param"] == param
    assert upstream.requests == []


# ---- the upstream's answers ----------------------------------------------------------------


async def test_a_stream_in_answer_is_a_502(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(events=[json.loads(sse_payload())]))
    client = make_client(await make_proxy())

    with pytest.raises(openai.InternalServerError) as caught:
        await client.embeddings.create(model="m", input="hello")

    assert caught.value.status_code == 502
    assert "stream" in caught.value.message


def sse_payload() -> str:
    return sse({"object": "list", "data": []}, done=False).decode().removeprefix("data: ").strip()


async def test_an_upstream_error_keeps_its_status_and_its_message_is_checked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    error = {
        "error": {
            "message": f"input too long (key {AWS_KEY})",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    upstream.enqueue(Reply(status=400, body=json_bytes(error)))
    client = make_client(await make_proxy())

    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input="hello")

    assert caught.value.status_code == 400
    assert AWS_KEY not in caught.value.message
    assert "[CREDENTIAL]" in caught.value.message


async def test_the_reply_is_not_read_as_a_chat_completion(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    # Not a chat reply to redact in place: a vector reply goes as it came, or, when a string
    # of it (here its ``model``) holds what the output shields flag, not at all (a 502).
    reply = embeddings_reply(1)
    upstream.enqueue(Reply(body=json_bytes(reply)))
    reply_with_key = {**reply, "model": f"model {AWS_KEY}"}
    upstream.enqueue(Reply(body=json_bytes(reply_with_key)))
    client = make_client(await make_proxy())

    result = await client.embeddings.create(model="m", input="hello", encoding_format="float")
    assert result.model == reply["model"]
    assert result.data[0].embedding == reply["data"][0]["embedding"]

    with pytest.raises(openai.InternalServerError) as caught:
        await client.embeddings.create(model="m", input="hello", encoding_format="float")
    assert caught.value.status_code == 502 and AWS_KEY not in caught.value.message


# ---- endpoint scoping ----------------------------------------------------------------------


async def test_shields_scoped_to_endpoints_run_only_there(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    client = make_client(await make_proxy(SCOPED))

    # A chat-only shield does not run on embeddings...
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(1))))
    await client.embeddings.create(model="m", input="the launch codes", encoding_format="float")
    assert forwarded_input(upstream) == "the launch codes"
    # ...but it does on chat (refused as a reply: the policy's refusal style is "message"),
    chat = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "the launch codes"}]
    )
    assert chat.choices[0].finish_reason == "content_filter"
    assert len(upstream.requests) == 1
    # and the embeddings-only shield runs on embeddings and not on chat.
    with pytest.raises(openai.BadRequestError) as caught:
        await client.embeddings.create(model="m", input=["the customer ledger"])
    assert caught.value.code == "content_filter"
    upstream.enqueue(Reply(body=json_bytes(chat_completion("fine"))))
    chat = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "the customer ledger"}]
    )
    assert chat.choices[0].message.content == "fine"
    assert len(upstream.requests) == 2


async def test_embeddings_have_their_route_in_the_metrics(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient, http: Any
) -> None:
    upstream.enqueue(Reply(body=json_bytes(embeddings_reply(1))))
    proxy = await make_proxy()
    client = make_client(proxy)
    await client.embeddings.create(model="m", input="hello", encoding_format="float")
    with pytest.raises(openai.BadRequestError):
        await client.embeddings.create(model="m", input="build a bomb")

    async with http.get(f"{proxy.url}/metrics") as resp:
        text = await resp.text()

    assert 'shieldgate_upstream_seconds_count{endpoint="embeddings"} 1.0' in text
    assert 'stage="input",verdict="allow"' in text
    assert 'stage="input",verdict="block"' in text
    assert 'route="/v1/embeddings",status="400"' in text
