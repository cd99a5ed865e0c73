"""Writes ``docs/performance.md`` and its plot from the benchmarks' JSON results.

Reads ``overhead.json`` (``overhead_bench.py``), ``stream.json`` (``stream_bench.py``),
``memory.json`` (``memory_bench.py``) and, when present, ``peer.json`` (``peer_bench.py``),
``shields.json`` (``shield_bench.py``) and ``history.json`` (``history_bench.py``) from
``--results`` (default ``bench/results``, ignored by git). With ``--run`` it first runs the
benchmarks with their default settings, writing those files; a benchmark that fails stops
the report (exit status 1), so a report never shows figures from a run with errors.

The plot (``docs/performance.svg``) needs matplotlib (``pip install -e '.[bench]'``); without
it the report is written without the plot and the script says so.

Run from the repository root: ``python -m bench.perf.report [--run] [--results bench/results]
[--out docs/performance.md] [--plot docs/performance.svg]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.revision import REPO_ROOT

BENCHES = {
    "overhead": ["overhead_bench"],
    # Both event loops, side by side (uvloop first when installed: it is the one judged).
    "stream": ["stream_bench", "--loop", "auto,asyncio"],
    "memory": ["memory_bench"],
    "peer": ["peer_bench"],
    "shields": ["shield_bench"],
    "history": ["history_bench"],
}
MiB = 1024 * 1024


def run_benches(results: Path, names: Sequence[str]) -> None:
    results.mkdir(parents=True, exist_ok=True)
    for name in names:
        script, *options = BENCHES[name]
        argv = [sys.executable, "-m", f"bench.perf.{script}", *options]
        argv += ["--json", str(results / f"{name}.json")]
        # A skipped peer benchmark writes nothing: no figures from an older run may remain.
        (results / f"{name}.json").unlink(missing_ok=True)
        print(f"$ {' '.join(argv[1:])}", flush=True)
        done = subprocess.run(argv, cwd=REPO_ROOT, check=False)
        if done.returncode != 0:
            raise SystemExit(f"report: {BENCHES[name][0]} failed (status {done.returncode})")


def load(results: Path, name: str) -> dict[str, Any] | None:
    path = results / f"{name}.json"
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_text())
    if name == "overhead":
        # The tables and targets here are for the non-stream case; the streamed one (``--cases
        # json,stream``) is kept apart, with the relay-vs-shieldgate comparison.
        every = document["results"]
        document["results"] = [r for r in every if r.get("case", "json") == "json"]
        document["other_results"] = [r for r in every if r.get("case", "json") != "json"]
    return document


def size_label(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:g} MB"
    if size >= 1000:
        return f"{size / 1000:g} KB"
    return f"{size} B"


def mark(passed: bool) -> str:
    return "**PASS**" if passed else "**MISS**"


def provenance(doc: dict[str, Any]) -> str:
    load = doc.get("load_average_1min", {})
    return (
        f"code `{doc.get('code_revision', '?')}`, {doc.get('date', '?')}, Python "
        f"{doc.get('python', '?')}, {doc.get('cpus', '?')} CPUs, 1-minute load average "
        f"{load.get('before', 0):.2f} before and {load.get('after', 0):.2f} after"
    )


# -- sections ----------------------------------------------------------------------------------


def overhead_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## 1. Overhead on non-stream requests",
        "",
        f"`python -m bench.perf.overhead_bench` — {provenance(doc)}; load generator "
        f"`{doc['client']}`, {doc['duration_s']:g} s per run, {doc['repeat']} interleaved "
        f"rounds; request {doc['request_bytes']} bytes, reply {doc['reply_bytes']} bytes. "
        "One shieldgate process per path; `/asyncio` and `/uvloop` name its event loop.",
        "",
        "| concurrency | path | req/s | vs direct | p50 ms | p99 ms | added p50 ms "
        "| added p99 ms | server CPU µs/request |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        direct = r["path"] == "direct"
        added = ("", "") if direct else (f"{r['added_p50_ms']:.2f}", f"{r['added_p99_ms']:.2f}")
        lines.append(
            f"| {r['concurrency']} | {r['path']} | {r['rps_median']:,.0f} | "
            f"{r['vs_direct']:.1%} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {added[0]} | "
            f"{added[1]} | {r['cpu_us_per_request']:,.0f} |"
        )
    lines += [
        "",
        "req/s: median of the rounds; vs direct: median of the rounds' ratios; added: median "
        "of (path − direct) per round; server CPU: the CPU time of the process answering "
        "(the fake upstream for `direct`, the proxy otherwise) per request — the least "
        "noise-sensitive figure here.",
    ]
    if doc.get("uvloop_vs_asyncio"):
        lines += [
            "",
            "uvloop against asyncio's own loop, same run:",
            "",
            "| policy | concurrency | req/s ratio | CPU/request ratio |",
            "|---|---:|---:|---:|",
        ]
        for g in doc["uvloop_vs_asyncio"]:
            lines.append(
                f"| {g['policy']} | {g['concurrency']} | {g['rps_ratio']:.2f}x | "
                f"{g['cpu_ratio']:.2f}x |"
            )
    compared = doc.get("relay_vs_shieldgate") or []
    if compared:
        c = compared[0]
        lines += [
            "",
            f"The bare aiohttp relay against shieldgate with the default policy "
            f"({c['loop']}), same rounds (issue 21): requests/s at concurrency "
            f"{c['top_concurrency']}, p50 at concurrency {c['low_concurrency']}; medians of "
            "the rounds, their range in brackets; CPU µs per request of each process.",
            "",
            "| case | relay req/s | shieldgate req/s | ratio | relay p50 ms | shieldgate p50 ms "
            f"| added p50 ms | CPU µs relay / shieldgate, c={c['low_concurrency']} "
            f"| c={c['top_concurrency']} |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for c in compared:
            ratios, added = c["ratio_rounds"], c["added_p50_ms_rounds"]
            lines.append(
                f"| {c['case']} | {c['relay_rps']:,.0f} | {c['shieldgate_rps']:,.0f} | "
                f"{c['ratio']:.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
                f"{c['relay_p50_ms']:.3f} | {c['shieldgate_p50_ms']:.3f} | "
                f"{c['added_p50_ms']:.3f} ({min(added):.3f}–{max(added):.3f}) | "
                f"{c['relay_cpu_us_low']:,.0f} / {c['shieldgate_cpu_us_low']:,.0f} | "
                f"{c['relay_cpu_us_top']:,.0f} / {c['shieldgate_cpu_us_top']:,.0f} |"
            )
    return lines


def stream_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## 2. Streaming",
        "",
        f"`python -m bench.perf.stream_bench` — {provenance(doc)}; {doc['chunk_chars']}-character "
        f"events, best of {doc['repeat']}, proxy event loop {doc.get('loop', '?')}.",
        "",
        "| content | path | events | TTFB ms | total s | MB/s of content | s per MB "
        "| proxy CPU s per MB | vs empty policy |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        cpu = r.get("cpu_s_per_mb")
        small = r["best_s"] < 0.05  # a few 10 ms clock ticks: no CPU figure
        lines.append(
            f"| {size_label(r['content_bytes'])} | {r['path']} | {r['events']:,} | "
            f"{r['ttfb_median_s'] * 1000:.1f} | {r['best_s']:.3f} | {r['mb_per_s']:.2f} | "
            f"{r['s_per_mb']:.2f} | {'' if cpu is None or small else f'{cpu:.2f}'} | "
            f"{r['vs_empty_best']:.2f}x |"
        )
    lines += [
        "",
        "Linearity (per-MB cost at the largest size over the smallest long enough "
        "to judge; about 1 or less is linear):",
        "",
    ]
    cpu_scaling = doc.get("per_mb_cpu_scaling", {})
    for name, found in doc.get("per_mb_scaling", {}).items():
        if not isinstance(found, dict):
            lines.append(f"- {name}: runs too short to judge")
            continue
        cpu = cpu_scaling.get(name)
        lines.append(
            f"- {name}: {size_label(found['to'])} vs {size_label(found['from'])}: "
            f"{found['ratio']:.2f} by wall clock"
            + (f", {cpu['ratio']:.2f} by the proxy's CPU time" if isinstance(cpu, dict) else "")
        )
    return lines


def memory_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## 3. Many concurrent streams: memory",
        "",
        f"`python -m bench.perf.memory_bench` — {provenance(doc)}; {doc['streams']:,} streams of "
        f"{doc['events']} events, one every {doc['interval_ms']} ms, all started within "
        f"{doc['ramp_s']:g} s; proxy setting `upstream_pool_size: {doc['upstream_pool_size']}`.",
        "",
        "| policy | streams | errors | most open at once | RSS before | RSS all open "
        "| per stream | peak RSS | TTFB p50 / p99 s | total p50 / p99 s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        per = r["per_stream_bytes"]
        all_open = r["all_open_rss_bytes"]
        lines.append(
            f"| {r['policy']} | {r['streams']:,} | {r['errors']} | {r['max_concurrently_open']:,}"
            f" | {r['baseline_rss_bytes'] / MiB:.0f} MiB | "
            f"{'' if all_open is None else f'{all_open / MiB:.0f} MiB'} | "
            f"{'' if per is None else f'{per / 1024:.0f} KiB'} | "
            f"{r['peak_rss_bytes'] / MiB:.0f} MiB | "
            f"{r['ttfb_p50_s']:.2f} / {r['ttfb_p99_s']:.2f} | "
            f"{r['total_p50_s']:.1f} / {r['total_p99_s']:.1f} |"
        )
    lines += [
        "",
        "per stream = (RSS all open − RSS before) / streams. With a shield that holds back text "
        "(the default policy), a stream keeps the events it holds — their bytes as received, "
        "parsed again only to redact — until the characters after them are scanned, so its "
        "memory grows with "
        "the events in its hold-back window (the plot's rising line), then stays flat.",
    ]
    return lines


def peer_section(doc: dict[str, Any]) -> list[str]:
    lines = [
        "## 5. Peer comparison",
        "",
        f"`python -m bench.perf.peer_bench` — {provenance(doc)}; {doc.get('peer', '')}.",
        "",
        "| workload | path | figure | vs shieldgate |",
        "|---|---|---:|---:|",
    ]
    for r in doc["results"]:
        lines.append(f"| {r['workload']} | {r['path']} | {r['figure']} | {r['vs_shieldgate']} |")
    lines += [
        "",
        doc.get("note", ""),
        "",
        "LiteLLM's proxy is a gateway with much more per request (authentication with its master "
        "key, routing, callbacks, cost tracking, logging) and is usually run with several "
        "workers; both run here with one process on the same loaded two-core machine, so read "
        'the ratio as "per core, for this workload", not as a verdict on LiteLLM at large.',
    ]
    return lines


def reading_section(docs: dict[str, dict[str, Any] | None]) -> list[str]:
    """What the missed targets would take, computed from the same results."""
    lines = ["## Reading the targets", ""]
    overhead = docs.get("overhead")
    if overhead:
        rows = {(r["path"], r["concurrency"]): r for r in overhead["results"]}
        loop = overhead.get("default_loop", "asyncio")
        top = max(r["concurrency"] for r in overhead["results"])
        direct = rows.get(("direct", top))
        empty = rows.get((f"empty/{loop}", top))
        guarded = rows.get((f"default/{loop}", top))
        relay = rows.get(("bare-relay", top))
        if direct and empty and guarded:
            fake = direct["cpu_us_per_request"]
            lines.append(
                f"- **Throughput vs direct.** The fake upstream spends {fake:.0f} µs of CPU per "
                f"request; shieldgate spends {empty['cpu_us_per_request']:,.0f} µs with no "
                f"shields and {guarded['cpu_us_per_request']:,.0f} µs with the default policy "
                "(it runs an HTTP server *and* an HTTP client per request, in Python). With one "
                "core each, shieldgate reaches 50% of direct only if it costs at most twice what "
                f"the upstream does, {2 * fake:.0f} µs: against an upstream this fast the ratio "
                "measures Python against a bare socket answer. "
                + (
                    "An aiohttp server and client that only relay "
                    f"(`bench/perf/bare_relay.py`, same run) spend "
                    f"{relay['cpu_us_per_request']:,.0f} µs and reach "
                    f"{relay['vs_direct']:.1%} of direct; shieldgate with the default policy "
                    f"reaches {guarded['rps_median'] / relay['rps_median']:.0%} of the bare "
                    "relay's requests per second. "
                    if relay
                    else ""
                )
                + "Against a real model server, "
                "which spends tens of milliseconds to seconds per request, the same proxy cost "
                "is a few percent or less. Throughput beyond one core comes from `shieldgate "
                "serve --workers N`."
            )
        one = min(r["concurrency"] for r in overhead["results"])
        at_one = rows.get((f"default/{loop}", one))
        if at_one:
            lines.append(
                f"- **Added latency.** At concurrency {one} the default policy adds "
                f"{at_one['added_p50_ms']:.2f} ms at the median, which is its CPU time per "
                f"request ({at_one['cpu_us_per_request'] / 1000:.2f} ms): nothing waits, the "
                "added time is the proxy's work per request, so only less work lowers it."
            )
    stream = docs.get("stream")
    if stream:
        chunk = stream["chunk_chars"]
        events_per_mb = 1_000_000 / chunk
        big = max(r["content_bytes"] for r in stream["results"])
        by_path = {r["path"]: r for r in stream["results"] if r["content_bytes"] == big}
        empty = next((r for p, r in by_path.items() if p.startswith("empty")), None)
        guarded = next((r for p, r in by_path.items() if p.startswith("default")), None)
        relay = by_path.get("bare-relay")
        if empty and guarded and empty.get("cpu_s_per_mb") and guarded.get("cpu_s_per_mb"):
            budget_us = 1e6 / (20 * events_per_mb)
            line = (
                f"- **20 MB/s of guarded content.** In {chunk}-character events, 20 MB/s is "
                f"{20 * events_per_mb:,.0f} events per second, {budget_us:.2f} µs per event, "
                f"and {guarded['wire_bytes'] / big * 20:,.0f} MB/s on the wire. "
            )
            if relay and relay.get("cpu_s_per_mb"):
                line += (
                    "An aiohttp server and client that do nothing but copy each read through "
                    f"(`bench/perf/bare_relay.py`) spend {relay['cpu_s_per_mb']:.2f} CPU s per MB "
                    f"of content here ({1 / relay['cpu_s_per_mb']:.1f} MB per CPU second): "
                    "at this event size the target is beyond any proxy built on aiohttp on "
                    "this machine. "
                )
            line += (
                f"shieldgate spends {empty['cpu_s_per_mb']:.2f} CPU s per MB with no shields "
                f"and {guarded['cpu_s_per_mb']:.2f} with the default policy "
                f"({1 / guarded['cpu_s_per_mb']:.1f} MB per CPU second"
                + (
                    f", {guarded['cpu_s_per_mb'] / relay['cpu_s_per_mb']:.1f}x the bare relay"
                    if relay and relay.get("cpu_s_per_mb")
                    else ""
                )
                + "): runs of look-alike events are framed, checked and decoded per network "
                "read, not per event (`proxy/stream/runs.py`). A realistic server streams tens to "
                "a few hundred events per second per request, so one core carries thousands of "
                "concurrent streams."
            )
            lines.append(line)
    if len(lines) == 2:
        return []
    return lines


def loop_section(stream: dict[str, Any]) -> list[str]:
    """uvloop against asyncio on the streaming path, when the stream results have both."""
    rows = {(r["path"], r["content_bytes"]): r for r in stream["results"]}
    pairs = [
        (path.split("/")[0], size, row, rows.get((path.replace("/uvloop", "/asyncio"), size)))
        for (path, size), row in rows.items()
        if path.endswith("/uvloop")
    ]
    pairs = [p for p in pairs if p[3] and p[2].get("cpu_s_per_mb") and p[3].get("cpu_s_per_mb")]
    pairs = [p for p in pairs if p[2]["best_s"] >= 0.05]
    if not pairs:
        return []
    lines = [
        "",
        "uvloop against asyncio's own loop on the streaming path, same run (proxy CPU per MB; "
        "on this shared machine the ratio moves by ±15% from run to run, so a difference that "
        "small is noise):",
        "",
        "| policy | content | uvloop / asyncio |",
        "|---|---:|---:|",
    ]
    for policy, size, uv, aio in sorted(pairs, key=lambda p: (p[1], p[0])):
        assert aio is not None  # pairs without an asyncio row were dropped above
        lines.append(
            f"| {policy} | {size_label(size)} | {uv['cpu_s_per_mb'] / aio['cpu_s_per_mb']:.2f}x |"
        )
    return lines


def targets_section(docs: dict[str, dict[str, Any] | None]) -> list[str]:
    lines = ["## Targets", "", "| target | measured | |", "|---|---|---|"]
    for name in ("overhead", "stream", "history"):
        doc = docs.get(name)
        for v in (doc or {}).get("targets", []):
            lines.append(f"| {v['target']} | {v['value']} | {mark(v['pass'])} |")
    memory = docs.get("memory")
    if memory:
        errors = sum(r["errors"] for r in memory["results"])
        lines.append(
            f"| {memory['streams']:,} concurrent slow streams without errors | {errors} errors "
            f"| {mark(errors == 0)} |"
        )
    shields = docs.get("shields")
    for row in (shields or {}).get("results", []):
        if row["target"] is not None:
            lines.append(
                f"| {row['name']} shields >= {row['target']:g} MB/s of whole text | "
                f"{row['whole']['mb_s']:.1f} MB/s ({row['whole']['cpu_mb_s']:.1f} by CPU time) "
                f"| {mark(row['throughput_ok'])} |"
            )
    rows = (shields or {}).get("results", [])
    feeds = [_feed_label(m) for m in rows[0]["streamed"]] if rows else []
    for index, feed in enumerate(feeds):
        ratios = [row["stream_ratio"][index] for row in rows]
        passed = [row["name"] for row in rows if row["stream_ok"][index]]
        lines.append(
            f"| every shield row streamed `{feed}` within 2x of whole text, same findings "
            f"| {len(passed)} of {len(rows)} rows (x{min(ratios):.1f}–x{max(ratios):.1f}) "
            f"| {mark(len(passed) == len(rows))} |"
        )
    return lines


def history_section(doc: dict[str, Any]) -> list[str]:
    """Long conversations: each size's p50 and added latency, CPU per request, per path."""
    names = list(doc["results"][0]["paths"]) if doc["results"] else []
    header = "| history | messages |"
    rule = "|---:|---:|"
    for name in names:
        header += f" {name} p50 ms |" + ("" if name == "bare-relay" else f" {name} added ms |")
        header += f" {name} CPU ms |"
        rule += "---:|" * (2 if name == "bare-relay" else 3)
    lines = [
        "## Long conversations: the input cache",
        "",
        f"`python -m bench.perf.history_bench` — {provenance(doc)}; concurrency 1, "
        f"{doc['requests']} requests per path, size and round, {doc['repeat']} interleaved "
        f"rounds, proxy event loop {doc['loop']}. One conversation (prose turns and tool "
        "calls with their results) cut at growing sizes; every request sends that history "
        "and one new short user message. `added`: shieldgate's p50 minus the bare relay's, "
        "same rounds; `uncached`: shieldgate with `input_cache_bytes: 0`; CPU: the proxy "
        "process's CPU time per request, all its threads.",
        "",
        header,
        rule,
    ]
    for row in doc["results"]:
        size = row["history_bytes"]
        shown = f"{size / 1000:.0f} KB" if size < 1_000_000 else f"{size / 1_000_000:.2f} MB"
        line = f"| {shown} | {row['messages']} |"
        for name in names:
            path = row["paths"][name]
            line += f" {path['p50_ms']:.2f} |"
            if path["added_p50_ms"] is not None:
                line += f" {path['added_p50_ms']:+.2f} |"
            line += f" {path['cpu_ms_per_request']:.2f} |"
        lines.append(line)
    lines += ["", *HISTORY_NOTES]
    return lines


