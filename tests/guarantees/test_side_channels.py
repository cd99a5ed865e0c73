"""Side channels: where a reply repeats its text outside the fields the shields read and redact.

- ``logprobs`` (``content[].token`` / ``.bytes`` / ``top_logprobs[]``, ``refusal[...]``) hold
  a choice's tokens: once a redaction changed a choice's text, its logprobs are withheld (null),
  in a reply and in every later event of a stream — on the per-event and the bulk (run) path;
- ``audio.data`` speaks the transcript: withheld ("") once the transcript was redacted;
- upstream response headers that the upstream's ``Connection`` header names are hop-by-hop and
  are not relayed;
- an error after a Responses stream started aborts the connection instead of writing a second
  response into the first one's body.

Allowed replies (nothing redacted) keep all of it, byte for byte.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from multidict import CIMultiDict

from proxy.endpoints.responses_stream import ResponseTranslator
from proxy.serving.server import RunningServer
from proxy.stream.guard import GuardState
from proxy.upstream.client import response_headers
from shields.policy import parse_policy
from shields.scan import TextScan, check_text, merge_redactions, redact
from tests.conftest import ProxyFactory
from tests.proxy.stream.test_sse_runs import drive
from tests.support.constants import DONE, REPO_ROOT
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse

MakeClient = Callable[..., openai.AsyncOpenAI]

PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
USER = [{"role": "user", "content": "Where do I write?"}]

EMAIL = "jane.doe@example.org"
# How a tokenizer might cut the reply: the e-mail address is several tokens.
TOKENS = ["Please", " write", " to", " jane", ".doe", "@example", ".org", " today", "."]
SECRET_TOKENS = [" jane", ".doe", "@example", ".org"]
TEXT = "".join(TOKENS)
REDACTED = TEXT.replace(EMAIL, "[EMAIL]")
CLEAN_TOKENS = ["The", " weather", " is", " fine", " today", "."]

# A short hold-back, so the differential tests see redactions found mid-stream.
TOKEN_POLICY = parse_policy(
    r"""
name: token
stream: {holdback_chars: 16}
output:
  - {id: token, type: regex, action: redact, placeholder: "[T]", patterns: ['tok_[a-z0-9]{8}']}
"""
)
SECRET = "tok_a1b2c3d4"
TOKEN_PATTERN = re.compile("tok_[a-z0-9]{8}")


def logprob(token: str) -> dict[str, Any]:
    return {"token": token, "logprob": -0.25, "bytes": list(token.encode())}


def logprobs_of(tokens: list[str]) -> dict[str, Any]:
    """OpenAI's ``logprobs`` of a choice: each token with its two best alternatives."""
    return {
        "content": [
            {**logprob(token), "top_logprobs": [logprob(token), logprob(token.upper())]}
            for token in tokens
        ],
        "refusal": None,
    }


def assert_no_leak(raw: bytes, tokens: list[str] = SECRET_TOKENS) -> None:
    """Not the address, nor any of its tokens as text or as a ``bytes`` array, in any byte."""
    assert EMAIL.encode() not in raw
    for token in tokens:
        for form in (token, token.upper()):
            assert json.dumps(form)[1:-1].encode() not in raw, form
            assert ",".join(map(str, form.encode())).encode() not in raw, form


def datas(raw: bytes) -> list[Any]:
    """A chat stream parsed strictly: ``data: X`` events only, ending with [DONE]."""
    assert raw.endswith(DONE), raw[-200:]
    out = []
    for event in raw[: -len(DONE)].split(b"\n\n")[:-1]:
        assert event.startswith(b"data: "), event[:200]
        out.append(json.loads(event[len(b"data: ") :]))
    return out


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, body: dict[str, Any], path: str = "chat"
) -> tuple[int, CIMultiDict[str], bytes]:
    url = f"{proxy.url}/v1/{'chat/completions' if path == 'chat' else path}"
    async with asyncio.timeout(8), http.post(url, json=body) as resp:
        return resp.status, CIMultiDict(resp.headers), await resp.read()


def token_events(tokens: list[str], *, index: int = 0) -> list[dict[str, Any] | str | bytes]:
    """A stream of one token per event, each with that token's logprobs (as vLLM sends)."""
    events: list[dict[str, Any] | str | bytes] = [
        chunk({"role": "assistant", "content": ""}, index=index)
    ]
    for token in tokens:
        event = chunk({"content": token}, index=index)
        event["choices"][0]["logprobs"] = logprobs_of([token])
        events.append(event)
    events.append(chunk({}, index=index, finish_reason="stop"))
    return events


