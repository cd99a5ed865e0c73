"""Adaptive hold-back: the stream guard holds only what may still turn out to be a match.

Three kinds of proof. Differential: the adaptive guard finds exactly what the fixed-window
guard finds and sends the same bytes (a block leaves the same refusal, after at least as much
of the text); soundness: nothing reported later starts before what was declared safe. And
tightness: once no scanner has an open candidate covering a character, it is not held —
checked against oracles that do not share the scanners' code (a brute-force trie suffix, the
``regex`` module's partial matching, the character classes of an e-mail local part).
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import GuardState, StreamGuard
from shields.base import Action, Chunk, Finding, Shield
from shields.builtin.invisible_text import category_of
from shields.builtin.regex import prefix_pattern
from shields.builtin.secrets import RULES
from shields.decode_scan import DecodeShield
from shields.normalize import StreamNormalizer, normalize
from shields.policy import CompiledPolicy, load_policy, parse_policy
from shields.scan import TextScan
from tests.shields.test_secrets import FAKES
from tests.support.fake_upstream import chunk, sse
from tests.support.stream_helpers import channel_text, deltas, events_of, payloads

DEFAULT = load_policy("policies/default.yaml")
STRICT = load_policy("policies/strict.yaml")
REDACTING = parse_policy(
    """
name: adaptive-redact
stream: {holdback_chars: 160}
output:
  - {id: banned, type: denylist, phrases: [nerve agent recipe, build a bomb], words: [sarin]}
  - {id: keys, type: secrets, action: redact, placeholder: "[KEY]"}
  - {id: hidden, type: invisible_text, action: redact}
"""
)
SPACED = parse_policy(
    """
name: adaptive-spaced
stream: {holdback_chars: 40}
output:
  - id: spelled
    type: denylist
    phrases: [bomb, nerve agent]
    words: [napalm]
    spaced_letters: true
    spaced_max_gap: 2
"""
)
REGEXES = parse_policy(
    """
name: adaptive-regex
stream: {holdback_chars: 64}
output:
  - id: internal
    type: regex
    action: redact
    patterns:
      ['\\btok_[a-z0-9]{16}\\b', 'corp-[a-z0-9]+\\.internal', '[0-9]{3}-[0-9]{4}', 'bo', 'omb']
  - id: raw
    type: regex
    action: redact
    normalize: false
    patterns: ['AKIA[A-Z0-9]{4,}', '(?i)sk-[a-z]+']
"""
)

# Prose, near-misses of every prefix the default policy knows, and the real thing.
PROSE = [
    "Sure, here is how it works.",
    "the token is",
    "tokens are counted",
    "passwords should be hashed",
    "use sk-learn for that",
    "sk-",
    "sk- is a prefix",
    "AKIA",
    "ghp_",
    "-----",
    "--- a rule",
    "eyJ",
    "secret",
    "password:",
    "api_key =",
    "`export API_TOKEN=...`",
    "build a b",
    "build a",
    "sarin",
    "sarinx",
    "nerve agent",
    "make napalm",
    "enrich uranium",
    "bomb",
    "x\u200by",
    "\u200b",
    "\U000e0041\U000e0042",
    "\u00ad",  # a soft hyphen alone passes; two are a run
    "\u00ad\u00ad",
    "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # a flag
    "\U0001f3f4\U000e0067\U000e0062",  # tag letters that may still become one
    "\U0001f469\u200d\U0001f4bb",  # a joiner between emoji
    "\u00e9\u200d",  # a joiner whose exemption waits for the next character
    "caf\u00e9",
    "ｂｕｉｌｄ ａ ｂｏｍｂ",
    "bob@example.com",
    "tok_0123456789abcdef",
    "tok_01234",
    "corp-db1.internal",
    "corp-",
    "bomb",
    "555-1234",
    "b.o.m.b",
    "b o m",
    "n a p a l m",
    "a b c",
    "U.S.A.",
    "e.g.",
    "b. o. m. b.",
    "n-e-r-v-e a-g-e-n-t",
    "call 555-123-4567",
    "4111 1111 1111 1111",
    '{"city": "Paris", "days": 3}',
    "```python\nprint(1)\n```",
    "\n",
    " ",
]
SEPARATORS = ["", " ", "\n", ", "]


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Pieces of prose, near-misses, banned phrases and real fake secrets, joined."""
    pieces = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        if draw(st.integers(min_value=0, max_value=7)) == 0:
            rule = draw(st.sampled_from(sorted(FAKES)))
            fragment, _ = FAKES[rule](random.Random(draw(st.integers(0, 2**16))))
            pieces.append(fragment)
        else:
            pieces.append(draw(st.sampled_from(PROSE)))
        pieces.append(draw(st.sampled_from(SEPARATORS)))
    return "".join(pieces)


