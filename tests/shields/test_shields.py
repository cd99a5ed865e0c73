"""The built-in shields and the scan engine, whole and in chunks."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shields.base import Action, Finding, Verdict, verdict_of
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
    # A phrase too: read loosely ("4bcdef", "abc-def") it is a whole word.
    assert denylist(phrases=["abcdef"], words=["xyz"]).max_match == 7
    assert denylist(phrases=[".abcdef"], words=["xyz"]).max_match == 7  # as written only
    assert denylist(phrases=[".abcde"], words=["xyz"]).max_match == 6
    assert denylist(words=["abcdefgh"]).max_match == 9


def test_ten_thousand_phrases_in_one_automaton() -> None:
    shield = denylist(phrases=[f"forbidden token {i:05d}" for i in range(10_000)])
    text = "prose " * 1000 + "FORBIDDEN token 09999" + " more" * 10
    assert spans(shield, text) == [("forbidden token 09999", "FORBIDDEN token 09999")]


def test_denylist_findings_are_plain_frozen_findings() -> None:
    """``_finding`` fills a finding in unfrozen, then makes it a ``Finding``: it must be
    exactly what ``Shield.finding`` makes, frozen and hashable."""
    shield = denylist(phrases=["bomb"], action="redact", placeholder="[X]")
    found = shield._finding("nerve gas", 10, 19)
    assert type(found) is Finding
    assert found == shield.finding("nerve gas", 10, 19)
    assert found.placeholder == "[X]" and found.action is Action.REDACT
    assert {found, shield.finding("nerve gas", 10, 19)} == {found}
    with pytest.raises(FrozenInstanceError):
        found.start = 0  # type: ignore[misc]


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


def single_spaced(text: str) -> str:
    """``text`` without runs of spaces, which the normalizer would collapse: a text that
    ``brute_force`` can judge."""
    return re.sub(" {2,}", " ", text)


def brute_force(text: str, phrases: list[str], words: list[str]) -> set[tuple[str, int, int]]:
    """Every occurrence of every key in a text the normalizer leaves as it is."""
    found = set()
    for key, is_word in [(p, False) for p in phrases] + [(w, True) for w in words]:
        start = text.find(key)
        while start >= 0:
            end = start + len(key)
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            if not is_word or not (before.isalnum() or after.isalnum()):
                found.add((key, start, end))
            start = text.find(key, start + 1)
    return found


PREFILTERED = ["aba", "bab", "ab ba", "a"]


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="ab .", min_size=0, max_size=6000).map(single_spaced),
    st.lists(st.sampled_from([1, 3, 7, 300, 2048, 2500, 5000]), min_size=1, max_size=8),
)
def test_prefiltered_long_chunks_find_every_occurrence(text: str, sizes: list[int]) -> None:
    """Chunks long enough for the RE2 prefilter, mixed with short ones that resume the
    automaton: overlapping occurrences (which RE2 alone skips) are all reported, once."""
    shield = denylist(phrases=PREFILTERED[:3], words=PREFILTERED[3:])
    assert shield._prefilter is not None
    expected = brute_force(text, PREFILTERED[:3], PREFILTERED[3:])
    assert {(f.label, f.start, f.end) for f in check_text([shield], text)} == expected
    scan = TextScan([shield])
    found = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        found += scan.feed(text[pos : pos + size])
        pos, i = pos + size, i + 1
    found += scan.finish()
    assert sorted((f.label, f.start, f.end) for f in found) == sorted(expected)


# Too long for the prefilter: long chunks go to ahocorasick_rs, short ones to the resumable
# automaton. The filler keys never occur in the texts below.
FILLER = [f"zq{i:04d}zq" for i in range(600)]


@settings(max_examples=60, deadline=None)
@given(
    # No "." or other joiner: the deny list also reads "b.ba" as "b ba" (its joined view,
    # tests/shields/test_denylist_joiners.py), which the brute-force model here does not know.
    st.text(alphabet="ab \u306e", min_size=1, max_size=400),
    st.integers(min_value=0, max_value=6000),
    st.lists(st.sampled_from([1, 3, 7, 63, 64, 300, 2048, 5000]), min_size=1, max_size=8),
    st.booleans(),
)
def test_long_lists_find_every_occurrence_in_long_and_short_chunks(
    piece: str, length: int, sizes: list[int], non_ascii_key: bool
) -> None:
    """A long list's long chunks (ahocorasick_rs, over bytes when every key is ASCII) and
    short ones (pyahocorasick's iterator, resynced after a long chunk) report every
    occurrence, overlapping ones included, once, at the same offsets as the whole text."""
    text = single_spaced((piece * (length // len(piece) + 1))[:length])
    phrases = PREFILTERED[:3] + (["a\u306eb"] if non_ascii_key else []) + FILLER
    words = PREFILTERED[3:]
    shield = denylist(phrases=phrases, words=words)
    assert shield._prefilter is None and shield._bulk is not None
    assert shield._bulk_ascii is not non_ascii_key
    expected = brute_force(text, phrases, words)
    assert {(f.label, f.start, f.end) for f in check_text([shield], text)} == expected
    scan = TextScan([shield])
    found = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        found += scan.feed(text[pos : pos + size])
        pos, i = pos + size, i + 1
    found += scan.finish()
    assert sorted((f.label, f.start, f.end) for f in found) == sorted(expected)


@pytest.mark.parametrize("first", [1, 2, 3, 4, 5, 63, 64, 2048])
def test_long_lists_report_a_match_at_a_chunk_boundary_once(first: int) -> None:
    shield = denylist(phrases=["aba", "bab", *FILLER], words=["b"])
    text = "aba" + "b" * 2500 + " b aba"
    whole = sorted((f.label, f.start, f.end) for f in check_text([shield], text))
    for sizes in ([first, 2500], [first, 2500, 1, 2], [first, 1, 2500], [first, 64, 3]):
        scan = TextScan([shield])
        found, pos, i = [], 0, 0
        while pos < len(text):
            found += scan.feed(text[pos : pos + sizes[i % len(sizes)]])
            pos, i = pos + sizes[i % len(sizes)], i + 1
        found += scan.finish()
        assert sorted((f.label, f.start, f.end) for f in found) == whole


def test_long_lists_map_offsets_back_through_the_normalizer() -> None:
    shield = denylist(phrases=["nerve gas", *FILLER], words=["sarin"])
    assert shield._bulk is not None
    text = "x  " * 1500 + "NERVE\u200b   Gas, sarin\tSARIN, sarinx, \u306enerve gas"
    expected = [
        ("nerve gas", "NERVE\u200b   Gas"),
        ("sarin", "sarin"),
        ("sarin", "SARIN"),
        ("nerve gas", "nerve gas"),
    ]
    assert spans(shield, text) == expected
    scan = TextScan([shield])
    found = []
    for pos in range(0, len(text), 2100):
        found += scan.feed(text[pos : pos + 2100])
    found += scan.finish()
    assert sorted((f.label, text[f.start : f.end]) for f in found) == sorted(expected)


def test_long_lists_run_the_automaton_without_prefilter() -> None:
    shield = denylist(phrases=[f"phrase number {i}" for i in range(1000)])
    assert shield._prefilter is None
    text = "x " * 2000 + "phrase number 7 and phrase number 999"
    labels = {f.label for f in check_text([shield], text)}
    assert labels == {f"phrase number {n}" for n in (7, 9, 99, 999)}  # phrases: substrings


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="abrins nevgxSARIN\u200b.", max_size=80),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=30),
    st.integers(min_value=1, max_value=40),
    st.lists(st.booleans(), max_size=30),
)
def test_batched_feeds_find_the_same_and_never_pass_unscanned_text(
    text: str, sizes: list[int], batch: int, flushes: list[bool]
) -> None:
    whole = {(f.label, f.start, f.end) for f in check_text([shield_under_test], text)}
    holdback = shield_under_test.max_match
    scan = TextScan([shield_under_test], holdback=holdback, batch=batch)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        found += scan.feed(piece)
        if i < len(flushes) and flushes[i]:
            found += scan.flush()
            assert scan.pending == 0
        pos, i = pos + len(piece), i + 1
        assert scan.received + scan.pending == pos
        # The buffer is scanned once it holds ``batch`` characters.
        assert scan.pending < batch
        # safe_end covers scanned text only, and nothing found later starts before it.
        assert scan.safe_end <= scan.received
        later = {(f.start, f.end) for f in check_text([shield_under_test], text[:pos])}
        reported = {(f.start, f.end) for f in found}
        assert {s for s in later if s[0] < scan.safe_end} <= reported
    found += scan.finish()
    assert scan.pending == 0 and scan.received == len(text) and scan.safe_end == len(text)
    assert {(f.label, f.start, f.end) for f in found} == whole


def test_batch_buffers_small_feeds_until_flush_or_finish() -> None:
    shield = denylist(phrases=["sarin"])
    scan = TextScan([shield], holdback=5, batch=100)
    assert scan.feed("make sar") == [] and scan.feed("in now") == []
    assert (scan.received, scan.pending, scan.safe_end) == (0, 14, 0)
    found = scan.flush()
    assert [(f.start, f.end) for f in found] == [(5, 10)]
    assert (scan.received, scan.pending) == (14, 0) and scan.safe_end == 14 - 5
    assert scan.feed("more sarin") == []  # buffered again
    found = scan.finish()  # scans the buffer, then ends the text
    assert [(f.start, f.end) for f in found] == [(19, 24)]
    assert scan.safe_end == 24
    # A feed of at least ``batch`` characters with nothing buffered is scanned at once.
    scan = TextScan([shield], batch=4)
    assert [(f.start, f.end) for f in scan.feed("sarin")] == [(0, 5)]
    with pytest.raises(ValueError):
        TextScan([shield], batch=-1)


def test_batch_ignores_empty_feeds_and_refuses_feeds_after_finish() -> None:
    shield = denylist(phrases=["sarin"])
    scan = TextScan([shield], holdback=5, batch=100)
    assert scan.feed("") == [] and scan.pending == 0
    assert scan.flush() == [] and scan.received == 0
    assert scan.feed("sar") == [] and scan.feed("") == [] and scan.feed("in") == []
    assert scan.pending == 5
    assert [(f.start, f.end) for f in scan.finish()] == [(0, 5)]
    with pytest.raises(RuntimeError):
        scan.feed("a")  # shorter than the batch: it must not wait in the buffer
    assert scan.finish() == [] and scan.flush() == []


def test_raw_only_scans_skip_the_normalized_view() -> None:
    from shields.builtin.secrets import SecretsShield, SecretsSpec

    secrets = SecretsShield(SecretsSpec(id="s"))
    text = "KEY  AKIAQ3EGRK5JXWZY7N4T\u200b ok"
    found = check_text([secrets], text)
    assert [text[f.start : f.end] for f in found] == ["AKIAQ3EGRK5JXWZY7N4T"]
    scan = TextScan([secrets], holdback=secrets.max_match)
    assert scan.feed(text) + scan.finish() == found
    # Mixed with a shield that reads the normalized view, offsets still agree.
    both = check_text([secrets, denylist(phrases=["key akia"])], text)
    assert sorted((f.start, f.end) for f in both) == [(0, 9), (5, 25)]


# -- the regex shield's searches: google-re2's binding, its public API, any script --------------


def test_the_google_re2_binding_is_in_use() -> None:
    """``searcher`` calls google-re2's C++ binding when it answers as expected, else the slower
    public API. Failing here means a google-re2 release changed it: results stay right, scans
    get slower (see ``shields.builtin.regex.searcher``)."""
    import shields.builtin.regex as regex_module

    assert regex_module._BINDING


def reference_findings(shield: RegexShield, text: str) -> list[tuple[str, int, int]]:
    """google-re2's public API over the whole ``str``: offsets in characters. A search
    starts one character after each match's start, and a match is reported when it ends past
    every one before it (a match may begin inside another)."""
    found = []
    pos, reported_until = 0, 0
    while pos <= len(text) and (m := shield._regex.search(text, pos)) is not None:
        if m.end() > reported_until:
            found.append((shield.label_of(m), m.start(), m.end()))
            reported_until = m.end()
        pos = m.start() + 1
    return found


def chunked_findings(
    shield: RegexShield, text: str, sizes: list[int]
) -> list[tuple[str, int, int]]:
    scan = TextScan([shield], holdback=shield.max_match)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        found += scan.feed(text[pos : pos + size])
        pos, i = pos + size, i + 1
    return [(f.label, f.start, f.end) for f in found + scan.finish()]


@pytest.mark.parametrize("binding", [True, False])
def test_regex_offsets_are_characters_in_any_script(
    binding: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shields.builtin.regex as regex_module

    monkeypatch.setattr(regex_module, "_BINDING", binding)
    shield = regex(r"é+", r"日本\w*", r"\bab\b", r"[^ ]{2,3}!", normalize=False)
    text = "ab éé日本語 ab! x😀y ab 😀日本 x"
    expected = reference_findings(shield, text)
    assert [(label, text[start:end]) for label, start, end in expected] == [
        ("pattern[2]", "ab"),
        ("pattern[0]", "éé"),
        ("pattern[1]", "日本"),  # RE2's \w is ASCII
        ("pattern[2]", "ab"),
        ("pattern[2]", "ab"),
        ("pattern[1]", "日本"),
    ]
    assert [(f.label, f.start, f.end) for f in check_text([shield], text)] == expected
    for size in (1, 2, 3, 7, len(text)):
        assert chunked_findings(shield, text, [size]) == expected


def test_regex_empty_matches_step_as_before_with_or_without_the_binding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pattern can match the empty string at some places only (``\\bx*`` at a word start);
    the search then steps over one character, as google-re2's ``finditer`` does."""
    import shields.builtin.regex as regex_module

    patterns = (r"\bx*", r"é+")
    fast = regex(*patterns, normalize=False)
    monkeypatch.setattr(regex_module, "_BINDING", False)
    public = regex(*patterns, normalize=False)
    empty = [(f.start, f.end) for f in check_text([fast], "ab x😀y") if f.start == f.end]
    assert empty == [(2, 2), (5, 5), (6, 6)]
    for text in ("ab x😀y éé x", "xx ab", "😀 x"):
        whole = [(f.label, f.start, f.end) for f in check_text([fast], text)]
        assert [(f.label, f.start, f.end) for f in check_text([public], text)] == whole
        for size in (1, 2, 5):
            assert chunked_findings(public, text, [size]) == chunked_findings(fast, text, [size])


def test_regex_any_byte_patterns_keep_their_character_offsets() -> None:
    r"""RE2's ``\C`` matches one byte, so a match may end inside a character: such a text is
    matched through the public API, as it always was."""
    shield = regex(r"\C\C", r"x", normalize=False)
    for text in ("aé日本x", "xx", "éé"):
        expected = reference_findings(shield, text)
        assert [(f.label, f.start, f.end) for f in check_text([shield], text)] == expected
        assert chunked_findings(shield, text, [3]) == expected


unicode_regex = regex(r"\d{2,5}", r"é[a-z]+", r"日本", r"\bab\b", normalize=False)


@settings(max_examples=200)
@given(
    st.text(alphabet="12 éab日本😀.", max_size=60),
    st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=20),
)
def test_chunked_regex_agrees_with_whole_text_in_any_script(text: str, sizes: list[int]) -> None:
    whole = [(f.label, f.start, f.end) for f in check_text([unicode_regex], text)]
    assert whole == reference_findings(unicode_regex, text)
    assert chunked_findings(unicode_regex, text, sizes) == whole