# What the history table measures, for the report (the figures above it are the run's).
HISTORY_NOTES = [
    "What makes the difference is the input cache (`shields/openai/input_cache.py`): the "
    "input stage remembers, per process, what its local shields found in each text of a "
    "request, and scans only the texts it has not seen; a remembered text's findings are "
    "enforced as a fresh scan's (same blocks, same redactions written into the forwarded "
    "body, same findings logged, counted and audited; `tests/shields/test_input_cache.py` compares "
    "cached and fresh checks of random conversations growing turn by turn). A text is "
    "remembered under everything the local shields read of it: the compiled policy (each "
    "compiled policy and endpoint view is a build of its own, so a reload starts afresh) and "
    "its `on_error`, the role (which shields apply, the injection shield's profile), whether "
    "it is JSON (tool-call arguments), each field's exact text and which fields are also "
    "scanned joined (content parts), and the audit fingerprint. Not remembered: the "
    "request-wide checks (`length`'s `max_messages` and `max_chars_per_request`, which read "
    "the whole conversation), a text whose scan failed, and remote and classifier shields "
    "(they keep their own verdict cache). The Responses API's stored history "
    "(`previous_response_id`) goes through the same input stage, so it is not scanned again "
    "under the same policy either (its stored answers are scanned once, at the next turn).",
    "",
    "Setting: `input_cache_bytes` (`SHIELDGATE_INPUT_CACHE_BYTES`), default 64 MiB per "
    "process, least recently used texts forgotten first; `0` turns the cache off. Metrics: "
    "`shieldgate_input_cache_hits_total` (texts answered from the cache), "
    "`shieldgate_input_cache_misses_total` (texts scanned), "
    "`shieldgate_input_cache_evictions_total`, `shieldgate_input_cache_bytes` (its approximate "
    "size: the texts it holds plus a fixed cost per entry and finding).",
    "",
    "What is left grows with the history but is not scanning: reading the body (orjson, the "
    "duplicate-key check, the walk over every message that builds the texts the shields "
    "read), and one cache lookup per text (hashing its characters). A large body stays on "
    "the event loop when it is quick to read (up to 2 MiB and 1,000 JSON objects) and its new "
    "text short (64K characters), instead of two thread hops, which cost milliseconds on a "
    "busy machine (`proxy/serving/off_loop.py`); many tiny objects or much new text still go to a "
    "worker thread.",
]