chunkings = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12)


def chunked(text: str, sizes: list[int]) -> list[str]:
    out, pos, i = [], 0, 0
    while pos < len(text):
        out.append(text[pos : pos + sizes[i % len(sizes)]])
        pos, i = pos + len(out[-1]), i + 1
    return out


def key(finding: Finding) -> tuple[str, str, int, int]:
    return finding.shield_id, finding.label, finding.start, finding.end


def scan_steps(
    shields: tuple[Shield, ...], holdback: int, pieces: list[str], *, adaptive: bool
) -> tuple[list[Finding], list[tuple[int, int]], list[list[Finding]]]:
    """Feeds ``pieces``: all findings, (received, safe_end) after each feed, and the findings
    each feed (and finally ``finish``) reported."""
    scan = TextScan(shields, holdback=holdback, adaptive=adaptive)
    steps: list[tuple[int, int]] = []
    reported: list[list[Finding]] = []
    for piece in pieces:
        reported.append(scan.feed(piece))
        steps.append((scan.received, scan.safe_end))
    reported.append(scan.finish())
    return [f for found in reported for f in found], steps, reported


# -- differential: TextScan -------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts(),
    sizes=chunkings,
    policy=st.sampled_from([DEFAULT, STRICT, REDACTING, REGEXES, SPACED]),
)
def test_adaptive_scan_finds_what_the_fixed_window_finds_and_releases_no_later(
    text: str, sizes: list[int], policy: CompiledPolicy
) -> None:
    shields, holdback = policy.output_shields, policy.holdback
    pieces = chunked(text, sizes)
    fixed, fixed_steps, _ = scan_steps(shields, holdback, pieces, adaptive=False)
    adaptive, steps, reported = scan_steps(shields, holdback, pieces, adaptive=True)
    assert sorted(map(key, adaptive)) == sorted(map(key, fixed))
    previous = 0
    for i, ((received, safe), (_, fixed_safe)) in enumerate(zip(steps, fixed_steps, strict=True)):
        # Never behind the fixed window (holdback_chars is the bound), never backwards.
        assert fixed_safe <= safe <= received
        assert safe >= previous
        previous = safe
        # Sound: whatever is reported later (by a feed or by finish) starts at the safe point
        # or after it.
        later = [f for found in reported[i + 1 :] for f in found if f.end > f.start]
        assert all(f.start >= safe for f in later), (safe, later)


# -- differential: the stream guard -----------------------------------------------------------


def guard_run(policy: CompiledPolicy, body: bytes, *, adaptive: bool) -> tuple[bytes, StreamGuard]:
    context = StreamContext(model="m", n=1, include_usage=False)
    guard = StreamGuard(policy, context, adaptive_holdback=adaptive)
    out = []
    for event in events_of(body):
        out.append(guard.feed(event))
        out.append(guard.flush())  # a network read per event: a model's pace
    out.append(guard.end())
    return b"".join(out), guard


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts(),
    sizes=chunkings,
    policy=st.sampled_from([DEFAULT, STRICT, REDACTING, REGEXES, SPACED]),
    field=st.sampled_from(["content", "reasoning_content", "arguments"]),
)
def test_adaptive_guard_sends_the_same_bytes_as_the_fixed_window_guard(
    text: str, sizes: list[int], policy: CompiledPolicy, field: str
) -> None:
    body = sse(*deltas(text, field, sizes), chunk({}, finish_reason="stop"))
    fixed_out, fixed = guard_run(policy, body, adaptive=False)
    out, guard = guard_run(policy, body, adaptive=True)
    assert guard.state is fixed.state
    assert sorted(map(key, guard.findings)) == sorted(map(key, fixed.findings))
    if guard.state is GuardState.DONE:
        assert out == fixed_out  # allowed or redacted: byte for byte the same stream
        return
    assert guard.state is GuardState.BLOCKED
    # The same refusal, after at least as much of the text, and none of the match.
    released, fixed_released = channel_text(out, field), channel_text(fixed_out, field)
    assert released.startswith(fixed_released)
    assert payloads(out)[-2:] == payloads(fixed_out)[-2:]
    if not any(f.action is Action.REDACT for f in guard.findings):
        assert text.startswith(released)
        blocking = [f for f in guard.findings if f.action is Action.BLOCK]
        assert len(released) <= min(f.start for f in blocking)


