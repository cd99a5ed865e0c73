"""Overhead of shieldgate on non-stream chat completions: throughput and added latency.

What is measured
    ``bench/perf/fake_upstream.py`` (its own process, a bare asyncio HTTP server answering a canned
    ~1 KB ``chat.completion`` in a few microseconds) is loaded with ``POST /v1/chat/completions``
    requests (a system and a user message, ~300 bytes) along these paths, in the same run:

    ``direct``               load generator -> fake upstream: the floor.
    ``bare-relay``           through ``bench/perf/bare_relay.py``: an aiohttp server and client that
                             relay the request and the reply and do nothing else. The floor of
                             any proxy built on aiohttp on this machine: the part of
                             shieldgate's cost that is not shieldgate's.
    ``empty/LOOP``           through shieldgate (one process) with a policy without shields:
                             the cost of the proxy hop itself.
    ``default/LOOP``         through shieldgate with ``policies/default.yaml``: the hop plus the
                             input shields on the messages and the output shields on the reply.

    ``--cases json,stream`` adds a streamed case: the same request with ``"stream": true``,
    answered by the fake upstream with the same 600 characters in 4-character
    ``chat.completion.chunk`` events (about 150 events, 30 KB); every reply must be the
    upstream's bytes exactly. ``--policies`` picks the shieldgate paths (``empty``, ``default``).
    After the table the script prints the bare relay and shieldgate with the default policy
    side by side for each case (issue 21): requests/s at the highest concurrency, p50 at the
    lowest, their ratio and the added time with the rounds' range, and each process's CPU time
    per request.

    LOOP is the proxy's event loop: ``asyncio`` (the standard library's) and ``uvloop`` (when it
    is installed), so both can be compared; ``--loops`` picks them. Each proxy is started with
    ``bench/perf/proxy_main.py``, which is ``shieldgate serve`` with the loop chosen.

    For each concurrency (``--concurrency``, default 1, 16 and 64 connections, each sending its
    next request as soon as the reply arrived) every path runs for ``--duration`` seconds, path
    after path, ``--repeat`` rounds, the order rotating each round, so that the machine's noise
    hits all paths alike. A warm-up run per path and concurrency is not counted.

    The load generator is ``wrk`` (Debian package ``wrk``) when it is installed: one C thread,
    with a Lua hook that checks every reply (HTTP 200, body byte-identical to the upstream's,
    the right ``x-shieldgate-policy`` header). Without wrk (or with ``--client aiohttp``) an
    aiohttp client in this process does the same; being Python it costs about as much CPU per
    request as the fake upstream, so its ``direct`` figures are the client's limit, not the
    upstream's. Before anything is timed one request per path is checked the same way; any
    bad reply, socket error or timeout during the runs makes the script exit with status 1.

How to read the numbers
    ``req/s`` is the median over the rounds, ``x direct`` the median of the rounds' ratios to
    ``direct`` (interleaving makes a round's paths comparable even when the machine is busy).
    ``p50``/``p99`` are latency percentiles of the run with the median throughput; ``+p50`` and
    ``+p99`` are the median over rounds of (path - direct): the latency the proxy adds. At
    concurrency 1 that is the pure cost of one request through the proxy; at higher
    concurrency it includes queueing behind the other requests. ``proxy CPU`` is the proxy
    process's CPU time per request (user + system, from /proc), which other work on the machine
    inflates far less than throughput: it is the cost that decides how many requests one core
    can serve. The load average is printed before and after.

Targets (issue): added p50 latency <= 1 ms, and shieldgate with the default policy at >= 50%
of direct throughput at concurrency 64 with one worker; and (issue 21) against the bare relay,
round by round: added p50 over it <= 0.40 ms at the lowest concurrency, and >= 80% of its
requests/s at concurrency 64. All are judged on the proxy's default event loop (uvloop when
installed) and printed with PASS or MISS.

Run from the repository root: ``python -m bench.perf.overhead_bench [--concurrency 1,16,64]
[--duration 5] [--repeat 3] [--loops asyncio,uvloop] [--policies empty,default]
[--cases json] [--client auto] [--json FILE]``. Issue 21's comparison alone: ``--concurrency
1,64 --loops uvloop --policies default --cases json,stream``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import platform
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.perf.harness import (
    COMPLETION,
    COMPLETION_REQUEST,
    COMPLETION_SEED,
    COMPLETION_TEXT,
    BenchError,
    Process,
    load_average,
    make_events,
    policies,
    resolve_loop,
    run_main,
    start_bare_relay,
    start_fake_upstream,
    start_proxy,
    stop_processes,
    write_results,
)
from bench.revision import MEASURED_PATHS, code_revision
from shields.base import Stage
from shields.scan import check_text

POLICY_HEADER = "x-shieldgate-policy"
TARGET_ADDED_P50_MS = 1.0
TARGET_THROUGHPUT_RATIO = 0.5
TARGET_CONCURRENCY = 64
# Issue 21, against the bare relay in the same rounds.
TARGET_ADDED_VS_RELAY_MS = 0.40
TARGET_VS_RELAY = 0.80
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# The streamed case: COMPLETION_TEXT again, as the fake upstream streams it in 4-character
# ``chat.completion.chunk`` events (``stream-SIZE-CHUNK-SEED``, ``harness.make_events``).
STREAM_CHUNK = 4
STREAM_MODEL = f"stream-{len(COMPLETION_TEXT)}-{STREAM_CHUNK}-{COMPLETION_SEED}"
STREAM_REQUEST = json.dumps(
    {**json.loads(COMPLETION_REQUEST), "model": STREAM_MODEL, "stream": True},
    separators=(",", ":"),
).encode()
STREAM_REPLY = b"".join(make_events(len(COMPLETION_TEXT), STREAM_CHUNK, COMPLETION_SEED)[1])
CASES = {"json": (COMPLETION_REQUEST, COMPLETION), "stream": (STREAM_REQUEST, STREAM_REPLY)}


@dataclass(frozen=True, slots=True)
class Target:
    path: str  # direct, bare-relay, POLICY/LOOP
    url: str  # base URL including /v1
    policy: str | None  # expected x-shieldgate-policy header; None: not through the proxy
    process: Process  # the process whose CPU time is counted per request
    loop: str = ""
    case: str = "json"  # which request: CASES

    @property
    def name(self) -> str:
        return self.path if self.case == "json" else f"{self.path} {self.case}"

    @property
    def request(self) -> bytes:
        return CASES[self.case][0]

    @property
    def expected(self) -> bytes:
        return CASES[self.case][1]


@dataclass(slots=True)
class Run:
    requests: int
    seconds: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float
    cpu_s: float  # of the target's server process (the proxy; the fake for `direct`)
    upstream_cpu_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


@dataclass(slots=True)
class Cell:
    target: Target
    concurrency: int
    runs: list[Run] = field(default_factory=list)


# -- checks ------------------------------------------------------------------------------------


def check_reply(target: Target, status: int, headers: Any, body: bytes) -> str | None:
    """None when the reply is the upstream's completion, passed through; else what is wrong."""
    if status != 200:
        return f"HTTP {status}: {body[:200]!r}"
    if headers.get(POLICY_HEADER) != target.policy:
        return f"{POLICY_HEADER} is {headers.get(POLICY_HEADER)!r}, expected {target.policy!r}"
    if "x-shieldgate-blocked" in headers:
        return f"blocked: {headers['x-shieldgate-blocked']}"
    if body != target.expected:
        return f"body differs from the upstream's: {body[:200]!r}"
    return None


