"""Policy files: strict pydantic models, loading, and load-time checks.

A policy is trusted configuration kept in git, so every mistake in it should stop the proxy from
starting (or a reload from taking effect) with a message that names the file and the key path:
``policies/x.yaml: output[1].patterns[0]: bad regex '(': missing )``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import yaml
from pydantic import Field, ValidationError, model_validator

from shields.base import Role, Shield, Stage, StageShields, Verdict
from shields.decode_scan import WINDOW as DECODE_WINDOW
from shields.registry import shield_types
from shields.remote import RemoteShield, remote_shields
from shields.spec import ENDPOINTS, Endpoint, ShieldSpecBase, StrictModel
from shields.verdict import Enforcement

__all__ = [
    "Case",
    "CompiledPolicy",
    "DecodeSettings",
    "Policy",
    "PolicyError",
    "Problem",
    "Refusal",
    "RequestSettings",
    "StreamSettings",
    "case_problem",
    "compile_policy",
    "load_policy",
    "locate",
    "parse_policy",
    "yaml_problem",
    "yaml_value_problem",
]

# Built-in and plugin shield types; a plugin that cannot be used fails every policy load
# (``_plugin_check``) rather than be left out in silence.
_LOADED = shield_types()
_TYPES = _LOADED.types

if TYPE_CHECKING:
    ShieldSpec = ShieldSpecBase
else:
    _specs = tuple(t.spec for t in _TYPES.values())
    ShieldSpec = Annotated[Union[_specs], Field(discriminator="type")]  # noqa: UP007


class Refusal(StrictModel):
    message: str = Field(default="I'm sorry, but I can't help with that.", min_length=1)
    style: Literal["message", "error"] = "message"


class StreamSettings(StrictModel):
    # Characters held back behind the scanned text; >= every output shield's longest match.
    holdback_chars: int = Field(default=64, ge=0, le=65536)


class DecodeSettings(StrictModel):
    """Which stages also read what encoded runs of a text decode to (base64, hex,
    percent-encoding, named ROT13: ``shields.decode``, ``shields.decode_scan``): whole texts,
    tool-call arguments and streams alike. Off unless a policy turns it on: decoding costs a
    pass over the text, what it finds blocks or redacts the whole run, and a stream holds an
    encoded run until it ends (``output`` needs ``stream.holdback_chars`` >= ``WINDOW``)."""

    input: bool = False
    output: bool = False


class RequestSettings(StrictModel):
    """What a policy does with requests whose prompt no shield can read."""

    # Embeddings inputs and completions prompts given as token ids (lists of integers): the
    # shields read text, so by default such a request is refused (400). ``allow`` forwards
    # them, unchecked by every input shield.
    token_inputs: Literal["refuse", "allow"] = "refuse"


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
    # With `shieldgate test --remote`: a remote shield of the stage must fail to answer (the
    # case tests what the policy does then). Any other remote failure makes a case an ERROR.
    expect_error: bool = False
    # The endpoint whose view of the policy decides the case (shields scoped by `endpoints`).
    endpoint: Endpoint = "chat"

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
    decode: DecodeSettings = DecodeSettings()
    request: RequestSettings = RequestSettings()
    input: list[ShieldSpec] = Field(default_factory=list)
    output: list[ShieldSpec] = Field(default_factory=list)
    cases: list[Case] = Field(default_factory=list)


_ENFORCEMENTS = {
    (enforcing, fail_closed): Enforcement(enforcing, fail_closed)
    for enforcing in (True, False)
    for fail_closed in (True, False)
}


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """A validated policy with its shields built, ready to serve requests."""

    spec: Policy
    input_shields: tuple[Shield, ...]
    output_shields: tuple[Shield, ...]
    source: str
    digest: str  # short content hash, to tell versions of a policy apart in logs and headers
    # Remote shields (a model or a service judges whole texts), kept apart from the local
    # scanners above: they are awaited, not fed (``shields.remote``).
    input_remote: tuple[RemoteShield, ...] = ()
    output_remote: tuple[RemoteShield, ...] = ()
    # The policy as each endpoint sees it, where shields scoped by ``endpoints`` make it
    # differ from the whole (``for_endpoint``); built once, when the policy is compiled.
    views: Mapping[str, CompiledPolicy] = field(default_factory=dict, compare=False, repr=False)
    # The endpoint this is the view of; None for the whole policy.
    endpoint: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def for_endpoint(self, endpoint: str) -> CompiledPolicy:
        """The policy as it applies on ``endpoint`` (one of ``ENDPOINTS``): the shields whose
        ``endpoints`` include it, or that name none. Same name, digest and settings. A dict
        lookup: the views are built when the policy is compiled."""
        if self.endpoint is not None:
            if endpoint != self.endpoint:
                raise ValueError(f"this is the policy's view for {self.endpoint!r}")
            return self
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r} (known: {', '.join(ENDPOINTS)})")
        return self.views.get(endpoint, self)

    @property
    def enforcing(self) -> bool:
        return self.spec.mode == "enforce"

    @property
    def enforcement(self) -> Enforcement:
        """The one rule by which this policy's findings become blocks and redactions."""
        # Read several times per request: one shared (immutable) rule per combination rather
        # than a new object on every read.
        return _ENFORCEMENTS[self.enforcing, self.spec.on_error == "block"]

    @property
    def holdback(self) -> int:
        return self.spec.stream.holdback_chars

    def shields(self, stage: Stage) -> tuple[Shield, ...]:
        """The stage's local shields (scanners)."""
        return self.input_shields if stage is Stage.INPUT else self.output_shields

    def remote(self, stage: Stage) -> tuple[RemoteShield, ...]:
        """The stage's remote shields."""
        return self.input_remote if stage is Stage.INPUT else self.output_remote

    @property
    def has_remote(self) -> bool:
        return bool(self.input_remote or self.output_remote)


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a policy file, located by key path and, when known, line/column."""

    source: str
    message: str
    path: str = ""
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return f"{self.source}: {self.path}: {self.message}" if self.path else self.located()

    def located(self) -> str:
        """``file:line:column: path: message`` — the form editors and CI annotations parse."""
        where = self.source if self.line is None else f"{self.source}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class PolicyError(Exception):
    """A policy that cannot be used; the message names the file and the problems."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = tuple(problems)