# -- tightness: nothing held without an open candidate -------------------------------------------


PHRASES = ["nerve agent recipe", "build a bomb", "bomber", "sarin"]
DENY = parse_policy(
    f"""
name: deny-only
stream: {{holdback_chars: 40}}
output:
  - {{id: banned, type: denylist, phrases: {PHRASES[:3]}, words: [sarin]}}
"""
)


def trie_suffix_start(text: str, keys: list[str]) -> int:
    """Brute force: where the longest suffix of ``text`` that begins some key starts."""
    for start in range(len(text) + 1):
        tail = text[start:]
        if tail and any(k.startswith(tail) for k in keys):
            return start
    return len(text)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="abdegimnorstu ", max_size=80),
    sizes=chunkings,
)
def test_denylist_holds_exactly_the_pending_prefix(text: str, sizes: list[int]) -> None:
    """The normalizer leaves this alphabet as it is (single spaces only), so the oracle can
    work on the text itself: after every feed the safe point is where the longest suffix
    that begins a key starts — not a character earlier (lazy), nor later (a leak)."""
    text = re.sub(" +", " ", text)
    scan = TextScan(DENY.output_shields, holdback=DENY.holdback, adaptive=True)
    fed = ""
    for piece in chunked(text, sizes):
        scan.feed(piece)
        fed += piece
        expected = max(trie_suffix_start(fed, PHRASES), len(fed) - DENY.holdback, 0)
        assert scan.safe_end == expected, (fed, scan.safe_end, expected)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="abdegimnorstu ", max_size=80), sizes=chunkings)
def test_the_guard_releases_every_event_before_the_open_candidate(
    text: str, sizes: list[int]
) -> None:
    """At the guard: after each read, every event whose text ends before the open candidate
    has left, and none after it."""
    text = re.sub(" +", " ", text)
    context = StreamContext(model="m", n=1, include_usage=False)
    guard = StreamGuard(DENY, context)
    released = b""
    fed = ""
    ends = [0]  # where each event's text ends
    events = events_of(sse(*deltas(text, "content", sizes), done=False))
    for event, piece in zip(events, chunked(text, sizes), strict=True):
        released += guard.feed(event) + guard.flush()
        if guard.closed:
            return  # blocked: the zero-leak tests cover what leaves then
        fed += piece
        ends.append(len(fed))
        safe = max(trie_suffix_start(fed, PHRASES), len(fed) - DENY.holdback)
        expected = max(end for end in ends if end <= safe)
        assert len(channel_text(released, "content")) == expected


SECRETS = next(s for s in DEFAULT.output_shields if s.type_name == "secrets")
# The rules' patterns as the ``regex`` module reads them, for partial matching.
_COMBINED = "|".join(f"(?:{rule.prefix}{rule.body})" for rule in RULES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), sizes=chunkings)
def test_secrets_hold_nothing_that_cannot_begin_a_match(text: str, sizes: list[int]) -> None:
    """Whenever the secrets shield holds text, a rule's match starts at its first held
    character, whole or still possible at the end of the text (``regex``'s partial matching,
    an engine the shield does not use) — or the next piece of a long secret (a JWT's, a PEM
    block's) does, right where the last one reported ends."""
    regex = pytest.importorskip("regex")
    pattern = regex.compile(_COMBINED)
    text = text.encode("ascii", "replace").decode()  # the shield's own view of the text
    scan = TextScan((SECRETS,), holdback=DEFAULT.holdback, adaptive=True)
    fed = ""
    ends: set[int] = set()
    for piece in chunked(text, sizes):
        ends.update(f.end for f in scan.feed(piece))
        fed += piece
        safe = scan.safe_end
        if len(fed) - DEFAULT.holdback < safe < len(fed) and safe not in ends:
            assert pattern.match(fed, safe, partial=True) is not None, (fed, safe)


