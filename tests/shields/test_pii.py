"""``pii``: each entity is found and validated, near misses pass, placeholders are typed, the
spec is checked, streams agree with whole texts and never leak a digit of what they redact.

The card, IBAN and SSN numbers here are the public test numbers of card networks, banks and the
SSA's documentation, or built at test time to pass (or fail) their check digits.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from proxy.stream.guard import GuardState
from shields.base import Action
from shields.builtin.pii import REACH, PiiShield, PiiSpec
from shields.policy import PolicyError, parse_policy
from shields.registry import builtin_types
from shields.scan import TextScan, check_text, merge_redactions, redact
from tests.support.fake_upstream import chunk, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run


def pii(**kwargs: object) -> PiiShield:
    return PiiShield(PiiSpec(id="pii", **kwargs))  # type: ignore[arg-type]


DEFAULT = pii()
REDACT = pii(action="redact")


def found(text: str, shield: PiiShield = DEFAULT) -> list[tuple[str, str]]:
    return [(f.label, text[f.start : f.end]) for f in check_text([shield], text)]


def redacted(text: str, shield: PiiShield = REDACT) -> str:
    return redact(text, 0, merge_redactions(check_text([shield], text)))


def luhn_complete(prefix: str) -> str:
    """``prefix`` plus the Luhn check digit that makes it valid."""
    for check in "0123456789":
        digits = prefix + check
        total = 0
        for i, char in enumerate(reversed(digits)):
            value = int(char) * (2 if i % 2 else 1)
            total += value - 9 if value > 9 else value
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def test_registered_as_pii() -> None:
    assert builtin_types()["pii"].shield is PiiShield


# -- credit cards --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "card",
    [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "5555 5555 5555 4444",  # Mastercard
        "2223 0031 2200 3222",  # Mastercard 2-series
        "3782 822463 10005",  # American Express, 4-6-5
        "378282246310005",
        "6011 1111 1111 1117",  # Discover
        "3530 1113 3330 0000",  # JCB
        "3056 9309 0259 04",  # Diners Club, 14 digits
    ],
)
def test_cards_in_their_printed_layouts(card: str) -> None:
    assert found(f"Card: {card}, thanks") == [("credit_card", card)]


@pytest.mark.parametrize(
    "text",
    [
        "4111 1111 1111 1112",  # Luhn fails
        luhn_complete("712345678901234"),  # 7 is for fuel cards, not payment cards
        luhn_complete("41111111111111"),  # Visa with 15 digits
        "4111 11111 111 1111",  # not a printed card layout
        "4111 1111-1111 1111",  # mixed separators
        "x4111111111111111",  # inside a word
        "Ref 1288 4111 1111 1111 1111",  # one more number in a row of numbers
    ],
)
def test_near_miss_cards_pass(text: str) -> None:
    assert "credit_card" not in [label for label, _ in found(text)]


@pytest.mark.parametrize(
    "digits",
    [
        "0123456789",
        "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669",  # Arabic-Indic
        "\u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9",  # Persian
        "\u0966\u0967\u0968\u0969\u096a\u096b\u096c\u096d\u096e\u096f",  # Devanagari
    ],
)
def test_numbers_in_the_digits_of_other_scripts_are_found(digits: str) -> None:
    table = str.maketrans("0123456789", digits)
    for entity, number, before in [
        ("credit_card", "4111 1111 1111 1111", "card "),
        ("us_ssn", "219-09-9999", "ssn "),
        ("phone", "(212) 555-0187", "call "),
        ("iban", "DE89 3704 0044 0532 0130 00", "iban "),
    ]:
        written = number.translate(table)
        assert found(before + written) == [(entity, written)]
        assert redacted(before + written) == before + f"[{entity.upper()}]"


def test_cards_grouped_with_dots_are_found() -> None:
    assert found("card 4111.1111.1111.1111.") == [("credit_card", "4111.1111.1111.1111")]
    assert found("amex 3782.822463.10005") == [("credit_card", "3782.822463.10005")]
    assert found("x 1234.5678.9012.3456") == []  # no Luhn check digit


def test_a_card_followed_by_more_digits_is_still_redacted() -> None:
    assert redacted("pay with 4111 1111 1111 1111 12/29") == "pay with [CREDIT_CARD] 12/29"


def test_full_width_and_zero_width_disguises_are_seen() -> None:
    text = "card ４１１１ １１１１ １１１１ １１１１ and 4111\u200b1111\u200b1111\u200b1111."
    assert found(text) == [
        ("credit_card", "４１１１ １１１１ １１１１ １１１１"),
        ("credit_card", "4111\u200b1111\u200b1111\u200b1111"),
    ]
    assert redacted(text) == "card [CREDIT_CARD] and [CREDIT_CARD]."


# -- US social security numbers ------------------------------------------------------------------


@pytest.mark.parametrize("ssn", ["531-21-7351", "594 62 0140", "078-05-1120"])
def test_formatted_ssns(ssn: str) -> None:
    assert found(f"His SSN is {ssn}.") == [("us_ssn", ssn)]


@pytest.mark.parametrize(
    "ssn",
    ["000-12-3456", "666-12-3456", "900-12-3456", "123-00-4567", "123-45-0000", "123-45-67890"],
)
def test_ssa_rules_reject_impossible_numbers(ssn: str) -> None:
    assert "us_ssn" not in [label for label, _ in found(f"number {ssn} here")]


def test_bare_nine_digits_need_the_word_ssn() -> None:
    assert found("SSN: 531217351") == [("us_ssn", "531217351")]
    assert found("social security number is 531217351") == [("us_ssn", "531217351")]
    assert found("order 531217351 shipped") == []


# -- IBANs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "iban",
    [
        "DE89 3704 0044 0532 0130 00",
        "DE89370400440532013000",
        "GB82 WEST 1234 5698 7654 32",
        "gb82west12345698765432",
        "BE68 5390 0754 7034",
        "FR14 2004 1010 0505 0001 3M02 606",
    ],
)
def test_ibans(iban: str) -> None:
    assert found(f"IBAN {iban} please") == [("iban", iban)]


def test_ibans_need_their_checksum_and_country_length() -> None:
    assert "iban" not in dict(found("IBAN DE88 3704 0044 0532 0130 00"))  # check digits off
    assert found("IBAN DE89 3704 0044 0532 0130") == []  # too short for Germany
    assert found("mp34 is a file") == []


# -- IP addresses --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "192.168.1.10",
        "58.74.121.78",
        "10.0.0.5",
        "2001:db8::8a2e:370:7334",
        "fe80::1",
        "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        "::ffff:192.168.100.200",
        "2001:0db8:85a3:0000:0000:8a2e:255.255.255.255",
    ],
)
def test_ip_addresses(address: str) -> None:
    assert found(f"blocked from {address}, retry") == [("ip_address", address)]


@pytest.mark.parametrize(
    "text",
    [
        "Python 3.11.7 and 1.2.3",  # versions have fewer than four parts...
        "version 1.2.3.4",  # ...or say so
        "requires libfoo (>= 2.0.3.4)",
        "256.1.1.1 is not an address",
        "01.02.03.04",
        "1.2.3.4.5",
        "at 12:30:45 sharp",
        "MAC 00:1a:2b:3c:4d:5e",
        "std::vector and a::b",
        "localhost is 127.0.0.1 and ::1, any is 0.0.0.0, mask 255.255.255.0",
    ],
)
def test_things_that_are_not_personal_addresses(text: str) -> None:
    assert found(text) == []


# -- phone numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phone",
    [
        "(415) 555-2671",
        "415-555-2671",
        "415.555.2671",
        "4155552671",
        "1-800-555-0199",
        "+44 20 7946 0958",
        "+1-944-435-4352x04732",
        "001-420-335-7509x38548",
        "(07) 5331 0577",
        "027 896 92 86",
        "01 42 68 53 00",
        "986.291.2294 ext. 751",
    ],
)
def test_phone_numbers(phone: str) -> None:
    assert found(f"Reach the office on {phone}. Thanks") == [("phone", phone)]


def test_a_phone_word_before_a_short_or_foreign_number() -> None:
    assert found("Mobile: 041-412-293") == [("phone", "041-412-293")]
    assert found("call me at 555-1234") == [("phone", "555-1234")]
    assert found("room 555-1234") == []


@pytest.mark.parametrize(
    "text",
    [
        "on 2023-01-15 and 15.01.2023",
        "between 1 000 000 and 12.345.678 people",
        "sizes 32 64 96 128",
        "the range 64040-64044",
        "ratio 128/512/2048",
        "Patch 3101127 fixed it",  # too short to be a number without a phone word
        "x = -2147483647",
        "316     132    9631",  # columns of a table, not one number
    ],
)
def test_numbers_that_are_not_phone_numbers(text: str) -> None:
    assert found(text) == []


def test_two_phone_numbers_in_a_row() -> None:
    text = "call 555-123-4567 555-987-6543"
    assert found(text) == [("phone", "555-123-4567"), ("phone", "555-987-6543")]


def test_phone_regions_and_strict_mode() -> None:
    german = "Büro 030 12345678"
    # Written as Germany writes it (trunk 0, area code, subscriber): a phone number as it is.
    assert found(german) == [("phone", "030 12345678")]
    strict = pii(phone_strict=True)
    assert found(german, strict) == []
    assert found(german, pii(phone_strict=True, phone_regions=["DE"])) == [
        ("phone", "030 12345678")
    ]
    assert found("Mobile: 041-412-293", strict) == []
    assert found("(07) 5331 0577", strict) == []
    assert found("(415) 555-2671", strict) == [("phone", "(415) 555-2671")]


def test_phone_context_words_can_be_replaced() -> None:
    assert found("Telefon: 041-412-293", pii(phone_context=["Telefon"])) == [
        ("phone", "041-412-293")
    ]
    assert found("call me at 555-1234", pii(phone_context=[])) == []


# -- e-mail addresses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "email",
    [
        "LeaVLind@superrito.com",
        "first.last+tag@mail.example.co.uk",
        "o_k-1%2@sub-domain.example.museum",
        "user@bücher.de",
    ],
)
def test_email_addresses(email: str) -> None:
    assert found(f"write to <{email}>.") == [("email", email)]


@pytest.mark.parametrize(
    "text",
    [
        "user@localhost",
        "@mention me",
        "a..b@example.com",
        "x" * 65 + "@example.com",  # local part longer than 64
        "user@" + "a" * 101 + ".com",  # domain longer than 100
        "user@example.c0m",
    ],
)
def test_not_email_addresses(text: str) -> None:
    assert found(text) == []


def test_digits_before_an_at_are_an_address_not_a_phone() -> None:
    assert found("5551234567@sms.example.com") == [("email", "5551234567@sms.example.com")]


# -- labels, placeholders, entities --------------------------------------------------------------


TEXT = "mail jane@example.com, card 4111 1111 1111 1111, ip 192.168.1.10"


def test_typed_placeholders_by_default() -> None:
    assert redacted(TEXT) == "mail [EMAIL], card [CREDIT_CARD], ip [IP_ADDRESS]"
    typed = {(f.label, f.placeholder, f.action) for f in check_text([REDACT], TEXT)}
    assert ("email", "[EMAIL]", Action.REDACT) in typed


def test_placeholders_per_entity_and_a_shared_one() -> None:
    one = pii(action="redact", placeholders={"email": "<email>"})
    assert redacted(TEXT, one) == "mail <email>, card [CREDIT_CARD], ip [IP_ADDRESS]"
    shared = pii(action="redact", placeholder="***", placeholders={"email": "<email>"})
    assert redacted(TEXT, shared) == "mail <email>, card ***, ip ***"


def test_entities_select_what_is_looked_for() -> None:
    only = pii(entities=["credit_card", "email"])
    assert sorted(label for label, _ in found(TEXT, only)) == ["credit_card", "email"]
    assert found("call (415) 555-2671", only) == []


def test_max_match_is_the_reach_of_the_entities_in_use() -> None:
    assert DEFAULT.max_match == REACH["email"] == 166
    # A card's 23 characters, the one after, and the context window after it.
    assert pii(entities=["credit_card", "us_ssn"]).max_match == 24 + 32
    numeric = pii(entities=["phone", "credit_card", "iban", "us_ssn", "ip_address"])
    assert numeric.max_match == REACH["phone"] == 41 + 32
    assert DEFAULT.matches_raw is False  # spans are found in the normalized view


# -- the spec ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"entities": ["email", "passport"]}, "entities.1"),
        ({"entities": []}, "at least 1 item"),
        ({"entities": ["email", "email"]}, "'email' is listed twice"),
        ({"phone_regions": ["UK"]}, "the United Kingdom is 'GB'"),
        ({"phone_regions": ["XX"]}, "'XX' is not a region phonenumbers knows"),
        ({"placeholders": {"mail": "[M]"}}, "placeholders.mail"),
        ({"phone_context": ["  "]}, "empty after normalization"),
        ({"regions": ["US"]}, "extra"),
    ],
)
def test_bad_specs_are_rejected(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PiiSpec(id="pii", **options)  # type: ignore[arg-type]


def test_regions_are_upper_cased() -> None:
    assert PiiSpec(id="pii", phone_regions=["gb", "US"]).phone_regions == ["GB", "US"]


def test_policy_errors_name_the_key_and_the_holdback_needed() -> None:
    with pytest.raises(PolicyError, match=r"output\[0\]\.phone_regions\[0\]: .*'ZZ'"):
        parse_policy("name: p\noutput: [{id: pii, type: pii, phone_regions: [ZZ]}]")
    with pytest.raises(PolicyError, match="raise it to at least 166"):
        parse_policy("name: p\noutput: [{id: pii, type: pii}]")
    policy = parse_policy(
        "name: p\nstream: {holdback_chars: 80}\n"
        "output: [{id: pii, type: pii, entities: [credit_card, phone, us_ssn]}]"
    )
    assert policy.output_shields[0].max_match <= 80


# -- streams -------------------------------------------------------------------------------------

PIECES = [
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "378282246310005",
    "jane.doe@example.com",
    "(415) 555-2671",
    "+44 20 7946 0958",
    "001-420-335-7509x38548",
    "078-05-1120",
    "SSN 531217351",
    "192.168.1.10",
    "fe80::1",
    "::ffff:10.0.0.1",
    "DE89 3704 0044 0532 0130 00",
    "Mobile: 041-412-293",
    "2023-01-15",
    "69 987 88 37",
    "４１１１",
    "\u200b",
    "call ",
    "ext. ",
    " ",
    "\n",
    "de",
    "fe",
    "::",
    "12",
    "x",
    "@",
    ":",
    ".",
    "-",
    "(",
    "+",
    "1",
    "5",
    "0",
]


def scan_in_chunks(shield: PiiShield, text: str, sizes: list[int]) -> list[tuple[str, int, int]]:
    scan = TextScan([shield], holdback=shield.max_match)
    out, pos, i = [], 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        out += scan.feed(text[pos : pos + size])
        pos, i = pos + size, i + 1
    out += scan.finish()
    return sorted((f.label, f.start, f.end) for f in out)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.sampled_from(PIECES), max_size=24),
    sizes=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=6),
)
def test_streams_in_any_chunking_find_what_the_whole_text_has(
    parts: list[str], sizes: list[int]
) -> None:
    text = "".join(parts)
    whole = sorted((f.label, f.start, f.end) for f in check_text([DEFAULT], text))
    assert scan_in_chunks(DEFAULT, text, sizes) == whole


TRICKY = [
    "id 078-05-1120:: next",  # a digit run cut by a chunk boundary must not start anew
    "fe4111-1111-1111-1111:: and ab12cd::1",
    "call 555-123-4567 555-987-6543 or +1 (415) 555-2671 x12",
    "de89 3704 0044 0532 0130 00 and gb82west12345698765432.",
    "4111 1111 1111 1111 1111 and 1.2.3.4.5 and ::ffff:10.0.0.1:",
    "a" * 70 + "@example.com b@c.d.ef a.b@x-y.com.",
]


@pytest.mark.parametrize("text", TRICKY)
def test_every_chunk_size_gives_the_whole_text_findings(text: str) -> None:
    whole = sorted((f.label, f.start, f.end) for f in check_text([DEFAULT], text))
    for size in range(1, 9):
        assert scan_in_chunks(DEFAULT, text, [size]) == whole, size


LONG = [
    "a" * 64 + "@" + "b" * 58 + "." + "c" * 36 + ".com",  # 64 + 100 characters
    "2001:0db8:85a3:0000:0000:8a2e:255.255.255.255",
    "MT84 MALT 0110 0001 2345 MTLC AST0 01S",  # 31 characters, the longest IBAN layout here
    "+44 (0) 20 7946 0958 extension 123456",
    "4111 1111 1111 1111 123",
    "12 34 56 78 90 12 34 56 78 90",
    "1" * 30,
]


@settings(max_examples=80, deadline=None)
@given(parts=st.lists(st.sampled_from(LONG + PIECES[:14]), min_size=1, max_size=5))
def test_a_match_is_reported_within_max_match_characters_of_its_start(parts: list[str]) -> None:
    # ASCII with single spaces: normalized and original offsets coincide.
    text = " ".join(" ".join(parts).split()).lower()
    scan = TextScan([DEFAULT], holdback=DEFAULT.max_match)
    seen: dict[tuple[str, int, int], int] = {}
    for i, char in enumerate(text):
        for f in scan.feed(char):
            seen[(f.label, f.start, f.end)] = i + 1
    for f in scan.finish():
        seen[(f.label, f.start, f.end)] = len(text)
    for (_label, start, _end), fed in seen.items():
        # Reported once the text reached max_match characters past the start, or at its end.
        assert fed <= start + DEFAULT.max_match or fed == len(text) < start + DEFAULT.max_match


def test_the_scanner_keeps_a_bounded_window() -> None:
    shield = pii()
    scanner = shield.scanner()
    scan = TextScan([shield], holdback=shield.max_match)
    scan._scanners = [(shield, scanner)]
    for _ in range(2000):
        scan.feed("Call 555-0100 or write to a@b.co, 2023 was fine. ")
    assert len(scanner._buf) < 2000  # type: ignore[attr-defined]


STREAM_REDACT = parse_policy(
    """
