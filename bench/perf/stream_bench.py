"""Streaming cost of shieldgate: time per MB of streamed content, against a plain pass-through.

What is measured
    A fake OpenAI-compatible upstream (``bench/perf/fake_upstream.py``, in its own process) streams
    a
    reply of N characters of English prose (default 1 KB, 100 KB and 1 MB) as
    ``chat.completion.chunk`` events of ``--chunk`` characters each (default 4, about one
    token, as real servers do), followed by a ``finish_reason`` chunk and ``data: [DONE]``.
    The same pre-encoded stream is fetched along three paths, in the same run, interleaved
    repeat by repeat so that machine noise hits every path alike:

    ``direct``          client -> fake upstream. The floor: loopback, HTTP and the client itself.
    ``bare-relay``      client -> ``bench/perf/bare_relay.py`` -> fake upstream: an aiohttp server
    and
                        client that only copy each read through, nothing parsed or framed. The
                        floor of *any* proxy built on aiohttp here: what shieldgate pays before
                        it does any work of its own.
    ``empty-policy``    client -> shieldgate (policy with no shields) -> fake upstream. The cost
                        of being an aiohttp proxy that frames SSE events: the baseline a guardrail
                        is judged against.
    ``default-policy``  client -> shieldgate (``policies/default.yaml``) -> fake upstream. The
                        above plus the stream guard: JSON parsing of every event, the output
                        shields' incremental scanners, hold-back and in-order release.

    A run's time is from sending the request to reading the last byte of the reply. Every run is
    checked after the clock stops: HTTP 200, the right ``x-shieldgate-policy`` header, the body
    byte-for-byte equal to what the upstream sent, and the ``delta.content`` text reassembled
    from it equal to the prose (same length, same characters), so an error reply or a truncated
    stream can never pass for a fast one.

How to read the numbers
    ``best s`` is the fastest of ``--repeat`` runs (the least disturbed by other work on the
    machine, so the best estimate of the intrinsic cost); ``median s`` shows how noisy the runs
    were. ``s/MB`` and ``MB/s`` are per MB (10^6 bytes) of *content*. The wire carries ~57x
    more (``wire MB``): every 4 characters travel in a ~227-byte JSON event, so the real unit of
    work is the event, and ``s/MB`` divided by the events per MB is the cost per event.
    ``x empty`` is the guarded path's time relative to the pass-through proxy (what the shields
    add), ``x direct`` relative to no proxy at all (what the proxy hop adds).

    Linear cost means ``s/MB`` stays flat, or falls slightly because fixed per-request costs are
    spread thinner, from the smallest size to the largest; a growing ``s/MB`` would mean work
    that is redone over the text already seen (quadratic), and the script flags it. A size
    whose best run is shorter than 20 ms (1 KB everywhere, 100 KB direct) is mostly fixed
    per-request cost and timer noise, so the check compares the largest size with the smallest
    size long enough to judge, by wall clock and by the proxy's CPU time.

    ``TTFB`` is the median time to the first body byte. Through the guard it includes the
    hold-back (the first events leave only once enough characters behind them are scanned).

    ``--loop uvloop,asyncio`` runs both proxies once per event loop, all interleaved, with the
    paths named ``empty-policy/uvloop`` and so on; the first loop named is the one judged.

Target (issue): guarded streaming (default policy) at >= 20 MB/s of content on one core,
judged at the largest size by the proxy's CPU time and printed with PASS or MISS.

Run it from the repository root:  ``python -m bench.perf.stream_bench [--sizes 1000,100000,1000000]
[--repeat 3] [--chunk 4] [--loop auto] [--json results.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.perf.harness import (
    MB,
    BenchError,
    Process,
    Stream,
    content_of,
    human_size,
    make_stream,
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

# Per-MB cost at the largest size over the smallest: above this, cost grows faster than the
# size. Fixed per-request costs can only push the ratio below 1, so 1.3 leaves room for noise.
SUPERLINEAR_THRESHOLD = 1.3
# A run this short is mostly timer, scheduling and fixed per-request cost: its per-MB figure is
# too noisy to compare sizes with (the direct path at 100 KB takes a few milliseconds).
MIN_JUDGED_SECONDS = 0.02
TARGET_MB_PER_CPU_SECOND = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: str  # base URL including /v1
    policy: str | None  # expected x-shieldgate-policy header; None: not through the proxy
    pid: int | None = None  # the proxy process, whose CPU time is counted
    baseline: str = "empty-policy"  # the pass-through path that ``x empty`` compares with


@dataclass(slots=True)
class Sample:
    seconds: float
    ttfb: float
    wire_bytes: int
    cpu_s: float | None  # the proxy's CPU time during the run; None for direct


@dataclass(slots=True)
class Result:
    target: str
    size: int
    events: int
    wire_bytes: int
    samples: list[Sample] = field(default_factory=list)

    @property
    def best(self) -> float:
        return min(s.seconds for s in self.samples)

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def ttfb_median(self) -> float:
        return statistics.median(s.ttfb for s in self.samples)

    @property
    def per_mb(self) -> float:
        return self.best / (self.size / MB)

    @property
    def cpu_per_mb(self) -> float | None:
        cpus = [s.cpu_s for s in self.samples if s.cpu_s is not None]
        return statistics.median(cpus) / (self.size / MB) if cpus else None


def request_body(stream: Stream) -> bytes:
    return json.dumps(
        {
            "model": stream.key,
            "stream": True,
            "messages": [{"role": "user", "content": "Write a long story about a quiet village."}],
        }
    ).encode()


async def fetch(session: aiohttp.ClientSession, target: Target, stream: Stream) -> Sample:
    body = request_body(stream)
    parts: list[bytes] = []
    first: float | None = None
    cpu_before = cpu_seconds(target.pid) if target.pid else None
    # The loop only appends bytes: parsing and checks wait until the clock has stopped, so the
    # client (which shares a core with the fake upstream) costs as little as a client can.
    start = time.perf_counter()
    async with session.post(
        f"{target.url}/chat/completions",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": "Bearer bench"},
    ) as response:
        async for data in response.content.iter_any():
            if first is None:
                first = time.perf_counter()
            parts.append(data)
        end = time.perf_counter()
        status, headers = response.status, response.headers
    cpu = cpu_seconds(target.pid) - cpu_before if target.pid and cpu_before is not None else None
    received = b"".join(parts)
    check(target, stream, status, headers, received)
    assert first is not None  # check() refused an empty body
    return Sample(seconds=end - start, ttfb=first - start, wire_bytes=len(received), cpu_s=cpu)


def check(target: Target, stream: Stream, status: int, headers: Any, received: bytes) -> None:
    where = f"{target.name}, {stream.key}"
    if status != 200:
        raise BenchError(f"{where}: HTTP {status}: {received[:300]!r}")
    if headers.get("x-shieldgate-policy") != target.policy:
        raise BenchError(
            f"{where}: x-shieldgate-policy is {headers.get('x-shieldgate-policy')!r}, "
            f"expected {target.policy!r}"
        )
    if "x-shieldgate-blocked" in headers:
        raise BenchError(f"{where}: blocked: {headers['x-shieldgate-blocked']}")
    content = content_of(received)
    if len(content) != len(stream.text) or content != stream.text:
        raise BenchError(
            f"{where}: received {len(content)} characters of content, sent {len(stream.text)}; "
            f"tail of the reply: {received[-300:]!r}"
        )
    # Allowed events must pass unchanged (the proxy's transparency guarantee), so the body as a
    # whole is identical; a difference means the proxy rewrote or dropped something.
    if received != stream.body:
        raise BenchError(
            f"{where}: body differs from the upstream's ({len(received)} vs {len(stream.body)} "
            "bytes) although the content matches"
        )


async def measure(
    targets: Sequence[Target], streams: Sequence[Stream], repeat: int
) -> list[Result]:
    results = {
        (t.name, s.key): Result(t.name, len(s.text), s.events, len(s.body))
        for t in targets
        for s in streams
    }
    connector = aiohttp.TCPConnector(limit=4)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # Warm-up, not counted: opens the keep-alive connections (client -> proxy and the
        # proxy's own to the upstream) and lets every process touch its code paths once; and
        # every stream once directly, so that the fake upstream has built and cached it.
        for target in targets:
            await fetch(session, target, streams[0])
        for stream in streams[1:]:
            await fetch(session, targets[0], stream)
        for round_ in range(repeat):
            for stream in streams:
                # Rotating the order each repeat keeps "always runs right after X" from
                # favouring one path; all three see the same stretch of machine noise.
                shift = round_ % len(targets)
                for target in [*targets[shift:], *targets[:shift]]:
                    # A collection of the previous run's garbage must not land inside a run.
                    gc.collect()
                    sample = await fetch(session, target, stream)
                    results[target.name, stream.key].samples.append(sample)
                    print(
                        f"  repeat {round_ + 1}/{repeat}  {stream.key:>14}  {target.name:<15}"
                        f" {sample.seconds:8.3f} s",
                        flush=True,
                    )
    return list(results.values())


# -- report ------------------------------------------------------------------------------------


def summarize(results: Sequence[Result], targets: Sequence[Target]) -> list[dict[str, Any]]:
    by_key = {(r.target, r.size): r for r in results}
    baselines = {t.name: t.baseline for t in targets}
    rows: list[dict[str, Any]] = []
    for r in results:
        empty = by_key.get((baselines[r.target], r.size))
        direct = by_key.get(("direct", r.size))
        rows.append(
            {
                "path": r.target,
                "content_bytes": r.size,
                "wire_bytes": r.wire_bytes,
                "events": r.events,
                "seconds": [s.seconds for s in r.samples],
                "best_s": r.best,
                "median_s": r.median,
                "s_per_mb": r.per_mb,
                "mb_per_s": 1 / r.per_mb,
                "vs_empty_best": r.best / empty.best if empty else None,
                "vs_direct_best": r.best / direct.best if direct else None,
                "vs_empty_median": r.median / empty.median if empty else None,
                "vs_direct_median": r.median / direct.median if direct else None,
                "ttfb_s": [s.ttfb for s in r.samples],
                "ttfb_median_s": r.ttfb_median,
                "cpu_s_per_mb": r.cpu_per_mb,
                "mb_per_cpu_s": 1 / r.cpu_per_mb if r.cpu_per_mb else None,
            }
        )
    order = {t.name: i for i, t in enumerate(targets)}
    rows.sort(key=lambda row: (row["content_bytes"], order[row["path"]]))
    return rows


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    header = (
        f"{'path':<22} {'content':>8} {'events':>8} {'wire MB':>8} {'best s':>8} "
        f"{'median s':>9} {'s/MB':>8} {'MB/s':>7} {'x empty':>8} {'x direct':>9} "
        f"{'TTFB ms':>8} {'CPU s/MB':>9}"
    )
    print(header)
    print("-" * len(header))
    size = None
    for row in rows:
        if size is not None and row["content_bytes"] != size:
            print()
        size = row["content_bytes"]
        cpu = row["cpu_s_per_mb"]
        print(
            f"{row['path']:<22} {human_size(row['content_bytes']):>8} {row['events']:>8,} "
            f"{row['wire_bytes'] / MB:>8.1f} {row['best_s']:>8.3f} {row['median_s']:>9.3f} "
            f"{row['s_per_mb']:>8.3f} {row['mb_per_s']:>7.2f} {row['vs_empty_best']:>7.2f}x "
            f"{row['vs_direct_best']:>8.1f}x {row['ttfb_median_s'] * 1000:>8.2f} "
            + (f"{cpu:>9.3f}" if cpu is not None else f"{'':>9}"),
        )
    print(
        "\nbest s: fastest of the repeats; s/MB, MB/s, x empty, x direct: from best times; "
        "TTFB: median time to the first body byte; CPU s/MB: the proxy's CPU time per MB of "
        "content (median; 10 ms clock ticks, so meaningless for the smallest sizes).",
        flush=True,
    )


def scaling(
    rows: Sequence[dict[str, Any]], targets: Sequence[Target], key: str = "s_per_mb"
) -> dict[str, tuple[float, int, int] | None]:
    """Per path: per-MB cost (``key``) at the largest size over the smallest size whose run is
    long enough to judge (about 1 or less: linear), with those two sizes; None when fewer than
    two sizes are long enough."""
    out: dict[str, tuple[float, int, int] | None] = {}
    for target in targets:
        mine = sorted(
            (r for r in rows if r["path"] == target.name and r[key] is not None),
            key=lambda r: r["content_bytes"],
        )
        judged = [r for r in mine if r["best_s"] >= MIN_JUDGED_SECONDS]
        if len(judged) >= 2:
            small, large = judged[0], judged[-1]
            out[target.name] = (
                large[key] / small[key],
                small["content_bytes"],
                large["content_bytes"],
            )
        elif len(mine) >= 2:
            out[target.name] = None
    return out


def _scaling_json(found: tuple[float, int, int] | None) -> dict[str, float] | None:
    return None if found is None else {"ratio": found[0], "from": found[1], "to": found[2]}


def grows(found: tuple[float, int, int] | None) -> bool:
    return found is not None and found[0] > SUPERLINEAR_THRESHOLD


def load_note(label: str) -> tuple[float, str]:
    load = os.getloadavg()[0]
    return load, f"{label} 1-minute load average {load:.2f} on {os.cpu_count()} CPUs"


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default="1000,100000,1000000",
        help="content sizes in characters, comma-separated (default: 1000,100000,1000000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per path and size")
    parser.add_argument("--chunk", type=int, default=4, help="characters of content per event")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated prose")
    parser.add_argument(
        "--loop",
        default="auto",
        help="the proxies' event loop: auto (uvloop when installed, as shieldgate serve does), "
        "asyncio, uvloop, or a comma-separated list to compare them in one run",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes: not a comma-separated list of integers: {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 1:
        parser.error("--sizes: give at least one size >= 1")
    if args.repeat < 1 or args.chunk < 1:
        parser.error("--repeat and --chunk must be >= 1")
    loops = [x.strip() for x in args.loop.split(",") if x.strip()]
    if not loops or any(x not in ("auto", "asyncio", "uvloop") for x in loops):
        parser.error("--loop: auto, asyncio, uvloop or a comma-separated list of them")
    try:
        # `auto,asyncio` without uvloop installed is asyncio alone: measured once.
        args.loop = ",".join(dict.fromkeys(resolve_loop(x) for x in loops))
    except BenchError as exc:
        parser.error(str(exc))
    return args


@contextlib.asynccontextmanager
async def running(
    workdir: Path, empty_file: Path, default_file: Path, loops: Sequence[str]
) -> AsyncIterator[tuple[Process, list[Process]]]:
    children: list[Process] = []
    try:
        upstream = await start_fake_upstream(workdir)
        children.append(upstream)
        children.append(await start_bare_relay(upstream.url, workdir, loops[0]))
        for loop in loops:
            suffix = f"/{loop}" if len(loops) > 1 else ""
            for name, file in (("empty-policy", empty_file), ("default-policy", default_file)):
                children.append(
                    await start_proxy(name + suffix, upstream.url, file, workdir, loop=loop)
                )
        yield upstream, children[1:]
    finally:
        await stop_processes(children)


async def run(args: argparse.Namespace) -> int:
    # Process layout, for a 2-core machine: the proxy under test, the fake upstream and the
    # client (this process) each run in their own process. The fake and the client are cheap by
    # construction (the fake sends pre-encoded bytes in 64 KiB writes; the client only appends
    # what it reads and checks it after the clock stops), so the proxy effectively has a core to
    # itself and the figures are the proxy's cost, not a fight for CPU. `direct` is the floor of
    # this exact client and upstream, so `x direct` isolates what the proxy hop adds.
    # SIGTERM would end the process at once, skipping the `finally` that stops the children;
    # cancelling the run instead unwinds like Ctrl-C does (asyncio.run handles SIGINT so).
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    revision = await asyncio.to_thread(code_revision, *MEASURED_PATHS)
    load_before, note = load_note("before:")
    loops = args.loop.split(",")
    loop = args.loop
    print(
        f"shieldgate stream benchmark: sizes {', '.join(human_size(s) for s in args.sizes)}, "
        f"{args.chunk}-character events, {args.repeat} repeats, proxy loop {loop}; code "
        f"{revision}; Python {platform.python_version()}, {platform.machine()}; {note}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="shieldgate-bench-") as tmp:
        workdir = Path(tmp)
        (empty_file, _), (default_file, default) = policies(workdir)
        streams = [
            make_stream(
                f"stream-{size}-{args.chunk}-{args.seed + size}", size, args.chunk, args.seed + size
            )
            for size in args.sizes
        ]
        for stream in streams:
            # The prose must be allowed unchanged by the default policy, or the guarded path
            # would measure a refusal or a redaction instead of a relay.
            findings = check_text(default.shields(Stage.OUTPUT), stream.text)
            if findings:
                raise BenchError(f"the generated prose trips the default policy: {findings[:3]}")
        async with running(workdir, empty_file, default_file, loops) as (upstream, proxies):
            relay, proxies = proxies[0], proxies[1:]
            targets = [
                Target("direct", upstream.url, None, baseline=proxies[0].name),
                Target(relay.name, relay.url, None, relay.pid, proxies[0].name),
            ]
            for empty, guarded in zip(proxies[::2], proxies[1::2], strict=True):
                targets.append(Target(empty.name, empty.url, "empty", empty.pid, empty.name))
                targets.append(
                    Target(guarded.name, guarded.url, default.name, guarded.pid, empty.name)
                )
            print(
                f"fake upstream {upstream.url} (pid {upstream.pid}); proxies: "
                + ", ".join(f"{p.name} {p.url} (pid {p.pid})" for p in proxies),
                flush=True,
            )
            results = await measure(targets, streams, args.repeat)
    rows = summarize(results, targets)
    print()
    print_table(rows)
    ratios = scaling(rows, targets)
    cpu_ratios = scaling(rows, targets, key="cpu_s_per_mb")
    # Wall clock alone can be a noise spike: the proxy's CPU time (when measured) must agree.
    anomalies = [
        name
        for name, found in ratios.items()
        if grows(found) and (cpu_ratios.get(name) is None or grows(cpu_ratios[name]))
    ]
    if ratios:
        print(
            "\nper-MB cost, largest size vs the smallest long enough to judge "
            "(about 1 or less = linear):"
        )
        for name, found in ratios.items():
            if found is None:
                print(f"  {name}: runs too short to judge", flush=True)
                continue
            ratio, small, large = found
            cpu = cpu_ratios.get(name)
            print(
                f"  {name}: {human_size(large)} vs {human_size(small)}: wall {ratio:.2f}"
                + (f", proxy CPU {cpu[0]:.2f}" if cpu else ""),
                flush=True,
            )
    for name in anomalies:
        found = ratios[name]
        assert found is not None
        print(
            f"ANOMALY: {name} costs {found[0]:.2f}x more per MB at {human_size(found[2])} than "
            f"at {human_size(found[1])}: cost grows faster than the size (quadratic work?). "
            "Rerun on a quiet machine with more --repeat; if it stays, profile the proxy.",
            flush=True,
        )
    # Judged on the proxy's default event loop (the first of --loop when that is a list).
    guarded_path = next(t.name for t in targets if t.policy == default.name)
    judged = max((r for r in rows if r["path"] == guarded_path), key=lambda r: r["content_bytes"])
    floor = max((r for r in rows if r["path"] == "bare-relay"), key=lambda r: r["content_bytes"])
    if floor["mb_per_cpu_s"] is not None:
        print(
            f"\nfloor: an aiohttp relay doing nothing else moves {floor['mb_per_cpu_s']:.2f} MB of "
            f"content per CPU second at {human_size(floor['content_bytes'])} "
            f"({floor['wire_bytes'] / floor['content_bytes']:.0f} bytes on the wire per byte of "
            "content): no aiohttp proxy can stream faster here",
            flush=True,
        )
    verdict = None
    if judged["mb_per_cpu_s"] is not None:
        verdict = {
            "target": f"guarded streaming >= {TARGET_MB_PER_CPU_SECOND:g} MB/s of content on one "
            f"core ({human_size(judged['content_bytes'])}, {args.chunk}-character events)",
            "value": f"{judged['mb_per_cpu_s']:.2f} MB per CPU second "
            f"({judged['mb_per_s']:.2f} MB/s wall clock)",
            "pass": judged["mb_per_cpu_s"] >= TARGET_MB_PER_CPU_SECOND,
        }
        print(f"\n{'PASS' if verdict['pass'] else 'MISS'}  {verdict['target']}: {verdict['value']}")
    load_after, note = load_note("after:")
    print(note, flush=True)
    # The run itself keeps about one and a half cores busy; more than that means other work
    # shared the CPUs and the figures (ratios less so, being interleaved) are inflated.
    if load_before >= 1.0 or load_after > (os.cpu_count() or 1):
        print(
            "WARNING: other work was running on this machine (see the load averages): "
            "absolute times are inflated and noisy; prefer ratios, or rerun on a quiet machine.",
            flush=True,
        )
    if args.json:
        document = {
            "benchmark": "stream_bench",
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "code_revision": revision,
            "date": time.strftime("%Y-%m-%d"),
            "load_average_1min": {"before": load_before, "after": load_after},
            "chunk_chars": args.chunk,
            "repeat": args.repeat,
            "seed": args.seed,
            "loop": loop,
            "results": rows,
            "per_mb_scaling": {
                name: None
                if found is None
                else {"ratio": found[0], "from": found[1], "to": found[2]}
                for name, found in ratios.items()
            },
            "per_mb_cpu_scaling": {
                name: None
                if found is None
                else {"ratio": found[0], "from": found[1], "to": found[2]}
                for name, found in cpu_ratios.items()
            },
            "anomalies": anomalies,
            "targets": [verdict] if verdict else [],
        }
        write_results(args.json, document)
    return 1 if anomalies else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("stream_bench", run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
