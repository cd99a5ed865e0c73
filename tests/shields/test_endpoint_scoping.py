"""Shields scoped to endpoints (``endpoints:``), the policy's per-endpoint views, the
``request.token_inputs`` setting, and ``shieldgate check``/``test`` on all of them.

The proxy's side (each dialect served under its endpoint's view) is in ``test_embeddings.py``.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from shields.base import Stage
from shields.commands import check_policies, run_policy_tests
from shields.policy import PolicyError, parse_policy
from shields.spec import ENDPOINTS
from tests.support.constants import REPO_ROOT

SCOPED = """
version: 1
name: scoped
decode: {input: true}
input:
  - id: everywhere
    type: denylist
    phrases: [build a bomb]
  - id: chat-only
    type: denylist
    phrases: [launch codes]
    endpoints: [chat, responses]
  - id: embeddings-only
    type: denylist
    phrases: [customer ledger]
    endpoints: [embeddings]
  - id: judge
    type: webhook
    url: http://127.0.0.1:9/hook
    endpoints: [messages]
output:
  - id: out-chat
    type: denylist
    phrases: [secret plan]
    endpoints: [chat]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def ids(shields: object) -> list[str]:
    return [s.id for s in shields]  # type: ignore[attr-defined]


# ---- the views -----------------------------------------------------------------------------


def test_each_endpoint_sees_the_shields_scoped_to_it_and_the_unscoped_ones() -> None:
    policy = parse_policy(SCOPED)

    chat = policy.for_endpoint("chat")
    assert ids(chat.shields(Stage.INPUT)) == ["everywhere", "chat-only"]
    assert ids(chat.shields(Stage.OUTPUT)) == ["out-chat"]
    assert chat.remote(Stage.INPUT) == ()
    embeddings = policy.for_endpoint("embeddings")
    assert ids(embeddings.shields(Stage.INPUT)) == ["everywhere", "embeddings-only"]
    assert embeddings.shields(Stage.OUTPUT) == ()
    messages = policy.for_endpoint("messages")
    assert ids(messages.shields(Stage.INPUT)) == ["everywhere"]
    assert ids(messages.remote(Stage.INPUT)) == ["judge"]
    assert messages.has_remote and not chat.has_remote
    # The same policy otherwise: name, digest, settings; the stage's decode setting kept.
    for view in (chat, embeddings, messages):
        assert (view.name, view.digest, view.spec) == (policy.name, policy.digest, policy.spec)
        assert view.input_shields.decode is True  # type: ignore[attr-defined]
    # The whole policy keeps every shield.
    assert ids(policy.shields(Stage.INPUT)) == ["everywhere", "chat-only", "embeddings-only"]


def test_views_are_built_once_and_looked_up() -> None:
    policy = parse_policy(SCOPED)
    for endpoint in ENDPOINTS:
        view = policy.for_endpoint(endpoint)
        assert policy.for_endpoint(endpoint) is view
        assert view.endpoint == endpoint
        assert view.for_endpoint(endpoint) is view


def test_a_policy_without_scoped_shields_is_its_own_view_everywhere() -> None:
    policy = parse_policy("version: 1\nname: plain\ninput: [{id: a, type: denylist, phrases: [x]}]")
    assert all(policy.for_endpoint(endpoint) is policy for endpoint in ENDPOINTS)


def test_an_unknown_endpoint_or_another_views_endpoint_is_an_error() -> None:
    policy = parse_policy(SCOPED)
    with pytest.raises(ValueError, match="unknown endpoint 'chat_completions'"):
        policy.for_endpoint("chat_completions")
    with pytest.raises(ValueError, match="view for 'chat'"):
        policy.for_endpoint("chat").for_endpoint("embeddings")


# ---- what a policy may say -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("shield", "path", "message"),
    [
        (
            "{id: a, type: denylist, phrases: [x], endpoints: [chat, embedding]}",
            "input[0].endpoints[1]",
            "'chat', 'responses', 'messages', 'completions' or 'embeddings'",
        ),
        (
            "{id: a, type: denylist, phrases: [x], endpoints: []}",
            "input[0].endpoints",
            "at least 1",
        ),
        ("{id: a, type: denylist, phrases: [x], endpoints: chat}", "input[0].endpoints", "list"),
    ],
)
def test_check_names_a_bad_endpoints_list(shield: str, path: str, message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(f"version: 1\nname: p\ninput:\n  - {shield}\n", source="p.yaml")
    (problem,) = caught.value.problems
    assert problem.path == path
    assert message in problem.message
    assert problem.line == 4


def test_check_refuses_an_output_shield_that_could_only_run_on_embeddings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p.yaml",
        """
        version: 1
        name: p
        output:
          - id: never
            type: denylist
            phrases: [x]
            endpoints: [embeddings]
        """,
    )
    out = io.StringIO()
    assert check_policies([path], out) == 1
    assert f"{path}:7:" in out.getvalue()
    assert "output[0].endpoints: embeddings replies are vectors" in out.getvalue()


