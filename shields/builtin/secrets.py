"""``secrets``: credentials in text — API keys, tokens, private keys, password assignments.

The rules are data (``RULES``): an id, a description, a *prefix* that every match starts with, a
body, and optionally a validator, a "not followed by" character class and a *tail*. A policy
selects rules by id. All selected rules become one RE2 alternation (each rule one capture group,
so the rule that matched is the group that took part), and their prefixes a second, smaller
alternation of *triggers*: text without a trigger is skipped at the speed of RE2's DFA, and a
stream only re-reads the last few characters that could still be the start of a trigger.

Secrets are case-sensitive formats, so the shield matches the ORIGINAL text (``matches_raw``):
no folding, and ``max_match`` counts original characters. Patterns are ASCII-only and RE2 is
given bytes: every other character becomes "?" (one byte for one character, done in C by the
ASCII codec), which keeps offsets exact without any mapping and ends any token it touches.

Long secrets (a PEM block is thousands of characters, a JWT often a thousand) cannot be one
match: a stream would have to hold back the whole thing before releasing anything. Such a rule
has a *tail*: the match reports the identifying head (a PEM's BEGIN line and the start of its
body; a JWT's header, checked to be JSON with "alg", and the start of its payload), then each
further piece of the same secret (a line of the PEM body, 64 characters of the JWT) is reported
as its own finding, with the same label. The pieces are contiguous, so redaction merges them
into one placeholder over the whole secret, in whole texts and in streams alike, while
``max_match`` stays bounded.

Streams and whole texts give the same findings: a decision about a position is only taken once
``max_match`` characters from it have been seen (or the text has ended), and until then the
scanner keeps the undecided tail (about ``max_match`` characters) and does nothing. A match is
therefore reported exactly when the text reaches ``max_match`` characters past its start: never
later than the stream guard's hold-back allows, and at the same point in any chunking.

Adaptive hold-back (``Scanner.open_from``) does not change when a match is reported, only what
the stream guard may release meanwhile: every finding still to come lies in a match of some
rule that starts at an undecided position, so the open candidate is the leftmost undecided
position where a whole match is already there, or where the text ends with a prefix of one
(``shields.builtin.regex.prefix_pattern``): one RE2 search of the undecided characters. In
prose that is nothing, or the last few characters ("s" may begin "secret", "-" a PEM header);
"sk-" followed by a space or a short word is no candidate once that character is there.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import re2
from pydantic import Field, field_validator, model_validator

from shields.base import Chunk, Finding, Scanner, Shield
from shields.builtin.regex import (
    Searcher,
    Spans,
    compile_pattern,
    pattern_width,
    prefix_pattern,
    searcher,
)
from shields.builtin.secrets_config import CONFIG_RULES
from shields.builtin.secrets_rules import (
    Rule,
    Thresholds,
    Validator,
    random_looking,
    shannon_entropy,
)
from shields.builtin.secrets_vendors import VENDOR_TOKEN_RULES
from shields.normalize import StreamNormalizer
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = ["RULES", "Rule", "SecretsShield", "SecretsSpec", "shannon_entropy"]


# -- vendor token checks ----------------------------------------------------------------------


def _token(prefix_chars: int, min_bits: float, *, digit: bool = False) -> Validator:
    """A token with a fixed-length prefix whose remaining characters must look random."""

    def check(secret: str, _: Thresholds) -> bool:
        body = secret[prefix_chars:]
        if digit and not any(c.isdigit() for c in body):
            return False
        return random_looking(body, min_bits)

    return check


_OPENAI_PREFIX = re.compile(r"sk-(?:(?:proj|svcacct|admin)-)?")


def _openai(secret: str, _: Thresholds) -> bool:
    prefix = _OPENAI_PREFIX.match(secret)
    body = secret[prefix.end() if prefix else 3 :]
    # "sk-ant-..." is Anthropic's; a failed Anthropic match must not come back as OpenAI's.
    if body.startswith("ant-"):
        return False
    # Generated keys mix all three classes; prose like "sk-learn-pipeline-..." does not.
    classes = (
        any(c.isupper() for c in body),
        any(c.islower() for c in body),
        any(c.isdigit() for c in body),
    )
    return all(classes) and random_looking(body, 3.5)


def _slack_webhook(secret: str, _: Thresholds) -> bool:
    return random_looking(secret.rsplit("/", 1)[-1], 3.0)


def _jwt(secret: str, _: Thresholds) -> bool:
    """The first segment must be base64url JSON with an "alg": a JOSE header, not noise."""
    header = secret.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))
        value = json.loads(decoded)
    except (binascii.Error, ValueError):  # ValueError covers bad UTF-8 and bad JSON
        return False
    return isinstance(value, dict) and isinstance(value.get("alg"), str)


# -- the rules -------------------------------------------------------------------------------

# A line break, raw or JSON-escaped ("\n" as two characters, as in service-account key files).
_NL = r"(?:\r?\n|(?:\\r)?\\n)"
_PEM_KIND = r"(?:[A-Z0-9]{1,10} ){0,2}PRIVATE KEY(?: BLOCK)?-----"
_PEM_HEADER_LINE = r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): [^\r\n\\]{1,64}"
# The BEGIN line, at most one blank line (PGP puts one after its headers), and the start of the
# body or an encryption header: enough to know it is a private key.
_PEM_HEAD = "".join(
    [
        _PEM_KIND,
        r"[ \t]{0,4}",
        _NL,
        r"(?:[ \t]{0,8}",
        _NL,
        r")?[ \t]{0,8}(?:",
        _PEM_HEADER_LINE,
        r"|[A-Za-z0-9+/=]{32,64})",
    ]
)
# The end of the previous line (trailing blanks, the break, at most one blank line) and the
# indentation of the next; absent when a line longer than 64 characters goes on.
_PEM_BREAK = r"(?:[ \t]{0,4}" + _NL + r"(?:[ \t]{0,8}" + _NL + r")?)?[ \t]{0,8}"
# Then one line at a time. The piece (the group that took part) stops before the line break,
# which must follow it: a line of prose after a truncated key is not part of the key. A line
# longer than 64 characters comes in 64-character pieces.
_PEM_LINE = "".join(
    [
        "(",
        _PEM_BREAK,
        "(?:",
        _PEM_HEADER_LINE,
        r"|[A-Za-z0-9+/=]{1,64}))[ \t]{0,4}(?:",
        _NL,
        r"|$)|(",
        _PEM_BREAK,
        r"[A-Za-z0-9+/=]{64})",
    ]
)


# Vendor tokens first: a tie between rules at one place goes to the first listed.
VENDOR_RULES: tuple[Rule, ...] = (
    Rule(
        "aws_access_key_id",
        "AWS access key id (AKIA... long-term, ASIA... temporary)",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)",
        r"[A-Z2-7]{16}\b",
        _token(4, 2.5),
    ),
    Rule(
        "aws_secret_access_key",
        "AWS secret access key: 40 base64 characters assigned to an AWS secret key name",
        r"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)[\"']?[ \t]{0,3}"
        r"(?::=|=>|=|:)",
        r"[ \t]{0,3}[\"']?([A-Za-z0-9/+]{40})",
        lambda secret, _: random_looking(secret, 4.0),
        not_followed_by=r"A-Za-z0-9/+=",
    ),
    Rule(
        "github_token",
        "GitHub classic token: ghp_ (personal), gho_ (OAuth), ghu_/ghs_ (app), ghr_ (refresh)",
        r"\bgh[pousr]_",
        r"[A-Za-z0-9]{36}\b",
        _token(4, 3.0),
    ),
    Rule(
        "github_fine_grained_token",
        "GitHub fine-grained personal access token (github_pat_...)",
        r"\bgithub_pat_",
        r"[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b",
        _token(11, 3.0),
    ),
    # Before the OpenAI rule: both start with "sk-" and the first listed wins a tie.
    Rule(
        "anthropic_api_key",
        "Anthropic API key (sk-ant-api03-..., sk-ant-admin01-...)",
        r"\bsk-ant-[a-z]{3,5}[0-9]{2}-",
        r"[A-Za-z0-9_-]{80,120}",
        lambda secret, _: random_looking(secret.split("-", 3)[-1], 3.5),
        not_followed_by=r"A-Za-z0-9_-",
    ),
    Rule(
        "openai_api_key",
        "OpenAI API key (sk-..., sk-proj-..., sk-svcacct-..., sk-admin-...)",
        r"\bsk-(?:(?:proj|svcacct|admin)-)?",
        r"[A-Za-z0-9_-]{20,64}",
        _openai,
        tail=r"[A-Za-z0-9_-]{1,64}",
    ),
    Rule(
        "slack_token",
        "Slack token: bot (xoxb-), user (xoxp-), app (xoxa-), refresh (xoxr-), legacy (xoxs-)",
        r"\bxox[abposr]-",
        r"[0-9A-Za-z-]{10,64}",
        _token(5, 3.0, digit=True),
        tail=r"[0-9A-Za-z-]{1,64}",
    ),
    Rule(
        "slack_webhook",
        "Slack incoming webhook URL (https://hooks.slack.com/services/T.../B.../...)",
        # Slashes may come JSON-escaped ("https:\/\/hooks.slack.com\/services\/..."), as
        # PHP's json_encode and others write them.
        r"(?:https?:\\?/\\?/)?hooks\.slack\.com\\?/services\\?/",
        r"T[A-Z0-9]{6,12}\\?/B[A-Z0-9]{6,12}\\?/[A-Za-z0-9]{20,32}",
        _slack_webhook,
        not_followed_by=r"A-Za-z0-9",
    ),
    Rule(
        "google_api_key",
        "Google API key (AIza + 35 characters)",
        r"\bAIza",
        r"[0-9A-Za-z_-]{35}",
        _token(4, 3.0),
        not_followed_by=r"0-9A-Za-z_-",
    ),
    # Publishable keys (pk_live_, pk_test_) are made to be embedded in web pages: not secrets.
    # Test-mode secret keys are: they read and write the account's test data.
    Rule(
        "stripe_secret_key",
        "Stripe secret or restricted key, live or test (sk_live_, rk_live_, sk_test_, rk_test_)",
        r"\b[rs]k_(?:live|test)_",
        r"[0-9A-Za-z]{16,64}",
        _token(8, 3.0, digit=True),
        tail=r"[0-9A-Za-z]{1,64}",
    ),
    Rule(
        "jwt",
        'JSON Web Token: base64url header that decodes to JSON with an "alg", then the payload',
        r"\beyJ",
        r"[A-Za-z0-9_-]{8,144}\.ey[A-Za-z0-9_-]{1,8}",
        _jwt,
        # The rest of the payload, then ".signature": a dot only when a segment follows it, so
        # the full stop after a token in a sentence stays.
        tail=r"\.?[A-Za-z0-9_-]{1,64}",
    ),
    Rule(
        "private_key",
        "PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... PRIVATE KEY)",
        r"-----BEGIN ",
        _PEM_HEAD,
        tail=_PEM_LINE,
        tail_end=_PEM_BREAK + r"-----END " + _PEM_KIND,
    ),
)

# Vendor formats before the configuration rules: `NPM_TOKEN=npm_...` is an npm token, reported
# whole by its own rule (the configuration rules defer to every vendor prefix).
RULES: tuple[Rule, ...] = VENDOR_RULES + VENDOR_TOKEN_RULES + CONFIG_RULES

RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)
_BY_ID = {rule.id: rule for rule in RULES}


def _width(pattern: str) -> int:
    width = pattern_width(pattern)
    if width is None:  # every built-in pattern is bounded: that is what bounds max_match
        raise AssertionError(f"unbounded secrets pattern: {pattern!r}")
    return width


# -- the spec --------------------------------------------------------------------------------


class SecretsSpec(ShieldSpecBase):
    type: Literal["secrets"] = "secrets"
    # "all", or the ids of the rules to run.
    rules: Literal["all"] | list[str] = "all"
    placeholder: str = Field(default="[SECRET]", max_length=200)
    # Rule id -> placeholder, overriding `placeholder` for that rule.
    placeholders: dict[str, str] = Field(default_factory=dict)
    # generic_secret: bits per character a value needs, and its minimum length.
    min_entropy: float = Field(default=3.5, ge=0.0, le=8.0)
    min_entropy_hex: float = Field(default=3.0, ge=0.0, le=4.0)
    min_length: int = Field(default=8, ge=1, le=64)
    # config_password only: the shortest value taken for a password.
    min_password_length: int = Field(default=6, ge=1, le=64)

    @field_validator("rules", mode="before")
    @classmethod
    def _rules_shape(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "all":
            raise ValueError(f"`rules` is `all` or a list of rule ids, not {value!r}")
        if not isinstance(value, str | list):
            raise ValueError("`rules` is `all` or a list of rule ids")
        return value

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: Literal["all"] | list[str]) -> Literal["all"] | list[str]:
        if value == "all":
            return value
        if not value:
            raise ValueError("`rules` is empty: list at least one rule id, or use `all`")
        for i, rule_id in enumerate(value):
            if rule_id == "all":
                raise ValueError(f"rules[{i}]: to select every rule write `rules: all`, not a list")
            if rule_id not in _BY_ID:
                raise ValueError(
                    f"rules[{i}]: unknown rule {rule_id!r} (known rules: {', '.join(RULE_IDS)})"
                )
            if rule_id in value[:i]:
                raise ValueError(f"rules[{i}]: rule {rule_id!r} is listed twice")
        return value

    @field_validator("placeholders")
    @classmethod
    def _placeholder_lengths(cls, value: dict[str, str]) -> dict[str, str]:
        for rule_id, text in value.items():
            if len(text) > 200:
                raise ValueError(f"placeholders.{rule_id}: longer than 200 characters")
        return value

    @model_validator(mode="after")
    def _placeholders_name_selected_rules(self) -> SecretsSpec:
        selected = self.selected()
        for rule_id in self.placeholders:
            if rule_id not in _BY_ID:
                raise ValueError(
                    f"placeholders: unknown rule {rule_id!r} (known rules: {', '.join(RULE_IDS)})"
                )
            if rule_id not in selected:
                raise ValueError(f"placeholders: rule {rule_id!r} is not in `rules`")
        return self

    def selected(self) -> tuple[str, ...]:
        return RULE_IDS if self.rules == "all" else tuple(self.rules)


# -- the shield ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A selected rule, ready to run."""

    rule: Rule
    group: int  # the rule's wrapping group in the combined pattern
    secret_group: int | None  # its secret's group, when the body has one
    placeholder: str
    not_followed_by: frozenset[int]  # bytes
    tail: Searcher | None  # anchored
    tail_end: Searcher | None
    tail_reach: int  # characters from a piece's start needed to decide it (look-ahead included)


