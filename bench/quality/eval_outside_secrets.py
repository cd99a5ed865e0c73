"""The secrets shield on text no rule was written from: other scanners' test fixtures.

Why
    ``bench/quality/eval_shields.py`` scores the secrets shield on CredSweeper's samples and
    gitleaks' rule cases, split in a dev and a held-out half. Rules were chosen looking at the dev
    half, and the held-out half's per-kind table has been read, so neither half is untouched any
    more. This script scores the shield on four other projects' labelled fixtures, to say whether
    the detection holds on text of the same kinds written by other people, next to a reference
    scanner run on the same cases (``--detect-secrets``).

The corpora (read from a git clone at a pinned commit; nothing is copied into this repository)
    ``secretlint``  github.com/secretlint/secretlint @ ``SECRETLINT_COMMIT`` (MIT): every
                    ``packages/@secretlint/secretlint-rule-*/test/snapshots/<case>/input*`` of
                    the rules that read a file's content for credentials (``CONTENT_RULES``:
                    vendor tokens, basic auth in URLs, database connection strings, private
                    keys, npm tokens). A case is *positive* when its ``output.json`` (the
                    findings secretlint's own test asserts) holds a message, else *negative*.
                    A positive is *caught* when a finding overlaps a reported range.
    ``whispers``    github.com/Skyscanner/whispers @ ``WHISPERS_COMMIT`` (Apache-2.0): the
                    ``tests/fixtures`` files that ``tests/unit/test_secrets.py``
                    (``test_detection_by_value``) counts findings in: configuration files in
                    YAML, JSON, XML, INI, ``.env``, ``.npmrc``, ``.pypirc``, ``pip.conf``,
                    ``.htpasswd``, AWS credentials, Dockerfiles, JDBC and Spring beans, and
                    source in seven languages. Count > 0 is positive, count 0 negative;
                    ``creditcards.yml`` and ``language.html`` are left out (card numbers are
                    the pii shield's job, HTML comments are not credentials). Its secrets are
                    the word "hardcoded" in some form: this set asks whether a literal
                    credential is found in every syntax, not entropy. Whispers gives no
                    positions: a positive is caught when flagged.
    ``noseyparker`` github.com/praetorian-inc/noseyparker @ ``NOSEYPARKER_COMMIT`` (Apache-2.0):
                    the ``examples`` (positive) and ``negative_examples`` (negative) of every
                    rule in ``crates/noseyparker/data/default/builtin/rules/*.yml``: snippets
                    of code, configuration and logs, many cut from public leaks. Examples of
                    rules whose categories hold neither ``secret`` nor ``hashed`` (identifier
                    rules: account ids, ARNs, bucket names, OAuth client ids, user names) are
                    left out; a negative example is only "not this rule's". A positive is
                    caught when flagged.
    ``trufflehog``  github.com/trufflesecurity/trufflehog @ ``TRUFFLEHOG_COMMIT`` (AGPL-3.0,
                    read, never copied): the cases of each detector's pattern test
                    (``pkg/detectors/*/*_test.go``) whose ``want`` lists results, their input a
                    string literal or a constant of the file (cases built by code are skipped).
                    A positive is caught when a finding overlaps an expected result in the
                    input (or, for results the detector joins, ``id:secret``, a part of eight
                    characters and more). No negatives: a case that wants nothing often holds
                    the same secret out of the detector's keyword range.

    Files that are not UTF-8 text (secretlint's PKCS#12 fixtures) are left out. A negative is
    text the other tool reports nothing in; some hold look-alikes on purpose (placeholders, an
    "encrypted" key), others real-looking values the tool allowlists by option, so "negatives
    flagged" is a flag rate, not a count of false positives. Many positives are made-up values
    that the shield deliberately takes for typed examples (``glpat-aBcDeFgHiJkLmNoPqRsT``,
    ``tskey-client-EEEE...``, ``sk-abc123def456...``, ``xoxb-0000-...``, ``user:secret@``), and
    trufflehog's fixtures wrap many tokens in a made-up Jenkins ``{AQAAABAAA <token>}`` form:
    recall here is lower than on real leaked files, for this shield and the reference alike.

The reference
    ``--detect-secrets PATH`` runs Yelp's detect-secrets (default plugins and filters) once over
    a directory holding every case as a file (named by index, with its original extension,
    which detect-secrets reads); a positive is caught when a reported line holds part of an
    expected range, or, without ranges, when the file has a finding.

Halves and history
    Each corpus is split like the others (``half`` of ``eval_shields``: the parity of the first
    byte of sha256 of the case's name). Each corpus was first scored before any rule was
    chosen from it (secretlint and whispers at 757d61b: dev 0.636 / held-out 0.630 together;
    noseyparker at 118dfea: 0.705 / 0.631; trufflehog at ae102e0: 0.569 / 0.624). Rules chosen
    since were chosen from dev-half misses only; the held-out half is the one to quote. At
    f471c04: all four dev 0.681 / held-out 0.660, negatives flagged 0.187 / 0.239 (detect-secrets
    on the same cases: 0.445 / 0.447, flagged 0.318 / 0.284).

Run: ``python -m bench.quality.eval_outside_secrets --secretlint S --whispers W --noseyparker N
--trufflehog T [--detect-secrets D] [--out FILE]`` where each of S, W, N, T is a git clone (a
bare one will do) holding the pinned commit. ``--misses`` lists the dev half's missed cases by
name (never the held-out half's).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.quality.eval_shields import SHIELD_YAML, half, one_shield_policy, revision
from shields.base import Role, Stage
from shields.evaluate import evaluate

SECRETLINT_COMMIT = "18346ba31b8173d52060b971221ab38c1943def0"
NOSEYPARKER_COMMIT = "2e6e7f36ce36619852532bbe698d8cb7a26d2da7"
TRUFFLEHOG_COMMIT = "3ab759fef4bb5935d4fe9ac68b503d05346b8364"
WHISPERS_COMMIT = "5832bf74dcb127128ba653ed87601c927124b5aa"

# secretlint rules that look for credentials in a file's text. Left out: rules that judge a
# file's name or path (no-dotenv, no-homedir), comment filtering, user patterns (pattern,
# example), the Kubernetes "kind: Secret" manifest rule and the presets (copies of the rules).
CONTENT_RULES = (
    "1password",
    "anthropic",
    "aws",
    "azure",
    "basicauth",
    "cloudflare",
    "database-connection-string",
    "databricks",
    "docker",
    "figma",
    "gcp",
    "github",
    "gitlab",
    "grafana",
    "groq",
    "hashicorp-vault",
    "huggingface",
    "linear",
    "notion",
    "npm",
    "openai",
    "privatekey",
    "secp256k1-privatekey",
    "sendgrid",
    "shopify",
    "slack",
    "stripe",
    "tailscale",
    "vercel",
)
SECRETLINT_ROOT = "packages/@secretlint"

NOSEYPARKER_RULES = "crates/noseyparker/data/default/builtin/rules"
NOSEYPARKER_SECRET_CATEGORIES = frozenset({"secret", "hashed"})

TRUFFLEHOG_DETECTORS = "pkg/detectors"
# One case of a detector's pattern test: `input: <string or name>,` then `want: []string{...}`.
_GO_CASE = re.compile(
    r"input:\s*(`[^`]*`|\"(?:[^\"\\\n]|\\.)*\"|[A-Za-z_]\w*)\s*,\s*"
    r"want:\s*\[\]string\{([^}]*)\}"
)
_GO_CONST = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*(`[^`]*`|\"(?:[^\"\\\n]|\\.)*\")")
_GO_STRING = re.compile(r"`[^`]*`|\"(?:[^\"\\\n]|\\.)*\"")

HOW_TO_RUN = (
    "python -m bench.quality.eval_outside_secrets --secretlint S --whispers W --noseyparker N "
    "--trufflehog T --detect-secrets D"
)

WHISPERS_TEST = "tests/unit/test_secrets.py"
WHISPERS_FIXTURES = "tests/fixtures"
# Fixtures whose expected findings are not credentials: card numbers (the pii shield's job) and
# HTML comments (whispers' "comments" rule).
WHISPERS_NOT_SECRETS = frozenset({"creditcards.yml", "language.html"})


class CorpusError(Exception):
    """A clone is missing, lacks the pinned commit or does not hold the expected files."""


@dataclass(frozen=True, slots=True)
class Case:
    corpus: str
    kind: str  # secretlint rule, or the whispers fixture's file type
    name: str  # path inside the corpus repository
    text: str
    positive: bool
    ranges: tuple[tuple[int, int], ...] = ()  # where the other tool reports its findings


@dataclass(frozen=True, slots=True)
class Result:
    case: Case
    flagged: bool
    caught: bool


def _git(repo: Path, *args: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CorpusError(f"git {' '.join(args[:2])} in {repo} failed: {exc}") from None
    return done.stdout


def _tree(repo: Path, commit: str, under: str) -> list[str]:
    if _git(repo, "cat-file", "-t", commit).strip() != b"commit":
        raise CorpusError(f"{repo} does not hold commit {commit}")
    listing = _git(repo, "ls-tree", "-r", "-z", "--name-only", commit, "--", under)
    return [name.decode("utf-8") for name in listing.split(b"\0") if name]


def _show(repo: Path, commit: str, path: str) -> str | None:
    """The file's text, or None for a file that is not UTF-8 text (a PKCS#12 archive): the
    proxy reads text, and a binary's bytes say nothing about that."""
    data = _git(repo, "show", f"{commit}:{path}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def secretlint_cases(repo: Path) -> list[Case]:
    cases = []
    files = _tree(repo, SECRETLINT_COMMIT, SECRETLINT_ROOT)
    by_dir: dict[str, list[str]] = {}
    for name in files:
        parts = name.split("/")
        if len(parts) == 7 and parts[3:5] == ["test", "snapshots"]:
            by_dir.setdefault("/".join(parts[:6]), []).append(parts[6])
    for case_dir, names in sorted(by_dir.items()):
        rule = case_dir.split("/")[2].removeprefix("secretlint-rule-")
        inputs = [n for n in names if n.startswith("input")]
        if rule not in CONTENT_RULES or "output.json" not in names or len(inputs) != 1:
            continue
        text = _show(repo, SECRETLINT_COMMIT, f"{case_dir}/{inputs[0]}")
        output = _show(repo, SECRETLINT_COMMIT, f"{case_dir}/output.json")
        if text is None or output is None:
            continue
        messages = json.loads(output).get("messages", [])
        ranges = tuple((int(m["range"][0]), int(m["range"][1])) for m in messages)
        cases.append(Case("secretlint", rule, case_dir, text, bool(messages), ranges))
    if not cases:
        raise CorpusError(f"no secretlint snapshots under {SECRETLINT_ROOT} in {repo}")
    return cases


def _whispers_counts(source: str) -> dict[str, int]:
    """The (fixture, count) pairs of ``test_detection_by_value``'s parametrize list."""
    header = '("src", "count"),'
    start = source.index(header) + len(header)
    end = source.index("def test_detection_by_value")
    counts = {}
    for line in source[start:end].splitlines():
        line = line.strip()
        if line.startswith('("') and line.endswith("),"):
            name, count = line[2:-2].split('", ')
            counts[name] = int(count)
    return counts


def whispers_cases(repo: Path) -> list[Case]:
    source = _show(repo, WHISPERS_COMMIT, WHISPERS_TEST)
    if source is None:
        raise CorpusError(f"{WHISPERS_TEST} in {repo} is not text")
    counts = _whispers_counts(source)
    present = set(_tree(repo, WHISPERS_COMMIT, WHISPERS_FIXTURES))
    cases = []
    for name, count in sorted(counts.items()):
        path = f"{WHISPERS_FIXTURES}/{name}"
        if name in WHISPERS_NOT_SECRETS or path not in present:
            continue
        kind = Path(name).suffix.lstrip(".") or Path(name).name
        text = _show(repo, WHISPERS_COMMIT, path)
        if text is None:
            continue
        cases.append(Case("whispers", kind, path, text, count > 0))
    if not cases:
        raise CorpusError(f"no whispers fixtures listed in {WHISPERS_TEST}")
    return cases


def noseyparker_cases(repo: Path) -> list[Case]:
    cases = []
    for path in _tree(repo, NOSEYPARKER_COMMIT, NOSEYPARKER_RULES):
        source = _show(repo, NOSEYPARKER_COMMIT, path) if path.endswith(".yml") else None
        if source is None:
            continue
        kind = Path(path).stem
        for rule in yaml.safe_load(source).get("rules", []):
            # Identifier rules (account ids, ARNs, bucket names, client ids, user names) find
            # what is worth a look, not a secret: their examples are neither kind.
            secret = bool(NOSEYPARKER_SECRET_CATEGORIES & set(rule.get("categories", [])))
            for label, key in ((True, "examples"), (False, "negative_examples")):
                if label and not secret:
                    continue
                for i, text in enumerate(rule.get(key) or []):
                    name = f"{path}#{rule['id']}#{key}#{i}"
                    cases.append(Case("noseyparker", kind, name, str(text), label))
    if not cases:
        raise CorpusError(f"no noseyparker rules under {NOSEYPARKER_RULES} in {repo}")
    return cases


def _go_string(literal: str) -> str | None:
    """A Go string literal's value: raw (backquoted) as is, interpreted ones through JSON's
    escapes (the ones Go tests use); None for one JSON cannot read."""
    if literal.startswith("`"):
        return literal[1:-1]
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _want_ranges(text: str, wants: Iterable[str]) -> tuple[tuple[int, int], ...]:
    """Where the expected results are in the input: each one found whole, else its parts of
    eight characters and more (detectors report `key:secret`, `id|secret`, `url;token`)."""
    ranges = []
    for want in wants:
        parts = [want] if want in text else [p for p in re.split(r"[:|;, ]", want) if len(p) >= 8]
        for part in parts:
            start = text.find(part)
            while part and start != -1:
                ranges.append((start, start + len(part)))
                start = text.find(part, start + 1)
    return tuple(sorted(set(ranges)))


def trufflehog_cases(repo: Path) -> list[Case]:
    """The positive cases of every detector's pattern test (``*_test.go``, not the integration
    tests): an input with the secrets the detector must report (``want``)."""
    cases = []
    for path in _tree(repo, TRUFFLEHOG_COMMIT, TRUFFLEHOG_DETECTORS):
        if not path.endswith("_test.go") or path.endswith("_integration_test.go"):
            continue
        source = _show(repo, TRUFFLEHOG_COMMIT, path)
        if source is None:
            continue
        consts = {m.group(1): _go_string(m.group(2)) for m in _GO_CONST.finditer(source)}
        for i, case in enumerate(_GO_CASE.finditer(source)):
            literal = case.group(1)
            text = consts.get(literal) if literal[0].isalpha() else _go_string(literal)
            wants = [_go_string(w.group()) for w in _GO_STRING.finditer(case.group(2))]
            if text is None or not wants or None in wants:
                continue
            ranges = _want_ranges(text, [w for w in wants if w])
            if ranges:
                kind = path.split("/")[2]
                cases.append(Case("trufflehog", kind, f"{path}#{i}", text, True, ranges))
    if not cases:
        raise CorpusError(f"no trufflehog pattern tests under {TRUFFLEHOG_DETECTORS} in {repo}")
    return cases


def score(cases: Iterable[Case]) -> list[Result]:
    policy = one_shield_policy("outside-secrets", SHIELD_YAML["secrets"])
    results = []
    for case in cases:
        evaluation = evaluate(policy, Stage.INPUT, [(Role.USER, case.text)])
        findings = evaluation.texts[0].findings + evaluation.request_findings
        enforced = [f for f in findings if not f.monitor]
        flagged = bool(enforced)
        if case.ranges:
            caught = any(
                f.start < end and start < f.end for f in enforced for start, end in case.ranges
            )
        else:
            caught = flagged
        results.append(Result(case, flagged, caught))
    return results


def reference_scan(cases: Sequence[Case], detect_secrets: Path) -> list[Result]:
    """The same cases through detect-secrets (Yelp's scanner, default plugins and filters), one
    run over a directory holding each case as a file named by its index and its original
    extension (detect-secrets reads the extension). A positive is caught when a reported line
    holds part of a reported range (or, without ranges, when the file has a finding)."""
    with tempfile.TemporaryDirectory() as tmp:
        names = []
        for i, case in enumerate(cases):
            suffix = Path(case.name.split("#")[0]).suffix[:8] or ".txt"
            name = f"case{i:05d}{suffix}"
            (Path(tmp) / name).write_text(case.text, encoding="utf-8")
            names.append(name)
        try:
            done = subprocess.run(
                [str(detect_secrets), "scan", "--all-files", "."],
                cwd=tmp,
                check=True,
                capture_output=True,
                timeout=1800,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise CorpusError(f"detect-secrets failed: {exc}") from None
        found = json.loads(done.stdout)["results"]
    results = []
    for case, name in zip(cases, names, strict=True):
        lines = {int(r["line_number"]) for r in found.get(name, [])}
        if case.ranges:
            wanted = {
                line
                for start, end in case.ranges
                for line in range(
                    case.text.count("\n", 0, start) + 1, case.text.count("\n", 0, end) + 2
                )
            }
            caught = bool(lines & wanted)
        else:
            caught = bool(lines)
        results.append(Result(case, bool(lines), caught))
    return results


def _ratio(hit: int, n: int) -> str:
    return f"{hit}/{n} = {hit / n:.3f}" if n else "—"


def report(
    results: Sequence[Result], misses: bool, reference: Sequence[Result] | None = None
) -> list[str]:
    lines = [
        f"Configuration: `{SHIELD_YAML['secrets']}`; secretlint @ {SECRETLINT_COMMIT[:10]}, "
        f"whispers @ {WHISPERS_COMMIT[:10]}, noseyparker @ {NOSEYPARKER_COMMIT[:10]}, "
        f"trufflehog @ {TRUFFLEHOG_COMMIT[:10]}.",
        "",
        "| corpus | half | positives caught | negatives flagged |"
        + (" detect-secrets: caught | flagged |" if reference else ""),
        "|---|---|---|---|" + ("---|---|" if reference else ""),
    ]
    for corpus in ("secretlint", "whispers", "noseyparker", "trufflehog", "all"):
        for h in ("dev", "held-out"):
            mine = [
                r
                for r in results
                if (corpus == "all" or r.case.corpus == corpus) and half(r.case.name) == h
            ]
            pos = [r for r in mine if r.case.positive]
            neg = [r for r in mine if not r.case.positive]
            row = (
                f"| {corpus} | {h} | {_ratio(sum(r.caught for r in pos), len(pos))} | "
                f"{_ratio(sum(r.flagged for r in neg), len(neg))} |"
            )
            if reference:
                ref = [
                    r
                    for r in reference
                    if (corpus == "all" or r.case.corpus == corpus) and half(r.case.name) == h
                ]
                ref_pos = [r for r in ref if r.case.positive]
                ref_neg = [r for r in ref if not r.case.positive]
                row += (
                    f" {_ratio(sum(r.caught for r in ref_pos), len(ref_pos))} | "
                    f"{_ratio(sum(r.flagged for r in ref_neg), len(ref_neg))} |"
                )
            lines.append(row)
    kinds: dict[str, dict[str, list[int]]] = {}
    for r in results:
        if r.case.positive:
            cell = kinds.setdefault(f"{r.case.corpus}/{r.case.kind}", {}).setdefault(
                half(r.case.name), [0, 0]
            )
            cell[0] += r.caught
            cell[1] += 1
    lines += ["", "Positives caught per kind:", "", "| kind | dev | held-out |", "|---|---|---|"]
    for kind in sorted(kinds):
        cells = [
            f"{kinds[kind][h][0]}/{kinds[kind][h][1]}" if h in kinds[kind] else ""
            for h in ("dev", "held-out")
        ]
        lines.append(f"| {kind} | {cells[0]} | {cells[1]} |")
    if misses:
        lines += ["", "Dev half, positives missed and negatives flagged:", ""]
        for r in results:
            if half(r.case.name) == "dev" and r.case.positive != r.caught:
                what = "missed" if r.case.positive else "flagged"
                lines.append(f"- {what}: {r.case.name}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--secretlint", type=Path, required=True, help="a clone of secretlint")
    parser.add_argument("--whispers", type=Path, required=True, help="a clone of whispers")
    parser.add_argument("--noseyparker", type=Path, required=True, help="a clone of noseyparker")
    parser.add_argument("--trufflehog", type=Path, required=True, help="a clone of trufflehog")
    parser.add_argument(
        "--detect-secrets",
        type=Path,
        help="a detect-secrets executable: score the same cases with it, side by side",
    )
    parser.add_argument("--misses", action="store_true", help="list the dev half's misses")
    parser.add_argument("--out", type=Path, help="also write the report here (Markdown)")
    args = parser.parse_args(argv)
    try:
        cases = (
            secretlint_cases(args.secretlint)
            + whispers_cases(args.whispers)
            + noseyparker_cases(args.noseyparker)
            + trufflehog_cases(args.trufflehog)
        )
    except CorpusError as exc:
        print(f"eval_outside_secrets: {exc}", file=sys.stderr)
        return 2
    try:
        reference = reference_scan(cases, args.detect_secrets) if args.detect_secrets else None
    except CorpusError as exc:
        print(f"eval_outside_secrets: {exc}", file=sys.stderr)
        return 2
    lines = report(score(cases), args.misses, reference)
    print("\n".join(lines))
    if args.out:
        header = [
            "# The secrets shield on other scanners' fixtures",
            "",
            f"Generated by `{HOW_TO_RUN}` at `{revision()}` "
            f"({datetime.datetime.now(datetime.UTC).date().isoformat()}); what each corpus is and "
            "how a case counts: the docstring of `bench/quality/eval_outside_secrets.py`.",
            "",
        ]
        args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
