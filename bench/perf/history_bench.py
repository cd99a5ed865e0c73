"""Long conversations: what shieldgate adds to a request that resends a growing history.

What is measured
    Chat clients and agents send the whole conversation with every request. One conversation
    (a system prompt, user and assistant turns of English prose, and now and then an assistant
    tool call with its JSON arguments and the tool's result) is cut at growing sizes of the
    request body (``--sizes``, default 10 KB to 1 MB); at each size every request sends that
    history plus one new short user message (a different one each time: the client's next
    turn), ``POST /v1/chat/completions`` at concurrency 1, to the fake upstream's canned
    ``chat.completion`` along these paths, in the same run:

    ``bare-relay``   ``bench/perf/bare_relay.py``: an aiohttp server and client that only relay,
                     the floor of any aiohttp proxy (it reads and forwards the same bytes).
    ``shieldgate``   ``shieldgate serve`` with ``policies/default.yaml`` (its input cache on,
                     as by default: the history was scanned when it was new).
    ``uncached``     the same with ``input_cache_bytes: 0``: every text of every request
                     scanned, the cost before issue 21 (``--no-uncached`` leaves it out).

    The sizes are taken in increasing order, as a conversation grows: at each size the turns
    already sent are in shieldgate's cache and the new ones are scanned once, in the
    uncounted warm-up. Then ``--repeat`` rounds, the paths' order rotating each round, each
    path ``--requests`` requests per round. Every reply is checked (HTTP 200, the upstream's
    body byte for byte, the policy header, no block) before its time counts.

How to read the numbers
    ``p50`` is the median latency of a path's requests at that size (client to client, the
    body's upload included); ``added`` is shieldgate's p50 minus the bare relay's, measured in
    the same rounds: what the proxy adds to a request of that size. ``CPU`` is the proxy
    process's CPU time per request (from /proc), which other work on the machine moves least.
    With the cache the added time should stay about flat as the history grows: the request is
    still read, parsed and walked (every text of it looked up), but only the new message is
    scanned.

Target (issue 21): 400 KB of history plus one new message, added p50 <= 2 ms, printed with
PASS or MISS; the script exits 1 on a bad reply, never on a missed target.

Run from the repository root: ``python -m bench.perf.history_bench [--sizes
10000,30000,100000,200000,400000,1000000] [--requests 40] [--repeat 3] [--loop auto]
[--no-uncached] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
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
    BenchError,
    Process,
    load_average,
    make_prose,
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
from shields.openai.input_check import check_input_texts
from shields.openai.request import parse_chat_request

POLICY_HEADER = "x-shieldgate-policy"
TARGET_SIZE = 400_000
TARGET_ADDED_P50_MS = 2.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
DEFAULT_SIZES = "10000,30000,100000,200000,400000,1000000"


def human_size(size: int) -> str:
    """Sizes as this benchmark's table shows them: whole KB below a megabyte."""
    return f"{size / 1_000_000:.2f} MB" if size >= 1_000_000 else f"{size / 1000:.0f} KB"


# -- the conversation --------------------------------------------------------------------------


