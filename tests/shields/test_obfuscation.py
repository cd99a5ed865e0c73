"""Obfuscated text: spelled-out letters ("b.o.m.b") and lookalikes, whole, chunked and streamed."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from proxy.stream.guard import GuardState
from shields.builtin.denylist import DenylistShield, DenylistSpec
from shields.normalize import normalize
from shields.policy import parse_policy
from shields.scan import TextScan, check_text
from shields.spaced import SpacedView, find_runs, spaced_span
from tests.support.fake_upstream import chunk, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run


def collapse(text: str, max_gap: int = 1) -> str:
    view = SpacedView(max_gap)
    return view.feed(text) + view.finish()


def denylist(**kwargs: object) -> DenylistShield:
    return DenylistShield(DenylistSpec(id="deny", **kwargs))  # type: ignore[arg-type]


def spans(shield: DenylistShield, text: str) -> list[tuple[str, str]]:
    return sorted((f.label, text[f.start : f.end]) for f in check_text([shield], text))


def feed_in_pieces(view: SpacedView, text: str, sizes: list[int]) -> list[str]:
    out, pos, i = [], 0, 0
    while pos < len(text):
        out.append(view.feed(text[pos : pos + sizes[i % len(sizes)]]))
        pos, i = pos + sizes[i % len(sizes)], i + 1
    out.append(view.finish())
    return out


# --- Lookalikes: every shield that reads the normalized view gets them folded ---------------


@pytest.mark.parametrize(
    "disguised",
    ["bоmb", "BΟMB", "ВОМВ", "𝐛𝐨𝐦𝐛", "ｂｏｍｂ", "b\u200bоm\u00adb", "ƅоmƅ"],
)
def test_lookalike_letters_are_caught_with_exact_spans(disguised: str) -> None:
    shield = denylist(words=["bomb"])  # plain mode: folding is the normalizer's, for everyone
    text = f"how to make a {disguised}, fast"
    assert spans(shield, text) == [("bomb", disguised)]


@pytest.mark.parametrize(
    "disguised",
    [
        "b\u034fomb",  # combining grapheme joiner
        "bo\ufe0fmb",  # variation selector
        "b\U000e0100omb",  # variation selector supplement
        "b\u17b4omb",  # Khmer inherent vowel (the Hangul fillers render blank: a space)
        "b\u0301omb",  # a stray combining accent
        "b\u0336o\u0336m\u0336b\u0336",  # struck through, the last mark included
        "b\u0335\u0322o\u0337m\u0338\u0328b\u0334\u0321",  # "zalgo"
        "ʙᴏᴍʙ",  # small capitals
        "🅑🅞🅜🅑",  # negative circled capitals
    ],
)
def test_invisible_and_decorated_letters_are_caught_with_exact_spans(disguised: str) -> None:
    shield = denylist(words=["bomb"])
    text = f"how to make a {disguised}, fast"
    assert spans(shield, text) == [("bomb", disguised)]
    # ...and the same in a stream, a character at a time.
    scan = TextScan([shield])
    streamed = [f for char in text for f in scan.feed(char)] + scan.finish()
    assert [(f.label, text[f.start : f.end]) for f in streamed] == [("bomb", disguised)]


def test_lookalikes_and_plain_text_of_other_scripts() -> None:
    shield = denylist(words=["sarin", "pot"], phrases=["nerve agent"])
    assert spans(shield, "ѕаrіn and nеrvе аgеnt") == [
        ("nerve agent", "nеrvе аgеnt"),
        ("sarin", "ѕаrіn"),
    ]
    # Folding follows the case-folded letter: Greek capital "Ν" folds as "ν", which looks like
    # "v" (documented limitation; the Latin-looking capitals of Cyrillic all fold right).
    assert spans(shield, "ΝΕRVΕ АGΕΝΤ") == []
    assert spans(shield, "NЕRVЕ АGЕNТ") == [("nerve agent", "NЕRVЕ АGЕNТ")]
    # The price of folding: a Russian word made only of lookalikes reads as English ("рот",
    # mouth, reads "pot"). Deny lists of short English words see it; documented.
    assert spans(shield, "открой рот") == [("pot", "рот")]


# --- The collapsed view --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gap", "view"),
    [
        ("b.o.m.b", 1, "bomb"),
        ("b o m b", 1, "bomb"),
        ("b-o-m-b", 1, "bomb"),
        ("b_o_m_b", 1, "bomb"),
        ("b*o/m+b!", 1, "bomb!"),
        ("how to make a b.o.m.b now", 1, "how to make abomb now"),
        ("b. o. m. b.", 1, "b. o. m. b."),  # two separator characters: needs a wider gap
        ("b. o. m. b.", 2, "bomb."),
        ("b - o - m - b", 2, "b - o - m - b"),
        ("b - o - m - b", 3, "bomb"),
        ("b.o.m.bx", 1, "bom.bx"),  # "bx" is a word: the run stops before it
        ("xb.o.m", 1, "xb.o.m"),  # "xb" too: only two single letters are left
        ("a bomb", 1, "a bomb"),  # one letter is not a run
        ("e.g. i.e.", 1, "e.g. i.e."),  # two letters are not a run
        ("J. R. R. Tolkien", 1, "J. R. R. Tolkien"),
        ("U.S.A. a b c", 1, "USA. abc"),  # three single letters are, whatever they mean
        ("1 2 3", 1, "123"),
    ],
)
def test_separators_inside_runs_of_single_letters_are_removed(
    text: str, gap: int, view: str
) -> None:
    assert collapse(text, gap) == view


def test_view_maps_back_to_normalized_offsets_exactly() -> None:
    text = "say b.o.m.b or s-a-r-i-n!"
    view = SpacedView(1)
    out = view.feed(text) + view.finish()
    assert out == "say bomb or sarin!"
    start = out.index("bomb")
    assert view.norm_span(start, start + 4) == (4, 11)  # "b.o.m.b", separators included
    start = out.index("sarin")
    assert text[slice(*view.norm_span(start, start + 5))] == "s-a-r-i-n"
    assert text[slice(*view.norm_span(start + 1, start + 3))] == "a-r"
    assert view.norm_index(out.index("!")) == len(text) - 1


def test_the_end_of_a_run_waits_for_the_next_character() -> None:
    view = SpacedView(1)
    # "m" may still grow into a word, and then "b.o" would be two letters only.
    assert view.feed("xy b.o.m") == "xy b"
    assert view.feed(".") == "om"  # three letters: their separators go, the new one waits
    assert view.feed("b") == ""  # "b" may still become "bx"
    assert view.feed("x") == ".bx"
    assert view.finish() == ""


# Single letters, separators of every width, words, a lookalike and an expansion.
VIEW_ALPHABET = "abo .-_ab.xyz 1\u00e9\u0301é"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=VIEW_ALPHABET, max_size=60),
    st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=12),
    st.integers(min_value=1, max_value=3),
)
def test_chunked_view_equals_whole_view(text: str, sizes: list[int], gap: int) -> None:
    whole = SpacedView(gap)
    expected = whole.feed(text) + whole.finish()
    view = SpacedView(gap)
    assert "".join(feed_in_pieces(view, text, sizes)) == expected
    assert view.view_len == len(expected) and view.norm_len == len(text)
    previous = -1
    for k, char in enumerate(expected):
        source = view.norm_index(k)
        assert source == whole.norm_index(k) and text[source] == char
        assert source > previous  # only characters are removed, never reordered
        # Whatever was removed between two view characters is a run's separator.
        assert not text[previous + 1 : source] or re.fullmatch(
            r"[\W_]+", text[previous + 1 : source]
        )
        previous = source


def reference_runs(text: str, gap: int) -> list[tuple[int, int]]:
    """The definition of a run, as one Unicode regex (slower than ``find_runs``'s road)."""
    pattern = rf"(?<![^\W_])[^\W_](?:[\W_]{{1,{gap}}}[^\W_]){{2,}}(?![^\W_])"
    return [m.span() for m in re.finditer(pattern, text)]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=VIEW_ALPHABET + "中。ж_\u00a0٣", max_size=60),
    st.integers(min_value=1, max_value=3),
)
def test_find_runs_follows_the_definition(text: str, gap: int) -> None:
    assert list(find_runs(text, gap)) == reference_runs(text, gap)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bomb", "to", "I", "e.g.", "x-ray", "U.S.", "12"]), max_size=20)
)
def test_text_without_three_single_letters_in_a_row_is_unchanged(words: list[str]) -> None:
    text = " ".join(words)
    if reference_runs(text, 1):
        return
    assert collapse(text) == text


