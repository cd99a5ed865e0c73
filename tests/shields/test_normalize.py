"""The normalizer: folding, and an offset map that stays exact in any chunking."""

from __future__ import annotations

from random import Random
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shields import normalize as normalize_module
from shields.normalize import (
    IdentityNormalizer,
    StreamNormalizer,
    confusable_skeleton,
    non_ascii_runs,
    normalize,
    normalize_char,
)

# Characters that exercise every path: plain ASCII, whitespace runs, zero-width and bidi
# controls, full-width letters, expansions (ß -> ss, ﬁ -> fi), combining marks, emoji, and
# confusables: Cyrillic and Greek lookalikes (one, "В", only through its capital), mathematical
# letters, curly quotes, a lookalike that expands ("æ" -> "ae", "Ы" -> "bl") and ones that keep
# their identity (Cyrillic "б", Arabic-Indic digits).
ALPHABET = "abcXYZ 019.-\n\t\u200b\u200d\u202e\u00adｂｏｍ\u00dfﬁe\u0301😀ΩоОѕВвοΟ𝐛𝐨’“–æЫб٥"

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


def test_confusables_fold_to_their_ascii_skeleton() -> None:
    assert normalize("bоmb")[0] == "bomb"  # Cyrillic о
    assert normalize("ѕarin")[0] == "sarin"  # Cyrillic ѕ (dze)
    assert normalize("bοmb ΒΟΜΒ")[0] == "bomb bomb"  # Greek ο, and capitals Β Ο Μ
    assert normalize("𝐛𝐨𝐦𝐛 𝒃𝒐𝒎𝒃")[0] == "bomb bomb"  # mathematical letters (NFKC)
    assert normalize("ＢＯＭＢ")[0] == "bomb"  # full-width (NFKC)
    assert normalize("ѕаrіn")[0] == "sarin"  # every letter Cyrillic
    assert normalize("don’t “quote” – ok")[0] == 'don\'t "quote" - ok'
    assert normalize("ıɑ∣")[0] == "ial"  # Latin dotless i, Latin alpha, a symbol


def test_confusable_folding_is_case_insensitive_in_every_script() -> None:
    # "в" has no lookalike of its own; its capital "В" looks like "B", so both fold to "b":
    # a non-Latin deny-list entry must keep matching whatever the case of the text.
    assert normalize("ВОМВ")[0] == normalize("вомв")[0] == normalize("Вомв")[0] == "bomb"
    for word in ("Взрыв", "ΚΑΛΗΜΕΡΑ", "Ωραίο", "Привет"):
        assert normalize(word)[0] == normalize(word.lower())[0] == normalize(word.upper())[0]


def test_what_confusable_folding_leaves_alone() -> None:
    # ASCII is never folded: "0" -> "o", "1" -> "l" would be leetspeak, not confusables.
    assert normalize("b0mb 1337 I|l")[0] == "b0mb 1337 i|l"
    # Letters never become digits or punctuation, digits never letters: "б" looks like "6",
    # Arabic-Indic five like "o", katakana "ノ" like "/". Digits are read by their value.
    assert normalize("б з ٥ ١ ノ ०")[0] == "б з 5 1 ノ 0"
    # Text without lookalikes keeps its letters: Chinese, Japanese, the base letters of
    # accented Latin (accents are marks, read apart and dropped:
    # tests/shields/test_normalize_unicode.py).
    assert normalize("日本語のテキスト 中文 café naïve")[0] == "日本語のテキスト 中文 cafe naive"
    assert normalize_char("é") == "e"


def test_digits_of_every_script_read_as_ascii_digits() -> None:
    # A card number written in Arabic-Indic, Persian or Devanagari digits is the same number.
    assert normalize("٤١١١ ۴۱۱۱ ४१११ ৪১১১")[0] == "4111 4111 4111 4111"
    assert normalize_char("٥") == "5"  # by value: never the "o" it looks like


def test_invisible_letters_marks_and_selectors_are_dropped() -> None:
    # Default-ignorable characters outside the format category are as invisible as U+200B.
    for hidden in ("\u034f", "\ufe0f", "\ufe00", "\U000e0100", "\u17b4", "\u180b"):
        assert normalize(f"b{hidden}omb")[0] == "bomb", repr(hidden)
    # The Hangul fillers render as a blank cell: a space, not nothing.
    for blank in ("\u3164", "\u115f", "\uffa0"):
        assert normalize(f"b{blank}omb")[0] == "b omb", repr(blank)
    # Generic combining marks decorate a letter without changing what it reads as.
    assert normalize("b\u0301omb")[0] == "bomb"
    assert normalize("b\u0336o\u0336m\u0336b\u0336")[0] == "bomb"  # struck through
    assert normalize("bo\u20ddmb")[0] == "bomb"  # an enclosing mark
    # Accents go whether precomposed or not; the viramas of Indic scripts and the vowel signs
    # (combining class 0) stay.
    assert normalize("café नमस्ते")[0] == "cafe नमस्ते"


