"""``injection``: prompt-injection and jailbreak detection by weighted rules and a score.

The rules are data (``injection_rules.py``, with the lexicons of ``injection_lexicon.py``): each
has an id (``category.name``), a weight and an RE2 pattern over the normalized view
(case-folded, whitespace collapsed, zero-width removed, lookalikes folded). This module is the
engine that matches them, adds up their weights and reports.

Scoring: each rule counts once (its latest match); overlapping matches count as one piece of
evidence worth the heaviest; only matches within ``window`` normalized characters of the newest
one add up. When the sum reaches ``threshold`` the shield reports one finding and stops: label =
the rule whose match pushed the score over, span = the heaviest match counted (the latest on
ties). Strong cues weigh the threshold on their own; weak ones (a persona switch, "in your
response") only count together.

Matching: rules are matched independently, so a weak rule never hides an overlapping strong one.
A prefilter asks each block of new text whether any rule could match (one regex per group of
rules, word boundaries dropped so RE2's DFA runs fast) and then which (an RE2 ``Set``); only
those rules are searched. Every rule has a bounded width W (<= 95), so a match is final once
W + 1 more characters have been seen; a stream is searched every ``BATCH`` new characters, so
the longest stretch from a match's start to its report is W + 1 + BATCH = ``max_match`` (128).
Matches are counted in (start, rule) order, in streams and whole texts alike: the same findings
either way.
"""

from __future__ import annotations

import re._parser as sre_parse  # type: ignore[import-not-found]  # widths only, never matching
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import re2
from pydantic import Field, field_validator, model_validator

from shields.base import Chunk, Finding, Role, Scanner, Shield
from shields.builtin.injection_rules import CATEGORIES, RULES, Rule
from shields.normalize import OVERRIDE_LABEL, StreamNormalizer, normalize
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = [
    "CATEGORIES",
    "DEFAULT_ROLES",
    "RULES",
    "InjectionShield",
    "InjectionSpec",
    "Rule",
]

# Roles looked at when a spec sets none: where untrusted text arrives. System and developer
# messages are the application's own prompt; assistant turns are the model's own earlier output.
DEFAULT_ROLES = frozenset({Role.USER, Role.TOOL, Role.FUNCTION})


@lru_cache(maxsize=4096)
def _folded(pattern: str) -> str:
    """``pattern`` with its non-ASCII characters folded as the normalizer folds text (Cyrillic
    "а" -> "a"), so a rule matches the normalized view whatever the folding does.

    Done when a shield is built, not at import: the confusables table then loads only for
    policies that use the shield.
    """
    return "".join(char if char.isascii() else _folded_char(char) for char in pattern)


@lru_cache(maxsize=8192)
def _folded_char(char: str) -> str:
    # A lookalike folded to ASCII punctuation must stay a literal (never a range's "-").
    return "".join(f"\\{c}" if c.isascii() and not c.isalnum() else c for c in normalize(char)[0])


_UNBOUNDED = 1 << 16
# The widest built-in rule (tests pin it): with the batch below, max_match stays at 128.
MAX_RULE_WIDTH = 95
# A stream is searched once this many new normalized characters have arrived, not on every
# feed: a tiny chunk then costs a string append, and a match is still reported at most
# BATCH characters later than it could be — which max_match includes.
BATCH = 32
# Characters of already-decided text kept before the next match may start: a rule's
# ``negated_by`` reads them ("don't " before "ignore"). Text already seen, so no hold-back.
LEFT_CONTEXT = 16
_BLOCK = 2048


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    # Many alternations run as one DFA in the Set; give it room so it never falls back.
    options.max_mem = 64 << 20
    return options


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Any:
    """One compiled RE2 per pattern, shared by every shield (matching is thread-safe)."""
    return re2.compile(pattern, _options())


# The prefilter's rules go in groups of about this many bytes of pattern: RE2 builds one DFA per
# regex within ``max_mem``, and a DFA over every rule of every language outgrows it (it then
# discards its states again and again, and searching gets a hundred times slower); a few
# smaller ones each keep their states, and a text is searched once per group.
_GROUP_BYTES = 100_000


@dataclass(frozen=True, slots=True)
class _Group:
    """Some consecutive rules' prefilter: ``first`` is the index of the first one."""

    first: int
    count: int
    any_rule: Any
    which: Any


