"""The ``pii`` shield's recognizers: one small function per written form of an entity, each
reading the scanner's normalized text (``ScanText``) from a candidate start and returning where
the entity ends there, or None. Which recognizer runs at which start, in which order, is data
(``pii_entities``); the engine that finds the starts is ``pii_scanner``.

A recognizer looks at no more than a fixed number of characters from its start (its reach, the
``*_REACH`` constants below, which the entity records carry). In a stream it asks the text for
what it needs (``ScanText.char``, ``decidable``, ``context``), and the text raises the scanner's
own exception when that has not arrived yet: the start is then tried again on the next feed, so
a recognizer needs no code for streams.

The patterns run on Python's ``re``: each is anchored at a start (``match``, never a search over
the text) and every repetition is bounded or over a class disjoint from what follows it, so no
pattern can backtrack more than a small constant per start.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Protocol

from stdnum import iban as stdnum_iban

from shields.builtin.pii_checks import (
    DASHES,
    card_layout,
    card_with_context,
    mod97,
    not_personal,
    plausible_card,
    valid_ssn,
)
from shields.builtin.pii_context import CONTEXT_AFTER, CONTEXT_BEFORE, SSN_CONTEXT, VERSION_CONTEXT
from shields.builtin.pii_phone import DIGIT_GROUPS, PhoneDecision, PhoneRules, PhoneText, is_phone

if TYPE_CHECKING:
    from shields.builtin.pii_entities import Entity

__all__ = [
    "CARD_REACH",
    "EMAIL_LOCAL_MAX",
    "EMAIL_REACH",
    "IBAN_REACH",
    "IP_ADDRESS_REACH",
    "LOCAL_RUN",
    "PHONE_REACH",
    "SSN_REACH",
    "ScanText",
    "card",
    "email",
    "iban",
    "ipv4",
    "ipv6",
    "is_local_char",
    "phone",
    "ssn",
    "word_or",
]


class ScanText(Protocol):
    """What a recognizer reads: the scanner's buffered normalized text, in buffer indices.

    ``char``, ``decidable`` and ``context`` raise the scanner's need-more exception while what
    they would answer from has not arrived (never once the text is finished)."""

    @property
    def buf(self) -> str: ...

    @property
    def phone_rules(self) -> PhoneRules: ...

    def char(self, i: int) -> str:
        """The character at ``i``; "" past the end of a finished text."""
        ...

    def is_word(self, i: int) -> bool:
        """Whether the character at ``i`` is a word character (letter, digit, "_")."""
        ...

    def decidable(self, start: int, run_end: int, reach: int) -> None:
        """Returns when the candidate at ``start`` can be decided now: ``run_end`` is where
        the characters its pattern can consume stop (the pattern peeks at most two past them)
        and ``reach`` the entity's."""
        ...

    def context(self, entity: Entity, start: int, end: int) -> bool:
        """Whether one of the entity's context words is just before ``start`` or just after
        ``end``, in the same sentence."""
        ...

    def spread_out(self, start: int, end: int) -> bool:
        """Whether a space between ``start`` and ``end`` stands for a run of whitespace in the
        original text (numbers in aligned columns)."""
        ...


# ----------------------------------------------------------------------------- reaches
# How far past a candidate's first character each entity's recognizers may need to see: its own
# text plus the look-ahead that tells where it ends. The shield's ``max_match`` is the largest
# over the entities in use.

