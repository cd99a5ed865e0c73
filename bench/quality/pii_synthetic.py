"""Synthetic texts for the ``pii`` shield's evaluation: national-format phone numbers, Maestro
card numbers and spaced IBANs in sentences (with a context word before, after, or none), and
benign text full of numbers that are none of these (order ids, dates, versions, prices, times,
ISBNs, tracking numbers, years, measurements).

Written for this project, not copied from a data set: numbers are drawn from libphonenumber's
metadata (a region's example number with its subscriber digits redrawn until valid), the Luhn
and mod-97 rules, and templates below. Seeded, so every run gives the same texts; split into
halves by ``eval_shields.half`` like the public sets.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import phonenumbers
from stdnum import iban as stdnum_iban

__all__ = ["Labelled", "benign_texts", "pii_texts"]


@dataclass(frozen=True, slots=True)
class Labelled:
    text: str
    entity: str  # "phone", "credit_card", "iban"
    value: str  # as written in ``text``
    kind: str  # e.g. "phone, context after"


PHONE_REGIONS = (
    "ES", "DK", "NO", "PH", "GB", "FR", "DE", "IT", "NL", "PT", "BE", "AT", "CH", "SE", "PL",
    "AU", "IN", "BR", "MX", "US", "IE", "FI", "PK", "TW",
)  # fmt: skip
PHONE_BEFORE = (
    "Phone: {}", "You can call me at {} tomorrow.", "My mobile is {}.", "Tel. {}",
    "whatsapp me on {} if anything changes", "Telefon: {}", "Meine Handynummer ist {}.",
    "Mon portable : {}", "Téléphone {}", "Mi teléfono es el {}.", "Llámame al {} por favor",
    "Il mio cellulare è {}", "Telefono: {}", "Bel me op {}.", "Mijn telefoonnummer is {}",
    "O meu telemóvel é {}", "Ligue para {} amanhã", "Fax {}", "cell {} (after 6pm)",
)  # fmt: skip
PHONE_AFTER = (
    "{} is my mobile.", "{} - that's my phone, call after five.", "Try {} (mobile).",
    "{} ist meine Handynummer.", "{} es mi móvil", "{} è il mio cellulare.",
    "{} (telefoon)", "{} é o meu telefone", "{} c'est mon portable",
)  # fmt: skip
PHONE_NONE = ("See {} for details.", "Reference: {}.", "{}")
CARD_BEFORE = (
    "Please charge my card {}.", "Maestro {} exp 09/27", "card number: {}", "cc {}",
    "Kartennummer {}", "Numéro de carte : {}", "Número de tarjeta {}", "Carta di credito {}",
    "Kaartnummer {}", "Cartão {}", "debit card {} was declined",
)  # fmt: skip
CARD_AFTER = ("{} is my Maestro card.", "{} (debit card)", "{} - ma carte bancaire")
IBAN_TEMPLATES = (
    "Please wire it to {}.", "IBAN: {}", "Meine IBAN lautet {}.", "Virement sur {} svp",
    "{} is the account.", "Cuenta {} a nombre de Ana",
)  # fmt: skip
MAESTRO_PREFIXES = ("5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763", "0604")


def _luhn_complete(body: str) -> str:
    total = 0
    for i, char in enumerate(reversed(body)):
        value = int(char) * (2 if i % 2 == 0 else 1)
        total += value - 9 if value > 9 else value
    return body + str((10 - total % 10) % 10)


def _phone(region: str, rnd: random.Random) -> str | None:
    kind = rnd.choice(
        (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE)
    )
    example = phonenumbers.example_number_for_type(region, kind)
    if example is None:
        return None
    national = str(example.national_number)
    for _ in range(50):
        keep = max(2, len(national) - 5)
        drawn = national[:keep] + "".join(rnd.choice("0123456789") for _ in national[keep:])
        number = phonenumbers.parse(drawn, region)
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    return None


def _restyle(written: str, rnd: random.Random) -> str:
    """The region's own grouping, or the same groups with dashes, dots, or none."""
    style = rnd.choice(("own", "own", "dash", "dot", "none"))
    if style == "own":
        return written
    groups = re.findall(r"[0-9]+", written)
    return {"dash": "-", "dot": ".", "none": ""}[style].join(groups)