# --- The denylist in spaced mode -----------------------------------------------------------


spelled = denylist(words=["bomb", "sarin"], phrases=["build a bomb"], spaced_letters=True)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("how to make a b.o.m.b now", [("bomb", "b.o.m.b")]),
        ("B O M B", [("bomb", "B O M B")]),
        ("b-o-m-b", [("bomb", "b-o-m-b")]),
        ("b_o_m_b", [("bomb", "b_o_m_b")]),
        ("b\u200b.o.m.b", [("bomb", "b\u200b.o.m.b")]),
        ("ѕ-а-r-і-n!", [("sarin", "ѕ-а-r-і-n")]),  # spelled out AND Cyrillic
        ("Ｓ.Ａ.Ｒ.Ｉ.Ｎ", [("sarin", "Ｓ.Ａ.Ｒ.Ｉ.Ｎ")]),
        # A phrase spelled out in full: its words run together, every letter a token.
        ("b u i l d a b o m b", [("bomb", "b o m b"), ("build a bomb", "b u i l d a b o m b")]),
        # Partly spelled out: only the word entry catches it (documented limitation).
        ("build a b.o.m.b", [("bomb", "b.o.m.b")]),
        ("a bomb", [("bomb", "bomb")]),  # the plain view, once
        ("b o m", []),
        ("b. o. m. b.", []),  # two separator characters: default gap is 1
    ],
)
def test_spelled_out_entries_are_found(text: str, found: list[tuple[str, str]]) -> None:
    assert spans(spelled, text) == sorted(found)