# ---- 1. logprobs of a whole reply ------------------------------------------------------------


def logprobs_reply(*choice_tokens: list[str]) -> dict[str, Any]:
    choices = [
        {
            "index": i,
            "message": {"role": "assistant", "content": "".join(tokens)},
            "logprobs": logprobs_of(tokens),
            "finish_reason": "stop",
        }
        for i, tokens in enumerate(choice_tokens)
    ]
    return chat_completion(choices=choices)


async def test_a_redacted_replys_logprobs_are_withheld(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(logprobs_reply(TOKENS))))
    client = make_client(await make_proxy(PII_POLICY))

    reply = await client.chat.completions.with_raw_response.create(
        model="m", messages=USER, logprobs=True, top_logprobs=2
    )

    assert_no_leak(reply.http_response.content)
    choice = reply.parse().choices[0]
    assert choice.message.content == REDACTED
    assert choice.logprobs is None


async def test_a_redacted_refusals_logprobs_are_withheld(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    reply = logprobs_reply(TOKENS)
    choice = reply["choices"][0]
    choice["message"] = {"role": "assistant", "content": None, "refusal": TEXT}
    choice["logprobs"] = {"content": None, "refusal": logprobs_of(TOKENS)["content"]}
    upstream.enqueue(Reply(body=json_bytes(reply)))

    status, _, raw = await post(
        http, await make_proxy(PII_POLICY), {"model": "m", "messages": USER}
    )

    assert status == 200
    assert_no_leak(raw)
    assert json.loads(raw)["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": None, "refusal": REDACTED},
        "logprobs": None,
        "finish_reason": "stop",
    }


async def test_only_the_redacted_choice_loses_its_logprobs(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(logprobs_reply(CLEAN_TOKENS, TOKENS))))
    client = make_client(await make_proxy(PII_POLICY))

    reply = await client.chat.completions.with_raw_response.create(
        model="m", messages=USER, logprobs=True, n=2
    )

    assert_no_leak(reply.http_response.content)
    clean, redacted = reply.parse().choices
    assert redacted.logprobs is None and redacted.message.content == REDACTED
    assert clean.logprobs is not None
    assert [entry.token for entry in clean.logprobs.content or []] == CLEAN_TOKENS


async def test_an_allowed_reply_with_logprobs_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    body = json_bytes(logprobs_reply(CLEAN_TOKENS, CLEAN_TOKENS[::-1]))
    upstream.enqueue(Reply(body=body))

    # Two choices: the request asks for two (a choice `index` past `n` is a 502).
    request = {"model": "m", "messages": USER, "logprobs": True, "n": 2}
    status, _, raw = await post(http, await make_proxy(PII_POLICY), request)

    assert (status, raw) == (200, body)


# ---- 2. logprobs of a stream -----------------------------------------------------------------


def check_stream_rule(raw: bytes, upstream_events: list[Any], redacted_choice: int = 0) -> None:
    """The released events against the rule: an event keeps its logprobs only when it left
    unchanged (byte for byte as the upstream sent it) and no event of its choice before it was
    rewritten; after the first rewritten one, every event of the choice has them null."""
    sent = {json_bytes(event) for event in upstream_events if isinstance(event, dict)}
    rewritten = False
    for line in raw[: -len(DONE)].split(b"\n\n")[:-1]:
        data = line[len(b"data: ") :]
        event = json.loads(data)
        for choice in event["choices"]:
            if choice["index"] != redacted_choice:
                continue
            if data not in sent:
                rewritten = True
            if rewritten or "[EMAIL]" in (choice["delta"].get("content") or ""):
                assert choice["logprobs"] is None, event
    assert rewritten


# Over the pii policy's hold-back (166 characters) before and after the address.
LEAD = ["Hi", " there", "."] * 30
TRAIL = [" Then", " more", " words", "."] * 15


