"""Shield types by their YAML ``type`` name: the built-ins, then those installed plugins provide.

Built-ins register explicitly: each module of ``BUILTIN_MODULES`` calls ``register`` once at
import. A duplicate built-in name fails at import time, so two shields can never silently fight
over one ``type``.

Plugins are installed packages with an entry point in the ``shieldgate.shields`` group
(``PLUGIN_GROUP``). The entry point's name is the YAML ``type`` and it names a ``ShieldType``
object (declarative, no import-time side effects; see docs/library.md)::

    [project.entry-points."shieldgate.shields"]
    tickets = "shieldgate_tickets:SHIELD_TYPE"      # SHIELD_TYPE = ShieldType(Spec, Shield)

``shield_types()`` loads them once per process (``shields.policy`` builds its policy model from
the result at import). A plugin that cannot be used is never skipped in silence: it is a
``PluginProblem`` instead, and ``shields.policy`` refuses to load any policy while one exists —
an installed plugin that does not work is a broken deployment, and which policies would have
needed it cannot be known. Problems: a name that is a built-in's or two distributions' (then
none of them is imported), an import that raises, an object that is not a well-formed
``ShieldType`` of that name.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata

from shields.base import Shield
from shields.spec import ShieldSpecBase

__all__ = [
    "BUILTIN_MODULES",
    "PLUGIN_GROUP",
    "PluginProblem",
    "ShieldType",
    "ShieldTypes",
    "builtin_types",
    "load_plugins",
    "register",
    "shield_types",
]

PLUGIN_GROUP = "shieldgate.shields"

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
    "shields.builtin.classifier",
    "shields.builtin.links",
)


@dataclass(frozen=True, slots=True)
class ShieldType:
    """A shield type: the spec model a policy entry is validated with, and the shield class
    built from it. Its name, the YAML ``type``, is ``shield.type_name``; the spec's ``type``
    field must be ``Literal[<that name>]`` (the policy model dispatches on it)."""

    spec: type[ShieldSpecBase]
    shield: type[Shield]

    @property
    def name(self) -> str:
        return self.shield.type_name


@dataclass(frozen=True, slots=True)
class PluginProblem:
    """Why an installed plugin's entry point cannot be used; ``plugin`` names it."""

    plugin: str  # "shieldgate-tickets 1.0 (entry point tickets = shieldgate_tickets:SHIELD_TYPE)"
    message: str

    def __str__(self) -> str:
        return f"shield plugin {self.plugin}: {self.message}"


@dataclass(frozen=True, slots=True)
class ShieldTypes:
    """Every usable shield type by name, which plugin provides each non-built-in one, and
    what is wrong with the plugins that cannot be used."""

    types: Mapping[str, ShieldType]
    plugins: Mapping[str, str]  # type name -> the plugin, as ``PluginProblem.plugin`` names it
    problems: tuple[PluginProblem, ...] = ()


_TYPES: dict[str, ShieldType] = {}
_LOADED: ShieldTypes | None = None
# Set while plugins are imported: a plugin that calls ``register`` gets a clear error.
_LOADING_PLUGINS = False


def register(spec: type[ShieldSpecBase], shield: type[Shield]) -> None:
    """Registers a built-in shield type (plugins name a ``ShieldType`` in an entry point)."""
    if _LOADING_PLUGINS:
        raise RuntimeError(
            f"shields.registry.register() is for built-in shields; a plugin names a "
            f"ShieldType in a {PLUGIN_GROUP!r} entry point instead"
        )
    shield_type = ShieldType(spec, shield)
    if problem := _malformed(shield_type):
        raise RuntimeError(f"built-in shield {shield.__name__}: {problem}")
    name = shield_type.name
    if name in _TYPES:
        raise RuntimeError(f"shield type {name!r} is registered twice")
    _TYPES[name] = shield_type


def builtin_types() -> dict[str, ShieldType]:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_TYPES)


def shield_types() -> ShieldTypes:
    """The built-in types and those of the installed plugins, loaded once per process."""
    global _LOADED
    if _LOADED is None:
        _LOADED = load_plugins(metadata.entry_points(group=PLUGIN_GROUP), builtin_types())
    return _LOADED


