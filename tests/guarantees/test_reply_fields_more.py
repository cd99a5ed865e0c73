"""Reply text in the fields that custom tools and reasoning backends use.

- a custom tool call (``"type": "custom"``) carries its input as free text in
  ``custom.input`` (not JSON): its own channel per call, ``(choice, "custom_tool_calls", index)``;
- ``thinking`` (a string beside ``content``, as some backends send their reasoning) is read
  like ``reasoning``;
- OpenRouter's ``reasoning_details`` items carry reasoning in ``text`` (``reasoning.text``) and
  ``summary`` (``reasoning.summary``): one channel per choice, items in order; the ``data`` of
  ``reasoning.encrypted`` is opaque.

Each is checked (a banned phrase split across stream deltas is found), redacted in place, and
relayed byte for byte when clean; a wrong shape fails closed, whole reply and stream.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import openai
import pytest

from proxy.serving.server import RunningServer
from shields.openai.errors import MalformedReply
from shields.openai.reply import READERS, TEXT_KEYS, reply_fields
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED, DONE, REFUSAL, REPO_ROOT, USER
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse

PII_POLICY = (REPO_ROOT / "policies" / "pii-redact.yaml").read_text()
EMAIL = "jane.doe@example.org"


# ---- helpers -----------------------------------------------------------------------------


def body(*, stream: bool = False) -> dict[str, Any]:
    return {"model": "fake-model", "messages": USER, "stream": stream}


async def post(
    http: aiohttp.ClientSession, proxy: RunningServer, payload: dict[str, Any]
) -> tuple[int, bytes]:
    async with http.post(f"{proxy.url}/v1/chat/completions", json=payload) as resp:
        return resp.status, await resp.read()


def stream_chunks(raw: bytes) -> list[dict[str, Any]]:
    """A chat stream parsed strictly: ``data: X`` events only, ending with [DONE]."""
    assert raw.endswith(DONE), raw[-200:]
    out = []
    for event in raw[: -len(DONE)].split(b"\n\n")[:-1]:
        assert event.startswith(b"data: ") and b"\n" not in event, event[:200]
        out.append(json.loads(event[len(b"data: ") :]))
    return out


def assert_stream_refused(raw: bytes) -> None:
    chunks = stream_chunks(raw)
    content = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
    )
    assert content == REFUSAL
    assert chunks[-1]["choices"][0]["finish_reason"] == "content_filter"


def assert_reply_refused(raw: bytes) -> None:
    choice = json.loads(raw)["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert choice["message"]["content"] == REFUSAL


def in_band_error(raw: bytes) -> dict[str, Any]:
    chunks = stream_chunks(raw)
    assert chunks and "error" in chunks[-1], raw[-300:]
    error: dict[str, Any] = chunks[-1]["error"]
    return error


def custom_call(
    text: str, *, index: int | None = None, name: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A custom tool call; with ``index``, a stream delta's (continuations omit the name)."""
    custom = {"input": text} if name is None else {"name": name, "input": text}
    call: dict[str, Any] = {"custom": custom, **extra}
    if index is not None:
        call["index"] = index
    return call


def custom_input(chunks: list[dict[str, Any]], index: int = 0) -> str:
    return "".join(
        (call.get("custom") or {}).get("input") or ""
        for c in chunks
        for choice in c.get("choices") or []
        for call in choice["delta"].get("tool_calls") or []
        if call["index"] == index
    )


def reasoning_text(chunks: list[dict[str, Any]]) -> str:
    return "".join(
        item.get("text") or item.get("summary") or ""
        for c in chunks
        for choice in c.get("choices") or []
        for item in choice["delta"].get("reasoning_details") or []
    )


# ---- unit: reply_fields ------------------------------------------------------------------


def fields(message: Any, *, stream: bool = False) -> list[tuple[tuple[Any, ...], str]]:
    return [(f.channel, f.text) for f in reply_fields(message, 1, stream=stream)]


