"""``length``: per-text limits at input, output and in streams; request-wide limits at input."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.endpoints.chat_request import check_input, parse_chat_request
from proxy.exchange.reply_check import check_reply
from proxy.stream.guard import GuardState
from shields.base import Finding, Role, Verdict, verdict_of
from shields.builtin.length import LengthShield, LengthSpec
from shields.cases import run_case
from shields.policy import Case, PolicyError, parse_policy
from shields.scan import TextScan, check_request, check_text, merge_redactions, redact
from tests.support.fake_upstream import chat_completion, chunk, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run


def length(**kwargs: object) -> LengthShield:
    return LengthShield(LengthSpec(id="len", **kwargs))  # type: ignore[arg-type]


def spans(shield: LengthShield, text: str) -> list[tuple[str, int, int]]:
    return [(f.label, f.start, f.end) for f in check_text([shield], text)]


def truncated(shield: LengthShield, text: str) -> str:
    return redact(text, 0, merge_redactions(check_text([shield], text)))


# -- one text ----------------------------------------------------------------------------------


def test_a_text_over_the_limit_is_found_from_the_limit_on() -> None:
    shield = length(max_chars_per_message=10)
    assert spans(shield, "") == []
    assert spans(shield, "x" * 10) == []
    assert spans(shield, "x" * 11) == [("max_chars_per_message", 10, 11)]
    assert spans(shield, "x" * 25) == [("max_chars_per_message", 10, 25)]
    assert verdict_of(check_text([shield], "x" * 11)) is Verdict.BLOCK


def test_length_counts_code_points_of_the_original_text() -> None:
    shield = length(max_chars_per_message=3)
    assert spans(shield, "😀😀😀") == []  # 12 UTF-8 bytes, 6 UTF-16 units: 3 characters
    assert spans(shield, "e\u0301e\u0301") == [("max_chars_per_message", 3, 4)]  # not NFC
    assert spans(shield, "a\u200b\u200bb") == [("max_chars_per_message", 3, 4)]  # not normalized


def test_redact_truncates_at_the_limit() -> None:
    shield = length(max_chars_per_message=5, action="redact")
    assert truncated(shield, "Hello, world") == "Hello[TRUNCATED]"
    assert truncated(shield, "Hello") == "Hello"
    bare = length(max_chars_per_message=5, action="redact", placeholder="")
    assert truncated(bare, "Hello, world") == "Hello"


def test_max_match_is_one_character() -> None:
    shield = length(max_chars_per_message=1000)
    assert shield.max_match == 1 and shield.matches_raw


def test_request_wide_limits_need_no_scanner() -> None:
    shield = length(max_messages=2)
    assert check_text([shield], "x" * 100_000) == []


# -- request-wide limits -----------------------------------------------------------------------


def test_max_messages_and_max_chars_per_request() -> None:
    shield = length(max_messages=2, max_chars_per_request=11)
    two = [(Role.SYSTEM, "Be brief."), (Role.USER, "a")]
    assert check_request([shield], two) == []
    found = check_request([shield], [*two, (Role.USER, "b")])
    assert [(f.label, f.start, f.end) for f in found] == [("max_messages", 0, 0)]
    found = check_request([shield], [(Role.USER, "123456"), (Role.USER, "123456")])
    assert [f.label for f in found] == ["max_chars_per_request"]
    assert verdict_of(found) is Verdict.BLOCK


def test_roles_limit_what_request_wide_limits_count() -> None:
    shield = length(max_messages=1, max_chars_per_request=5, roles=["user"])
    messages = [(Role.SYSTEM, "a long system prompt"), (Role.USER, "hi")]
    assert check_request([shield], messages) == []
    assert len(check_request([shield], [*messages, (Role.USER, "more")])) == 2


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "input[0]: a length shield needs at least one of `max_chars_per_message`"),
        ("max_messages: 0", "input[0].max_messages: Input should be greater than or equal to 1"),
        ("max_chars_per_message: -5", "input[0].max_chars_per_message: Input should be greater"),
        ("max_chars_per_request: true", "max_chars_per_request: Input should be a valid integer"),
        ("max_messages: '5'", "input[0].max_messages: Input should be a valid integer"),
        ("max_messages: 2.5", "input[0].max_messages: Input should be a valid integer"),
        (
            "max_messages: 5, max_chars_per_message: 9, action: redact",
            "input[0]: action: redact truncates each message at `max_chars_per_message`; "
            "`max_messages` can only block",
        ),
        ("max_message: 5", "input[0].max_message: unknown key"),
    ],
)
def test_bad_specs_are_explained(spec: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(f"name: x\ninput:\n  - {{id: a, type: length, {spec}}}\n", source="p.yaml")
    assert message in str(info.value)


# -- policies, input, output -------------------------------------------------------------------

POLICY = parse_policy(
    """
name: sizes
stream: {holdback_chars: 1}
input:
  - {id: request-size, type: length, max_messages: 3, max_chars_per_request: 40}
  - {id: message-size, type: length, max_chars_per_message: 20}
output:
  - {id: reply-size, type: length, max_chars_per_message: 12, action: redact}
cases:
  - {stage: input, text: "short question", expect: allow}
  - {stage: input, text: "a question far longer than twenty", expect: block, shield: message-size}
  - stage: input
    messages:
      - {role: system, content: "Be brief."}
      - {role: user, content: "hi"}
      - {role: assistant, content: "hello"}
      - {role: user, content: "bye"}
    expect: block
    shield: request-size
  - stage: input
    messages:
      - {role: user, content: "twenty characters!!!"}
      - {role: user, content: "twenty characters!!!"}
      - {role: user, content: "x"}
    expect: block
    shield: request-size
  - {stage: output, text: "Once upon a time", expect: redact, redacted: "Once upon a [TRUNCATED]"}
