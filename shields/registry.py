"""Shield types by their YAML ``type`` name.

Registration is explicit: each built-in module calls ``register`` once at import, and
``builtin_types()`` imports the list below. A duplicate name fails loudly at import time, so two
shields can never silently fight over one ``type``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from shields.base import Shield
from shields.spec import ShieldSpecBase

__all__ = ["ShieldType", "builtin_types", "register"]

BUILTIN_MODULES = (
    "shields.builtin.denylist",
    "shields.builtin.regex",
    "shields.builtin.invisible_text",
    "shields.builtin.length",
    "shields.builtin.secrets",
    "shields.builtin.injection",
    "shields.builtin.pii",
    "shields.builtin.llm_judge",
    "shields.builtin.moderation",
    "shields.builtin.webhook",
    "shields.builtin.links",
)


@dataclass(frozen=True, slots=True)
class ShieldType:
    name: str
    spec: type[ShieldSpecBase]
    shield: type[Shield]


_TYPES: dict[str, ShieldType] = {}


def register(spec: type[ShieldSpecBase], shield: type[Shield]) -> None:
    name = shield.type_name
    if name in _TYPES:
        raise RuntimeError(f"shield type {name!r} is registered twice")
    _TYPES[name] = ShieldType(name, spec, shield)


def builtin_types() -> dict[str, ShieldType]:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_TYPES)