Loc = tuple[int | str, ...]


def load_policy(path: str | Path) -> CompiledPolicy:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise PolicyError([Problem(str(path), f"cannot read policy: {reason}")]) from None
    return parse_policy(raw, source=str(path))


def parse_policy(raw: bytes | str, *, source: str = "<policy>") -> CompiledPolicy:
    _plugin_check(source)
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        tree = yaml.compose(data, Loader=yaml.SafeLoader)
        document = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise PolicyError([yaml_problem(source, exc, data)]) from None
    except (ValueError, RecursionError) as exc:
        # PyYAML lets these through: an integer past Python's 4,300-digit limit, an impossible
        # date (2020-13-45), nesting deeper than the recursion limit.
        raise PolicyError([Problem(source, f"invalid YAML: {yaml_value_problem(exc)}")]) from None
    if document is None:
        raise PolicyError([Problem(source, "the policy file is empty")])
    if not isinstance(document, dict):
        message = f"a policy must be a mapping of keys, not {_kind(document)}"
        raise PolicyError([Problem(source, message)])
    try:
        spec = Policy.model_validate(document)
    except ValidationError as exc:
        raise PolicyError(_validation_problems(source, exc, tree)) from None
    try:
        return compile_policy(spec, source=source, digest=hashlib.sha256(data).hexdigest()[:12])
    except PolicyError as exc:
        raise PolicyError([locate(p, tree) for p in exc.problems]) from None


def case_problem(case: Case, shields: Sequence[Shield]) -> tuple[str, str] | None:
    """What is wrong with a case given its stage's shields (all of them: those its
    endpoint's view leaves out are set aside here), as (key, message), or None."""
    for shield in shields:
        if shield.id == case.shield and not _runs_on(shield, case.endpoint):
            message = f"shield {case.shield!r} does not run on endpoint {case.endpoint!r}"
            return "shield", message
    shields = [s for s in shields if _runs_on(s, case.endpoint)]
    if case.shield is not None and case.shield not in {s.id for s in shields}:
        return "shield", f"no {case.stage.value} shield has id {case.shield!r}"
    if case.expect_error:
        remote = {s.id for s in shields if isinstance(s, RemoteShield)}
        if not remote:
            return "expect_error", f"no {case.stage.value} shield is a remote one"
        if case.shield is not None and case.shield not in remote:
            return "expect_error", f"shield {case.shield!r} is not a remote shield"
    return None