def _feed_label(mode: dict[str, Any]) -> str:
    return "whole" if mode["feed"] is None else str(mode["feed"]["key"])


def shields_section(doc: dict[str, Any]) -> list[str]:
    """The shield benchmark: whole-text throughput, streamed feeds, the per-call floor."""
    results = doc["results"]
    feeds = [_feed_label(m) for m in results[0]["streamed"]] if results else []
    lines = [
        "## 4. Shields",
        "",
        f"`python -m bench.perf.shield_bench` — {provenance(doc)}; {doc['size_mb']:.2f} MB of "
        f"shuffled benign prompts with planted PII, secrets, injections and invisible "
        f"characters, best of {doc['repeat']}. MB/s by the wall clock (by CPU time in "
        "parentheses); `x whole` = how many times slower than one whole-text feed; `same` = "
        "the streamed findings equal the whole-text ones.",
        "",
        "| shields | whole MB/s | target | "
        + " | ".join(f"{feed} MB/s | x whole" for feed in feeds)
        + " |",
        "|---|---:|---|" + "---:|---:|" * len(feeds),
    ]
    for row in results:
        target = (
            "—" if row["target"] is None else f">= {row['target']:g} {mark(row['throughput_ok'])}"
        )
        cells = [
            row["name"],
            f"{row['whole']['mb_s']:.1f} ({row['whole']['cpu_mb_s']:.1f})",
            target,
        ]
        for mode, ratio in zip(row["streamed"], row["stream_ratio"], strict=True):
            partial = "" if mode["complete"] else "~"
            same = {True: "same", False: "DIFF", None: "—"}[mode["same"]]
            cells += [
                f"{partial}{mode['mb_s']:.1f} ({mode['cpu_mb_s']:.1f})",
                f"{ratio:.1f} ({same})",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    floor = doc.get("feed_loop_floor_cpu_seconds")
    if floor:
        floor_ms = floor / doc["size_mb"] * 1000
        lines += [
            "",
            f"A loop that cuts the text into 4-character pieces and calls a feed that does "
            f"nothing costs {floor_ms:.0f} ms of CPU per MB: one Python call per piece. A "
            "streamed run costs at least that plus the scanning, so within 2x of the whole "
            f"text is out of reach that way for any shield faster than {1000 / floor_ms:.0f} "
            "MB/s; the 4-char column measures one scan per tiny delta (an upstream that sends "
            "one delta per network read, at a model's pace). A fast upstream packs many deltas "
            "into each read and the stream guard scans each read once: the `4-char/1KB-read` "
            "column.",
        ]
    redos = doc.get("redos", [])
    if redos:
        lines += ["", "ReDoS, the policy pattern `(a+)+$`:", ""]
        lines += ["| engine | input | ms | |", "|---|---|---:|---|"]
        for r in redos:
            lines.append(
                f"| {r['engine']} | {r['case']} | {r['ms']:.2f} | "
                f"{'match' if r['matched'] else 'no match'} |"
            )
    return lines


# -- plot --------------------------------------------------------------------------------------


def plot(docs: dict[str, dict[str, Any] | None], out: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("report: matplotlib is not installed (pip install -e '.[bench]'): no plot")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text as text, and ids that do not change from run to run: a small, stable diff.
    plt.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "shieldgate", "font.size": 8, "axes.titlesize": 9}
    )
    panels = [name for name in ("overhead", "stream", "memory") if docs.get(name)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2), squeeze=False)
    for ax, name in zip(axes[0], panels, strict=True):
        doc = docs[name]
        assert doc is not None
        if name == "overhead":
            paths = list(dict.fromkeys(r["path"] for r in doc["results"]))
            concs = sorted({r["concurrency"] for r in doc["results"]})
            width = 0.8 / len(paths)
            for i, path in enumerate(paths):
                values = [
                    next(
                        r["rps_median"]
                        for r in doc["results"]
                        if r["path"] == path and r["concurrency"] == c
                    )
                    for c in concs
                ]
                ax.bar([j + i * width for j in range(len(concs))], values, width, label=path)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(concs))], [str(c) for c in concs])
            ax.set_yscale("log")
            ax.set_xlabel("concurrent connections")
            ax.set_ylabel("requests/s (log)")
            ax.set_title("Non-stream throughput")
        elif name == "stream":
            for path in dict.fromkeys(r["path"] for r in doc["results"]):
                rows = sorted(
                    (r for r in doc["results"] if r["path"] == path),
                    key=lambda r: r["content_bytes"],
                )
                ax.plot(
                    [r["content_bytes"] for r in rows],
                    [r["s_per_mb"] for r in rows],
                    marker="o",
                    label=path,
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("streamed content, bytes (log)")
            ax.set_ylabel("seconds per MB of content (log)")
            ax.set_title(f"Streaming, {doc['chunk_chars']}-character events (flat = linear)")
        else:
            for i, r in enumerate(doc["results"]):
                samples = r["rss_samples"][::3]  # every 0.3 s: enough for the shape
                times = [round(s[0], 1) for s in samples]
                ax.plot(
                    times,
                    [round(s[1] / MiB, 1) for s in samples],
                    color=f"C{i}",
                    label=f"{r['policy']} policy: RSS",
                )
                ax.plot(
                    times,
                    [(s[2] - s[3]) / 10 for s in samples],
                    color=f"C{i}",
                    linestyle=":",
                    label=f"{r['policy']}: open streams / 10",
                )
            ax.set_xlabel("seconds")
            ax.set_ylabel("MiB")
            ax.set_title(f"{doc['streams']:,} concurrent slow streams")
        ax.legend(fontsize=6)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)
    return True


