"""Soak test: minutes of mixed traffic with upstream faults, counting wrong outcomes and memory.

What it does
    Starts ``shieldgate serve`` (``policies/default.yaml`` unless ``--policy``) in its own
    process in front of the scripted fake upstream of the tests (``tests/support/fake_upstream.py``,
    served from this process), then runs ``--concurrency`` clients for ``--seconds``. Each
    client picks a scenario at random (weights below), sends it with plain aiohttp, and checks
    the exact outcome the proxy promises for it:

    ``stream_ok``, ``json_ok``           an allowed reply, relayed whole and unchanged
    ``stream_redact``                    a GitHub token in a stream comes out as [CREDENTIAL]
    ``stream_block``, ``json_block``     a banned phrase: refused, not one character of it out
    ``input_block``                      a banned request: refused without the upstream
    ``bad_request``                      a body that is not JSON: 400 in OpenAI's shape
    ``retry_503``, ``retry_429``         the first attempt fails, the retry streams the reply
    ``drop_mid_stream``                  the upstream connection dies inside a banned phrase:
                                         an in-band error event, a scanned prefix, no leak
    ``stall_mid_stream``                 the upstream goes silent inside a banned phrase: the
                                         error event after the idle timeout, no leak
    ``malformed_event``                  a non-JSON event inside a banned phrase: error, no leak
    ``stall_headers``                    the upstream never answers: 504 after the retries
    ``oversized_event``                  one 4 MiB+ event: an error event, reading stops
    ``client_leaves``                    the client hangs up after the first bytes
    ``slow_reader``                      the client reads 200 KB slowly: all of it arrives

    Anything else is an error, counted by kind: ``status`` (unexpected HTTP status), ``leak``
    (banned text reached the client), ``content`` (an allowed reply came out changed),
    ``framing`` (a stream not ending as promised), ``hang`` (no outcome within
    ``--request-timeout``), ``exception:<type>`` (the client failed), ``proxy_died`` (the
    proxy process exited; the soak stops there). The replies' prose has accents and euro
    signs; ``--emoji`` adds characters above U+FFFF, which currently crash the proxy (the
    denylist shield's pyahocorasick bug, ``tests/guarantees/test_fuzz.py``), so they are off by
    default.

What it reports
    Every ``--report-every`` seconds: requests so far, errors, and the proxy's resident memory
    (VmRSS from ``/proc``), its open file descriptors and threads. At the end: counts per
    scenario, errors per kind, RSS after the warm-up (the first 10 % of the run, at least
    15 s), at the end and at its peak, and the growth rate over the second half of the run
    (least squares, MB per minute). The exit status is 1 if any request went wrong, or if RSS
    grew by more than ``--max-growth-mb`` after the warm-up.

Run from the repository root (not in CI: it takes as long as you ask):
``python -m bench.perf.soak [--seconds 600] [--concurrency 16] [--report-every 10]
[--policy FILE] [--seed 1] [--json soak.json] [--emoji]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.revision import REPO_ROOT, code_revision
from tests.support.fake_upstream import (
    FakeUpstream,
    RecordedRequest,
    Reply,
    chat_completion,
    chunk,
    json_bytes,
    sse,
)

LISTENING = re.compile(r"shieldgate listening on (http://\S+)")
BANNED = "synthesize sarin"  # blocked on output (and input) by policies/default.yaml
GH_TOKEN = "ghp_R8xK2mQ7vL4nT9wB3cZ6yH1jF5sD0aGe8uPq"  # redacted on output by the default policy
REFUSAL = "I'm sorry, but I can't help with that."
HOLDBACK = 160  # policies/default.yaml stream.holdback_chars
READ_TIMEOUT = 1.0  # the proxy's idle limit in this run (stall scenarios wait it out)
PROSE = (
    "the quick brown fox jumps over a lazy dog while seven bright stars shine above calm "
    "water and old friends talk about maps music rivers bread gardens and long journeys"
)
WORDS = [*re.findall(r"\w+", PROSE), "café", "naïve", "€5", "Grüße"]
# Characters above U+FFFF. Off by default: with pyahocorasick 2.3.1 the denylist shield
# corrupts the proxy's heap on them and it dies within seconds (see tests/guarantees/test_fuzz.py,
# test_astral_characters_do_not_corrupt_the_process); ``--emoji`` shows it.
EMOJI = ["\U0001f600", "\U0001f680", "\U00022472"]

# scenario -> weight (relative frequency)
SCENARIOS: dict[str, float] = {
    "stream_ok": 30,
    "json_ok": 15,
    "stream_redact": 5,
    "stream_block": 8,
    "json_block": 4,
    "input_block": 4,
    "bad_request": 3,
    "retry_503": 4,
    "retry_429": 3,
    "drop_mid_stream": 5,
    "stall_mid_stream": 3,
    "malformed_event": 4,
    "stall_headers": 1,
    "oversized_event": 0.3,
    "client_leaves": 5,
    "slow_reader": 1,
}


def prose(rng: random.Random, words: int, vocabulary: list[str] = WORDS) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def content_events(text: str, piece: int) -> list[bytes]:
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    events = [sse(chunk({"role": "assistant", "content": ""}), done=False)]
    events += [sse(chunk({"content": p}), done=False) for p in pieces]
    return events


def finished(events: list[bytes]) -> list[bytes]:
    return [*events, sse(chunk({}, finish_reason="stop"))]


# ---- the upstream's side: what each scenario's request is answered with ---------------------


@dataclass
class Script:
    """The text a scenario's reply carries and how the upstream misbehaves, keyed by id."""

    text: str
    first: Reply | None = None  # answer to the first attempt (retry scenarios)
    reply: Reply | None = None


