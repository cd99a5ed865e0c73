"""The normalizer: folding, and an offset map that stays exact in any chunking."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shields.normalize import StreamNormalizer, normalize, normalize_char

# Characters that exercise every path: plain ASCII, whitespace runs, zero-width and bidi
# controls, full-width letters, expansions (ß -> ss, ﬁ -> fi), combining marks, emoji.
ALPHABET = "abcXYZ 019.-\n\t\u200b\u200d\u202e\u00adｂｏｍ\u00dfﬁe\u0301😀Ω"

texts = st.text(alphabet=ALPHABET, max_size=60)


def chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, last = [], 0
    for point in [*points, len(text)]:
        pieces.append(text[last:point])
        last = point
    return pieces


def test_folds_case_width_and_invisible_characters() -> None:
    assert normalize("Build  A\u200b BOMB")[0] == "build a bomb"
    assert normalize("ｂｏｍｂ")[0] == "bomb"
    assert normalize("STRASSE Straße")[0] == "strasse strasse"
    assert normalize("a\t\n\r b")[0] == "a b"
    assert normalize("x\u202ey\u00adz")[0] == "xyz"


def test_normalize_char_classes() -> None:
    assert normalize_char("\u200b") == ""
    assert normalize_char("\u3000") == " "
    assert normalize_char("Ａ") == "a"
    assert normalize_char("\U000e0041") == ""  # a Unicode tag character smuggles text


def test_spans_map_back_to_original_characters() -> None:
    text = "Say ｂｏ\u200bｍｂ  now"
    norm, mapper = normalize(text)
    start = norm.index("bomb")
    orig = mapper.orig_span(start, start + 4)
    assert text[orig[0] : orig[1]] == "ｂｏ\u200bｍｂ"
    after = norm.index("now")
    assert text[mapper.orig_start(after) :] == "now"


def test_expansion_maps_each_character_to_its_source() -> None:
    text = "aßb"
    norm, mapper = normalize(text)
    assert norm == "assb"
    assert [mapper.orig_start(k) for k in range(4)] == [0, 1, 1, 2]
    # A span covering half of the expansion still covers the whole original character.
    assert mapper.orig_span(1, 2) == (1, 2)


@settings(max_examples=300)
@given(texts, st.lists(st.integers(min_value=0, max_value=80), max_size=10))
def test_chunked_normalization_equals_whole(text: str, cuts: list[int]) -> None:
    whole, whole_map = normalize(text)
    stream = StreamNormalizer()
    parts = [stream.feed(piece) for piece in chunked(text, cuts)]
    assert "".join(parts) == whole
    assert stream.norm_len == len(whole) and stream.orig_len == len(text)
    for k in range(len(whole) + 1):
        assert stream.orig_start(k) == whole_map.orig_start(k)


@settings(max_examples=300)
@given(texts)
def test_every_normalized_character_comes_from_its_mapped_source(text: str) -> None:
    norm, mapper = normalize(text)
    previous = 0
    for k, char in enumerate(norm):
        source = mapper.orig_start(k)
        assert source >= previous  # monotonic
        previous = source
        folded = normalize_char(text[source])
        assert char in folded or (char == " " and folded == " ")
        start, end = mapper.orig_span(k, k + 1)
        assert start <= source < end <= len(text)


def test_forget_before_keeps_recent_offsets_exact() -> None:
    stream = StreamNormalizer()
    text = "ß\u200b " * 200
    norm = stream.feed(text)
    reference = normalize(text)[1]
    stream.forget_before(len(norm) - 10)
    for k in range(len(norm) - 10, len(norm) + 1):
        assert stream.orig_start(k) == reference.orig_start(k)
