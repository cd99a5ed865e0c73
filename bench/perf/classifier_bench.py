"""Latency and throughput of ``classifier`` shields on this machine, beside a regex shield.

Builds the tests' bag-of-words classifier (``tests/support/classifier_model_builder.py``: a real
ONNX
graph and ``tokenizers`` tokenizer; ``--hidden``/``--layers`` make it as costly per token as you
like) and runs the same texts through:

- ``regex``: a ``regex`` shield over the whole text (``shields.scan.check_text``), the reference:
  what a pattern rule costs on the same input;
- ``classifier``: the real ``classifier`` shield (``shield.check``: engine queue, worker thread,
  tokenizer, onnxruntime), its verdict cache off so every text is inferred, at each concurrency
  (``--concurrency``: that many texts awaited at once, on one event loop) and each batch size
  (``--batch-sizes``). Each run reads texts of its own, drawn the same way (the engine
  remembers windows it scored: a repeated text would cost nothing).

Rounds are interleaved (regex, then every classifier setting, then again) because the machines
here are shared. Prints per path: texts/s, latency p50/p99 (from a text's submission to its
verdict), windows per inference run (micro-batching at work), and the ratio to regex. Run:
``python -m bench.perf.classifier_bench --texts 200 --chars 600 --concurrency 1,8,32
--batch-sizes 1,8,32 --repeat 3 [--json FILE]``. Needs ``pip install -e '.[test]'`` (onnx
builds the model).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.revision import code_revision
from shields.base import Stage
from shields.builtin.classifier import ClassifierShield
from shields.builtin.classifier_engine import add_observer
from shields.policy import parse_policy
from shields.remote import JudgeRequest
from shields.scan import check_text
from tests.support.classifier_model_builder import BENIGN_WORDS, TRIGGERS, build_classifier

REGEX_POLICY = r"""
version: 1
name: regex-reference
input:
  - id: rules
    type: regex
    patterns:
      - '\b(ignore|override|instructions|jailbreak|dan)\b'
"""


def classifier_policy(model: Path, batch_size: int, wait_ms: float, threads: int) -> str:
    return f"""
version: 1
name: classifier-bench
input:
  - id: guard
    type: classifier
    model: {model}
    labels: {{INJECTION: 0.9, JAILBREAK: 0.9}}
    timeout: 600
    max_queue: 100000
    batch_size: {batch_size}
    batch_wait_ms: {wait_ms}
    threads: {threads}
    cache: {{size: 0}}
"""


class NoNetwork:
    """The backends argument; a classifier never calls them."""

    async def chat(self, spec: Any, messages: list[dict[str, str]]) -> str:
        raise AssertionError("no network here")

    async def moderate(self, spec: Any, text: str) -> dict[str, Any]:
        raise AssertionError("no network here")

    async def post_json(self, spec: Any, payload: dict[str, Any]) -> Any:
        raise AssertionError("no network here")


NO_NETWORK = NoNetwork()


class Windows:
    """Counts windows per inference run (an engine observer)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: list[int] = []

    def classifier_batch(self, model: str, windows: int, seconds: float) -> None:
        with self.lock:
            self.runs.append(windows)

    def classifier_check(self, model: str, seconds: float) -> None:
        pass


@dataclass
class Result:
    path: str
    seconds: list[float] = field(default_factory=list)  # wall time of each round
    latencies: list[float] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    flagged: int = 0


def make_texts(count: int, chars: int, seed: int = 7) -> list[str]:
    """Prose-like texts of about ``chars`` characters; one in five carries one trigger word."""
    rng = random.Random(seed)
    texts = []
    triggers = list(TRIGGERS)
    for i in range(count):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < chars:
            words.append(rng.choice(BENIGN_WORDS))
        if i % 5 == 0:
            words.insert(rng.randrange(len(words)), rng.choice(triggers))
        # A unique tail: no two texts are the same (the cache is off anyway).
        texts.append(" ".join(words) + f" {i}")
    return texts


def run_regex(texts: list[str], result: Result) -> None:
    shields = parse_policy(REGEX_POLICY).shields(Stage.INPUT)
    started = time.perf_counter()
    for text in texts:
        t = time.perf_counter()
        found = check_text(shields, text)
        result.latencies.append(time.perf_counter() - t)
        result.flagged += bool(found)
    result.seconds.append(time.perf_counter() - started)


