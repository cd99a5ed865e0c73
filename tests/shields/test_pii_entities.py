"""The ``pii`` shield's entities as data (``pii_entities``) over a small engine (``pii_scanner``):
the records are complete and consistent, a new written form is a record the engine runs
without being changed, and every selection of entities and options scans a stream, in any
chunking, as it scans the whole text, never reporting a finding where it declared the text
safe."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shields.builtin.pii import PiiShield, PiiSpec
from shields.builtin.pii_entities import (
    AT_SIGN_RECOGNIZERS,
    DEFAULT_PLACEHOLDERS,
    ENTITIES,
    KINDS,
    RECOGNIZERS,
    Recognizer,
    Start,
)
from shields.builtin.pii_recognizers import ScanText
from shields.builtin.pii_scanner import ScanPlan
from shields.scan import TextScan, check_text
from tests.shields.test_pii import PIECES


def pii(**kwargs: object) -> PiiShield:
    return PiiShield(PiiSpec(id="pii", **kwargs))  # type: ignore[arg-type]


def names(recognizers: tuple[Recognizer, ...]) -> list[str]:
    return [r.name for r in recognizers]


def test_one_record_per_entity_in_the_specs_order() -> None:
    assert tuple(kind.name for kind in KINDS) == ENTITIES
    assert DEFAULT_PLACEHOLDERS == {
        "email": "[EMAIL]",
        "phone": "[PHONE]",
        "credit_card": "[CREDIT_CARD]",
        "iban": "[IBAN]",
        "us_ssn": "[US_SSN]",
        "ip_address": "[IP_ADDRESS]",
    }


def test_every_entity_is_found_by_some_recognizer_and_each_has_a_start() -> None:
    entities = {r.entity for r in RECOGNIZERS} | {r.entity for r in AT_SIGN_RECOGNIZERS}
    assert entities == set(ENTITIES)
    assert all(r.starts for r in RECOGNIZERS)
    all_names = names(RECOGNIZERS) + [r.name for r in AT_SIGN_RECOGNIZERS]
    assert len(set(all_names)) == len(all_names)


def test_the_plan_gives_each_start_its_recognizers_in_priority_order() -> None:
    plan = pii().plan
    assert names(plan.at_run) == ["card", "ssn", "ipv4", "ipv6", "phone"]
    assert names(plan.at_run_in_rows) == ["card", "ssn", "ipv4", "ipv6"]
    assert names(plan.at_lead) == ["phone"]
    assert names(plan.at_letters) == ["iban"]
    assert names(plan.at_hex_colon) == ["ipv6"]
    assert names(plan.at_letters_and_hex_colon) == ["iban", "ipv6"]
    assert [r.name for r in plan.at_sign] == ["email"]
    only = pii(entities=["email", "credit_card"]).plan
    assert names(only.at_run) == ["card"]
    assert only.at_lead == only.at_letters == only.at_hex_colon == ()
    assert only.numeric
    assert not pii(entities=["email"]).plan.numeric


def test_where_two_starts_fall_on_one_character_both_are_tried_in_priority_order() -> None:
    # "de" is a country code and hex digits at once: the IBAN is tried first, then IPv6.
    for text, label in [("see de12::1 now", "ip_address"), ("DE89370400440532013000", "iban")]:
        assert [f.label for f in check_text([pii()], text)] == [label], text


def _from_77(text: ScanText, start: int) -> int | None:
    """A made-up national format: eight digits starting "77", alone."""
    end = start
    while text.char(end).isdigit():  # asks for more while the run may still grow
        end += 1
    return end if end - start == 8 and text.buf.startswith("77", start) else None


def test_a_new_written_form_is_a_record_the_engine_runs() -> None:
    text = "ref 77123456 and 771234567 and 66123456."
    shield = pii(entities=["phone"])
    assert check_text([shield], text) == []  # not a phone number by the built-in records
    form = Recognizer("seventy-seven", "phone", _from_77, frozenset({Start.DIGIT_RUN}))
    shield.plan = ScanPlan.of(
        frozenset({"phone"}), {}, shield.plan.phone_rules, recognizers=(form, *RECOGNIZERS)
    )
    expected = [("phone", 4, 12)]
    assert [(f.label, f.start, f.end) for f in check_text([shield], text)] == expected
    for size in range(1, 6):  # streamed, the record asks for the characters it needs
        scan = TextScan([shield], holdback=shield.max_match)
        found = [f for i in range(0, len(text), size) for f in scan.feed(text[i : i + size])]
        found += scan.finish()
        assert [(f.label, f.start, f.end) for f in found] == expected, size


OPTIONS = st.fixed_dictionaries(
    {"entities": st.lists(st.sampled_from(ENTITIES), min_size=1, max_size=6, unique=True)},
    optional={
        "phone_strict": st.booleans(),
        "phone_regions": st.sampled_from([["US"], ["GB", "DE"], ["FR", "ES", "US"]]),
        "phone_context": st.sampled_from([[], ["tel"]]),
        "card_context": st.sampled_from([[], ["card"]]),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    options=OPTIONS,
    parts=st.lists(st.sampled_from(PIECES), max_size=20),
    sizes=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6),
)
def test_any_selection_streams_as_the_whole_text_and_reports_nothing_declared_safe(
    options: dict[str, object], parts: list[str], sizes: list[int]
) -> None:
    shield = pii(**options)
    text = "".join(parts)
    whole = [(f.label, f.start, f.end) for f in check_text([shield], text)]
    scan = TextScan([shield], holdback=shield.max_match, adaptive=True)
    streamed: list[tuple[str, int, int]] = []
    safe = pos = i = 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        for f in scan.feed(text[pos : pos + size]):
            assert f.start >= safe, (f, safe)  # the text before ``safe`` has been released
            streamed.append((f.label, f.start, f.end))
        safe = scan.safe_end
        pos, i = pos + size, i + 1
    for f in scan.finish():
        assert f.start >= safe, (f, safe)
        streamed.append((f.label, f.start, f.end))
    assert sorted(streamed) == sorted(whole)
