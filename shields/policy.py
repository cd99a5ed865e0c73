"""Policy files: strict pydantic models, loading, and load-time checks.

A policy is trusted configuration kept in git, so every mistake in it should stop the proxy from
starting (or a reload from taking effect) with a message that names the file and the key path:
``policies/x.yaml: output[1].patterns[0]: bad regex '(': missing )``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import yaml
from pydantic import Field, ValidationError, model_validator

from shields.base import Role, Shield, Stage, Verdict
from shields.registry import builtin_types
from shields.spec import ShieldSpecBase, StrictModel

__all__ = [
    "Case",
    "CompiledPolicy",
    "Policy",
    "PolicyError",
    "Refusal",
    "StreamSettings",
    "compile_policy",
    "load_policy",
    "parse_policy",
]

_TYPES = builtin_types()

if TYPE_CHECKING:
    ShieldSpec = ShieldSpecBase
else:
    _specs = tuple(t.spec for t in _TYPES.values())
    ShieldSpec = Annotated[Union[_specs], Field(discriminator="type")]  # noqa: UP007


class PolicyError(Exception):
    """A policy that cannot be used; the message names the file and the problem."""


class Refusal(StrictModel):
    message: str = Field(default="Sorry, I can't help with that.", min_length=1)
    style: Literal["message", "error"] = "message"


class StreamSettings(StrictModel):
    # Characters held back behind the scanned text; >= every output shield's longest match.
    holdback_chars: int = Field(default=64, ge=0, le=65536)


class CaseMessage(StrictModel):
    role: Role
    content: str


class Case(StrictModel):
    name: str | None = None
    stage: Stage
    text: str | None = None
    messages: list[CaseMessage] | None = None
    expect: Verdict
    shield: str | None = None  # a shield id that must be among the findings
    redacted: str | None = None  # the expected text after redaction (text cases)

    @model_validator(mode="after")
    def _one_input(self) -> Case:
        if (self.text is None) == (self.messages is None):
            raise ValueError("a case needs exactly one of `text` or `messages`")
        return self


class Policy(StrictModel):
    version: Literal[1] = 1
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)
    description: str | None = None
    mode: Literal["enforce", "monitor"] = "enforce"
    on_error: Literal["block", "allow"] = "block"
    refusal: Refusal = Refusal()
    stream: StreamSettings = StreamSettings()
    input: list[ShieldSpec] = Field(default_factory=list)
    output: list[ShieldSpec] = Field(default_factory=list)
    cases: list[Case] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A validated policy with its shields built, ready to serve requests."""

    spec: Policy
    input_shields: tuple[Shield, ...]
    output_shields: tuple[Shield, ...]
    source: str
    digest: str  # short content hash, to tell versions of a policy apart in logs and headers

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def enforcing(self) -> bool:
        return self.spec.mode == "enforce"

    @property
    def holdback(self) -> int:
        return self.spec.stream.holdback_chars

    def shields(self, stage: Stage) -> tuple[Shield, ...]:
        return self.input_shields if stage is Stage.INPUT else self.output_shields


def load_policy(path: str | Path) -> CompiledPolicy:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read policy: {exc.strerror or exc}") from None
    return parse_policy(raw, source=str(path))


def parse_policy(raw: bytes | str, *, source: str = "<policy>") -> CompiledPolicy:
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise PolicyError(_yaml_message(source, exc)) from None
    if document is None:
        raise PolicyError(f"{source}: the policy file is empty")
    if not isinstance(document, dict):
        raise PolicyError(f"{source}: a policy must be a mapping of keys, not {_kind(document)}")
    try:
        spec = Policy.model_validate(document)
    except ValidationError as exc:
        raise PolicyError("\n".join(_validation_messages(source, exc))) from None
    return compile_policy(spec, source=source, digest=hashlib.sha256(data).hexdigest()[:12])


def compile_policy(spec: Policy, *, source: str = "<policy>", digest: str = "") -> CompiledPolicy:
    problems: list[str] = []
    stages: dict[Stage, tuple[Shield, ...]] = {}
    for stage, specs in ((Stage.INPUT, spec.input), (Stage.OUTPUT, spec.output)):
        stages[stage] = tuple(_build(stage, specs, problems))
    for i, shield in enumerate(stages[Stage.OUTPUT]):
        if shield.max_match > spec.stream.holdback_chars:
            problems.append(
                f"stream.holdback_chars: {spec.stream.holdback_chars} is shorter than the "
                f"longest match of output[{i}] ({shield.id}): {shield.max_match} characters; "
                f"raise it to at least {shield.max_match}"
            )
    for i, case in enumerate(spec.cases):
        ids = {s.id for s in stages[case.stage]}
        if case.shield is not None and case.shield not in ids:
            problems.append(
                f"cases[{i}].shield: no {case.stage.value} shield has id {case.shield!r}"
            )
    if problems:
        raise PolicyError("\n".join(f"{source}: {p}" for p in problems))
    if not digest:
        digest = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:12]
    return CompiledPolicy(
        spec=spec,
        input_shields=stages[Stage.INPUT],
        output_shields=stages[Stage.OUTPUT],
        source=source,
        digest=digest,
    )


def _build(stage: Stage, specs: Sequence[ShieldSpecBase], problems: list[str]) -> list[Shield]:
    shields: list[Shield] = []
    seen: dict[str, int] = {}
    for i, shield_spec in enumerate(specs):
        where = f"{stage.value}[{i}]"
        if shield_spec.id in seen:
            problems.append(
                f"{where}.id: duplicate shield id {shield_spec.id!r} "
                f"(also {stage.value}[{seen[shield_spec.id]}])"
            )
            continue
        seen[shield_spec.id] = i
        if stage is Stage.OUTPUT and shield_spec.roles is not None:
            problems.append(f"{where}.roles: `roles` only applies to input shields")
        try:
            shields.append(_TYPES[shield_spec.type].shield(shield_spec))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    return shields


def _yaml_message(source: str, exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{source}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {problem}"
    return f"{source}: invalid YAML: {problem}"


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _validation_messages(source: str, exc: ValidationError) -> list[str]:
    messages = []
    for error in exc.errors(include_url=False):
        path = _format_loc(error["loc"])
        kind = error["type"]
        if kind == "union_tag_invalid":
            tag = error.get("ctx", {}).get("tag")
            known = ", ".join(sorted(_TYPES))
            message = f"unknown shield type {tag!r} (known types: {known})"
        elif kind == "union_tag_not_found":
            message = "a shield needs a `type`"
        elif kind == "extra_forbidden":
            message = "unknown key"
        else:
            message = error["msg"].removeprefix("Value error, ")
        messages.append(f"{source}: {path}: {message}" if path else f"{source}: {message}")
    return messages


def _format_loc(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    previous: int | str | None = None
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif (
            isinstance(previous, int)
            and i >= 2
            and loc[0] in ("input", "output")
            and i == 2
            and item in _TYPES
        ):
            pass  # the discriminator tag pydantic inserts: not a key of the file
        else:
            parts.append(f".{item}" if parts else str(item))
        previous = item
    return "".join(parts)
