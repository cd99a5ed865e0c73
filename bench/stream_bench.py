"""Streaming cost of shieldgate: time per MB of streamed content, against a plain pass-through.

What is measured
    A fake OpenAI-compatible upstream streams a reply of N characters of English prose (default
    100 KB and 1 MB) as ``chat.completion.chunk`` events of ``--chunk`` characters each (default
    4, about one token, as real servers do), followed by a ``finish_reason`` chunk and
    ``data: [DONE]``. The same pre-encoded stream is fetched along three paths, in the same run,
    interleaved repeat by repeat so that machine noise hits every path alike:

    ``direct``          client -> fake upstream. The floor: loopback, HTTP and the client itself.
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
    that is redone over the text already seen (quadratic), and the script flags it.

    ``TTFB`` is the median time to the first body byte. Through the guard it includes the
    hold-back (the first events leave only once 64 characters behind them are scanned). For
    ``direct`` it includes however much the fake writes before its first yield to the event loop
    it shares with the client, so it is an upper bound there.

Run it from the repository root:  ``python bench/stream_bench.py [--sizes 100000,1000000]
[--repeat 3] [--chunk 4] [--json results.json]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from revision import REPO_ROOT, code_revision  # bench/ is on sys.path when run

from shields.base import Stage
from shields.policy import CompiledPolicy, parse_policy
from shields.scan import check_text

MB = 1_000_000  # sizes are given in characters of ASCII prose, so 1 character = 1 byte
# Large writes keep the fake upstream's per-write overhead (one syscall and one await each)
# negligible next to the proxy's per-event work, so the fake is never the bottleneck.
WRITE_SIZE = 64 * 1024
READY_TIMEOUT = 30.0
LISTENING = re.compile(r"shieldgate listening on (http://\S+)")
# Per-MB cost at the largest size over the smallest: above this, cost grows faster than the
# size. Fixed per-request costs can only push the ratio below 1, so 1.3 leaves room for noise.
SUPERLINEAR_THRESHOLD = 1.3
# A run this short is mostly timer, scheduling and fixed per-request cost: its per-MB figure is
# too noisy to compare sizes with (the direct path at 100 KB takes a few milliseconds).
MIN_JUDGED_SECONDS = 0.02

_WORD_LIST = """
the a an and but or so because while when after before although if then also still yet
river garden morning window letter market village teacher engine harbor library kitchen
mountain season lantern bridge orchard meadow journey question answer story history music
painting machine network server request reply table chapter recipe weather forest island
city street friend neighbor family child doctor farmer painter sailor student writer
quiet bright careful gentle patient curious simple ancient modern early late warm cold
green golden narrow wide heavy light steady sudden distant nearby useful honest clever
walks reads writes builds carries watches follows opens closes remembers explains repairs
measures gathers plants cooks sings listens travels returns waits rests begins finishes
slowly quickly often rarely together alone almost always never perhaps clearly gently
with without under over between across through around beyond toward inside outside
of in on at by for from into near along during about against within
"""
_WORDS = _WORD_LIST.split()
_ENDINGS = (". ", ". ", ". ", "? ", "! ", ".\n\n")


# -- the streamed reply ------------------------------------------------------------------------


def make_prose(size: int, seed: int) -> str:
    """``size`` characters of varied, harmless English, the same for the same seed.

    Plain words and punctuation only: no hyphen, underscore or long unbroken token that the
    default policy's credential patterns could match, and no banned phrase (checked at start).
    """
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        words = rng.choices(_WORDS, k=rng.randint(6, 18))
        if rng.random() < 0.3:
            words.insert(rng.randint(1, len(words) - 1), ",")
        sentence = " ".join(words).replace(" ,", ",")
        sentence = sentence[0].upper() + sentence[1:] + rng.choice(_ENDINGS)
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts)[:size]


def _event(delta: dict[str, str], finish_reason: str | None) -> bytes:
    # The shape of an OpenAI chunk, field for field, so the proxy parses what it will see live.
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "bench-model",
        "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"


@dataclass(frozen=True, slots=True)
class Stream:
    """One pre-encoded reply: the prose, its SSE body, and how many events carry it."""

    key: str
    text: str
    body: bytes
    events: int


def make_stream(size: int, chunk_chars: int, seed: int) -> Stream:
    text = make_prose(size, seed)
    events = [_event({"role": "assistant", "content": ""}, None)]
    events += [
        _event({"content": text[i : i + chunk_chars]}, None)
        for i in range(0, len(text), chunk_chars)
    ]
    events.append(_event({}, "stop"))
    events.append(b"data: [DONE]\n\n")
    return Stream(key=f"bench-{size}", text=text, body=b"".join(events), events=len(events))


def content_of(body: bytes) -> str:
    """The ``delta.content`` text carried by an SSE body (for checking, outside the clock)."""
    texts: list[str] = []
    for event in body.split(b"\n\n"):
        if not event.startswith(b"data: ") or event == b"data: [DONE]":
            continue
        for choice in json.loads(event[6:]).get("choices", []):
            texts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(texts)


# -- the fake upstream -------------------------------------------------------------------------


class FakeUpstream:
    """``POST /v1/chat/completions`` answers the pre-encoded stream named by the request's model."""

    def __init__(self, streams: dict[str, Stream]) -> None:
        self._streams = streams
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = next(a[1] for a in self._runner.addresses if isinstance(a, tuple))
        self.url = f"http://127.0.0.1:{port}/v1"
        return self.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        model = (await request.json()).get("model")
        stream = self._streams.get(model) if isinstance(model, str) else None
        if stream is None:
            return web.json_response({"error": {"message": f"no stream {model!r}"}}, status=404)
        # Chunked transfer encoding and text/event-stream, as a real streaming server answers.
        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        await response.prepare(request)
        view = memoryview(stream.body)
        with contextlib.suppress(ConnectionResetError):
            for start in range(0, len(view), WRITE_SIZE):
                await response.write(view[start : start + WRITE_SIZE])
            await response.write_eof()
        return response