def pii_texts(seed: int = 17, per_kind: int = 120) -> list[Labelled]:
    rnd = random.Random(seed)
    out: list[Labelled] = []
    placements = (("before", PHONE_BEFORE), ("after", PHONE_AFTER), ("none", PHONE_NONE))
    for place, templates in placements:
        made = 0
        while made < per_kind:
            written = _phone(rnd.choice(PHONE_REGIONS), rnd)
            if written is None:
                continue
            value = _restyle(written, rnd)
            text = rnd.choice(templates).format(value)
            out.append(Labelled(text, "phone", value, f"phone, context {place}"))
            made += 1
    for place, card_templates in (("before", CARD_BEFORE), ("after", CARD_AFTER)):
        for _ in range(per_kind // 2):
            prefix = rnd.choice(MAESTRO_PREFIXES)
            size = rnd.randint(12, 19)
            body = prefix + "".join(rnd.choice("0123456789") for _ in range(size - 5))
            digits = _luhn_complete(body)
            value = (
                " ".join(digits[i : i + 4] for i in range(0, size, 4))
                if rnd.random() < 0.5
                else digits
            )
            text = rnd.choice(card_templates).format(value)
            out.append(Labelled(text, "credit_card", value, f"Maestro card, context {place}"))
    countries = sorted({cc for cc in _iban_structures()})
    for _ in range(per_kind):
        country = rnd.choice(countries)
        compact = _iban(country, rnd)
        value = stdnum_iban.format(compact) if rnd.random() < 0.8 else compact
        text = rnd.choice(IBAN_TEMPLATES).format(value)
        out.append(Labelled(text, "iban", value, "IBAN (grouped in fours or compact)"))
    return out


def _iban_structures() -> dict[str, str]:
    path = stdnum_iban.__file__.replace("iban.py", "iban.dat")
    found = {}
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            match = re.match(r'^([A-Z]{2}) country="[^"]*" bban="([^"]*)"', line)
            if match:
                found[match.group(1)] = match.group(2)
    return found


def _iban(country: str, rnd: random.Random) -> str:
    alphabet = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    bban = ""
    for count, kind in re.findall(r"(\d+)!([nac])", _iban_structures()[country]):
        chars = alphabet.get(kind, alphabet["n"] + alphabet["a"])
        bban += "".join(rnd.choice(chars) for _ in range(int(count)))
    return country + stdnum_iban.calc_check_digits(country + "00" + bban) + bban


# Benign templates: "{N}" is N random digits, "{a-b}" a number from a to b, "{x|y}" one of x, y.
BENIGN = (
    "Order #{8} shipped on 2024-0{1-9}-{10-28}.",
    "Your order {3}-{7}-{7} has been dispatched.",
    "Invoice INV-{6} dated {1-28}.{1-12}.2023, total €{10-9999},{2}",
    "Version {0-9}.{0-30}.{0-99} fixes {2-40} bugs; see build {7}.",
    "Upgrade from {1-5}.{0-12} to {6-9}.{0-12}.{0-9} before {2020-2030}.",
    "The meeting moved from {8-17}:{00|15|30|45} to {8-17}:{00|30} on {1-28}/{1-12}/{2020-2026}.",
    "Price: ${1-99},{3}.{2} (was ${1-99},{3}.{2}).",
    "It costs {1-999} {3},{2} € all in.",
    "ISBN 978-{0-9}-{2}-{6}-{0-9}, {100-900} pages.",
    "ISBN {3} {1} {3} {5} {1}",
    "Tracking number: 1Z{3}AA1{10}",
    "Tracking: {4} {4} {4} {4} {4} {2}",
    "Parcel {2} {3} {3} {3} DE was delivered.",
    "From {1900-1999} to {2000-2024} the population rose from {1-9} {3} {3} to {10-99} {3} {3}.",
    "The room is {2-9}.{1} m x {2-9}.{2} m, {10-99} m², ceiling {3} cm.",
    "Screen {1920x1080|2560 x 1440|3840×2160} at {60|120|144} Hz, {100-999} nits.",
    "Results: {10-99} {10-99} {10-99} {10-99} (n={100-999}).",
    "Row {1-99}: {3} {3} {3} {3}",
    "Case number {4}-{6} was closed on {1-28} March {2000-2024}.",
    "Timestamp {10} ({2001-2030}-0{1-9}-1{0-9}T{10-23}:{2}:{2}Z)",
    "Lat {10-89}.{6}, long -{10-179}.{6}",
    "Pages {1-400}-{401-900}, vol. {1-60}, no. {1-12} ({1950-2024}).",
    "Call the function {2-9} times with n = {6} and seed {9}.",
    "I bought a gift card for ${10-200} on order {9}.",
    "Score card: {2}-{2}, {2}-{2}, {2}-{2}.",
    "Product code {13} (EAN), SKU {6}-{3}.",
    "Account balance: {1-99}.{3}.{3},{2} EUR on {10-28}.{10-12}.{2019-2025}",
    "Flight LH{4} departs {10-23}:{1}5, gate B{2}, seat {1-40}C.",
    "Serial no. {4}-{4}-{4}, firmware {1-9}.{2}.{4}",
    "{1-9}{2} {3} {3} downloads in {2015-2024}",
    "Temperature {10-40}.{1} °C, pressure {950-1050} hPa, humidity {10-99} %.",
    "Ticket #{5} — reopened {2} times, last update {1-12}/{1-28}/{2}.",
)
_FIELD = re.compile(r"\{([^}]*)\}")


def _fill(template: str, rnd: random.Random) -> str:
    def one(match: re.Match[str]) -> str:
        field: str = match.group(1)
        if "|" in field:
            return rnd.choice(field.split("|"))
        if "-" in field:
            low, high = field.split("-")
            return str(rnd.randint(int(low), int(high)))
        return "".join(rnd.choice("0123456789") for _ in range(int(field)))

    return _FIELD.sub(one, template)


def benign_texts(seed: int = 71, count: int = 600) -> list[str]:
    """Number-heavy text with no personal data: what a shop, a changelog, a timetable or a
    lab report says."""
    rnd = random.Random(seed)
    return [_fill(rnd.choice(BENIGN), rnd) for _ in range(count)]