def _anchored(pattern: str | None) -> Searcher | None:
    if pattern is None:
        return None
    return searcher(compile_pattern(pattern, case_sensitive=True), anchored=True)


# RE2's default budget (8 MB) holds too few DFA states for the program of every rule together
# (~22,000 instructions, each state a list of thousands): a search of the combined pattern then
# gives up on the DFA and runs the NFA, 10x slower and more. The budget caps a cache filled as
# states are met; it is not allocated up front.
_RULES_MAX_MEM = 64 << 20


def _compile_rules(pattern: str, *, capture: bool = True) -> Any:
    """``compile_pattern`` (validated, case-sensitive) with the larger DFA budget."""
    compile_pattern(pattern, case_sensitive=True, capture=capture)  # the checks and messages
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = True
    options.never_capture = not capture
    options.max_mem = _RULES_MAX_MEM
    return re2.compile(pattern, options)


def _class_bytes(char_class: str) -> frozenset[int]:
    pattern = re.compile(f"[{char_class}]")
    return frozenset(b for b in range(128) if pattern.fullmatch(chr(b)))


class SecretsShield(Shield):
    type_name = "secrets"

    def __init__(self, spec: SecretsSpec) -> None:
        super().__init__(spec)
        self.matches_raw = True  # key formats are case-sensitive: never fold them
        self._thresholds = Thresholds(
            spec.min_entropy, spec.min_entropy_hex, spec.min_length, spec.min_password_length
        )
        rules = [_BY_ID[rule_id] for rule_id in spec.selected()]
        # The table order, whatever the order in the policy: it decides ties between rules
        # that match at the same place (Anthropic's "sk-ant-" before OpenAI's "sk-").
        rules.sort(key=RULES.index)
        parts, compiled, group = [], [], 1
        main_width = 0
        for rule in rules:
            pattern = rule.prefix + rule.body
            inner = compile_pattern(pattern, case_sensitive=True).groups
            if inner > 1:
                raise AssertionError(f"rule {rule.id}: at most one capture group")
            parts.append(f"({pattern})")
            main_width = max(main_width, _width(pattern))
            tail_reach = 0
            if rule.tail is not None:
                tail_reach = max(_width(p) for p in (rule.tail, rule.tail_end) if p) + 1
            compiled.append(
                _Compiled(
                    rule=rule,
                    group=group,
                    secret_group=group + 1 if inner else None,
                    placeholder=spec.placeholders.get(rule.id, spec.placeholder),
                    not_followed_by=_class_bytes(rule.not_followed_by)
                    if rule.not_followed_by
                    else frozenset(),
                    tail=_anchored(rule.tail),
                    tail_end=_anchored(rule.tail_end),
                    tail_reach=tail_reach,
                )
            )
            group += 1 + inner
        self._rules = compiled
        self._regex = searcher(_compile_rules("|".join(parts)))
        # Where a match may start, whole or still forming at the end of the text (``open_from``).
        whole = "|".join(parts)
        forming = prefix_pattern(whole)
        self._open_search: Searcher | None = None
        self._prefix_at: Searcher | None = None
        self._forming: Searcher | None = None
        self._match_at: Searcher = searcher(_compile_rules(whole), anchored=True)
        triggers = "|".join(f"(?:{rule.prefix})" for rule in rules)
        trigger_forming = prefix_pattern(triggers)
        if forming is not None and trigger_forming is not None:
            # Every match starts with its rule's prefix: the places to look at are complete
            # prefixes and a prefix's beginning at the end of the text, which a pattern of the
            # prefixes alone finds. (An unanchored search for whole rules and their prefixes
            # costs ~50 us on ever-new text: RE2's DFA for it is too large to stay cached.)
            self._open_search = searcher(
                compile_pattern(
                    f"{triggers}|{trigger_forming}\\z", case_sensitive=True, capture=False
                )
            )
            # Tells a whole prefix (judged further) from one still forming at the end of the
            # text (open: it may become any rule's match). A capture group in the search would
            # tell it too, but costs RE2's slower engines on every search that finds one.
            self._prefix_at = searcher(
                compile_pattern(triggers, case_sensitive=True, capture=False), anchored=True
            )
            self._forming = searcher(
                _compile_rules(f"{forming}\\z", capture=False),
                anchored=True,
            )
        prefixes = [rule.prefix for rule in rules]
        self._triggers = searcher(
            compile_pattern(
                "|".join(f"(?:{p})" for p in prefixes), case_sensitive=True, capture=False
            )
        )
        self._trigger_width = max(_width(p) for p in prefixes)
        # Every decision about a position needs at most the longest match after it plus one
        # character (a `\b`, a "not followed by" check, the end of a greedy run).
        self._max_match = max([main_width, *(c.tail_reach for c in compiled)]) + 1
        deferring = [r for r in rules if r.defers_to_prefixes]
        others = [r.prefix for r in rules if not r.defers_to_prefixes]
        self._defer_to = (
            _anchored("|".join(f"(?:{p})" for p in others)) if deferring and others else None
        )

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _SecretsScanner(self)


