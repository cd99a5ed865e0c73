"""Checks of the ``pii`` shield's written forms that need no surrounding text: the Luhn check and
card networks' prefixes, lengths and print layouts; the IBAN's ISO 7064 mod-97 checksum; the
SSA's rules for social security numbers; which IP addresses name nobody's host.

Pure functions of the candidate's characters: the recognizers (``pii_recognizers``) find a
candidate in the text, these say whether it is one.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

__all__ = [
    "DASHES",
    "card_layout",
    "card_with_context",
    "mod97",
    "not_personal",
    "plausible_card",
    "valid_ssn",
]

# Hyphen, dashes and the minus sign: numbers are written with any of them as with "-".
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"


@lru_cache(maxsize=1024)
def not_personal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Addresses that name no one's host: 127.0.0.1, 0.x.x.x, ::1, multicast, netmasks and
    other reserved space (255.255.255.0)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return not_personal(address.ipv4_mapped)  # ::ffff:192.168.1.1
        # (Most of the IPv6 space is "reserved", that is unallocated: it still names hosts.)
        return address.is_loopback or address.is_unspecified or address.is_multicast
    return (
        address.is_loopback
        or address.is_unspecified
        or address.packed[0] == 0  # 0.0.0.0/8, "this network"
        or address.is_multicast
        or address.is_reserved
    )


def mod97(iban: str) -> bool:
    """ISO 7064 MOD 97-10 over the IBAN with its first four characters moved to the end."""
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if i & 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def card_layout(sizes: list[int]) -> bool:
    """How printed card numbers are grouped: 4-4-4-4(-3) and shorter, 4-6-5 and 4-6-4."""
    if sizes[0] != 4:
        return False
    if len(sizes) == 3:  # 4-6-5, 4-6-4, and a 12-digit Maestro's 4-4-4
        return (sizes[1] == 6 and sizes[2] in (4, 5)) or sizes[1:] == [4, 4]
    if sizes[1] != 4 or sizes[2] != 4:
        return False
    if len(sizes) == 4:
        return 1 <= sizes[3] <= 4
    return len(sizes) == 5 and sizes[3] == 4 and 1 <= sizes[4] <= 3


def plausible_card(digits: str) -> bool:
    """Luhn-valid, with an issuer prefix (IIN) and a length that card networks use.

    Payment cards start with an industry digit from 1 (airlines: UATP) to 6 (Discover,
    UnionPay, Maestro); the big networks also fix their lengths.
    """
    size = len(digits)
    if not 13 <= size <= 19 or not _luhn(digits):
        return False
    first, two, four = digits[0], int(digits[:2]), int(digits[:4])
    if first == "4":  # Visa
        return size in (13, 16, 19)
    if two in (34, 37):  # American Express
        return size == 15
    if 51 <= two <= 55 or 2221 <= four <= 2720:  # Mastercard
        return size == 16
    if first in "12":  # UATP, enRoute, Mir, early JCB ranges
        return size in (15, 16) or (2200 <= four <= 2204 and size <= 19)
    # Diners Club, JCB, Maestro, Discover, UnionPay, RuPay...
    return first in "356" and size >= 14 - (first != "3")


def card_with_context(digits: str) -> bool:
    """Luhn-valid, 12-19 digits, and an industry digit of banking (1-6) or Maestro's 0604:
    a card number when a card word says so."""
    return (
        12 <= len(digits) <= 19
        and (digits[0] in "123456" or digits.startswith("0604"))
        and _luhn(digits)
    )


def valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: no area 000, 666 or 900-999, no group 00, no serial 0000."""
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"
