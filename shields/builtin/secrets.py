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
"sk-" followed by a space or a short word is no candidate once that character is there. The
stream guard asks after every token, and a search costs more than the rest of the scan, so
the answers are remembered per shield by what they depend on (every decision about a position
reads only the text from the character before it on): a *key*, the text held and whether the
character before it is a word character, and the characters that follow it — a small
automaton (``shields.open_tables``) that a tracked scanner (``Scanner.track_open``) steps a
token at a time. Such a scanner also takes every position before its candidate as decided
(none starts a match, now or ever): in prose it buffers and searches nothing, where a scanner
that does not know its candidate searches every position once ``max_match`` characters have
followed it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import re2
from pydantic import Field, field_validator, model_validator

from shields.base import Chunk, Finding, OpenAt, Scanner, Shield
from shields.builtin.regex import (
    Searcher,
    Spans,
    compile_pattern,
    pattern_width,
    prefix_pattern,
    searcher,
)
from shields.builtin.secrets_commands import COMMAND_RULES
from shields.builtin.secrets_config import CONFIG_RULES, VETO_RULES
from shields.builtin.secrets_hashes import HASH_RULES
from shields.builtin.secrets_keys import KEY_RULES
from shields.builtin.secrets_rules import (
    Rule,
    Thresholds,
    Validator,
    is_name,
    random_looking,
    shannon_entropy,
)
from shields.builtin.secrets_stored import STORED_RULES
from shields.builtin.secrets_vendors import VENDOR_TOKEN_RULES
from shields.normalize import StreamNormalizer
from shields.open_tables import OpenTables, State
from shields.registry import register
from shields.screen import WholeText
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


_SLACK_PREFIX = re.compile(r"(?:xoxe\.)?xox[a-z]-")


def _slack_token(secret: str, _: Thresholds) -> bool:
    """Numeric ids, then a generated part (the last segment, 8 characters and more), which
    neither reads as words (``...-SlackAppTokenHere``) nor was cut short by a mask (``-####``)."""
    prefix = _SLACK_PREFIX.match(secret)
    body = secret[prefix.end() if prefix else 5 :]
    last = body.rsplit("-", 1)[-1]
    if len(last) < 8 or is_name(last):
        return False
    return any(c.isdigit() for c in body) and random_looking(body, 3.0)


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

