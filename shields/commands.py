"""The offline commands: ``scan`` (try a policy on your own traffic), ``check`` and ``test``
(policies in CI, modelled on ``opa test``). Pure functions over streams, wired up by the CLI.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from xml.etree import ElementTree

import yaml
from pydantic import TypeAdapter, ValidationError

from shields.base import Finding, Role, Stage
from shields.cases import CaseResult, run_case
from shields.decode import PIECE
from shields.decode_scan import WINDOW as DECODE_WINDOW
from shields.evaluate import Evaluation, evaluate
from shields.pipeline import BlockingRemote
from shields.policy import (
    Case,
    CompiledPolicy,
    PolicyError,
    Problem,
    case_problem,
    load_policy,
    yaml_problem,
    yaml_value_problem,
)
from shields.routing import CASES_SUFFIX, PolicySet, load_policy_set
from shields.routing import policy_files as directory_policy_files
from shields.scan_records import (
    BadRecord,
    RecordKind,
    evaluate_record,
    read_line,
    record_kind,
    scan_result,
)

__all__ = ["check_policies", "policy_files", "run_policy_tests", "scan_lines"]


def policy_files(paths: Sequence[str | Path]) -> list[Path]:
    """The policy files named, directories expanded to their policies (not ``routes.yaml``,
    not ``*.cases.yaml``)."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        files += directory_policy_files(path) if path.is_dir() else [path]
    return files


# -- check ------------------------------------------------------------------------------------


def check_policies(paths: Sequence[str | Path], out: TextIO, *, explain: bool = False) -> int:
    """Validates policy files; one ``file:line:column: message`` line per problem.

    ``explain``: for valid files, also say how much of a stream each output shield holds back
    (``explain_holdback``)."""
    files = policy_files(paths)
    if not files:
        out.write("no policy files found\n")
        return 1
    problems = 0
    loaded: list[PolicySet] = []
    for raw in paths:
        try:
            # A directory is loaded as the server loads it: names unique, routes resolvable.
            loaded.append(load_policy_set(raw))
        except PolicyError as exc:
            for problem in exc.problems:
                out.write(problem.located() + "\n")
                problems += 1
    for path in files:
        # A sibling cases file is part of the policy's tests: ``test`` would fail on it, so
        # ``check`` (the pre-commit hook) says so first.
        for problem in _sibling_case_problems(path):
            out.write(problem.located() + "\n")
            problems += 1
    if problems:
        return 1
    if explain:
        for policy_set in loaded:
            for policy in policy_set.policies.values():
                out.writelines(explain_holdback(policy))
    out.write(f"{len(files)} policy file{'s' if len(files) != 1 else ''} ok\n")
    return 0


def _sibling_case_problems(path: Path) -> list[Problem]:
    """What is wrong with the cases of ``path``'s sibling ``*.cases.yaml``: the file itself,
    and cases naming a shield its stage (or endpoint) does not have."""
    cases, problems = _sibling_cases(path)
    if problems or not cases:
        return problems
    try:
        policy = load_policy(path)
    except PolicyError:
        return []  # the policy's own problems were reported
    sibling = str(path.with_name(path.name.removesuffix(".yaml") + CASES_SUFFIX))
    for index, case in enumerate(cases):
        problem = case_problem(case, policy.shields(case.stage) + policy.remote(case.stage))
        if problem is not None:
            key, message = problem
            problems.append(Problem(sibling, message, f"[{index}].{key}"))
    return problems


def explain_holdback(policy: CompiledPolicy) -> list[str]:
    """One line per output shield: does it hold text only while a match may still start there
    (adaptive), or its longest match in every stream (a pattern whose prefixes could not be
    bounded: worth rewriting when streams must start fast)?"""
    lines = [f"{policy.source}: stream hold-back at most {policy.holdback} characters\n"]
    if policy.spec.decode.output:
        lines.append(
            f"{policy.source}: decode.output: holds an encoded run while it may still grow (a "
            f"piece of {PIECE} characters at a time) and the pieces whose decoded text the "
            f"output shields still hold, at most {DECODE_WINDOW} characters\n"
        )
    for index, shield in enumerate(policy.output_shields):
        where = f"{policy.source}: output[{index}] ({shield.id}, {shield.type_name})"
        if shield.adaptive_holdback:
            lines.append(f"{where}: holds text only while a match may still begin there\n")
        else:
            lines.append(
                f"{where}: holds its longest match, {shield.max_match} characters, "
                "in every stream\n"
            )
    return lines


# -- test -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Outcome:
    policy: str
    name: str
    seconds: float
    problems: list[str] = field(default_factory=list)
    skipped: bool = False
    # Remote checks that failed unexpectedly (``--remote``): the case could not be decided.
    errors: list[str] = field(default_factory=list)


