"""Keys that differ from a field name only in case are a 400 (issue 14, item 6).

The body is forwarded as the client sent it, and Go's ``encoding/json`` (Ollama's OpenAI
endpoint) matches keys to fields ignoring case — with Unicode simple folding: LONG S is an
``s``, KELVIN SIGN a ``k`` — and keeps the last match. ``"Content"`` beside ``"content"`` is
then the text the model reads, and the shields never saw it. Through the real proxy; the
upstream is never contacted.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from shields.json_codec import go_fold
from tests.conftest import ProxyFactory
from tests.support.constants import BANNED
from tests.support.fake_upstream import FakeUpstream

POLICY = f"""
version: 1
name: cases
input:
  - id: bomb
    type: denylist
    phrases: ["{BANNED}"]
"""


def body(*messages: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"model": "m", "messages": list(messages) or [{"role": "user", "content": "hi"}], **top}


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}

VARIANTS = {
    "top level beside": body(MESSAGES=[{"role": "user", "content": BANNED}]),
    "top level long s": body(**{"ſtream": True}),
    "message beside": body({"role": "user", "content": "hi", "Content": BANNED}),
    "message instead": body({"role": "user", "content": "hi"}, {"role": "user", "CONTENT": BANNED}),
    "message kelvin sign": body(
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok", "thin\u212aing": BANNED},
    ),
    "message long s": body({"role": "user", "content": "hi", "reaſoning_content": BANNED}),
    "content part": body(
        {"role": "user", "content": [{"type": "text", "text": "hi", "Text": BANNED}]}
    ),
    "tool call": body(
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{**CALL, "Function": {"name": "f", "arguments": BANNED}}],
        },
    ),
    "function": body(
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {**CALL, "function": {"name": "f", "arguments": "{}", "ARGUMENTS": BANNED}}
            ],
        },
    ),
    "reasoning details": body(
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_details": [{"type": "reasoning.text", "text": "x", "ſummary": BANNED}],
        },
    ),
    "tool definition": body(
        tools=[{"type": "function", "function": {"name": "f"}, "FUNCTION": {"name": "g"}}]
    ),
}


@pytest.mark.parametrize("sent", list(VARIANTS.values()), ids=list(VARIANTS))
async def test_a_key_that_folds_onto_a_field_name_is_a_400(
    sent: dict[str, Any],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    proxy = await make_proxy(POLICY)
    data = json.dumps(sent, ensure_ascii=False).encode()
    async with http.post(f"{proxy.url}/v1/chat/completions", data=data) as response:
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["type"] == "invalid_request_error"
    assert upstream.requests == []


async def test_free_form_objects_keep_their_keys(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    # A schema's property names are the application's own: "Content" beside "content" there
    # is no field of the request (and every string in a schema is checked anyway); beside the
    # tool's own fields it is.
    parameters = {
        "type": "object",
        "properties": {"content": {"type": "string"}, "Content": {"type": "string"}},
    }
    function = {"name": "f", "parameters": parameters}
    url = f"{(await make_proxy(POLICY)).url}/v1/chat/completions"
    data = json.dumps(body(tools=[{"type": "function", "function": function}])).encode()
    async with http.post(url, data=data) as response:
        assert response.status == 200
    assert upstream.requests[0].body == data
    variant = {"type": "function", "function": function, "Function": {"name": "g"}}
    async with http.post(url, data=json.dumps(body(tools=[variant])).encode()) as response:
        assert response.status == 400
    assert len(upstream.requests) == 1


def test_go_folding_matches_go_on_the_characters_that_reach_ascii() -> None:
    assert go_fold("messages") == go_fold("MESSAGES") == go_fold("MeSSageſ")
    assert go_fold("\u212aind") == go_fold("kind")
    # The Turkic i's fold only to themselves in Go.
    assert go_fold("\u0131d") != go_fold("id")
    assert go_fold("\u0130d") != go_fold("id")