# A second secrets shield of the same rules: its remembered answers are its own.
SECRETS_SEARCHED = next(
    s for s in load_policy("policies/default.yaml").output_shields if s.type_name == "secrets"
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), sizes=chunkings)
def test_secrets_remembered_answers_are_what_a_search_finds(text: str, sizes: list[int]) -> None:
    """``open_from`` answers a stream from what it remembers of earlier texts (per shield,
    across streams: hypothesis runs them all through ``SECRETS``); a scanner made to search its
    buffer every time must hold exactly as much after every feed."""
    remembered = TextScan((SECRETS,), holdback=DEFAULT.holdback, adaptive=True)
    searched = TextScan((SECRETS_SEARCHED,), holdback=DEFAULT.holdback, adaptive=True)
    scanner = searched._scanners[0][1]
    for piece in chunked(text, sizes):
        scanner._state = None  # type: ignore[attr-defined]  # nothing remembered: a search
        assert sorted(map(key, remembered.feed(piece))) == sorted(map(key, searched.feed(piece)))
        assert remembered.safe_end == searched.safe_end, (text, piece)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts(), sizes=chunkings)
def test_regex_holds_nothing_that_cannot_begin_a_match(text: str, sizes: list[int]) -> None:
    """As for secrets: a held character begins a match of a pattern, whole or possible."""
    regex = pytest.importorskip("regex")
    for shield in REGEXES.output_shields:
        combined = "|".join(f"(?:{p})" for p in shield.spec.patterns)
        raw = not shield.spec.normalize
        pattern = regex.compile(combined if raw else f"(?i:{combined})")
        scan = TextScan((shield,), holdback=REGEXES.holdback, adaptive=True)
        fed = ""
        for piece in chunked(text, sizes):
            scan.feed(piece)
            fed += piece
            view = fed if raw else normalize(fed)[0]
            held = len(fed) - scan.safe_end
            if 0 < held < REGEXES.holdback and fed.isascii() and (raw or view == fed.lower()):
                start = len(view) - held
                assert pattern.match(view, start, partial=True) is not None, (fed, held)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab.-_+ x\u200b\u00ad\u2060\U000e0041", max_size=60),
    sizes=chunkings,
)
def test_invisible_text_holds_only_invisible_characters(text: str, sizes: list[int]) -> None:
    shield = next(s for s in DEFAULT.output_shields if s.type_name == "invisible_text")
    scan = TextScan((shield,), holdback=DEFAULT.holdback, adaptive=True)
    fed = ""
    for piece in chunked(text, sizes):
        scan.feed(piece)
        fed += piece
        held = fed[scan.safe_end :]
        assert all(category_of(char) is not None for char in held), held


PII = next(s for s in STRICT.output_shields if s.type_name == "pii")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="abcxyz._- ,!\n", max_size=80), sizes=chunkings)
def test_pii_holds_only_the_word_a_later_at_sign_would_make_an_address(
    text: str, sizes: list[int]
) -> None:
    """Without digits or "@", only an e-mail can still form: from the run of local-part
    characters at the end of the text (or the last two letters, an IBAN's country code, or a
    run of hex letters, which a digit may still follow)."""
    scan = TextScan((PII,), holdback=STRICT.holdback, adaptive=True)
    fed = ""
    for piece in chunked(text, sizes):
        scan.feed(piece)
        fed += piece
        norm = normalize(fed)[0]
        local = re.search(r"[a-z0-9_.%+\-]{0,65}\Z", norm)
        assert local is not None
        held = len(norm) - local.start()
        assert len(normalize(fed[scan.safe_end :])[0]) == held, (fed, scan.safe_end)


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet="hHtTpPsSwW/\\ x.:\u212a\u0130\u017f", max_size=12))
def test_links_partial_url_start_is_the_longest_end_that_lowers_to_one(text: str) -> None:
    """The end of a text that may still begin a URL: the longest of its last five characters
    that lowers to "h", "htt", "www", "/"..."""
    from shields.builtin.links import _PARTIAL_AT_END, _PARTIAL_ENDS

    partials = {"h", "ht", "htt", "http", "https", "w", "ww", "www", "/", "\\"}
    size = min(5, len(text))
    expected = next(
        (len(text) - n for n in range(size, 0, -1) if text[-n:].lower() in partials), None
    )
    found = _PARTIAL_AT_END.search(text, len(text) - size) if size else None
    assert (found.start() if found else None) == expected
    if expected is not None:
        assert text[-1] in _PARTIAL_ENDS


