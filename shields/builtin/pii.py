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

How text is scanned, cheaply and incrementally:

- Every entity but e-mail contains an ASCII digit, so the scanner jumps from digit run to digit
  run (one C-level regex search), and prose without digits costs nothing more than that search;
  short numbers on their own ("in 2023,") are passed by one more regex match. A run yields a
  few candidate *starts* (the run itself at a word boundary, a "+" or "(" just before it, the
  two letters of an IBAN country code, the left end of a hex-and-colon run for IPv6), and the
  recognizers are tried at each start in a fixed priority order: card, SSN, IPv4, IBAN, IPv6,
  phone. The first that accepts wins and the scan resumes after its match.
- E-mail addresses are found from their "@" (``str.find``), looking back for the local part.
- A recognizer looks at no more than a fixed number of characters from its start (its *reach*,
  see ``REACH``). In a stream, when it would need a character that has not arrived yet, it
  raises ``_NeedMore`` and the start is tried again on the next feed; the scanner keeps only the
  text from the oldest undecided position (plus a little context before it). So a stream, in
  any chunking, gives exactly the whole-text findings, each as soon as it is decidable and never
  later than ``max_match`` normalized characters past its first character.

Adaptive hold-back (``Scanner.open_from``): every entity is a run of the characters it can
contain, so text is held only from where such a run could still begin: the first undecided
digit run, less the two characters of a "+(" lead or an IBAN country code, and less the
hex-and-colon run before it (IPv6); and the run of local-part characters at the end of the
text (or before an undecided "@"), which a later "@" would make an e-mail address — in prose,
the last word.