def _sibling_cases(path: Path) -> tuple[list[Case], list[Problem]]:
    sibling = path.with_name(path.name.removesuffix(".yaml") + CASES_SUFFIX)
    if not sibling.exists():
        return [], []
    try:
        data = sibling.read_bytes()
    except OSError as exc:
        return [], [Problem(str(sibling), f"cannot read cases: {exc.strerror or exc}")]
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        return [], [yaml_problem(str(sibling), exc, data)]
    except (ValueError, RecursionError) as exc:
        return [], [Problem(str(sibling), f"invalid YAML: {yaml_value_problem(exc)}")]
    if isinstance(document, dict):
        unknown = sorted(str(key) for key in document if key != "cases")
        if unknown:
            return [], [Problem(str(sibling), "unknown key", key) for key in unknown]
        document = document.get("cases")
    try:
        return TypeAdapter(list[Case]).validate_python(document or []), []
    except ValidationError as exc:
        return [], [
            Problem(str(sibling), e["msg"].removeprefix("Value error, "), _dotted(e["loc"]))
            for e in exc.errors(include_url=False)
        ]


def _dotted(loc: tuple[int | str, ...]) -> str:
    return "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in loc).lstrip(".")


def _case_name(case: Case, label: str) -> str:
    if case.name:
        return case.name
    stage = case.stage.value
    if case.endpoint != "chat":
        stage += f" on {case.endpoint}"
    return f"{label} ({stage}, expect {case.expect.value})"


def _explain(findings: Iterable[Finding]) -> list[str]:
    return [
        f"{f.shield_id} ({f.shield_type}) {f.label} {f.action.value} at {f.start}:{f.end}"
        + (" [monitor]" if f.monitor else "")
        for f in findings
    ]


def _run_file(
    path: Path, explain: bool, out: TextIO, remote: BlockingRemote | None
) -> list[_Outcome]:
    try:
        policy = load_policy(path)
    except PolicyError as exc:
        for problem in exc.problems:
            out.write(f"ERROR {problem.located()}\n")
        return [_Outcome(str(path), "load policy", 0.0, [str(p) for p in exc.problems])]
    extra, problems = _sibling_cases(path)
    outcomes = [_Outcome(str(p.source), "load cases", 0.0, [str(p)]) for p in problems]
    for problem in problems:
        out.write(f"ERROR {problem.located()}\n")
    labelled = [(f"cases[{i}]", c) for i, c in enumerate(policy.spec.cases)]
    labelled += [(f"{CASES_SUFFIX.lstrip('.')}[{i}]", c) for i, c in enumerate(extra)]
    for label, case in labelled:
        started = time.perf_counter()
        result = _checked_case(policy, case, remote)
        outcome = _Outcome(
            str(path),
            _case_name(case, label),
            time.perf_counter() - started,
            list(result.problems),
            result.skipped,
            list(result.errors),
        )
        outcomes.append(outcome)
        out.write(f"{_status(result)} {path}: {outcome.name}\n")
        if result.skipped:
            names = [case.shield] if case.shield is not None else result.evaluation.skipped
            shown = ", ".join(repr(name) for name in names)
            out.write(f"    remote shield {shown} not called (use --remote)\n")
        for reason in result.errors + result.problems:
            out.write(f"    {reason}\n")
        if explain or not result.passed:
            for line in _explain(result.evaluation.findings):
                out.write(f"    fired: {line}\n")
    return outcomes


def _status(result: CaseResult) -> str:
    if result.skipped:
        return "SKIP"
    if result.errors:  # not a verdict at all: what a failed remote check made of the case
        return "ERROR"
    return "PASS" if result.passed else "FAIL"


def _checked_case(policy: CompiledPolicy, case: Case, remote: BlockingRemote | None) -> CaseResult:
    # The policy's own cases were checked when it loaded; a sibling file's are checked here.
    problem = case_problem(case, policy.shields(case.stage) + policy.remote(case.stage))
    if problem is not None:
        evaluation = Evaluation(verdict=case.expect, texts=(), request_findings=())
        key, message = problem
        return CaseResult(case, evaluation, (message if key == "shield" else f"{key}: {message}",))
    return run_case(policy, case, remote=remote)