# -- the prefix patterns --------------------------------------------------------------------


@settings(max_examples=500, deadline=None)
@given(
    rule=st.sampled_from(RULES),
    seed=st.integers(0, 2**16),
    cut=st.integers(min_value=1, max_value=400),
)
def test_every_prefix_of_a_secret_is_a_possible_match(rule: Any, seed: int, cut: int) -> None:
    """``prefix_pattern`` accepts every prefix of every match (what makes holding sound)."""
    fragment, _ = FAKES[rule.id](random.Random(seed))
    whole = re2.compile(rule.prefix + rule.body)
    found = whole.search(fragment)
    assert found is not None
    matched = fragment[found.start() : found.end()]
    prefix = matched[: min(cut, len(matched))]
    forming = prefix_pattern(rule.prefix + rule.body)
    assert forming is not None
    options = re2.Options()
    options.case_sensitive = True
    assert re2.compile(f"(?:{forming})\\z", options).match(prefix) is not None, prefix


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet="skAIa-_pre:= \"'tokenwd0123456789KXZ", max_size=30))
def test_prefix_pattern_accepts_what_partial_matching_accepts(text: str) -> None:
    regex = pytest.importorskip("regex")
    options = re2.Options()
    options.case_sensitive = True
    for rule in RULES:
        pattern = rule.prefix + rule.body
        forming = prefix_pattern(pattern)
        assert forming is not None, rule.id
        partial = regex.fullmatch(pattern, text, partial=True)
        if text and partial is not None:
            assert re2.compile(f"(?:{forming})\\z", options).match(text) is not None


def test_patterns_prefix_pattern_does_not_translate_fall_back() -> None:
    assert prefix_pattern(r"\pL+x") is None  # RE2 only: Python would read it otherwise
    assert prefix_pattern(r"[[:alpha:]]+") is None
    assert prefix_pattern(r"abc") is not None


def test_every_shield_of_the_shipped_output_policies_is_adaptive() -> None:
    for policy in (DEFAULT, STRICT, REGEXES, SPACED):
        for shield in policy.output_shields:
            assert shield.adaptive_holdback, shield.id


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="bomn apl.-", max_size=60), sizes=chunkings)
def test_spelled_out_matching_holds_only_a_run_that_may_still_spell_an_entry(
    text: str, sizes: list[int]
) -> None:
    """With ``spaced_letters``, what is held beyond the plain prefix is a run of single letters
    and separators that may still grow (no word of two letters in it), or spells the beginning
    of an entry's letters."""
    scan = TextScan(SPACED.output_shields, holdback=SPACED.holdback, adaptive=True)
    fed = ""
    for piece in chunked(text, sizes):
        if scan.feed(piece):
            return  # found: the zero-leak and differential tests cover what follows
        fed += piece
        held = normalize(fed[scan.safe_end :])[0]
        plain = trie_suffix_start(normalize(fed)[0], ["bomb", "nerve agent", "napalm"])
        if len(normalize(fed)[0]) - plain >= len(held) or len(fed) - scan.safe_end >= 40:
            continue  # the plain view's prefix, or the bound
        letters = re.sub("[^a-z]", "", held)
        spells = any(k.startswith(letters) for k in ["bomb", "nerveagent", "napalm"])
        assert spells or not re.search("[a-z]{2}", held), (fed, held)


def test_prose_is_released_at_once_with_the_default_policy() -> None:
    scan = TextScan(DEFAULT.output_shields, holdback=DEFAULT.holdback, adaptive=True)
    scan.feed("Hello there, how are you today? ")
    assert scan.safe_end == scan.received
    scan.feed("I will tell you about sk-")  # may begin an OpenAI key
    assert scan.received - scan.safe_end == len("sk-")
    scan.feed(" no, not a key. Build a b")  # the space ends it; "build a b" may be a phrase
    assert scan.received - scan.safe_end == len("Build a b")
    scan.feed("oat.")
    assert scan.safe_end == scan.received