# Everything after this line in the report is written by hand (before/after comparisons of
# code changes, which no single run of a benchmark produces) and kept when the report is
# written again.
KEPT_MARKER = "<!-- written by hand below: bench/perf/report.py keeps it -->"


def kept_sections(out: Path) -> str:
    """The hand-written tail of an existing report, from ``KEPT_MARKER`` on ('' if none)."""
    if not out.exists():
        return ""
    text = out.read_text()
    at = text.find(KEPT_MARKER)
    return text[at:].rstrip("\n") if at >= 0 else ""


# -- main --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--run", action="store_true", help="run the benchmarks first")
    parser.add_argument("--results", type=Path, default=REPO_ROOT / "bench" / "results")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "docs" / "performance.md")
    parser.add_argument("--plot", type=Path, default=REPO_ROOT / "docs" / "performance.svg")
    args = parser.parse_args(argv)
    if args.run:
        run_benches(args.results, ["overhead", "stream", "memory", "peer", "shields", "history"])
    docs = {name: load(args.results, name) for name in BENCHES}
    missing = [n for n in ("overhead", "stream", "memory") if docs[n] is None]
    if missing:
        print(
            f"report: no results for {', '.join(missing)} in {args.results} (run with --run)",
            file=sys.stderr,
        )
        return 1
    plotted = plot(docs, args.plot)
    lines = [
        "# Performance",
        "",
        "Written by `python -m bench.perf.report` from the JSON results of the benchmarks in "
        "`bench/` (see `bench/README.md`); `python -m bench.perf.report --run` runs them all "
        "again first. Everything runs on loopback against `bench/perf/fake_upstream.py`, a fake "
        "upstream in its own process that answers in microseconds, so the figures are the "
        "proxy's cost, not a model's. The machine is shared with other work, so each "
        "benchmark measures the compared paths interleaved in the same run: read the ratios "
        "and the CPU time per request, which the noise moves least.",
        "",
    ]
    if plotted:
        lines += [f"![shieldgate performance]({args.plot.name})", ""]
    lines += targets_section(docs)
    overhead, stream, memory, peer, shields = (
        docs[n] for n in ("overhead", "stream", "memory", "peer", "shields")
    )
    assert overhead is not None and stream is not None and memory is not None
    reading = reading_section(docs)
    if reading:
        lines += ["", *reading]
    lines += ["", *overhead_section(overhead)]
    lines += ["", *stream_section(stream), *loop_section(stream)]
    lines += ["", *memory_section(memory)]
    if shields:
        lines += ["", *shields_section(shields)]
    if peer:
        lines += ["", *peer_section(peer)]
    history = docs.get("history")
    if history:
        lines += ["", *history_section(history)]
    kept = kept_sections(args.out)
    if kept:
        lines += ["", kept]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}" + (f" and {args.plot}" if plotted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