async def run_classifier(
    shield: ClassifierShield, texts: list[str], concurrency: int, result: Result, windows: Windows
) -> None:
    queue = list(reversed(texts))
    first_run = len(windows.runs)

    async def client() -> None:
        while queue:
            text = queue.pop()
            t = time.perf_counter()
            found = await shield.check(JudgeRequest(Stage.INPUT, text), NO_NETWORK)
            result.latencies.append(time.perf_counter() - t)
            result.flagged += bool(found)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    result.seconds.append(time.perf_counter() - started)
    result.runs += windows.runs[first_run:]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--chars", type=int, default=600, help="characters per text")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--wait-ms", type=float, default=2.0, help="batch_wait_ms")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: all)")
    parser.add_argument("--hidden", type=int, default=256, help="the model's width")
    parser.add_argument("--layers", type=int, default=2, help="the model's extra layers")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per window")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    texts = make_texts(args.texts, args.chars)
    # Every run reads texts of its own (drawn the same way): the engine remembers the windows
    # it scored, and a run must not be answered from an earlier run's work.
    seeds = iter(range(1000, 1_000_000))

    windows = Windows()
    add_observer(windows)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_classifier(
            Path(tmp) / "bench-model",
            hidden=args.hidden,
            layers=args.layers,
            max_length=args.max_length,
            # One trigger decides a window of any length, as in the tests' short windows.
            trigger_weight=3.0 * args.max_length,
        )
        shields: dict[int, ClassifierShield] = {}
        for size in batch_sizes:
            policy = parse_policy(classifier_policy(model, size, args.wait_ms, args.threads))
            (shield,) = policy.remote(Stage.INPUT)
            assert isinstance(shield, ClassifierShield)
            shields[size] = shield
        results: dict[str, Result] = {"regex": Result("regex")}
        settings = [(c, b) for b in batch_sizes for c in concurrencies if not (c == 1 and b > 1)]
        for c, b in settings:
            results[f"classifier c={c} batch={b}"] = Result(f"classifier c={c} batch={b}")
        loaded = next(iter(shields.values())).engine.model
        per_text = [len(loaded.windows(t)) for t in texts]

        async def warm() -> None:
            for shield in shields.values():
                await run_classifier(shield, texts[:8], 8, Result("warm-up"), windows)

        asyncio.run(warm())
        for _ in range(args.repeat):
            run_regex(make_texts(args.texts, args.chars, next(seeds)), results["regex"])
            for c, b in settings:
                result = results[f"classifier c={c} batch={b}"]
                fresh = make_texts(args.texts, args.chars, next(seeds))
                asyncio.run(run_classifier(shields[b], fresh, c, result, windows))

    regex_rate = len(texts) / min(results["regex"].seconds)
    print(
        f"{len(texts)} texts of ~{args.chars} characters "
        f"({statistics.mean(per_text):.1f} windows of {args.max_length} tokens each on average); "
        f"model: hidden {args.hidden}, {args.layers} extra layers; {args.repeat} rounds, best "
        f"round's throughput, latencies over all rounds"
    )
    print(
        f"{'path':<28} {'texts/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'win/run':>8} {'vs regex':>9}"
    )
    rows = []
    for result in results.values():
        rate = len(texts) / min(result.seconds)
        p50 = percentile(result.latencies, 0.5) * 1000
        p99 = percentile(result.latencies, 0.99) * 1000
        per_run = statistics.mean(result.runs) if result.runs else float("nan")
        flagged = result.flagged // args.repeat
        print(
            f"{result.path:<28} {rate:>10.1f} {p50:>9.3f} {p99:>9.3f} {per_run:>8.1f} "
            f"{rate / regex_rate:>9.4f}"
        )
        rows.append(
            {
                "path": result.path,
                "texts_per_second": rate,
                "p50_ms": p50,
                "p99_ms": p99,
                "windows_per_run": None if not result.runs else per_run,
                "flagged": flagged,
            }
        )
    flags = {r["path"]: r["flagged"] for r in rows}
    print(f"texts flagged per round: {flags}")
    if args.json:
        report: dict[str, Any] = {
            "revision": code_revision(),
            "machine": platform.platform(),
            "texts": len(texts),
            "chars": args.chars,
            "hidden": args.hidden,
            "layers": args.layers,
            "max_length": args.max_length,
            "rows": rows,
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
