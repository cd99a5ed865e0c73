"""Remote shields (llm_judge, moderation, webhook) through the real proxy and the real client.

The judge, the moderation endpoint and the webhook are fakes of the outside world
(``tests.support.fake_judges``: a real server on port 0); the proxy, its backends and the ``openai``
client are the real ones.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from shields.base import Action, Role, Stage
from shields.builtin.llm_judge import parse_verdict
from shields.policy import PolicyError, parse_policy
from shields.remote import JudgeRequest, RemoteAnswerError, VerdictCache, Vote
from tests.support.fake_judges import Answer, FakeJudges, judge_says, moderation_scores
from tests.support.fake_upstream import Reply, chat_completion, chunk, json_bytes

UNSAFE = "unsafe\nS1,S9"


@pytest.fixture
async def judges() -> AsyncIterator[FakeJudges]:
    async with FakeJudges() as fake:
        yield fake


def judge_policy(
    judges: FakeJudges,
    *,
    stage: str = "input",
    extra: str = "",
    local: str = "",
    on_error: str = "block",
) -> str:
    return f"""
version: 1
name: judged
on_error: {on_error}
stream: {{holdback_chars: 32}}
{stage}:
{local}  - id: guard
    type: llm_judge
    base_url: {judges.base_url}
    model: llama-guard-3
    timeout: 1.0
    retries: 2
{extra}
"""


def messages(text: str = "hello there") -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


# -- the Llama Guard answer format -----------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("safe", (False, [])),
        ("safe\n", (False, [])),
        ("  unsafe\nS1,S9\n", (True, ["S1", "S9"])),
        ("unsafe\nS14", (True, ["S14"])),
        ("unsafe\nS10, S3", (True, ["S10", "S3"])),
    ],
)
def test_llama_guard_answers_are_read(answer: str, expected: tuple[bool, list[str]]) -> None:
    assert parse_verdict(answer) == expected


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "Safe",
        "SAFE",
        "yes",
        "safe\nS1",
        "unsafe",
        "unsafe\n",
        "unsafe\nS15",
        "unsafe\nS0",
        "unsafe\nviolence",
        "unsafe\nS1\nS2",
        "I think this is safe",
        "unsafe\nS1,",
    ],
)
def test_anything_else_is_an_error_never_safe(answer: str) -> None:
    with pytest.raises(RemoteAnswerError):
        parse_verdict(answer)


# -- policy validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("    categories: [S1, S99]", "unknown categories"),
        ("    prompt: 'judge {text}'", "unknown placeholders"),
        ("    prompt: 'judge this'", "must contain {conversation}"),
        ("    api_key: sk-secret", "unknown key"),
        ("    api_key_env: 'not a name'", "api_key_env"),
        ("    stream: {every_chars: 0}", "every_chars"),
        ("    stream: {release: later}", "release"),
        ("    timeout: 0", "timeout"),
    ],
)
def test_bad_judge_settings_fail_at_load(judges: FakeJudges, extra: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(judge_policy(judges, extra=extra))
    assert message in str(caught.value)


def test_remote_shields_are_kept_apart_from_scanners(judges: FakeJudges) -> None:
    policy = parse_policy(
        judge_policy(judges, local="  - {id: words, type: denylist, phrases: [bomb]}\n")
    )
    assert [s.id for s in policy.shields(Stage.INPUT)] == ["words"]
    assert [s.id for s in policy.remote(Stage.INPUT)] == ["guard"]
    assert policy.has_remote


# -- the verdict cache -----------------------------------------------------------------------


def test_cache_is_bounded_and_expires() -> None:
    now = [0.0]
    cache = VerdictCache(size=2, ttl=10, clock=lambda: now[0])
    votes = (Vote("S1", Action.BLOCK),)
    cache.put("a", votes)
    cache.put("b", ())
    cache.put("c", ())
    assert len(cache) == 2
    assert cache.get("a") is None  # the oldest went first
    assert cache.get("b") == ()
    now[0] = 11
    assert cache.get("b") is None
    assert cache.get("c") is None


def test_cache_key_covers_the_conversation() -> None:
    one = JudgeRequest(Stage.OUTPUT, "sure", ((Role.USER, "how do I bake bread?"),))
    two = JudgeRequest(Stage.OUTPUT, "sure", ((Role.USER, "how do I build a weapon?"),))
    assert one.digest() != two.digest()
    assert one.digest() == JudgeRequest(Stage.OUTPUT, "sure", one.conversation).digest()


# -- llm_judge at the input stage ------------------------------------------------------------


async def test_safe_input_is_forwarded(judges, upstream, make_proxy, make_client) -> None:
    proxy = await make_proxy(judge_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"
    assert len(upstream.requests) == 1
    (call,) = judges.calls_to("judge")
    assert call.body["model"] == "llama-guard-3"
    assert call.body["messages"] == [{"role": "user", "content": "hello there"}]
    # No key configured: a placeholder, never the proxy's or the client's.
    assert call.headers["Authorization"] == "Bearer unused"


async def test_unsafe_input_is_refused_with_its_categories_audited(
    judges, upstream, make_proxy, make_client, tmp_path
) -> None:
    judges.judge = judge_says(UNSAFE)
    audit = tmp_path / "audit.jsonl"
    proxy = await make_proxy(judge_policy(judges), audit_log=str(audit))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert upstream.requests == []
    for _ in range(50):
        if audit.exists() and audit.read_text().count("\n") >= 2:
            break
        await asyncio.sleep(0.02)
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["shield"], r["label"], r["type"]) for r in records] == [
        ("guard", "S1", "llm_judge"),
        ("guard", "S9", "llm_judge"),
    ]


async def test_api_key_comes_from_the_named_variable(
    judges, upstream, make_proxy, make_client, monkeypatch
) -> None:
    monkeypatch.setenv("GUARD_KEY", "sk-guard-123")
    proxy = await make_proxy(judge_policy(judges, extra="    api_key_env: GUARD_KEY"))
    await make_client(proxy, api_key="sk-client-9").chat.completions.create(
        model="m", messages=messages()
    )
    assert judges.calls_to("judge")[0].headers["Authorization"] == "Bearer sk-guard-123"


async def test_unset_key_variable_fails_closed(
    judges, upstream, make_proxy, make_client, monkeypatch
) -> None:
    monkeypatch.delenv("GUARD_KEY_MISSING", raising=False)
    proxy = await make_proxy(judge_policy(judges, extra="    api_key_env: GUARD_KEY_MISSING"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert judges.calls == [] and upstream.requests == []


async def test_enforced_categories_only(judges, upstream, make_proxy, make_client) -> None:
    judges.judge = judge_says("unsafe\nS2")
    proxy = await make_proxy(judge_policy(judges, extra="    categories: [S1, S9]"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"  # S2 is reported, not enforced
    judges.judge = judge_says("unsafe\nS2,S9")
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages("other"))
    assert reply.choices[0].finish_reason == "content_filter"


@pytest.mark.parametrize("garbage", ["I cannot help", "unsafe", "{}", "Safe."])
async def test_garbage_answer_fails_closed(
    judges, upstream, make_proxy, make_client, garbage
) -> None:
    judges.judge = judge_says(garbage)
    proxy = await make_proxy(judge_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert upstream.requests == []


async def test_on_error_allow_lets_a_failed_check_pass_and_counts_it(
    judges, upstream, make_proxy, make_client, http
) -> None:
    judges.judge = judge_says("no idea")
    proxy = await make_proxy(judge_policy(judges, extra="    on_error: allow"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"
    async with http.get(f"{proxy.url}/metrics") as response:
        text = await response.text()
    assert (
        "shieldgate_remote_shield_failures_total"
        '{endpoint="chat",kind="bad_answer",policy="judged",shield="guard"} 1.0' in text
    )
    assert 'shieldgate_remote_check_seconds_count{endpoint="chat",stage="input"} 1.0' in text


async def test_a_judge_that_never_answers_blocks_at_the_timeout(
    judges, upstream, make_proxy, make_client
) -> None:
    judges.judge = lambda body: Answer(hang=True)
    proxy = await make_proxy(judge_policy(judges, extra="    timeout: 0.3"))
    started = time.monotonic()
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    elapsed = time.monotonic() - started
    assert reply.choices[0].finish_reason == "content_filter"
    assert 0.3 <= elapsed < 1.5
    await asyncio.sleep(0.05)
    assert judges.calls_to("judge")[0].cancelled  # the call was closed, not left hanging


async def test_a_slow_judge_within_the_budget_is_waited_for(
    judges, upstream, make_proxy, make_client
) -> None:
    judges.judge = judge_says("safe", delay=0.2)
    proxy = await make_proxy(judge_policy(judges, extra="    timeout: 1.0"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"


async def test_5xx_and_429_are_retried_within_the_budget(
    judges, upstream, make_proxy, make_client
) -> None:
    answers = iter(
        [
            Answer(status=503, json={"error": {"message": "busy"}}),
            Answer(
                status=429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "0.1"}
            ),
            Answer(text="safe"),
        ]
    )
    judges.judge = lambda body: next(answers)
    proxy = await make_proxy(judge_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"
    calls = judges.calls_to("judge")
    assert len(calls) == 3
    assert calls[2].started - calls[1].started >= 0.09  # Retry-After honoured


async def test_4xx_is_not_retried(judges, upstream, make_proxy, make_client) -> None:
    judges.judge = lambda body: Answer(status=400, json={"error": {"message": "bad"}})
    proxy = await make_proxy(judge_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert len(judges.calls_to("judge")) == 1


async def test_unreachable_judge_fails_closed(upstream, make_proxy, make_client) -> None:
    fake = FakeJudges()
    fake.url = "http://127.0.0.1:9"  # discard port: connection refused
    proxy = await make_proxy(judge_policy(fake, extra="    retries: 1"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert upstream.requests == []


async def test_repeated_prompts_are_answered_from_the_cache(
    judges, upstream, make_proxy, make_client
) -> None:
    proxy = await make_proxy(judge_policy(judges, extra="    cache: {size: 10, ttl_seconds: 0.3}"))
    client = make_client(proxy)
    for _ in range(3):
        await client.chat.completions.create(model="m", messages=messages())
    assert len(judges.calls_to("judge")) == 1
    await client.chat.completions.create(model="m", messages=messages("something else"))
    assert len(judges.calls_to("judge")) == 2
    await asyncio.sleep(0.35)
    await client.chat.completions.create(model="m", messages=messages())
    assert len(judges.calls_to("judge")) == 3  # expired


async def test_concurrent_identical_prompts_share_one_call(
    judges, upstream, make_proxy, make_client
) -> None:
    judges.judge = judge_says("safe", delay=0.2)
    proxy = await make_proxy(judge_policy(judges))
    client = make_client(proxy)
    replies = await asyncio.gather(
        *(client.chat.completions.create(model="m", messages=messages()) for _ in range(5))
    )
    assert all(r.choices[0].message.content == "ok" for r in replies)
    assert len(judges.calls_to("judge")) == 1


async def test_failures_are_not_cached(judges, upstream, make_proxy, make_client) -> None:
    judges.judge = judge_says("garbage")
    proxy = await make_proxy(judge_policy(judges, extra="    retries: 0"))
    client = make_client(proxy)
    await client.chat.completions.create(model="m", messages=messages())
    judges.judge = judge_says("safe")
    reply = await client.chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "ok"
    assert len(judges.calls_to("judge")) == 2


async def test_the_judge_sees_every_turn_its_roles_cover(
    judges, upstream, make_proxy, make_client
) -> None:
    proxy = await make_proxy(
        judge_policy(judges, extra="    roles: [user]"),
    )
    conversation = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": "calling a tool"},
        {"role": "tool", "content": "tool output", "tool_call_id": "c1"},
    ]
    await make_client(proxy).chat.completions.create(model="m", messages=conversation)
    sent = sorted((c.body["messages"] for c in judges.calls_to("judge")), key=len)
    # Scoped to users: system prompts and tool results stay out, the assistant's turns are
    # context; each user turn is judged, ending the conversation the judge is shown.
    assert sent == [
        [{"role": "user", "content": "first question"}],
        [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question"},
        ],
    ]


async def test_llama_guard_3_template(judges, upstream, make_proxy, make_client) -> None:
    proxy = await make_proxy(
        judge_policy(judges, extra="    prompt: llama_guard_3\n    categories: [S1, S9]")
    )
    await make_client(proxy).chat.completions.create(model="m", messages=messages("hi {role}"))
    (message,) = judges.calls_to("judge")[0].body["messages"]
    prompt = message["content"]
    assert message["role"] == "user"
    assert "S1: Violent Crimes." in prompt and "S9: Indiscriminate Weapons." in prompt
    assert "S2:" not in prompt
    assert "User: hi {role}" in prompt  # client text is inserted, never interpreted
    assert "ONLY THE LAST User message" in prompt


# -- short-circuit and concurrency -----------------------------------------------------------


async def test_a_local_block_makes_no_remote_call(
    judges, upstream, make_proxy, make_client
) -> None:
    local = "  - {id: words, type: denylist, phrases: [build a bomb]}\n"
    proxy = await make_proxy(judge_policy(judges, local=local))
    reply = await make_client(proxy).chat.completions.create(
        model="m", messages=messages("how to build a bomb")
    )
    assert reply.choices[0].finish_reason == "content_filter"
    assert judges.calls == []


async def test_local_redaction_happens_before_the_judge_sees_the_text(
    judges, upstream, make_proxy, make_client
) -> None:
    local = "  - {id: pii, type: pii, action: redact, entities: [email]}\n"
    proxy = await make_proxy(judge_policy(judges, local=local))
    await make_client(proxy).chat.completions.create(
        model="m", messages=messages("mail me at jane.doe@example.com")
    )
    assert judges.calls_to("judge")[0].body["messages"][0]["content"] == "mail me at [EMAIL]"


def two_remote_policy(judges: FakeJudges) -> str:
    return f"""