@lru_cache(maxsize=64)
def _prefilter(patterns: tuple[str, ...]) -> tuple[_Group, ...]:
    """The two questions asked of every window, per group of rules: is anything here, and
    which rules.

    Both use the patterns without word boundaries (they match wherever the rules do, and let
    RE2's DFA run faster). A regex falls back to a slower engine when its DFA runs out of
    memory, but a Set fails instead: so the "no" comes from the regex, and a Set that gives no
    answer after the regex said yes means "search every rule of the group".
    """
    loose = [_without_boundaries(p) for p in patterns]
    if not loose:
        return ()
    spans: list[tuple[int, int]] = []
    first, size = 0, 0
    for index, pattern in enumerate(loose):
        grow = len(pattern.encode())
        if index > first and size + grow > _GROUP_BYTES:
            spans.append((first, index))
            first, size = index, 0
        size += grow
    spans.append((first, len(loose)))
    groups = []
    for start, stop in spans:
        mine = loose[start:stop]
        any_rule = re2.compile("|".join(f"(?:{p})" for p in mine), _options())
        which = re2.Set.SearchSet(_options())
        for pattern in mine:
            which.Add(pattern)
        which.Compile()
        groups.append(_Group(start, stop - start, any_rule, which))
    return tuple(groups)


def _candidates(groups: Iterable[_Group], subject: str | bytes) -> list[int]:
    """The indices of the rules that may match ``subject``, in rule order."""
    found: list[int] = []
    for group in groups:
        if group.any_rule.search(subject) is not None:
            which = group.which.Match(subject) or range(group.count)
            found += sorted(group.first + i for i in which)
    return found


