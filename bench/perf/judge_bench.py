"""What a remote judge costs: added latency per request, and judge calls per streamed answer.

Starts, in this process, a fake upstream (instant replies) and a fake Llama-Guard judge that
answers ``safe`` after ``--judge-ms`` milliseconds; and, each in its own process
(``shieldgate serve``), shieldgate with no shields and with an ``llm_judge`` at the input stage
(cache off, so every request is judged). It then measures, with the real ``openai`` client:

1. latency per non-stream request through each proxy, sequentially and at ``--concurrency``
   (the judge's delay should be added once, not doubled, and requests must not queue behind
   each other's judge calls);
2. for a streamed answer of ``--stream-chars`` characters in 4-character deltas with an output
   judge at ``every_chars: 1000``, the number of judge calls and the total time, for both
   ``release: after_check`` and ``release: immediately``.

Run from the repository root: ``python -m bench.perf.judge_bench`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
from aiohttp import web

from shields.policy import parse_policy


class Fakes:
    def __init__(self, judge_delay: float, stream_chars: int, write_pause: float) -> None:
        self.judge_delay = judge_delay
        self.stream_chars = stream_chars
        self.write_pause = write_pause
        self.judge_calls = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/judge/v1/chat/completions", self._judge)
        app.router.add_post("/upstream/v1/chat/completions", self._upstream)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _judge(self, request: web.Request) -> web.Response:
        await request.read()
        self.judge_calls += 1
        await asyncio.sleep(self.judge_delay)
        return web.json_response(_completion("safe"))

    async def _upstream(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            return web.json_response(_completion("Paris is the capital of France."))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        text = ("All work and no play makes a dull answer. " * 1000)[: self.stream_chars]
        frames = []
        for i in range(0, len(text), 4):
            delta = {"content": text[i : i + 4]}
            frames.append(_frame(delta, None))
            if len(frames) == 16:
                await response.write(b"".join(frames))
                frames = []
                await asyncio.sleep(self.write_pause)  # a model generates at a pace
        frames.append(_frame({}, "stop"))
        frames.append(b"data: [DONE]\n\n")
        await response.write(b"".join(frames))
        await response.write_eof()
        return response


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
    }


def _frame(delta: dict[str, Any], finish: str | None) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _policy(fakes: Fakes, stage: str | None, release: str = "after_check") -> str:
    head = "version: 1\nname: bench\nstream: {holdback_chars: 64}\n"
    if stage is None:
        return head
    return head + (
        f"{stage}:\n"
        f"  - id: guard\n    type: llm_judge\n    base_url: {fakes.url}/judge/v1\n"
        f"    model: llama-guard-3\n    cache: {{size: 0}}\n"
        f"    stream: {{every_chars: 1000, release: {release}}}\n"
    )


async def _latencies(client: openai.AsyncOpenAI, requests: int, concurrency: int) -> list[float]:
    out: list[float] = []
    counter = iter(range(requests))

    async def worker() -> None:
        for i in counter:
            started = time.perf_counter()
            reply = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"question {i}"}]
            )
            assert reply.choices[0].message.content == "Paris is the capital of France."
            out.append(time.perf_counter() - started)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def _proxy(policy: str, upstream: str) -> AsyncIterator[str]:
    """``shieldgate serve`` in its own process; yields its base URL once it answers."""
    parse_policy(policy)  # a broken bench policy fails here, loudly
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(policy)
        port = _free_port()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "proxy", "serve", "--policy", str(path), "--upstream",
            upstream, "--port", str(port), "--log-level", "warning",
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            yield url
        finally:
            process.terminate()
            await process.wait()


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge-ms", type=float, default=50.0)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--stream-chars", type=int, default=4000)
    parser.add_argument(
        "--write-pause-ms", type=float, default=5.0, help="upstream pause per 64 characters"
    )
    args = parser.parse_args()

    fakes = Fakes(args.judge_ms / 1000, args.stream_chars, args.write_pause_ms / 1000)
    await fakes.start()
    upstream = f"{fakes.url}/upstream/v1"
    async with contextlib.AsyncExitStack() as stack:
        plain = await stack.enter_async_context(_proxy(_policy(fakes, None), upstream))
        judged = await stack.enter_async_context(_proxy(_policy(fakes, "input"), upstream))
        await _run(args, fakes, upstream, plain, judged)
    await fakes.close()


async def _run(
    args: argparse.Namespace, fakes: Fakes, upstream: str, plain: str, judged: str
) -> None:
    clients = {
        name: openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        for name, url in (("no shields", plain), ("llm_judge input", judged))
    }
    try:
        print(f"judge answers in {args.judge_ms:.0f} ms; {args.requests} requests per row")
        print(f"{'proxy':<18}{'concurrency':>12}{'p50 ms':>10}{'p99 ms':>10}{'judge calls':>13}")
        medians: dict[tuple[str, int], float] = {}
        for concurrency in (1, args.concurrency):
            for name, client in clients.items():
                await _latencies(client, 5, 1)  # warm up connections
                before = fakes.judge_calls
                values = await _latencies(client, args.requests, concurrency)
                medians[(name, concurrency)] = statistics.median(values) * 1000
                print(
                    f"{name:<18}{concurrency:>12}{_ms(values, 0.5):>10.1f}"
                    f"{_ms(values, 0.99):>10.1f}{fakes.judge_calls - before:>13}"
                )
        for concurrency in (1, args.concurrency):
            added = medians[("llm_judge input", concurrency)] - medians[("no shields", concurrency)]
            print(
                f"added p50 at concurrency {concurrency}: {added:.1f} ms "
                f"({added / args.judge_ms:.2f}x the judge's {args.judge_ms:.0f} ms)"
            )

        print(
            f"\nstreamed answer of {args.stream_chars} chars in 4-char deltas "
            f"({args.write_pause_ms:g} ms per 64 chars upstream), output judge every 1000 chars"
        )
        for release in ("after_check", "immediately"):
            async with _proxy(_policy(fakes, "output", release), upstream) as url:
                await _stream_once(args, fakes, url, release)
    finally:
        for client in clients.values():
            await client.close()


async def _stream_once(args: argparse.Namespace, fakes: Fakes, url: str, release: str) -> None:
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
    try:
        before = fakes.judge_calls
        started = time.perf_counter()
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "story"}], stream=True
        )
        first: float | None = None
        text = []
        async for event in stream:
            if event.choices and event.choices[0].delta.content:
                first = first or time.perf_counter()
                text.append(event.choices[0].delta.content)
        total = time.perf_counter() - started
        assert len("".join(text)) == args.stream_chars, "the answer must arrive whole"
        assert first is not None
        print(
            f"release {release:<12} judge calls {fakes.judge_calls - before}, "
            f"first text {1000 * (first - started):.0f} ms, total {1000 * total:.0f} ms"
        )
    finally:
        await client.close()


if __name__ == "__main__":
    asyncio.run(main())
