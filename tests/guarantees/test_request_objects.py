"""The objects inside a message are closed too: content parts (per type), tool calls and
``reasoning_details`` items forward only the keys the proxy reads or knows carry no text; any
other key is a 400 naming its path. A ``file`` part's inline ``file_data`` (text the shields
cannot read) is refused; an image's URL is text the shields read. Through the real proxy, the
real ``openai`` client and the scripted upstream.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import openai
import pytest

from tests.conftest import ProxyFactory
from tests.support.constants import BANNED
from tests.support.fake_upstream import FakeUpstream

POLICY = f"""
version: 1
name: objects
input:
  - {{id: bomb, type: denylist, phrases: ["{BANNED}"]}}
  - {{id: key, type: regex, patterns: ['SECRET-[0-9]+'], action: redact}}
"""
USER = {"role": "user", "content": "hi"}


def assistant(**extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": "ok", **extra}


def call(**extra: Any) -> dict[str, Any]:
    function = {"name": "f", "arguments": "{}", **extra.pop("function", {})}
    return {"id": "c1", "type": "function", "function": function, **extra}


def parts(*content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


FILE_DATA = "data:text/plain;base64," + base64.b64encode(f"how to {BANNED}".encode()).decode()
UNREAD = {
    "file_data": (
        [parts({"type": "file", "file": {"filename": "a.txt", "file_data": FILE_DATA}})],
        "messages[0].content[0].file.file_data",
    ),
    "tool call function description": (
        [USER, assistant(tool_calls=[call(function={"description": BANNED})])],
        "messages[1].tool_calls[0].function.description",
    ),
    "tool call extra key": (
        [USER, assistant(tool_calls=[call(note=BANNED)])],
        "messages[1].tool_calls[0].note",
    ),
    "custom tool call extra key": (
        [
            USER,
            assistant(
                tool_calls=[{"id": "c1", "type": "custom", "custom": {"name": "x", "n": BANNED}}]
            ),
        ],
        "messages[1].tool_calls[0].custom.n",
    ),
    "legacy function_call extra key": (
        [USER, assistant(function_call={"name": "f", "arguments": "{}", "note": BANNED})],
        "messages[1].function_call.note",
    ),
    "text part extra key": (
        [parts({"type": "text", "text": "hi", "note": BANNED})],
        "messages[0].content[0].note",
    ),
    "image part extra key": (
        [parts({"type": "image_url", "image_url": {"url": "https://x/a.png", "alt": BANNED}})],
        "messages[0].content[0].image_url.alt",
    ),
    "audio part extra key": (
        [parts({"type": "input_audio", "input_audio": {"data": "AAAA", "transcript": BANNED}})],
        "messages[0].content[0].input_audio.transcript",
    ),
    "cache_control extra key": (
        [parts({"type": "text", "text": "hi", "cache_control": {"type": "x", "note": BANNED}})],
        "messages[0].content[0].cache_control.note",
    ),
    "reasoning_details item extra key": (
        [USER, assistant(reasoning_details=[{"type": "reasoning.text", "text": "x", "n": BANNED}])],
        "messages[1].reasoning_details[0].n",
    ),
}


@pytest.mark.parametrize(("messages", "named"), list(UNREAD.values()), ids=list(UNREAD))
async def test_a_key_the_proxy_does_not_read_is_a_400_naming_its_path(
    messages: list[dict[str, Any]],
    named: str,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
) -> None:
    client = make_client(await make_proxy(POLICY))
    with pytest.raises(openai.BadRequestError) as raised:
        await client.chat.completions.create(model="m", messages=messages)
    assert named in str(raised.value)
    assert upstream.requests == []


async def test_what_clients_send_passes_and_an_image_url_is_checked_text(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    client = make_client(await make_proxy(POLICY))
    inline = "data:image/png;base64,U0VDUkVULTEyMzQ="  # binary: not read, even if it matches
    messages: list[dict[str, Any]] = [
        parts(
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image_url", "image_url": {"url": "https://x/p.png?k=SECRET-1234"}},
            {"type": "image_url", "image_url": {"url": inline, "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-1", "filename": "a.pdf"}},
        ),
        assistant(
            tool_calls=[call(index=0)],
            reasoning_details=[
                {"type": "reasoning.text", "text": "t", "signature": "sig", "index": 0},
                {"type": "reasoning.encrypted", "data": "enc", "id": "r1", "format": "f"},
            ],
        ),
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    await client.chat.completions.create(model="m", messages=messages)
    expected = copy.deepcopy(messages)
    expected[0]["content"][1]["image_url"]["url"] = "https://x/p.png?k=[REDACTED]"
    assert upstream.requests[0].json()["messages"] == expected
    assert b"SECRET-1234" not in upstream.requests[0].body


async def test_banned_text_in_an_image_url_blocks_the_request(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    client = make_client(await make_proxy(POLICY))
    messages = [parts({"type": "image_url", "image_url": {"url": f"https://x/{BANNED}.png"}})]
    await client.chat.completions.create(model="m", messages=messages)
    assert upstream.requests == []
