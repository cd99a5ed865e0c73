"""Decode and scan in streams and tool-call arguments: what an encoded run hides is blocked or
redacted before any of it leaves, under any chunking; benign encodings pass, held no longer
than they may still grow.

Zero-leak proofs go through the real stream guard (``tests.support.stream_helpers``) with hypothesis
choosing the prose around the payload, the encoding and the chunking; the end-to-end tests
drive the real proxy with the ``openai`` SDK.
"""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.stream.guard import GuardState
from shields.base import Stage
from shields.commands import scan_lines
from shields.decode import PIECE, decoded_pieces
from shields.decode_scan import WINDOW
from shields.policy import CompiledPolicy, PolicyError, load_policy, parse_policy
from shields.scan import TextScan, check_text, merge_redactions, redact
from tests.conftest import ProxyFactory
from tests.support.constants import REPO_ROOT
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run

MakeClient = Callable[..., openai.AsyncOpenAI]
STRICT = load_policy(REPO_ROOT / "policies" / "strict.yaml")

PHRASE = "how to build a bomb"
TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"


def policy(action: str, *, decode: bool = True) -> CompiledPolicy:
    return parse_policy(
        "version: 1\nname: decode-stream\n"
        f"stream: {{holdback_chars: {WINDOW}}}\n"
        f"decode: {{output: {'true' if decode else 'false'}}}\n"
        "output:\n"
        f"  - {{id: weapons, type: denylist, phrases: [build a bomb], action: {action},"
        ' placeholder: "[GONE]"}\n'
        f'  - {{id: secrets, type: secrets, action: {action}, placeholder: "[GONE]"}}\n'
    )


REDACT = policy("redact")
BLOCK = policy("block")
PLAIN = policy("redact", decode=False)
# Decoding and a deny list alone: what a stream holds is what decoding holds.
PHRASES = parse_policy(
    f"version: 1\nname: phrases\nstream: {{holdback_chars: {WINDOW}}}\ndecode: {{output: true}}\n"
    "output:\n  - {id: weapons, type: denylist, phrases: [build a bomb]}\n"
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def b64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def hexed(text: str) -> str:
    return text.encode().hex()


def percent(text: str) -> str:
    return quote(text, safe="")


def wrapped(text: str) -> str:
    encoded = b64(text + " and a few more words so that it wraps like MIME does")
    return "\n".join(encoded[i : i + 40] for i in range(0, len(encoded), 40))


def split(text: str) -> str:
    half = len(text) // 2
    return f"{b64(text[:half])} {b64(text[half:])}"


def rot13(text: str) -> str:
    return "in rot13: " + text.translate(
        str.maketrans(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
        )
    )


ENCODINGS: dict[str, Callable[[str], str]] = {
    "base64": b64,
    "base64url": b64url,
    "hex": hexed,
    "percent": percent,
    "base64 of hex": lambda text: b64(hexed(text)),
    "hex of percent": lambda text: hexed(percent(text)),
    "split in two runs": split,
    "wrapped": wrapped,
    "long run": lambda text: b64("padding words " * 12 + text + " and more words" * 8),
    "rot13": rot13,
}
PAYLOADS = [f"tell me {PHRASE} now", f"my token is {TOKEN} ok"]
prose = st.text(alphabet="ab xy.,\n", max_size=40)
chunkings = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12)


def redacted(text: str, checked: CompiledPolicy = REDACT) -> str:
    return redact(text, 0, merge_redactions(check_text(checked.output_shields, text)))


def marks(encoding: str, encoded: str) -> list[str]:
    """Pieces of the encoded run that no event may carry: the start of each of its lines
    (ROT13: the encoded phrase itself; a long run: its piece that holds the payload)."""
    if encoded.startswith("in rot13: "):
        return [encoded.removeprefix("in rot13: ")[8:16]]
    if encoding == "long run":  # the payload is at bytes 168 to 200: characters 224 to 267
        return [encoded[228:238], encoded[256:266]]
    return [line[:10] for line in encoded.replace(" ", "\n").split("\n") if len(line) >= 10]


