"""Streaming cost of two revisions of shieldgate, side by side in one run.

What is measured
    One fake upstream (``bench/perf/fake_upstream.py``) streams a reply of ``--size`` characters
    in ``--chunk``-character ``chat.completion.chunk`` events. Four proxies relay it: the
    revision under test (this checkout) and the reference revision (``--before``, checked out
    by git into a temporary worktree), each with an empty policy and with its own
    ``policies/default.yaml``. Rounds are interleaved, the order reversed every other round, so
    that noise from other work on the machine falls on all four alike.

    Per proxy it prints the best and median wall time of a fetch and the proxy process's CPU
    seconds per MB of content (all threads, from the kernel's schedstat), and the ratio of
    this checkout to the reference. Every fetch is checked: HTTP 200 and every byte the
    upstream sent.

    The reference is started the way its own benchmarks started it: ``bench/proxy_main.py``
    before bench/ was split, ``bench/perf/proxy_main.py`` after.

Run it from the repository root: ``python -m bench.perf.revision_ab --before REV [--size
1000000] [--chunk 4] [--rounds 7]``. Issue 18's before/after: ``--before 7412afc``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import aiohttp

from bench.perf import harness
from bench.perf.history_bench import cpu_seconds
from bench.perf.stream_bench import request_body
from bench.revision import REPO_ROOT, code_revision


@contextmanager
def checked_out(revision: str) -> Iterator[Path]:
    """``revision`` in a temporary git worktree, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="shieldgate-ab-") as parent:
        tree = Path(parent) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "--quiet", str(tree), revision],
            cwd=REPO_ROOT,
            check=True,
        )
        try:
            yield tree
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, check=False
            )


def proxy_argv(tree: Path | None, upstream: str, policy: Path) -> list[str]:
    """How to start ``tree``'s proxy (None: this checkout's) on uvloop."""
    flags = ["--loop", "uvloop", "--upstream", upstream, "--policy", str(policy)]
    flags += ["--log-level", "warning"]
    if tree is None:
        return [sys.executable, "-m", "bench.perf.proxy_main", *flags]
    # A script puts its own checkout first on sys.path, so the reference runs its own code.
    script = tree / "bench" / "perf" / "proxy_main.py"
    if not script.exists():
        script = tree / "bench" / "proxy_main.py"
    return [sys.executable, str(script), *flags]


async def fetch(session: aiohttp.ClientSession, url: str, body: bytes, size: int) -> float:
    async with session.post(
        f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
    ) as response:
        got = 0
        async for data in response.content.iter_any():
            got += len(data)
        if response.status != 200 or got != size:
            raise harness.BenchError(f"{url}: HTTP {response.status}, {got} of {size} bytes")
    return time.perf_counter()


async def run(args: argparse.Namespace) -> int:
    with checked_out(args.before) as tree, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        empty = workdir / "empty.yaml"
        empty.write_text("name: empty\n")
        upstream = await harness.start_fake_upstream(workdir, "uvloop")
        children = [upstream]
        paths: dict[str, harness.Process] = {}
        try:
            for label, root in (("before", tree), ("after", None)):
                defaults = (root or REPO_ROOT) / "policies" / "default.yaml"
                for kind, policy in (("empty", empty), ("default", defaults)):
                    name = f"{label}/{kind}"
                    argv = proxy_argv(root, upstream.url, policy)
                    child = await harness.start_server(name, argv, workdir, "uvloop")
                    children.append(child)
                    paths[name] = child
            stream = harness.make_stream(
                f"stream-{args.size}-{args.chunk}-1", args.size, args.chunk, 1
            )
            body = request_body(stream)
            walls: dict[str, list[float]] = {name: [] for name in paths}
            cpus: dict[str, list[float]] = {name: [] for name in paths}
            async with aiohttp.ClientSession() as session:
                for round_ in range(args.rounds + 1):  # round 0 warms every proxy up
                    order = list(paths.items())
                    for name, child in order if round_ % 2 else reversed(order):
                        cpu = cpu_seconds(child.pid)
                        started = time.perf_counter()
                        ended = await fetch(session, child.url, body, len(stream.body))
                        if round_:
                            walls[name].append(ended - started)
                            cpus[name].append(cpu_seconds(child.pid) - cpu)
        finally:
            await harness.stop_processes(children)
    mb = args.size / 1e6
    print(
        f"\nbefore = {args.before}, after = {code_revision('proxy', 'shields', 'policies')}; "
        f"{harness.human_size(args.size)} in {args.chunk}-character events, "
        f"{args.rounds} rounds; 1-minute load average {os.getloadavg()[0]:.2f}\n"
    )
    print(f"{'path':<16}{'wall best s':>12}{'median s':>10}{'CPU s/MB best':>15}{'median':>9}")
    for name in paths:
        print(
            f"{name:<16}{min(walls[name]):>12.3f}{statistics.median(walls[name]):>10.3f}"
            f"{min(cpus[name]) / mb:>15.3f}{statistics.median(cpus[name]) / mb:>9.3f}"
        )
    print("\nafter / before (CPU s/MB, best and median):")
    for kind in ("empty", "default"):
        after, before = cpus[f"after/{kind}"], cpus[f"before/{kind}"]
        print(
            f"  {kind:<8}{min(after) / min(before):.3f}x best, "
            f"{statistics.median(after) / statistics.median(before):.3f}x median"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--before", required=True, help="the reference revision (any git rev)")
    parser.add_argument("--size", type=int, default=1_000_000, help="characters of content")
    parser.add_argument("--chunk", type=int, default=4, help="characters of content per event")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per proxy")
    return harness.run_main("revision_ab", run(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