def test_spans_cover_dropped_marks() -> None:
    text = "x b\u0336o\u0336m\u0336b\u0336 y"
    norm, mapper = normalize(text)
    assert norm == "x bomb y"
    start = norm.index("bomb")
    assert text[mapper.orig_start(start) : mapper.orig_end(start + 4)] == text[2:-2]


def test_fancy_latin_letters_fold() -> None:
    # Small capitals and negative circled or squared capitals: "fancy text" alphabets.
    assert normalize("ʙᴏᴍʙ ꜱᴀʀɪɴ 🅑🅞🅜🅑 🅱🅾🅼🅱")[0] == "bomb sarin bomb bomb"


def test_confusable_skeleton_of_single_characters() -> None:
    assert confusable_skeleton("о") == "o"
    assert confusable_skeleton("æ") == "ae"  # a multi-letter skeleton
    assert confusable_skeleton("–") == "-"
    assert confusable_skeleton("б") is None  # looks like a digit: kept
    assert confusable_skeleton("٥") is None  # a digit: kept
    assert confusable_skeleton("a") is None  # ASCII: never folded


def test_confusable_spans_map_back_exactly() -> None:
    text = "a ВОМВ, ѕаrіn & ΒΟΜΒ!"
    norm, mapper = normalize(text)
    assert norm == "a bomb, sarin & bomb!"
    for word, original in (("bomb", "ВОМВ"), ("sarin", "ѕаrіn")):
        start = norm.index(word)
        orig = mapper.orig_span(start, start + len(word))
        assert text[orig[0] : orig[1]] == original
    start = norm.rindex("bomb")
    assert text[slice(*mapper.orig_span(start, start + 4))] == "ΒΟΜΒ"
    # A multi-letter skeleton maps each of its letters to the one original character.
    text = "xЫæy"
    norm, mapper = normalize(text)
    assert norm == "xblaey"
    assert [mapper.orig_start(k) for k in range(len(norm))] == [0, 1, 1, 2, 2, 3]
    assert mapper.orig_span(2, 4) == (1, 3)


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


@given(texts, st.lists(st.integers(min_value=0, max_value=80), max_size=6))
def test_orig_span_is_orig_start_and_orig_end(text: str, cuts: list[int]) -> None:
    """``orig_span``'s two-bisection shortcut gives the same spans as the two halves, for
    every span of a chunked text, out-of-range ones included."""
    stream = StreamNormalizer()
    for piece in chunked(text, cuts):
        stream.feed(piece)
    for start in range(-1, stream.norm_len + 2):
        for end in range(start - 1, stream.norm_len + 2):
            assert stream.orig_span(start, end) == (stream.orig_start(start), stream.orig_end(end))


@given(texts, st.lists(st.integers(min_value=0, max_value=80), max_size=6), st.randoms())
def test_orig_spans_is_orig_span_of_each(text: str, cuts: list[int], random: Random) -> None:
    """``orig_spans``'s walk over the breakpoints gives ``orig_span`` of each span: in the
    order of their ends (a search's order, the walk), in any other order (bisections), and
    out of range."""
    stream = StreamNormalizer()
    for piece in chunked(text, cuts):
        stream.feed(piece)
    spans = [
        (start, end) for end in range(-1, stream.norm_len + 2) for start in range(end - 9, end + 2)
    ]
    in_range = [(start, end) for start, end in spans if 0 <= start < end <= stream.norm_len]
    shuffled = spans[:]
    random.shuffle(shuffled)
    for order in (in_range, spans, shuffled, shuffled[::-1]):
        starts, ends = stream.orig_spans([s for s, _ in order], [e for _, e in order])
        assert list(zip(starts, ends, strict=True)) == [stream.orig_span(*span) for span in order]


def test_orig_spans_after_forget_before() -> None:
    stream = StreamNormalizer()
    text = "ß\u200b  x" * 200
    norm = stream.feed(text)
    reference = normalize(text)[1]
    stream.forget_before(len(norm) - 30)
    spans = [
        (start, end) for end in range(len(norm) - 25, len(norm) + 1) for start in (end - 5, end - 1)
    ]
    starts, ends = stream.orig_spans([s for s, _ in spans], [e for _, e in spans])
    assert list(zip(starts, ends, strict=True)) == [reference.orig_span(*span) for span in spans]


def test_forget_before_keeps_recent_offsets_exact() -> None:
    stream = StreamNormalizer()
    text = "ß\u200b " * 200
    norm = stream.feed(text)
    reference = normalize(text)[1]
    stream.forget_before(len(norm) - 10)
    for k in range(len(norm) - 10, len(norm) + 1):
        assert stream.orig_start(k) == reference.orig_start(k)


def reference(text: str) -> tuple[str, list[int]]:
    """The definition, character by character: each normalized character and its source."""
    out, sources, previous_space = [], [], False
    for i, char in enumerate(text):
        folded = normalize_char(char)
        if not folded or (folded == " " and previous_space):
            continue
        previous_space = folded.endswith(" ")
        out.append(folded)
        sources += [i] * len(folded)
    return "".join(out), sources


