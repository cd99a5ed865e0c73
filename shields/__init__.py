"""shieldgate's shields as a library: policies, evaluation, and the types a shield plugin uses.

Everything a user of the shields without the proxy needs is importable from here (docs/library.md;
``tests/shields/test_library_api.py`` pins the list)::

    from shields import Role, Stage, evaluate, parse_policy

    policy = parse_policy(yaml_text)  # or load_policy(path); PolicyError names file and key
    result = evaluate(policy, Stage.INPUT, [(Role.USER, "text")])
    result.verdict, result.findings, result.texts[0].redacted

The names are loaded on first use: the proxy imports ``shields.*`` modules on its own, and
``import shields`` alone must not pay for policies, every built-in shield and the installed
plugins.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shields.base import Action, Chunk, Finding, Role, Scanner, Shield, Stage, Verdict
    from shields.evaluate import Evaluation, TextResult, evaluate
    from shields.normalize import StreamNormalizer
    from shields.policy import CompiledPolicy, PolicyError, Problem, load_policy, parse_policy
    from shields.registry import PLUGIN_GROUP, ShieldType
    from shields.spec import ShieldSpecBase

__all__ = [
    "PLUGIN_GROUP",
    "Action",
    "Chunk",
    "CompiledPolicy",
    "Evaluation",
    "Finding",
    "PolicyError",
    "Problem",
    "Role",
    "Scanner",
    "Shield",
    "ShieldSpecBase",
    "ShieldType",
    "Stage",
    "StreamNormalizer",
    "TextResult",
    "Verdict",
    "evaluate",
    "load_policy",
    "parse_policy",
]

# Where each public name lives (the TYPE_CHECKING imports above say the same to type checkers).
_HOMES = {
    "shields.base": ("Action", "Chunk", "Finding", "Role", "Scanner", "Shield", "Stage", "Verdict"),
    "shields.evaluate": ("Evaluation", "TextResult", "evaluate"),
    "shields.normalize": ("StreamNormalizer",),
    "shields.policy": ("CompiledPolicy", "PolicyError", "Problem", "load_policy", "parse_policy"),
    "shields.registry": ("PLUGIN_GROUP", "ShieldType"),
    "shields.spec": ("ShieldSpecBase",),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'shields' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The ``shields`` package, whose public names win over its submodules' names.

    ``evaluate`` is the public function and the submodule that defines it. Once a submodule
    is loaded, the import system binds it on its package (``shields.evaluate = <module>``),
    which would hide the function from ``from shields import evaluate`` for good. That binding
    is refused here; the submodule is still ``sys.modules["shields.evaluate"]``, which is what
    ``from shields.evaluate import ...`` and ``importlib.import_module`` use.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _MODULE_OF and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