def test_token_inputs_are_refused_unless_the_policy_allows_them() -> None:
    assert parse_policy("version: 1\nname: p\n").spec.request.token_inputs == "refuse"
    allowed = parse_policy("version: 1\nname: p\nrequest: {token_inputs: allow}\n")
    assert allowed.spec.request.token_inputs == "allow"
    with pytest.raises(PolicyError) as caught:
        parse_policy("version: 1\nname: p\nrequest: {token_inputs: check}\n")
    (problem,) = caught.value.problems
    assert problem.path == "request.token_inputs"
    assert "'refuse' or 'allow'" in problem.message
    with pytest.raises(PolicyError) as caught:
        parse_policy("version: 1\nname: p\nrequest: {tokens: allow}\n")
    assert caught.value.problems[0].message == "unknown key"


# ---- shieldgate test -----------------------------------------------------------------------

CASES = """
cases:
  - {name: chat blocks the launch codes, stage: input, text: "the launch codes", expect: block,
     shield: chat-only}
  - {name: embeddings let them through, stage: input, text: "the launch codes", expect: allow,
     endpoint: embeddings}
  - {name: embeddings block the ledger, stage: input, text: "our customer ledger",
     expect: block, endpoint: embeddings, shield: embeddings-only}
  - {name: chat lets the ledger through, stage: input, text: "our customer ledger",
     expect: allow}
  - {name: the reply shield is chat's, stage: output, text: "the secret plan", expect: allow,
     endpoint: responses}
"""


def test_cases_are_decided_by_their_endpoints_view(tmp_path: Path) -> None:
    path = write(tmp_path / "scoped.yaml", SCOPED + CASES)
    out = io.StringIO()

    assert run_policy_tests([path], out) == 0, out.getvalue()

    assert "5 passed, 0 failed" in out.getvalue()


def test_a_case_expecting_what_another_endpoint_decides_fails(tmp_path: Path) -> None:
    cases = """
    cases:
      - {name: wrong endpoint, stage: input, text: "the launch codes", expect: block,
         endpoint: embeddings}
    """
    path = write(tmp_path / "scoped.yaml", SCOPED + textwrap.dedent(cases))
    out = io.StringIO()

    assert run_policy_tests([path], out) == 1

    assert "FAIL" in out.getvalue() and "expected block, got allow" in out.getvalue()


def test_an_unnamed_case_is_shown_with_its_endpoint(tmp_path: Path) -> None:
    cases = "cases:\n  - {stage: input, text: x, expect: allow, endpoint: embeddings}\n"
    path = write(tmp_path / "scoped.yaml", SCOPED + cases)
    out = io.StringIO()
    assert run_policy_tests([path], out) == 0
    assert f"PASS {path}: cases[0] (input on embeddings, expect allow)" in out.getvalue()


def test_a_case_naming_a_shield_its_endpoint_does_not_run_is_a_load_error() -> None:
    cases = (
        "cases:\n  - {stage: input, text: x, expect: allow, shield: chat-only,"
        " endpoint: embeddings}\n"
    )
    with pytest.raises(PolicyError) as caught:
        parse_policy(SCOPED + cases)
    (problem,) = caught.value.problems
    assert problem.path == "cases[0].shield"
    assert problem.message == "shield 'chat-only' does not run on endpoint 'embeddings'"


def test_a_sibling_cases_file_may_name_endpoints(tmp_path: Path) -> None:
    write(tmp_path / "scoped.yaml", SCOPED)
    write(tmp_path / "scoped.cases.yaml", CASES)
    write(
        tmp_path / "bad.yaml",
        "version: 1\nname: bad\ninput: [{id: a, type: denylist, phrases: [x]}]\n",
    )
    write(
        tmp_path / "bad.cases.yaml",
        "cases:\n  - {stage: input, text: x, expect: block, endpoint: embedding}\n",
    )
    out = io.StringIO()

    assert run_policy_tests([tmp_path / "scoped.yaml"], out) == 0, out.getvalue()
    assert "5 passed" in out.getvalue()

    out = io.StringIO()
    assert run_policy_tests([tmp_path / "bad.yaml"], out) == 1
    assert "bad.cases.yaml: [0].endpoint: Input should be 'chat'" in out.getvalue()


def test_the_example_in_docs_endpoints_loads_and_scopes_as_it_says() -> None:
    page = (REPO_ROOT / "docs" / "endpoints.md").read_text(encoding="utf-8")
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    policy = parse_policy("version: 1\nname: doc\n" + example)
    assert ids(policy.for_endpoint("embeddings").shields(Stage.INPUT)) == ["customer-ids"]
    assert ids(policy.for_endpoint("chat").shields(Stage.INPUT)) == ["prompt-injection"]