async def check_targets(targets: Sequence[Target]) -> None:
    async with aiohttp.ClientSession() as session:
        for target in targets:
            async with session.post(
                f"{target.url}/chat/completions",
                data=target.request,
                headers={"Content-Type": "application/json", "Authorization": "Bearer bench"},
            ) as response:
                body = await response.read()
                problem = check_reply(target, response.status, response.headers, body)
            if problem:
                raise BenchError(f"{target.name}: {problem}")


# -- load generators ---------------------------------------------------------------------------

_WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = [==[{request}]==]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "{authorization}"
local expected = [==[{expected}]==]
local policy = {policy}
local threads = {{}}
good = 0
bad = 0
sample = ""

function setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  local got = nil
  for name, value in pairs(headers) do
    if string.lower(name) == "{header}" then got = value end
  end
  if status == 200 and got == policy and {body_check} then
    good = good + 1
  else
    bad = bad + 1
    if sample == "" then
      sample = status .. " " .. tostring(got) .. " " .. string.sub(body, 1, 200)
    end
  end
end

function done(summary, latency, requests)
  local g, b, s = 0, 0, ""
  for _, thread in ipairs(threads) do
    g = g + thread:get("good")
    b = b + thread:get("bad")
    if s == "" then s = thread:get("sample") end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {{"requests":%d,"duration_us":%d,"good":%d,"bad":%d,"connect":%d,' ..
    '"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,' ..
    '"p99_us":%d,"mean_us":%f}}\\n',
    summary.requests, summary.duration, g, b, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.mean))
  io.write("BENCHSAMPLE " .. s .. "\\n")