The built-in patterns run on Python's ``re``: each is anchored at a start (``match``, never a
search over the text) and every repetition is bounded or over a class disjoint from what follows
it, so no pattern can backtrack more than a small constant per start. Policy files supply no
patterns to this shield (only context words, escaped literally).
"""

from __future__ import annotations

import enum
import ipaddress
import itertools
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Annotated, Literal, NamedTuple, get_args

import phonenumbers
from pydantic import AfterValidator, Field, field_validator
from stdnum import iban as stdnum_iban

from shields.base import Chunk, Finding, Scanner, Shield
from shields.builtin.pii_context import (
    CONTEXT_AFTER,
    CONTEXT_BEFORE,
    DEFAULT_CARD_CONTEXT,
    DEFAULT_PHONE_CONTEXT,
    NATIONAL_REGIONS,
)
from shields.normalize import StreamNormalizer, ascii_bytes, normalize
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

Entity = Literal["email", "phone", "credit_card", "iban", "us_ssn", "ip_address"]
ENTITIES: tuple[Entity, ...] = get_args(Entity)
DEFAULT_PLACEHOLDERS: dict[Entity, str] = {entity: f"[{entity.upper()}]" for entity in ENTITIES}

# Longest e-mail parts accepted (RFC 5321 allows 64 for the local part; 100 for the domain is a
# practical cap well above real addresses). They bound how far the scanner must look.
EMAIL_LOCAL_MAX = 64
EMAIL_DOMAIN_MAX = 100
# Longest phone number text from its first character, extension included.
PHONE_MAX = 40
# How far past a candidate's first character each recognizer may need to see (its own text plus
# the look-ahead that tells where it ends). ``max_match`` is the largest over enabled entities.
# Separators an IBAN may be written with between its groups ("de89 3704 ...", "fr76 30006 00001
# 12345678901 89", "de89-3704-..."), at most: 34 characters in groups of two.
IBAN_SEPARATORS_MAX = 16
REACH: dict[Entity, int] = {
    # local part, "@", domain, and one character past the longest domain run.
    "email": EMAIL_LOCAL_MAX + 1 + EMAIL_DOMAIN_MAX + 1,
    # The number, the character after it, and the context window after it: a number that is a
    # phone number only if a phone word follows it waits for that window.
    "phone": PHONE_MAX + 1 + CONTEXT_AFTER,
    # 4-4-4-4-3 plus separators is 23 characters, plus the one after it, and the context
    # window after it (a 12-digit Maestro number is a card only next to a card word).
    "credit_card": 24 + CONTEXT_AFTER,
    # 34 characters and their separators, plus the one after them.
    "iban": 34 + IBAN_SEPARATORS_MAX + 1,
    # 123-45-6789 and two characters after it ("-1" would make it part of a longer number).
    "us_ssn": 13,
    # An IPv6 text is at most 45 characters; a run one longer is rejected, plus the one after.
    "ip_address": 47,
}

_CONTEXT_BEFORE = CONTEXT_BEFORE
# The context window after a number ends with its sentence.
_SENTENCE_END = re.compile(r"[.!?\n]")
# Characters kept before the oldest undecided position: context words, the back-reach of a
# start from its digit run (IPv6: 45) and an e-mail local part.
_KEEP_BEFORE = 128
_TRIM_SLACK = 1024  # trim the buffer only when this much is droppable: slicing costs a copy

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"  # hyphen, dashes, minus sign
# Digits to 0x01 (and 0x01 itself to 0x02) over ``ascii_bytes``: the next digit is then one
# ``bytes.find``, in C, where a regex search for [0-9] runs in Python's engine.
_DIGITS_TO_MARK = bytes.maketrans(b"0123456789\x01", b"\x01" * 10 + b"\x02")
# Digits to "@": whether a text holds a digit or an "@" is then one ``bytes.find``, in C (UTF-8
# never puts an ASCII byte inside a multi-byte character).
_TRIGGERS_TO_AT = bytes.maketrans(b"0123456789", b"@" * 10)
_DIGIT_RUN = re.compile(r"[0-9]{1,21}")
_DIGITS = re.compile(r"[0-9]*")
_LONE = re.compile(rf"[0-9]{{1,6}}(?![0-9:]|[ .\-/(){_DASHES}]{{1,3}}[0-9(])")
_JOINERS = frozenset("-/," + _DASHES)
_NUMBER_JOINERS = frozenset("-." + _DASHES)
_HEX_COLON = frozenset("0123456789abcdef:.")
# What may come right before a digit run and still be part of the entity (``_starts``): the
# two letters of an IBAN's country code, a phone number's "+" or "(".
_LEADS = frozenset("abcdefghijklmnopqrstuvwxyz+(")
_CARD_SEPS = frozenset(" -." + _DASHES)  # "4111.1111.1111.1111" too
# ``(?:...)`` pieces below are each bounded; see the module docstring on backtracking.
_SSN = re.compile(rf"([0-9]{{3}})([ \-{_DASHES}])([0-9]{{2}})\2([0-9]{{4}})")
_SSN_PLAIN = re.compile(r"[0-9]{9}")
_SSN_ALPHABET = re.compile(rf"[0-9 \-{_DASHES}]{{0,13}}")
_SSN_CONTEXT = re.compile(
    r"(?<!\w)(?:ssn|ss#|social security(?: number| no\.?)?)(?:\W+(?:is|was|number|no))*\W{0,3}$"
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}(?!\w)(?!\.[0-9])")
_IPV4_ALPHABET = re.compile(r"[0-9.]{0,17}")
_VERSION_CONTEXT = re.compile(
    r"(?:(?<!\w)(?:v|ver|version|release|build|firmware|bump(?:ed)? to|upgraded? to|"
    r"updated? to|section|sec|clause|chapter|paragraph|figure|table)[.:]?|§|[<>=~!]=?|<<|>>)"
    r" ?\(? ?$"
)
_IPV6_RUN = re.compile(r"[0-9a-f:.]{0,46}")
_IBAN_COMPACT = re.compile(r"[a-z0-9]{0,35}")
_IBAN_GROUP = re.compile(r"[a-z0-9]{1,13}")
_IBAN_SEPS = frozenset(" -" + _DASHES)
_IBAN_GROUP_MAX = 12  # "fr76 30006 00001 12345678901 89": a French account number is 11
_PHONE = re.compile(
    rf"""
    (?P<lead>\+\(?|\(\+?)?
    (?P<body>[0-9]{{1,15}}(?:[\ .\-/(){_DASHES}]{{1,3}}[0-9]{{1,15}}){{0,7}})
    (?P<close>\))?
    (?P<ext>\ ?(?:x|ext\.?|extension|\#)\ ?[0-9]{{1,6}})?
    (?!\w)
    """,
    re.VERBOSE,
)
_PHONE_ALPHABET = re.compile(rf"[0-9 +().\-/#{_DASHES}]{{0,{PHONE_MAX + 1}}}")
_PHONE_SPLIT = re.compile(r"([0-9]+)")
_PARENTHESIZED = re.compile(r"\(\+?[0-9]{1,5}\)")
_EMAIL_LOCAL_REVERSED = re.compile(rf"[\w.%+\-]{{1,{EMAIL_LOCAL_MAX + 1}}}")
# The same characters from the end of the text back (reversed), as ``open_from`` holds them.
_LOCAL_RUN = re.compile(rf"[\w.%+\-]{{0,{EMAIL_LOCAL_MAX + 1}}}")
_EMAIL_DOMAIN_RUN = re.compile(rf"[\w.\-]{{0,{EMAIL_DOMAIN_MAX + 1}}}")
_EMAIL_DOMAIN = re.compile(
    r"(?:[^\W_](?:[\w\-]{0,61}[^\W_])?\.)+(?:[^\W\d_]{2,24}|xn--[a-z0-9\-]{1,59})"
)


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
        self.regions = tuple(dict.fromkeys(spec.phone_regions))
        for region in self.regions:
            # libphonenumber loads a region's metadata on first use (10-20 ms): at policy load
            # rather than in the first request that mentions a number.
            phonenumbers.PhoneMetadata.metadata_for_region(region)
        self.phone_strict = spec.phone_strict
        self.phone_context = _context_pattern(spec.phone_context)
        self.card_context = _context_pattern(spec.card_context)
        if not self.phone_strict:
            for region in NATIONAL_REGIONS:
                phonenumbers.PhoneMetadata.metadata_for_region(region)
        self.numeric = bool(self.entities - {"email"})  # anything found from digit runs
        self.email = "email" in self.entities
        self.phone = "phone" in self.entities
        self.iban = "iban" in self.entities
        self.ipv6 = "ip_address" in self.entities
        # Recognizers tried at a digit run's own start, in priority order.
        kinds = {"c": "credit_card", "s": "us_ssn", "4": "ip_address", "6": "ip_address"}
        self.digit_kinds = "".join(k for k, e in kinds.items() if e in self.entities) + (
            "p" if self.phone else ""
        )
        self._max_match = max(REACH[entity] for entity in self.entities)

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _PiiScanner(self)

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
    alternatives = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)")


class _NeedMore(Exception):
    """A recognizer needs characters that have not arrived yet."""


class _PiiScanner(Scanner):
    __slots__ = (
        "_at",
        "_base",
        "_buf",
        "_done",
        "_final",
        "_n",
        "_normalizer",
        "_pos",
        "_shield",
        "_tried",
    )

    def __init__(self, shield: PiiShield) -> None:
        self._shield = shield
        self._buf = ""  # normalized text from global offset ``_base``
        self._base = 0
        self._n = 0  # len(_buf) during a scan
        self._final = False
        self._pos = 0  # next global offset to look for a digit run from
        self._at = 0  # next global offset to look for an "@" from
        self._done = 0  # end of the last accepted digit-run match: no start before it
        self._tried = -1  # the last start tried (two digit runs can share a start)
        self._normalizer = StreamNormalizer()  # the text's, during a scan

    def feed(self, chunk: Chunk) -> list[Finding]:
        text = chunk.norm
        if not text:
            return []
        end = self._base + len(self._buf)
        self._buf += text
        if (
            self._pos == end
            and self._at == end
            and b"@" not in text.encode("utf-8", "surrogatepass").translate(_TRIGGERS_TO_AT)
        ):
            # Nothing pending and no digit or "@" in the new text: nothing can be found yet.
            # Streams mostly arrive like this, a few characters at a time.
            self._pos = self._at = end + len(text)
            if len(self._buf) > 4 * _KEEP_BEFORE:  # keep the copy in ``+=`` above short
                self._buf = self._buf[-_KEEP_BEFORE:]
                self._base = self._pos - _KEEP_BEFORE
            return []
        return self._scan(chunk.normalizer)

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        self._final = True
        return self._scan(normalizer)

    def open_from(self, end: int, window: int) -> int:
        shield = self._shield
        if self._pos == end and self._at == end and shield.email:
            # Nothing undecided (prose): the local-part run at the end of the text, found in C
            # on the reversed tail. The lead ("+(", a country code) and hex-colon runs below
            # hold no more than it unless the character before it is a "(" or a ":" (every
            # other character of theirs is a local-part one): then the general case.
            buf = self._buf
            found = _LOCAL_RUN.match(buf[: -EMAIL_LOCAL_MAX - 2 : -1])
            assert found is not None  # it matches the empty string
            run = found.end()
            before = len(buf) - run - 1
            if run > EMAIL_LOCAL_MAX or before < 0 or buf[before] not in "(:":
                return end - run
        at = end
        if shield.numeric:
            # Starts of an undecided digit run, or of one still to come (``_starts``).
            pos = self._pos
            lead = self._run_start(pos, _LEADS.__contains__, 2)  # "+(" or an IBAN's country
            if shield.ipv6:
                lead = min(lead, self._run_start(pos, _HEX_COLON.__contains__, 46))
            at = min(at, max(lead, self._done))
        if shield.email:
            # The local part before an undecided "@", or before one still to come.
            local = self._run_start(end, _is_local_char, EMAIL_LOCAL_MAX + 1)
            if self._at < end:
                local = min(local, self._run_start(self._at, _is_local_char, EMAIL_LOCAL_MAX + 1))
            at = min(at, local)
        return at

    def _run_start(self, stop: int, member: Callable[[str], bool], reach: int) -> int:
        """Where the run of ``member`` characters that ends at global offset ``stop`` starts,
        at most ``reach`` characters back."""
        buf, base = self._buf, self._base
        i = stop - base
        low = max(0, i - reach)
        while i > low and member(buf[i - 1]):
            i -= 1
        return base + i

    def _scan(self, normalizer: StreamNormalizer) -> list[Finding]:
        shield = self._shield
        self._n = len(self._buf)
        self._normalizer = normalizer
        found: list[tuple[Entity, int, int]] = []  # global normalized offsets
        if shield.numeric:
            self._scan_numeric(found)
        else:
            self._pos = self._base + self._n
        if shield.email:
            self._scan_email(found)
        else:
            self._at = self._base + self._n
        drop = min(self._pos, self._at) - _KEEP_BEFORE - self._base
        if drop > _TRIM_SLACK:
            self._buf = self._buf[drop:]
            self._base += drop
        if not found:
            return []
        return [
            shield.entity_finding(entity, *normalizer.orig_span(start, end))
            for entity, start, end in found
        ]

    # ---- characters

    def _char(self, i: int) -> str:
        """The character at buffer index ``i``; "" past the end of a finished text."""
        if i < self._n:
            return self._buf[i]
        if self._final:
            return ""
        raise _NeedMore

    def _is_word(self, i: int) -> bool:
        return _word_or(self._char(i), "")

    def _decidable(self, start: int, run_end: int, reach: int) -> None:
        """Raises ``_NeedMore`` unless the candidate at ``start`` can be decided now.

        ``run_end`` is where the characters the recognizer's pattern can consume stop; the
        pattern peeks at most two characters past them, and never reads past ``start + reach``.
        """
        if not (self._final or self._n >= start + reach or run_end + 2 <= self._n):
            raise _NeedMore

    # ---- entities found from digit runs

    def _scan_numeric(self, found: list[tuple[Entity, int, int]]) -> None:
        buf, base = self._buf, self._base
        i = self._pos - base
        find_digit = ascii_bytes(buf).translate(_DIGITS_TO_MARK).find
        while True:
            digit = find_digit(b"\x01", i)
            if digit < 0:
                self._pos = base + self._n
                return
            # Most numbers in prose are short and alone ("in 2023,"): the quick way past them.
            # (Unless letters before one may be an IBAN's country code, "gb82west...", or a
            # colon or dot an IPv6 address's, "::2".)
            lone = _LONE.match(buf, digit)
            if (
                lone is not None
                and (lone.end() + 4 <= self._n or self._final)
                and not (digit > 0 and ("a" <= buf[digit - 1] <= "z" or buf[digit - 1] in ":."))
            ):
                i = lone.end()
                continue
            tried = self._tried
            try:
                for start, kinds in self._starts(digit):
                    if base + start < self._done or base + start <= tried:
                        continue
                    tried = base + start
                    hit = self._recognize(start, kinds)
                    if hit is not None:
                        entity, end = hit
                        found.append((entity, base + start, base + end))
                        self._done = base + end
                        break
            except _NeedMore:
                self._pos = base + digit  # this run is tried again on the next feed
                return
            self._tried = tried
            run = _DIGITS.match(buf, digit)
            assert run is not None
            if run.end() == self._n and not self._final:
                # The run may go on in the next chunk: look at it again from its start then,
                # as a whole text would (its starts are not tried twice).
                self._pos = base + digit
                return
            i = max(run.end(), self._done - base)

    def _starts(self, digit: int) -> list[tuple[int, str]]:
        """Candidate starts for the digit run at ``digit``, in text order, each with the
        recognizers to try there in priority order (c: card, s: SSN, 4: IPv4, b: IBAN,
        6: IPv6, p: phone)."""
        buf, shield = self._buf, self._shield
        before = buf[digit - 1] if digit > 0 else " "
        two = buf[digit - 2] if digit > 1 else " "
        starts: list[tuple[int, str]] = []
        if before.isalnum() or before == "_":
            # Inside a word: only an IBAN's country code ("de89") or the hex digits of an IPv6
            # address ("fe80::") can start before the digit.
            if shield.ipv6 and before in _HEX_COLON:
                self._ipv6_start(digit, starts)
            if (
                shield.iban
                and "a" <= before <= "z"
                and "a" <= two <= "z"
                and (digit == 2 or not _is_word_char(buf[digit - 3]))
            ):
                if starts and starts[0][0] == digit - 2:
                    starts[0] = (digit - 2, "b6")
                else:
                    starts.append((digit - 2, "b"))
                    starts.sort()
            return starts
        if before in ":.":
            if shield.ipv6:
                self._ipv6_start(digit, starts)
            if two.isdigit():
                return starts  # "3.14", "10:30": the rest of a number that started before
        elif before in _JOINERS and two.isalnum():
            return starts  # "2023-10", "build-1234": the rest of a number or identifier
        elif before in _JOINERS:
            return starts  # "-2147483647": a minus sign; no entity starts with one
        elif shield.phone and before in "+(":
            # "+1 ...", "(07) ...", "(+44) ...": the lead is part of the number.
            edge = digit - 1
            if edge > 0 and buf[edge - 1] in "+(":
                edge -= 1
            if edge == 0 or not _is_word_char(buf[edge - 1]):
                starts.append((edge, "p"))
        # A short number on its own ("in 2023,", "page 12") is none of the entities: skip the
        # recognizers, once enough of what follows it is known.
        lone = _LONE.match(buf, digit)
        if lone is None or not (self._final or lone.end() + 4 <= self._n):
            kinds = shield.digit_kinds
            if before == " " and two.isdigit() and self._base + digit - 1 != self._done:
                # In the middle of a row of numbers ("12 4111 ...", "3704 0044 0532"): a phone
                # number starts at the row's start, or right after the one before it.
                kinds = kinds.replace("p", "")
            starts.append((digit, kinds))
        return starts

    def _ipv6_start(self, digit: int, starts: list[tuple[int, str]]) -> None:
        """The left end of the hex-and-colon run around a digit: "fe80::1", "::ffff:1.2.3.4"."""
        buf = self._buf
        start = digit
        colon = False
        while start > 0 and digit - start < 45 and buf[start - 1] in _HEX_COLON:
            start -= 1
            colon = colon or buf[start] == ":"
        if buf[digit - 1] == "." and not colon:
            return  # dots come only after a colon in an IPv6 address
        if start < digit and (start == 0 or not _word_or(buf[start - 1], ":.")):
            starts.append((start, "6"))

    def _recognize(self, start: int, kinds: str) -> tuple[Entity, int] | None:
        for kind in kinds:
            entity, recognizer = _RECOGNIZERS[kind]
            end = recognizer(self, start)
            # "5551234567@sms.example": the digits are the local part of an e-mail address.
            if end is not None and self._char(end) != "@":
                return entity, end
        return None

    def _card(self, start: int) -> int | None:
        buf = self._buf
        run = _DIGIT_RUN.match(buf, start)
        assert run is not None
        end = run.end()
        size = end - start
        if size > 19:
            return None
        if size >= 12:
            if self._is_word(end):
                return None
            return end if self._is_card(buf[start:end], start, end) else None
        if size != 4:
            self._char(end)  # more digits may be on their way
            return None
        sep = self._char(end)
        if sep not in _CARD_SEPS:
            return None
        if start > 1 and buf[start - 1] == sep and buf[start - 2].isdigit():
            return None  # "1288 1928 2568 3208 ...": a row of numbers, not a card
        sizes, ends = [4], [end]
        while len(sizes) < 5 and self._char(end) == sep and self._char(end + 1).isdigit():
            longest = _CARD_GROUP_MAX[len(sizes)]
            group = _DIGIT_RUN.match(buf, end + 1, end + 2 + longest)
            assert group is not None
            size = group.end() - end - 1
            if size > longest:
                break  # not a card group: what came before may still be a card
            self._char(group.end())  # the group may still be growing
            sizes.append(size)
            end = group.end()
            ends.append(end)
        for count in range(len(sizes), 2, -1):
            stop = ends[count - 1]
            if not _card_layout(sizes[:count]) or self._is_word(stop):
                continue
            if self._is_card(buf[start:stop].replace(sep, ""), start, stop):
                return stop
        return None

    def _is_card(self, digits: str, start: int, end: int) -> bool:
        """A card number by its issuer and length alone, or a Luhn-valid number of 12-19 digits
        with a card word next to it (Maestro numbers have any length from 12 to 19)."""
        if _plausible_card(digits):
            return True
        return _card_with_context(digits) and self._context(self._shield.card_context, start, end)

    def _context(self, pattern: re.Pattern[str] | None, start: int, end: int) -> bool:
        """Whether a context word comes just before ``start`` or just after ``end``, in the
        same sentence. Raises ``_NeedMore`` while the window after ``end`` is still arriving:
        the number is undecided (held) until the window has passed, and decided the same way
        in every chunking of the text."""
        if pattern is None:
            return False
        buf = self._buf
        if pattern.search(buf, max(0, start - _CONTEXT_BEFORE), start) is not None:
            return True
        stop = min(end + CONTEXT_AFTER, self._n)
        sentence = _SENTENCE_END.search(buf, end, stop)
        if sentence is not None:
            stop = sentence.start()
        elif stop < end + CONTEXT_AFTER and not self._final:
            raise _NeedMore
        return pattern.search(buf, end, stop) is not None

    def _ssn(self, start: int) -> int | None:
        buf = self._buf
        run = _SSN_ALPHABET.match(buf, start)
        assert run is not None
        self._decidable(start, run.end(), REACH["us_ssn"])
        if start > 0 and buf[start - 1] in _NUMBER_JOINERS:
            return None  # "1-123-45-6789": part of a longer number
        match = _SSN.match(buf, start)
        if match is not None:
            end = match.end()
            after = self._char(end)
            if _word_or(after, "") or (after in _NUMBER_JOINERS and self._char(end + 1).isdigit()):
                return None
            area, _, group, serial = match.groups()
            return end if _valid_ssn(area, group, serial) else None
        plain = _SSN_PLAIN.match(buf, start)
        if plain is None or self._is_word(plain.end()):
            return None
        # Nine bare digits are an SSN only when the text says so just before them.
        if not _SSN_CONTEXT.search(buf, max(0, start - _CONTEXT_BEFORE), start):
            return None
        digits = plain.group()
        return plain.end() if _valid_ssn(digits[:3], digits[3:5], digits[5:]) else None

    def _ipv4(self, start: int) -> int | None:
        buf = self._buf
        run = _IPV4_ALPHABET.match(buf, start)
        assert run is not None
        self._decidable(start, run.end(), REACH["ip_address"])
        if start > 0 and buf[start - 1] == ".":
            return None  # "1.2.3.4.5" read from its second part
        match = _IPV4.match(buf, start)
        if match is None:
            return None
        # "version 1.2.3.4", "(>= 1.2.3.4)", "section 6.7.2.1" are not addresses.
        if _VERSION_CONTEXT.search(buf, max(0, start - 24), start):
            return None
        address = ipaddress.IPv4Address(match.group())  # the pattern admits valid octets only
        return None if _not_personal(address) else match.end()

    def _ipv6(self, start: int) -> int | None:
        buf = self._buf
        if start > 0 and _word_or(buf[start - 1], ":."):
            return None
        run = _IPV6_RUN.match(buf, start)
        assert run is not None
        end = run.end()
        if end - start > 45 or self._is_word(end):  # too long, or "fe80::1g"
            return None
        text = buf[start:end].rstrip(".")
        if text.endswith(":") and not text.endswith("::"):
            text = text[:-1]  # "at ::1: see" - the colon is punctuation
        # "::" alone, "a::b" in code: an address written in prose has a digit.
        if text.count(":") < 2 or not any(c.isdigit() for c in text):
            return None
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            return None
        return None if _not_personal(address) else start + len(text)

    def _iban(self, start: int) -> int | None:
        buf = self._buf
        # "de89 3704 0044 0532 0130 00" (groups of four), "fr76 30006 00001 12345678901 89"
        # (the bank's own groups), "de89-3704-..." or "de89370400440532013000"
        if not self._char(start + 3).isdigit():
            return None
        ends: list[int] = []
        sep = self._char(start + 4)
        if sep in _IBAN_SEPS:
            end, count, seps = start + 4, 4, 0
            while seps < IBAN_SEPARATORS_MAX and self._char(end) == sep:
                if not _is_alnum(self._char(end + 1)):
                    break
                group = _IBAN_GROUP.match(buf, end + 1, end + 2 + _IBAN_GROUP_MAX)
                assert group is not None
                size = group.end() - end - 1
                if size > _IBAN_GROUP_MAX or count + size > 34:
                    break  # a longer word or number after the IBAN
                if _is_alnum(self._char(group.end())):
                    break  # the group may still be growing; or a word too long to be one
                end, count, seps = group.end(), count + size, seps + 1
                if count >= 15:
                    ends.append(end)
        else:
            run = _IBAN_COMPACT.match(buf, start + 4)
            assert run is not None
            end = run.end()
            if end - start > 34 or self._is_word(end):
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
            if _mod97(compact) and stdnum_iban.is_valid(compact, check_country=False):
                return end
        return None

    def _phone(self, start: int) -> int | None:
        buf = self._buf
        if start > 0 and buf[start - 1] in "+(":
            return None  # the "+" or "(" before it was tried as the start
        run = _PHONE_ALPHABET.match(buf, start)
        assert run is not None
        run_end = run.end()
        if run_end < self._n and buf[run_end] in "xe":
            run_end += len(" extension 123456")  # an extension may follow
        self._decidable(start, run_end, REACH["phone"])
        match = _PHONE.match(buf, start, min(self._n, start + PHONE_MAX + 1))
        if match is None:
            return None
        text = match.group()
        # At most one pair of parentheses, around one group: "(07) 5331", "+1 (415) 555".
        if text.count("(") != text.count(")") or text.count("(") > 1:
            return None
        if "(" in text and not _PARENTHESIZED.search(text):
            return None
        lead = match.group("lead") or ""
        pieces = _PHONE_SPLIT.split(match.group("body"))
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
        if self._spread_out(start, end):
            return None
        phone = _PhoneText(
            groups,
            seps,
            international="+" in lead,
            paren_first="(" in lead,
        )
        shield = self._shield
        decision = _is_phone(shield, phone)
        if decision is _Phone.YES or (
            decision is _Phone.IF_CONTEXT and self._context(shield.phone_context, start, end)
        ):
            return end
        return None

    def _spread_out(self, start: int, end: int) -> bool:
        """Whether a space inside the span stands for a run of whitespace in the original:
        numbers in aligned columns ("316     132    9631") are not one number."""
        normalizer, base, buf = self._normalizer, self._base, self._buf
        space = buf.find(" ", start, end)
        while space >= 0:
            if normalizer.orig_start(base + space + 1) - normalizer.orig_start(base + space) > 1:
                return True
            space = buf.find(" ", space + 1, end)
        return False

    # ---- e-mail addresses, found from their "@"

    def _scan_email(self, found: list[tuple[Entity, int, int]]) -> None:
        buf, base = self._buf, self._base
        i = self._at - base
        while True:
            at = buf.find("@", i)
            if at < 0:
                self._at = base + self._n
                return
            try:
                span = self._email(at)
            except _NeedMore:
                self._at = base + at
                return
            if span is not None:
                found.append(("email", base + span[0], base + span[1]))
            i = at + 1

    def _email(self, at: int) -> tuple[int, int] | None:
        buf = self._buf
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
        self._char(run.end())  # the domain may still be arriving
        domain = buf[at + 1 : run.end()].rstrip(".-")
        if not _EMAIL_DOMAIN.fullmatch(domain):
            return None
        return start, at + 1 + len(domain)


_Recognizer = Callable[[_PiiScanner, int], "int | None"]
_RECOGNIZERS: dict[str, tuple[Entity, _Recognizer]] = {
    "c": ("credit_card", _PiiScanner._card),
    "s": ("us_ssn", _PiiScanner._ssn),
    "4": ("ip_address", _PiiScanner._ipv4),
    "6": ("ip_address", _PiiScanner._ipv6),
    "b": ("iban", _PiiScanner._iban),
    "p": ("phone", _PiiScanner._phone),
}
# Longest digit group after the first one, by position: 4-6-5 and 4-4-4-4-3 layouts.
_CARD_GROUP_MAX = {1: 6, 2: 5, 3: 4, 4: 3}


# --------------------------------------------------------------------------- validation


def _word_or(char: str, extra: str) -> bool:
    return char.isalnum() or char == "_" or (bool(char) and char in extra)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _is_local_char(char: str) -> bool:
    """A character of an e-mail local part (``_EMAIL_LOCAL_REVERSED``)."""
    return char.isalnum() or char in "_.%+-"


def _is_alnum(char: str) -> bool:
    return "a" <= char <= "z" or "0" <= char <= "9"


@lru_cache(maxsize=1024)
def _not_personal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Addresses that name no one's host: 127.0.0.1, 0.x.x.x, ::1, multicast, netmasks and
    other reserved space (255.255.255.0)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return _not_personal(address.ipv4_mapped)  # ::ffff:192.168.1.1
        # (Most of the IPv6 space is "reserved", that is unallocated: it still names hosts.)
        return address.is_loopback or address.is_unspecified or address.is_multicast
    return (
        address.is_loopback
        or address.is_unspecified
        or address.packed[0] == 0  # 0.0.0.0/8, "this network"
        or address.is_multicast
        or address.is_reserved
    )


def _mod97(iban: str) -> bool:
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


def _card_layout(sizes: list[int]) -> bool:
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


def _plausible_card(digits: str) -> bool:
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


def _card_with_context(digits: str) -> bool:
    """Luhn-valid, 12-19 digits, and an industry digit of banking (1-6) or Maestro's 0604:
    a card number when a card word says so."""
    return (
        12 <= len(digits) <= 19
        and (digits[0] in "123456" or digits.startswith("0604"))
        and _luhn(digits)
    )


def _valid_ssn(area: str, group: str, serial: str) -> bool:
    """SSA rules: no area 000, 666 or 900-999, no group 00, no serial 0000."""
    return area != "000" and area != "666" and area[0] != "9" and group != "00" and serial != "0000"


class _PhoneText(NamedTuple):
    """A phone-number candidate as written: its digit groups and the separators between them."""

    groups: list[str]
    seps: list[str]
    international: bool  # written with "+country"
    paren_first: bool  # the first group is in parentheses: "(07) 5331 0577"


class _Phone(enum.Enum):
    """What a number's text says of it: a phone number, not one, or one if a phone word is
    next to it (the scanner then looks, before it and after it)."""

    NO = enum.auto()
    YES = enum.auto()
    IF_CONTEXT = enum.auto()


def _is_phone(shield: PiiShield, phone: _PhoneText) -> _Phone:
    groups, seps = phone.groups, phone.seps
    digits = "".join(groups)
    strict = shield.phone_strict
    if phone.international:
        # "+1-944-435-4352": an explicit country code, and a length that country dials (and
        # no fewer than 8 digits in all: "+3.140000" is a signed number).
        check = _valid_international if strict else _possible_international
        return _Phone.YES if len(digits) >= 8 and check(digits) else _Phone.NO
    # Without a phone word, what is left when the number's shape does not tell.
    otherwise = _Phone.NO
    # 00 is the international call prefix in most of the world, 011 in North America.
    for prefix in ("00", "011"):
        rest = digits[len(prefix) :]
        if digits.startswith(prefix) and rest[:1] not in ("", "0"):
            if _valid_international(rest):
                return _Phone.YES
            if not strict and _possible_international(rest):
                if len(groups) >= 3:
                    return _Phone.YES
                otherwise = _Phone.IF_CONTEXT
    if not _well_grouped(phone) or _looks_like_date(groups, seps) or _looks_like_amount(phone):
        return otherwise
    # Valid in one of the regions, and grouped the way that region writes its numbers
    # ("415-555-2671", "4155552671", but not the range "64040-64044").
    boundaries = _boundaries(groups)
    for region in shield.regions if len(groups) > 1 or len(digits) >= 8 else ():
        written = _national_boundaries(digits, region)
        if written is not None and boundaries <= written:
            return _Phone.YES
    if strict:
        return otherwise
    if _phone_shaped(phone) or _written_nationally(groups, boundaries):
        return _Phone.YES
    # A foreign or unassigned number next to a phone word ("Mobile: 041-412293", "call me at
    # 555-1234", "612 345 678 es mi móvil").
    if 7 <= len(digits) <= 12 and (len(groups) >= 2 or len(digits) >= 8):
        return _Phone.IF_CONTEXT
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


def _well_grouped(phone: _PhoneText) -> bool:
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
    groups = _PHONE_SPLIT.findall(formatted)
    total = sum(map(len, groups))
    return _boundaries(groups) | frozenset(range(total, len(digits) + 1))


def _phone_shaped(phone: _PhoneText) -> bool:
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
        if sep != seps[i + 1] or sep not in ("-", ".", "/", *_DASHES):
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


def _looks_like_amount(phone: _PhoneText) -> bool:
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


register(PiiSpec, PiiShield)