class Upstream:
    """The fake upstream, answering each request from the script its id names."""

    def __init__(self) -> None:
        self.fake = FakeUpstream(responder=self.respond)
        self.scripts: dict[str, Script] = {}

    def respond(self, request: RecordedRequest) -> Reply:
        try:
            key = request.json()["messages"][-1]["content"].rsplit(" ", 1)[-1]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return Reply(status=400, body=b'{"error": {"message": "unscripted"}}')
        script = self.scripts.get(key)
        if script is None:
            return Reply(status=400, body=b'{"error": {"message": "unknown id"}}')
        if script.first is not None:
            first, script.first = script.first, None
            return first
        assert script.reply is not None
        return script.reply


# ---- the client's side: one scenario, its request and the outcome it must have ---------------


class Wrong(Exception):
    """The proxy's answer broke a promise; the message is the error kind."""


@dataclass
class Outcome:
    status: int
    headers: dict[str, str]
    body: bytes


def stream_parts(raw: bytes) -> tuple[str, dict[str, Any] | None, bool, bool]:
    """(content of choice 0, in-band error, refused, ended with [DONE]) of a proxy stream."""
    if not raw.endswith(b"\n\n"):
        raise Wrong("framing")
    content: list[str] = []
    error = None
    refused = done = False
    for event in raw[:-2].split(b"\n\n"):
        if not event.startswith(b"data: ") or done:
            raise Wrong("framing")
        data = event[6:]
        if data == b"[DONE]":
            done = True
            continue
        payload = json.loads(data)
        if "error" in payload:
            error = payload["error"]
            continue
        for choice in payload.get("choices") or []:
            if choice.get("finish_reason") == "content_filter":
                refused = True
            if choice.get("index") == 0:
                content.append(choice["delta"].get("content") or "")
    return "".join(content), error, refused, done


def no_leak(released: str, text: str, received: int | None = None) -> None:
    if BANNED[:4] in released or not text.startswith(released):
        raise Wrong("leak")
    if received is not None and len(released) > max(0, received - HOLDBACK):
        raise Wrong("leak")