# -- the proxies -------------------------------------------------------------------------------


@dataclass(slots=True)
class Proxy:
    name: str
    process: asyncio.subprocess.Process
    url: str
    stderr: Path


async def start_proxy(name: str, upstream: str, policy_file: Path, workdir: Path) -> Proxy:
    # Flags win over SHIELDGATE_* variables anyway; dropping them keeps a stray
    # $SHIELDGATE_UPSTREAM_API_KEY or the like from changing what is measured.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHIELDGATE_") and k != "OPENAI_BASE_URL"
    }
    stderr = workdir / f"{name}.stderr"
    with stderr.open("wb") as sink:  # a file, not a pipe: a full pipe would stall the proxy
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "proxy",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--upstream",
            upstream,
            "--policy",
            str(policy_file),
            # Nothing is logged per event either way; warning keeps stderr for real problems.
            "--log-level",
            "warning",
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            env=env,
            # `-m proxy` imports from the working directory first: measure this checkout.
            cwd=REPO_ROOT,
        )
    proxy = Proxy(name, process, "", stderr)
    assert process.stdout is not None
    try:
        try:
            line = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT)
        except TimeoutError:
            line = b""
        match = LISTENING.search(line.decode(errors="replace"))
        if match is None:
            problem = stderr.read_text(errors="replace").strip() or line.decode(errors="replace")
            raise BenchError(f"proxy {name!r} did not start: {problem or 'no output'}")
    except BaseException:
        # Not yet handed to the caller (a failed start, or an interrupt while waiting):
        # nobody else would stop it.
        await stop_proxies([proxy])
        raise
    proxy.url = match.group(1) + "/v1"
    return proxy


async def stop_proxies(proxies: Sequence[Proxy]) -> None:
    alive = [p.process for p in proxies if p.process.returncode is None]
    # Signal them all before awaiting anything: if a second interrupt cuts the waiting short,
    # every proxy has still been told to stop.
    for process in alive:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()  # SIGTERM: the CLI shuts its server down cleanly
    for process in alive:
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


# -- measuring ---------------------------------------------------------------------------------


class BenchError(Exception):
    """The benchmark cannot produce a trustworthy figure."""


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    url: str  # base URL including /v1
    policy: str | None  # expected x-shieldgate-policy header; None: not through the proxy


@dataclass(slots=True)
class Sample:
    seconds: float
    ttfb: float
    wire_bytes: int


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
    received = b"".join(parts)
    check(target, stream, status, headers, received)
    assert first is not None  # check() refused an empty body
    return Sample(seconds=end - start, ttfb=first - start, wire_bytes=len(received))


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
        # proxy's own to the upstream) and lets every process touch its code paths once.
        for target in targets:
            await fetch(session, target, streams[0])
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