def run_policy_tests(
    paths: Sequence[str | Path],
    out: TextIO,
    *,
    junit: Path | None = None,
    allow_empty: bool = False,
    explain: bool = False,
    remote: BlockingRemote | None = None,
) -> int:
    """Runs every policy's cases; ``N passed, M failed``; exit 1 on failure or when none ran.

    Without ``remote``, remote shields are not called: cases naming one are skipped."""
    files = policy_files(paths)
    outcomes = [outcome for path in files for outcome in _run_file(path, explain, out, remote)]
    errors = sum(1 for o in outcomes if o.errors)
    failed = sum(1 for o in outcomes if o.problems and not o.errors)
    skipped = sum(1 for o in outcomes if o.skipped)
    passed = len(outcomes) - failed - errors - skipped
    summary = f"{passed} passed, {failed} failed"
    if errors:
        summary += f", {errors} error{'s' if errors != 1 else ''}"
    out.write(summary + (f", {skipped} skipped\n" if skipped else "\n"))
    if junit is not None:
        _write_junit(junit, outcomes)
    if failed or errors:
        return 1
    if passed == 0 and not allow_empty:
        out.write("no cases ran (use --allow-empty to permit)\n")
        return 1
    return 0


def _write_junit(path: Path, outcomes: list[_Outcome]) -> None:
    suites = ElementTree.Element("testsuites", name="shieldgate policies")
    by_policy: dict[str, list[_Outcome]] = {}
    for outcome in outcomes:
        by_policy.setdefault(outcome.policy, []).append(outcome)
    for policy, items in by_policy.items():
        suite = ElementTree.SubElement(
            suites,
            "testsuite",
            name=policy,
            tests=str(len(items)),
            failures=str(sum(1 for o in items if o.problems and not o.errors)),
            errors=str(sum(1 for o in items if o.errors)),
            time=f"{sum(o.seconds for o in items):.6f}",
        )
        for outcome in items:
            case = ElementTree.SubElement(
                suite,
                "testcase",
                classname=policy,
                name=outcome.name,
                time=f"{outcome.seconds:.6f}",
            )
            if outcome.skipped:
                ElementTree.SubElement(case, "skipped", message="remote shield not called")
            if outcome.errors:
                error = ElementTree.SubElement(case, "error", message=outcome.errors[0])
                error.text = "\n".join(outcome.errors + outcome.problems)
            elif outcome.problems:
                failure = ElementTree.SubElement(case, "failure", message=outcome.problems[0])
                failure.text = "\n".join(outcome.problems)
    path.parent.mkdir(parents=True, exist_ok=True)
    ElementTree.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


# -- scan -------------------------------------------------------------------------------------


def _lines(stream: Iterable[str | bytes]) -> Iterator[tuple[int, str | bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def _json_line(value: Any) -> str:
    """One output line. Non-ASCII text is written as it is, unless the value holds a lone
    surrogate (say an ``id`` of ``"\\ud800"``), which no UTF-8 stream can write: that line is
    written with ``\\u`` escapes, the surrogate as the escape it came in as."""
    line = json.dumps(value, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(value)
    return line + "\n"


def scan_lines(
    policy: CompiledPolicy,
    stage: Stage,
    lines: Iterable[str | bytes],
    out: TextIO,
    *,
    explain: bool = False,
    remote: BlockingRemote | None = None,
) -> int:
    """JSON Lines in, one line out per input line; exit 1 if any line was bad, else 0.

    Records are read and checked as the proxy reads and checks requests and replies
    (``shields.scan_records``). A line that is not a JSON object of the documented shape, or
    that the proxy would refuse, gets an error line,
    ``{"id": ..., "line": N, "error": "..."}``, and the scan goes on with the next line.
    Without ``remote``, remote shields are not called (each result lists them as skipped)."""
    errors = 0
    for number, line in _lines(lines):
        record: Any = None
        try:
            record = read_line(line)
            kind = record_kind(record, stage)
            if kind is RecordKind.TEXT:
                role = Role.USER if stage is Stage.INPUT else None
                evaluation = evaluate(policy, stage, [(role, record["text"])], remote=remote)
            else:
                evaluation = evaluate_record(policy, stage, record, kind, remote=remote)
            result = scan_result(record, kind, evaluation, explain)
        except Exception as exc:
            errors += 1
            if isinstance(exc, BadRecord):
                reason = str(exc)
            elif isinstance(exc, ValueError | RecursionError) and record is None:
                reason = f"not valid JSON: {exc}"
            else:  # a fault here, not in the line's shape: it must not end the scan either
                reason = f"could not scan this line ({type(exc).__name__})"
            record_id = record.get("id") if isinstance(record, dict) else None
            out.write(_json_line({"id": record_id, "line": number, "error": reason}))
            out.flush()
            continue
        if evaluation.skipped:
            result["skipped"] = list(evaluation.skipped)
        out.write(_json_line(result))
        out.flush()  # one verdict per line as it comes, also behind a pipe (`tail -f | scan`)
    return 1 if errors else 0