def test_custom_tool_input_is_its_own_free_text_channel() -> None:
    message = {
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "custom", "custom": {"name": "shell", "input": "ls -la"}},
        ],
    }
    got = list(reply_fields(message, 1, stream=False))
    # The calls' names are text too, each on a channel of its own.
    assert [(f.channel, f.text) for f in got] == [
        ((1, "tool_calls", 0), "{}"),
        ((1, "tool_name", 0), "f"),
        ((1, "custom_tool_calls", 1), "ls -la"),
        ((1, "custom_tool_name", 1), "shell"),
    ]
    got[2].write("[X]")
    assert message["tool_calls"][1]["custom"] == {"name": "shell", "input": "[X]"}  # type: ignore[index]


def test_a_streamed_custom_call_continues_by_its_index() -> None:
    first = {"tool_calls": [custom_call("how to build a ", index=3, id="c", type="custom")]}
    assert fields(first, stream=True) == [((1, "custom_tool_calls", 3), "how to build a ")]
    assert fields({"tool_calls": [custom_call("bomb", index=3)]}, stream=True) == [
        ((1, "custom_tool_calls", 3), "bomb")
    ]
    with pytest.raises(MalformedReply):  # no index: which call it continues is a guess
        fields({"tool_calls": [custom_call("bomb")]}, stream=True)


def test_a_call_with_both_function_and_custom_has_both_read() -> None:
    call = {"function": {"arguments": '{"a": 1}'}, "custom": {"input": "free"}, "index": 0}
    assert fields({"tool_calls": [call]}, stream=True) == [
        ((1, "tool_calls", 0), '{"a": 1}'),
        ((1, "custom_tool_calls", 0), "free"),
    ]


def test_custom_calls_without_text_yield_nothing() -> None:
    calls = [
        {"id": "c", "type": "custom", "custom": custom}
        for custom in ({"name": "shell"}, {"input": None}, {"input": ""}, None, {"input": "x"})
    ]
    assert fields({"tool_calls": calls}) == [
        ((1, "custom_tool_name", 0), "shell"),  # a name, but no input
        ((1, "custom_tool_calls", 4), "x"),
    ]


@pytest.mark.parametrize(
    "custom",
    ["how to build a bomb", ["x"], 5, {"input": 5}, {"input": ["x"]}, {"input": {"a": "b"}}],
)
def test_malformed_custom_calls_are_refused(custom: Any) -> None:
    for stream in (False, True):
        with pytest.raises(MalformedReply):
            fields(
                {"tool_calls": [{"index": 0, "type": "custom", "custom": custom}]}, stream=stream
            )


def test_thinking_is_read_like_reasoning() -> None:
    assert "thinking" in TEXT_KEYS  # the stream guard's fast path reads it too
    message = {"thinking": "let me see", "content": "hi"}
    got = list(reply_fields(message, 1, stream=True))
    assert [(f.channel, f.text) for f in got] == [
        ((1, "thinking"), "let me see"),
        ((1, "content"), "hi"),
    ]
    got[0].write("[X]")
    assert message["thinking"] == "[X]"
    for bad in ({"content": "x"}, ["x"], 5, True):
        with pytest.raises(MalformedReply):
            fields({"thinking": bad})


DETAILS = [
    {"type": "reasoning.summary", "summary": "Plan: answer.", "format": "x", "index": 0},
    {"type": "reasoning.encrypted", "data": "opaque-build-a-bomb", "index": 1},
    {"type": "reasoning.text", "text": "First, ", "signature": "sig", "index": 2},
    {"type": "reasoning.text", "text": "", "index": 3},
    {"type": "reasoning.text", "text": "then.", "summary": None, "index": 4},
]


def test_reasoning_details_are_one_text_per_choice_in_order() -> None:
    assert "reasoning_details" in READERS and "reasoning_details" not in TEXT_KEYS
    message = {"content": None, "reasoning_details": json.loads(json.dumps(DETAILS))}
    got = list(reply_fields(message, 1, stream=False))
    assert [(f.channel, f.text) for f in got] == [
        ((1, "reasoning_details"), "Plan: answer."),
        ((1, "reasoning_details"), "First, "),
        ((1, "reasoning_details"), "then."),
    ]
    got[0].write("[S]")
    got[2].write("[T]")
    details = message["reasoning_details"]
    assert details[0]["summary"] == "[S]" and details[4]["text"] == "[T]"
    assert details[1] == DETAILS[1]  # encrypted data is left alone
    assert fields({"reasoning_details": []}, stream=True) == []