def human_size(size: int) -> str:
    if size >= MB:
        return f"{size / MB:g} MB"
    if size >= 1000:
        return f"{size / 1000:g} KB"
    return f"{size} B"


def summarize(results: Sequence[Result], targets: Sequence[Target]) -> list[dict[str, Any]]:
    by_key = {(r.target, r.size): r for r in results}
    rows: list[dict[str, Any]] = []
    for r in results:
        empty = by_key.get(("empty-policy", r.size))
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
            }
        )
    order = {t.name: i for i, t in enumerate(targets)}
    rows.sort(key=lambda row: (row["content_bytes"], order[row["path"]]))
    return rows


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    header = (
        f"{'path':<15} {'content':>8} {'events':>8} {'wire MB':>8} {'best s':>8} "
        f"{'median s':>9} {'s/MB':>8} {'MB/s':>7} {'x empty':>8} {'x direct':>9} "
        f"{'TTFB ms':>8}"
    )
    print(header)
    print("-" * len(header))
    size = None
    for row in rows:
        if size is not None and row["content_bytes"] != size:
            print()
        size = row["content_bytes"]
        print(
            f"{row['path']:<15} {human_size(row['content_bytes']):>8} {row['events']:>8,} "
            f"{row['wire_bytes'] / MB:>8.1f} {row['best_s']:>8.3f} {row['median_s']:>9.3f} "
            f"{row['s_per_mb']:>8.3f} {row['mb_per_s']:>7.2f} {row['vs_empty_best']:>7.2f}x "
            f"{row['vs_direct_best']:>8.1f}x {row['ttfb_median_s'] * 1000:>8.2f}",
        )
    print(
        "\nbest s: fastest of the repeats; s/MB, MB/s, x empty, x direct: from best times; "
        "TTFB: median time to the first body byte.",
        flush=True,
    )


def scaling(
    rows: Sequence[dict[str, Any]], targets: Sequence[Target]
) -> dict[str, tuple[float, bool]]:
    """Per path: per-MB cost at the largest size over the smallest (about 1 or less: linear),
    and whether the smallest run was long enough for the ratio to mean anything."""
    out: dict[str, tuple[float, bool]] = {}
    for target in targets:
        mine = sorted(
            (r for r in rows if r["path"] == target.name), key=lambda r: r["content_bytes"]
        )
        if len(mine) >= 2:
            ratio = mine[-1]["s_per_mb"] / mine[0]["s_per_mb"]
            out[target.name] = (ratio, mine[0]["best_s"] >= MIN_JUDGED_SECONDS)
    return out


def load_note(label: str) -> tuple[float, str]:
    load = os.getloadavg()[0]
    return load, f"{label} 1-minute load average {load:.2f} on {os.cpu_count()} CPUs"


# -- main --------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default="100000,1000000",
        help="content sizes in characters, comma-separated (default: 100000,1000000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per path and size")
    parser.add_argument("--chunk", type=int, default=4, help="characters of content per event")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generated prose")
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
    return args


def policies(workdir: Path) -> tuple[tuple[Path, CompiledPolicy], tuple[Path, CompiledPolicy]]:
    """The empty and the default policy, as files for the proxies and compiled for checks here."""
    empty_file = workdir / "empty.yaml"
    empty_file.write_text("name: empty\n")
    empty = parse_policy(empty_file.read_bytes(), source=str(empty_file))
    if empty.input_shields or empty.output_shields:
        raise BenchError("the empty policy has shields")
    # A copy of the packaged file (what `default_policy()` loads): passing it explicitly makes
    # sure a $SHIELDGATE_POLICY in the environment cannot swap it for another.
    default_file = workdir / "default.yaml"
    default_file.write_bytes(resources.files("policies").joinpath("default.yaml").read_bytes())
    default = parse_policy(default_file.read_bytes(), source="policies/default.yaml")
    return (empty_file, empty), (default_file, default)