end
"""


def wrk_script(
    target: Target,
    workdir: Path,
    *,
    request: bytes | None = None,
    expected: bytes | None = None,
    contains: bool = False,
    authorization: str = "Bearer bench",
) -> Path:
    """A wrk script sending ``request`` (the target's by default); a reply is good when its
    status is 200, its policy header is the target's and its body is ``expected`` (the
    target's by default; or, with ``contains``, contains it)."""
    request = target.request if request is None else request
    expected = target.expected if expected is None else expected
    for text in (request, expected):
        if b"]==]" in text:
            raise BenchError("a body contains the Lua long-string terminator")
    script = workdir / f"wrk-{target.name.replace('/', '-').replace(' ', '-')}.lua"
    script.write_text(
        _WRK_SCRIPT.format(
            request=request.decode(),
            expected=expected.decode(),
            policy="nil" if target.policy is None else json.dumps(target.policy),
            header=POLICY_HEADER,
            authorization=authorization,
            body_check="string.find(body, expected, 1, true) ~= nil"
            if contains
            else "body == expected",
        )
    )
    return script


@dataclass(frozen=True, slots=True)
class Measured:
    requests: int
    seconds: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    mean_ms: float


async def run_wrk(
    target: Target, script: Path, concurrency: int, duration: float, *, counted: bool
) -> Measured:
    process = await asyncio.create_subprocess_exec(
        "wrk",
        "-t1",
        f"-c{concurrency}",
        f"-d{max(1, round(duration))}s",
        "--timeout",
        "10s",
        "-s",
        str(script),
        f"{target.url}/chat/completions",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    text = out.decode(errors="replace")
    line = next((x for x in text.splitlines() if x.startswith("BENCHJSON ")), None)
    if process.returncode != 0 or line is None:
        raise BenchError(f"wrk failed on {target.name}: {(err or out).decode()[-500:]}")
    result = json.loads(line.removeprefix("BENCHJSON "))
    sample = next((x for x in text.splitlines() if x.startswith("BENCHSAMPLE ")), "")
    errors = {k: result[k] for k in ("connect", "read", "write", "status", "timeout") if result[k]}
    if result["bad"] or errors or result["good"] != result["requests"]:
        raise BenchError(
            f"{target.name}, concurrency {concurrency}: {result['bad']} bad replies, socket "
            f"errors {errors or 'none'}, {result['good']} good of {result['requests']}; first "
            f"bad: {sample.removeprefix('BENCHSAMPLE ')}"
        )
    if counted and not result["requests"]:
        raise BenchError(f"{target.name}: no request completed")
    return Measured(
        requests=result["requests"],
        seconds=result["duration_us"] / 1e6,
        p50_ms=result["p50_us"] / 1000,
        p90_ms=result["p90_us"] / 1000,
        p99_ms=result["p99_us"] / 1000,
        mean_ms=result["mean_us"] / 1000,
    )


async def run_aiohttp(target: Target, concurrency: int, duration: float) -> Measured:
    """The same closed loop as wrk's: ``concurrency`` connections, each sending its next request
    when the reply is in; every reply checked (after its latency is taken)."""
    latencies: list[float] = []
    problems: list[str] = []
    url = f"{target.url}/chat/completions"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=10)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        start = time.perf_counter()
        deadline = start + duration

        async def worker() -> None:
            while time.perf_counter() < deadline and not problems:
                sent = time.perf_counter()
                try:
                    async with session.post(url, data=target.request, headers=headers) as r:
                        body = await r.read()
                        status, got = r.status, r.headers
                except (aiohttp.ClientError, TimeoutError) as exc:
                    problems.append(f"{type(exc).__name__}: {exc}")
                    return
                latencies.append(time.perf_counter() - sent)
                problem = check_reply(target, status, got, body)
                if problem:
                    problems.append(problem)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.perf_counter() - start
    if problems:
        raise BenchError(f"{target.name}, concurrency {concurrency}: {problems[0]}")
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] * 1000

    return Measured(
        requests=len(latencies),
        seconds=seconds,
        p50_ms=pct(50),
        p90_ms=pct(90),
        p99_ms=pct(99),
        mean_ms=statistics.fmean(latencies) * 1000,
    )


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


