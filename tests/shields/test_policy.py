"""Policy files: strict validation with messages naming file and key path; shipped cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from shields.base import Stage
from shields.cases import run_cases
from shields.policy import PolicyError, load_policy, parse_policy
from tests.support.constants import REPO_ROOT

POLICIES = sorted((REPO_ROOT / "policies").glob("*.yaml"))


def error_of(text: str, source: str = "policies/x.yaml") -> str:
    with pytest.raises(PolicyError) as info:
        parse_policy(text, source=source)
    return str(info.value)


def test_minimal_policy_gets_defaults() -> None:
    policy = parse_policy("name: tiny\n")
    assert policy.name == "tiny"
    assert policy.enforcing and policy.holdback == 64
    assert policy.spec.refusal.message == "I'm sorry, but I can't help with that."
    assert policy.input_shields == () and policy.output_shields == ()
    assert len(policy.digest) == 12


def test_bad_regex_names_file_and_key_path() -> None:
    text = """
name: x
output:
  - {id: a, type: denylist, phrases: [z]}
  - {id: b, type: regex, patterns: ['ok', '(']}
"""
    assert error_of(text) == "policies/x.yaml: output[1].patterns[1]: bad regex '(': missing )"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nbogus: 1\n", "policies/x.yaml: bogus: unknown key"),
        (
            "name: x\ninput: [{id: a, type: nope}]\n",
            "policies/x.yaml: input[0]: unknown shield type 'nope' "
            "(known types: classifier, denylist, ",
        ),
        ("name: x\ninput: [{id: a}]\n", "policies/x.yaml: input[0]: a shield needs a `type`"),
        (
            "name: x\ninput: [{id: a, type: denylist, phrases: [z], colour: red}]\n",
            "policies/x.yaml: input[0].colour: unknown key",
        ),
        ("name: x\nmode: loud\n", "policies/x.yaml: mode: Input should be 'enforce' or 'monitor'"),
        ("name: x\nstream: {holdback_chars: -1}\n", "policies/x.yaml: stream.holdback_chars:"),
        ("name: x\ninput: [{id: a, type: denylist}]\n", "needs at least one entry"),
        ("name: x\ninput: [{id: a, type: denylist, words: ['\u200b']}]\n", "empty after"),
        ("version: 2\nname: x\n", "policies/x.yaml: version: Input should be 1"),
        ("name: x\nfoo: [\n", "policies/x.yaml:3:1: invalid YAML"),
        ("", "policies/x.yaml: the policy file is empty"),
        ("- a\n- b\n", "policies/x.yaml: a policy must be a mapping of keys, not a list"),
    ],
)
def test_invalid_policies_are_explained(text: str, expected: str) -> None:
    assert expected in error_of(text)


def test_duplicate_ids_and_output_roles_are_rejected() -> None:
    text = """
name: x
output:
  - {id: a, type: denylist, phrases: [z], roles: [user]}
  - {id: a, type: denylist, phrases: [y]}
"""
    message = error_of(text)
    assert "output[1].id: duplicate shield id 'a' (also output[0])" in message
    assert "output[0].roles: `roles` only applies to input shields" in message


def test_holdback_must_cover_the_longest_output_match() -> None:
    text = """
name: x
stream: {holdback_chars: 10}
input:
  - {id: long-in, type: denylist, phrases: [a very long phrase that only matters for input]}
output:
  - {id: long, type: denylist, phrases: [a phrase of twenty-two]}  # 22, and 1 of look-ahead
"""
    assert error_of(text) == (
        "policies/x.yaml: stream.holdback_chars: 10 is shorter than the longest match of "
        "output[0] (long): 23 characters; raise it to at least 23"
    )


def test_case_naming_an_unknown_shield_is_rejected() -> None:
    text = """
name: x
input: [{id: a, type: denylist, phrases: [z]}]
cases: [{stage: output, text: z, expect: block, shield: a}]
"""
    assert "cases[0].shield: no output shield has id 'a'" in error_of(text)


def test_case_needs_exactly_one_input() -> None:
    text = "name: x\ncases: [{stage: input, expect: allow}]\n"
    assert "a case needs exactly one of `text` or `messages`" in error_of(text)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read policy"):
        load_policy(tmp_path / "absent.yaml")


@pytest.mark.parametrize("path", POLICIES, ids=[p.name for p in POLICIES])
def test_shipped_policies_pass_their_own_cases(path: Path) -> None:
    policy = load_policy(path)
    results = run_cases(policy)
    assert results, f"{path.name} has no cases"
    failures = [(r.case.name, r.problems) for r in results if not r.passed]
    assert failures == []
    # Every shield of a shipped policy is exercised by at least one case that names it.
    named = {(r.case.stage, r.case.shield) for r in results}
    for stage in (Stage.INPUT, Stage.OUTPUT):  # enums: `shields()` compares with `is`
        for shield in policy.shields(stage) + policy.remote(stage):
            assert (stage, shield.id) in named, f"no case names {stage} shield {shield.id}"


def test_a_wrong_expectation_is_reported() -> None:
    policy = parse_policy(
        """
name: x
input: [{id: a, type: denylist, phrases: [zap]}]
cases:
  - {stage: input, text: "zap", expect: allow}
  - {stage: input, text: "fine", expect: block, shield: a}
"""
    )
    problems = [r.problems for r in run_cases(policy)]
    assert problems == [
        ("expected allow, got block",),
        ("expected block, got allow", "expected shield 'a' to fire"),
    ]