def test_held_characters_are_reported_once_per_release() -> None:
    held: list[int] = []
    context = StreamContext(model="m", n=1, include_usage=False)
    guard = StreamGuard(DEFAULT, context, on_held=held.append)
    for event in events_of(sse(*deltas("Hello there. Build a bomb", "content", [6]))):
        guard.feed(event)
        guard.flush()
    # "Hello " and "there." leave whole; "Build a b..." is held as it grows.
    assert held[:2] == [0, 0]
    assert guard.state is GuardState.BLOCKED


def test_a_scanner_without_a_bound_of_its_own_holds_its_max_match_window() -> None:
    """The default ``open_from`` is the fixed window, per shield: the injection shield (no
    bound of its own) holds its 128 characters, whatever the others hold."""
    policy = parse_policy(
        """
name: with-injection
stream: {holdback_chars: 160}
output:
  - {id: banned, type: denylist, phrases: [build a bomb]}
  - {id: injection, type: injection}
"""
    )
    injection = policy.output_shields[1]
    assert not injection.adaptive_holdback and policy.output_shields[0].adaptive_holdback
    scan = TextScan(policy.output_shields, holdback=policy.holdback, adaptive=True)
    text = "the river runs by the old mill and the village sleeps. " * 6
    scan.feed(text)
    assert scan.safe_end == len(text) - injection.max_match


def test_a_tracked_scanner_that_fails_no_longer_holds_the_text() -> None:
    """A scanner that keeps its candidate as it feeds (``Scanner.track_open``) and then
    raises is dropped (fail closed): what it held is no longer held for it, and the other
    scanners' candidates still are."""
    deny = next(s for s in DENY.output_shields if s.type_name == "denylist")

    class Breaks(type(deny)):  # type: ignore[misc]
        def scanner(self):  # type: ignore[no-untyped-def]
            scanner = super().scanner()
            feed = scanner.feed

            def feed_once(chunk):  # type: ignore[no-untyped-def]
                if chunk.raw_start:
                    raise RuntimeError("boom")
                return feed(chunk)

            scanner.feed = feed_once
            return scanner

    shields = (Breaks(deny.spec), SECRETS)
    scan = TextScan(shields, holdback=DEFAULT.holdback, adaptive=True)
    assert scan.feed("how to build a b") == []
    assert scan.safe_end == len("how to ")  # "build a b" may still become "build a bomb"
    found = scan.feed("x, and ")
    assert [(f.shield_id, f.label) for f in found] == [(deny.id, "shield_error")]
    # Only the secrets shield is left, and nothing it reads is open after ", and ".
    assert scan.safe_end == len("how to build a bx, and ")


@pytest.mark.parametrize("sizes", [[1], [2], [3], [5], [2, 7]])
def test_the_deny_list_finds_an_entry_whose_steps_it_remembers(sizes: list[int]) -> None:
    """Tracked, the deny list runs its automaton over a piece only when a step through it is
    not remembered, and a step into a state where an entry ends never is: an entry is found
    however often the text before it, and the beginning of it, were seen before."""
    text = "we build a bomber and sarin. we build a bomb, and sarin"
    whole = sorted(
        map(key, scan_steps(DENY.output_shields, DENY.holdback, [text], adaptive=False)[0])
    )
    assert len(whole) == 5  # build a bomb (twice), bomber, sarin (twice)
    for _ in range(3):  # the shield remembers more steps every time
        found, _, _ = scan_steps(
            DENY.output_shields, DENY.holdback, chunked(text, sizes), adaptive=True
        )
        assert sorted(map(key, found)) == whole


# -- tracked candidates: what a scanner keeps as it feeds is what it answers when asked ----------


def tracked_and_asked(
    shield: Shield, pieces: list[str], reference: Callable[[Any, int], int] | None = None
) -> list[tuple[str, int, int]]:
    """Feeds ``pieces`` to two scanners of ``shield``, one keeping its open candidate as it
    feeds (``track_open``) and one asked (``open_from``), in the shield's offsets: after each
    feed, (the text so far, the tracked answer, the asked one). ``reference``: another way to
    work out the asked scanner's answer from its state, which it must equal."""
    tracked, asked = shield.scanner(), shield.scanner()
    parts = tracked.track_open()
    assert parts, f"{shield.type_name} does not track its open candidate"
    normalizer = StreamNormalizer()
    out = []
    fed = ""
    for piece in pieces:
        raw_start, norm_start = normalizer.orig_len, normalizer.norm_len
        norm = normalizer.feed(piece)
        chunk = Chunk(piece, raw_start, norm, norm_start, normalizer)
        assert sorted(map(key, tracked.feed(chunk))) == sorted(map(key, asked.feed(chunk)))
        fed += piece
        end = normalizer.orig_len if shield.matches_raw else normalizer.norm_len
        held = min(min(part.open_at for part in parts), end)
        answer = min(asked.open_from(end, shield.max_match), end)
        if reference is not None:
            assert answer == reference(asked, end), (fed, answer)
        out.append((fed, held, answer))
    return out