# Vendor tokens first: a tie between rules at one place goes to the first listed.
# The most distinctive prefixes (AKIA..., gh?_, github_pat_, xox?-, and GitLab's gl...- in
# ``secrets_vendors``) are read wherever they start: a character glued before a token
# ("_AKIA...", "keyghp_...") hides nothing from a person reading it, so it must not hide the
# token from its rule. Prefixes a word may end with ("sk-" in "task-...") keep their ``\b``.
VENDOR_RULES: tuple[Rule, ...] = (
    Rule(
        "aws_access_key_id",
        "AWS access key id (AKIA... long-term, ASIA... temporary)",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)",
        # AWS issues base32 ids ([A-Z2-7]); read as [A-Z0-9], as other scanners do, the rule
        # also takes the hand-made keys of fixtures and documents, which leak as well.
        r"[A-Z0-9]{16}\b",
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
        r"gh[pousr]_",
        r"[A-Za-z0-9]{36}\b",
        _token(4, 3.0),
    ),
    Rule(
        "github_fine_grained_token",
        "GitHub fine-grained personal access token (github_pat_...)",
        r"github_pat_",
        r"[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b",
        _token(11, 3.0),
    ),
    Rule(
        "github_jwt_token",
        "GitHub token that wraps a JSON Web Token: gh?_, an 8-digit date, _, then the JWT "
        "(a longer installation-token format); the JWT's header is checked as for `jwt`",
        r"\bgh[pousr]_[0-9]{8}_eyJ",
        r"[A-Za-z0-9_-]{8,131}\.ey[A-Za-z0-9_-]{1,8}",  # as wide as the `jwt` rule
        lambda secret, thresholds: _jwt(secret[13:], thresholds),  # after "ghs_20260523_"
        tail=r"\.?[A-Za-z0-9_-]{1,64}",
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
    # Before the OpenAI rule too; the character after the key is part of the match (RE2 has no
    # look-ahead), so a longer "sk-" key whose start happens to be hex is left to OpenAI's rule.
    Rule(
        "deepseek_api_key",
        "DeepSeek API key (sk- + 32 lower-case hex digits)",
        r"\bsk-",
        r"([0-9a-f]{32})(?:[^A-Za-z0-9_-]|$)",
        lambda secret, _: any(c.isdigit() for c in secret) and random_looking(secret, 3.0),
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
        "Slack token: bot (xoxb-), user (xoxp-), app (xoxa-), refresh (xoxr-), legacy (xoxs-), "
        "app configuration access (xoxe.xoxp-) and refresh (xoxe-) tokens",
        r"(?:xoxe\.)?xox[abposre]-",
        r"[0-9A-Za-z-]{10,64}",
        _slack_token,
        tail=r"[0-9A-Za-z-]{1,64}",
    ),
    Rule(
        "slack_webhook",
        "Slack incoming webhook URL (https://hooks.slack.com/services/T.../B.../...) or "
        "workflow trigger URL (.../workflows/T.../A.../<id>/...)",
        # Slashes may come JSON-escaped ("https:\/\/hooks.slack.com\/services\/..."), as
        # PHP's json_encode and others write them.
        r"(?:https?:\\?/\\?/)?hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/",
        r"T[A-Z0-9]{6,12}\\?/[AB][A-Z0-9]{6,12}\\?/(?:[0-9]{6,20}\\?/)?[A-Za-z0-9]{20,32}",
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
)

# Vendor formats before the configuration rules: `NPM_TOKEN=npm_...` is an npm token, reported
# whole by its own rule (the configuration rules defer to every vendor prefix).
RULES: tuple[Rule, ...] = (
    VENDOR_RULES
    + KEY_RULES
    + VENDOR_TOKEN_RULES
    + HASH_RULES
    + STORED_RULES
    + COMMAND_RULES
    + CONFIG_RULES
)

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
    secret_groups: int  # how many groups its own pattern has: the secret is the first taken
    placeholder: str
    not_followed_by: frozenset[int]  # bytes
    tail: Searcher | None  # anchored
    tail_end: Searcher | None
    tail_reach: int  # characters from a piece's start needed to decide it (look-ahead included)
    own: Searcher  # the rule's own pattern, anchored: group 1 is the secret, when it has one


def _anchored(pattern: str | None) -> Searcher | None:
    if pattern is None:
        return None
    return searcher(compile_pattern(pattern, case_sensitive=True), anchored=True)


# RE2's default budget (8 MB) holds too few DFA states for the program of every rule together
# (~22,000 instructions, each state a list of thousands): a search of the combined pattern then
# gives up on the DFA and runs the NFA, 10x slower and more. The budget caps a cache filled as
# states are met; it is not allocated up front.
_RULES_MAX_MEM = 64 << 20


def _rules_options(*, capture: bool) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = True
    options.never_capture = not capture
    options.max_mem = _RULES_MAX_MEM
    return options


@functools.lru_cache(maxsize=1024)  # the same rules at every policy load: see regex.py
def _compile_rules(pattern: str, *, capture: bool = True) -> Any:
    """``compile_pattern`` (validated, case-sensitive) with the larger DFA budget."""
    compile_pattern(pattern, case_sensitive=True, capture=capture)  # the checks and messages
    return re2.compile(pattern, _rules_options(capture=capture))


def _rule_set(patterns: list[str]) -> Any:
    """An RE2 set of the rules, anchored at a character of context before the match (for a
    ``\\b``): which rules match at a place, in one pass of a DFA."""
    rule_set = re2.Set.MatchSet(_rules_options(capture=False))
    for pattern in patterns:
        rule_set.Add(f"(?s:.)(?:{pattern})")
    rule_set.Compile()
    return rule_set


def _class_bytes(char_class: str) -> frozenset[int]:
    pattern = re.compile(f"[{char_class}]")
    return frozenset(b for b in range(128) if pattern.fullmatch(chr(b)))


def _secret_span(rule: _Compiled, spans: Spans) -> tuple[int, int]:
    """Where the secret of a match of ``rule``'s own pattern is: its first capture group that
    took part (alternatives of a body each capture their value: a quoted literal, a bare
    one), else the whole match."""
    for span in spans[1 : 1 + rule.secret_groups]:
        if span[0] >= 0:
            return span[0], span[1]
    return spans[0][0], spans[0][1]


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
        # Vetoes (`publicKey = ...`, CSRF tokens) come with the configuration rules they keep
        # quiet, first, so that they win a tie; they report nothing themselves.
        if any(rule.defers_to_prefixes for rule in rules):
            rules = [*VETO_RULES, *rules]
        parts, compiled, group = [], [], 1
        main_width = 0
        for rule in rules:
            pattern = rule.prefix + rule.body
            inner = compile_pattern(pattern, case_sensitive=True).groups
            parts.append(f"({pattern})")
            main_width = max(main_width, _width(pattern))
            tail_reach = 0
            if rule.tail is not None:
                tail_reach = max(_width(p) for p in (rule.tail, rule.tail_end) if p) + 1
            compiled.append(
                _Compiled(
                    rule=rule,
                    group=group,
                    secret_groups=inner,
                    placeholder=spec.placeholders.get(rule.id, spec.placeholder),
                    not_followed_by=_class_bytes(rule.not_followed_by)
                    if rule.not_followed_by
                    else frozenset(),
                    tail=_anchored(rule.tail),
                    tail_end=_anchored(rule.tail_end),
                    tail_reach=tail_reach,
                    own=searcher(_compile_rules(pattern), anchored=True),
                )
            )
            group += 1 + inner
        self._rules = compiled
        # Matching at a trigger, in two steps (``_SecretsScanner._match``): whether any rule
        # matches there, without groups (~1 us), then which one, and its groups from its own
        # pattern. The groups of the combined pattern cost ~10 us a match: RE2 finds them
        # with an engine whose cost grows with the size of the program, ~30,000 instructions.
        self._any_at: Searcher = searcher(
            _compile_rules("|".join(parts), capture=False), anchored=True
        )
        self._rule_set = _rule_set([rule.prefix + rule.body for rule in rules])
        # Where a match may start, whole or still forming at the end of the text (``open_from``).
        whole = "|".join(parts)
        forming = prefix_pattern(whole)
        self._open_search: Searcher | None = None
        self._prefix_at: Searcher | None = None
        self._prefix_forming_at: Searcher | None = None
        self._forming: Searcher | None = None
        self._memos: OpenTables | None = None
        # A veto reports nothing, so nothing need be held where one may start.
        triggers = "|".join(f"(?:{rule.prefix})" for rule in rules if not rule.veto)
        trigger_forming = prefix_pattern(triggers)
        if forming is not None and trigger_forming is not None:
            # Every match starts with its rule's prefix: the places to look at are complete
            # prefixes and a prefix's beginning at the end of the text, which a pattern of the
            # prefixes alone finds. (An unanchored search for whole rules and their prefixes
            # costs ~50 us on ever-new text: RE2's DFA for it is too large to stay cached.)
            # The larger DFA budget: a search that finds a prefix (most do, at the end of a
            # token) runs the pattern backwards to find where it starts, and RE2 gives that
            # reversed program a third of the budget; with 8 MB its DFA states are thrown away
            # again and again and each search costs ~50 us instead of ~3.
            self._open_search = searcher(
                _compile_rules(f"{triggers}|{trigger_forming}\\z", capture=False)
            )
            # Tells a whole prefix (judged further) from one still forming at the end of the
            # text (open: it may become any rule's match). A capture group in the search would
            # tell it too, but costs RE2's slower engines on every search that finds one.
            self._prefix_at = searcher(
                compile_pattern(triggers, case_sensitive=True, capture=False), anchored=True
            )
            # The beginning of a prefix that runs to the end of the text, at one place: with
            # ``_prefix_at``, what ``_open_search`` finds there, for short texts
            # (``_first_open``). Anchored, its DFA stays small; the unanchored search finds
            # where its match starts by running the pattern backwards, and on ever-new text
            # (a base64 run, whose every character is a step not remembered) that reversed
            # DFA of a ~50,000-character pattern is rebuilt on every call: ~300 us a search.
            self._prefix_forming_at = searcher(
                _compile_rules(f"(?:{trigger_forming})\\z", capture=False), anchored=True
            )
            self._forming = searcher(
                _compile_rules(f"{forming}\\z", capture=False),
                anchored=True,
            )
            self._memos = OpenTables(_MEMO_ENTRIES)
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
        others = [r.prefix for r in rules if not r.defers_to_prefixes and r.deferred_to]
        self._defer_to = (
            _anchored("|".join(f"(?:{p})" for p in others)) if deferring and others else None
        )

    @property
    def max_match(self) -> int:
        return self._max_match

    def scanner(self) -> Scanner:
        return _SecretsScanner(self)

    def screen(self, text: WholeText) -> bool:
        # Every match starts with its rule's prefix, a trigger: a text whose ASCII view (the
        # scanner's buffer) holds none is decided match by match to hold no secret. A terminal
        # control sequence is rewritten before the search (``_mask_csi``): such a text scans.
        if _ESC in text.raw:
            return True
        view = text.ascii
        return self._triggers(view, 0, len(view))[0][0] >= 0


# ``open_from``'s remembered steps (``shields.open_tables``), per shield: keys (what a held
# text's future depends on: what comes before it, then its ASCII view from the earliest place a
# match may still start) of up to ``_STEP_TEXT`` characters, and at most ``_MEMO_ENTRIES``
# steps, a few MB, forgotten when full (a step is a fact about text: never stale, only unused).
# Prose holds one to three characters ("s", "to", "pas"), a near-miss a few more ("sk-learn");
# a longer held text (a key being judged) is searched in the buffer, and a text of more than
# ``_MEMO_TEXT`` characters since the last answer (a bulk read) too.
_MEMO_TEXT = 48
_MEMO_ENTRIES = 16384
_STEP_TEXT = 24
# Texts of up to this many places are tried a place at a time for where a prefix begins;
# longer ones are searched (``_SecretsScanner._first_open``).
_PLACES_TRIED = 8
# What comes before a held text, as the first character of its key: a character that is no
# word character (for ``\b``), a word character, or the start of the text.
_AFTER_OTHER, _AFTER_WORD, _AT_START = "\x00", "\x01", "\x02"
_CONTEXT = {_AFTER_OTHER: b" ", _AFTER_WORD: b"a", _AT_START: b""}
_WORD_CHARS = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
# The key's first character for the byte before a held text.
_AFTER_BYTE = tuple(_AFTER_WORD if byte in _WORD_CHARS else _AFTER_OTHER for byte in range(256))


# Terminal control sequences (ECMA-48 CSI: ESC "[", parameter bytes, intermediate bytes, a final
# byte), as colored command output and logs carry them: `\x1b[93msk-...\x1b[0m`. Their final
# byte is often a letter ("m"), a word character that would hide the start of the token after
# it from a rule's `\b`. The scanner reads each sequence's final byte as an ESC instead: one
# character for one, so offsets stay exact, and decided by the text before it alone, so a
# stream cut inside a sequence reads it as the whole text does.
_ESC = "\x1b"
_CSI_PARAMS = re.compile(r"[0-?]*")
_CSI_INTERMEDIATES = re.compile(r"[ -/]*")
# Where a scanner is in a sequence at the end of what it was fed.
_CSI_NONE, _CSI_ESC, _CSI_PARAM, _CSI_INTERMEDIATE = range(4)


def _run_end(run: re.Pattern[str], text: str, at: int) -> int:
    """Where the run of ``run``'s characters that starts at ``at`` ends."""
    found = run.match(text, at)
    assert found is not None  # a starred class matches the empty string
    return found.end()


def _mask_csi(text: str, state: int) -> tuple[str, int]:
    """``text`` with the final byte of every CSI sequence replaced by ESC, and the state at
    its end, given the state at its start (a sequence may be cut between two chunks)."""
    masked: list[int] = []
    size = len(text)
    at = 0
    while True:
        if state == _CSI_NONE:
            found = text.find(_ESC, at)
            if found < 0:
                break
            at = found + 1
            state = _CSI_ESC
        if at >= size:
            break
        if state == _CSI_ESC:
            if text[at] != "[":
                state = _CSI_NONE  # another kind of escape: nothing to read
                continue
            at += 1
            state = _CSI_PARAM
        if state == _CSI_PARAM:
            at = _run_end(_CSI_PARAMS, text, at)
            if at >= size:
                break
            state = _CSI_INTERMEDIATE
        at = _run_end(_CSI_INTERMEDIATES, text, at)
        if at >= size:
            break
        if "@" <= text[at] <= "~":
            masked.append(at)
            at += 1
        state = _CSI_NONE  # the sequence ended there, with its final byte or malformed
    if not masked:
        return text, state
    chars = list(text)
    for at in masked:
        chars[at] = _ESC
    return "".join(chars), state


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
        "_csi",
        "_end",
        "_memos",
        "_need",
        "_off",
        "_open_search",
        "_pending",
        "_pos",
        "_seen",
        "_shield",
        "_state",
        "_tail",
        "_track",
        "_trigger_width",
        "_triggers",
        "open_at",
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
        self._open_search = shield._open_search
        # ``open_from``: no match can start before ``_clear``; at its last call the text
        # ended at ``_seen``.
        memos = self._memos = shield._memos
        self._clear = 0
        self._seen = 0
        # The state of the key of the text from ``_clear`` on (``shields.open_tables``); None: not
        # known (the buffer is searched), or a long secret is being read.
        self._state: State | None = None
        if memos is not None:
            self._state = memos.state(_AT_START, 0)
        self._track = False  # ``open_at`` is kept up to date (``track_open``)
        self.open_at = 0  # ``_clear``, while tracked with a known state (``_restore``)
        self._csi = _CSI_NONE  # where the text fed so far ends in a terminal control sequence

    def track_open(self) -> Sequence[OpenAt]:
        self._track = self._memos is not None
        return (self,) if self._track else ()

    def feed(self, chunk: Chunk) -> list[Finding]:
        raw = chunk.raw
        if not raw:
            return []
        if self._csi or _ESC in raw:  # rare: the common text pays one search for ESC
            raw, self._csi = _mask_csi(raw, self._csi)
        end = self._end + len(raw)
        self._end = end
        if self._track and self._state is not None:
            # Tracked, with the held text's key known: ``open_from``'s answer from remembered
            # steps (see there), and nothing else. Every position before the open candidate
            # is decided (no match starts there, now or ever) and the text from it on is the
            # key's: nothing is buffered, and nothing is searched, until a step is not known.
            state = self._state
            try:
                for char in raw:
                    state = state[char]
            except KeyError:
                self._restore()
            else:
                self._state = state
                self.open_at = end - state.held  # ``_clear`` too, from now on (``_restore``)
                return []
        pending = self._pending
        if end - self._pos < self._need:
            pending.append(raw)
            if self._track:
                self.open_at = self._open_token(end, len(raw), 0)
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
                if self._track:
                    self.open_at = self._open_token(end, len(raw), 0)
                return []
        self._buf = buf
        found = self._scan(final=False)
        if self._track:
            self.open_at = self._open_token(end, len(raw), 0)
        return found

    def _restore(self) -> None:
        """The buffer of a tracked scanner that kept none (``feed``): the text from ``_clear``
        on, which is the key's (and, for ``\\b``, a character of the kind the key says comes
        before it: a decision reads nothing else before a position), every position before it
        decided."""
        state = self._state
        assert state is not None
        key = state.key
        context = _CONTEXT[key[0]]
        self._buf = context + key[1:].encode("ascii")
        self._clear = self._pos = clear = self.open_at
        self._off = clear - len(context)
        self._pending.clear()

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        if self._track and self._state is not None:
            self._restore()
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._buf += text.encode("ascii", "replace")
        return self._scan(final=True)

    def open_from(self, end: int, window: int) -> int:
        return self._open_token(end, end - self._seen, window)

    def _open_token(self, end: int, size: int, window: int) -> int:
        """``open_from`` after the last ``size`` characters fed (a token, as a rule)."""
        if self._tail is not None:
            self._state = None  # searched again once the long secret ends
            return self._pos  # the next piece of a long secret starts there
        # The usual call: a token more since the last one (the stream guard asks after every
        # event). What is open after it depends only on the key of the text held at the last
        # call and the token (every decision about a position reads only the text from the
        # character before it on; no match starts before ``_clear``). Answers are remembered
        # by those, as strings a stream already holds: a search costs an RE2 call or more
        # (~0.5 us, several on text RE2 has not seen), more than the rest of a stream's scan.
        state = self._state
        if state is None or self._pos > self._clear:
            return self._open_general(end, window)
        token = self._token(size)
        if token is None:
            return self._open_general(end, window)
        state = self._step(state, token)
        if state is None:
            return self._open_general(end, window)
        self._state = state
        self._seen = end
        self._clear = clear = end - state.held
        return clear

    def _token(self, size: int) -> str | None:
        """The text fed since the last call, if short; None when not known here."""
        if size > _MEMO_TEXT:
            return None  # a bulk read's text: searched once, never remembered
        pending = self._pending
        if pending:
            token = pending[-1]  # one feed since the last call: the stream guard's way
            return token if len(token) == size else None
        # A decision took everything into the buffer (``feed``): the token's ASCII view.
        return self._buf[len(self._buf) - size :].decode("ascii")

    def _step(self, state: State, token: str) -> State | None:
        """The state ``token`` leads to from ``state``, worked out a character at a time
        (``shields.open_tables``) and remembered; None when the held text grows too long for that (a
        key being judged: searched in the buffer)."""
        tables = self._memos
        assert tables is not None
        for char in token:
            after = state.get(char)
            if after is None:
                seen = char if char.isascii() else "?"  # as RE2 is shown it
                after = state.get(seen)
                if after is None:
                    key = state.key
                    if len(key) >= _STEP_TEXT:
                        return None
                    found = self._open_key(key + seen)
                    after = tables.remember(state, seen, found, len(found) - 1)
                if seen != char:  # the character itself leads there too, from now on
                    tables.remember(state, char, after.key, after.held)
            state = after
        return state

    def _open_key(self, text: str) -> str:
        """The key after ``text`` (a key, then the text that followed it), by a search of
        that text alone: its answer depends on nothing else."""
        context = _CONTEXT[text[0]]
        buf = context + text[1:].encode("ascii")
        first = len(context)
        at = self._open_in(buf, first)
        if at == first:
            return text  # a match may still start at its first character
        return _AFTER_BYTE[buf[at - 1]] + text[1 + at - first :]

    def _open_general(self, end: int, window: int) -> int:
        """``open_from`` by the buffer: a search from ``_clear``; its key is kept when short."""
        memos = self._memos
        if memos is None:
            return end - window
        pending = self._pending
        if pending:
            raw = pending[0] if len(pending) == 1 else "".join(pending)
            pending.clear()
            self._buf += raw.encode("ascii", "replace")
        # Positions before ``_clear`` were found to start no match, now or ever: not searched
        # again (hostile text full of rejected matches would have each judged per feed).
        clear = self._clear
        if clear < self._pos:
            clear = self._pos
        buf, off = self._buf, self._off
        at = clear - off
        found = self._open_in(buf, at)
        self._seen = end
        self._clear = answer = off + found
        if end - answer > _MEMO_TEXT or (at == 0 and off):
            # A long held text (a key being judged), or one whose character before is not
            # known (the buffer keeps the character before the first undecided position, so
            # ``at`` is 0 only at the start of the text): searched again next time.
            self._state = None
            return answer
        if found > at:
            before = _AFTER_BYTE[buf[found - 1]]
        else:
            before = _AFTER_BYTE[buf[at - 1]] if at else _AT_START
        key = before + buf[found:].decode("ascii")
        self._state = memos.state(key, len(key) - 1)
        return answer

    def _first_open(self, buf: bytes, at: int, size: int) -> int:
        """``_open_search``'s answer: the first place from ``at`` on where a prefix begins,
        whole or running to the end of the text; -1 when there is none.

        A short text (``_PLACES_TRIED`` places at most) is tried a place at a time with
        anchored patterns, whose DFAs stay cached: a few us, where the search may cost
        hundreds on text it has not seen (see ``SecretsShield``). It is asked about ever-new
        short text after every character of a base64 run (a step not remembered: a key and
        the character after it, two or three places). Longer texts (a held text and the
        token after it) are searched: trying their places one by one costs more."""
        if size - at > _PLACES_TRIED:
            search = self._open_search
            assert search is not None
            return search(buf, at, size)[0][0]
        shield = self._shield
        prefix_at, forming_at = shield._prefix_at, shield._prefix_forming_at
        assert prefix_at is not None and forming_at is not None
        for start in range(at, size):
            if prefix_at(buf, start, size)[0][0] >= 0 or forming_at(buf, start, size)[0][0] >= 0:
                return start
        return -1

    def _open_in(self, buf: bytes, at: int) -> int:
        """Where in ``buf`` (the text to its end) a match may still start, from ``at`` on
        (``len(buf)``: nowhere); ``buf[at - 1]``, if any, is the character before ``at``."""
        size = len(buf)
        start = self._first_open(buf, at, size)
        if start < 0:  # the usual case: no prefix begins in the new text
            return size
        prefix_at = self._shield._prefix_at
        assert prefix_at is not None  # built with _open_search
        if prefix_at(buf, start, size)[0][0] < 0:
            return start  # the beginning of a prefix, at the end of the text
        shield = self._shield
        forming = shield._forming
        assert forming is not None
        while True:
            if forming(buf, start, size)[0][0] != -1:
                return start  # a match may still form or grow there
            # Every match at ``start`` ends before the text does: the decision the scanner
            # will take there once it gets to it (``_take``) can be taken now, and a match
            # it will reject ("AKIAEXAMPLE...", "API_TOKEN=...") holds nothing.
            # ``_match`` asks ``_any_at`` first (no groups: ~1 us) whether any rule matches
            # there; an anchored search of the rules with their groups costs ~20 us.
            if self._match(buf, start, size) is not None:
                return start
            # A prefix and no match ("sk-learn"), or one it will reject: on to the next.
            start = self._first_open(buf, start + 1, size)
            if start < 0:
                return size

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
            # Every match starts with a trigger, so a match at this one or none: an unanchored
            # search from here would run on to the next match, however far (a common word that
            # begins a key, "key" or "api", is a trigger that rarely starts a match).
            matched = self._match(buf, trigger, size)
            if matched is None:
                self._pos = first + 1
                continue
            self._pos = self._take(*matched, found)
        return found

    def _match(self, buf: bytes, at: int, size: int) -> tuple[_Compiled, Spans] | None:
        """The first listed rule that matches at ``at`` in ``buf`` (``_buf``, or a held text
        judged alone by ``open_from``) and accepts its match there, and the spans of its own
        pattern; None when there is none.

        Every rule that matches at a place is judged, in table order, not only the first:
        ``_auth = ...`` that is no base64 blob is still a token key's value.
        """
        shield = self._shield
        if shield._any_at(buf, at, size)[0][0] == -1:
            return None  # the usual answer at a trigger in prose
        # No match is as wide as max_match, so the set never sees the cut end of the context.
        stop = min(size, at + shield._max_match)
        context = buf[at - 1 : stop] if at else b" " + buf[:stop]  # at 0: the text's start
        for index in sorted(shield._rule_set.Match(context) or ()):
            rule = shield._rules[index]
            spans = rule.own(buf, at, size)
            if self._judge(buf, rule, at, _secret_span(rule, spans), spans[0][1]):
                return rule, spans
        return None

    def _take(self, rule: _Compiled, spans: Spans, found: list[Finding]) -> int:
        """Reports the accepted match of ``rule`` (its own spans); returns where the search
        resumes."""
        off = self._off
        end = spans[0][1]
        if rule.rule.veto:
            return off + end
        secret_start, secret_end = _secret_span(rule, spans)
        found.append(self._finding(rule, off + secret_start, off + secret_end))
        if rule.tail is not None:
            self._tail = rule
        return off + end

    def _judge(
        self, buf: bytes, rule: _Compiled, start: int, span: tuple[int, int], end: int
    ) -> bool:
        """Whether ``rule`` takes its match from ``start`` to ``end`` (the secret from
        ``span[0]`` to ``span[1]``; offsets in ``buf``) for a secret."""
        shield = self._shield
        secret_start, secret_end = span
        after = end if rule.rule.after_match else secret_end
        if rule.not_followed_by and after < len(buf) and buf[after] in rule.not_followed_by:
            return False
        secret_bytes = buf[secret_start:secret_end]
        # Only the secret itself is looked at, never past the match: the decision stays one
        # that max_match characters of text are enough to take.
        if (
            rule.rule.defers_to_prefixes
            and shield._defer_to is not None
            and shield._defer_to(secret_bytes, 0, len(secret_bytes))[0][0] != -1
        ):
            return False
        secret = secret_bytes.decode("ascii")
        validator = rule.rule.validator
        if validator is not None and not validator(secret, shield._thresholds):
            return False
        judge = rule.rule.judge
        if judge is None:
            return True
        context = buf[start:secret_start].decode("ascii")
        return judge(context, secret, shield._thresholds)

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