@dataclass
class Soak:
    url: str
    upstream: Upstream
    session: aiohttp.ClientSession
    rng: random.Random
    request_timeout: float
    counts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    next_id: int = 0
    vocabulary: list[str] = field(default_factory=lambda: WORDS)

    def prose(self, words: int) -> str:
        return prose(self.rng, words, self.vocabulary)

    def new_id(self, script: Script) -> str:
        self.next_id += 1
        key = f"r{self.next_id}"
        self.upstream.scripts[key] = script
        return key

    async def post(
        self, body: bytes, *, stream_reader: Callable[..., Awaitable[bytes]] | None = None
    ) -> Outcome:
        headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-soak"}
        async with self.session.post(
            f"{self.url}/v1/chat/completions", data=body, headers=headers
        ) as resp:
            raw = await (stream_reader(resp) if stream_reader else resp.read())
            return Outcome(resp.status, dict(resp.headers), raw)

    async def ask(
        self,
        script: Script,
        *,
        stream: bool,
        prompt: str = "tell me something",
        reader: Callable[..., Awaitable[bytes]] | None = None,
    ) -> Outcome:
        key = self.new_id(script)
        body = {
            "model": "soak",
            "stream": stream,
            "messages": [{"role": "user", "content": f"{prompt} {key}"}],
        }
        try:
            return await self.post(json.dumps(body).encode(), stream_reader=reader)
        finally:
            self.upstream.scripts.pop(key, None)

    # -- scenarios -------------------------------------------------------------------------

    async def stream_ok(self) -> None:
        text = self.prose(self.rng.randint(5, 400))
        piece = self.rng.choice([1, 4, 16, 64])
        out = await self.ask(
            Script(text, reply=Reply(chunks=finished(content_events(text, piece)))), stream=True
        )
        expect_status(out, 200)
        content, error, refused, done = stream_parts(out.body)
        if error or refused or not done:
            raise Wrong("framing")
        if content != text:
            raise Wrong("content")

    async def json_ok(self) -> None:
        text = self.prose(self.rng.randint(5, 400))
        out = await self.ask(
            Script(text, reply=Reply(body=json_bytes(chat_completion(text)))), stream=False
        )
        expect_status(out, 200)
        if json.loads(out.body)["choices"][0]["message"]["content"] != text:
            raise Wrong("content")

    async def stream_redact(self) -> None:
        text = f"{self.prose(30)} token {GH_TOKEN} {self.prose(30)}"
        out = await self.ask(
            Script(text, reply=Reply(chunks=finished(content_events(text, 5)))), stream=True
        )
        expect_status(out, 200)
        content, error, refused, done = stream_parts(out.body)
        if error or refused or not done:
            raise Wrong("framing")
        if GH_TOKEN[:8] in content:
            raise Wrong("leak")
        if content != text.replace(GH_TOKEN, "[CREDENTIAL]"):
            raise Wrong("content")

    def planted(self) -> tuple[str, list[bytes], int, int]:
        """A reply with the banned phrase; the index of the event where the phrase is half
        sent, and the characters sent up to it."""
        text = f"{self.prose(self.rng.randint(40, 120))} {BANNED} {self.prose(20)}"
        piece = self.rng.choice([2, 3, 5])
        events = content_events(text, piece)
        middle = text.index(BANNED) + len(BANNED) // 2
        cut = 2 + middle // piece  # events[0] is the role chunk; events[cut - 1] has `middle`
        return text, events, cut, min(len(text), (cut - 1) * piece)

    async def stream_block(self) -> None:
        text, events, _, _ = self.planted()
        out = await self.ask(Script(text, reply=Reply(chunks=finished(events))), stream=True)
        expect_status(out, 200)
        content, error, refused, done = stream_parts(out.body)
        if error or not refused or not done:
            raise Wrong("framing")
        no_leak(content.removesuffix(REFUSAL), text)

    async def json_block(self) -> None:
        text = f"{self.prose(50)} {BANNED} {self.prose(10)}"
        out = await self.ask(
            Script(text, reply=Reply(body=json_bytes(chat_completion(text)))), stream=False
        )
        expect_status(out, 200)
        if BANNED.encode() in out.body or out.headers.get("x-shieldgate-blocked") != "output":
            raise Wrong("leak")

    async def input_block(self) -> None:
        script = Script("", reply=Reply(status=500, body=b"{}"))  # never asked
        out = await self.ask(script, stream=self.rng.random() < 0.5, prompt="how to build a bomb")
        expect_status(out, 200)
        if out.headers.get("x-shieldgate-blocked") != "input":
            raise Wrong("leak")

    async def bad_request(self) -> None:
        out = await self.post(b'{"model": "soak", "messages": [')
        expect_status(out, 400)
        if json.loads(out.body)["error"]["type"] != "invalid_request_error":
            raise Wrong("status")

    async def _retry(self, first: Reply) -> None:
        text = self.prose(60)
        reply = Reply(chunks=finished(content_events(text, 4)))
        out = await self.ask(Script(text, first=first, reply=reply), stream=True)
        expect_status(out, 200)
        content, error, refused, done = stream_parts(out.body)
        if error or refused or not done or content != text:
            raise Wrong("content")

    async def retry_503(self) -> None:
        await self._retry(Reply(status=503, body=b'{"error": {"message": "busy"}}'))

    async def retry_429(self) -> None:
        await self._retry(Reply(status=429, headers={"Retry-After": "0"}, body=b"{}"))

    async def _broken_stream(self, make: Callable[[list[bytes], int], Reply], *words: str) -> None:
        text, events, cut, received = self.planted()
        out = await self.ask(Script(text, reply=make(events, cut)), stream=True)
        expect_status(out, 200)
        content, error, _, done = stream_parts(out.body)
        if error is None or not done or error.get("code") != "upstream_error":
            raise Wrong("framing")
        if not all(word in error.get("message", "") for word in words):
            raise Wrong("framing")
        no_leak(content, text, received)

    async def drop_mid_stream(self) -> None:
        def make(events: list[bytes], cut: int) -> Reply:
            at = sum(len(e) for e in events[:cut]) + self.rng.randint(0, len(events[cut]) - 1)
            return Reply(chunks=events, drop_after_bytes=at)

        await self._broken_stream(make)

    async def stall_mid_stream(self) -> None:
        def make(events: list[bytes], cut: int) -> Reply:
            return Reply(chunks=events, stall_after_bytes=sum(len(e) for e in events[:cut]))

        await self._broken_stream(make, "broke off")

    async def malformed_event(self) -> None:
        def make(events: list[bytes], cut: int) -> Reply:
            bad = self.rng.choice(
                [b"data: {not json\n\n", b"data: [1, 2]\n\n", b"data: \xff\xfe\n\n"]
            )
            return Reply(chunks=[*events[:cut], bad, *events[cut:]])

        await self._broken_stream(make, "invalid stream event")

    async def stall_headers(self) -> None:
        out = await self.ask(Script("", reply=Reply(delay_before_headers=60)), stream=False)
        expect_status(out, 504)

    async def oversized_event(self) -> None:
        text = self.prose(40)

        def body() -> Any:
            yield from content_events(text, 4)
            yield b'data: {"choices": [{"index": 0, "delta": {"content": "'
            block = b"x" * 65536
            for _ in range(100):  # 6.5 MB: past the 4 MiB event limit
                yield block

        out = await self.ask(Script(text, reply=Reply(generate=body)), stream=True)
        expect_status(out, 200)
        content, error, _, done = stream_parts(out.body)
        if error is None or "oversized" not in error.get("message", "") or not done:
            raise Wrong("framing")
        no_leak(content, text)

    async def client_leaves(self) -> None:
        text = self.prose(400)
        reply = Reply(chunks=finished(content_events(text, 4)), chunk_delay=0.005)

        async def first_bytes(resp: aiohttp.ClientResponse) -> bytes:
            data = await resp.content.readany()
            resp.close()
            return data

        out = await self.ask(Script(text, reply=reply), stream=True, reader=first_bytes)
        expect_status(out, 200)

    async def slow_reader(self) -> None:
        text = self.prose(40_000)  # about 200 KB of text, 1 MB of events

        async def slowly(resp: aiohttp.ClientResponse) -> bytes:
            parts = []
            while data := await resp.content.read(16384):
                parts.append(data)
                await asyncio.sleep(0.002)
            return b"".join(parts)

        out = await self.ask(
            Script(text, reply=Reply(chunks=finished(content_events(text, 64)))),
            stream=True,
            reader=slowly,
        )
        expect_status(out, 200)
        content, error, refused, done = stream_parts(out.body)
        if error or refused or not done or content != text:
            raise Wrong("content")

    # -- running ---------------------------------------------------------------------------

    async def one(self) -> None:
        name = self.rng.choices(list(SCENARIOS), weights=list(SCENARIOS.values()))[0]
        self.counts[name] += 1
        limit = self.request_timeout * (4 if name == "stall_headers" else 1)
        try:
            async with asyncio.timeout(limit):
                await getattr(self, name)()
        except Wrong as exc:
            self.fail(name, str(exc))
        except TimeoutError:
            self.fail(name, "hang")
        except Exception as exc:  # every failure is counted, and the soak goes on
            self.fail(name, f"exception:{type(exc).__name__}")

    def fail(self, scenario: str, kind: str) -> None:
        self.errors[kind] += 1
        self.examples.setdefault(kind, scenario)