def reveals(text: str) -> bool:
    """Whether ``text`` decodes (any run, two levels) to the payloads' phrase or token."""
    return any(
        secret in piece.text
        for piece in decoded_pieces(text)
        for secret in ("build a bomb", TOKEN[:12])
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    encoding=st.sampled_from(sorted(ENCODINGS)),
    payload=st.sampled_from(PAYLOADS),
    sizes=chunkings,
    key=st.sampled_from(["content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=3),
)
def test_a_redacted_encoded_payload_never_leaves_under_any_chunking(
    before: str,
    after: str,
    encoding: str,
    payload: str,
    sizes: list[int],
    key: str,
    flush_every: int,
) -> None:
    encoded = ENCODINGS[encoding](payload)
    text = f"{before} {encoded}\n{after}"
    out, guard = run(REDACT, sse(*deltas(text, key, sizes), chunk({})), flush_every=flush_every)
    assert guard.state is GuardState.DONE
    released = channel_text(out, key)
    assert released == redacted(text)  # the same as a whole-text check
    assert "[GONE]" in released
    events = [json.dumps(event) for event in payloads(out)[:-1]]
    assert not reveals(released)
    for mark in marks(encoding, encoded):
        assert mark not in released
        assert not any(mark in event for event in events)  # not even a piece, in any event


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    encoding=st.sampled_from(sorted(ENCODINGS)),
    payload=st.sampled_from(PAYLOADS),
    sizes=chunkings,
    key=st.sampled_from(["content", "arguments"]),
)
def test_a_blocked_encoded_payload_never_leaves_under_any_chunking(
    before: str, after: str, encoding: str, payload: str, sizes: list[int], key: str
) -> None:
    encoded = ENCODINGS[encoding](payload)
    text = f"{before} {encoded}\n{after}"
    found = check_text(BLOCK.output_shields, text)
    start = min(f.start for f in found)
    assert start <= text.index(encoded) + len(encoded)
    out, guard = run(BLOCK, sse(*deltas(text, key, sizes), chunk({})))
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, key)
    assert text.startswith(released)
    assert len(released) <= start
    assert not reveals(released)
    for mark in marks(encoding, encoded):
        assert mark not in out.decode()


ENCODED_ALPHABET = "aGVsbG8gd29ybGQ= 0123456789abcdef%2F41 rot13\n.,-_/+XYZ"


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=ENCODED_ALPHABET, max_size=200),
    sizes=chunkings,
    payload=st.sampled_from(["", *(ENCODINGS[e](PAYLOADS[0]) for e in sorted(ENCODINGS))]),
)
def test_streams_find_what_whole_texts_find_and_never_report_before_safe(
    text: str, sizes: list[int], payload: str
) -> None:
    """Soundness of the decoder's ``open_from``: nothing reported later starts before what was
    declared safe; and the findings are those of the whole text, in any chunking."""
    half = len(text) // 2
    text = text[:half] + payload + text[half:]
    shields = REDACT.output_shields
    scan = TextScan(shields, holdback=WINDOW, adaptive=True)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        safe = scan.safe_end
        new = scan.feed(piece)
        assert all(f.start >= safe for f in new), (new, safe)
        found += new
        pos, i = pos + len(piece), i + 1
    safe = scan.safe_end
    new = scan.finish()
    assert all(f.start >= safe for f in new)
    found += new
    whole = check_text(shields, text)
    assert merge_redactions(found) == merge_redactions(whole)
    assert {f.label for f in found} == {f.label for f in whole}


# -- benign encodings ----------------------------------------------------------------------

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhf"
    "DwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
# Compressed image data reads as random bytes.
LONG_IMAGE = "data:image/jpeg;base64," + base64.b64encode(random.Random(7).randbytes(3000)).decode()
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
UUID = "550e8400-e29b-41d4-a716-446655440000"
GIT_SHA = "9c62a68f0ddcac80a9d438070516f4c86d6ab12c"
BENIGN = {
    "png": PNG,
    "long image": LONG_IMAGE,
    "sha256": SHA256,
    "jwt": JWT,
    "uuid": UUID,
    "hex color": "#ff00aa",
    "git sha": GIT_SHA,
    "ordinary base64": b64("an ordinary sentence, nothing more"),
    "url": "https://example.com/search?q=caf%C3%A9%20au%20lait&lang=fr",
}


@pytest.mark.parametrize("name", sorted(BENIGN))
def test_benign_encodings_pass_untouched_and_are_not_held_longer_than_needed(name: str) -> None:
    benign = BENIGN[name]
    text = f"Here it is: {benign} and that is all. "
    # Decoding adds no finding (a JWT is a secret as it is, decoded or not).
    assert check_text(REDACT.output_shields, text) == check_text(PLAIN.output_shields, text)
    assert check_text(PHRASES.output_shields, text) == []
    scan = TextScan(PHRASES.output_shields, holdback=WINDOW, adaptive=True)
    received = 0
    for i in range(0, len(text), 4):
        scan.feed(text[i : i + 4])
        received += len(text[i : i + 4])
        # Held: a run that may still grow, one piece of it at most, and a word or two.
        assert received - scan.safe_end <= PIECE + 24, received
    # Once the word after it has ended, nothing of it is held.
    assert scan.safe_end >= text.index(" and that") + 1
    out, _ = run(REDACT, sse(*deltas(text, "content", [3, 5]), chunk({})))
    assert channel_text(out, "content") == redacted(text, PLAIN)


def test_without_decoding_an_encoded_payload_is_not_read() -> None:
    text = f"note {b64(PAYLOADS[0])} end"
    assert check_text(policy("redact", decode=False).output_shields, text) == []
    assert check_text(REDACT.output_shields, text) != []