# Longest e-mail parts accepted (RFC 5321 allows 64 for the local part; 100 for the domain is a
# practical cap well above real addresses).
EMAIL_LOCAL_MAX = 64
EMAIL_DOMAIN_MAX = 100
# Local part, "@", domain, and one character past the longest domain run.
EMAIL_REACH = EMAIL_LOCAL_MAX + 1 + EMAIL_DOMAIN_MAX + 1
# Longest phone number text from its first character, extension included.
PHONE_MAX = 40
# The number, the character after it, and the context window after it: a number that is a phone
# number only if a phone word follows it waits for that window.
PHONE_REACH = PHONE_MAX + 1 + CONTEXT_AFTER
# 4-4-4-4-3 plus separators is 23 characters, plus the one after it, and the context window
# after it (a 12-digit Maestro number is a card only next to a card word).
CARD_REACH = 24 + CONTEXT_AFTER
# Separators an IBAN may be written with between its groups ("de89 3704 ...", "fr76 30006 00001
# 12345678901 89", "de89-3704-..."), at most: 34 characters in groups of two.
IBAN_SEPARATORS_MAX = 16
# 34 characters and their separators, plus the one after them.
IBAN_REACH = 34 + IBAN_SEPARATORS_MAX + 1
# 123-45-6789 and two characters after it ("-1" would make it part of a longer number).
SSN_REACH = 13
# An IPv6 text is at most 45 characters; a run one longer is rejected, plus the one after.
IP_ADDRESS_REACH = 47


# ----------------------------------------------------------------------------- characters


def word_or(char: str, extra: str) -> bool:
    """A word character, or one of ``extra`` ("" is neither)."""
    return char.isalnum() or char == "_" or (bool(char) and char in extra)


def is_local_char(char: str) -> bool:
    """A character of an e-mail local part (``_EMAIL_LOCAL_REVERSED``)."""
    return char.isalnum() or char in "_.%+-"


def _is_alnum(char: str) -> bool:
    return "a" <= char <= "z" or "0" <= char <= "9"


# ``(?:...)`` pieces below are each bounded; see the module docstring on backtracking.
_DIGIT_RUN = re.compile(r"[0-9]{1,21}")
_NUMBER_JOINERS = frozenset("-." + DASHES)
_CARD_SEPS = frozenset(" -." + DASHES)  # "4111.1111.1111.1111" too
# Longest digit group after the first one, by position: 4-6-5 and 4-4-4-4-3 layouts.
_CARD_GROUP_MAX = {1: 6, 2: 5, 3: 4, 4: 3}
_SSN = re.compile(rf"([0-9]{{3}})([ \-{DASHES}])([0-9]{{2}})\2([0-9]{{4}})")
_SSN_PLAIN = re.compile(r"[0-9]{9}")
_SSN_ALPHABET = re.compile(rf"[0-9 \-{DASHES}]{{0,13}}")
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}(?!\w)(?!\.[0-9])")
_IPV4_ALPHABET = re.compile(r"[0-9.]{0,17}")
_IPV6_RUN = re.compile(r"[0-9a-f:.]{0,46}")
_IBAN_COMPACT = re.compile(r"[a-z0-9]{0,35}")
_IBAN_GROUP = re.compile(r"[a-z0-9]{1,13}")
_IBAN_SEPS = frozenset(" -" + DASHES)
_IBAN_GROUP_MAX = 12  # "fr76 30006 00001 12345678901 89": a French account number is 11
_PHONE = re.compile(
    rf"""
    (?P<lead>\+\(?|\(\+?)?
    (?P<body>[0-9]{{1,15}}(?:[\ .\-/(){DASHES}]{{1,3}}[0-9]{{1,15}}){{0,7}})
    (?P<close>\))?
    (?P<ext>\ ?(?:x|ext\.?|extension|\#)\ ?[0-9]{{1,6}})?
    (?!\w)
    """,
    re.VERBOSE,
)
_PHONE_ALPHABET = re.compile(rf"[0-9 +().\-/#{DASHES}]{{0,{PHONE_MAX + 1}}}")
_PARENTHESIZED = re.compile(r"\(\+?[0-9]{1,5}\)")
_EMAIL_LOCAL_REVERSED = re.compile(rf"[\w.%+\-]{{1,{EMAIL_LOCAL_MAX + 1}}}")
# The same characters from the end of the text back (reversed), as the scanner holds them.
LOCAL_RUN = re.compile(rf"[\w.%+\-]{{0,{EMAIL_LOCAL_MAX + 1}}}")
_EMAIL_DOMAIN_RUN = re.compile(rf"[\w.\-]{{0,{EMAIL_DOMAIN_MAX + 1}}}")
_EMAIL_DOMAIN = re.compile(
    r"(?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.)+(?:[^\W\d_]{2,24}|xn--[a-z0-9\-]{1,59})"
)