async def test_a_streamed_redactions_logprobs_are_withheld(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    # Enough text after the address for the hold-back (166 characters) to release events
    # past it before the end.
    tokens = LEAD + TOKENS + TRAIL
    events = token_events(tokens)
    # Paced like a model, so that events leave before the address is found.
    upstream.enqueue(*[Reply(events=events, chunk_delay=0.001)] * 2)
    proxy = await make_proxy(PII_POLICY)
    client = make_client(proxy)

    stream = await client.chat.completions.create(
        model="m", messages=USER, stream=True, logprobs=True, top_logprobs=2
    )
    content, kept = "", []
    async for event in stream:
        for choice in event.choices:
            content += choice.delta.content or ""
            if choice.logprobs is not None:
                kept += [entry.token for entry in choice.logprobs.content or []]
    assert content == "".join(tokens).replace(EMAIL, "[EMAIL]")
    # Only tokens of the events released before the redaction was found keep their logprobs.
    assert kept and not set(kept) & set(SECRET_TOKENS)
    assert kept == tokens[: len(kept)]

    async with aiohttp.ClientSession() as http:
        body = {"model": "m", "messages": USER, "stream": True, "logprobs": True}
        status, _, raw = await post(http, proxy, body)
    assert status == 200
    assert_no_leak(raw)
    check_stream_rule(raw, events)


async def test_a_redaction_in_one_streamed_choice_leaves_the_others_logprobs(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    first, second = token_events(TOKENS * 3), token_events(CLEAN_TOKENS * 3, index=1)
    events = [event for pair in itertools.zip_longest(first, second) for event in pair if event]
    upstream.enqueue(Reply(events=events))

    body = {"model": "m", "messages": USER, "stream": True, "logprobs": True, "n": 2}
    status, _, raw = await post(http, await make_proxy(PII_POLICY), body)

    assert status == 200
    assert_no_leak(raw)
    check_stream_rule(raw, events)
    other = [c for e in datas(raw) for c in e["choices"] if c["index"] == 1 and c["delta"]]
    kept = [c["logprobs"]["content"][0]["token"] for c in other if c["logprobs"] is not None]
    assert kept == CLEAN_TOKENS * 3


async def test_a_text_less_event_after_a_redaction_loses_its_logprobs_too(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # An event with logprobs and no text of its own: nothing to scan, but it belongs to the
    # redacted choice.
    tail = chunk({})
    tail["choices"][0]["logprobs"] = logprobs_of(SECRET_TOKENS)
    events = token_events(TOKENS)
    events.insert(-1, tail)
    upstream.enqueue(Reply(events=events))

    body = {"model": "m", "messages": USER, "stream": True, "logprobs": True}
    status, _, raw = await post(http, await make_proxy(PII_POLICY), body)

    assert status == 200
    assert_no_leak(raw)
    check_stream_rule(raw, events)


async def test_an_allowed_stream_with_logprobs_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    events = token_events(CLEAN_TOKENS * 40)
    upstream.enqueue(Reply(events=events))

    body = {"model": "m", "messages": USER, "stream": True, "logprobs": True}
    status, _, raw = await post(http, await make_proxy(PII_POLICY), body)

    assert (status, raw) == (200, sse(*events))


# ---- 3. the stream rule, on the per-event and the bulk path ----------------------------------


def honest_stream(pieces: list[str], with_logprobs: list[bool]) -> bytes:
    """Content events whose logprobs, where present, are the event's own text as one token."""
    events: list[dict[str, Any] | str | bytes] = [chunk({"role": "assistant", "content": ""})]
    for piece, has in zip(pieces, with_logprobs, strict=True):
        event = chunk({"content": piece})
        if has:
            event["choices"][0]["logprobs"] = logprobs_of([piece])
        events.append(event)
    events.append(chunk({}, finish_reason="stop"))
    return sse(*events)


def check_released(out: bytes, text: str) -> None:
    """No trace of a secret; an event keeps logprobs only when no event before it was
    rewritten, and then its one token is its text, unchanged."""
    content = ""
    rewritten = False
    for event in datas(out):
        for choice in event["choices"]:
            piece = choice["delta"].get("content") or ""
            content += piece
            rewritten = rewritten or "[T]" in piece
            probs = choice["logprobs"]
            if probs is not None:
                assert not rewritten, event
                assert "".join(entry["token"] for entry in probs["content"]) == piece, event
    # What the non-stream path makes of the whole text.
    findings = check_text(TOKEN_POLICY.output_shields, text, fail_closed=True)
    assert content == redact(text, 0, merge_redactions(findings))
    assert not TOKEN_PATTERN.search(out.decode())


filler = st.lists(st.sampled_from(["a", "b", " ", "é", "tok_", "1", "\n", '"']), max_size=30).map(
    "".join
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    secrets=st.integers(min_value=0, max_value=2),
    sizes=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=5),
    logprobs=st.lists(st.booleans(), min_size=1, max_size=7),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=10),
)
def test_the_stream_rule_holds_for_any_split(
    before: str,
    after: str,
    secrets: int,
    sizes: list[int],
    logprobs: list[bool],
    cuts: list[int],
) -> None:
    text = before + (SECRET + after) * secrets + " the end of it, at last."
    pieces, pos = [], 0
    for size in itertools.cycle(sizes):
        if pos >= len(text):
            break
        pieces.append(text[pos : pos + size])
        pos += size
    flags = [logprobs[i % len(logprobs)] for i in range(len(pieces))]
    body = honest_stream(pieces, flags)

    for fast in (False, True):
        writes, state, _ = drive(TOKEN_POLICY, body, cuts, fast=fast)
        assert state is GuardState.DONE
        out = b"".join(writes)
        check_released(out, text)
        # Nothing found in the whole text (the shield reads the normalized view, where
        # "tok_aaaaaaaé" is a token: not the raw pattern's answer): every byte as it came.
        if not check_text(TOKEN_POLICY.output_shields, text, fail_closed=True):
            assert out == body


def test_a_match_does_not_hide_an_overlapping_token() -> None:
    # "tok_aaaaatok" is a match (tok_ + 8 of [a-z0-9]); the real token starts inside it.
    text = "tok_aaaaatok_a1b2c3d4 and the rest"
    for fed_whole in (True, False):
        if fed_whole:
            findings = check_text(TOKEN_POLICY.output_shields, text)
        else:
            scan = TextScan(TOKEN_POLICY.output_shields)
            findings = [f for char in text for f in scan.feed(char)] + scan.finish()
        released = redact(text, 0, merge_redactions(findings))
        assert "a1b2c3d4" not in released, (fed_whole, released)


def constant_logprobs_stream(text: str, size: int) -> bytes:
    """Look-alike events (the bulk path's runs) that all carry the same logprobs."""
    role = chunk({"role": "assistant", "content": ""})
    template = chunk({"content": "@@"})
    template["choices"][0]["logprobs"] = logprobs_of(["x"])
    data = json_bytes(template)
    events = b"".join(
        b"data: " + data.replace(b'"@@"', orjson.dumps(text[i : i + size])) + b"\n\n"
        for i in range(0, len(text), size)
    )
    return sse(role, done=False) + events + sse(chunk({}, finish_reason="stop"))


def test_runs_after_a_redaction_lose_their_logprobs() -> None:
    text = "harmless words " * 40 + SECRET + " and then some more words" * 40
    body = constant_logprobs_stream(text, 3)
    cuts = list(range(0, len(body), 4000))

    writes, state, runs = drive(TOKEN_POLICY, body, cuts, fast=True)

    assert runs > 0 and state is GuardState.DONE
    out = b"".join(writes)
    assert SECRET.encode() not in out
    parsed = [e for e in datas(out) if e["choices"][0]["delta"].get("content")]
    first = next(i for i, e in enumerate(parsed) if "[T]" in e["choices"][0]["delta"]["content"])
    assert all(e["choices"][0]["logprobs"] is None for e in parsed[first:])
    assert parsed[0]["choices"][0]["logprobs"] is not None  # released before it was found
    assert "".join(e["choices"][0]["delta"]["content"] for e in parsed) == text.replace(
        SECRET, "[T]"
    )
    assert (writes, state) == drive(TOKEN_POLICY, body, cuts, fast=False)[:2]


def test_allowed_runs_with_logprobs_leave_byte_for_byte() -> None:
    body = constant_logprobs_stream("harmless words " * 400, 3)
    cuts = list(range(0, len(body), 4000))

    writes, state, runs = drive(TOKEN_POLICY, body, cuts, fast=True)

    assert runs > 0 and state is GuardState.DONE
    assert b"".join(writes) == body


# ---- 4. audio ----------------------------------------------------------------------------------

AUDIO_DATA = "UklGRiQAAABXQVZFZm10IBAAAAABAAEA"  # base64 audio: what a client plays


def audio_reply(transcript: str) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "audio": {"id": "audio_1", "data": AUDIO_DATA, "expires_at": 1, "transcript": transcript},
    }
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    return chat_completion(choices=[choice])