# -- measuring ---------------------------------------------------------------------------------


async def measure(
    targets: Sequence[Target],
    upstream: Process,
    args: argparse.Namespace,
    workdir: Path,
) -> list[Cell]:
    scripts = {t.name: wrk_script(t, workdir) for t in targets} if args.client == "wrk" else {}

    async def one(target: Target, concurrency: int, duration: float, counted: bool) -> Run:
        cpu_before = cpu_seconds(target.process.pid)
        upstream_before = cpu_seconds(upstream.pid)
        if args.client == "wrk":
            m = await run_wrk(target, scripts[target.name], concurrency, duration, counted=counted)
        else:
            m = await run_aiohttp(target, concurrency, duration)
        return Run(
            requests=m.requests,
            seconds=m.seconds,
            p50_ms=m.p50_ms,
            p90_ms=m.p90_ms,
            p99_ms=m.p99_ms,
            mean_ms=m.mean_ms,
            cpu_s=cpu_seconds(target.process.pid) - cpu_before,
            upstream_cpu_s=cpu_seconds(upstream.pid) - upstream_before,
        )

    cells = {(t.name, c): Cell(t, c) for c in args.concurrency for t in targets}
    for concurrency in args.concurrency:
        for target in targets:  # warm-up, not counted: code paths, pools, caches
            await one(target, concurrency, args.warmup, counted=False)
        for round_ in range(args.repeat):
            shift = round_ % len(targets)
            for target in [*targets[shift:], *targets[:shift]]:
                run = await one(target, concurrency, args.duration, counted=True)
                cells[target.name, concurrency].runs.append(run)
                print(
                    f"  c={concurrency:<3} round {round_ + 1}/{args.repeat}  {target.name:<22}"
                    f" {run.rps:9.0f} req/s  p50 {run.p50_ms:7.3f} ms  p99 {run.p99_ms:7.3f} ms"
                    f"  load {load_average():.2f}",
                    flush=True,
                )
    return list(cells.values())


# -- report ------------------------------------------------------------------------------------