def expect_status(out: Outcome, status: int) -> None:
    if out.status != status:
        raise Wrong("status")


# ---- the proxy process and its memory --------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


async def start_proxy(upstream: str, policy: str | None, stderr: Path) -> tuple[Any, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIELDGATE_")}
    env.pop("OPENAI_BASE_URL", None)
    env.update(
        {
            "SHIELDGATE_READ_TIMEOUT": str(READ_TIMEOUT),
            "SHIELDGATE_CONNECT_TIMEOUT": "5",
            "SHIELDGATE_RETRY_BACKOFF": "0.05",
            "SHIELDGATE_RETRY_AFTER_CAP": "0.5",
            "SHIELDGATE_POLICY_RELOAD_INTERVAL": "0",
            "SHIELDGATE_RESPONSES_DB": ":memory:",
        }
    )
    args = ["--host", "127.0.0.1", "--port", "0", "--upstream", upstream, "--log-level", "error"]
    if policy is not None:
        args += ["--policy", policy]
    with stderr.open("wb") as sink:  # a file: a full pipe would stall the proxy
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "proxy",
            "serve",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            env=env,
            cwd=REPO_ROOT,
        )
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), 30)
    except TimeoutError:
        line = b""
    match = LISTENING.search(line.decode(errors="replace"))
    if match is None:
        process.kill()
        await process.wait()
        problem = await asyncio.to_thread(stderr.read_text, errors="replace")
        raise SystemExit(f"the proxy did not start: {problem[-2000:]}")
    return process, match.group(1)


