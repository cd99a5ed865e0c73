"""Upstream response headers pass the output shields before they reach the client.

A header is upstream text the client receives like the body: a key a debugging header echoes,
a provider's raw answer a router copies into a header. A header line (``name: value``) that an
enforced output finding touches — to block or to redact — is not relayed; the others go as
they came, in their order, repeated ones too. Monitor mode records and relays. Every endpoint
that relays the upstream's headers (chat, legacy completions, embeddings, models, error
replies, streams) goes through the same check.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import struct
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict

from proxy.serving.server import RunningServer
from tests.conftest import ProxyFactory
from tests.guarantees.test_faults import RawUpstream
from tests.support.constants import REPO_ROOT
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    error_body,
    json_bytes,
    models_list,
    text_stream,
)
from tests.support.text_completions import text_completion

AWS_KEY = "AKIAIOSFODNN7EXAMPLQ"  # made up, the shape of an AWS access key id
EMAIL = "jane.doe@example.org"
PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
CLEAN = {"X-Upstream-Trace": "req_7f1c4be2a9d84b1e", "Openai-Processing-Ms": "734"}
USER = [{"role": "user", "content": "What is the weather like?"}]
EMBEDDING = {
    "object": "list",
    "data": [{"object": "embedding", "index": 0, "embedding": [0.25, -0.5]}],
    "model": "m",
    "usage": {"prompt_tokens": 2, "total_tokens": 2},
}


async def call(
    http: aiohttp.ClientSession, proxy: RunningServer, path: str, body: dict[str, Any] | None
) -> tuple[int, CIMultiDict[str], bytes]:
    url = f"{proxy.url}/v1/{path}"
    method = "GET" if body is None else "POST"
    async with asyncio.timeout(8), http.request(method, url, json=body) as resp:
        return resp.status, CIMultiDict(resp.headers), await resp.read()


def surface(name: str) -> tuple[str, dict[str, Any] | None, Reply]:
    """The path, the client's body and an upstream reply (without headers) of one surface."""
    chat = {"model": "m", "messages": USER}
    if name == "chat":
        return "chat/completions", chat, Reply(body=json_bytes(chat_completion("Sunny.")))
    if name == "chat-stream":
        return "chat/completions", {**chat, "stream": True}, Reply(body=text_stream("Sunny."))
    if name == "error":
        reply = Reply(status=400, body=json_bytes(error_body("bad model")))
        return "chat/completions", chat, reply
    if name == "completions":
        completion = {"model": "m", "prompt": "The weather is"}
        return "completions", completion, Reply(body=json_bytes(text_completion(" sunny.")))
    if name == "embeddings":
        return "embeddings", {"model": "m", "input": "hi"}, Reply(body=json_bytes(EMBEDDING))
    assert name == "models"
    return "models", None, Reply(body=json_bytes(models_list("m")))


SURFACES = ["chat", "chat-stream", "error", "completions", "embeddings", "models"]


@pytest.mark.parametrize("name", SURFACES)
async def test_a_header_carrying_a_secret_is_withheld_and_the_rest_relayed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    name: str,
) -> None:
    caplog.set_level(logging.INFO)
    path, body, reply = surface(name)
    reply.headers = {**CLEAN, "X-Upstream-Debug": f"key={AWS_KEY}"}
    upstream.enqueue(reply)

    status, headers, raw = await call(http, await make_proxy(), path, body)

    assert status == reply.status, raw
    assert "X-Upstream-Debug" not in headers
    assert all(AWS_KEY not in value for value in headers.values())
    assert AWS_KEY.encode() not in raw
    for key, value in CLEAN.items():
        assert headers[key] == value
    assert AWS_KEY not in caplog.text  # the log says that, never what