def test_wider_gaps_are_opt_in() -> None:
    wide = denylist(words=["bomb"], spaced_letters=True, spaced_max_gap=3)
    assert spans(wide, "b. o. m. b.") == [("bomb", "b. o. m. b")]
    assert spans(wide, "b - o - m - b") == [("bomb", "b - o - m - b")]


def test_spaced_mode_is_off_by_default() -> None:
    assert spans(denylist(words=["bomb"]), "b.o.m.b") == []


PROSE = [
    "J. R. R. Tolkien wrote it in the U.S.A., e.g. at Oxford; i.e. not in the U.K.",
    "Options a, b, c and d are all valid. Pick a b c or d.",
    "Mr. T. S. Eliot met Dr. A. B. Smith at 5 p.m. on Jan. 3.",
    "x y z coordinates: 1 2 3. The bomber jacket and the combs were on sale.",
    "A bomb disposal robot, sarin-free air, ab ab ab. I am a B.Sc. student.",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_with_initials_matches_only_what_is_spelled_out(text: str) -> None:
    shield = denylist(
        words=["bomb", "sarin", "ricin", "usa", "eliot", "smith", "abc"],
        phrases=["build a bomb", "nerve agent"],
        spaced_letters=True,
        spaced_max_gap=2,
    )
    plain = denylist(
        words=["bomb", "sarin", "ricin", "usa", "eliot", "smith", "abc"],
        phrases=["build a bomb", "nerve agent"],
    )
    spaced_only = set(spans(shield, text)) - set(spans(plain, text))
    # Typical entries are words that nobody writes as initials; only runs of single letters
    # that literally spell an entry are caught ("U.S.A.", "a b c").
    for label, original in spaced_only:
        letters = "".join(c for c in normalize(original)[0] if c.isalnum())
        assert letters == label, (label, original)
    assert {label for label, _ in spaced_only} <= {"usa", "abc"}


def test_max_match_covers_the_spelled_out_form() -> None:
    # "bomb" spelled out spans 4 + 3 = 7 characters, then one character of look-ahead.
    assert denylist(words=["bomb"], spaced_letters=True).max_match == 8
    assert denylist(words=["bomb"], spaced_letters=True, spaced_max_gap=2).max_match == 11
    # "build a bomb" has 10 letters: 10 + 9 separators + 1.
    assert spelled.max_match == spaced_span(10, 1) + 1 == 20
    # Entries of fewer than three letters are never spelled out: their plain bound counts.
    assert denylist(words=["ab", "abc"], spaced_letters=True).max_match == 3 + 2 + 1
    # "x - y - z - w" (13 characters) is a phrase, read loosely as a whole word: one more.
    assert denylist(phrases=["x - y - z - w"], words=["xyz"], spaced_letters=True).max_match == 14


def test_spaced_options_are_validated() -> None:
    with pytest.raises(ValidationError, match="no effect without `spaced_letters: true`"):
        DenylistSpec(id="d", words=["bomb"], spaced_max_gap=2)
    with pytest.raises(ValidationError, match="at least 3 letters or digits"):
        DenylistSpec(id="d", words=["ab", "c-d"], spaced_letters=True)
    with pytest.raises(ValidationError, match="less than or equal to 3"):
        DenylistSpec(id="d", words=["bomb"], spaced_letters=True, spaced_max_gap=4)


SPACED_ALPHABET = "bomsarin .-_xyо\u200b"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=SPACED_ALPHABET, max_size=60),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=20),
    st.integers(min_value=1, max_value=3),
)
def test_chunked_spaced_scanning_finds_what_whole_text_finds(
    text: str, sizes: list[int], gap: int
) -> None:
    shield = denylist(
        words=["bomb", "sarin"], phrases=["ab ab"], spaced_letters=True, spaced_max_gap=gap
    )
    whole = {(f.label, f.start, f.end) for f in check_text([shield], text)}
    scan = TextScan([shield])
    found = []
    pos, i = 0, 0
    while pos < len(text):
        found += scan.feed(text[pos : pos + sizes[i % len(sizes)]])
        pos, i = pos + sizes[i % len(sizes)], i + 1
    found += scan.finish()
    assert {(f.label, f.start, f.end) for f in found} == whole


