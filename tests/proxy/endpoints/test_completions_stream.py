"""A legacy completions stream through the stream guard, without a network.

The guard reads each choice's ``text`` as its channel (``ReplyShape.TEXT``) and is driven read
by read as the exchange drives it (``EventRelay``: framing, runs of look-alike events, flushes),
with the completions dialect's end (``completions_stream_end``). The property tests cut the
upstream's stream into any events and any network reads, for one choice or two interleaved:
no character of a blocked match ever leaves, a redaction never lets the redacted text out (and
withholds the choice's later logprobs), and an allowed stream leaves byte for byte. Every
chunk that leaves is read as the ``openai`` SDK reads a stream's chunks, into its ``Completion``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai._models import construct_type
from openai.types import Completion

from proxy.endpoints.completions import completions_stream_end
from proxy.exchange.lifecycle import EventRelay
from proxy.exchange.refusal import REFUSAL_SEPARATOR, StreamContext
from proxy.stream.guard import GuardState, StreamGuard
from shields.openai.text_completion import ReplyShape
from shields.policy import CompiledPolicy, parse_policy
from shields.scan import check_text, merge_redactions, redact
from tests.support.fake_upstream import sse
from tests.support.text_completions import text_chunk, text_logprobs, text_usage_chunk

REFUSAL = "No."
POLICY = parse_policy(
    f"""
name: completions-stream
refusal: {{message: "{REFUSAL}"}}
stream: {{holdback_chars: 24}}
output:
  - {{id: banned, type: denylist, phrases: ["nerve agent recipe"], words: [sarin]}}
  - {{id: fruit, type: denylist, phrases: ["banana split"], action: redact}}