def summarize(cells: Sequence[Cell], targets: Sequence[Target]) -> list[dict[str, Any]]:
    by_key = {(c.target.path, c.target.case, c.concurrency): c for c in cells}
    rows: list[dict[str, Any]] = []
    for cell in cells:
        case = cell.target.case
        direct = by_key[("direct", case, cell.concurrency)]
        relay = by_key.get(("bare-relay", case, cell.concurrency))
        runs = cell.runs
        median_run = sorted(runs, key=lambda r: r.rps)[len(runs) // 2]
        pairs = list(zip(runs, direct.runs, strict=True))
        # Against the bare relay, round by round (issue 21's targets).
        relayed = list(zip(runs, relay.runs, strict=True)) if relay is not None else []
        vs_relay = [r.rps / b.rps for r, b in relayed]
        added_vs_relay = [r.p50_ms - b.p50_ms for r, b in relayed]
        rows.append(
            {
                "vs_relay": statistics.median(vs_relay) if relayed else None,
                "vs_relay_rounds": vs_relay,
                "added_vs_relay_p50_ms": statistics.median(added_vs_relay) if relayed else None,
                "added_vs_relay_p50_ms_rounds": added_vs_relay,
                "path": cell.target.path,
                "case": case,
                "concurrency": cell.concurrency,
                "rps": [r.rps for r in runs],
                "rps_median": statistics.median(r.rps for r in runs),
                "vs_direct": statistics.median(r.rps / d.rps for r, d in pairs),
                "p50_ms": median_run.p50_ms,
                "p50_ms_rounds": [r.p50_ms for r in runs],
                "p90_ms": median_run.p90_ms,
                "p99_ms": median_run.p99_ms,
                "mean_ms": median_run.mean_ms,
                "added_p50_ms": statistics.median(r.p50_ms - d.p50_ms for r, d in pairs),
                "added_p99_ms": statistics.median(r.p99_ms - d.p99_ms for r, d in pairs),
                "cpu_us_per_request": statistics.median(
                    r.cpu_s / r.requests * 1e6 for r in runs if r.requests
                ),
                "cpu_us_per_request_rounds": [
                    r.cpu_s / r.requests * 1e6 for r in runs if r.requests
                ],
                "upstream_cpu_us_per_request": statistics.median(
                    r.upstream_cpu_s / r.requests * 1e6 for r in runs if r.requests
                ),
                "requests": sum(r.requests for r in runs),
            }
        )
    order = {t.name: i for i, t in enumerate(targets)}
    rows.sort(key=lambda row: (row["case"] != "json", row["concurrency"], order[_name(row)]))
    return rows


def _name(row: dict[str, Any]) -> str:
    return row["path"] if row["case"] == "json" else f"{row['path']} {row['case']}"


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    header = (
        f"{'conc':>4} {'path':<22} {'req/s':>8} {'x direct':>8} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'+p50 ms':>8} {'+p99 ms':>8} {'CPU us/req':>10}"
    )
    print(header)
    print("-" * len(header))
    group = None
    for row in rows:
        if group is not None and (row["case"], row["concurrency"]) != group:
            print()
        group = (row["case"], row["concurrency"])
        direct = row["path"] == "direct"
        print(
            f"{row['concurrency']:>4} {_name(row):<22} {row['rps_median']:>8.0f} "
            f"{row['vs_direct']:>7.1%} {row['p50_ms']:>8.3f} {row['p99_ms']:>8.3f} "
            + (f"{'':>8} {'':>8} " if direct else f"{row['added_p50_ms']:>8.3f} ")
            + ("" if direct else f"{row['added_p99_ms']:>8.3f} ")
            + f"{row['cpu_us_per_request']:>10.0f}"
        )
    print(
        "\nreq/s: median of the rounds; x direct: median of the rounds' ratios; +p50/+p99: "
        "median of (path - direct) per round; CPU us/req: the server process's CPU time per "
        "request (the fake upstream's for direct, the proxy's otherwise).",
        flush=True,
    )


def side_by_side(rows: Sequence[dict[str, Any]], loop: str) -> list[dict[str, Any]]:
    """Issue 21's comparison, per case: the bare relay and shieldgate with the default policy,
    requests/s at the highest concurrency and p50 at the lowest, their ratio and the added
    time (medians of the rounds, with the rounds' spread), and each process's CPU per request."""
    by_key = {(r["path"], r["case"], r["concurrency"]): r for r in rows}
    top = max(r["concurrency"] for r in rows)
    low = min(r["concurrency"] for r in rows)
    compared = []
    for case in dict.fromkeys(r["case"] for r in rows):
        relay_top = by_key.get(("bare-relay", case, top))
        guarded_top = by_key.get((f"default/{loop}", case, top))
        relay_low = by_key.get(("bare-relay", case, low))
        guarded_low = by_key.get((f"default/{loop}", case, low))
        if not (relay_top and guarded_top and relay_low and guarded_low):
            continue
        compared.append(
            {
                "case": case,
                "loop": loop,
                "top_concurrency": top,
                "low_concurrency": low,
                "relay_rps": relay_top["rps_median"],
                "shieldgate_rps": guarded_top["rps_median"],
                "ratio": guarded_top["vs_relay"],
                "ratio_rounds": guarded_top["vs_relay_rounds"],
                "relay_p50_ms": relay_low["p50_ms"],
                "shieldgate_p50_ms": guarded_low["p50_ms"],
                "added_p50_ms": guarded_low["added_vs_relay_p50_ms"],
                "added_p50_ms_rounds": guarded_low["added_vs_relay_p50_ms_rounds"],
                "relay_cpu_us_low": relay_low["cpu_us_per_request"],
                "shieldgate_cpu_us_low": guarded_low["cpu_us_per_request"],
                "relay_cpu_us_top": relay_top["cpu_us_per_request"],
                "shieldgate_cpu_us_top": guarded_top["cpu_us_per_request"],
            }
        )
    return compared


def _spread(values: Sequence[float], fmt: str) -> str:
    return f"{format(min(values), fmt)}..{format(max(values), fmt)}" if values else "-"


def print_side_by_side(compared: Sequence[dict[str, Any]]) -> None:
    if not compared:
        return
    c = compared[0]
    top, low, loop = c["top_concurrency"], c["low_concurrency"], c["loop"]
    print(
        f"\nbare relay vs shieldgate (default policy, {loop}), same rounds: req/s at "
        f"concurrency {top}, p50 at concurrency {low}, CPU us per request of each process"
    )
    header = (
        f"{'case':<7} {'relay req/s':>11} {'sg req/s':>9} {'ratio':>6} {'(rounds)':>13} "
        f"{'relay p50':>9} {'sg p50':>7} {'added':>7} {'(rounds)':>13} "
        f"{'CPU relay/sg c=' + str(low):>18} {'CPU relay/sg c=' + str(top):>19}"
    )
    print(header)
    print("-" * len(header))
    for c in compared:
        print(
            f"{c['case']:<7} {c['relay_rps']:>11.0f} {c['shieldgate_rps']:>9.0f} "
            f"{c['ratio']:>6.2f} {_spread(c['ratio_rounds'], '.2f'):>13} "
            f"{c['relay_p50_ms']:>9.3f} {c['shieldgate_p50_ms']:>7.3f} "
            f"{c['added_p50_ms']:>7.3f} {_spread(c['added_p50_ms_rounds'], '.3f'):>13} "
            f"{c['relay_cpu_us_low']:>8.0f} / {c['shieldgate_cpu_us_low']:<7.0f} "
            f"{c['relay_cpu_us_top']:>9.0f} / {c['shieldgate_cpu_us_top']:<7.0f}"
        )
    print(
        "ratio: shieldgate's req/s over the bare relay's, median of the rounds (min..max); "
        "added: shieldgate's p50 minus the bare relay's, median of the rounds (min..max); CPU: "
        "user + system time of each proxy process per request.",
        flush=True,
    )


def loop_gains(rows: Sequence[dict[str, Any]], loops: Sequence[str]) -> list[dict[str, Any]]:
    """uvloop against asyncio for each policy and concurrency, from the interleaved runs."""
    if "asyncio" not in loops or "uvloop" not in loops:
        return []
    by_key = {(r["path"], r["concurrency"]): r for r in rows if r["case"] == "json"}
    gains: list[dict[str, Any]] = []
    for (path, conc), row in by_key.items():
        if not path.endswith("/uvloop"):
            continue
        base = by_key[(path.replace("/uvloop", "/asyncio"), conc)]
        gains.append(
            {
                "policy": path.split("/")[0],
                "concurrency": conc,
                "rps_ratio": row["rps_median"] / base["rps_median"],
                "cpu_ratio": row["cpu_us_per_request"] / base["cpu_us_per_request"],
                "p50_delta_ms": row["p50_ms"] - base["p50_ms"],
            }
        )
    return sorted(gains, key=lambda g: (g["concurrency"], g["policy"]))


def judge(rows: Sequence[dict[str, Any]], loop: str) -> list[dict[str, Any]]:
    # The targets are for non-stream requests.
    by_key = {(r["path"], r["concurrency"]): r for r in rows if r["case"] == "json"}
    verdicts: list[dict[str, Any]] = []
    lowest = min(r["concurrency"] for r in rows)
    # Issue 21: against the bare aiohttp relay measured in the same rounds.
    row = by_key.get((f"default/{loop}", lowest))
    if row is not None and row.get("added_vs_relay_p50_ms") is not None:
        verdicts.append(
            {
                "target": f"added p50 over the bare relay <= {TARGET_ADDED_VS_RELAY_MS:g} ms "
                f"(default policy, {loop}, concurrency {lowest})",
                "value": f"{row['added_vs_relay_p50_ms']:.3f} ms",
                "pass": row["added_vs_relay_p50_ms"] <= TARGET_ADDED_VS_RELAY_MS,
            }
        )
    row = by_key.get((f"default/{loop}", TARGET_CONCURRENCY))
    if row is not None and row.get("vs_relay") is not None:
        verdicts.append(
            {
                "target": f"throughput >= {TARGET_VS_RELAY:.0%} of the bare relay's "
                f"(default policy, {loop}, concurrency {TARGET_CONCURRENCY}, one worker)",
                "value": f"{row['vs_relay']:.0%}",
                "pass": row["vs_relay"] >= TARGET_VS_RELAY,
            }
        )
    row = by_key.get((f"default/{loop}", lowest))
    if row is not None:
        verdicts.append(
            {
                "target": f"added p50 latency <= {TARGET_ADDED_P50_MS:g} ms "
                f"(default policy, {loop}, concurrency {lowest})",
                "value": f"{row['added_p50_ms']:.3f} ms",
                "pass": row["added_p50_ms"] <= TARGET_ADDED_P50_MS,
            }
        )
    row = by_key.get((f"default/{loop}", TARGET_CONCURRENCY))
    if row is not None:
        verdicts.append(
            {
                "target": f"throughput >= {TARGET_THROUGHPUT_RATIO:.0%} of direct "
                f"(default policy, {loop}, concurrency {TARGET_CONCURRENCY}, one worker)",
                "value": f"{row['vs_direct']:.1%}",
                "pass": row["vs_direct"] >= TARGET_THROUGHPUT_RATIO,
            }
        )
    return verdicts


def floor_lines(rows: Sequence[dict[str, Any]], loop: str) -> list[str]:
    """What the bare aiohttp relay reaches, beside what shieldgate reaches, per concurrency."""
    by_key = {(r["path"], r["concurrency"]): r for r in rows if r["case"] == "json"}
    lines = []
    for concurrency in sorted({r["concurrency"] for r in rows}):
        relay = by_key.get(("bare-relay", concurrency))
        guarded = by_key.get((f"default/{loop}", concurrency))
        if relay is None or guarded is None:
            continue
        lines.append(
            f"floor at c={concurrency}: a bare aiohttp relay reaches {relay['vs_direct']:.1%} of "
            f"direct ({relay['cpu_us_per_request']:.0f} us CPU/request); shieldgate with the "
            f"default policy {guarded['vs_direct']:.1%} ({guarded['cpu_us_per_request']:.0f} "
            f"us), {guarded['vs_relay']:.0%} of the bare relay's requests/s and "
            f"{guarded['added_vs_relay_p50_ms']:+.3f} ms p50 over it (medians of the rounds)"
        )
    return lines


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--concurrency", default="1,16,64", help="connections, comma-separated")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per timed run")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of uncounted warm-up")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over all paths")
    parser.add_argument(
        "--loops",
        default="asyncio,uvloop",
        help="proxy event loops to compare (uvloop is left out when not installed)",
    )
    parser.add_argument(
        "--policies",
        default="empty,default",
        help="shieldgate paths: the empty and/or the default policy",
    )
    parser.add_argument(
        "--cases",
        default="json",
        help="json (a non-stream reply) and/or stream (the same text streamed in 4-character "
        "events)",
    )
    parser.add_argument("--client", choices=("auto", "wrk", "aiohttp"), default="auto")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    args = parser.parse_args(argv)
    try:
        args.concurrency = sorted({int(c) for c in args.concurrency.split(",") if c.strip()})
    except ValueError:
        parser.error(f"--concurrency: not a list of integers: {args.concurrency!r}")
    if not args.concurrency or min(args.concurrency) < 1:
        parser.error("--concurrency: give at least one value >= 1")
    if args.repeat < 1 or args.duration <= 0 or args.warmup <= 0:
        parser.error("--repeat, --duration and --warmup must be positive")
    loops = [x.strip() for x in args.loops.split(",") if x.strip()]
    if not loops or any(x not in ("asyncio", "uvloop") for x in loops):
        parser.error("--loops: asyncio and/or uvloop")
    args.loops = [x for x in loops if x == "asyncio" or resolve_loop("auto") == "uvloop"]
    args.policies = [x.strip() for x in args.policies.split(",") if x.strip()]
    if not args.policies or any(x not in ("empty", "default") for x in args.policies):
        parser.error("--policies: empty and/or default")
    args.cases = [x.strip() for x in args.cases.split(",") if x.strip()]
    if not args.cases or any(x not in CASES for x in args.cases):
        parser.error("--cases: json and/or stream")
    if not args.loops:
        parser.error("--loops uvloop: uvloop is not installed")
    if args.client == "auto":
        args.client = "wrk" if shutil.which("wrk") else "aiohttp"
    elif args.client == "wrk" and not shutil.which("wrk"):
        parser.error("--client wrk: wrk is not installed (apt-get install wrk)")
    return args