"""
)


def test_policy_cases() -> None:
    results = [run_case(POLICY, case) for case in POLICY.spec.cases]
    assert [r.problems for r in results] == [()] * 5
    labels = [sorted(f.label for f in r.evaluation.findings) for r in results]
    assert labels[2:4] == [["max_messages"], ["max_chars_per_request"]]


def test_a_case_within_every_limit_passes() -> None:
    case = Case.model_validate(
        {
            "stage": "input",
            "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "ok"}],
            "expect": "allow",
        }
    )
    assert run_case(POLICY, case).passed


def test_proxy_input_stage_blocks_and_truncates() -> None:
    def body(*contents: str) -> bytes:
        return json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": c} for c in contents]}
        ).encode()

    assert not check_input(POLICY, parse_chat_request(body("hi", "there"))).blocked
    assert check_input(POLICY, parse_chat_request(body("a", "b", "c", "d"))).blocked
    assert check_input(POLICY, parse_chat_request(body("x" * 21))).blocked
    truncate = parse_policy(
        "name: t\ninput: [{id: cut, type: length, max_chars_per_message: 4, action: redact}]\n"
    )
    request = parse_chat_request(body("abcdefgh", "abc"))
    check = check_input(truncate, request)
    assert check.redacted and not check.blocked
    assert [m["content"] for m in request.body["messages"]] == ["abcd[TRUNCATED]", "abc"]


def test_output_reply_is_truncated_per_text() -> None:
    completion = chat_completion("An answer that goes on and on")
    check = check_reply(POLICY, completion)
    assert check.redacted
    assert completion["choices"][0]["message"]["content"] == "An answer th[TRUNCATED]"


# -- streams -----------------------------------------------------------------------------------

text_ = st.text(alphabet="ab c😀\u200b.", min_size=0, max_size=60)
sizes_ = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=20)
keys = st.sampled_from(["content", "reasoning_content", "arguments"])


def stream_policy(limit: int, action: str) -> str:
    return f"""
name: s
stream: {{holdback_chars: 1}}
output: [{{id: cap, type: length, max_chars_per_message: {limit}, action: {action}}}]
"""


BLOCK_POLICIES = {n: parse_policy(stream_policy(n, "block")) for n in range(1, 41)}
CUT_POLICIES = {n: parse_policy(stream_policy(n, "redact")) for n in range(1, 41)}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    text=text_,
    limit=st.integers(min_value=1, max_value=40),
    sizes=sizes_,
    key=keys,
    flush_every=st.integers(min_value=1, max_value=3),
)
def test_stream_over_the_limit_is_stopped_where_it_crosses_it(
    text: str, limit: int, sizes: list[int], key: str, flush_every: int
) -> None:
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(BLOCK_POLICIES[limit], body, flush_every=flush_every)
    released = channel_text(out, key)
    if len(text) <= limit:
        assert guard.state is GuardState.DONE and out == body
        return
    assert guard.state is GuardState.BLOCKED
    # The client got an exact prefix of at most ``limit`` characters, then the refusal.
    assert text.startswith(released) and len(released) <= limit
    assert payloads(out)[-2]["choices"][0]["finish_reason"] == "content_filter"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=text_, limit=st.integers(min_value=1, max_value=40), sizes=sizes_, key=keys)
def test_stream_redaction_cuts_exactly_at_the_limit(
    text: str, limit: int, sizes: list[int], key: str
) -> None:
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(CUT_POLICIES[limit], body)
    assert guard.state is GuardState.DONE
    expected = text if len(text) <= limit else text[:limit] + "[TRUNCATED]"
    assert channel_text(out, key) == expected


def test_each_channel_has_its_own_count() -> None:
    policy = CUT_POLICIES[5]
    body = sse(
        chunk({"reasoning_content": "think think"}),
        chunk({"content": "abc"}),
        chunk({"content": "defg"}),
        chunk({}, finish_reason="stop"),
    )
    out, _ = run(policy, body)
    assert channel_text(out, "reasoning_content") == "think[TRUNCATED]"
    assert channel_text(out, "content") == "abcde[TRUNCATED]"


def coalesce(findings: list[Finding]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for f in findings:
        if out and out[-1][0] == f.label and out[-1][2] == f.start:
            out[-1] = (f.label, out[-1][1], f.end)
        else:
            out.append((f.label, f.start, f.end))
    return out


@settings(max_examples=300, deadline=None)
@given(text=text_, limit=st.integers(min_value=1, max_value=40), sizes=sizes_)
def test_chunked_scanning_finds_exactly_what_whole_text_finds(
    text: str, limit: int, sizes: list[int]
) -> None:
    shield = length(max_chars_per_message=limit, action="redact")
    scan = TextScan([shield])
    chunked: list[Finding] = []
    pos, i = 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        found = scan.feed(piece)
        # Reported in the very feed that brings the characters past the limit (max_match 1).
        assert bool(found) == (pos + len(piece) > limit)
        chunked += found
        pos, i = pos + len(piece), i + 1
    chunked += scan.finish()
    whole = check_text([shield], text)
    assert coalesce(chunked) == coalesce(whole)
    assert merge_redactions(chunked) == merge_redactions(whole)