@pytest.mark.parametrize(
    "details",
    [
        "build a bomb",
        {"type": "reasoning.text", "text": "x"},
        ["build a bomb"],
        [None],
        [{"type": "reasoning.text", "text": ["build a bomb"]}],
        [{"type": "reasoning.summary", "summary": ["build a bomb"]}],
        [{"type": "reasoning.text", "text": 5}],
    ],
)
def test_malformed_reasoning_details_are_refused(details: Any) -> None:
    for stream in (False, True):
        with pytest.raises(MalformedReply):
            fields({"reasoning_details": details}, stream=stream)


def test_free_text_channels_are_not_named_as_json_ones() -> None:
    """Channels named "tool_calls"/"function_call" hold JSON text; free text must not."""
    message = {
        "thinking": "t",
        "reasoning_details": [{"text": "r"}],
        "tool_calls": [{"index": 0, "custom": {"input": "i"}}],
    }
    got = list(reply_fields(message, 0, stream=True))
    assert [f.text for f in got] == ["t", "r", "i"]
    for field in got:
        assert field.channel[1] not in ("tool_calls", "function_call")


# ---- end to end: banned text is refused --------------------------------------------------

# Upstream stream events (after the role event) that split BANNED over two deltas.
SPLIT_STREAMS = {
    "custom-tool-call": [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "custom",
                        "custom": {"name": "shell", "input": "how to build a "},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "custom": {"input": "bomb"}}]}),
    ],
    "second-custom-call": [
        chunk({"tool_calls": [custom_call("fine", index=0, id="c0", type="custom")]}),
        chunk({"tool_calls": [custom_call("how to build", index=1, id="c1", type="custom")]}),
        chunk({"tool_calls": [custom_call("fine too", index=0)]}),
        chunk({"tool_calls": [custom_call(" a bomb", index=1)]}),
    ],
    "thinking": [chunk({"thinking": "how to build a "}), chunk({"thinking": "bomb"})],
    "reasoning-details-text": [
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": "how to build"}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": " a bomb"}]}),
    ],
    "reasoning-details-text-then-summary": [
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": "how to build a "}]}),
        chunk({"reasoning_details": [{"type": "reasoning.summary", "summary": "bomb"}]}),
    ],
}


@pytest.mark.parametrize("events", list(SPLIT_STREAMS.values()), ids=list(SPLIT_STREAMS))
async def test_a_banned_phrase_split_across_deltas_is_refused(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    events: list[dict[str, Any]],
) -> None:
    role = chunk({"role": "assistant", "content": None})
    upstream.enqueue(Reply(events=[role, *events, chunk({}, finish_reason="stop")]))
    proxy = await make_proxy()

    status, raw = await post(http, proxy, body(stream=True))

    assert status == 200
    assert b"bomb" not in raw
    assert_stream_refused(raw)


NON_STREAM_MESSAGES = {
    "custom-tool-call": {
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "shell", "input": f"how to {BANNED}"}}
        ],
    },
    "function-and-custom": {
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "c2", "type": "custom", "custom": {"name": "g", "input": BANNED}},
        ],
    },
    "thinking": {"content": "ok", "thinking": f"how to {BANNED}"},
    "reasoning-details-text": {
        "content": "ok",
        "reasoning_details": [{"type": "reasoning.text", "text": f"how to {BANNED}"}],
    },
    "reasoning-details-summary": {
        "content": "ok",
        "reasoning_details": [
            {"type": "reasoning.encrypted", "data": "abc"},
            {"type": "reasoning.summary", "summary": f"how to {BANNED}"},
        ],
    },
}


