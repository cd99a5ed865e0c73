"""``pii``: personal data in text — e-mail addresses, phone numbers, payment card numbers, IBANs,
US social security numbers and IP addresses — validated, and blocked or redacted with a typed
placeholder per kind (``[EMAIL]``, ``[CREDIT_CARD]``...).

Validated, not just pattern-matched: a card number must pass the Luhn check with an issuer prefix
and a length card networks use; an IBAN its ISO 7064 mod-97 checksum and its country's length and
format (python-stdnum); an SSN the SSA's area/group/serial rules; an IP address the ``ipaddress``
module (and name somebody's host: not 127.0.0.1, 0.0.0.0, multicast, netmasks); a phone number
must be valid in one of the configured regions by Google's libphonenumber metadata and grouped
the way that region writes it, or carry a "+country" code of a length that country dials, or be
written as phone numbers are (three or more groups of 2-4 digits), or follow a phone word such
as "call" or "fax". Dates, amounts with thousands separators, number sequences and version
numbers are told apart from phone numbers and addresses.

Which text: the normalized view. NFKC turns full-width and other stylistic digits ("４１１１")
into ASCII, as the normalizer does the digits of other scripts ("٤١١١", "४१११"), invisible
characters ("4111\u200b1111") disappear and whitespace runs become one
space, so disguises a raw-text matcher would miss are caught; spans are mapped back to the
original characters through the normalizer, so redaction removes the disguise too. Case folding
costs nothing here (addresses and IBANs are case-insensitive), and confusable folding never
makes digits out of letters. The one thing the view hides, a column gap ("316     132    9631"),
is read back from the offset map.

The parts: this module is the policy's side (the spec and the shield); the entities and their
written forms are records (``pii_entities``) over small recognizer functions
(``pii_recognizers``, with the checks of ``pii_checks`` and ``pii_phone``) and context words
(``pii_context``); the incremental scanner that finds candidate starts, holds streams back and
maps spans is ``pii_scanner``. Policy files supply no patterns to this shield (only context
words, escaped literally).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import phonenumbers
from pydantic import AfterValidator, Field, field_validator

from shields.base import Finding, Scanner, Shield
from shields.builtin.pii_context import (
    DEFAULT_CARD_CONTEXT,
    DEFAULT_PHONE_CONTEXT,
    NATIONAL_REGIONS,
)
from shields.builtin.pii_entities import DEFAULT_PLACEHOLDERS, ENTITIES, KINDS, REACH, Entity
from shields.builtin.pii_phone import PhoneRules
from shields.builtin.pii_scanner import PiiScanner, ScanPlan
from shields.normalize import normalize
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = [
    "DEFAULT_CARD_CONTEXT",
    "DEFAULT_PHONE_CONTEXT",
    "DEFAULT_PLACEHOLDERS",
    "ENTITIES",
    "REACH",
    "Entity",
    "PiiShield",
    "PiiSpec",
]


# --------------------------------------------------------------------------- the spec


def _valid_region(code: str) -> str:
    region = code.upper()
    if region not in phonenumbers.SUPPORTED_REGIONS:
        hint = " (the United Kingdom is 'GB')" if region == "UK" else ""
        raise ValueError(
            f"{code!r} is not a region phonenumbers knows: use an ISO 3166-1 alpha-2 code "
            f"such as 'US', 'GB', 'DE'{hint}"
        )
    return region


def _valid_context_word(word: str) -> str:
    folded = normalize(word)[0].strip()
    if not folded:
        raise ValueError(f"{word!r} is empty after normalization")
    return folded


class PiiSpec(ShieldSpecBase):
    type: Literal["pii"] = "pii"
    # Which kinds of personal data to look for.
    entities: list[Entity] = Field(default_factory=lambda: list(ENTITIES), min_length=1)
    # Per-entity redaction text; entities not listed use ``placeholder`` when it is set in the
    # policy, else their typed default ("[EMAIL]", "[PHONE]", ...).
    placeholders: dict[Entity, Annotated[str, Field(max_length=200)]] = Field(default_factory=dict)
    # Regions whose national numbering plans a phone number written without "+country" is
    # checked against (ISO 3166-1 alpha-2).
    phone_regions: list[Annotated[str, AfterValidator(_valid_region)]] = Field(
        default_factory=lambda: ["US"], max_length=300
    )
    # Words that, just before or after a phone-shaped number, make it a phone number even when
    # it is not valid in ``phone_regions`` (a foreign number in a contact line, "612 345 678 es
    # mi móvil"). The defaults are in ``pii_context``.
    phone_context: list[Annotated[str, AfterValidator(_valid_context_word)]] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_CONTEXT), max_length=1000
    )
    # Words that, next to a Luhn-valid number of 12-19 digits whose issuer or length alone does
    # not make it a card (a 12-digit Maestro), make it a card number.
    card_context: list[Annotated[str, AfterValidator(_valid_context_word)]] = Field(
        default_factory=lambda: list(DEFAULT_CARD_CONTEXT), max_length=1000
    )
    # Only numbers libphonenumber says are valid (nationally in ``phone_regions``, or with a
    # country code): no phone-shaped or context-only matches.
    phone_strict: bool = False

    @field_validator("entities")
    @classmethod
    def _no_duplicates(cls, entities: list[Entity]) -> list[Entity]:
        for i, entity in enumerate(entities):
            if entity in entities[:i]:
                raise ValueError(f"{entity!r} is listed twice")
        return entities


# --------------------------------------------------------------------------- the shield


class PiiShield(Shield):
    type_name = "pii"

    def __init__(self, spec: PiiSpec) -> None:
        super().__init__(spec)
        self.entities = frozenset(spec.entities)
        explicit = "placeholder" in spec.model_fields_set
        self.placeholders: dict[Entity, str] = {
            entity: spec.placeholders.get(
                entity, spec.placeholder if explicit else DEFAULT_PLACEHOLDERS[entity]
            )
            for entity in ENTITIES
        }
        regions = tuple(dict.fromkeys(spec.phone_regions))
        for region in regions:
            # libphonenumber loads a region's metadata on first use (10-20 ms): at policy load
            # rather than in the first request that mentions a number.
            phonenumbers.PhoneMetadata.metadata_for_region(region)
        if not spec.phone_strict:
            for region in NATIONAL_REGIONS:
                phonenumbers.PhoneMetadata.metadata_for_region(region)
        # The policy's words replace an entity's own where the spec has an option for them.
        words: dict[Entity, list[str]] = {
            "phone": spec.phone_context,
            "credit_card": spec.card_context,
        }
        contexts = {
            kind.name: _context_pattern(words.get(kind.name, list(kind.context_words)))
            for kind in KINDS
        }
        self.plan = ScanPlan.of(self.entities, contexts, PhoneRules(regions, spec.phone_strict))
        self._max_match = max(REACH[entity] for entity in self.entities)

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return PiiScanner(self.plan, self.entity_finding)

    def entity_finding(self, entity: Entity, start: int, end: int) -> Finding:
        return Finding(
            shield_id=self.id,
            shield_type=self.type_name,
            label=entity,
            action=self.action,
            start=start,
            end=end,
            placeholder=self.placeholders[entity],
            monitor=self.monitor,
        )


def _context_pattern(words: list[str]) -> re.Pattern[str] | None:
    """Any of ``words``, as whole words, literally; None for no words."""
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w)))
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)")


register(PiiSpec, PiiShield)