name: pii-redact
stream: {holdback_chars: 166}
output:
  - {id: pii, type: pii, action: redact}
"""
)
STREAM_BLOCK = parse_policy(
    """
name: pii-block
stream: {holdback_chars: 166}
output:
  - {id: pii, type: pii}
"""
)
filler = st.text(alphabet="abc xyz.,\n", max_size=60)
# Longer than the hold-back, so that text is released while the stream is still going.
TAIL = " and then some more text" * 8
SECRETS = {
    "4111 1111 1111 1111": "[CREDIT_CARD]",
    "5555-5555-5555-4444": "[CREDIT_CARD]",
    "378282246310005": "[CREDIT_CARD]",
    "６０１１ １１１１ １１１１ １１１７": "[CREDIT_CARD]",
    "(415) 555-2671": "[PHONE]",
    "078-05-1120": "[US_SSN]",
    "DE89 3704 0044 0532 0130 00": "[IBAN]",
    "192.168.10.4": "[IP_ADDRESS]",
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=filler,
    after=filler,
    card=st.sampled_from(sorted(SECRETS)),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=4),
)
def test_zero_leak_a_redacted_number_never_leaves_in_any_event(
    before: str, after: str, card: str, sizes: list[int], key: str, flush_every: int
) -> None:
    text = f"{before} number {card} {after}{TAIL}"
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_REDACT, body, flush_every=flush_every)
    assert guard.state is GuardState.DONE
    # What the client reassembles is exactly the whole-text redaction...
    assert channel_text(out, key) == redacted(text) == text.replace(card, SECRETS[card])
    # ...and not one digit of the number was in any event: the filler has none of its own.
    for payload in payloads(out)[:-1]:
        for choice in payload["choices"]:
            delta = choice["delta"]
            pieces = [delta.get(key) or ""]
            pieces += [c["function"].get("arguments") or "" for c in delta.get("tool_calls") or []]
            assert not any(char.isdigit() for piece in pieces for char in piece)
    wire = out.decode()
    assert card not in wire and card.replace(" ", "").replace("-", "") not in wire


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=filler,
    after=filler,
    email=st.sampled_from(["jane.doe@example.com", "J.Doe+x@Mail.Example.org"]),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
)
def test_zero_leak_no_character_of_a_blocked_address_is_sent(
    before: str, after: str, email: str, sizes: list[int]
) -> None:
    text = f"{before} {email} {after}{TAIL}"
    start = text.index(email)
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_BLOCK, body)
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, "content")
    assert text.startswith(released) and len(released) <= start


# -- issue 17: national formats, context before and after, Maestro, spaced IBANs -----------------

NATIONAL = [
    "612 345 678",  # Spain
    "89-12-34-56",  # Denmark
    "0961-1234567",
    "(0)20 7946 0958",  # the United Kingdom, trunk prefix in parentheses
    "06 12 34 56 78",  # France
    "030 1234567",  # Germany
    "070-127 49 48",  # Sweden: a dash after the area code
    "06-12-39-68-53",
]
BEFORE = ["Phone: {}", "Meine Handynummer ist {}.", "Mi teléfono es {}", "Bel me op {}"]
AFTER = ["{} is my mobile.", "{} es mi móvil", "{} c'est mon portable", "{} (telefoon)"]


@pytest.mark.parametrize("number", NATIONAL)
@pytest.mark.parametrize("template", BEFORE + AFTER)
def test_national_phone_numbers_next_to_a_phone_word(number: str, template: str) -> None:
    assert found(template.format(number)) == [("phone", number)]


@pytest.mark.parametrize("number", ["612 345 678", "89-12-34-56", "5123 4567"])
@pytest.mark.parametrize(
    "template",
    [
        "the value {} here",
        "{} units were sold. Call me tomorrow.",  # the phone word is in the next sentence
        "{} units, and then a long stretch of prose before the mobile",  # beyond the window
        "Order {}",
    ],
)
def test_ambiguous_numbers_without_a_phone_word_nearby_are_not_phones(
    number: str, template: str
) -> None:
    assert found(template.format(number)) == []


def maestro(prefix: str, size: int) -> str:
    return luhn_complete(prefix + "1" * (size - len(prefix) - 1))


@pytest.mark.parametrize("size", range(12, 20))
@pytest.mark.parametrize("prefix", ["5018", "6759", "0604"])
def test_maestro_numbers_of_12_to_19_digits_next_to_a_card_word(prefix: str, size: int) -> None:
    digits = maestro(prefix, size)
    for text in (f"Maestro {digits}", f"{digits} is my debit card", f"Kartennummer {digits}"):
        assert found(text) == [("credit_card", digits)], text
    grouped = " ".join(digits[i : i + 4] for i in range(0, size, 4))
    if size in (12, 16, 19):  # the printed layouts 4-4-4, 4-4-4-4, 4-4-4-4-3
        assert found(f"tarjeta {grouped}") == [("credit_card", grouped)]


def test_a_12_digit_number_is_a_card_only_with_luhn_and_a_card_word() -> None:
    digits = maestro("5018", 12)
    assert found(f"ref {digits}") == []
    wrong = digits[:-1] + str((int(digits[-1]) + 1) % 10)
    assert found(f"card {wrong}") == []


def _iban_of(country: str, bban: str) -> str:
    from stdnum import iban

    return country + iban.calc_check_digits(country + "00" + bban) + bban


@pytest.mark.parametrize(
    ("country", "bban"),
    [
        ("NO", "86011117947"),  # 15 characters, the shortest
        ("BE", "539007547034"),
        ("DE", "370400440532013000"),
        ("FR", "20041010050500013M02606"),
        ("MT", "MALT011000012345MTLCAST001S"),
        ("LC", "HEMM000100010012001200023015"),  # 32 characters
    ],
)
def test_ibans_written_with_spaces_or_dashes(country: str, bban: str) -> None:
    compact = _iban_of(country, bban)
    fours = " ".join(compact[i : i + 4] for i in range(0, len(compact), 4))
    for written in (fours, fours.replace(" ", "-"), compact):
        assert found(f"IBAN {written}, thanks") == [("iban", written)]


def test_ibans_in_a_banks_own_grouping_and_with_a_wrong_checksum() -> None:
    french = "FR76 30006 00001 12345678901 89"
    assert found(f"Virement sur {french} svp") == [("iban", french)]
    assert found("Virement sur FR76 30006 00001 12345678901 88 svp") == []


@pytest.mark.parametrize(
    "text",
    [
        "Order #48213377 shipped on 2024-03-15 at 10:30.",
        "Your order 686-9594168-5802518 has been dispatched.",
        "Version 3.11.4 fixes 12 bugs; see build 1234567.",
        "Price: $1,299.99 (was $1,499.00), 1 234,50 € all in.",
        "ISBN 978-3-16-148410-0, 352 pages.",
        "Tracking: 0169 4812 6711 5067 3779 81",
        "Between 1998 and 2023 the population rose from 1 200 000 to 12 345 678.",
        "The room is 4.5 m x 3.25 m, screen 1920x1080 at 144 Hz.",
        "Results: 12 34 56 78 (n=412).",
        "I bought a gift card for $50 on order 123456789.",
        "Case number 2023-001234 was closed on 15.03.2024.",
    ],
)
def test_benign_numbers_are_not_flagged(text: str) -> None:
    assert found(text) == []


def test_redaction_covers_the_number_not_its_context() -> None:
    digits = maestro("5018", 12)
    text = f"612 345 678 es mi móvil; Maestro {digits}."
    assert redacted(text) == "[PHONE] es mi móvil; Maestro [CREDIT_CARD]."


CONTEXT_AFTER_SECRETS = {
    "612 345 678": "[PHONE]",
    "89-12-34-56": "[PHONE]",
    maestro("6759", 13): "[CREDIT_CARD]",
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=filler,
    number=st.sampled_from(sorted(CONTEXT_AFTER_SECRETS)),
    word=st.sampled_from([" is my mobile", " es mi móvil", " (debit card)", " my maestro card"]),
    sizes=st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=20),
)
def test_zero_leak_with_the_context_word_after_the_number(
    before: str, number: str, word: str, sizes: list[int]
) -> None:
    label = CONTEXT_AFTER_SECRETS[number]
    if ("card" in word) != (label == "[CREDIT_CARD]"):
        word = " is my mobile" if label == "[PHONE]" else " my maestro card"
    text = f"{before} {number}{word}{TAIL}"
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_REDACT, body)
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == redacted(text) == text.replace(number, label)
    for payload in payloads(out)[:-1]:
        for choice in payload["choices"]:
            assert not any(char.isdigit() for char in choice["delta"].get("content") or "")


@pytest.mark.parametrize(
    ("text", "released_after"),
    [
        # No phone word: held only until the window after it has passed...
        ("Order 612 345 678 then " + "x" * 60, len("Order 612 345 678") + 32),
        # ...or until its sentence ended.
        ("Order 612 345 678. And then " + "x" * 60, len("Order 612 345 678.")),
    ],
)
def test_a_number_without_context_is_released_once_its_window_has_passed(
    text: str, released_after: int
) -> None:
    scan = TextScan([DEFAULT], holdback=DEFAULT.max_match, adaptive=True)
    start = text.index("612")
    for i, char in enumerate(text, start=1):
        assert not scan.feed(char)
        if i < released_after:
            assert scan.safe_end <= start, i  # undecided: held from its first digit
    assert scan.safe_end > start + len("612 345 678")  # released, not held forever
    assert not scan.finish()