def pii_open_by_loops(scanner: Any, end: int) -> int:
    """The PII scanner's open candidate as its state defines it (``pii_scanner``'s docstring),
    a character at a time with Python's own ``isalnum`` (the scanner finds the runs in C): the
    first undecided digit run less its lead and hex-and-colon run, and the local-part run
    before the end and before an undecided "@"."""
    buf, base = scanner._buf, scanner._base

    def run_start(stop: int, member: Callable[[str], bool], reach: int) -> int:
        i = stop - base
        low = max(0, i - reach)
        while i > low and member(buf[i - 1]):
            i -= 1
        return base + i

    def local(char: str) -> bool:
        return char.isalnum() or char in "_.%+-"

    at = end
    lead = run_start(scanner._pos, lambda c: c in "abcdefghijklmnopqrstuvwxyz+(", 2)
    lead = min(lead, run_start(scanner._pos, lambda c: c in "0123456789abcdef:.", 46))
    at = min(at, max(lead, scanner._done))
    at = min(at, run_start(end, local, 65))
    if scanner._at < end:
        at = min(at, run_start(scanner._at, local, 65))
    return at


# Prose, digits in every role a number plays, the characters around an e-mail address, the
# lead and hex-and-colon starts ("(", "+", ":"), and non-ASCII letters (the local part's
# ``\w`` is Unicode).
PII_ALPHABET = "abcxyz09 .,_-+%(:@\n\u00e9\u00df\u0436\u00b2\u200b"


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet=PII_ALPHABET, max_size=120)
    | st.lists(st.sampled_from([*PROSE, "jane.doe", "@example.org", "+44 20 7946", "(07) "])).map(
        "".join
    ),
    sizes=chunkings,
)
def test_pii_tracked_candidate_is_what_it_answers_when_asked(text: str, sizes: list[int]) -> None:
    """The PII scanner keeps its open candidate as it feeds, taking a shortcut in prose (the
    local-part run of an ASCII tail, by ``str.rstrip``): after every feed it is exactly what
    ``open_from`` answers. A shortcut that missed a local-part character, the "(" or ":" that
    hands over to the general case, or a digit run still undecided would hold less."""
    steps = tracked_and_asked(PII, chunked(text, sizes), reference=pii_open_by_loops)
    for fed, tracked, asked in steps:
        assert tracked == asked, (fed, tracked, asked)
        norm = normalize(fed)[0]
        if not set(norm) & set("0123456789@(:"):
            # Nothing but an e-mail address can form: the oracle is the local-part run.
            local = re.search(r"[\w.%+\-]{0,65}\Z", norm)
            assert local is not None
            assert tracked == local.start(), (fed, tracked)


def test_pii_tracked_candidate_goes_back_to_a_lead_or_a_colon() -> None:
    """Examples of the cases where the shortcut hands over: the word before a "(" (a phone
    number's lead) and a hex-and-colon run, and a run longer than a local part."""
    cases = {
        "call (": 5,  # "(" may lead "(07) ..."
        "call (ab": 6,  # the general case: "ab" may still be an IBAN's country code
        "call (a": 5,  # one letter after "(": the lead "(a" reaches the "("
        "f(ab": 2,  # a call's argument: the lead reaches no further back than the word
        "see fe80:ab": 4,  # "fe80:ab" may still be an IPv6 address
        "ip a.b:9": 3,  # "a.b:9" too (dots after a colon), though the local-part run is "9"
        "ip ::ffff:1.2": 3,
        "tel +44 ": 4,  # a row of numbers may go on
        "x" * 80: 80 - 65,  # no local part is longer than 64: the last 65 are held
        "jane.doe": 0,
        "name\u00e9": 0,
    }
    for text, start in cases.items():
        steps = tracked_and_asked(PII, list(text), reference=pii_open_by_loops)
        assert steps[-1][1] == steps[-1][2] == start, (text, steps[-1])