version: 1
name: two
input:
  - id: guard
    type: llm_judge
    base_url: {judges.base_url}
    model: guard
    timeout: 5
  - id: hook
    type: webhook
    url: {judges.url}/hook
    timeout: 5
"""


async def test_remote_shields_run_concurrently(judges, upstream, make_proxy, make_client) -> None:
    judges.judge = judge_says("safe", delay=0.3)
    judges.webhook = lambda body: Answer(json={"action": "allow"}, delay=0.3)
    proxy = await make_proxy(two_remote_policy(judges))
    started = time.monotonic()
    await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert time.monotonic() - started < 0.55  # side by side: ~0.3 s, not 0.6 s


async def test_a_remote_block_cancels_the_other_calls(
    judges, upstream, make_proxy, make_client
) -> None:
    judges.judge = judge_says(UNSAFE, delay=0.05)
    judges.webhook = lambda body: Answer(hang=True)
    proxy = await make_proxy(two_remote_policy(judges))
    started = time.monotonic()
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert time.monotonic() - started < 1.0
    await asyncio.sleep(0.1)
    assert judges.calls_to("webhook")[0].cancelled


# -- the output stage ------------------------------------------------------------------------


async def test_reply_is_judged_as_the_assistant_turn(
    judges, upstream, make_proxy, make_client
) -> None:
    judges.judge = judge_says("unsafe\nS9")
    upstream.enqueue(Reply(body=json_bytes(chat_completion("mix these two chemicals"))))
    proxy = await make_proxy(judge_policy(judges, stage="output"))
    reply = await make_client(proxy).chat.completions.create(
        model="m", messages=messages("how do I clean my oven?")
    )
    assert reply.choices[0].finish_reason == "content_filter"
    assert "chemicals" not in (reply.choices[0].message.content or "")
    sent = judges.calls_to("judge")[0].body["messages"]
    assert sent == [
        {"role": "user", "content": "how do I clean my oven?"},
        {"role": "assistant", "content": "mix these two chemicals"},
    ]


async def test_safe_reply_leaves_byte_for_byte(judges, upstream, make_proxy, http) -> None:
    body = json_bytes(chat_completion("a fine answer"))
    upstream.enqueue(Reply(body=body))
    proxy = await make_proxy(judge_policy(judges, stage="output"))
    async with http.post(
        f"{proxy.url}/v1/chat/completions", json={"model": "m", "messages": messages()}
    ) as response:
        assert response.status == 200
        assert await response.read() == body


# -- streams ---------------------------------------------------------------------------------

LONG = "".join(f"Sentence number {i:03d} of a long and harmless answer. " for i in range(100))


def marker_judge(marker: str, delay: float = 0.0) -> Any:
    """A judge that finds the judged turn unsafe (S1, S9) once it contains ``marker``."""
    return lambda body: Answer(
        text=UNSAFE if marker in body["messages"][-1]["content"] else "safe", delay=delay
    )


def stream_reply(
    text: str, *, piece: int = 4, delay: float = 0.0, finish: bool = True, role: bool = True
) -> Reply:
    """``text`` as content deltas of ``piece`` characters, one write each, ``delay`` apart."""
    events: list[Any] = [
        chunk({"content": text[i : i + piece]}) for i in range(0, len(text), piece)
    ]
    if role:
        events[0]["choices"][0]["delta"]["role"] = "assistant"
    if finish:
        events.append(chunk({}, finish_reason="stop"))
    return Reply(events=events, chunk_delay=delay, events_done=finish)


def stream_policy(judges: FakeJudges, release: str, every: int = 1000) -> str:
    return judge_policy(
        judges,
        stage="output",
        extra=f"    stream: {{every_chars: {every}, release: {release}}}",
    )


async def read_stream(
    http: aiohttp.ClientSession, url: str, text: str = "hello"
) -> tuple[str, list[dict[str, Any]], list[tuple[float, str]]]:
    """The concatenated content, every data payload, and (time, content) per event."""
    content: list[str] = []
    payloads: list[dict[str, Any]] = []
    timeline: list[tuple[float, str]] = []
    async with http.post(
        f"{url}/v1/chat/completions",
        json={"model": "m", "messages": messages(text), "stream": True},
    ) as response:
        assert response.status == 200
        buffer = b""
        async for data in response.content.iter_any():
            buffer += data
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                line = frame.decode()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                payload = json.loads(line[6:])
                payloads.append(payload)
                for choice in payload.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content") or ""
                    content.append(piece)
                    timeline.append((time.monotonic(), piece))
    return "".join(content), payloads, timeline


async def test_stream_judge_calls_are_bounded(judges, upstream, make_proxy, http) -> None:
    text = LONG[:4000]
    upstream.enqueue(stream_reply(text))
    proxy = await make_proxy(stream_policy(judges, "after_check"))
    content, _, _ = await read_stream(http, proxy.url)
    assert content == text
    calls = judges.calls_to("judge")
    assert 1 <= len(calls) <= 5
    # Each call judged all text so far; the last judged the whole answer.
    judged = [c.body["messages"][-1]["content"] for c in calls]
    assert judged[-1] == text
    assert all(text.startswith(j) for j in judged)


async def test_after_check_holds_text_until_the_judge_passed_it(
    judges, upstream, make_proxy, http
) -> None:
    # The judge objects once the text reaches the marker; the marker is past the first checkpoint.
    marker = "DETONATE"
    text = LONG[:1500] + marker + LONG[:1000]

    judges.judge = marker_judge(marker, delay=0.05)
    upstream.enqueue(stream_reply(text, delay=0.0005))
    proxy = await make_proxy(stream_policy(judges, "after_check"))
    content, payloads, _ = await read_stream(http, proxy.url)
    assert marker not in content
    assert payloads[-1]["choices"][0]["finish_reason"] == "content_filter"
    released = content.removesuffix("I'm sorry, but I can't help with that.")
    if released:  # a refusal after text already sent is set apart by a blank line
        assert released.endswith("\n\n")
        released = released[:-2]
    assert text.startswith(released)
    assert len(released) < 1500 + len(marker)


async def test_immediately_lets_text_flow_and_a_late_verdict_stops_the_rest(
    judges, upstream, make_proxy, http
) -> None:
    marker = "DETONATE"
    text = LONG[:1500] + marker + LONG[:3000]

    judges.judge = marker_judge(marker, delay=0.05)
    upstream.enqueue(stream_reply(text, delay=0.0005))
    proxy = await make_proxy(stream_policy(judges, "immediately"))
    content, payloads, _ = await read_stream(http, proxy.url)
    assert payloads[-1]["choices"][0]["finish_reason"] == "content_filter"
    released = content.removesuffix("I'm sorry, but I can't help with that.")
    # Weaker, as documented: the text (marker included) flowed before the verdict came.
    assert marker in released
    assert len(released) < len(text)


async def test_after_check_releases_on_the_verdict_not_on_the_next_upstream_byte(
    judges, upstream, make_proxy, http
) -> None:
    """A judged checkpoint's text leaves as soon as the judge passes it, even while the
    upstream is silent."""
    events = stream_reply(LONG[:1200], piece=600, finish=False).events or []
    events += stream_reply("the end.", piece=8, role=False).events or []
    # Writes 1 s apart: 600 chars, 1,200 chars (checkpoint passed: judged), "the end.", finish.
    upstream.enqueue(Reply(events=events, chunk_delay=1.0))
    judges.judge = judge_says("safe", delay=0.05)
    proxy = await make_proxy(stream_policy(judges, "after_check"))
    _, _, timeline = await read_stream(http, proxy.url)
    first_text_at = next(t for t, piece in timeline if piece)
    last_text_at = [t for t, piece in timeline if piece][-1]
    # Released ~0.05 s after the second write, not with the third (1 s later): the last text
    # (after the fourth write and the final check) comes ~2 s after the first.
    assert last_text_at - first_text_at > 1.5
    assert len(judges.calls_to("judge")) == 2


async def test_a_stream_judge_failure_fails_closed(judges, upstream, make_proxy, http) -> None:
    judges.judge = judge_says("what?")
    upstream.enqueue(stream_reply(LONG[:2000], piece=8))
    proxy = await make_proxy(stream_policy(judges, "after_check"))
    content, payloads, _ = await read_stream(http, proxy.url)
    assert payloads[-1]["choices"][0]["finish_reason"] == "content_filter"
    assert content == "I'm sorry, but I can't help with that."


async def test_short_stream_is_judged_once_at_the_end(
    judges, upstream, make_proxy, make_client
) -> None:
    upstream.enqueue(stream_reply("A short answer."))
    proxy = await make_proxy(stream_policy(judges, "after_check"))
    stream = await make_client(proxy).chat.completions.create(
        model="m", messages=messages(), stream=True
    )
    pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
    assert "".join(pieces) == "A short answer."
    assert len(judges.calls_to("judge")) == 1


async def test_client_leaving_cancels_the_judge_call(judges, upstream, make_proxy, http) -> None:
    judges.judge = lambda body: Answer(hang=True)
    upstream.enqueue(stream_reply(LONG[:3000], piece=50, delay=0.01))
    proxy = await make_proxy(stream_policy(judges, "after_check", every=100))
    async with http.post(
        f"{proxy.url}/v1/chat/completions",
        json={"model": "m", "messages": messages(), "stream": True},
    ) as response:
        assert response.status == 200
        for _ in range(100):
            if judges.calls:
                break
            await asyncio.sleep(0.01)
    for _ in range(100):
        if judges.calls[0].cancelled:
            break
        await asyncio.sleep(0.01)
    assert judges.calls[0].cancelled


# -- moderation ------------------------------------------------------------------------------


def moderation_policy(judges: FakeJudges, extra: str = "") -> str:
    return f"""
