"""Many concurrent slow streams through shieldgate: the proxy's memory per stream, and no errors.

What is measured
    ``bench/perf/fake_upstream.py`` (its own process) answers ``slow-EVENTS-MS``: EVENTS
    4-character ``chat.completion.chunk`` events, one every MS milliseconds — a model generating
    slowly, as real ones do. For each policy (``--policies``, default ``empty`` then
    ``default``) a fresh shieldgate process (``bench/perf/proxy_main.py``) is started, warmed up
    with a
    few short streams, and its resident memory (VmRSS) read as the baseline. Then ``--streams``
    clients (default 1,000) each open one stream, started evenly over ``--ramp`` seconds, and
    read it to the end. While they run, the proxy's VmRSS is sampled every 100 ms.

    ``RSS all open`` is the highest VmRSS seen while every stream was open (each had its first
    byte, none had finished); ``per stream`` is that minus the baseline, divided by the number
    of streams: what one more concurrent stream costs. ``peak`` is the kernel's high-water
    mark (VmHWM) over the whole run, ``after`` the VmRSS once every stream has finished (Python
    keeps freed memory for reuse, so it need not fall back to the baseline). ``TTFB`` and
    ``total`` are percentiles over the streams: with one event every MS milliseconds a stream
    cannot end sooner than EVENTS x MS, and a proxy that keeps up stays close to that.

    Every stream is checked after it ended: HTTP 200, the policy header, no block, the body
    byte-identical to what the upstream sent and its content equal to the prose. Any failed or
    wrong stream makes the script exit with status 1.

    The proxy runs with ``upstream_pool_size: 0`` (no limit on connections to the upstream;
    ``--pool-size`` changes it): every stream holds one upstream connection for its whole
    length, so with the default pool of 100 the 101st concurrent stream waits for a free
    connection, and after ``connect_timeout`` fails — ``--pool-size 100`` shows it.

Run from the repository root: ``python -m bench.perf.memory_bench [--streams 1000] [--events 40]
[--interval-ms 500] [--ramp 5] [--pool-size 0] [--policies empty,default] [--json FILE]``.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.perf.harness import (
    BenchError,
    Process,
    content_of,
    load_average,
    policies,
    rss_bytes,
    run_main,
    slow_events,
    start_fake_upstream,
    start_proxy,
    stop_processes,
    write_results,
)
from bench.revision import MEASURED_PATHS, code_revision
from shields.base import Stage
from shields.scan import check_text

MiB = 1024 * 1024
SAMPLE_EVERY = 0.1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(slots=True)
class Outcome:
    ttfb: float | None = None
    total: float | None = None
    error: str | None = None


@dataclass(slots=True)
class Tally:
    opened: int = 0
    finished: int = 0
    samples: list[tuple[float, int, int, int]] = field(default_factory=list)  # t, rss, open, done


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def one_stream(
    session: aiohttp.ClientSession,
    url: str,
    model: str,
    expected: tuple[str, bytes],
    policy: str,
    delay: float,
    tally: Tally,
) -> Outcome:
    await asyncio.sleep(delay)
    outcome = Outcome()
    body = json.dumps(
        {"model": model, "stream": True, "messages": [{"role": "user", "content": "Tell a story."}]}
    ).encode()
    parts: list[bytes] = []
    start = time.perf_counter()
    opened = False
    try:
        async with session.post(
            f"{url}/chat/completions",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": "Bearer bench"},
        ) as response:
            async for data in response.content.iter_any():
                if not opened:
                    opened = True
                    outcome.ttfb = time.perf_counter() - start
                    tally.opened += 1
                parts.append(data)
            outcome.total = time.perf_counter() - start
            status, headers = response.status, response.headers
    except (aiohttp.ClientError, TimeoutError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome
    finally:
        tally.finished += 1
    received = b"".join(parts)
    text, wire = expected
    if status != 200:
        outcome.error = f"HTTP {status}: {received[:200]!r}"
    elif headers.get("x-shieldgate-policy") != policy:
        outcome.error = f"x-shieldgate-policy {headers.get('x-shieldgate-policy')!r}"
    elif "x-shieldgate-blocked" in headers:
        outcome.error = f"blocked: {headers['x-shieldgate-blocked']}"
    elif received != wire or content_of(received) != text:
        outcome.error = f"body differs ({len(received)} vs {len(wire)} bytes)"
    return outcome


async def monitor(pid: int, tally: Tally, stop: asyncio.Event) -> None:
    start = time.perf_counter()
    while not stop.is_set():
        rss, _ = rss_bytes(pid)
        tally.samples.append((time.perf_counter() - start, rss, tally.opened, tally.finished))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_EVERY)


async def measure_policy(proxy: Process, policy: str, args: argparse.Namespace) -> dict[str, Any]:
    model = f"slow-{args.events}-{args.interval_ms}"
    found = slow_events(model)
    assert found is not None
    text, events, _ = found
    expected = (text, b"".join(events))
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # Warm-up: code paths, the upstream connection, the first allocations.
        warm_model = "slow-8-5"
        warm = slow_events(warm_model)
        assert warm is not None
        warm_expected = (warm[0], b"".join(warm[1]))
        outcomes = await asyncio.gather(
            *(
                one_stream(session, proxy.url, warm_model, warm_expected, policy, 0, Tally())
                for _ in range(10)
            )
        )
        bad = [o.error for o in outcomes if o.error]
        if bad:
            raise BenchError(f"{proxy.name}: warm-up stream failed: {bad[0]}")
        gc.collect()
        await asyncio.sleep(1.0)
        baseline, _ = rss_bytes(proxy.pid)
        cpu_before = cpu_seconds(proxy.pid)
        tally = Tally()
        stop = asyncio.Event()
        watcher = asyncio.create_task(monitor(proxy.pid, tally, stop))
        started = time.perf_counter()
        try:
            outcomes = await asyncio.gather(
                *(
                    one_stream(
                        session,
                        proxy.url,
                        model,
                        expected,
                        policy,
                        i * args.ramp / args.streams,
                        tally,
                    )
                    for i in range(args.streams)
                )
            )
        finally:
            stop.set()
            await watcher
        wall = time.perf_counter() - started
        cpu = cpu_seconds(proxy.pid) - cpu_before
        await asyncio.sleep(1.0)
        after, peak = rss_bytes(proxy.pid)
    errors = [o.error for o in outcomes if o.error]
    all_open = [
        rss for _, rss, opened, done in tally.samples if opened == args.streams and not done
    ]
    ttfbs = [o.ttfb for o in outcomes if not o.error and o.ttfb is not None]
    totals = [o.total for o in outcomes if not o.error and o.total is not None]
    max_open = max((opened - done for _, _, opened, done in tally.samples), default=0)
    result: dict[str, Any] = {
        "policy": policy,
        "streams": args.streams,
        "errors": len(errors),
        "first_errors": sorted(set(errors))[:5],
        "max_concurrently_open": max_open,
        "baseline_rss_bytes": baseline,
        "all_open_rss_bytes": max(all_open) if all_open else None,
        "peak_rss_bytes": peak,
        "after_rss_bytes": after,
        "per_stream_bytes": (max(all_open) - baseline) / args.streams if all_open else None,
        "ttfb_p50_s": statistics.median(ttfbs) if ttfbs else None,
        "ttfb_p99_s": percentile(ttfbs, 99) if ttfbs else None,
        "total_p50_s": statistics.median(totals) if totals else None,
        "total_p99_s": percentile(totals, 99) if totals else None,
        "wall_s": wall,
        "proxy_cpu_s": cpu,
        "events_relayed": len(totals) * len(events),
        "rss_samples": [(round(t, 2), rss, o, d) for t, rss, o, d in tally.samples],
    }
    return result


def print_results(results: Sequence[dict[str, Any]], args: argparse.Namespace) -> None:
    header = (
        f"{'policy':<8} {'streams':>7} {'errors':>6} {'max open':>8} {'baseline':>9} "
        f"{'all open':>9} {'per stream':>10} {'peak':>8} {'after':>8} {'TTFB p50/p99 s':>15} "
        f"{'total p50/p99 s':>16} {'CPU s':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in results:

        def mib(value: int | None) -> str:
            return f"{value / MiB:.1f}M" if value is not None else "-"

        per = r["per_stream_bytes"]
        ttfb = (
            f"{r['ttfb_p50_s']:.3f}/{r['ttfb_p99_s']:.3f}" if r["ttfb_p50_s"] is not None else "-"
        )
        total = (
            f"{r['total_p50_s']:.2f}/{r['total_p99_s']:.2f}"
            if r["total_p50_s"] is not None
            else "-"
        )
        print(
            f"{r['policy']:<8} {r['streams']:>7} {r['errors']:>6} {r['max_concurrently_open']:>8} "
            f"{mib(r['baseline_rss_bytes']):>9} {mib(r['all_open_rss_bytes']):>9} "
            f"{(f'{per / 1024:.1f} KiB' if per is not None else '-'):>10} "
            f"{mib(r['peak_rss_bytes']):>8} {mib(r['after_rss_bytes']):>8} {ttfb:>15} "
            f"{total:>16} {r['proxy_cpu_s']:>6.1f}"
        )
    floor = args.events * args.interval_ms / 1000
    print(
        f"\nEach stream: {args.events} events, one every {args.interval_ms} ms (at least "
        f"{floor:g} s). RSS: resident memory of the proxy; per stream = (all open - baseline) / "
        "streams; CPU s: the proxy's CPU time for the whole run.",
        flush=True,
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=1000, help="concurrent streams")
    parser.add_argument("--events", type=int, default=40, help="content events per stream")
    parser.add_argument("--interval-ms", type=int, default=500, help="milliseconds between events")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds to start all streams")
    parser.add_argument(
        "--pool-size",
        type=int,
        default=0,
        help="the proxy's upstream_pool_size (0: no limit; shieldgate's default is 100)",
    )
    parser.add_argument("--policies", default="empty,default", help="empty and/or default")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    args = parser.parse_args(argv)
    if args.streams < 1 or args.events < 1 or args.interval_ms < 1 or args.ramp < 0:
        parser.error("--streams, --events and --interval-ms must be >= 1, --ramp >= 0")
    if args.pool_size < 0:
        parser.error("--pool-size must be >= 0")
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    if not args.policies or any(p not in ("empty", "default") for p in args.policies):
        parser.error("--policies: empty and/or default")
    # Streams are all open only after the ramp; they must last well beyond it to be measured.
    if args.events * args.interval_ms / 1000 < args.ramp + 2:
        parser.error("streams must last at least --ramp + 2 seconds (raise --events)")
    return args


async def run(args: argparse.Namespace) -> int:
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    revision = await asyncio.to_thread(code_revision, *MEASURED_PATHS)
    load_before = load_average()
    print(
        f"shieldgate memory benchmark: {args.streams} concurrent streams of {args.events} events "
        f"every {args.interval_ms} ms, started over {args.ramp:g} s, upstream_pool_size "
        f"{args.pool_size}; code {revision}; Python {platform.python_version()}; load average "
        f"{load_before:.2f}",
        flush=True,
    )
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shieldgate-bench-") as tmp:
        workdir = Path(tmp)
        (empty_file, _), (default_file, default) = policies(workdir)
        found = slow_events(f"slow-{args.events}-{args.interval_ms}")
        assert found is not None
        if check_text(default.shields(Stage.OUTPUT), found[0]):
            raise BenchError("the streamed prose trips the default policy")
        children: list[Process] = []
        try:
            upstream = await start_fake_upstream(workdir)
            children.append(upstream)
            for policy in args.policies:
                file, name = (
                    (empty_file, "empty") if policy == "empty" else (default_file, default.name)
                )
                proxy = await start_proxy(
                    f"{policy}-policy",
                    upstream.url,
                    file,
                    workdir,
                    loop=args.loop,
                    settings={"upstream_pool_size": args.pool_size},
                )
                children.append(proxy)
                print(f"  {policy}: proxy pid {proxy.pid}, loop {proxy.loop} ...", flush=True)
                result = await measure_policy(proxy, name, args)
                result["loop"] = proxy.loop
                results.append(result)
                await stop_processes([proxy])
        finally:
            await stop_processes(children)
    print()
    print_results(results, args)
    errors = sum(r["errors"] for r in results)
    for r in results:
        for message in r["first_errors"]:
            print(f"ERROR ({r['policy']}): {message}", file=sys.stderr)
    load_after = load_average()
    print(f"load average: before {load_before:.2f}, after {load_after:.2f}", flush=True)
    if args.json:
        document = {
            "benchmark": "memory_bench",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "code_revision": revision,
            "date": time.strftime("%Y-%m-%d"),
            "load_average_1min": {"before": load_before, "after": load_after},
            "streams": args.streams,
            "events": args.events,
            "interval_ms": args.interval_ms,
            "ramp_s": args.ramp,
            "upstream_pool_size": args.pool_size,
            "results": results,
        }
        write_results(args.json, document)
    if errors:
        print(f"memory_bench: {errors} streams failed", file=sys.stderr, flush=True)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_main("memory_bench", run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
