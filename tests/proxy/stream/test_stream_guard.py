"""The stream guard, event by event: zero leak, exact transparency, redaction, failures."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import GuardState, StreamGuard
from shields.normalize import normalize
from shields.policy import parse_policy
from tests.support.fake_upstream import chunk, sse, usage_chunk
from tests.support.stream_helpers import channel_text, deltas, events_of, payloads, run

BANNED = ["nerve agent recipe", "sarin"]

POLICY = parse_policy(
    """
name: guard-test
stream: {holdback_chars: 20}
output:
  - {id: banned, type: denylist, phrases: ["nerve agent recipe"], words: [sarin]}
"""
)
REDACT_POLICY = parse_policy(
    """
name: redact-test
stream: {holdback_chars: 24}
output:
  - id: token
    type: regex
    action: redact
    placeholder: "[TOKEN]"
    patterns: ['\\btok_[a-z0-9]{16}\\b']
"""
)


def banned_start(text: str) -> int | None:
    """Original offset of the first banned match, per the shield itself (whole-text check)."""
    from shields.scan import check_text

    found = check_text(POLICY.output_shields, text)
    return min((f.start for f in found), default=None)


filler = st.text(alphabet="abc nert sagiy.\u200bRS", max_size=60)
obfuscation = st.sampled_from(["", "\u200b", "\u00ad"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    phrase=st.sampled_from(BANNED),
    upper=st.booleans(),
    hidden=obfuscation,
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=4),
)
def test_zero_leak_no_character_of_a_blocked_match_is_sent(
    before: str,
    after: str,
    phrase: str,
    upper: bool,
    hidden: str,
    sizes: list[int],
    key: str,
    flush_every: int,
) -> None:
    disguised = hidden.join(phrase.upper() if upper else phrase)
    text = f"{before} {disguised} {after}"
    start = banned_start(text)
    assert start is not None  # the shield does see the disguised phrase
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(POLICY, body, flush_every=flush_every)
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, key)
    # The client saw an exact prefix of the text that stops before the match begins...
    assert text.startswith(released)
    assert len(released) <= start
    # ...then the refusal tail.
    final = payloads(out)
    assert final[-1] == b"[DONE]"
    assert final[-2]["choices"][0]["finish_reason"] == "content_filter"
    assert normalize(phrase)[0] not in normalize(released)[0]


@settings(max_examples=300, deadline=None)
@given(
    text=filler,
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
)
def test_allowed_streams_leave_byte_for_byte(text: str, sizes: list[int], key: str) -> None:
    if banned_start(text) is not None:
        return
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"), usage_chunk())
    out, guard = run(POLICY, body)
    assert guard.state is GuardState.DONE
    assert out == body


@settings(max_examples=300, deadline=None)
@given(
    before=filler,
    after=filler,
    secret=st.text(alphabet="abcdef0123456789", min_size=16, max_size=16),
    sizes=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=20),
)
def test_stream_redaction_never_sends_a_character_of_the_secret(
    before: str, after: str, secret: str, sizes: list[int]
) -> None:
    token = f"tok_{secret}"
    text = f"{before} {token} {after}"
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(REDACT_POLICY, body)
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == text.replace(token, "[TOKEN]")
    for payload in payloads(out)[:-1]:
        for choice in payload["choices"]:
            assert secret not in (choice["delta"].get("content") or "")
    assert secret not in out.decode()


def test_monitor_mode_changes_nothing_but_records_findings() -> None:
    policy = parse_policy(
        """
name: watch
mode: monitor
output: [{id: banned, type: denylist, phrases: [sarin]}]
"""
    )
    body = sse(*deltas("how to make sarin at home", "content", [3]))
    out, guard = run(policy, body)
    assert out == body
    assert [f.shield_id for f in guard.findings] == ["banned"]


def test_shield_in_monitor_mode_inside_an_enforcing_policy() -> None:
    policy = parse_policy(
        """
name: rollout
output:
  - {id: new-rule, type: denylist, phrases: [sarin], mode: monitor}