@contextlib.asynccontextmanager
async def running(
    streams: dict[str, Stream], workdir: Path, empty_file: Path, default_file: Path
) -> AsyncIterator[tuple[FakeUpstream, list[Proxy]]]:
    upstream = FakeUpstream(streams)
    proxies: list[Proxy] = []
    try:
        url = await upstream.start()
        for name, file in (("empty-policy", empty_file), ("default-policy", default_file)):
            proxies.append(await start_proxy(name, url, file, workdir))
        yield upstream, proxies
    finally:
        await stop_proxies(proxies)
        await upstream.close()


async def run(args: argparse.Namespace) -> int:
    # Process layout, for a 2-core machine: the proxy under test runs alone in its own process,
    # the fake upstream and the client share this one. Both of them are cheap by construction
    # (the fake sends pre-encoded bytes in 64 KiB writes; the client only appends what it reads
    # and checks it after the clock stops), so the proxy effectively has a core to itself and
    # the figures are the proxy's cost, not a fight for CPU. A third process for the fake would
    # add scheduling churn on 2 cores and buy nothing. It also makes `direct` the floor of this
    # exact client and upstream, so `x direct` isolates what the proxy hop adds.
    # SIGTERM would end the process at once, skipping the `finally` that stops the proxies;
    # cancelling the run instead unwinds like Ctrl-C does (asyncio.run handles SIGINT so).
    task = asyncio.current_task()
    assert task is not None
    with contextlib.suppress(NotImplementedError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    revision = await asyncio.to_thread(code_revision)
    load_before, note = load_note("before:")
    print(
        f"shieldgate stream benchmark: sizes {', '.join(human_size(s) for s in args.sizes)}, "
        f"{args.chunk}-character events, {args.repeat} repeats; code {revision}; Python "
        f"{platform.python_version()}, {platform.machine()}; {note}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="shieldgate-bench-") as tmp:
        workdir = Path(tmp)
        (empty_file, _), (default_file, default) = policies(workdir)
        streams = [make_stream(size, args.chunk, args.seed + size) for size in args.sizes]
        for stream in streams:
            # The prose must be allowed unchanged by the default policy, or the guarded path
            # would measure a refusal or a redaction instead of a relay.
            findings = check_text(default.shields(Stage.OUTPUT), stream.text)
            if findings:
                raise BenchError(f"the generated prose trips the default policy: {findings[:3]}")
        async with running({s.key: s for s in streams}, workdir, empty_file, default_file) as (
            upstream,
            proxies,
        ):
            targets = [
                Target("direct", upstream.url, None),
                Target("empty-policy", proxies[0].url, "empty"),
                Target("default-policy", proxies[1].url, default.name),
            ]
            print(
                f"fake upstream {upstream.url}; proxies: "
                + ", ".join(f"{p.name} {p.url} (pid {p.process.pid})" for p in proxies),
                flush=True,
            )
            results = await measure(targets, streams, args.repeat)
    rows = summarize(results, targets)
    print()
    print_table(rows)
    ratios = scaling(rows, targets)
    anomalies = [
        name for name, (ratio, judged) in ratios.items() if judged and ratio > SUPERLINEAR_THRESHOLD
    ]
    if ratios:
        sizes = f"{human_size(args.sizes[-1])} vs {human_size(args.sizes[0])}"
        print(
            f"\nper-MB cost, {sizes} (about 1 or less = linear): "
            + ", ".join(
                f"{name} {ratio:.2f}" + ("" if judged else " (too short to judge)")
                for name, (ratio, judged) in ratios.items()
            ),
            flush=True,
        )
    for name in anomalies:
        print(
            f"ANOMALY: {name} costs {ratios[name][0]:.2f}x more per MB at "
            f"{human_size(args.sizes[-1])} than at {human_size(args.sizes[0])}: cost grows "
            "faster than the size (quadratic work?). Rerun on a quiet machine with more "
            "--repeat; if it stays, profile the proxy.",
            flush=True,
        )
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
            "load_average_1min": {"before": load_before, "after": load_after},
            "chunk_chars": args.chunk,
            "repeat": args.repeat,
            "seed": args.seed,
            "results": rows,
            "per_mb_scaling": {name: ratio for name, (ratio, _) in ratios.items()},
            "anomalies": anomalies,
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"results written to {args.json}", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(run(args))
    except BenchError as exc:
        print(f"stream_bench: {exc}", file=sys.stderr, flush=True)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("stream_bench: interrupted; proxies stopped", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