def conversation(size: int, seed: int = 21) -> list[dict[str, Any]]:
    """Messages of a chat with tool use, at least ``size`` bytes of JSON: prose turns (users
    write a few lines, the assistant more), and every fifth turn an assistant tool call with
    its arguments and the tool's result (a few KB, like a file an agent read)."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": make_prose(600, seed=seed)},
    ]
    total = 0
    turn = 0
    while total < size:
        turn += 1
        user = {"role": "user", "content": make_prose(rng.randint(80, 1200), seed=seed + turn)}
        messages.append(user)
        if turn % 5 == 0:
            call_id = f"call_{turn}"
            arguments = json.dumps({"path": f"notes/chapter{turn}.txt", "lines": 200})
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": arguments},
                        }
                    ],
                }
            )
            result = make_prose(rng.randint(2000, 8000), seed=10_000 + turn)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        text = make_prose(rng.randint(300, 4000), seed=20_000 + turn)
        messages.append({"role": "assistant", "content": text})
        total = len(encode(messages))
    return messages


def encode(messages: list[dict[str, Any]]) -> bytes:
    # Compact, as the SDKs write JSON (httpx, fetch, serde).
    return json.dumps(
        {"model": "bench-json", "messages": messages}, separators=(",", ":"), ensure_ascii=False
    ).encode()


def history_of(messages: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """The longest prefix of whole turns whose body is at most ``size`` bytes (at least the
    system prompt), ending before a user turn so that the new message follows an answer."""
    best = messages[:1]
    for end in range(2, len(messages) + 1):
        if messages[end - 1]["role"] != "assistant" or messages[end - 1].get("tool_calls"):
            continue
        if len(encode(messages[:end])) > size:
            break
        best = messages[:end]
    return best


class Bodies:
    """Request bodies: the history's bytes with a new user message spliced in before the
    closing brackets (built without re-encoding the history each time)."""

    def __init__(self, history: list[dict[str, Any]]) -> None:
        encoded = encode(history)
        tail = b"]}"
        if not encoded.endswith(tail):
            raise BenchError("unexpected encoding of the conversation")
        self.head = encoded[: -len(tail)]
        self.history_bytes = len(encoded)
        self.messages = len(history)
        self.counter = 0

    def next(self) -> bytes:
        self.counter += 1
        message = {"role": "user", "content": f"And what about question {self.counter}, briefly?"}
        return self.head + b"," + json.dumps(message, separators=(",", ":")).encode() + b"]}"


# -- measuring ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: str
    policy: str | None  # expected x-shieldgate-policy header; None for the bare relay
    process: Process


@dataclass(slots=True)
class Cell:
    latencies: list[float] = field(default_factory=list)  # seconds
    cpu_s: float = 0.0
    requests: int = 0


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, all its threads (a large request may be checked on a
    worker thread): nanoseconds from each thread's schedstat where the kernel keeps it,
    else clock ticks (10 ms) from /proc/PID/stat."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


async def send(session: aiohttp.ClientSession, target: Target, body: bytes) -> float:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    started = time.perf_counter()
    async with session.post(f"{target.url}/chat/completions", data=body, headers=headers) as r:
        reply = await r.read()
        elapsed = time.perf_counter() - started
        status, got = r.status, r.headers
    if status != 200:
        raise BenchError(f"{target.name}: HTTP {status}: {reply[:200]!r}")
    if got.get(POLICY_HEADER) != target.policy:
        raise BenchError(f"{target.name}: {POLICY_HEADER} is {got.get(POLICY_HEADER)!r}")
    if "x-shieldgate-blocked" in got or reply != COMPLETION:
        raise BenchError(f"{target.name}: not the upstream's reply: {reply[:200]!r}")
    return elapsed


async def measure_size(
    session: aiohttp.ClientSession,
    targets: Sequence[Target],
    bodies: Bodies,
    args: argparse.Namespace,
) -> dict[str, Cell]:
    cells = {t.name: Cell() for t in targets}
    for target in targets:  # warm-up: connections, code paths, and the new turns scanned once
        for _ in range(args.warmup):
            await send(session, target, bodies.next())
    for round_ in range(args.repeat):
        shift = round_ % len(targets)
        for target in [*targets[shift:], *targets[:shift]]:
            cell = cells[target.name]
            before = cpu_seconds(target.process.pid)
            for _ in range(args.requests):
                cell.latencies.append(await send(session, target, bodies.next()))
            cell.cpu_s += cpu_seconds(target.process.pid) - before
            cell.requests += args.requests
    return cells


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def summarize(size: int, bodies: Bodies, cells: dict[str, Cell]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "size": size,
        "history_bytes": bodies.history_bytes,
        "messages": bodies.messages + 1,
        "paths": {},
    }
    relay_p50 = statistics.median(cells["bare-relay"].latencies) * 1000
    for name, cell in cells.items():
        p50 = statistics.median(cell.latencies) * 1000
        row["paths"][name] = {
            "p50_ms": p50,
            "p90_ms": percentile(cell.latencies, 90) * 1000,
            "added_p50_ms": None if name == "bare-relay" else p50 - relay_p50,
            "cpu_ms_per_request": cell.cpu_s / cell.requests * 1000,
            "requests": cell.requests,
        }
    return row


def print_row(row: dict[str, Any], names: Sequence[str]) -> None:
    paths = row["paths"]
    cells = []
    for name in names:
        path = paths[name]
        added = path["added_p50_ms"]
        cells.append(
            f"{path['p50_ms']:8.2f}"
            + ("" if added is None else f" {added:+8.2f}")
            + f" {path['cpu_ms_per_request']:7.2f}"
        )
    print(
        f"{human_size(row['history_bytes']):>8} {row['messages']:>5}  " + "  ".join(cells),
        flush=True,
    )


def header(names: Sequence[str]) -> str:
    columns = []
    for name in names:
        columns.append(
            f"{name + ' p50':>8}" + ("" if name == "bare-relay" else f" {'added':>8}") + " CPU ms"
        )
    return f"{'history':>8} {'msgs':>5}  " + "  ".join(columns)


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="body sizes in bytes, ascending")
    parser.add_argument("--requests", type=int, default=40, help="requests per path and round")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over all paths")
    parser.add_argument("--warmup", type=int, default=3, help="uncounted requests per path")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    parser.add_argument(
        "--no-uncached", dest="uncached", action="store_false", help="leave out the cache-off path"
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes: not a list of integers: {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 1000:
        parser.error("--sizes: give sizes of at least 1000 bytes")
    if args.requests < 1 or args.repeat < 1 or args.warmup < 1:
        parser.error("--requests, --repeat and --warmup must be positive")
    return args


async def run(args: argparse.Namespace) -> int:
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    revision = await asyncio.to_thread(code_revision, *MEASURED_PATHS)
    loop = resolve_loop(args.loop)
    load_before = load_average()
    print(
        f"shieldgate history benchmark: sizes {[human_size(s) for s in args.sizes]}, "
        f"{args.requests} requests x {args.repeat} rounds per path and size, concurrency 1, "
        f"proxy loop {loop}; code {revision}; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {load_before:.2f}",
        flush=True,
    )
    messages = conversation(max(args.sizes))
    children: list[Process] = []
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shieldgate-bench-") as tmp:
        workdir = Path(tmp)
        _, (default_file, default) = policies(workdir)
        # The conversation must pass the default policy untouched: a block or a redaction
        # would measure another path than the one of an ordinary request.
        whole = parse_chat_request(encode(messages))
        checked = check_input_texts(default, whole).outcome
        if checked.findings:
            raise BenchError(f"the conversation trips the default policy: {checked.findings[:3]}")
        try:
            upstream = await start_fake_upstream(workdir)
            children.append(upstream)
            relay = await start_bare_relay(upstream.url, workdir, loop)
            children.append(relay)
            targets = [Target("bare-relay", relay.url, None, relay)]
            proxy = await start_proxy("shieldgate", upstream.url, default_file, workdir, loop=loop)
            children.append(proxy)
            targets.append(Target("shieldgate", proxy.url, default.name, proxy))
            if args.uncached:
                off = await start_proxy(
                    "uncached",
                    upstream.url,
                    default_file,
                    workdir,
                    loop=loop,
                    settings={"input_cache_bytes": 0},
                )
                children.append(off)
                targets.append(Target("uncached", off.url, default.name, off))
            names = [t.name for t in targets]
            print(
                ", ".join(f"{t.name} {t.url} (pid {t.process.pid})" for t in targets)
                + "\n\np50 and added (shieldgate's p50 minus the bare relay's, same rounds) "
                "in ms; CPU: the proxy process's CPU ms per request\n" + header(names),
                flush=True,
            )
            connector = aiohttp.TCPConnector(limit=1)
            timeout = aiohttp.ClientTimeout(total=60)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                for size in args.sizes:
                    bodies = Bodies(history_of(messages, size))
                    cells = await measure_size(session, targets, bodies, args)
                    row = summarize(size, bodies, cells)
                    rows.append(row)
                    print_row(row, names)
        finally:
            await stop_processes(children)
    verdicts = judge(rows)
    print()
    for line in flatness(rows):
        print(line)
    for v in verdicts:
        print(f"{'PASS' if v['pass'] else 'MISS'}  {v['target']}: {v['value']}")
    load_after = load_average()
    print(f"load average: before {load_before:.2f}, after {load_after:.2f}", flush=True)
    if args.json:
        write_results(
            args.json,
            {
                "benchmark": "history_bench",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "code_revision": revision,
                "date": time.strftime("%Y-%m-%d"),
                "load_average_1min": {"before": load_before, "after": load_after},
                "loop": loop,
                "requests": args.requests,
                "repeat": args.repeat,
                "results": rows,
                "targets": verdicts,
            },
        )
    return 0


def judge(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's target at the size closest to 400 KB (within 20%)."""
    if not rows:
        return []
    row = min(rows, key=lambda r: abs(r["history_bytes"] - TARGET_SIZE))
    if abs(row["history_bytes"] - TARGET_SIZE) > TARGET_SIZE / 5:
        return []  # no size near 400 KB was measured
    added = row["paths"]["shieldgate"]["added_p50_ms"]
    return [
        {
            "target": f"added p50 <= {TARGET_ADDED_P50_MS:g} ms with "
            f"{human_size(row['history_bytes'])} of history + one new message "
            "(default policy, concurrency 1, against the bare relay)",
            "value": f"{added:.2f} ms",
            "pass": added <= TARGET_ADDED_P50_MS,
        }
    ]


def flatness(rows: Sequence[dict[str, Any]]) -> list[str]:
    """How the added time and the CPU per request grow from the smallest size to the largest."""
    if len(rows) < 2:
        return []
    first, last = rows[0], rows[-1]
    lines = []
    for name in [n for n in last["paths"] if n != "bare-relay"]:
        a, b = first["paths"][name], last["paths"][name]
        lines.append(
            f"{name}: from {human_size(first['history_bytes'])} to "
            f"{human_size(last['history_bytes'])} of history, added p50 "
            f"{a['added_p50_ms']:.2f} -> {b['added_p50_ms']:.2f} ms, CPU per request "
            f"{a['cpu_ms_per_request']:.2f} -> {b['cpu_ms_per_request']:.2f} ms "
            f"(the bare relay's {first['paths']['bare-relay']['cpu_ms_per_request']:.2f} -> "
            f"{last['paths']['bare-relay']['cpu_ms_per_request']:.2f} ms)"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("history_bench", run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
