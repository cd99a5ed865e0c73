"""The built-in shields and the scan engine, whole and in chunks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shields.base import Action, Verdict, verdict_of
from shields.builtin.denylist import DenylistShield, DenylistSpec
from shields.builtin.regex import RegexShield, RegexSpec
from shields.scan import TextScan, check_text, merge_redactions, redact


def denylist(**kwargs: object) -> DenylistShield:
    return DenylistShield(DenylistSpec(id="deny", **kwargs))  # type: ignore[arg-type]


def regex(*patterns: str, **kwargs: object) -> RegexShield:
    return RegexShield(RegexSpec(id="re", patterns=list(patterns), **kwargs))  # type: ignore[arg-type]


def spans(shield, text: str) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    return [(f.label, text[f.start : f.end]) for f in check_text([shield], text)]


def test_phrases_match_anywhere_after_normalization() -> None:
    shield = denylist(phrases=["build a bomb"])
    assert spans(shield, "How to BUILD\u200b  a ｂｏｍｂ?") == [
        ("build a bomb", "BUILD\u200b  a ｂｏｍｂ")
    ]
    assert spans(shield, "rebuild a bomber") == [("build a bomb", "build a bomb")]
    assert spans(shield, "build the bomb") == []


def test_words_need_word_boundaries() -> None:
    shield = denylist(words=["sarin"])
    assert spans(shield, "sarin.") == [("sarin", "sarin")]
    assert spans(shield, "(Sarin)") == [("sarin", "Sarin")]
    assert spans(shield, "sarinx") == []
    assert spans(shield, "xsarin") == []
    assert spans(shield, "sarin") == [("sarin", "sarin")]  # end of text is a boundary


def test_word_boundary_waits_for_the_next_chunk() -> None:
    shield = denylist(words=["sarin"])
    scan = TextScan([shield])
    assert scan.feed("about sarin") == []  # "sarinx" is still possible
    found = scan.feed(" gas")
    assert [(f.start, f.end) for f in found] == [(6, 11)]
    scan = TextScan([shield])
    scan.feed("about sarin")
    assert scan.feed("x") == [] and scan.finish() == []


def test_max_match_covers_the_look_ahead_of_words() -> None:
    assert denylist(phrases=["abcdef"], words=["xyz"]).max_match == 6
    assert denylist(words=["abcdefgh"]).max_match == 9


def test_ten_thousand_phrases_in_one_automaton() -> None:
    shield = denylist(phrases=[f"forbidden token {i:05d}" for i in range(10_000)])
    text = "prose " * 1000 + "FORBIDDEN token 09999" + " more" * 10
    assert spans(shield, text) == [("forbidden token 09999", "FORBIDDEN token 09999")]


def test_regex_matches_normalized_text_case_insensitively() -> None:
    shield = regex(r"\bcorp-[a-z0-9]+\.internal\b")
    assert spans(shield, "see CORP-Db1.internal now") == [("pattern[0]", "CORP-Db1.internal")]
    assert spans(shield, "xcorp-db1.internal") == []


def test_regex_raw_mode_is_case_sensitive() -> None:
    shield = regex(r"AKIA[0-9A-Z]{16}", normalize=False)
    assert spans(shield, "AKIAIOSFODNN7EXAMPLE") == [("pattern[0]", "AKIAIOSFODNN7EXAMPLE")]
    assert spans(shield, "akiaiosfodnn7example") == []


def test_regex_labels_name_the_pattern_that_matched() -> None:
    shield = regex(r"(a)(b)c", r"x(y)z")
    assert spans(shield, "xyz abc") == [("pattern[1]", "xyz"), ("pattern[0]", "abc")]


def test_regex_has_no_catastrophic_backtracking() -> None:
    # With a backtracking engine this takes longer than the age of the universe.
    shield = regex(r"(a+)+$")
    assert spans(shield, "a" * 100_000 + "!") == []


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(", "missing )"),
        ("(?<=a)b", "no look-around"),
        (r"(a)\1", "no look-around or back-references"),
        ("a*", "matches the empty string"),
    ],
)
def test_bad_patterns_are_rejected_with_a_reason(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match="bad regex") as info:
        RegexSpec(id="re", patterns=[pattern])
    assert message in str(info.value)


def test_regex_max_match_from_the_pattern_width() -> None:
    assert regex(r"ab{2,5}c").max_match == 7
    assert regex(r"x+").max_match == 64  # unbounded: the default stream window
    assert regex(r"x+", max_match=10).max_match == 10


def test_verdicts_and_redaction() -> None:
    block = denylist(phrases=["bad"])
    hide = regex(r"\d{4}", action="redact", placeholder="[N]")
    text = "code 1234 and 5678"
    found = check_text([hide], text)
    assert verdict_of(found) is Verdict.REDACT
    assert redact(text, 0, merge_redactions(found)) == "code [N] and [N]"
    assert verdict_of(check_text([block, hide], "bad 1234")) is Verdict.BLOCK
    assert verdict_of(check_text([block], "good")) is Verdict.ALLOW


def test_redaction_applied_piecewise_equals_whole() -> None:
    text = "abc SECRET-123 def SECRET-456"
    found = check_text([regex(r"secret-\d+", action="redact")], text)
    spans_ = merge_redactions(found)
    whole = redact(text, 0, spans_)
    for cut in range(len(text) + 1):
        assert redact(text[:cut], 0, spans_) + redact(text[cut:], cut, spans_) == whole


def test_roles_limit_input_shields() -> None:
    shield = DenylistShield(DenylistSpec(id="d", phrases=["x y"], roles=["tool"]))
    assert check_text([shield], "x y", role="user") == []  # type: ignore[arg-type]
    assert len(check_text([shield], "x y", role="tool")) == 1  # type: ignore[arg-type]


def test_a_failing_shield_fails_closed() -> None:
    class Broken(DenylistShield):
        def scanner(self):  # type: ignore[no-untyped-def]
            raise_on_feed = super().scanner()

            def feed(chunk):  # type: ignore[no-untyped-def]
                raise RuntimeError("boom")

            raise_on_feed.feed = feed  # type: ignore[method-assign]
            return raise_on_feed

    shield = Broken(DenylistSpec(id="b", phrases=["zzz"]))
    found = check_text([shield], "harmless")
    assert [(f.label, f.action) for f in found] == [("shield_error", Action.BLOCK)]
    assert check_text([shield], "harmless", fail_closed=False) == []


PHRASES = ["nerve gas", "sarin", "ab ab"]
shield_under_test = denylist(phrases=PHRASES[:2], words=PHRASES[2:])


@settings(max_examples=300)
@given(
    st.text(alphabet="abrins nevgxSARIN\u200b.", max_size=80),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=30),
)
def test_chunked_scanning_finds_exactly_what_whole_text_finds(text: str, sizes: list[int]) -> None:
    whole = {(f.label, f.start, f.end) for f in check_text([shield_under_test], text)}
    scan = TextScan([shield_under_test])
    found = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        found += scan.feed(text[pos : pos + size])
        pos, i = pos + size, i + 1
    found += scan.finish()
    assert {(f.label, f.start, f.end) for f in found} == whole


regex_under_test = regex(r"\d{3,12}", r"tok_[a-z]+", action="redact")


@settings(max_examples=300)
@given(
    st.text(alphabet="12345 tok_ab.", max_size=80),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=30),
)
def test_chunked_regex_finds_exactly_what_whole_text_finds(text: str, sizes: list[int]) -> None:
    """Growing matches (digits arriving a few at a time) are reported once, not per prefix."""
    whole = [(f.label, f.start, f.end) for f in check_text([regex_under_test], text)]
    scan = TextScan([regex_under_test], holdback=regex_under_test.max_match)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        found += scan.feed(text[pos : pos + size])
        # Zero leak: nothing reported later may start before the safe point.
        safe = scan.safe_end
        pos, i = pos + size, i + 1
        later = [f for f in check_text([regex_under_test], text) if f.start < safe]
        assert {(f.start, f.end) for f in later} <= {(f.start, f.end) for f in found}
    found += scan.finish()
    assert [(f.label, f.start, f.end) for f in found] == whole