# ----------------------------------------------------------------------------- cards


def card(text: ScanText, start: int) -> int | None:
    """A payment card number: 12-19 digits in one run, or printed in groups ("4111 1111 1111
    1111", "3782 822463 10005") with one kind of separator."""
    buf = text.buf
    run = _DIGIT_RUN.match(buf, start)
    assert run is not None
    end = run.end()
    size = end - start
    if size > 19:
        return None
    if size >= 12:
        if text.is_word(end):
            return None
        return end if _is_card(text, buf[start:end], start, end) else None
    if size != 4:
        text.char(end)  # more digits may be on their way
        return None
    sep = text.char(end)
    if sep not in _CARD_SEPS:
        return None
    if start > 1 and buf[start - 1] == sep and buf[start - 2].isdigit():
        return None  # "1288 1928 2568 3208 ...": a row of numbers, not a card
    sizes, ends = [4], [end]
    while len(sizes) < 5 and text.char(end) == sep and text.char(end + 1).isdigit():
        longest = _CARD_GROUP_MAX[len(sizes)]
        group = _DIGIT_RUN.match(buf, end + 1, end + 2 + longest)
        assert group is not None
        size = group.end() - end - 1
        if size > longest:
            break  # not a card group: what came before may still be a card
        text.char(group.end())  # the group may still be growing
        sizes.append(size)
        end = group.end()
        ends.append(end)
    for count in range(len(sizes), 2, -1):
        stop = ends[count - 1]
        if not card_layout(sizes[:count]) or text.is_word(stop):
            continue
        if _is_card(text, buf[start:stop].replace(sep, ""), start, stop):
            return stop
    return None


def _is_card(text: ScanText, digits: str, start: int, end: int) -> bool:
    """A card number by its issuer and length alone, or a Luhn-valid number of 12-19 digits
    with a card word next to it (Maestro numbers have any length from 12 to 19)."""
    if plausible_card(digits):
        return True
    return card_with_context(digits) and text.context("credit_card", start, end)


# ----------------------------------------------------------------------------- SSNs


def ssn(text: ScanText, start: int) -> int | None:
    """A US social security number: "078-05-1120", "078 05 1120", or nine bare digits right
    after "SSN" and the like (``SSN_CONTEXT``); by the SSA's rules."""
    buf = text.buf
    run = _SSN_ALPHABET.match(buf, start)
    assert run is not None
    text.decidable(start, run.end(), SSN_REACH)
    if start > 0 and buf[start - 1] in _NUMBER_JOINERS:
        return None  # "1-123-45-6789": part of a longer number
    match = _SSN.match(buf, start)
    if match is not None:
        end = match.end()
        after = text.char(end)
        if word_or(after, "") or (after in _NUMBER_JOINERS and text.char(end + 1).isdigit()):
            return None
        area, _, group, serial = match.groups()
        return end if valid_ssn(area, group, serial) else None
    plain = _SSN_PLAIN.match(buf, start)
    if plain is None or text.is_word(plain.end()):
        return None
    # Nine bare digits are an SSN only when the text says so just before them.
    if not SSN_CONTEXT.search(buf, max(0, start - CONTEXT_BEFORE), start):
        return None
    digits = plain.group()
    return plain.end() if valid_ssn(digits[:3], digits[3:5], digits[5:]) else None


# ----------------------------------------------------------------------------- IP addresses


