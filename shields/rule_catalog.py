"""What ``shieldgate rules [TYPE]`` prints: the names a policy can give a shield's ``rules:``
(or ``entities:``) list, read from the rule tables themselves.

Why a command and not a list in the README: the tables grow with every release, and a policy
author needs the exact ids of the version installed. One line per
rule, tab-separated, so the output is both readable and easy to ``grep``/``cut``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RULE_TYPES", "rule_lines"]


def _secrets() -> list[str]:
    from shields.builtin.secrets import RULES

    return [f"{rule.id}\t{rule.description}" for rule in RULES]


def _injection() -> list[str]:
    from shields.builtin.injection_rules import CATEGORIES, RULES

    # A category name selects all its rules: listed first, then each rule with its weight (a
    # rule whose weight reaches the threshold blocks alone; lighter ones only count together).
    lines = [f"{category}\tcategory: every {category}.* rule" for category in CATEGORIES]
    return lines + [f"{rule.id}\tweight {rule.weight:g}" for rule in RULES]


def _pii() -> list[str]:
    from shields.builtin.pii_entities import KINDS

    return [f"{kind.name}\tentity (longest reach {kind.reach} characters)" for kind in KINDS]


# Shield types whose options name rules, and the lines that list them.
RULE_TYPES: dict[str, Callable[[], list[str]]] = {
    "secrets": _secrets,
    "injection": _injection,
    "pii": _pii,
}


def rule_lines(shield_type: str) -> list[str] | None:
    """The lines for ``shield_type``, or None when that type names no rules."""
    lines = RULE_TYPES.get(shield_type)
    return lines() if lines else None