"""
    )
    body = sse(*deltas("how to make sarin at home", "content", [3]))
    out, guard = run(policy, body)
    assert out == body and guard.state is GuardState.DONE
    assert [(f.shield_id, f.monitor) for f in guard.findings] == [("new-rule", True)]


def test_block_in_one_choice_refuses_every_choice() -> None:
    first = [chunk({"content": w}, index=0) for w in ["All ", "good ", "here."]]
    second = [chunk({"content": w}, index=1) for w in ["Mix ", "sa", "rin ", "now."]]
    interleaved = [c for pair in zip(first, second, strict=False) for c in pair] + second[3:]
    out, guard = run(POLICY, sse(*interleaved), n=2, usage=True)
    assert guard.state is GuardState.BLOCKED
    final = payloads(out)
    assert final[-1] == b"[DONE]"
    assert final[-2] == {**final[-2], "choices": [], "usage": final[-2]["usage"]}
    finish = final[-3]["choices"]
    assert [(c["index"], c["finish_reason"]) for c in finish] == [
        (0, "content_filter"),
        (1, "content_filter"),
    ]
    assert "sa" not in channel_text(out, "content", index=1)


def test_error_style_ends_a_stream_with_an_in_band_error() -> None:
    policy = parse_policy(
        """
name: err
refusal: {message: "blocked by policy", style: error}
output: [{id: banned, type: denylist, phrases: [sarin]}]
"""
    )
    out, guard = run(policy, sse(*deltas("make sarin", "content", [2])))
    assert guard.state is GuardState.BLOCKED
    assert payloads(out)[-2:] == [
        {
            "error": {
                "message": "blocked by policy",
                "type": "invalid_request_error",
                "param": None,
                "code": "content_filter",
            }
        },
        b"[DONE]",
    ]


def test_invalid_json_fails_closed_and_releases_nothing_unscanned() -> None:
    # The event ends with the start of a banned phrase, so it is held when the stream fails,
    # and failing must not flush it. (It was "hello there", held by the fixed window; the
    # adaptive hold-back sends harmless text at once.)
    body = sse(chunk({"content": "hello there, nerve ag"}), "{not json", done=True)
    out, guard = run(POLICY, body)
    assert guard.state is GuardState.FAILED
    final = payloads(out)
    assert final[-2]["error"]["code"] == "upstream_error"
    assert channel_text(out, "content") == ""  # held (open candidate "nerve ag") when it failed


def test_stream_ending_without_done() -> None:
    complete = sse(chunk({"content": "hi"}), chunk({}, finish_reason="stop"), done=False)
    out, guard = run(POLICY, complete)
    assert guard.state is GuardState.DONE and out == complete
    cut = sse(chunk({"content": "hi"}), done=False)
    out, guard = run(POLICY, cut)
    assert guard.state is GuardState.FAILED
    assert payloads(out)[-2]["error"]["code"] == "upstream_error"


def test_comments_and_unknown_events_pass_in_order() -> None:
    rest = sse(chunk({"content": "hi"}, extra={"x_custom": [1]}))
    out, _ = run(POLICY, b":\n\n" + rest)
    assert out == b":\n\n" + rest


def test_what_no_shield_reads_never_reaches_the_client() -> None:
    # Comments, ids and event names reach a client (EventSource exposes id and event): their
    # text is dropped, the data and a keep-alive's line stay.
    data = sse(chunk({"content": "hi"})).split(b"\n\n")[0]
    body = (
        b": sarin keep-alive\n\n"
        + b"id: sarin\nevent: sarin\n"
        + data
        + b"\n: sarin\nretry: 5\nsarin: 1\n\n"
        + b"id: sarin\r\n\r\n"
        + sse(chunk({}, finish_reason="stop"))
    )
    out, guard = run(POLICY, body)
    assert guard.state is GuardState.DONE and b"sarin" not in out
    assert out == b":\n\n" + data + b"\n:\n\n" + sse(chunk({}, finish_reason="stop"))


def test_dict_arguments_are_checked_in_serialized_form() -> None:
    call = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": {"q": "sarin"}},
    }
    out, guard = run(POLICY, sse(chunk({"tool_calls": [call]})))
    assert guard.state is GuardState.BLOCKED
    assert b"sarin" not in out


def test_held_back_data_stays_bounded() -> None:
    guard = StreamGuard(POLICY, StreamContext(model="m", n=1, include_usage=False))
    body = sse(*deltas("lorem ipsum dolor " * 5000, "content", [4]))
    peak = 0
    for event in events_of(body):
        guard.feed(event)
        guard.flush()
        peak = max(peak, guard.held_bytes)
    event_size = len(events_of(body)[1].raw)
    # the hold-back (20 characters) in 4-character events, plus the event being scanned
    assert peak <= (20 // 4 + 2) * event_size