def ipv4(text: ScanText, start: int) -> int | None:
    """A dotted-quad IPv4 address that names somebody's host, not a version number."""
    buf = text.buf
    run = _IPV4_ALPHABET.match(buf, start)
    assert run is not None
    text.decidable(start, run.end(), IP_ADDRESS_REACH)
    if start > 0 and buf[start - 1] == ".":
        return None  # "1.2.3.4.5" read from its second part
    match = _IPV4.match(buf, start)
    if match is None:
        return None
    # "version 1.2.3.4", "(>= 1.2.3.4)", "section 6.7.2.1" are not addresses.
    if VERSION_CONTEXT.search(buf, max(0, start - 24), start):
        return None
    address = ipaddress.IPv4Address(match.group())  # the pattern admits valid octets only
    return None if not_personal(address) else match.end()


def ipv6(text: ScanText, start: int) -> int | None:
    """An IPv6 address with a digit in it ("fe80::1", "::ffff:10.0.0.1"), by ``ipaddress``."""
    buf = text.buf
    if start > 0 and word_or(buf[start - 1], ":."):
        return None
    run = _IPV6_RUN.match(buf, start)
    assert run is not None
    end = run.end()
    if end - start > 45 or text.is_word(end):  # too long, or "fe80::1g"
        return None
    address_text = buf[start:end].rstrip(".")
    if address_text.endswith(":") and not address_text.endswith("::"):
        address_text = address_text[:-1]  # "at ::1: see" - the colon is punctuation
    # "::" alone, "a::b" in code: an address written in prose has a digit.
    if address_text.count(":") < 2 or not any(c.isdigit() for c in address_text):
        return None
    try:
        address = ipaddress.IPv6Address(address_text)
    except ValueError:
        return None
    return None if not_personal(address) else start + len(address_text)


# ----------------------------------------------------------------------------- IBANs


def iban(text: ScanText, start: int) -> int | None:
    """An IBAN from its country code: "de89 3704 0044 0532 0130 00" (groups of four), "fr76
    30006 00001 12345678901 89" (the bank's own groups), "de89-3704-..." or
    "de89370400440532013000"; by its mod-97 checksum and its country's length and format."""
    buf = text.buf
    if not text.char(start + 3).isdigit():
        return None
    ends: list[int] = []
    sep = text.char(start + 4)
    if sep in _IBAN_SEPS:
        end, count, seps = start + 4, 4, 0
        while seps < IBAN_SEPARATORS_MAX and text.char(end) == sep:
            if not _is_alnum(text.char(end + 1)):
                break
            group = _IBAN_GROUP.match(buf, end + 1, end + 2 + _IBAN_GROUP_MAX)
            assert group is not None
            size = group.end() - end - 1
            if size > _IBAN_GROUP_MAX or count + size > 34:
                break  # a longer word or number after the IBAN
            if _is_alnum(text.char(group.end())):
                break  # the group may still be growing; or a word too long to be one
            end, count, seps = group.end(), count + size, seps + 1
            if count >= 15:
                ends.append(end)
    else:
        run = _IBAN_COMPACT.match(buf, start + 4)
        assert run is not None
        end = run.end()
        if end - start > 34 or text.is_word(end):
            return None
        if end - start >= 15:
            ends.append(end)
    for end in reversed(ends):
        compact = buf[start:end].upper()
        if sep in _IBAN_SEPS:
            compact = compact.replace(sep, "")
        # The mod-97 checksum first (cheap: one in 97 random strings passes), then the
        # country's length and format. Not ``check_country``: that also looks the bank up in
        # python-stdnum's registries, which miss real banks.
        if mod97(compact) and stdnum_iban.is_valid(compact, check_country=False):
            return end
    return None


# ----------------------------------------------------------------------------- phone numbers


