"""What the ``pii`` shield looks for, as data: one record per entity (``EntityKind``: its name,
reach, default context words) and one per written form of it (``Recognizer``: the function
that reads it, where in the text it can start, its priority). The engine (``pii_scanner``)
finds candidate starts and tries the recognizers of the entities in use there; it knows these
records, not the entities.

Adding a national format is a recognizer function (``pii_recognizers``) and a ``Recognizer``
record below, in its place in ``RECOGNIZERS``; a new entity also adds its name to ``Entity``
and an ``EntityKind`` record (a policy can then select it, and it gets the "[NAME]"
placeholder). What a new recognizer may assume of the engine:

- It is tried at the starts its record names (``Start``), in ``RECOGNIZERS`` order; the first
  that accepts wins and the scan resumes after its match. A match that an "@" follows is the
  local part of an e-mail address and does not count.
- No start is tried after a minus sign or a joiner ("-", "/", ","), and a digit run's own
  start (``Start.DIGIT_RUN``) is not tried inside a word ("abc123"), inside a number that
  started before ("3.14", "10:30") or for a short number on its own (at most 6 digits, not
  followed by a separator and more digits): every entity found there has more than 6 digits
  or separators between its digit groups.
- It reads no further than its entity's ``reach`` from its start.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from shields.builtin import pii_recognizers as recognize
from shields.builtin.pii_context import DEFAULT_CARD_CONTEXT, DEFAULT_PHONE_CONTEXT
from shields.builtin.pii_recognizers import ScanText

__all__ = [
    "AT_SIGN_RECOGNIZERS",
    "DEFAULT_PLACEHOLDERS",
    "ENTITIES",
    "KINDS",
    "REACH",
    "RECOGNIZERS",
    "AtSignRecognizer",
    "Entity",
    "EntityKind",
    "Recognizer",
    "Start",
]

Entity = Literal["email", "phone", "credit_card", "iban", "us_ssn", "ip_address"]
ENTITIES: tuple[Entity, ...] = get_args(Entity)


class Start(enum.Enum):
    """Where, around a run of ASCII digits, a candidate for a recognizer can start."""

    # The run's first digit: "4111 1111 ...", "192.168.1.10", "555-2671".
    DIGIT_RUN = enum.auto()
    # A "+" or "(" (or both) right before the run: "+44 20 ...", "(07) 5331 0577", "(+44) ...".
    LEAD = enum.auto()
    # Two letters right before the run, at a word's start: an IBAN's country code, "de89 ...".
    LETTERS = enum.auto()
    # The left end of the run of hex digits, colons and dots around it: "fe80::1", "::1".
    HEX_COLON = enum.auto()


@dataclass(frozen=True, slots=True)
class Recognizer:
    """One written form of an entity, read from a start found around a digit run."""

    name: str
    entity: Entity
    # (text, start) -> where the entity ends, or None when it is not one there.
    find: Callable[[ScanText, int], int | None]
    starts: frozenset[Start]
    # Whether it is tried at a digit run in the middle of a row of numbers ("12 4111 ...",
    # "3704 0044 0532"): a phone number starts only at the row's start or after another match.
    in_number_rows: bool = True


@dataclass(frozen=True, slots=True)
class AtSignRecognizer:
    """A written form found from an "@" (the scanner holds the run of local-part characters
    before one back, ``pii_recognizers.LOCAL_RUN``)."""

    name: str
    entity: Entity
    # (text, index of the "@") -> the entity's span, or None.
    find: Callable[[ScanText, int], tuple[int, int] | None]


@dataclass(frozen=True, slots=True)
class EntityKind:
    """One kind of personal data, as a policy names it."""

    name: Entity
    # How far past a candidate's first character its recognizers may need to see (look-ahead
    # and context window included): the shield's ``max_match`` is the largest in use.
    reach: int
    # Words that make an ambiguous candidate this entity when next to it (``pii_context``),
    # unless the policy has an option that replaces them (``PiiSpec.phone_context``...).
    context_words: tuple[str, ...] = ()

    @property
    def placeholder(self) -> str:
        return f"[{self.name.upper()}]"


KINDS: tuple[EntityKind, ...] = (
    EntityKind("email", reach=recognize.EMAIL_REACH),
    EntityKind("phone", reach=recognize.PHONE_REACH, context_words=DEFAULT_PHONE_CONTEXT),
    EntityKind("credit_card", reach=recognize.CARD_REACH, context_words=DEFAULT_CARD_CONTEXT),
    EntityKind("iban", reach=recognize.IBAN_REACH),
    EntityKind("us_ssn", reach=recognize.SSN_REACH),
    EntityKind("ip_address", reach=recognize.IP_ADDRESS_REACH),
)

_RUN = frozenset({Start.DIGIT_RUN})
# Priority order: where two recognizers can start at the same place, the earlier one is tried
# first (a card before the phone number its digits would also make).
RECOGNIZERS: tuple[Recognizer, ...] = (
    Recognizer("card", "credit_card", recognize.card, _RUN),
    Recognizer("ssn", "us_ssn", recognize.ssn, _RUN),
    Recognizer("ipv4", "ip_address", recognize.ipv4, _RUN),
    Recognizer("iban", "iban", recognize.iban, frozenset({Start.LETTERS})),
    Recognizer("ipv6", "ip_address", recognize.ipv6, frozenset({Start.DIGIT_RUN, Start.HEX_COLON})),
    Recognizer(
        "phone",
        "phone",
        recognize.phone,
        frozenset({Start.DIGIT_RUN, Start.LEAD}),
        in_number_rows=False,
    ),
)
AT_SIGN_RECOGNIZERS: tuple[AtSignRecognizer, ...] = (
    AtSignRecognizer("email", "email", recognize.email),
)

REACH: dict[Entity, int] = {kind.name: kind.reach for kind in KINDS}
DEFAULT_PLACEHOLDERS: dict[Entity, str] = {kind.name: kind.placeholder for kind in KINDS}
