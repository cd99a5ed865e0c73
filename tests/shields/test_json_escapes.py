"""JSON escapes in tool-call arguments: the shields see what the application will parse."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.cli import default_policy
from shields.json_escapes import JsonEscapedScan, _Decoder, check_json_text, decode_json_escapes
from shields.policy import parse_policy
from shields.scan import TextScan

POLICY = parse_policy(
    """
name: escapes-test
stream: {holdback_chars: 170}
output:
  - {id: banned, type: denylist, phrases: ["build a bomb"]}
  - {id: pii, type: pii, action: redact, entities: [email]}
  - {id: secrets, type: secrets, rules: [github_token]}
"""
)
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def escaped_scan() -> JsonEscapedScan:
    return JsonEscapedScan(TextScan(POLICY.output_shields, holdback=POLICY.holdback))


def escape_all(text: str) -> str:
    """Every character as a ``\\uXXXX`` escape, as a hostile model could write it."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def scan_whole(text: str) -> list[tuple[str, int, int]]:
    scan = escaped_scan()
    found = scan.feed(text) + scan.finish()
    return sorted((f.shield_id, f.start, f.end) for f in found)


def test_decoding_matches_json_for_every_kind_of_escape() -> None:
    value = 'q "quoted" back\\slash /slash \b\f\n\r\t é 😀 \u2028 \\u0062'
    encoded = json.dumps(value)[1:-1]  # the body of a JSON string literal
    assert decode_json_escapes(encoded) == value
    assert decode_json_escapes(json.dumps(value, ensure_ascii=False)[1:-1]) == value
    assert decode_json_escapes("\\ud83d\\ude00") == "😀"


def test_what_is_not_an_escape_stays_as_it_is() -> None:
    assert decode_json_escapes("a\\qb \\u12 \\uzzzz end\\") == "a\\qb \\u12 \\uzzzz end\\"
    # Lone surrogates become the replacement character, never a surrogate in a str.
    assert decode_json_escapes("\\ud800x \\udc00") == "\ufffdx \ufffd"


def test_an_escaped_banned_phrase_is_found_and_its_span_covers_the_escapes() -> None:
    arguments = '{"q": "how to build a \\u0062omb"}'
    [(shield, start, end)] = scan_whole(arguments)
    assert shield == "banned"
    assert arguments[start:end] == "build a \\u0062omb"


def test_a_fully_escaped_secret_and_email_are_found() -> None:
    arguments = json.dumps({"token": TOKEN[:-1]})[:-2] + "\\u0038" + '"}'
    assert TOKEN[-1] == "8" and json.loads(arguments)["token"] == TOKEN
    [(shield, start, end)] = scan_whole(arguments)
    assert shield == "secrets" and decode_json_escapes(arguments[start:end]) == TOKEN
    email = escape_all("ann@example.com")
    [(shield, start, end)] = scan_whole('{"to": "' + email + '"}')
    assert shield == "pii" and ('{"to": "' + email)[start:end] == email


def test_without_escapes_the_offsets_are_the_texts_own() -> None:
    arguments = '{"q": "how to build a bomb"}'
    [(_, start, end)] = scan_whole(arguments)
    assert arguments[start:end] == "build a bomb"


def cut(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


@st.composite
def escaped_arguments(draw: st.DrawFn) -> str:
    """JSON arguments with a banned phrase, an email or nothing, escaped in random places."""
    planted = draw(st.sampled_from(["build a bomb", "ann@example.com", TOKEN, "nothing here"]))
    # Up to 160 escapes before it: more than the decoder's map keeps before pruning.
    before = draw(st.text(alphabet='abc é😀\n"\\/', max_size=20)) * draw(st.integers(1, 8))
    value = before + " " + planted + " " + draw(st.text(alphabet="xyz ", max_size=10))
    ascii_only = draw(st.booleans())
    # Each character as JSON writes it, some letters and digits escaped too, the way a model
    # asked to hide a word would write them.
    escaped = "".join(
        f"\\u{ord(c):04x}"
        if c.isalnum() and draw(st.booleans())
        else json.dumps(c, ensure_ascii=ascii_only)[1:-1]
        for c in value
    )
    return '{"q": "' + escaped + '"}'


@settings(max_examples=300, deadline=None)
@given(escaped_arguments(), st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_gives_the_whole_texts_findings_and_never_releases_one(
    arguments: str, cuts: list[int]
) -> None:
    whole = scan_whole(arguments)
    decoder = _Decoder()
    decoder.decode(arguments, final=True)
    boundaries = {decoder.received_offset(d) for d in range(decoder.decoded_len + 1)}
    scan = escaped_scan()
    found = []
    released = 0
    for piece in cut(arguments, cuts):
        new = scan.feed(piece)
        # Zero leak: nothing found now starts in text already declared safe.
        assert all(f.start >= released for f in new), (new, released)
        found += new
        assert released <= scan.safe_end <= scan.received
        released = scan.safe_end
        # The safe end never splits an escape: what is released decodes on its own.
        assert released in boundaries, (released, arguments)
    found += scan.finish()
    assert scan.safe_end == len(arguments)
    assert sorted((f.shield_id, f.start, f.end) for f in found) == whole
    value = json.loads(arguments)["q"]
    for _, start, end in whole:
        assert decode_json_escapes(arguments[start:end]) in value


def test_whole_text_offsets_stay_exact_after_many_escapes() -> None:
    # json.dumps escapes every non-ASCII character: 81 escapes before the token, 40 after.
    arguments = json.dumps({"summary": "日本語" * 27, "token": TOKEN, "note": "é" * 40})
    for shields in (POLICY.output_shields, default_policy().output_shields):
        findings = check_json_text(shields, arguments)
        spans = {arguments[f.start : f.end] for f in findings}
        assert spans == {TOKEN}, spans
