"""Whether a phone-shaped number is a phone number, from its digit groups and separators alone:
valid in one of the configured regions by Google's libphonenumber metadata and grouped the way
that region writes it, or with a "+country" code of a length that country dials, or written as
phone numbers are (three or more groups of 2-4 digits) — and not a date or an amount. What is
left may be a phone number next to a phone word (``PhoneDecision.IF_CONTEXT``): the recognizer
(``pii_recognizers.phone``) looks for one in the text around it.
"""

from __future__ import annotations

import enum
import itertools
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import phonenumbers

from shields.builtin.pii_checks import DASHES
from shields.builtin.pii_context import NATIONAL_REGIONS

__all__ = ["DIGIT_GROUPS", "PhoneDecision", "PhoneRules", "PhoneText", "is_phone"]

# A number's digit groups, and with ``split`` the separators between them.
DIGIT_GROUPS = re.compile(r"([0-9]+)")


@dataclass(frozen=True, slots=True)
class PhoneRules:
    """A policy's phone options (``PiiSpec.phone_regions``, ``phone_strict``)."""

    regions: tuple[str, ...]
    strict: bool


class PhoneText(NamedTuple):
    """A phone-number candidate as written: its digit groups and the separators between them."""

    groups: list[str]
    seps: list[str]
    international: bool  # written with "+country"
    paren_first: bool  # the first group is in parentheses: "(07) 5331 0577"


class PhoneDecision(enum.Enum):
    """What a number's text says of it: a phone number, not one, or one if a phone word is
    next to it (the scanner then looks, before it and after it)."""

    NO = enum.auto()
    YES = enum.auto()
    IF_CONTEXT = enum.auto()


def is_phone(rules: PhoneRules, phone: PhoneText) -> PhoneDecision:
    groups, seps = phone.groups, phone.seps
    digits = "".join(groups)
    strict = rules.strict
    if phone.international:
        # "+1-944-435-4352": an explicit country code, and a length that country dials (and
        # no fewer than 8 digits in all: "+3.140000" is a signed number).
        check = _valid_international if strict else _possible_international
        return PhoneDecision.YES if len(digits) >= 8 and check(digits) else PhoneDecision.NO
    # Without a phone word, what is left when the number's shape does not tell.
    otherwise = PhoneDecision.NO
    # 00 is the international call prefix in most of the world, 011 in North America.
    for prefix in ("00", "011"):
        rest = digits[len(prefix) :]
        if digits.startswith(prefix) and rest[:1] not in ("", "0"):
            if _valid_international(rest):
                return PhoneDecision.YES
            if not strict and _possible_international(rest):
                if len(groups) >= 3:
                    return PhoneDecision.YES
                otherwise = PhoneDecision.IF_CONTEXT
    if not _well_grouped(phone) or _looks_like_date(groups, seps) or _looks_like_amount(phone):
        return otherwise
    # Valid in one of the regions, and grouped the way that region writes its numbers
    # ("415-555-2671", "4155552671", but not the range "64040-64044").
    boundaries = _boundaries(groups)
    for region in rules.regions if len(groups) > 1 or len(digits) >= 8 else ():
        written = _national_boundaries(digits, region)
        if written is not None and boundaries <= written:
            return PhoneDecision.YES
    if strict:
        return otherwise
    if _phone_shaped(phone) or _written_nationally(groups, boundaries):
        return PhoneDecision.YES
    # A foreign or unassigned number next to a phone word ("Mobile: 041-412293", "call me at
    # 555-1234", "612 345 678 es mi móvil").
    if 7 <= len(digits) <= 12 and (len(groups) >= 2 or len(digits) >= 8):
        return PhoneDecision.IF_CONTEXT
    return otherwise


def _written_nationally(groups: list[str], boundaries: frozenset[int]) -> bool:
    """Valid in one of ``NATIONAL_REGIONS`` and grouped exactly as that region writes it,
    trunk prefix 0 first: "030 1234567", "020 7946 0958", "0612 345 678"."""
    digits = "".join(groups)
    if len(groups) < 2 or not digits.startswith("0") or not 9 <= len(digits) <= 12:
        return False
    for region in NATIONAL_REGIONS:
        written = _national_boundaries(digits, region)
        if written is not None and boundaries == {c for c in written if c < len(digits)}:
            return True
    return False