async def test_a_redacted_transcripts_audio_data_is_dropped(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(body=json_bytes(audio_reply(TEXT))))
    client = make_client(await make_proxy(PII_POLICY))

    reply = await client.chat.completions.with_raw_response.create(model="m", messages=USER)

    assert AUDIO_DATA.encode() not in reply.http_response.content
    audio = reply.parse().choices[0].message.audio
    assert audio is not None
    assert (audio.transcript, audio.data, audio.id) == (REDACTED, "", "audio_1")


async def test_an_allowed_transcripts_audio_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    body = json_bytes(audio_reply("The weather is fine today."))
    upstream.enqueue(Reply(body=body))

    status, _, raw = await post(
        http, await make_proxy(PII_POLICY), {"model": "m", "messages": USER}
    )

    assert (status, raw) == (200, body)


async def test_streamed_audio_data_after_a_redacted_transcript_is_blanked(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # Transcript deltas and audio deltas interleaved, as OpenAI streams them.
    transcript = LEAD + TOKENS + TRAIL
    events: list[dict[str, Any] | str | bytes] = [
        chunk({"role": "assistant", "audio": {"id": "audio_1"}})
    ]
    for piece in transcript:
        events.append(chunk({"audio": {"transcript": piece}}))
        events.append(chunk({"audio": {"data": AUDIO_DATA}}))
    events.append(chunk({"audio": {"expires_at": 1}}, finish_reason="stop"))
    upstream.enqueue(Reply(events=events, chunk_delay=0.001))

    body = {"model": "m", "messages": USER, "stream": True}
    status, _, raw = await post(http, await make_proxy(PII_POLICY), body)

    assert status == 200
    assert EMAIL.encode() not in raw
    audio = [e["choices"][0]["delta"]["audio"] for e in datas(raw)]
    heard = "".join(a.get("transcript", "") for a in audio)
    assert heard == "".join(transcript).replace(EMAIL, "[EMAIL]")
    first = next(i for i, a in enumerate(audio) if "[EMAIL]" in a.get("transcript", ""))
    assert all(a["data"] == "" for a in audio[first:] if "data" in a)
    assert any(a.get("data") == AUDIO_DATA for a in audio[:first])  # released before it


# ---- 5. upstream response headers ---------------------------------------------------------------


def test_headers_named_by_connection_are_not_relayed() -> None:
    upstream = CIMultiDict(
        [
            ("Content-Type", "application/json"),
            ("Connection", "keep-alive, X-Hop-One"),
            ("connection", " x-hop-two ,"),
            ("X-Hop-One", "a"),
            ("X-HOP-TWO", "b"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("TE", "trailers"),
            ("Trailer", "X-Checksum"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("Proxy-Authenticate", "Basic"),
            ("Proxy-Authorization", "Basic eA=="),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
            ("X-Request-Id", "req_1"),
        ]
    )

    relayed = response_headers(upstream)

    assert list(relayed.items()) == [
        ("Content-Type", "application/json"),
        ("X-Request-Id", "req_1"),
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_the_proxy_does_not_relay_headers_the_upstream_named_hop_by_hop(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, stream: bool
) -> None:
    headers = {"Connection": "keep-alive, X-Upstream-Hop", "X-Upstream-Hop": "internal-10.0.0.7"}
    headers["X-End-To-End"] = "kept"
    if stream:
        upstream.enqueue(Reply(events=token_events(CLEAN_TOKENS), headers=headers))
    else:
        upstream.enqueue(Reply(body=json_bytes(logprobs_reply(CLEAN_TOKENS)), headers=headers))

    body = {"model": "m", "messages": USER, "stream": stream}
    status, got, raw = await post(http, await make_proxy(PII_POLICY), body)

    assert status == 200
    assert "X-Upstream-Hop" not in got and b"internal-10.0.0.7" not in raw
    assert got["X-End-To-End"] == "kept"


# ---- 6. an error after a Responses stream started ----------------------------------------------


async def raw_exchange(proxy: RunningServer, body: dict[str, Any]) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
    data = json.dumps(body).encode()
    writer.write(
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer sk-client\r\n"
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    received = b""
    async with asyncio.timeout(5):  # the connection is closed: no hang
        while chunk_ := await reader.read(65536):
            received += chunk_
    writer.close()
    return received


@pytest.mark.parametrize("when", ["before-any-event", "mid-stream"])
async def test_an_error_after_a_responses_stream_started_aborts_the_connection(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    when: str,
) -> None:
    # A bug in the translation, injected: the proxy's own code failing after the stream's
    # status line went out.
    def fail(self: ResponseTranslator, *args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(
        ResponseTranslator, "start" if when == "before-any-event" else "chunk", fail
    )
    upstream.enqueue(Reply(events=token_events(CLEAN_TOKENS)))
    proxy = await make_proxy(PII_POLICY, responses_db=str(tmp_path / "r.sqlite3"))

    received = await raw_exchange(
        proxy, {"model": "m", "input": "hi", "stream": True, "store": False}
    )

    assert len(re.findall(rb"HTTP/1\.1 \d{3}", received)) == 1, received
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
    # The body is visibly cut, never complete (the headers alone may end in "0\r\n\r\n":
    # a request id ending in 0).
    body = received.partition(b"\r\n\r\n")[2]
    assert not body.endswith(b"0\r\n\r\n"), body
    assert b"internal_error" not in received
