"""``shieldgate rules [TYPE]``: the names a policy's ``rules:``/``entities:`` option takes, listed
from the installed rule tables. Each listed name must be accepted by a policy (and nothing else
is), so the list is the one a policy author can rely on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from proxy.cli import main
from shields.builtin.secrets import RULES
from shields.policy import PolicyError, parse_policy

OPTION = {"secrets": "rules", "injection": "rules", "pii": "entities"}


def listed(shield_type: str, capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    assert main(["rules", shield_type]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert all(len(row) == 2 and row[0] and row[1] for row in rows)
    return [(row[0], row[1]) for row in rows]


def policy_with(shield_type: str, names: list[str]) -> bytes:
    shield = {"id": "s", "type": shield_type, OPTION[shield_type]: names}
    return json.dumps({"name": "catalog", "input": [shield]}).encode()


@pytest.mark.parametrize("shield_type", sorted(OPTION))
def test_every_listed_name_is_one_a_policy_accepts(
    shield_type: str, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [name for name, _ in listed(shield_type, capsys)]
    assert len(names) == len(set(names)) and len(names) >= 6
    parse_policy(policy_with(shield_type, names), source="catalog.yaml")
    with pytest.raises(PolicyError):
        parse_policy(policy_with(shield_type, [*names, "not_a_rule"]), source="catalog.yaml")


def test_secrets_rules_carry_their_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    rules = dict(listed("secrets", capsys))
    assert "Kerberos" in rules["kerberos_roast_hash"]
    assert {"config_password", "url_credentials", "private_key", "github_token"} <= set(rules)


def test_without_a_type_the_types_are_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules"]) == 0
    assert capsys.readouterr().out.split() == ["secrets", "injection", "pii"]


def test_a_type_without_rules_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "length"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shieldgate: no rule list for type 'length'") and "secrets" in err


def test_the_readme_counts_the_secrets_rules_the_table_holds() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    counted = re.search(r"\((\d+) rules; `shieldgate rules secrets` lists them\)", readme)
    assert counted is not None and int(counted.group(1)) == len(RULES)
