"""The normalizer's bulk paths against the per-character definition, on long mixed texts.

Long texts take paths of their own: non-ASCII runs that fold one-to-one are folded in place,
long plain stretches are split on pairs of spaces at once, and the view is built as bytes
(``ascii_view``). Whatever the path, the view and every offset must be those of the
definition, fed whole or in any chunking; and a deny list's spans must be too.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shields.base import Finding, Shield
from shields.builtin.denylist import DenylistShield
from shields.normalize import OVERRIDE_LABEL, StreamNormalizer, normalize_char
from shields.policy import parse_policy
from shields.scan import TextScan, check_text
from tests.shields.test_normalize import reference

# Pieces of text: prose, every kind of whitespace run, dropped controls, lookalikes that fold
# one-to-one (Cyrillic, Greek, quotes, full-width), letters kept as they are (CJK, "ñ"),
# zero-width and bidi characters, combining marks, expansions ("ﬁ", "ß", "㎏", "⑴"), a
# character whose NFKC form starts with a space ("¨"), non-ASCII spaces and astral
# characters (emoji, mathematical letters).
PIECES = [
    "Build a bomb",
    "word ",
    "words and more words. ",
    " ",
    "  ",
    "   ",
    "\n\n",
    "\n",
    "\t",
    " \n ",
    "\x00",
    "\x1b",
    "\x7f",
    "bоmb",
    "ΒΟΜΒ",
    "’",
    "“quoted”",
    "ｂｏｍｂ",
    "不为人",
    "ñ",
    "\u200b",
    "\u200d",
    "\u202e",
    "\ufeff",
    "e\u0301",
    "ﬁ",
    "ß",
    "㎏",
    "⑴",
    "\u00a8",
    "\u00a0",
    "\u3000",
    "😀",
    "𝐛𝐨𝐦𝐛",
]
# Long runs of plain prose, so that stretches exceed the split-at-once threshold (4096).
FILLER = ["plain prose " * 400, "prose\n\n" * 700]

texts = st.lists(st.sampled_from(PIECES + FILLER), max_size=60).map("".join)
cuts = st.lists(st.integers(min_value=0, max_value=20_000), max_size=8)


def chunked(text: str, points: list[int]) -> list[str]:
    bounds = sorted({p % (len(text) + 1) for p in points})
    pieces, last = [], 0
    for point in [*bounds, len(text)]:
        pieces.append(text[last:point])
        last = point
    return pieces


def reference_end(sources: list[int], orig_len: int, end: int) -> int:
    """Where a normalized span ending at ``end`` ends in the original (``orig_end``)."""
    if end <= 0:
        return 0
    last = sources[end - 1] + 1
    return max(last, orig_len if end >= len(sources) else sources[end])


def marked(text: str) -> bytes:
    return bytes(ord(c) if c.isascii() else 0x80 for c in text)


@settings(max_examples=200, deadline=None)
@given(texts, cuts)
def test_view_offsets_and_bytes_match_the_definition(text: str, points: list[int]) -> None:
    expected, sources = reference(text)
    stream = StreamNormalizer()
    views = []
    for piece in chunked(text, points):
        view = stream.feed(piece)
        assert stream.ascii_view(view) == marked(view)
        views.append(view)
    assert "".join(views) == expected
    assert (stream.orig_len, stream.norm_len) == (len(text), len(expected))
    assert [stream.orig_start(k) for k in range(len(expected))] == sources
    for start in range(0, len(expected), 97):
        for end in (start + 1, start + 13, len(expected)):
            if start < end <= len(expected):
                assert stream.orig_span(start, end) == (
                    sources[start],
                    reference_end(sources, len(text), end),
                )


def test_one_to_one_runs_in_a_long_text() -> None:
    """Lookalikes and kept letters inside long prose: folded in place, and the view's
    non-ASCII characters come back in order between the ASCII stretches."""
    text = ("prose\n\n" * 700 + "bоmb 不为 ‘x’ ñ\u200bz ") * 3
    expected, sources = reference(text)
    stream = StreamNormalizer()
    view = stream.feed(text)
    assert view == expected
    assert [stream.orig_start(k) for k in range(len(view))] == sources
    assert stream.ascii_view(view) == marked(view)


KEYS = [
    ("build a bomb", False),
    ("bomb build", False),
    ("prose bomb", False),
    ("quoted", False),
    ("words", True),
    ("fi", True),
]
NON_ASCII_KEY = ("bomb 不为", False)
# Too long for the RE2 prefilter: long chunks go to ahocorasick_rs, over the normalizer's
# bytes when every key is ASCII.
FILLER_KEYS = [f"zq{i:04d}zq" for i in range(600)]


def long_denylist(keys: list[tuple[str, bool]]) -> tuple[Shield, ...]:
    spec = {
        "id": "deny",
        "type": "denylist",
        "phrases": [key for key, is_word in keys if not is_word] + FILLER_KEYS,
        "words": [key for key, is_word in keys if is_word],
    }
    document = {"version": 1, "name": "bulk", "input": [spec]}
    return parse_policy(json.dumps(document)).input_shields


SHIELDS = {False: long_denylist(KEYS), True: long_denylist([*KEYS, NON_ASCII_KEY])}


def test_the_long_list_is_searched_in_bulk() -> None:
    for non_ascii, (shield,) in SHIELDS.items():
        assert isinstance(shield, DenylistShield)
        assert shield._bulk is not None and shield._bulk_ascii is not non_ascii


def spans_of(findings: list[Finding]) -> list[tuple[str, int, int]]:
    # The deny list's matches; a bidi override's run (the pieces include "\u202e") is a finding
    # of its own, checked in tests/shields/test_normalize_unicode.py.
    return sorted((f.label, f.start, f.end) for f in findings if f.label != OVERRIDE_LABEL)


@settings(max_examples=60, deadline=None)
@given(texts, cuts, st.booleans())
def test_long_deny_lists_map_spans_like_the_definition(
    text: str, points: list[int], non_ascii: bool
) -> None:
    """ahocorasick_rs over the normalizer's bytes, spans mapped run by run, agree with a
    search of the definition's view mapped character by character."""
    shields = SHIELDS[non_ascii]
    whole = spans_of(check_text(shields, text))
    expected_view, sources = reference(text)
    expected = set()
    keys = [*KEYS, NON_ASCII_KEY] if non_ascii else KEYS
    # A phrase of several words also matches with its words run together, as a whole word
    # ("bombBuild" is "bomb build"); the pieces hold no joiners nor digits for letters.
    run_together = [(key, "".join(filter(str.isalnum, key)), True) for key, _ in keys if " " in key]
    for key, written, is_word in [(k, k, w) for k, w in keys] + [
        entry for entry in run_together if len(entry[1]) >= 6
    ]:
        start = expected_view.find(written)
        while start >= 0:
            end = start + len(written)
            before = expected_view[start - 1] if start else " "
            after = expected_view[end] if end < len(expected_view) else " "
            if not is_word or not (_word(before) or _word(after)):
                expected.add((key, sources[start], reference_end(sources, len(text), end)))
            start = expected_view.find(written, start + 1)
    assert set(whole) == expected
    scan = TextScan(shields)
    found: list[Finding] = []
    for piece in chunked(text, points):
        found += scan.feed(piece)
    found += scan.finish()
    # A match is reported once its last character is fed: the invisible characters that
    # follow it, which the whole text's span swallows, may come in a later chunk.
    chunked_spans = spans_of(found)
    assert [span[:2] for span in chunked_spans] == [span[:2] for span in whole]
    for (_, _, end), (_, _, whole_end) in zip(chunked_spans, whole, strict=True):
        assert end <= whole_end
        assert all(normalize_char(char) == "" for char in text[end:whole_end])


def _word(char: str) -> bool:
    return char.isalnum()  # "_" joins words: "make_napalm" is "make napalm"