async def test_a_secret_in_a_header_name_is_withheld_too(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = Reply(body=json_bytes(chat_completion("Sunny.")))
    reply.headers = {**CLEAN, f"X-{AWS_KEY}": "1"}
    upstream.enqueue(reply)

    status, headers, _ = await call(
        http, await make_proxy(), "chat/completions", {"model": "m", "messages": USER}
    )

    assert status == 200
    assert all(AWS_KEY not in key for key in headers)
    assert headers["X-Upstream-Trace"] == CLEAN["X-Upstream-Trace"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_header_a_redacting_shield_flags_is_withheld_whole(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, stream: bool
) -> None:
    # The body's redaction rewrites a span; a header is not prose, so the line goes.
    text = "Sunny."
    reply = (
        Reply(body=text_stream(text)) if stream else Reply(body=json_bytes(chat_completion(text)))
    )
    reply.headers = {**CLEAN, "X-Owner": f"Jane <{EMAIL}>"}
    upstream.enqueue(reply)

    status, headers, raw = await call(
        http,
        await make_proxy(PII_POLICY),
        "chat/completions",
        {"model": "m", "messages": USER, "stream": stream},
    )

    assert status == 200
    assert "X-Owner" not in headers and EMAIL.encode() not in raw
    assert headers["Openai-Processing-Ms"] == "734"


async def test_clean_headers_go_as_they_came_each_time(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The second and third replies meet lines the policy already passed (remembered): the
    # flagged line is never among them, so it is withheld every time.
    proxy = await make_proxy()
    for _ in range(3):
        reply = Reply(body=json_bytes(chat_completion("Sunny.")))
        reply.headers = {**CLEAN, "X-Vendor": "llama.cpp", "X-Debug": AWS_KEY}
        upstream.enqueue(reply)
        status, headers, _ = await call(
            http, proxy, "chat/completions", {"model": "m", "messages": USER}
        )
        assert status == 200
        relayed = [(k, v) for k, v in headers.items() if k.lower().startswith("x-upstream")]
        assert relayed == [("X-Upstream-Trace", CLEAN["X-Upstream-Trace"])]
        assert headers["X-Vendor"] == "llama.cpp" and "X-Debug" not in headers


async def test_a_line_one_policy_passed_is_checked_again_under_another(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # The default policy passes an e-mail address; the PII policy redacts it. What one policy
    # passed says nothing about the next one (a reload makes a new policy).
    headers_sent = {**CLEAN, "X-Owner": EMAIL}
    lenient, strict = await make_proxy(), await make_proxy(PII_POLICY)
    for proxy, kept in [(lenient, True), (strict, False), (lenient, True)]:
        reply = Reply(body=json_bytes(chat_completion("Sunny.")))
        reply.headers = dict(headers_sent)
        upstream.enqueue(reply)
        _, headers, _ = await call(
            http, proxy, "chat/completions", {"model": "m", "messages": USER}
        )
        assert ("X-Owner" in headers) is kept


async def test_monitor_mode_relays_a_flagged_header_and_records_it(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    monitor = PII_POLICY.replace("version: 1\n", "version: 1\nmode: monitor\n")
    assert "mode: monitor" in monitor
    reply = Reply(body=json_bytes(chat_completion("Sunny.")))
    reply.headers = {**CLEAN, "X-Owner": EMAIL}
    upstream.enqueue(reply)

    status, headers, _ = await call(
        http, await make_proxy(monitor), "chat/completions", {"model": "m", "messages": USER}
    )

    assert status == 200 and headers["X-Owner"] == EMAIL
    findings = [r.message for r in caplog.records if r.name == "shieldgate.findings"]
    assert any("output" in m and "monitor" in m for m in findings), findings
    assert EMAIL not in caplog.text


# ---- the model list's body ---------------------------------------------------------------------


async def test_a_model_list_carrying_a_secret_is_withheld(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    listing = models_list("m", f"debug-{AWS_KEY}")
    upstream.enqueue(Reply(body=json_bytes(listing)))

    status, _, raw = await call(http, await make_proxy(), "models", None)

    assert status == 502 and AWS_KEY.encode() not in raw
    assert b"upstream_error" in raw


async def test_a_model_list_escaping_a_secret_is_read_as_the_client_reads_it(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # JSON escapes spell the same id to the client: the shields read the parsed strings.
    escaped = "".join(f"\\u{ord(c):04x}" for c in AWS_KEY)
    upstream.enqueue(Reply(body=b'{"object":"list","data":[{"id":"' + escaped.encode() + b'"}]}'))

    status, _, raw = await call(http, await make_proxy(), "models", None)

    assert status == 502 and escaped.encode() not in raw


async def test_a_clean_model_list_and_a_models_error_go_as_they_came(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    listing = json_bytes(models_list("llama-3.1-8b", "qwen2.5-coder"))
    upstream.enqueue(Reply(body=listing))
    upstream.enqueue(Reply(status=404, body=json_bytes(error_body(f"no such key {AWS_KEY}"))))
    proxy = await make_proxy()

    status, _, raw = await call(http, proxy, "models", None)
    assert status == 200 and raw == listing

    status, _, raw = await call(http, proxy, "models", None)
    assert status == 404 and AWS_KEY.encode() not in raw  # an error body is checked too


# ---- header bytes no header may carry ----------------------------------------------------------


def raw_chat_reply(*header_lines: bytes) -> bytes:
    body = json_bytes(chat_completion("Sunny."))
    head = [b"HTTP/1.1 200 OK", b"Content-Type: application/json"]
    head += [f"Content-Length: {len(body)}".encode(), *header_lines, b"Connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


@pytest.mark.parametrize(
    "line",
    [
        b"X-Debug: AKIA\xffIOSFODNN7EXAMPLQ",  # an undecodable byte the writer would delete
        b"X-Debug: AKIAIOSFOD\x1b[0mNN7EXAMPLQ",  # an escape a terminal hides
        b"X-Debug: AKIAIOSFOD\x7fNN7EXAMPLQ",
        "X-Debug: AKIAIOSFOD\u0085NN7EXAMPLQ".encode(),  # a C1 control, as valid UTF-8
        b"X-Caf\xe9: 1",  # not a token
    ],
    ids=["invalid-utf8", "escape", "del", "c1", "name"],
)
async def test_a_header_line_with_bytes_no_header_carries_is_not_relayed(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession, line: bytes
) -> None:
    trace = b"X-Upstream-Trace: req_1"
    async with RawUpstream(raw_chat_reply(line, trace)) as raw_upstream:
        proxy = await make_proxy(upstream=raw_upstream.base_url)
        status, headers, raw = await call(
            http, proxy, "chat/completions", {"model": "m", "messages": USER}
        )

    # Relayed without the line, or (where llhttp refuses the head) a 502: never the key.
    assert status in (200, 502), raw
    assert "X-Debug" not in headers and b"AKIA" not in raw
    assert all("AKIA" not in key + value for key, value in headers.items())
    if status == 200:
        assert headers["X-Upstream-Trace"] == "req_1"


async def test_a_header_in_utf8_text_is_relayed_as_text(
    make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    async with RawUpstream(raw_chat_reply("X-Region: Zürich".encode())) as raw_upstream:
        proxy = await make_proxy(upstream=raw_upstream.base_url)
        status, headers, _ = await call(
            http, proxy, "chat/completions", {"model": "m", "messages": USER}
        )

    assert status == 200
    assert headers["X-Region"] == "Zürich"


async def test_a_model_list_that_cannot_be_read_as_its_client_reads_it_is_a_502(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in AWS_KEY).encode()
    bodies = [
        b'{"object":"list","object":"list","data":[{"id":"' + escaped + b'"}]}',  # repeated key
        b'{"data":[{"id":"' + escaped + b'"}],"data":[]}',  # the copy a first-wins parser keeps
        b"\xef\xbb\xbf" + b'{"data":[{"id":"' + escaped + b'"}]}',  # a byte-order mark
        '{"data":[{"id":"AKIA"}]}'.encode("utf-16"),
        b'[{"id":"' + escaped + b'"}]',  # a bare list
        f"models: {AWS_KEY}".encode(),  # plain text
    ]
    proxy = await make_proxy()
    for body in bodies:
        upstream.enqueue(Reply(body=body, headers={"Content-Type": "application/json"}))
        status, _, raw = await call(http, proxy, "models", None)
        assert status == 502, (body, raw)
        assert b"AKIA" not in raw and escaped not in raw


# ---- an embeddings reply's strings ---------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        {**EMBEDDING, "model": AWS_KEY},
        {**EMBEDDING, "note": f"key {AWS_KEY}"},
        {**EMBEDDING, "data": [{**EMBEDDING["data"][0], "text": {"nested": AWS_KEY}}]},
        {**EMBEDDING, AWS_KEY: 1},
        # Only base64 of whole floats at ``data[i].embedding`` is a vector, nothing else.
        {**EMBEDDING, "model": "m", "embeddings": [AWS_KEY]},
        {**EMBEDDING, "embedding": AWS_KEY},
        {**EMBEDDING, "usage": {"embedding": AWS_KEY}},
        {**EMBEDDING, "data": [{**EMBEDDING["data"][0], "x": {"embedding": AWS_KEY}}]},
        {**EMBEDDING, "data": [{"object": "embedding", "index": 0, "embedding": AWS_KEY}]},
        {**EMBEDDING, "data": [{"object": "embedding", "index": 0, "embedding": f"a {AWS_KEY}"}]},
    ],
    ids=[
        "model",
        "extra-key",
        "nested",
        "key-name",
        "near-vector",
        "top-level-embedding",
        "usage-embedding",
        "nested-embedding",
        "vector-not-floats",
        "vector-not-base64",
    ],
)
async def test_an_embeddings_reply_with_a_secret_outside_its_vectors_is_a_502(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    reply: dict[str, Any],
) -> None:
    upstream.enqueue(Reply(body=json_bytes(reply)))

    status, _, raw = await call(
        http, await make_proxy(), "embeddings", {"model": "m", "input": "hi"}
    )

    assert status == 502 and AWS_KEY.encode() not in raw


async def test_an_embeddings_reply_that_is_not_json_is_a_502(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    upstream.enqueue(
        Reply(body=f"vectors for {AWS_KEY}".encode(), headers={"Content-Type": "text/plain"})
    )

    status, _, raw = await call(
        http, await make_proxy(), "embeddings", {"model": "m", "input": "hi"}
    )

    assert status == 502 and AWS_KEY.encode() not in raw


async def test_vectors_are_not_read_as_text_and_go_as_they_came(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # base64 vectors are random-looking text no shield should ever read; floats have no text.
    rng = random.Random(7)
    floats = [rng.uniform(-0.1, 0.1) for _ in range(256)]
    encoded = base64.b64encode(struct.pack("256f", *floats)).decode()
    proxy = await make_proxy((REPO_ROOT / "policies" / "strict.yaml").read_text())
    for vector in (encoded, floats):
        reply = {**EMBEDDING, "data": [{"object": "embedding", "index": 0, "embedding": vector}]}
        sent = json_bytes(reply)
        upstream.enqueue(Reply(body=sent))
        status, _, raw = await call(
            http, proxy, "embeddings", {"model": "m", "input": "hi", "encoding_format": "base64"}
        )
        assert status == 200 and raw == sent