def _well_grouped(phone: PhoneText) -> bool:
    """No lone digit inside ("9.0.0612") and one kind of separator, except that the first may
    differ ("415 555-2671", Swedish "070-127 49 48") and a parenthesized group has its own
    ("(415) 555-2671")."""
    if any(len(g) < 2 for g in phone.groups[1:]):
        return False
    plain = [sep for sep in phone.seps if "(" not in sep and ")" not in sep]
    return len(set(plain[1:])) <= 1


def _boundaries(groups: list[str]) -> frozenset[int]:
    """Where the groups break, counted in digits from the end of the number."""
    total, cuts = 0, []
    for group in reversed(groups[1:]):
        total += len(group)
        cuts.append(total)
    return frozenset(cuts)


@lru_cache(maxsize=4096)
def _national_boundaries(digits: str, region: str) -> frozenset[int] | None:
    """Group breaks of the region's own way of writing the number, when the number is valid
    there (any break at or before the start of that, like after a "1" trunk prefix, too)."""
    try:
        number = phonenumbers.parse(digits, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    formatted = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    groups = DIGIT_GROUPS.findall(formatted)
    total = sum(map(len, groups))
    return _boundaries(groups) | frozenset(range(total, len(digits) + 1))


def _phone_shaped(phone: PhoneText) -> bool:
    """Written the way phone numbers are in many countries: three or more groups of 2-4 digits
    (a first group in parentheses may have 1-5), 8-12 digits in all, the groups not all of one
    size unless the first starts with the trunk prefix 0 ("01 23 45 67 89").

    "(07) 5331 0577", "027 896 92 86", "986.291.2294", but not "10 20 30 40" or "1 000 000".
    """
    groups = phone.groups
    if len(groups) < 3 or not 8 <= sum(len(g) for g in groups) <= 12:
        return False
    if any("/" in sep for sep in phone.seps) or _progression(groups):
        return False  # "128/512/2048", "32 64 96 128", "02 03 04 05 06"
    first, rest = groups[0], groups[1:]
    if not (2 <= len(first) <= 4 or (phone.paren_first and 1 <= len(first) <= 5)):
        return False
    if any(len(g) > 4 for g in rest):
        return False
    if len({len(g) for g in groups}) > 1:
        return True
    return first.startswith("0") and first.strip("0") != ""


def _progression(groups: list[str]) -> bool:
    """Numbers in arithmetic progression: a list, not a phone number."""
    values = [int(g) for g in groups]
    step = values[1] - values[0]
    return step != 0 and all(b - a == step for a, b in itertools.pairwise(values))


def _looks_like_date(groups: list[str], seps: list[str]) -> bool:
    """2023-01-15, 15.01.2023, 01/15/2023, 2014.07.32: three groups in a row read as a date.

    Spaces do not count: "01 23 45 67 89" is a French phone number; nor do four or more groups
    all joined alike ("06-12-39-68-53"): no date is written so."""
    if len(groups) > 3 and len(set(seps)) == 1:
        return False
    for i in range(len(groups) - 2):
        sep = seps[i]
        if sep != seps[i + 1] or sep not in ("-", ".", "/", *DASHES):
            continue
        a, b, c = groups[i : i + 3]
        if len(b) > 2:
            continue
        if len(a) == 4 and len(c) <= 2 and a[0] in "12" and 1 <= int(b) <= 12:
            return True  # year, month, day
        day_month = len(a) <= 2 and 1 <= int(a) <= 31 and 1 <= int(b) <= 31
        year = len(c) == 2 or (len(c) == 4 and c[0] in "12")
        if day_month and year and (int(a) <= 12 or int(b) <= 12):
            return True  # day and month, then the year
    return False


def _looks_like_amount(phone: PhoneText) -> bool:
    """1 000 000, 12.345.678: thousands separators, not a phone number."""
    groups, seps = phone.groups, phone.seps
    return (
        len(groups) >= 3
        and len(groups[0]) <= 2
        and not groups[0].startswith("0")
        and all(len(g) == 3 for g in groups[1:])
        and len(set(seps)) == 1
        and seps[0] in (" ", ".")
    )


@lru_cache(maxsize=4096)
def _valid_international(digits: str) -> bool:
    try:
        number = phonenumbers.parse("+" + digits)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)


@lru_cache(maxsize=4096)
def _possible_international(digits: str) -> bool:
    """ "+1-944-435-4352": an explicit country code and a length that country dials."""
    try:
        number = phonenumbers.parse("+" + digits)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.is_possible_number(number)