def _piece_span(spans: Spans) -> tuple[int, int]:
    for span in spans[1:]:
        if span[0] != -1:
            return span
    return spans[0]


class _SecretsScanner(Scanner):
    """Finds the selected rules in one text, deciding each position once it is certain.

    ``_buf`` holds the ASCII view of the text from offset ``_off``; ``_pos`` is the first
    position not yet decided; ``_tail`` is the rule whose continuation pieces are being read
    from ``_pos`` on, if any. Nothing is done until the text reaches ``_need`` characters
    past ``_pos`` (``max_match``, or the tail's reach), so a stream fed a character at a time
    costs an append per character; and a scan that finds no trigger, the usual one, costs one
    search of the new text (and of the few characters before it that may start a trigger).
    """

    __slots__ = (
        "_buf",
        "_clear",
        "_end",
        "_need",
        "_off",
        "_open_search",
        "_pending",
        "_pos",
        "_shield",
        "_tail",
        "_trigger_width",
        "_triggers",
    )

    def __init__(self, shield: SecretsShield) -> None:
        self._shield = shield
        self._triggers = shield._triggers
        self._trigger_width = shield._trigger_width
        self._buf = b""
        self._off = 0
        self._end = 0  # characters fed so far
        self._pending: list[str] = []  # fed but not yet in _buf
        self._pos = 0
        self._tail: _Compiled | None = None
        self._need = shield._max_match  # characters past _pos that make a scan worth it
        self._clear = 0  # ``open_from``: no match can start before this
        self._open_search = shield._open_search

    def feed(self, chunk: Chunk) -> list[Finding]:
        raw = chunk.raw
        if not raw:
            return []
        end = self._end + len(raw)
        self._end = end
        pending = self._pending
        if end - self._pos < self._need:
            pending.append(raw)
            return []  # no decision can be taken yet: the cheap path of a stream
        if pending:
            pending.append(raw)
            raw = "".join(pending)
            pending.clear()
        buf = self._buf + raw.encode("ascii", "replace")
        if self._tail is None:
            # The usual scan, inlined: no trigger in the text, so every position but the last
            # few (where a trigger may still be completed) is decided.
            off, pos = self._off, self._pos
            if self._triggers(buf, pos - off, len(buf))[0][0] < 0:
                undecided = end - self._trigger_width + 1
                if undecided > pos:
                    self._pos = pos = undecided
                if pos - 1 > off:  # keep the character before: `\b` looks back at it
                    buf = buf[pos - 1 - off :]
                    self._off = pos - 1
                self._buf = buf
                return []
        self._buf = buf
        return self._scan(final=False)

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._buf += text.encode("ascii", "replace")
        return self._scan(final=True)

    def open_from(self, end: int, window: int) -> int:
        if self._tail is not None:
            return self._pos  # the next piece of a long secret starts there
        search = self._open_search
        if search is None:
            return end - window
        pending = self._pending
        if pending:
            # Into the buffer now rather than at the next decision: the search needs it.
            raw = pending[0] if len(pending) == 1 else "".join(pending)
            pending.clear()
            self._buf += raw.encode("ascii", "replace")
        buf, off = self._buf, self._off
        # Positions before ``_clear`` were found to start no match, now or ever: not searched
        # again (hostile text full of rejected matches would have each judged per feed).
        clear = self._clear
        if clear < self._pos:
            clear = self._pos
        size = len(buf)
        start = search(buf, clear - off, size)[0][0]
        if start < 0:  # the usual case: no prefix begins in the new text
            self._clear = end
            return end
        self._clear = off + start
        prefix_at = self._shield._prefix_at
        assert prefix_at is not None  # built with _open_search
        if prefix_at(buf, start, size)[0][0] < 0:
            return off + start  # the beginning of a prefix, at the end of the text
        return self._open_at(start)

    def _open_at(self, start: int) -> int:
        """``open_from`` from a place where a rule's prefix is."""
        buf, off = self._buf, self._off
        size = len(buf)
        shield = self._shield
        forming = shield._forming
        assert forming is not None and self._open_search is not None
        while True:
            self._clear = off + start
            if forming(buf, start, size)[0][0] != -1:
                return off + start  # a match may still form or grow there
            # Every match at ``start`` ends before the text does: the decision the scanner
            # will take there once it gets to it (``_take``) can be taken now, and a match
            # it will reject ("AKIAEXAMPLE...", "API_TOKEN=...") holds nothing.
            match = shield._match_at(buf, start, size)
            if match[0][0] != -1 and self._accepts(match) is not None:
                return off + start
            # A prefix and no match ("sk-learn"), or one it will reject: on to the next.
            start = self._open_search(buf, start + 1, size)[0][0]
            if start < 0:
                self._clear = off + size
                return off + size

    def _scan(self, *, final: bool) -> list[Finding]:
        found = self._decide(final)
        # Keep one character before the first undecided position: `\b` looks back at it.
        keep_from = max(self._off, self._pos - 1)
        if keep_from > self._off:
            self._buf = self._buf[keep_from - self._off :]
            self._off = keep_from
        tail = self._tail
        self._need = tail.tail_reach if tail is not None else self._shield._max_match
        return found

    def _decide(self, final: bool) -> list[Finding]:
        shield = self._shield
        buf, off, end = self._buf, self._off, self._end
        size = len(buf)
        window = shield._max_match
        found: list[Finding] = []
        while True:
            pos = self._pos
            tail = self._tail
            if tail is not None:
                if not final and end - pos < tail.tail_reach:
                    break
                piece = tail.tail_end(buf, pos - off, size) if tail.tail_end else None
                if piece is not None and piece[0][0] != -1:
                    self._tail = None
                else:
                    assert tail.tail is not None  # a rule with a tail_end has a tail
                    piece = tail.tail(buf, pos - off, size)
                    if piece[0][0] == -1:
                        self._tail = None
                        continue
                start, stop = _piece_span(piece)
                if stop <= pos - off:  # an empty piece would never move on
                    self._tail = None
                    continue
                found.append(self._finding(tail, off + start, off + stop))
                self._pos = off + stop
                continue
            trigger = shield._triggers(buf, pos - off, size)[0][0]
            if trigger == -1:
                # A trigger that starts in the last few characters may still be completed.
                self._pos = end if final else max(pos, end - shield._trigger_width + 1)
                break
            first = off + trigger
            if not final and end - first < window:
                self._pos = first
                break
            match = shield._regex(buf, trigger, size)
            if match[0][0] == -1 or (not final and end - (off + match[0][0]) < window):
                # Positions up to end - window are decided: no match starts there.
                self._pos = end if final else max(first, end - window + 1)
                break
            self._pos = self._take(match, found)
        return found

    def _take(self, match: Spans, found: list[Finding]) -> int:
        """Reports ``match`` if its rule accepts it; returns where the search resumes."""
        off = self._off
        rule = self._accepts(match)
        if rule is None:
            return off + match[0][0] + 1
        secret_group = rule.secret_group if rule.secret_group is not None else rule.group
        secret_start, secret_end = match[secret_group]
        found.append(self._finding(rule, off + secret_start, off + secret_end))
        if rule.tail is not None:
            self._tail = rule
        return off + match[0][1]

    def _accepts(self, match: Spans) -> _Compiled | None:
        """The rule whose match ``match`` (spans in ``_buf``) is, if it accepts it."""
        shield = self._shield
        for rule in shield._rules:
            if match[rule.group][0] != -1:
                break
        else:  # pragma: no cover - the combined pattern only matches through a rule's group
            raise AssertionError("match without a rule")
        secret_group = rule.secret_group if rule.secret_group is not None else rule.group
        secret_start, secret_end = match[secret_group]
        buf = self._buf
        if (
            rule.not_followed_by
            and secret_end < len(buf)
            and buf[secret_end] in rule.not_followed_by
        ):
            return None
        secret_bytes = buf[secret_start:secret_end]
        # Only the secret itself is looked at, never past the match: the decision stays one
        # that max_match characters of text are enough to take.
        if (
            rule.rule.defers_to_prefixes
            and shield._defer_to is not None
            and shield._defer_to(secret_bytes, 0, len(secret_bytes))[0][0] != -1
        ):
            return None
        secret = secret_bytes.decode("ascii")
        validator = rule.rule.validator
        if validator is not None and not validator(secret, shield._thresholds):
            return None
        judge = rule.rule.judge
        if judge is not None:
            context = buf[match[rule.group][0] : secret_start].decode("ascii")
            if not judge(context, secret, shield._thresholds):
                return None
        return rule

    def _finding(self, rule: _Compiled, start: int, end: int) -> Finding:
        shield = self._shield
        return Finding(
            shield_id=shield.id,
            shield_type=shield.type_name,
            label=rule.rule.id,
            action=shield.action,
            start=start,
            end=end,
            placeholder=rule.placeholder,
            monitor=shield.monitor,
        )


register(SecretsSpec, SecretsShield)