@pytest.mark.parametrize(
    "message", list(NON_STREAM_MESSAGES.values()), ids=list(NON_STREAM_MESSAGES)
)
async def test_a_banned_phrase_in_a_whole_reply_is_refused(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    message: dict[str, Any],
) -> None:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=[choice]))))
    proxy = await make_proxy()

    status, raw = await post(http, proxy, body())

    assert status == 200
    assert b"bomb" not in raw
    assert_reply_refused(raw)


async def test_the_sdk_sees_a_refusal_for_a_banned_custom_tool_call(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    calls = [{"id": "c1", "type": "custom", "custom": {"name": "shell", "input": BANNED}}]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=calls))))
    client: openai.AsyncOpenAI = make_client(await make_proxy())

    completion = await client.chat.completions.create(model="fake-model", messages=USER)  # type: ignore[arg-type]

    choice = completion.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.content == REFUSAL and not choice.message.tool_calls


# ---- end to end: clean text passes unchanged ---------------------------------------------

CLEAN_MESSAGE = {
    "role": "assistant",
    "content": "Done.",
    "thinking": "The user wants a listing.",
    "reasoning_details": [
        {"type": "reasoning.summary", "summary": "List files.", "format": "unknown", "index": 0},
        {"type": "reasoning.encrypted", "data": "ZW5jcnlwdGVk", "index": 1},
        {"type": "reasoning.text", "text": "Use ls.", "signature": "sig", "index": 2},
    ],
    "tool_calls": [
        {"id": "c1", "type": "custom", "custom": {"name": "shell", "input": "ls -la ~/src"}},
        {"id": "c2", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}},
    ],
}


@pytest.mark.parametrize("clean", ["The user wants", "List files", "Use ls", "ls -la"])
async def test_a_clean_reply_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, clean: str
) -> None:
    """Unchanged while clean; refused once ``clean`` (text of one field) becomes banned."""
    choice = {"index": 0, "message": CLEAN_MESSAGE, "logprobs": None, "finish_reason": "stop"}
    payload = json_bytes(chat_completion(choices=[choice]))
    banned = payload.replace(clean.encode(), BANNED.encode())
    assert banned != payload
    upstream.enqueue(Reply(body=payload), Reply(body=banned))
    proxy = await make_proxy()

    assert await post(http, proxy, body()) == (200, payload)
    status, raw = await post(http, proxy, body())
    assert status == 200 and b"bomb" not in raw
    assert_reply_refused(raw)


@pytest.mark.parametrize("clean", ["The user wants", "Use", "ls -la"])
async def test_a_clean_stream_is_relayed_byte_for_byte(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, clean: str
) -> None:
    """Unchanged while clean; refused once ``clean`` (text of one field) becomes banned."""
    events = [
        chunk({"role": "assistant", "content": None}),
        chunk({"thinking": "The user wants "}),
        chunk({"thinking": "a listing."}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": "Use", "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": " ls.", "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}]}),
        chunk(
            {"tool_calls": [custom_call("ls -la", index=0, id="c1", type="custom", name="shell")]}
        ),
        chunk({"tool_calls": [custom_call(" ~/src", index=0)]}),
        chunk({}, finish_reason="tool_calls"),
    ]
    payload = sse(*events)
    banned = payload.replace(f'"{clean}'.encode(), f'"{BANNED}'.encode())
    assert banned != payload
    upstream.enqueue(Reply(events=list(events)), Reply(body=banned))
    proxy = await make_proxy()

    assert await post(http, proxy, body(stream=True)) == (200, payload)
    status, raw = await post(http, proxy, body(stream=True))
    assert status == 200 and b"bomb" not in raw
    assert_stream_refused(raw)


# ---- end to end: redaction ---------------------------------------------------------------

# Longer than the pii policy's hold-back (166) before and after the address, so that events
# leave before it is found and after it was rewritten.
LEAD = "Run this to notify the owner of the account, then wait. " * 4
TRAIL = " and then report back what happened, with the exit code and output. " * 4
TEXT = f"{LEAD}mail -s hi {EMAIL}{TRAIL}"


def pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


