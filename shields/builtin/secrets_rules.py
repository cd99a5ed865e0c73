"""The rule type of the ``secrets`` shield and the value checks its rules share.

``shields.builtin.secrets`` holds the vendor-token rules and the engine that runs every rule;
``shields.builtin.secrets_config`` the configuration-credential rules. Both declare rules as
``Rule`` data and judge a matched value with the checks here, which only ever see one match (a
few hundred characters at most), so their cost is bounded per match.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "ASCENDING",
    "PLACEHOLDER_WORDS",
    "REPEATED",
    "Judge",
    "Rule",
    "Thresholds",
    "Validator",
    "generic_value",
    "hex_digest",
    "is_name",
    "random_looking",
    "shannon_entropy",
]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The options that tune the configuration-credential rules."""

    min_entropy: float
    min_entropy_hex: float
    min_length: int
    min_password_length: int = 6


Validator = Callable[[str, Thresholds], bool]
# Judges a value with what came before it in the match (the key, the separator, an opening
# quote): `password = hunter2` in code names a variable, `password = "hunter2"` does not.
Judge = Callable[[str, str, Thresholds], bool]


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` under its own character frequencies."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


# The validators below use Python's `re`: they only ever see one matched secret (at most a few
# hundred characters) and have no nested repetition that could backtrack, so their cost is
# bounded per match, unlike a policy pattern run over a whole text.

# Words that mark a documented example or a template rather than a credential.
PLACEHOLDER_WORDS = re.compile(
    r"example|xxxx|\*\*\*|\.\.\.|your|change|placeholder|redacted|dummy|sample|insert|replace",
    re.IGNORECASE,
)
REPEATED = re.compile(r"(.)\1{5}")  # "aaaaaa", "000000": typed by hand, not generated
# A real generated token almost never holds six consecutive ascending characters.
ASCENDING = re.compile(
    r"012345|123456|234567|345678|456789|abcdef|bcdefg|cdefgh|ABCDEF|BCDEFG|CDEFGH", re.IGNORECASE
)


# A digest's hexadecimal digits use most of the 16 (fewer than 8 in 1 of 10^7 of 32 random).
_MIN_DISTINCT_HEX = 8


def hex_digest(value: str) -> bool:
    """Hexadecimal digits that read as a hash function's output, not a mask or a typed run."""
    value = value.lower()
    return (
        len(set(value)) >= _MIN_DISTINCT_HEX
        and REPEATED.search(value) is None
        and ASCENDING.search(value) is None
    )


def random_looking(body: str, min_bits: float) -> bool:
    """``body`` looks machine-generated: varied characters, no template markers."""
    return (
        shannon_entropy(body) >= min_bits
        and PLACEHOLDER_WORDS.search(body) is None
        and REPEATED.search(body) is None
        and ASCENDING.search(body) is None
    )


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Runs a name is made of: "Ed25519PrivateKey" -> Ed, 25519, Private, Key.
_NAME_PIECE = re.compile(r"[A-Z][a-z]+|[a-z]+|[A-Z]+|[0-9]+")
_WORD_PIECE = re.compile(r"[A-Z]?[a-z]{2,}")
_EMAIL = re.compile(r"[^@]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\.?")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
# Base32 (RFC 4648: one-time password seeds, AWS-style ids): 5 bits a character at most.
_BASE32 = re.compile(r"[A-Z2-7]+=*")
# A UUID: 122 random bits (version 4) in hexadecimal, which its dashes do not enrich. Next to a
# key name it is as good a key as any (`X-API-Key: <uuid>`, `client_secret: <uuid>`); alone it
# is an id, and no rule reads one without a key.
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_PATH_START = ("/", "~/", "./", "../")
_SYMBOLS = frozenset("+/@!#$%^&*~")  # not "_", "-", ".": those join words in identifiers
# Words that make an assigned value a demo ("secret%3Dpassword"), besides the template markers.
_DEMO_WORDS = re.compile(r"password|secret|passwd", re.IGNORECASE)


def is_name(value: str) -> bool:
    """A name in code (``settings.API_TOKEN``, ``ed25519.Ed25519PrivateKey``, ``max_tokens``)
    rather than a literal: made of a few word-like runs. Generated strings switch between
    lower case, upper case and digits every two characters or so."""
    if not _IDENTIFIER.fullmatch(value):
        return False
    pieces = _NAME_PIECE.findall(value)
    if sum(map(len, pieces)) < 3 * len(pieces):
        return False
    if "_" in value or "." in value:
        return True
    # Without separators, a name is a few CamelCase words and at most one acronym
    # (``HTTPSConnectionPool``); a generated string that happens to have long runs
    # (``Ga9RyNQD56FiCdhNUJKJXUYJ``) has more pieces or several capital runs. This keeps 1.6%
    # of random 24-character tokens from passing as names (0.08% still do), 6% at 12.
    capital_runs = sum(1 for piece in pieces if len(piece) >= 3 and piece.isupper())
    if capital_runs < 2 and len(pieces) <= 6:
        return True
    # Longer names are words of three letters and more, one capital each
    # (``BetaManagedAgentsCredentialHostUnreachableErrorObject``); the last may be cut short
    # (a value is judged on its first 64 characters).
    return all(_WORD_PIECE.fullmatch(piece) for piece in pieces[:-1])


_WORDISH = re.compile(r"[a-z]{4}|[A-Z]{4}")
# How far below log2(length) a short value's entropy may be: one repeated character in 8-11.
_SHORT_SLACK = 0.3


def _counts_up(value: str) -> bool:
    """Three characters in a row that count up: "123", "abc", "EFG" (case aside)."""
    codes = [ord(c) for c in value.lower()]
    return any(
        codes[i + 1] == codes[i] + 1 and codes[i + 2] == codes[i] + 2 for i in range(len(codes) - 2)
    )


# A file's name, an archive's or object's key (`build/app_linux.zip`, `report-2024.csv`): what
# an `S3Key` or `ObjectKey` holds. A generated token has no dot before a known extension.
_FILE_NAME = re.compile(
    r"[\w./-]*[A-Za-z0-9_-]\.(?:zip|tar|gz|tgz|bz2|xz|7z|rar|jar|war|whl|deb|rpm|json|ya?ml"
    r"|toml|txt|csv|tsv|log|xml|html?|md|pdf|png|jpe?g|gif|svg|mp[34]|wav|js|ts|py|rb|go|java"
    r"|sh|exe|dll|so|bin|iso|img|parquet|avro)"
)


def _path(value: str) -> bool:
    """A file path. A generated base64 value begins with "/" once in 64: its first segment is
    then long, without a dot, and mixes cases and digits, as no directory's name does."""
    if not value.startswith(_PATH_START):
        return False
    first = value.lstrip("~./").split("/", 1)[0]
    generated = (
        value.startswith("/")
        and len(first) >= 16
        and "." not in first
        and any(c.isdigit() for c in first)
        and any(c.isupper() for c in first)
        and any(c.islower() for c in first)
        and not is_name(first)
    )
    return not generated


def _base32_seed(value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    vowels = sum(c in "AEIOU" for c in letters)
    return (
        len(value) >= 16 and _BASE32.fullmatch(value) is not None and vowels <= 0.3 * len(letters)
    )


def generic_value(value: str, thresholds: Thresholds) -> bool:
    """A value assigned to ``password``/``token``/... that looks like a real secret."""
    if len(value) < thresholds.min_length:
        return False
    # Hexadecimal carries at most 4 bits a character, base32 5 and a random base32 string of
    # 16 characters (a TOTP seed) only about 3.6 by its own frequencies: both get the lower
    # threshold, as does a UUID (hexadecimal and four dashes).
    small = any(p.fullmatch(value) for p in (_HEX, _BASE32, _UUID))
    limit = thresholds.min_entropy_hex if small else thresholds.min_entropy
    classes = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
        any(c in _SYMBOLS for c in value),
    )
    # A string of n characters has at most log2(n) bits a character: under 12 (2^3.5 ~ 11.3)
    # no value could reach min_entropy. A short one counts when its characters are (nearly)
    # all different and mix lower case, upper case and digits, as a generated one's do.
    ceiling = math.log2(len(value)) - _SHORT_SLACK
    if ceiling < limit and all(classes[:3]):
        # Typed values count up ("AbCdEF123", "Pass123x") or hold words ("Ctrl+Shift+F5"): a
        # random one rarely does either.
        if _counts_up(value) or _WORDISH.search(value):
            return False
        limit = ceiling
    if shannon_entropy(value) < limit:
        return False
    if any(p.search(value) for p in (PLACEHOLDER_WORDS, _DEMO_WORDS, REPEATED, ASCENDING)):
        return False
    if sum(classes) < 2:
        return False
    # A base32 run of 16 and more with digits and few vowels (a TOTP seed: 5 of its 26
    # letters are vowels) is no name, though a run of capitals and one digit reads as one
    # ("ZQVLBSVYPPTVJKH4"); "SETTINGSTOKEN2" is one.
    if is_name(value) and not _base32_seed(value):
        return False
    return not (_path(value) or _EMAIL.fullmatch(value) or _FILE_NAME.fullmatch(value))


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of secret, declared as data.

    A match is ``prefix`` + ``body`` (RE2 syntax, ASCII only). The prefix is the rule's
    trigger: every match starts with it, so text with no prefix anywhere is never matched
    further. The secret is the body's first capture group that took part when it has groups
    (``password=`` is context, not secret; alternatives of a body capture their own values),
    else the whole match.
    """

    id: str
    description: str
    prefix: str
    body: str
    validator: Validator | None = None
    # The character right after the match must not be one of these (a regex class body):
    # RE2 has no look-ahead, and a key followed by more key characters is not that key.
    not_followed_by: str | None = None
    # Whether ``not_followed_by`` looks after the whole match instead of after the secret (a
    # value with a comment after it that must end its line: `password: word  # note`).
    after_match: bool = False
    # Continuation pieces of a long secret, matched from where the previous piece ended:
    # ``tail_end`` closes the secret (a PEM END line), ``tail`` is one more piece of it. A
    # piece is the first capture group that took part, if the pattern has groups (what
    # follows it is look-ahead, left for the next piece), else the whole match.
    tail: str | None = None
    tail_end: str | None = None
    # A value that starts with another selected rule's prefix is left to that rule
    # (`api_key = sk-proj-...` is an OpenAI key, reported whole by its own rule).
    defers_to_prefixes: bool = False
    # Whether a deferring rule leaves a value that starts with this rule's prefix to this rule:
    # not when the prefix is one that values of every kind start with (eight hexadecimal
    # digits, a "/"), which says nothing about what the value is.
    deferred_to: bool = True
    # Instead of ``validator``: judges (text of the match before the secret, secret).
    judge: Judge | None = None
    # A *veto*: what this rule accepts is known not to be a secret (`publicKey = ...`, a
    # CSRF token). Nothing is reported, and no other match that starts inside it is looked at:
    # the words before a key name (`public`, `csrf`) are out of sight of the rule that matches
    # from the key name on.
    veto: bool = False