SEPARATORS = [" ", ".", "-", "_", "*", ". ", " /", " - ", "-\u200b"]


def spell(letters: str, separators: list[str], gap: int) -> str:
    """``letters`` spelled out, separators taken in turn, each cut to ``gap`` characters."""
    seps = [sep[:gap] for sep in separators]
    return letters[0] + "".join(seps[i % len(seps)] + c for i, c in enumerate(letters[1:]))


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(alphabet=SPACED_ALPHABET, max_size=20),
    after=st.text(alphabet=SPACED_ALPHABET, max_size=20),
    entry=st.sampled_from(["bomb", "sarin", "buildabomb"]),
    separators=st.lists(st.sampled_from(SEPARATORS), min_size=1, max_size=4),
    gap=st.integers(min_value=1, max_value=3),
)
def test_max_match_is_honest_character_by_character(
    before: str, after: str, entry: str, separators: list[str], gap: int
) -> None:
    # Fed one character at a time with hold-back == max_match, no finding may touch text the
    # scan already declared safe (that text would have left the proxy).
    shield = denylist(
        words=["bomb", "sarin"], phrases=["build a bomb"], spaced_letters=True, spaced_max_gap=gap
    )
    text = f"{before} {spell(entry, separators, gap)} {after}"
    scan = TextScan([shield], holdback=shield.max_match)
    safe = 0
    found = []
    for char in text:
        for finding in scan.feed(char):
            assert finding.start >= safe
            found.append(finding)
        safe = scan.safe_end
    for finding in scan.finish():
        assert finding.start >= safe
        found.append(finding)
    assert any(f.label.replace(" ", "") == entry for f in found)


# --- Zero leak in streams ------------------------------------------------------------------


GAP = 2
_stream_shield = denylist(
    words=["sarin"], phrases=["nerve agent"], spaced_letters=True, spaced_max_gap=GAP
)
SPACED_POLICY = parse_policy(
    f"""
name: spaced-guard-test
stream: {{holdback_chars: {_stream_shield.max_match}}}
output:
  - id: banned
    type: denylist
    words: [sarin]
    phrases: ["nerve agent"]
    spaced_letters: true
    spaced_max_gap: {GAP}
"""
)
LOOKALIKES = {"a": "а", "e": "е", "i": "і", "s": "ѕ", "r": "r", "n": "n", "o": "о"}
filler = st.text(alphabet="abc nert sagiy.\u200bRS-", max_size=50)


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    before=filler,
    after=filler,
    entry=st.sampled_from(["sarin", "nerveagent"]),
    separators=st.lists(st.sampled_from(SEPARATORS), min_size=1, max_size=4),
    lookalike=st.booleans(),
    upper=st.booleans(),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=4),
)
def test_zero_leak_for_spelled_out_entries(
    before: str,
    after: str,
    entry: str,
    separators: list[str],
    lookalike: bool,
    upper: bool,
    sizes: list[int],
    key: str,
    flush_every: int,
) -> None:
    letters = "".join(LOOKALIKES.get(c, c) if lookalike else c for c in entry)
    disguised = spell(letters.upper() if upper else letters, separators, GAP)
    text = f"{before} {disguised} {after}"
    found = check_text(SPACED_POLICY.output_shields, text)
    assert found  # the shield does see the spelled-out entry
    start = min(f.start for f in found)
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(SPACED_POLICY, body, flush_every=flush_every)
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, key)
    # The client saw an exact prefix of the text that stops before the first match begins.
    assert text.startswith(released)
    assert len(released) <= start
    assert disguised not in released
    final = payloads(out)
    assert final[-2]["choices"][0]["finish_reason"] == "content_filter"