async def test_an_email_in_a_streamed_custom_input_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    parts = pieces(TEXT)
    events = [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {"tool_calls": [custom_call(parts[0], index=0, id="c1", type="custom", name="shell")]}
        ),
        *[chunk({"tool_calls": [custom_call(part, index=0)]}) for part in parts[1:]],
        chunk({}, finish_reason="tool_calls"),
    ]
    upstream.enqueue(Reply(events=list(events), chunk_delay=0.001))
    proxy = await make_proxy(PII_POLICY)

    status, raw = await post(http, proxy, body(stream=True))

    assert status == 200
    assert b"jane" not in raw and b"example.org" not in raw
    chunks = stream_chunks(raw)
    assert len(chunks) == len(events)  # rewritten in place, none dropped or added
    assert custom_input(chunks) == TEXT.replace(EMAIL, "[EMAIL]")
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["custom"]["name"] == "shell"
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_an_email_in_streamed_reasoning_details_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    parts = pieces(TEXT, 7)
    events = [
        chunk({"role": "assistant", "content": None}),
        *[
            chunk({"reasoning_details": [{"type": "reasoning.text", "text": part, "index": 0}]})
            for part in parts
        ],
        chunk({"content": "ok"}),
        chunk({}, finish_reason="stop"),
    ]
    upstream.enqueue(Reply(events=list(events), chunk_delay=0.001))
    proxy = await make_proxy(PII_POLICY)

    status, raw = await post(http, proxy, body(stream=True))

    assert status == 200
    assert b"jane" not in raw and b"example.org" not in raw
    chunks = stream_chunks(raw)
    assert len(chunks) == len(events)
    assert reasoning_text(chunks) == TEXT.replace(EMAIL, "[EMAIL]")


async def test_an_email_in_a_whole_replys_custom_input_and_thinking_is_redacted(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "thinking": f"Mail {EMAIL}.",
        "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "sh", "input": TEXT}}],
    }
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=[choice]))))
    proxy = await make_proxy(PII_POLICY)

    status, raw = await post(http, proxy, body())

    assert status == 200
    assert EMAIL.encode() not in raw
    got = json.loads(raw)["choices"][0]["message"]
    assert got["thinking"] == "Mail [EMAIL]."
    assert got["tool_calls"][0]["custom"] == {"name": "sh", "input": TEXT.replace(EMAIL, "[EMAIL]")}


# ---- end to end: malformed shapes fail closed --------------------------------------------

MALFORMED = {
    "custom-not-an-object": {"tool_calls": [{"index": 0, "type": "custom", "custom": BANNED}]},
    "custom-input-a-list": {"tool_calls": [{"index": 0, "custom": {"input": [BANNED]}}]},
    "custom-input-an-object": {"tool_calls": [{"index": 0, "custom": {"input": {"q": BANNED}}}]},
    "thinking-an-object": {"thinking": {"text": BANNED}},
    "reasoning-details-an-object": {"reasoning_details": {"text": BANNED}},
    "reasoning-details-a-string": {"reasoning_details": BANNED},
    "reasoning-detail-text-a-list": {"reasoning_details": [{"text": [BANNED]}]},
    "reasoning-detail-summary-a-list": {"reasoning_details": [{"summary": [{"text": BANNED}]}]},
}


@pytest.mark.parametrize("delta", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_a_malformed_stream_fails_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    delta: dict[str, Any],
) -> None:
    events = [chunk({"role": "assistant", "content": None}), chunk(delta)]
    upstream.enqueue(Reply(events=[*events, chunk({}, finish_reason="stop")]))
    proxy = await make_proxy()

    status, raw = await post(http, proxy, body(stream=True))

    assert status == 200
    assert b"bomb" not in raw
    assert "invalid stream event" in in_band_error(raw)["message"]


@pytest.mark.parametrize("message", list(MALFORMED.values()), ids=list(MALFORMED))
async def test_a_malformed_reply_fails_closed(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    message: dict[str, Any],
) -> None:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=[choice]))))
    proxy = await make_proxy()

    status, raw = await post(http, proxy, body())

    assert status == 502
    assert b"bomb" not in raw
    assert json.loads(raw)["error"]["code"] == "upstream_error"