def compile_policy(spec: Policy, *, source: str = "<policy>", digest: str = "") -> CompiledPolicy:
    _plugin_check(source)
    problems: list[tuple[Loc, str]] = []
    stages: dict[Stage, tuple[Shield, ...]] = {}
    for stage, specs in ((Stage.INPUT, spec.input), (Stage.OUTPUT, spec.output)):
        stages[stage] = tuple(_build(stage, specs, problems))
    holdback = spec.stream.holdback_chars
    if spec.decode.output and holdback < DECODE_WINDOW:
        problems.append(
            (
                ("stream", "holdback_chars"),
                f"{holdback} is shorter than what decoding output holds of an encoded run "
                f"(decode.output): {DECODE_WINDOW} characters; raise it to at least "
                f"{DECODE_WINDOW}",
            )
        )
    for shield in stages[Stage.OUTPUT]:
        if shield.max_match > holdback:
            i = next(k for k, s in enumerate(spec.output) if s.id == shield.id)
            problems.append(
                (
                    ("stream", "holdback_chars"),
                    f"{holdback} is shorter than the longest match of output[{i}] "
                    f"({shield.id}): {shield.max_match} characters; raise it to at least "
                    f"{shield.max_match}",
                )
            )
    for stage, specs in ((Stage.INPUT, spec.input), (Stage.OUTPUT, spec.output)):
        for i, shield_spec in enumerate(specs):
            if stage is Stage.OUTPUT and shield_spec.endpoints == ["embeddings"]:
                problems.append(
                    (
                        ("output", i, "endpoints"),
                        "embeddings replies are vectors, which no output shield reads: "
                        "this shield would never run",
                    )
                )
    for i, case in enumerate(spec.cases):
        problem = case_problem(case, stages[case.stage])
        if problem is not None:
            key, message = problem
            problems.append((("cases", i, key), message))
    if problems:
        raise PolicyError([Problem(source, message, _format_loc(loc)) for loc, message in problems])
    if not digest:
        digest = hashlib.sha256(spec.model_dump_json().encode()).hexdigest()[:12]
    decode = {Stage.INPUT: spec.decode.input, Stage.OUTPUT: spec.decode.output}
    local = {
        stage: StageShields(
            (s for s in built if not isinstance(s, RemoteShield)), decode=decode[stage]
        )
        for stage, built in stages.items()
    }
    policy = CompiledPolicy(
        spec=spec,
        input_shields=local[Stage.INPUT],
        output_shields=local[Stage.OUTPUT],
        source=source,
        digest=digest,
        input_remote=remote_shields(stages[Stage.INPUT]),
        output_remote=remote_shields(stages[Stage.OUTPUT]),
    )
    if not any(s.spec.endpoints is not None for built in stages.values() for s in built):
        return policy  # every endpoint sees the whole policy
    return replace(policy, views={e: _view(policy, e) for e in ENDPOINTS})


def _runs_on(shield: Shield, endpoint: str) -> bool:
    endpoints = shield.spec.endpoints
    return endpoints is None or endpoint in endpoints


def _view(policy: CompiledPolicy, endpoint: str) -> CompiledPolicy:
    """``policy`` with only the shields that run on ``endpoint``."""

    def local(shields: tuple[Shield, ...]) -> StageShields:
        decode = isinstance(shields, StageShields) and shields.decode
        return StageShields((s for s in shields if _runs_on(s, endpoint)), decode=decode)

    return replace(
        policy,
        input_shields=local(policy.input_shields),
        output_shields=local(policy.output_shields),
        input_remote=tuple(s for s in policy.input_remote if _runs_on(s, endpoint)),
        output_remote=tuple(s for s in policy.output_remote if _runs_on(s, endpoint)),
        views={},
        endpoint=endpoint,
    )


