"""Several policies in one directory, and the routes that choose one per request.

A policy directory holds any number of policy files (``*.yaml``), their optional sibling case
files (``*.cases.yaml``) and an optional ``routes.yaml``::

    default: default              # the policy for requests no route matches
    models:                       # first match wins; glob patterns on the requested model
      - {match: "gpt-4*", policy: strict}
      - {match: "*-instruct", policy: default}
    client_header: false          # let clients pick with `x-shieldgate-policy` (off: they must
                                  # not choose their own guardrails unless the operator says so)

Without ``routes.yaml`` the directory must hold one policy, or one named ``default``.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from shields.policy import (
    CompiledPolicy,
    PolicyError,
    Problem,
    load_policy,
    locate,
    yaml_value_problem,
)
from shields.spec import StrictModel

__all__ = ["ROUTES_FILE", "ModelRoute", "PolicySet", "Routes", "load_policy_set"]

ROUTES_FILE = "routes.yaml"
CASES_SUFFIX = ".cases.yaml"


class ModelRoute(StrictModel):
    match: str = Field(min_length=1)
    policy: str


class Routes(StrictModel):
    default: str
    models: list[ModelRoute] = Field(default_factory=list)
    client_header: bool = False


@dataclass(frozen=True, slots=True)
class PolicySet:
    """The policies in force and how a request picks one; swapped as a whole on reload."""

    policies: Mapping[str, CompiledPolicy]
    routes: Routes
    digest: str

    @classmethod
    def single(cls, policy: CompiledPolicy) -> PolicySet:
        return cls({policy.name: policy}, Routes(default=policy.name), policy.digest)

    @property
    def default(self) -> CompiledPolicy:
        return self.policies[self.routes.default]

    def choose(
        self,
        *,
        model: str | None = None,
        requested: str | None = None,
        key_policy: str | None = None,
    ) -> CompiledPolicy:
        """The policy for a request. ``key_policy`` (the policy of the client's key, set by
        the operator) comes first; ``requested`` (a client header) counts only if allowed;
        a name that does not exist raises KeyError."""
        if key_policy is not None:
            return self.policies[key_policy]
        if requested is not None and self.routes.client_header:
            return self.policies[requested]
        if model is not None:
            for route in self.routes.models:
                if fnmatch.fnmatchcase(model, route.match):
                    return self.policies[route.policy]
        return self.default


def policy_files(directory: Path) -> list[Path]:
    return sorted(
        p
        for p in directory.glob("*.yaml")
        if p.name != ROUTES_FILE and not p.name.endswith(CASES_SUFFIX)
    )


def load_policy_set(path: str | Path) -> PolicySet:
    """A policy file, or a directory of them with its routes. Raises PolicyError."""
    path = Path(path)
    if not path.is_dir():
        return PolicySet.single(load_policy(path))
    problems: list[Problem] = []
    policies: dict[str, CompiledPolicy] = {}
    for file in policy_files(path):
        try:
            policy = load_policy(file)
        except PolicyError as exc:
            problems += exc.problems
            continue
        if policy.name in policies:
            other = policies[policy.name].source
            problems.append(
                Problem(str(file), f"policy name {policy.name!r} is also used by {other}", "name")
            )
            continue
        policies[policy.name] = policy
    if not policies and not problems:
        problems.append(Problem(str(path), "the directory holds no policy files"))
    # Once a policy file failed, a route naming it would be reported again as unknown: its
    # own problems say it all.
    routes = _routes(path, policies, problems, check_names=not problems)
    if problems:
        raise PolicyError(problems)
    assert routes is not None
    digest = hashlib.sha256(
        "".join(f"{n}:{p.digest};" for n, p in sorted(policies.items())).encode()
        + routes.model_dump_json().encode()
    ).hexdigest()[:12]
    return PolicySet(policies, routes, digest)


def _routes(
    directory: Path,
    policies: Mapping[str, CompiledPolicy],
    problems: list[Problem],
    *,
    check_names: bool = True,
) -> Routes | None:
    file = directory / ROUTES_FILE
    if not file.exists():
        if len(policies) == 1:
            return Routes(default=next(iter(policies)))
        if "default" in policies:
            return Routes(default="default")
        if policies:
            problems.append(
                Problem(
                    str(directory),
                    f"{len(policies)} policies and no {ROUTES_FILE} (nor a policy named "
                    "'default') to choose between them",
                )
            )
        return None
    source = str(file)
    try:
        try:
            tree = yaml.compose(file.read_bytes(), Loader=yaml.SafeLoader)
            document = yaml.safe_load(file.read_bytes())
        except (ValueError, RecursionError) as exc:
            problems.append(Problem(source, f"invalid YAML: {yaml_value_problem(exc)}"))
            return None
        routes = Routes.model_validate(document or {})
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        column = mark.column + 1 if mark else None
        problems.append(Problem(source, f"invalid YAML: {exc}", line=line, column=column))
        return None
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            path = ".".join(str(x) for x in error["loc"])
            message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(locate(Problem(source, message, path), tree))
        return None
    known = ", ".join(sorted(policies)) or "none"
    named = [("default", routes.default)] + [
        (f"models[{i}].policy", r.policy) for i, r in enumerate(routes.models)
    ]
    for where, name in named:
        if check_names and name not in policies:
            message = f"no policy is named {name!r} (policies: {known})"
            problems.append(locate(Problem(source, message, where), tree))
    return routes