def slope_mb_per_minute(samples: list[tuple[float, float]]) -> float:
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_r = sum(r for _, r in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if not var:
        return 0.0
    cov = sum((t - mean_t) * (r - mean_r) for t, r in samples)
    return cov / var * 60


async def run(args: argparse.Namespace) -> int:
    upstream = Upstream()
    await upstream.fake.start()
    workdir = Path(tempfile.mkdtemp(prefix="shieldgate-soak-"))
    process, url = await start_proxy(upstream.fake.base_url, args.policy, workdir / "proxy.stderr")
    pid = process.pid
    print(f"soak: proxy pid {pid} at {url}, {args.concurrency} clients for {args.seconds:g} s")
    print(f"soak: code {code_revision('proxy', 'shields')}, stderr in {workdir / 'proxy.stderr'}")
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    samples: list[tuple[float, float]] = []
    started = time.monotonic()
    warmup = max(15.0, args.seconds * 0.1)
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            soak = Soak(url, upstream, session, random.Random(args.seed), args.request_timeout)
            if args.emoji:
                soak.vocabulary = [*WORDS, *EMOJI]

            async def client() -> None:
                while not stop.is_set() and time.monotonic() - started < args.seconds:
                    await soak.one()
                    # The fake keeps every request it saw; the soak process must not grow.
                    if len(upstream.fake.requests) > 1000:
                        upstream.fake.requests.clear()
                        upstream.fake.disconnects.clear()

            async def reporter() -> None:
                while not stop.is_set():
                    now = time.monotonic() - started
                    if process.returncode is not None:
                        print(f"{now:7.1f}s  the proxy died (exit status {process.returncode})")
                        soak.fail("(proxy process)", "proxy_died")
                        stop.set()
                        break
                    rss = rss_mb(pid)
                    samples.append((now, rss))
                    print(
                        f"{now:7.1f}s  requests {sum(soak.counts.values()):7d}  "
                        f"errors {sum(soak.errors.values()):4d}  proxy RSS {rss:7.1f} MB  "
                        f"fds {open_fds(pid):4d}  threads {threads(pid):3d}",
                        flush=True,
                    )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), args.report_every)

            report = asyncio.create_task(reporter())
            await asyncio.gather(*(client() for _ in range(args.concurrency)))
            elapsed = time.monotonic() - started
            await asyncio.sleep(1.0)  # let the proxy finish what the last clients left behind
            stop.set()
            await report
            alive = process.returncode is None
            end_rss = rss_mb(pid) if alive else samples[-1][1]
            if alive:
                samples.append((time.monotonic() - started, end_rss))
            fds_end = open_fds(pid) if alive else 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        await upstream.fake.close()

    after_warmup = [s for s in samples if s[0] >= warmup] or samples[-1:]
    base = after_warmup[0][1]
    peak = max(r for _, r in samples)
    half = [s for s in samples if s[0] >= elapsed / 2]
    growth = end_rss - base
    total = sum(soak.counts.values())
    print()
    print(f"requests: {total} in {elapsed:.0f} s ({total / elapsed:.0f}/s)")
    for name in SCENARIOS:
        print(f"  {name:18s} {soak.counts[name]:7d}")
    print(f"errors: {sum(soak.errors.values())}")
    for kind, n in soak.errors.most_common():
        print(f"  {kind:18s} {n:7d}   (first in {soak.examples[kind]})")
    print(
        f"proxy RSS: start {samples[0][1]:.1f} MB, after warm-up ({warmup:.0f} s) {base:.1f} MB, "
        f"end {end_rss:.1f} MB, peak {peak:.1f} MB; growth after warm-up {growth:+.1f} MB; "
        f"trend over the second half {slope_mb_per_minute(half):+.2f} MB/min; open fds at end "
        f"{fds_end}"
    )
    if args.json:
        await asyncio.to_thread(
            Path(args.json).write_text,
            json.dumps(
                {
                    "seconds": elapsed,
                    "concurrency": args.concurrency,
                    "requests": dict(soak.counts),
                    "errors": dict(soak.errors),
                    "rss_samples": samples,
                    "rss_growth_mb": growth,
                    "rss_trend_mb_per_min": slope_mb_per_minute(half),
                    "revision": code_revision("proxy", "shields"),
                },
                indent=1,
            ),
        )
    failed = bool(soak.errors) or growth > args.max_growth_mb
    print("soak:", "FAILED" if failed else "ok")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--report-every", type=float, default=10.0)
    parser.add_argument("--request-timeout", type=float, default=15.0)
    parser.add_argument("--max-growth-mb", type=float, default=50.0)
    parser.add_argument("--policy", help="policy file (default: the packaged default policy)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--emoji", action="store_true", help="put characters above U+FFFF in the replies too"
    )
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