def _plugin_check(source: str) -> None:
    """Raises PolicyError naming every installed shield plugin that cannot be used."""
    if _LOADED.problems:
        raise PolicyError([Problem(source, str(problem)) for problem in _LOADED.problems])


def _build(
    stage: Stage, specs: Sequence[ShieldSpecBase], problems: list[tuple[Loc, str]]
) -> list[Shield]:
    shields: list[Shield] = []
    seen: dict[str, int] = {}
    for i, shield_spec in enumerate(specs):
        where: Loc = (stage.value, i)
        if shield_spec.id in seen:
            problems.append(
                (
                    (*where, "id"),
                    f"duplicate shield id {shield_spec.id!r} "
                    f"(also {stage.value}[{seen[shield_spec.id]}])",
                )
            )
            continue
        seen[shield_spec.id] = i
        if stage is Stage.OUTPUT and shield_spec.roles is not None:
            problems.append(((*where, "roles"), "`roles` only applies to input shields"))
        try:
            shields.append(_TYPES[shield_spec.type].shield(shield_spec))
        except ValueError as exc:
            problems.append((where, str(exc)))
        except Exception as exc:
            plugin = _LOADED.plugins.get(shield_spec.type)
            if plugin is None:
                raise  # a built-in's bug: the traceback is what is needed
            name = type(exc).__name__
            problems.append((where, f"shield plugin {plugin}: building it raised {name}: {exc}"))
    return shields


def yaml_value_problem(exc: ValueError | RecursionError) -> str:
    """What PyYAML's constructors raised, in words (never the offending value itself)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return f"a value cannot be read ({str(exc).splitlines()[0][:120]})"


def yaml_problem(source: str, exc: yaml.YAMLError, data: bytes) -> Problem:
    """A YAML error as one located line."""
    if isinstance(exc, yaml.reader.ReaderError):
        # Bad bytes or control characters: the reader knows an offset, not a line.
        if exc.encoding == "unicode":
            before = data.decode("utf-8", "replace")[: exc.position]
        else:
            before = data[: exc.position].decode("utf-8", "replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        character = (
            f"#x{exc.character:02x}" if isinstance(exc.character, int) else repr(exc.character)
        )
        message = f"invalid YAML: unacceptable character {character}: {exc.reason}"
        return Problem(source, message, line=line, column=column)
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return Problem(
            source, f"invalid YAML: {problem}", line=mark.line + 1, column=mark.column + 1
        )
    return Problem(source, f"invalid YAML: {problem}")


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _validation_problems(
    source: str, exc: ValidationError, tree: yaml.Node | None
) -> list[Problem]:
    problems = []
    for error in exc.errors(include_url=False):
        loc = _file_loc(error["loc"])
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
        problems.append(locate(Problem(source, message, _format_loc(loc)), tree, loc))
    return problems


def _file_loc(loc: Loc) -> Loc:
    """Pydantic's error location without the discriminator tag it inserts for shield unions."""
    if len(loc) > 2 and loc[0] in ("input", "output") and loc[2] in _TYPES:
        return (*loc[:2], *loc[3:])
    return loc


def _format_loc(loc: Loc) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts)


def _parse_loc(path: str) -> Loc:
    loc: list[int | str] = []
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        loc.append(int(index) if index else key)
    return tuple(loc)


def locate(problem: Problem, tree: yaml.Node | None, loc: Loc | None = None) -> Problem:
    """Adds the line and column of the YAML node the problem's key path points to."""
    if tree is None or problem.line is not None:
        return problem
    node = tree
    path = loc if loc is not None else _parse_loc(problem.path)
    for depth, item in enumerate(path, start=1):
        if isinstance(node, yaml.MappingNode) and isinstance(item, str):
            match = next((kv for kv in node.value if kv[0].value == item), None)
            if match is None:
                break
            key, value = match
            # An unknown key is best shown at the key itself; anything else at its value.
            last = depth == len(path)
            node = key if last and problem.message == "unknown key" else value
        elif isinstance(node, yaml.SequenceNode) and isinstance(item, int):
            if item >= len(node.value):
                break
            node = node.value[item]
        else:
            break
    mark = node.start_mark
    return Problem(
        problem.source, problem.message, problem.path, line=mark.line + 1, column=mark.column + 1
    )