def test_pii_tracked_candidate_follows_the_text_across_scans_and_runs() -> None:
    """What a tracked PII scanner keeps between feeds — the local-part run at the end of the
    text (grown token by token, across the scans that digits and "@" cause), and the lead of
    the undecided digit run (kept while the run stays undecided) — is never stale: a digit
    run decided and a new one undecided elsewhere, with and without a lead, a word grown
    after a scan, and an "@" left undecided, each answered as ``open_from`` answers."""
    pieces = [
        "call (07",  # an undecided run after a lead
        ") 12 ",  # decided
        "or fe80:ab",  # no digit run undecided; a hex-and-colon run at the end
        " 4",  # a new undecided run, no lead
        "5 six",  # decided; a word after the scan
        "ty",  # the word grows without a scan
        " x9",  # a digit inside a word, undecided
        "y me(a",  # a lead of one letter
        "b jane",
        ".doe@",  # an "@" that waits for its domain
        "exa",
        "mple.org ok",
    ]
    steps = tracked_and_asked(PII, pieces, reference=pii_open_by_loops)
    for fed, tracked, asked in steps:
        assert tracked == asked, (fed, tracked, asked)
    # "(07) 12 " may still grow into a phone number (held from its "("), then "fe80:ab" into
    # an IPv6 address, then the run "4" is undecided.
    assert [held for _, held, _ in steps][:4] == [5, 5, 16, 24]


DECODE = DecodeShield(STRICT.output_shields)
# Encoded runs that decode to what the strict policy's shields find, and near-misses.
ENCODED = [
    base64.b64encode(b"pipe bomb and ricin").decode(),
    base64.b64encode(b"mail jane.doe@example.org now").decode(),
    b"pipe bomb".hex(),
    "see%20pipe%20bomb%20here",
    "in rot13: cvcr obzo",
    "QUJD",
    "==",
    "deadbeef",
    "%2",
    "sk-learn",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.sampled_from(ENCODED + PROSE[:12] + SEPARATORS), max_size=12),
    sizes=chunkings,
)
def test_decode_tracked_candidate_is_what_it_answers_when_asked(
    pieces: list[str], sizes: list[int]
) -> None:
    """Decoding keeps its open candidate as it feeds (the decoder's hold, worked out as it
    trims; the lanes' own candidates once something was decoded): after every feed it is
    exactly what ``open_from`` answers."""
    for fed, tracked, asked in tracked_and_asked(DECODE, chunked("".join(pieces), sizes)):
        assert tracked == asked, (fed, tracked, asked)


# Pieces of prefixes (whole, cut short, run together), base64 and word boundaries.
PREFIX_PIECES = [
    "AKIA",
    "AKI",
    "gh",
    "ghp_",
    "sk-",
    "sk",
    "eyJ",
    "ey",
    "xoxb-",
    "AIza",
    "-----BEG",
    "-----BEGIN ",
    "LS0t",
    "LS0tLS1CRUdJTi",
    "MII",
    "aws_secret",
    "hooks.sl",
    "rk_li",
    "A",
    "z",
    "9",
    "+",
    "/",
    "=",
    " ",
    "_",
    "-",
    ":",
    '"',
    "key",
    "token=",
]


@settings(max_examples=500, deadline=None)
@given(
    text=st.lists(st.sampled_from(PREFIX_PIECES), max_size=5).map("".join)
    | st.text(alphabet="ABIKSaeghkpswxyz0189+/=_- :", max_size=10),
    context=st.sampled_from(["", " ", "a", "=", "/"]),
)
def test_secrets_places_tried_one_at_a_time_are_what_the_search_finds(
    text: str, context: str
) -> None:
    """A short text is tried a place at a time for where a prefix begins (``_first_open``:
    anchored patterns, where the unanchored search rebuilds its DFA on ever-new text): the
    same first place, from every starting offset, as the search. A place it skipped would be
    a prefix released while it forms."""
    buf = (context + text).encode("ascii")
    scanner = SECRETS.scanner()
    search = SECRETS._open_search
    for at in range(len(context), len(buf) + 1):
        found = search(buf, at, len(buf))[0][0]
        assert scanner._first_open(buf, at, len(buf)) == found, (buf, at)  # type: ignore[attr-defined]