version: 1
name: moderated
input:
  - id: mod
    type: moderation
    base_url: {judges.base_url}
    model: omni-moderation-latest
    thresholds: {{violence: 0.7, "harassment/threatening": 0.4}}
{extra}
"""


async def test_moderation_thresholds(judges, upstream, make_proxy, make_client) -> None:
    proxy = await make_proxy(moderation_policy(judges))
    client = make_client(proxy)
    judges.moderation = moderation_scores(
        {"violence": 0.69, "harassment/threatening": 0.39, "sexual": 0.9}
    )
    reply = await client.chat.completions.create(model="m", messages=messages("one"))
    # Below both thresholds; "sexual" has no threshold and follows the endpoint's flag.
    assert reply.choices[0].finish_reason == "content_filter"
    judges.moderation = moderation_scores(
        {"violence": 0.69, "harassment/threatening": 0.39, "sexual": 0.1}
    )
    reply = await client.chat.completions.create(model="m", messages=messages("two"))
    assert reply.choices[0].message.content == "ok"
    judges.moderation = moderation_scores({"violence": 0.7, "harassment/threatening": 0.0})
    reply = await client.chat.completions.create(model="m", messages=messages("three"))
    assert reply.choices[0].finish_reason == "content_filter"
    assert judges.calls_to("moderation")[0].body == {
        "input": "one",
        "model": "omni-moderation-latest",
    }


async def test_moderation_findings_are_labelled_by_category(
    judges, upstream, make_proxy, make_client, tmp_path
) -> None:
    audit = tmp_path / "audit.jsonl"
    judges.moderation = moderation_scores({"violence": 0.9, "harassment/threatening": 0.5})
    proxy = await make_proxy(moderation_policy(judges), audit_log=str(audit))
    await make_client(proxy).chat.completions.create(model="m", messages=messages())
    for _ in range(50):
        if audit.exists() and audit.read_text().count("\n") >= 2:
            break
        await asyncio.sleep(0.02)
    labels = [json.loads(line)["label"] for line in audit.read_text().splitlines()]
    assert labels == ["violence", "harassment/threatening"]


@pytest.mark.parametrize(
    "body",
    [
        {"results": []},
        {"results": [{"category_scores": {"violence": "high"}}]},
        {"results": [{"category_scores": {"sexual": 0.1}}]},  # no score for a threshold
        {"unexpected": True},
    ],
)
async def test_unreadable_moderation_fails_closed(
    judges, upstream, make_proxy, make_client, body
) -> None:
    judges.moderation = lambda request: Answer(json=body)
    proxy = await make_proxy(moderation_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"


# -- webhook ---------------------------------------------------------------------------------


def webhook_policy(judges: FakeJudges, stage: str = "input") -> str:
    return f"""