"""
)
BANNED = ["nerve agent recipe", "sarin"]
filler = st.text(alphabet='abc nert sagiy.\u200bRSé€"\\\n😀', max_size=50)
sizes_of = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12)
cuts_of = st.lists(st.integers(min_value=0, max_value=5000), max_size=12)


def pieces(text: str, sizes: list[int]) -> list[str]:
    out, pos = [], 0
    for size in itertools.cycle(sizes):
        if pos >= len(text):
            return out
        out.append(text[pos : pos + size])
        pos += size
    raise AssertionError("unreachable")


def stream_body(texts: list[str], sizes: list[int], *, logprobs: bool = False) -> bytes:
    """Each choice's text in pieces, the choices' chunks interleaved, each choice then
    finished; a usage chunk; [DONE]."""
    # A choice opens with its first chunk, in index order (an empty text: an empty piece).
    per_choice = [pieces(text, sizes) or [""] for text in texts]
    events: list[Any] = []
    for row in itertools.zip_longest(*per_choice):
        for index, piece in enumerate(row):
            if piece is not None:
                lp = text_logprobs([piece]) if logprobs else None
                events.append(text_chunk(piece, index=index, logprobs=lp))
    events += [text_chunk("", index=i, finish_reason="stop") for i in range(len(texts))]
    events.append(text_usage_chunk())
    return sse(*events)


def drive(
    policy: CompiledPolicy, body: bytes, cuts: list[int], n: int = 1
) -> tuple[bytes, StreamGuard]:
    """``body`` through the guard as the exchange drives it, cut into network reads at
    ``cuts``; what the client got."""
    context = StreamContext(model="m", n=n, include_usage=True)
    guard = StreamGuard(
        policy,
        context,
        shape=ReplyShape.TEXT,
        render_end=completions_stream_end(policy, context),
    )
    relay = EventRelay(guard)
    out = []
    bounds = [0, *sorted({cut % (len(body) + 1) for cut in cuts}), len(body)]
    for start, end in itertools.pairwise(bounds):
        if start == end:
            continue
        out.append(bytes(relay.feed(body[start:end])))
        if relay.closed:
            break
    else:
        out.append(relay.end())
    return b"".join(out), guard


def client_view(out: bytes) -> tuple[list[Completion], bool]:
    """Every chunk as the SDK reads it, and whether the stream ended with [DONE]."""
    chunks, done = [], False
    for event in out.split(b"\n\n"):
        if not event:
            continue
        assert event.startswith(b"data: ") and not done
        data = event.removeprefix(b"data: ")
        if data == b"[DONE]":
            done = True
            continue
        payload = json.loads(data)
        assert "error" not in payload, payload
        # As the SDK reads a stream's chunks (leniently: a chunk's finish_reason is null until
        # the last), then the fields a client uses, typed.
        chunk = construct_type(type_=Completion, value=payload)
        assert isinstance(chunk, Completion)
        for choice in chunk.choices:
            assert isinstance(choice.text, str) and isinstance(choice.index, int)
        chunks.append(chunk)
    return chunks, done


def texts_of(chunks: list[Completion]) -> dict[int, str]:
    texts: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
    return texts


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    other=filler,
    phrase=st.sampled_from(BANNED),
    hidden=st.sampled_from(["", "\u200b"]),
    sizes=sizes_of,
    cuts=cuts_of,
    two=st.booleans(),
    logprobs=st.booleans(),
)
def test_no_character_of_a_blocked_match_leaves(
    before: str,
    after: str,
    other: str,
    phrase: str,
    hidden: str,
    sizes: list[int],
    cuts: list[int],
    two: bool,
    logprobs: bool,
) -> None:
    text = f"{before} {hidden.join(phrase)} {after}"
    start = min(
        f.start for f in check_text(POLICY.output_shields, text) if f.action.value == "block"
    )
    texts = [text, other] if two else [text]

    out, guard = drive(POLICY, stream_body(texts, sizes, logprobs=logprobs), cuts, n=len(texts))

    assert guard.state is GuardState.BLOCKED
    chunks, done = client_view(out)
    assert done
    refusal = chunks[-1] if chunks[-1].choices else chunks[-2]  # the usage chunk comes last
    assert chunks[-1].usage is not None and not chunks[-1].choices
    assert {c.finish_reason for c in refusal.choices} == {"content_filter"}
    assert [c.index for c in refusal.choices] == list(range(len(texts)))
    sent = texts_of([c for c in chunks if c is not refusal])
    released = sent.get(0, "")
    assert text.startswith(released)
    assert len(released) <= start  # not one character of the match
    for choice in refusal.choices:
        # After text of the choice was sent, the refusal is set apart from it.
        separated = bool(sent.get(choice.index))
        assert choice.text == (REFUSAL_SEPARATOR if separated else "") + REFUSAL


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    sizes=sizes_of,
    cuts=cuts_of,
    logprobs=st.booleans(),
)
def test_a_redaction_never_lets_the_redacted_text_out(
    before: str, after: str, sizes: list[int], cuts: list[int], logprobs: bool
) -> None:
    text = f"{before} banana split {after}"
    findings = check_text(POLICY.output_shields, text)
    if any(f.action.value == "block" for f in findings):
        return  # the filler spelt a banned word: the block property covers it
    expected = redact(text, 0, merge_redactions(findings))

    out, guard = drive(POLICY, stream_body([text], sizes, logprobs=logprobs), cuts)

    assert guard.state is GuardState.DONE
    chunks, done = client_view(out)
    assert done
    assert texts_of(chunks) == {0: expected}
    assert "banana split" not in out.decode()
    # Once the redaction was found, no later chunk carries the choice's tokens.
    redacted_at = next(
        i
        for i, chunk in enumerate(chunks)
        if chunk.choices and "[REDACTED]" in chunk.choices[0].text
    )
    assert all(c.logprobs is None for chunk in chunks[redacted_at:] for c in chunk.choices)


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    texts=st.lists(filler, min_size=1, max_size=2),
    sizes=sizes_of,
    cuts=cuts_of,
    logprobs=st.booleans(),
)
def test_an_allowed_stream_leaves_byte_for_byte(
    texts: list[str], sizes: list[int], cuts: list[int], logprobs: bool
) -> None:
    if any(check_text(POLICY.output_shields, text) for text in texts):
        return  # the filler spelt a banned word
    body = stream_body(texts, sizes, logprobs=logprobs)

    out, guard = drive(POLICY, body, cuts, n=len(texts))

    assert guard.state is GuardState.DONE
    assert out == body


def test_a_long_stream_takes_the_bulk_path_and_still_blocks() -> None:
    # Hundreds of look-alike events in one read: the guard learns their shape from the text
    # field of a completion choice and takes them as runs; the block still holds.
    text = "word " * 600 + "the nerve agent recipe" + " more" * 50
    body = stream_body([text], [2])
    context = StreamContext(model="m", n=1, include_usage=True)
    guard = StreamGuard(
        POLICY, context, shape=ReplyShape.TEXT, render_end=completions_stream_end(POLICY, context)
    )
    relay = EventRelay(guard)
    first = bytes(relay.feed(body[: len(body) // 3]))
    assert guard.template is not None  # learned on a completions chunk
    out = first + bytes(relay.feed(body[len(body) // 3 :]))
    chunks, done = client_view(out)
    assert done and guard.state is GuardState.BLOCKED
    released = texts_of(chunks[:-2]).get(0, "")
    assert text.startswith(released) and "nerve agent" not in released
    assert len(released) > 1000  # the safe text before the phrase left