def load_plugins(
    entry_points: Iterable[metadata.EntryPoint], builtins: Mapping[str, ShieldType]
) -> ShieldTypes:
    """``builtins`` plus the types the entry points name, and the problems of those that
    cannot be used (in the entry points' name order)."""
    by_name: dict[str, list[metadata.EntryPoint]] = {}
    for entry_point in entry_points:
        by_name.setdefault(entry_point.name, []).append(entry_point)
    types = dict(builtins)
    plugins: dict[str, str] = {}
    problems: list[PluginProblem] = []
    for name, providers in sorted(by_name.items()):
        # Neither case imports the plugin: its code could only make matters worse.
        if name in builtins:
            for entry_point in providers:
                message = f"{name!r} is a built-in shield type; a plugin cannot replace it"
                problems.append(PluginProblem(_describe(entry_point), message))
            continue
        if len(providers) > 1:
            described = sorted(_describe(entry_point) for entry_point in providers)
            for index, plugin in enumerate(described):
                others = ", ".join(d for i, d in enumerate(described) if i != index)
                message = f"shield type {name!r} is also provided by {others}"
                problems.append(PluginProblem(plugin, message))
            continue
        entry_point = providers[0]
        loaded = _load(entry_point)
        if isinstance(loaded, ShieldType):
            types[name] = loaded
            plugins[name] = _describe(entry_point)
        else:
            problems.append(PluginProblem(_describe(entry_point), loaded))
    return ShieldTypes(types, plugins, tuple(problems))


def _load(entry_point: metadata.EntryPoint) -> ShieldType | str:
    """The entry point's ShieldType, or what is wrong with it."""
    global _LOADING_PLUGINS
    _LOADING_PLUGINS = True
    try:
        value = entry_point.load()
    except Exception as exc:
        # The message, not the traceback: it ends up in a policy load error. Importing the
        # module by hand shows the rest.
        return (
            f"cannot be loaded: {type(exc).__name__}: {exc} "
            f"(`python -c 'import {entry_point.module}'` shows the traceback)"
        )
    finally:
        _LOADING_PLUGINS = False
    if not isinstance(value, ShieldType):
        return (
            f"names a {type(value).__name__}, not a shields.ShieldType "
            f"(ShieldType(YourSpec, YourShield))"
        )
    if problem := _malformed(value):
        return problem
    if value.name != entry_point.name:
        return (
            f"the entry point is named {entry_point.name!r} but its shield's type_name is "
            f"{value.name!r}; they must be the same (it is the policy's `type`)"
        )
    return value


def _malformed(shield_type: ShieldType) -> str | None:
    """What keeps a ShieldType out of the policy model, or None. Checked before the model is
    built: pydantic would fail there with an error that names neither plugin nor type."""
    spec, shield = shield_type.spec, shield_type.shield
    if not (isinstance(spec, type) and issubclass(spec, ShieldSpecBase)):
        return f"its spec {spec!r} is not a subclass of shields.ShieldSpecBase"
    if not (isinstance(shield, type) and issubclass(shield, Shield)):
        return f"its shield {shield!r} is not a subclass of shields.Shield"
    name = getattr(shield, "type_name", None)
    if not isinstance(name, str) or not name:
        return f"{shield.__name__}.type_name must be a non-empty string"
    field = spec.model_fields.get("type")
    annotation = field.annotation if field is not None else None
    if typing.get_origin(annotation) is not typing.Literal or typing.get_args(annotation) != (
        name,
    ):
        return (
            f"{spec.__name__}.type must be declared as `type: Literal[{name!r}] = {name!r}` "
            f"(the policy model tells shield types apart by it)"
        )
    return None


def _describe(entry_point: metadata.EntryPoint) -> str:
    dist = entry_point.dist
    owner = f"{dist.name} {dist.version} " if dist is not None else ""
    return f"{owner}(entry point {entry_point.name} = {entry_point.value})"