def phone(text: ScanText, start: int) -> int | None:
    """A phone number as written: digit groups with separators, a "+" or "(" lead, an
    extension; ``pii_phone`` decides whether it is one."""
    buf = text.buf
    size = len(buf)
    if start > 0 and buf[start - 1] in "+(":
        return None  # the "+" or "(" before it was tried as the start
    run = _PHONE_ALPHABET.match(buf, start)
    assert run is not None
    run_end = run.end()
    if run_end < size and buf[run_end] in "xe":
        run_end += len(" extension 123456")  # an extension may follow
    text.decidable(start, run_end, PHONE_REACH)
    match = _PHONE.match(buf, start, min(size, start + PHONE_MAX + 1))
    if match is None:
        return None
    written = match.group()
    # At most one pair of parentheses, around one group: "(07) 5331", "+1 (415) 555".
    if written.count("(") != written.count(")") or written.count("(") > 1:
        return None
    if "(" in written and not _PARENTHESIZED.search(written):
        return None
    lead = match.group("lead") or ""
    pieces = DIGIT_GROUPS.split(match.group("body"))
    groups, seps = pieces[1::2], pieces[2:-1:2]
    # "070-127 49 48" (Swedish), "08-13 25 87": a dash after the area code, spaces after.
    area_code = len(seps) > 1 and seps[0] != " " and set(seps[1:]) == {" "}
    punctuated = False
    for i, sep in enumerate(seps):
        bare = sep.replace("(", "").replace(")", "")
        if len(bare) > 1 or (not bare and sep not in ("(", ")")):
            return None  # "555 - 1234", "12. 2023": not one number
        if sep == " " and punctuated and not area_code:
            # A plain space after dashes or dots ends the number: "555-123-4567 555-9876"
            groups, seps = groups[: i + 1], seps[:i]
            break
        punctuated = punctuated or bare not in ("", " ")
    # In a longer row of numbers, the longest prefix of groups a phone number can fill.
    count = len(groups)
    while sum(len(g) for g in groups[:count]) > 15:
        count -= 1
    if count < len(groups) and (seps[count - 1] != " " or len(set(seps)) == 1):
        # "686-9594168-5802518", "0169 4812 6711 5067 3779 81": a longer identifier or a
        # tracking number, not phone numbers in a row
        return None
    groups, seps = groups[:count], seps[: count - 1]
    digits = "".join(groups)
    if len(digits) < 7:
        return None
    if count == len(pieces) // 2:
        end = match.end()
    else:
        end = start + len(lead) + len(digits) + sum(len(sep) for sep in seps)
        if buf[end : end + 1] == ")":
            end += 1
        if buf.count("(", start, end) != buf.count(")", start, end):
            return None
    if text.spread_out(start, end):
        return None
    candidate = PhoneText(groups, seps, international="+" in lead, paren_first="(" in lead)
    decision = is_phone(text.phone_rules, candidate)
    if decision is PhoneDecision.YES or (
        decision is PhoneDecision.IF_CONTEXT and text.context("phone", start, end)
    ):
        return end
    return None


# ----------------------------------------------------------------------------- e-mail addresses


def email(text: ScanText, at: int) -> tuple[int, int] | None:
    """The e-mail address around the "@" at ``at``: its span, or None."""
    buf = text.buf
    local = _EMAIL_LOCAL_REVERSED.match(buf[max(0, at - EMAIL_LOCAL_MAX - 1) : at][::-1])
    if local is None or local.end() > EMAIL_LOCAL_MAX:
        return None  # nothing before the "@", or a run too long to be a local part
    start = at - local.end()
    while start < at and buf[start] == ".":
        start += 1
    local_part = buf[start:at]
    if not local_part or local_part.endswith(".") or ".." in local_part:
        return None
    run = _EMAIL_DOMAIN_RUN.match(buf, at + 1)
    assert run is not None
    if run.end() - at - 1 > EMAIL_DOMAIN_MAX:
        return None
    text.char(run.end())  # the domain may still be arriving
    domain = buf[at + 1 : run.end()].rstrip(".-")
    if not _EMAIL_DOMAIN.fullmatch(domain):
        return None
    return start, at + 1 + len(domain)