version: 1
name: hooked
{stage}:
  - id: hook
    type: webhook
    url: {judges.url}/hook
    headers_env: {{Authorization: HOOK_TOKEN}}
    timeout: 1
"""


async def test_webhook_payload_and_verdicts(
    judges, upstream, make_proxy, make_client, monkeypatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "Bearer in-house")
    proxy = await make_proxy(webhook_policy(judges))
    client = make_client(proxy)
    await client.chat.completions.create(model="m", messages=messages("first"))
    call = judges.calls_to("webhook")[0]
    assert call.body == {
        "stage": "input",
        "text": "first",
        "messages": [{"role": "user", "content": "first"}],
        "policy": "hooked",
    }
    assert call.headers["Authorization"] == "Bearer in-house"
    judges.webhook = lambda body: Answer(json={"action": "block", "reason": "fraud score 0.97"})
    reply = await client.chat.completions.create(model="m", messages=messages("second"))
    assert reply.choices[0].finish_reason == "content_filter"
    judges.webhook = lambda body: Answer(json={"action": "redact", "text": "[REMOVED BY HOOK]"})
    await client.chat.completions.create(model="m", messages=messages("third"))
    assert upstream.requests[-1].json()["messages"][0]["content"] == "[REMOVED BY HOOK]"


async def test_webhook_redacts_a_reply(
    judges, upstream, make_proxy, make_client, monkeypatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t")
    judges.webhook = lambda body: Answer(json={"action": "redact", "text": "[withheld]"})
    upstream.enqueue(Reply(body=json_bytes(chat_completion("internal figures: 42"))))
    proxy = await make_proxy(webhook_policy(judges, "output"))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].message.content == "[withheld]"
    assert judges.calls_to("webhook")[0].body["text"] == "internal figures: 42"


async def test_a_reply_the_webhook_redacts_loses_its_logprobs(
    judges, upstream, make_proxy, make_client, monkeypatch
) -> None:
    """The tokens in ``logprobs`` repeat the text: left in place, they would hand the client
    what the remote shield redacted."""
    monkeypatch.setenv("HOOK_TOKEN", "t")
    judges.webhook = lambda body: Answer(json={"action": "redact", "text": "[withheld]"})
    tokens = ["internal", " figures", ": 42"]
    logprobs = {
        "content": [
            {"token": t, "logprob": -0.1, "bytes": list(t.encode()), "top_logprobs": []}
            for t in tokens
        ],
        "refusal": None,
    }
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": "".join(tokens)},
        "logprobs": logprobs,
        "finish_reason": "stop",
    }
    upstream.enqueue(Reply(body=json_bytes(chat_completion(choices=[choice]))))
    proxy = await make_proxy(webhook_policy(judges, "output"))
    reply = await make_client(proxy).chat.completions.with_raw_response.create(
        model="m", messages=messages(), logprobs=True
    )
    raw = reply.http_response.content
    assert b"figures" not in raw and b"internal" not in raw
    completion = reply.parse()
    assert completion.choices[0].message.content == "[withheld]"
    assert completion.choices[0].logprobs is None


@pytest.mark.parametrize(
    "answer",
    [
        Answer(json={"action": "maybe"}),
        Answer(json={"action": "redact"}),  # no replacement text
        Answer(json=["allow"]),
        Answer(raw=b"not json"),
        Answer(status=500, json={"error": "down"}),
    ],
)
async def test_bad_webhook_answers_fail_closed(
    judges, upstream, make_proxy, make_client, monkeypatch, answer
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t")
    judges.webhook = lambda body: answer
    proxy = await make_proxy(webhook_policy(judges))
    reply = await make_client(proxy).chat.completions.create(model="m", messages=messages())
    assert reply.choices[0].finish_reason == "content_filter"
    assert upstream.requests == []


# -- the Responses API -----------------------------------------------------------------------


async def test_responses_api_input_and_streamed_output_are_judged(
    judges, upstream, make_proxy, make_client
) -> None:
    policy = f"""
version: 1
name: both
input:
  - {{id: in-guard, type: llm_judge, base_url: {judges.base_url}, model: g}}
output:
  - id: out-guard
    type: llm_judge
    base_url: {judges.base_url}
    model: g
    stream: {{every_chars: 100}}
"""
    marker = "DETONATE"

    judges.judge = marker_judge(marker)
    upstream.enqueue(stream_reply(LONG[:300] + marker + LONG[:300]))
    proxy = await make_proxy(policy)
    client = make_client(proxy)
    response = await client.responses.create(model="m", input="tell me a story")
    assert response.status == "completed" or response.incomplete_details is not None
    assert marker not in (response.output_text or "")
    assert len(judges.calls_to("judge")) >= 2  # the input, then the reply
