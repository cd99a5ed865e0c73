"""Remote shields see what the model and the client see, whole (issue 14, items 3, 7 and 8).

- Output: a reply's content parts (and ``reasoning_details`` items) are judged as the one text
  the client joins — and the Responses API's ``output_text`` — not piece by piece.
- Input: system and developer prompts, a trailing system message, the Responses API's
  ``instructions`` and the request's tool definitions reach the judge, unless its ``roles``
  leave them out.
- Roles: on the Responses API a ``developer`` message (and the ``instructions``) is developer
  text to the shields, as on chat; only the upstream gets ``system``.

The judge, moderation endpoint and webhook are ``tests.support.fake_judges``; the proxy and the
``openai`` client are real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.conftest import ProxyFactory
from tests.support.constants import BANNED
from tests.support.fake_judges import Answer, FakeJudges
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, json_bytes

REFUSAL = "Sorry, I can't help with that."


@pytest.fixture
async def judges() -> AsyncIterator[FakeJudges]:
    async with FakeJudges() as fake:
        yield fake


def remote_policy(judges: FakeJudges, stage: str, kind: str, roles: str = "") -> str:
    where = {
        "webhook": f"url: {judges.url}/hook",
        "llm_judge": f"base_url: {judges.base_url}\n    model: llama-guard-3",
        "moderation": f"base_url: {judges.base_url}\n    default_threshold: 0.5",
    }[kind]
    scope = f"\n    roles: {roles}" if roles else ""
    return f"""
version: 1
name: remote
refusal: {{message: "{REFUSAL}"}}
{stage}:
  - id: judge
    type: {kind}
    {where}
    timeout: 5{scope}
"""


def hook_blocks_banned(judges: FakeJudges) -> None:
    judges.webhook = lambda body: Answer(
        json={"action": "block" if BANNED in body["text"] else "allow", "reason": "r"}
    )


def judge_flags_banned(judges: FakeJudges) -> None:
    # As Llama Guard does: the verdict is about the conversation's last turn only.
    def answer(body: Any) -> Answer:
        last = body["messages"][-1]["content"]
        return Answer(text="unsafe\nS9" if BANNED in last else "safe")

    judges.judge = answer


PARTS = {
    "content parts": {
        "role": "assistant",
        "content": [{"type": "text", "text": "build a "}, {"type": "text", "text": "bomb"}],
    },
    "reasoning_details": {
        "role": "assistant",
        "content": "fine",
        "reasoning_details": [
            {"type": "reasoning.text", "text": "build a "},
            {"type": "reasoning.text", "text": "bomb"},
        ],
    },
}


@pytest.mark.parametrize("message", list(PARTS.values()), ids=list(PARTS))
async def test_a_reply_in_pieces_is_judged_as_the_text_the_client_joins(
    message: dict[str, Any],
    judges: FakeJudges,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
) -> None:
    hook_blocks_banned(judges)
    choices = [{"index": 0, "message": message, "finish_reason": "stop"}]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=choices))))
    client = make_client(await make_proxy(remote_policy(judges, "output", "webhook")))
    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content == REFUSAL
    assert BANNED in [call.body["text"] for call in judges.calls_to("webhook")]


async def test_responses_output_text_from_parts_is_what_the_judge_saw(
    judges: FakeJudges, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    hook_blocks_banned(judges)
    choices = [{"index": 0, "message": PARTS["content parts"], "finish_reason": "stop"}]
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=choices))))
    client = make_client(await make_proxy(remote_policy(judges, "output", "webhook")))
    response = await client.responses.create(model="m", input="hi")
    assert BANNED not in response.output_text
    assert response.output[-1].content[0].refusal == REFUSAL  # type: ignore[union-attr]


CONVERSATIONS = {
    "system prompt": [
        {"role": "system", "content": f"Explain how to {BANNED}."},
        {"role": "user", "content": "go on"},
    ],
    "developer prompt": [
        {"role": "developer", "content": f"Explain how to {BANNED}."},
        {"role": "user", "content": "go on"},
    ],
    "trailing system message": [
        {"role": "user", "content": "hello"},
        {"role": "system", "content": f"Now explain how to {BANNED}."},
    ],
    "an earlier user turn": [
        {"role": "user", "content": f"how do I {BANNED}?"},
        {"role": "assistant", "content": "I can tell you."},
        {"role": "user", "content": "go on"},
    ],
}


# A trailing system message was the latest message, which moderation and webhooks judged.
CASES = [
    pytest.param(kind, messages, id=f"{name}-{kind}")
    for name, messages in CONVERSATIONS.items()
    for kind in ("llm_judge", "moderation", "webhook")
    if name != "trailing system message" or kind == "llm_judge"
]


@pytest.mark.parametrize(("kind", "messages"), CASES)
async def test_every_input_text_reaches_the_judge(
    kind: str,
    messages: list[dict[str, str]],
    judges: FakeJudges,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: Any,
) -> None:
    hook_blocks_banned(judges)
    judge_flags_banned(judges)
    judges.moderation = lambda body: Answer(
        json={
            "results": [
                {
                    "flagged": BANNED in body["input"],
                    "categories": {"violence": BANNED in body["input"]},
                    "category_scores": {"violence": 0.9 if BANNED in body["input"] else 0.0},
                }
            ]
        }
    )
    client = make_client(await make_proxy(remote_policy(judges, "input", kind)))
    reply = await client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == REFUSAL
    assert upstream.requests == []


async def test_tool_definitions_reach_the_judge(
    judges: FakeJudges, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    judge_flags_banned(judges)
    client = make_client(await make_proxy(remote_policy(judges, "input", "llm_judge")))
    tools: Any = [{"type": "function", "function": {"name": "f", "description": BANNED}}]
    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=tools
    )
    assert reply.choices[0].message.content == REFUSAL
    assert upstream.requests == []


async def test_responses_instructions_reach_the_judge_as_developer_text(
    judges: FakeJudges, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    client = make_client(await make_proxy(remote_policy(judges, "input", "webhook")))
    await client.responses.create(model="m", input="hi", instructions="be brief")
    sent = judges.calls_to("webhook")[-1].body["messages"]
    assert sent == [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]


def local_policy(roles: str) -> str:
    return f"""
version: 1
name: roles
refusal: {{message: "{REFUSAL}"}}
input:
  - id: bomb
    type: denylist
    phrases: ["{BANNED}"]
    roles: {roles}
"""


@pytest.mark.parametrize("where", ["developer message", "instructions"])
async def test_a_developer_scoped_shield_holds_on_the_responses_api(
    where: str, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: Any
) -> None:
    client = make_client(await make_proxy(local_policy("[developer]")))
    text = f"Explain how to {BANNED}."
    if where == "instructions":
        response = await client.responses.create(model="m", input="hi", instructions=text)
    else:
        items: Any = [
            {"role": "developer", "content": text},
            {"role": "user", "content": "hi"},
        ]
        response = await client.responses.create(model="m", input=items)
    assert response.output[0].content[0].refusal == REFUSAL  # type: ignore[union-attr]
    assert upstream.requests == []
    # Clean developer text goes upstream as `system`, which every chat backend knows.
    items = [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}]
    await client.responses.create(model="m", input=items, instructions="be kind")
    roles = [m["role"] for m in upstream.requests[0].json()["messages"]]
    assert roles == ["system", "system", "user"]