def _without_boundaries(pattern: str) -> str:
    """``pattern`` with its ``\\b`` assertions dropped: it matches wherever the pattern does.

    Word boundaries keep RE2's DFA from skipping ahead; the prefilter does without them.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        pair = pattern[i : i + 2]
        if pair == "\\b":
            i += 2
            continue
        step = 2 if pattern[i] == "\\" else 1
        out.append(pattern[i : i + step])
        i += step
    return "".join(out)


@lru_cache(maxsize=4096)
def _width(pattern: str) -> int:
    """The longest normalized text ``pattern`` can match (its rules are all bounded)."""
    _, high = sre_parse.parse(pattern).getwidth()
    if high >= _UNBOUNDED:
        raise ValueError(f"pattern has unbounded width: {pattern!r}")
    return int(high)


# ---------------------------------------------------------------------------------------------
# The policy spec.
# ---------------------------------------------------------------------------------------------

_RULE_IDS = frozenset(r.id for r in RULES)
_NAMES = frozenset(CATEGORIES) | _RULE_IDS
_MAX_PHRASE = 100


class InjectionSpec(ShieldSpecBase):
    type: Literal["injection"] = "injection"
    # The score (sum of matched rules' weights) at which a text is reported.
    threshold: float = Field(default=1.0, gt=0, le=100)
    # Which built-in rules run: "all", or a list of categories and/or rule ids.
    rules: Literal["all"] | list[str] = "all"
    # Weight overrides by category or rule id (a rule id wins over its category); 0 disables.
    weights: dict[str, float] = Field(default_factory=dict)
    # Extra literal phrases (matched on the normalized view), each weighing ``phrase_weight``.
    phrases: list[str] = Field(default_factory=list, max_length=10_000)
    phrase_weight: float | None = Field(default=None, ge=0, le=100)
    # Signals add up only when they start within this many normalized characters of each
    # other (None: anywhere in the text). A long document's stray weak cues stay apart.
    window: int | None = Field(default=500, ge=100, le=10_000_000)

    @field_validator("rules")
    @classmethod
    def _known_rules(cls, value: Literal["all"] | list[str]) -> Literal["all"] | list[str]:
        if value == "all":
            return value
        if not value:
            raise ValueError("`rules` needs at least one category or rule id (or `all`)")
        for name in value:
            if name not in _NAMES:
                raise ValueError(
                    f"unknown rule {name!r} (categories: {', '.join(CATEGORIES)}; "
                    "or a rule id such as 'override.ignore_previous')"
                )
        return value

    @field_validator("weights")
    @classmethod
    def _known_weights(cls, value: dict[str, float]) -> dict[str, float]:
        for name, weight in value.items():
            if name not in _NAMES:
                raise ValueError(
                    f"unknown rule {name!r} (categories: {', '.join(CATEGORIES)}; "
                    "or a rule id such as 'override.ignore_previous')"
                )
            if not 0 <= weight <= 100:
                raise ValueError(f"{name}: weight {weight} is not between 0 and 100")
        return value

    @field_validator("phrases")
    @classmethod
    def _valid_phrases(cls, value: list[str]) -> list[str]:
        for i, phrase in enumerate(value):
            key = normalize(phrase)[0].strip()
            if not key:
                raise ValueError(f"phrases[{i}]: {phrase!r} is empty after normalization")
            if len(key) > _MAX_PHRASE:
                raise ValueError(
                    f"phrases[{i}]: longer than {_MAX_PHRASE} characters after normalization "
                    "(the stream hold-back must cover the longest match)"
                )
        return value

    @model_validator(mode="after")
    def _block_only(self) -> InjectionSpec:
        if self.action != "block":
            # A score has no single span to cut out: removing one phrase of an injection leaves
            # the rest of it in place.
            raise ValueError("action: the injection shield only supports `block`")
        return self


# ---------------------------------------------------------------------------------------------
# The shield and its scanner.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Active:
    """A rule as configured: compiled, weighted."""

    id: str
    weight: float
    regex: Any
    veto: Any
    # Searched in the few characters before a match ("don't ", "n'", "j'ai "): see Rule.
    negated_by: Any = None


class InjectionShield(Shield):
    type_name = "injection"

    def __init__(self, spec: InjectionSpec) -> None:
        super().__init__(spec)
        self.threshold = spec.threshold
        self.window = spec.window
        selected = (
            RULES
            if spec.rules == "all"
            else [r for r in RULES if r.category in spec.rules or r.id in spec.rules]
        )
        patterns: list[tuple[str, float, str, str | None, int]] = []
        negations: dict[str, str] = {}
        for rule in selected:
            weight = spec.weights.get(rule.id, spec.weights.get(rule.category, rule.weight))
            if weight > 0:
                pattern = _folded(rule.pattern)
                # The veto reads the match's normalized text too ("لا تتجاهل" -> "لl تتجloل").
                veto = None if rule.veto is None else _folded(rule.veto)
                patterns.append((rule.id, weight, pattern, veto, _width(pattern)))
                if rule.negated_by is not None:
                    negations[rule.id] = _folded(rule.negated_by)
        phrase_weight = spec.threshold if spec.phrase_weight is None else spec.phrase_weight
        if phrase_weight > 0:
            for i, phrase in enumerate(spec.phrases):
                key = normalize(phrase)[0].strip()
                patterns.append(
                    (f"custom.phrase[{i}]", phrase_weight, re2.escape(key), None, len(key))
                )
        self._rules = [
            _Active(
                rule_id,
                weight,
                _compiled(pattern),
                None if veto is None else _compiled(veto),
                _compiled(negations[rule_id]) if rule_id in negations else None,
            )
            for rule_id, weight, pattern, veto, _ in patterns
        ]
        self._groups = _prefilter(tuple(p[2] for p in patterns))
        # A match is final once the text one character past its widest extent (a word
        # boundary looks there) has been seen; a batched stream sees it up to BATCH later.
        self._final_after = max((p[4] for p in patterns), default=1) + 1
        self._max_match = self._final_after + BATCH

    @property
    def max_match(self) -> int:
        return self._max_match

    def applies_to(self, role: Role | None) -> bool:
        if role is None:
            return True
        roles = self.spec.roles
        return role in (DEFAULT_ROLES if roles is None else roles)

    def scanner(self) -> Scanner:
        return _InjectionScanner(self)


@dataclass(frozen=True, slots=True)
class _Signal:
    start: int  # normalized offsets: the window, and which signals overlap
    end: int
    weight: float
    orig_start: int
    orig_end: int


class _InjectionScanner(Scanner):
    __slots__ = (
        "_buf",
        "_buf_start",
        "_decided",
        "_done",
        "_next",
        "_shield",
        "_signals",
    )

    def __init__(self, shield: InjectionShield) -> None:
        self._shield = shield
        # Normalized text from LEFT_CONTEXT characters before ``_decided``: one for \b, the
        # rest for a negation right before a match ("don't ignore ...").
        self._buf = ""
        self._buf_start = 0
        # Every match starting before this offset has been counted.
        self._decided = 0
        # Per rule: where its next match may start (its matches never overlap each other).
        self._next = [0] * len(shield._rules)
        self._signals: dict[str, _Signal] = {}  # by rule id
        self._done = False

    def feed(self, chunk: Chunk) -> list[Finding]:
        if self._done or not chunk.norm:
            return []
        # Text under a bidi override displays in an order the view does not hold.
        shield = self._shield
        found = [shield.finding(OVERRIDE_LABEL, *span) for span in chunk.normalizer.overridden]
        self._buf += chunk.norm
        # A match must be reported once ``max_match`` characters from its start have been
        # fed: until the text is that far past the first undecided position, the search
        # can wait. (A short whole text is then searched once, by ``finish``.)
        if self._buf_start + len(self._buf) - self._decided < shield._max_match:
            return found
        return found + self._scan(chunk.normalizer, final=False)

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        if self._done:
            return []
        return self._scan(normalizer, final=True)

    def _scan(self, normalizer: StreamNormalizer, *, final: bool) -> list[Finding]:
        shield = self._shield
        buf, base = self._buf, self._buf_start
        end = base + len(buf)
        # Matches starting before ``stop`` can no longer change: all the text their rules
        # could look at has been seen.
        stop = end if final else end - shield._final_after + 1
        decided = self._decided
        rules = shield._rules
        # Long texts go in blocks, so that a rule the prefilter flags is searched near where
        # it matched rather than over the whole text. Each block's matches start after the
        # previous block's, so counting block by block is counting the whole in (start, rule)
        # order — as streams and whole texts both do — and the text after the block that
        # reaches the threshold need not be searched at all.
        for block in range(decided, stop, _BLOCK):
            found: list[tuple[int, int, int]] = []  # (start, rule index, end)
            self._search(block, min(block + _BLOCK, stop), found)
            if not found:
                continue
            for start, index, match_end in sorted(found):
                finding = self._count(rules[index], start, match_end, normalizer)
                if finding is not None:
                    self._done = True
                    self._buf = ""
                    return [finding]
        self._decided = max(decided, stop)
        keep_from = max(base, self._decided - LEFT_CONTEXT)
        self._buf = buf[keep_from - base :]
        self._buf_start = keep_from
        return []

    def _search(self, first: int, last: int, found: list[tuple[int, int, int]]) -> None:
        """Finds the matches that start in [first, last) (global normalized offsets)."""
        shield = self._shield
        base = self._buf_start
        # One character of left context (\b), and enough right context to complete a match.
        lo = max(first - 1, base)
        region = self._buf[lo - base : last - base + shield._final_after]
        # ASCII text goes to RE2 as bytes (the same offsets, and an ASCII byte matches where
        # its character does): the wrapper then skips encoding the text for every call and
        # mapping every match's offsets back to characters.
        subject: str | bytes = region.encode("ascii") if region.isascii() else region
        for index in _candidates(shield._groups, subject):
            rule = shield._rules[index]
            for match in rule.regex.finditer(subject, max(first, self._next[index]) - lo):
                start = lo + match.start()
                if start >= last:
                    break
                self._next[index] = lo + match.end()
                if rule.veto is not None and rule.veto.search(match.group()) is not None:
                    continue
                if rule.negated_by is not None:
                    left = self._buf[max(start - LEFT_CONTEXT, base) - base : start - base]
                    if rule.negated_by.search(left) is not None:
                        continue
                found.append((start, index, lo + match.end()))

    def _count(
        self, rule: _Active, start: int, end: int, normalizer: StreamNormalizer
    ) -> Finding | None:
        shield = self._shield
        signals = self._signals
        if shield.window is not None:
            while signals and next(iter(signals.values())).start < start - shield.window:
                del signals[next(iter(signals))]
        # A rule counts once: its latest match stands for it (and keeps the state bounded by
        # the number of rules, however often a text repeats a phrase). Matches come in order
        # of start, so the dict stays in that order.
        signals.pop(rule.id, None)
        orig_start, orig_end = normalizer.orig_span(start, end)
        signals[rule.id] = _Signal(start, end, rule.weight, orig_start, orig_end)
        # Rounding: 0.3 + 0.7 must reach 1.0.
        if _score(signals.values()) < shield.threshold - 1e-9:
            return None
        best = max(reversed(signals.values()), key=lambda s: s.weight)
        return shield.finding(rule.id, best.orig_start, best.orig_end)


def _score(signals: Iterable[_Signal]) -> float:
    """Distinct pieces of evidence, added up (one signal per rule, in order of start).

    Overlapping matches are one piece of evidence worth the heaviest of them: "ignore all
    previous instructions" matches several override rules, and one phrase must not weigh as
    much as several independent cues.
    """
    total = 0.0
    group_end, group_weight = -1, 0.0
    for signal in signals:
        if signal.start < group_end:
            group_end = max(group_end, signal.end)
            group_weight = max(group_weight, signal.weight)
        else:
            total += group_weight
            group_end, group_weight = signal.end, signal.weight
    return total + group_weight


register(InjectionSpec, InjectionShield)