async def run(args: argparse.Namespace) -> int:
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    revision = await asyncio.to_thread(code_revision, *MEASURED_PATHS)
    load_before = load_average()
    default_loop = resolve_loop("auto")
    print(
        f"shieldgate overhead benchmark: concurrency {args.concurrency}, {args.duration:g} s "
        f"runs, {args.repeat} rounds, client {args.client}, proxy loops {args.loops} (default "
        f"{default_loop}); code {revision}; Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs; load average {load_before:.2f}",
        flush=True,
    )
    children: list[Process] = []
    with tempfile.TemporaryDirectory(prefix="shieldgate-bench-") as tmp:
        workdir = Path(tmp)
        (empty_file, _), (default_file, default) = policies(workdir)
        prompt = "\n".join(m["content"] for m in json.loads(COMPLETION_REQUEST)["messages"])
        for stage, text in ((Stage.OUTPUT, COMPLETION_TEXT), (Stage.INPUT, prompt)):
            findings = check_text(default.shields(stage), text)
            if findings:
                raise BenchError(f"the benchmark's texts trip the default policy: {findings[:3]}")
        try:
            upstream = await start_fake_upstream(workdir)
            children.append(upstream)
            servers = [Target("direct", upstream.url, None, upstream)]
            relay = await start_bare_relay(upstream.url, workdir, resolve_loop("auto"))
            children.append(relay)
            servers.append(Target("bare-relay", relay.url, None, relay, relay.loop))
            for loop in args.loops:
                for policy, file, name in (
                    ("empty", empty_file, "empty"),
                    ("default", default_file, default.name),
                ):
                    if policy not in args.policies:
                        continue
                    proxy = await start_proxy(
                        f"{policy}-{loop}", upstream.url, file, workdir, loop=loop
                    )
                    children.append(proxy)
                    servers.append(Target(f"{policy}/{loop}", proxy.url, name, proxy, loop))
            targets = [
                dataclasses.replace(server, case=case) for case in args.cases for server in servers
            ]
            print(
                f"fake upstream {upstream.url} (pid {upstream.pid}, loop {upstream.loop}); "
                + ", ".join(f"{t.name} {t.url} (pid {t.process.pid})" for t in servers[1:]),
                flush=True,
            )
            await check_targets(targets)
            cells = await measure(targets, upstream, args, workdir)
        finally:
            await stop_processes(children)
    rows = summarize(cells, targets)
    print()
    print_table(rows)
    gains = loop_gains(rows, args.loops)
    if gains:
        print(
            "\nuvloop vs asyncio (same run): "
            + "; ".join(
                f"{g['policy']} c={g['concurrency']}: {g['rps_ratio']:.2f}x req/s, "
                f"{g['cpu_ratio']:.2f}x CPU/req"
                for g in gains
            )
        )
    judged_loop = default_loop if default_loop in args.loops else args.loops[0]
    compared = side_by_side(rows, judged_loop)
    print_side_by_side(compared)
    verdicts = judge(rows, judged_loop)
    print()
    for line in floor_lines(rows, judged_loop):
        print(line)
    for v in verdicts:
        print(f"{'PASS' if v['pass'] else 'MISS'}  {v['target']}: {v['value']}")
    load_after = load_average()
    print(f"load average: before {load_before:.2f}, after {load_after:.2f}", flush=True)
    if args.json:
        document = {
            "benchmark": "overhead_bench",
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "code_revision": revision,
            "date": time.strftime("%Y-%m-%d"),
            "load_average_1min": {"before": load_before, "after": load_after},
            "client": args.client,
            "duration_s": args.duration,
            "repeat": args.repeat,
            "loops": args.loops,
            "default_loop": default_loop,
            "request_bytes": len(COMPLETION_REQUEST),
            "reply_bytes": len(COMPLETION),
            "cases": args.cases,
            "stream_reply_bytes": len(STREAM_REPLY),
            "results": rows,
            "relay_vs_shieldgate": compared,
            "uvloop_vs_asyncio": gains,
            "targets": verdicts,
        }
        write_results(args.json, document)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("overhead_bench", run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