def test_links_and_lengths_read_the_text_as_sent_not_decoded() -> None:
    # A renderer shows encoded text as it is: a URL inside base64 is fetched by nobody, and a
    # percent-encoded link is judged once, as it stands.
    link = "https://www.example.com/search?q=caf%C3%A9%20au%20lait%20recipes"
    found = check_text(STRICT.output_shields, f"see {link} and {b64('![x](https://e.test/a.png)')}")
    assert [(f.shield_id, f.label) for f in found] == [("links", "link.host")]
    only_links = parse_policy(
        f"version: 1\nname: l\nstream: {{holdback_chars: {WINDOW}}}\ndecode: {{output: true}}\n"
        "output:\n  - {id: links, type: links, links: redact}\n"
    )
    scan = TextScan(only_links.output_shields, holdback=WINDOW, adaptive=True)
    assert not any(type(s).__name__ == "DecodeScanner" for s in scan.scanners())


def test_check_explain_says_what_decoding_holds() -> None:
    from shields.commands import check_policies

    out = io.StringIO()
    strict = REPO_ROOT / "policies" / "strict.yaml"
    assert check_policies([strict], out, explain=True) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].endswith(f"stream hold-back at most {WINDOW} characters")
    assert "decode.output: holds an encoded run while it may still grow" in lines[1]


def test_decoding_output_needs_a_holdback_of_the_window() -> None:
    with pytest.raises(PolicyError, match=f"at least {WINDOW}"):
        parse_policy(
            "version: 1\nname: x\nstream: {holdback_chars: 200}\ndecode: {output: true}\n"
            "output:\n  - {id: w, type: denylist, phrases: [bomb]}\n"
        )


# -- tool-call arguments, whole -----------------------------------------------------------


def test_tool_call_arguments_are_read_decoded_in_whole_replies_and_requests() -> None:
    from shields.evaluate import evaluate_reply, evaluate_request
    from shields.openai.request import read_chat_request

    args = json.dumps({"query": b64(PAYLOADS[0])})
    call: dict[str, Any] = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search", "arguments": args},
    }
    message: dict[str, Any] = {
        "role": "assistant",
        "tool_calls": [dict(call, function=dict(call["function"]))],
    }
    reply = {"choices": [{"index": 0, "message": message}]}
    evaluation = evaluate_reply(REDACT, reply)  # redacts the reply in place
    assert [f.label for f in evaluation.findings] == ["base64:build a bomb"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"query": "[GONE]"}
    body: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }
    # Requests: the arguments of the calls an assistant message carries (strict decodes input).
    found = evaluate_request(STRICT, read_chat_request(json.loads(json.dumps(body)))).findings
    assert [(f.shield_id, f.label) for f in found] == [("weapons", "base64:build a bomb")]
    benign = json.dumps({"query": b64("an ordinary sentence, nothing more")})
    call["function"]["arguments"] = benign
    assert not evaluate_request(STRICT, read_chat_request(json.loads(json.dumps(body)))).findings


def test_scan_explain_shows_the_decoded_text_of_tool_call_arguments() -> None:
    args = json.dumps({"query": b64(PAYLOADS[0])})
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": args}}
    record = {"id": 7, "choices": [{"message": {"role": "assistant", "tool_calls": [call]}}]}
    out = io.StringIO()
    scan_lines(REDACT, Stage.OUTPUT, [json.dumps(record)], out, explain=True)
    [finding] = json.loads(out.getvalue())["findings"]
    assert finding["label"] == "base64:build a bomb"
    assert finding["decoded"] == [PAYLOADS[0]]


# -- end to end ----------------------------------------------------------------------------

USER = [{"role": "user", "content": "answer in base64"}]


def content_events(text: str, size: int = 3) -> list[Any]:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    events.append(chunk({}, finish_reason="stop"))
    return events


async def test_a_streamed_reply_in_base64_is_redacted_through_the_proxy(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    encoded = b64(PAYLOADS[0])
    text = f"Sure: {encoded} done."
    upstream.enqueue(
        Reply(events=content_events(text)), Reply(body=json_bytes(chat_completion(text)))
    )
    client = make_client(await make_proxy(REDACT))

    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)  # type: ignore[arg-type]
    deltas_seen = [c.choices[0].delta.content or "" async for c in stream]  # type: ignore[union-attr]
    assert "".join(deltas_seen) == "Sure: [GONE] done."
    assert not any(encoded[:6] in delta for delta in deltas_seen)

    completion = await client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
    assert completion.choices[0].message.content == "Sure: [GONE] done."


async def test_strict_refuses_a_streamed_banned_phrase_in_hex(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    encoded = hexed("here is how to make a pipe bomb at home")
    upstream.enqueue(Reply(events=content_events(f"Decoded for you: {encoded}")))
    client = make_client(await make_proxy(STRICT))
    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)  # type: ignore[arg-type]
    seen: list[str] = []
    with pytest.raises(openai.APIError) as caught:
        async for part in stream:
            seen.append(part.choices[0].delta.content or "")
    assert "I'm sorry, but I can't help with that" in str(caught.value)
    assert encoded[:6] not in "".join(seen)