# Every ASCII path of the fast normalizer: lone and repeated whitespace of each kind, dropped
# controls (NUL, DEL, ESC) next to spaces, and non-ASCII runs (spaces, zero-width, expansions).
FAST_PATH_ALPHABET = "aZ .  \t\n\r\x0b\x0c\x1c\x1f\x00\x7f\x1b\u00a0\u3000\u200bßЫé😀"


@settings(max_examples=500)
@given(
    st.text(alphabet=FAST_PATH_ALPHABET, max_size=80),
    st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_fast_paths_agree_with_the_per_character_definition(text: str, cuts: list[int]) -> None:
    expected, sources = reference(text)
    stream = StreamNormalizer()
    assert "".join(stream.feed(piece) for piece in chunked(text, cuts)) == expected
    assert [stream.orig_start(k) for k in range(len(expected))] == sources


@pytest.mark.parametrize(
    "pieces",
    [
        ["ab\n\ncd", "ef  gh"],  # a pair inside each chunk
        ["ab  ", "cd"],  # a chunk ends with a pair
        ["ab ", "  cd"],  # a pair after a space that was fed before: a run of three
        ["  ab", "c\t\td  e"],  # a chunk starts with a pair, several pairs in one chunk
        ["A.", "B  C", " ", "d"],  # short printable chunks (str.lower) between pairs
    ],
)
def test_stream_chunks_with_paragraph_breaks(pieces: list[str]) -> None:
    text = "".join(pieces)
    expected, sources = reference(text)
    stream = StreamNormalizer()
    assert "".join(stream.feed(piece) for piece in pieces) == expected
    assert [stream.orig_start(k) for k in range(len(expected))] == sources
    assert stream.orig_span(0, len(expected)) == (0, len(text))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.sampled_from(["word", " ", "  ", "\n\n", "   ", "\t", "é", "\x00", "Ы"]),
        min_size=1000,
        max_size=3000,
    ),
    st.integers(min_value=0, max_value=10_000),
)
def test_long_texts_agree_with_the_per_character_definition(parts: list[str], cut: int) -> None:
    """Long segments take the split-and-join path (runs of exactly two spaces)."""
    for text in ("".join(parts), "".join(p for p in parts if p not in ("   ", "\x00", "é"))):
        expected, sources = reference(text)
        stream = StreamNormalizer()
        assert stream.feed(text[:cut]) + stream.feed(text[cut:]) == expected
        assert [stream.orig_start(k) for k in range(len(expected))] == sources


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from(["word", " ", "  ", "\n\n", "   ", "\t", "é", "\x00", "Ы", "a" * 40]),
        min_size=1,
        max_size=300,
    ),
    st.integers(min_value=0, max_value=2_000),
    st.sampled_from([(8, 32, 1), (8, 32, 10**6), (16, 64, 16), (4, 4096, 10**6)]),
)
def test_long_segments_in_windows_sparse_and_dense(
    parts: list[str], cut: int, sizes: tuple[int, int, int]
) -> None:
    """Long segments go window by window, each split on its pairs of spaces by slices (sparse
    pairs) or by ``bytes.split`` (dense ones): with small sizes, so that windows, runs of
    spaces across them and both splits show up in short texts."""
    split_from, window, sparse = sizes
    with (
        patch.object(normalize_module, "_SPLIT_FROM", split_from),
        patch.object(normalize_module, "_WINDOW", window),
        patch.object(normalize_module, "_SPARSE", sparse),
    ):
        for text in ("".join(parts), "".join(p for p in parts if p not in ("   ", "\x00", "é"))):
            expected, sources = reference(text)
            stream = StreamNormalizer()
            assert stream.feed(text[:cut]) + stream.feed(text[cut:]) == expected
            assert [stream.orig_start(k) for k in range(len(expected))] == sources


def test_a_long_text_with_sparse_pairs_across_windows() -> None:
    """Past a window (64 KB) of prose with a paragraph break every few hundred characters,
    a run of three spaces and one across the windows' border: the actual sizes."""
    paragraph = "Some prose, and more of it. " * 12 + "\n\n"
    text = paragraph * 200 + "three   spaces" + paragraph * 30
    border = 1 << 16
    text = text[: border - 1] + "  " + text[border - 1 :]
    expected, sources = reference(text)
    stream = StreamNormalizer()
    assert stream.feed(text) == expected
    assert [stream.orig_start(k) for k in range(len(expected))] == sources


def test_identity_normalizer_maps_every_offset_to_itself() -> None:
    identity = IdentityNormalizer()
    assert identity.feed("A  B\u200b") == "A  B\u200b" and identity.feed("c") == "c"
    assert (identity.orig_len, identity.norm_len) == (6, 6)
    assert [identity.orig_start(k) for k in range(7)] == list(range(7))
    assert identity.orig_span(1, 3) == (1, 3)


def test_non_ascii_runs() -> None:
    assert list(non_ascii_runs("plain")) == []
    assert list(non_ascii_runs("é a\u200b\u200bb 😀")) == [(0, 1), (3, 5), (7, 8)]
