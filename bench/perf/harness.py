"""What the proxy benchmarks share: the generated replies, the processes and the checks.

Replies
    ``make_prose`` (harmless English, the same for the same seed), ``make_stream`` (it as
    OpenAI ``chat.completion.chunk`` events of a few characters each), ``COMPLETION`` (one
    non-stream ``chat.completion``). ``fake_upstream.py`` serves them in its own process and
    the benchmarks check what comes back against the same bytes.

Processes
    ``start_fake_upstream`` and ``start_proxy`` start ``bench/perf/fake_upstream.py`` and
    ``bench/perf/proxy_main.py`` (``shieldgate serve`` with a chosen event loop) as child processes,
    wait for their one ``... listening on URL`` line and return handles that ``stop_processes``
    ends with SIGTERM. ``rss_bytes`` reads a process's resident memory from ``/proc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import random
import re
import sys
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bench.revision import REPO_ROOT
from shields.policy import CompiledPolicy, parse_policy

__all__ = [
    "COMPLETION",
    "COMPLETION_REQUEST",
    "COMPLETION_SEED",
    "COMPLETION_TEXT",
    "MB",
    "REPO_ROOT",
    "BenchError",
    "Process",
    "Stream",
    "content_of",
    "human_size",
    "load_average",
    "make_events",
    "make_prose",
    "make_stream",
    "policies",
    "resolve_loop",
    "rss_bytes",
    "run_main",
    "slow_events",
    "sse_event",
    "start_fake_upstream",
    "start_proxy",
    "start_server",
    "stop_processes",
    "write_results",
]

MB = 1_000_000  # sizes are in characters of ASCII prose, so 1 character = 1 byte
READY_TIMEOUT = 30.0
LISTENING = re.compile(rb"listening on (http://\S+)")


class BenchError(Exception):
    """The benchmark cannot produce a trustworthy figure."""


# -- replies -----------------------------------------------------------------------------------

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


def make_prose(size: int, seed: int) -> str:
    """``size`` characters of varied, harmless English, the same for the same seed.

    Plain words and punctuation only: no hyphen, underscore or long unbroken token that the
    default policy's credential patterns could match, and no banned phrase (the benchmarks
    check that the default policy allows it before they time anything).
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


def sse_event(delta: dict[str, str], finish_reason: str | None) -> bytes:
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
    """One pre-encoded reply: the prose, its SSE body, how many events carry it, and the model
    name that asks the fake upstream for it."""

    key: str
    text: str
    body: bytes
    events: int


def make_events(size: int, chunk_chars: int, seed: int) -> tuple[str, list[bytes]]:
    """The prose and the events carrying it ``chunk_chars`` at a time, ``[DONE]`` included."""
    text = make_prose(size, seed)
    events = [sse_event({"role": "assistant", "content": ""}, None)]
    events += [
        sse_event({"content": text[i : i + chunk_chars]}, None)
        for i in range(0, len(text), chunk_chars)
    ]
    events.append(sse_event({}, "stop"))
    events.append(b"data: [DONE]\n\n")
    return text, events


def make_stream(key: str, size: int, chunk_chars: int, seed: int) -> Stream:
    text, events = make_events(size, chunk_chars, seed)
    return Stream(key=key, text=text, body=b"".join(events), events=len(events))


_SLOW = re.compile(r"slow-(\d+)-(\d+)")
SLOW_CHUNK = 4
SLOW_SEED = 7


def slow_events(model: str) -> tuple[str, list[bytes], float] | None:
    """``slow-EVENTS-MS``: the prose, and EVENTS 4-character content events (plus the role,
    finish and ``[DONE]`` events) to send one every MS milliseconds."""
    match = _SLOW.fullmatch(model)
    if match is None:
        return None
    events, interval_ms = int(match.group(1)), int(match.group(2))
    text, encoded = make_events(events * SLOW_CHUNK, SLOW_CHUNK, SLOW_SEED)
    return text, encoded, interval_ms / 1000


def content_of(body: bytes) -> str:
    """The ``delta.content`` text carried by an SSE body (for checking, outside the clock)."""
    texts: list[str] = []
    for event in body.split(b"\n\n"):
        if not event.startswith(b"data: ") or event == b"data: [DONE]":
            continue
        for choice in json.loads(event[6:]).get("choices", []):
            texts.append((choice.get("delta") or {}).get("content") or "")
    return "".join(texts)


COMPLETION_SEED = 3
COMPLETION_TEXT = make_prose(600, seed=COMPLETION_SEED)
# What `fake_upstream.py` answers to `"model": "bench-json"`: a typical short chat reply.
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "bench-json",
        "system_fingerprint": "fp_bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": COMPLETION_TEXT, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 42, "completion_tokens": 150, "total_tokens": 192},
    },
    separators=(",", ":"),
).encode()
COMPLETION_REQUEST = json.dumps(
    {
        "model": "bench-json",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
            {
                "role": "user",
                "content": "Write a short paragraph about a quiet village by a river, "
                "with its market, its library and its old bridge.",
            },
        ],
        "temperature": 0.7,
        "max_tokens": 200,
    },
    separators=(",", ":"),
).encode()


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


# -- processes ---------------------------------------------------------------------------------


def resolve_loop(kind: str) -> str:
    """``auto`` -> ``uvloop`` when it is installed, else ``asyncio`` (the proxy's own rule)."""
    if kind == "auto":
        return "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    if kind == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise BenchError("--loop uvloop: uvloop is not installed (pip install uvloop)")
    return kind


@dataclass(slots=True)
class Process:
    name: str
    process: asyncio.subprocess.Process
    url: str
    stderr: Path
    loop: str = ""

    @property
    def pid(self) -> int:
        return self.process.pid


def _clean_env() -> dict[str, str]:
    # Flags win over SHIELDGATE_* variables anyway; dropping them keeps a stray
    # $SHIELDGATE_UPSTREAM_API_KEY or the like from changing what is measured.
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHIELDGATE_") and k != "OPENAI_BASE_URL"
    }


def _file_name(name: str) -> str:
    return name.replace("/", "-").replace(" ", "-")


async def start_server(name: str, argv: Sequence[str], workdir: Path, loop: str = "") -> Process:
    """Starts ``argv`` (a server that prints ``... listening on URL`` when it is ready) and
    waits for it; its stderr goes to a file in ``workdir``."""
    stderr = workdir / f"{_file_name(name)}.stderr"
    with stderr.open("wb") as sink:  # a file, not a pipe: a full pipe would stall the child
        process = await asyncio.create_subprocess_exec(
            *argv,
            # Never written to: its end of file tells the child that the benchmark is gone.
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
            env=_clean_env(),
            cwd=REPO_ROOT,  # measure this checkout
        )
    child = Process(name, process, "", stderr, loop)
    assert process.stdout is not None
    try:
        try:
            line = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT)
        except TimeoutError:
            line = b""
        match = LISTENING.search(line)
        if match is None:
            problem = stderr.read_text(errors="replace").strip() or line.decode(errors="replace")
            raise BenchError(f"{name!r} did not start: {problem or 'no output'}")
    except BaseException:
        # Not yet handed to the caller (a failed start, or an interrupt while waiting):
        # nobody else would stop it.
        await stop_processes([child])
        raise
    child.url = match.group(1).decode() + "/v1"
    return child


async def start_fake_upstream(workdir: Path, loop: str = "auto") -> Process:
    loop = resolve_loop(loop)
    argv = [sys.executable, "-m", "bench.perf.fake_upstream", "--loop", loop]
    return await start_server("fake-upstream", argv, workdir, loop)


async def start_bare_relay(upstream: str, workdir: Path, loop: str = "auto") -> Process:
    """``bare_relay.py``: an aiohttp server and client doing nothing but relaying, the floor of
    any aiohttp proxy, measured beside shieldgate."""
    loop = resolve_loop(loop)
    argv = [
        sys.executable,
        "-m",
        "bench.perf.bare_relay",
        "--loop",
        loop,
        "--upstream",
        upstream,
    ]
    return await start_server("bare-relay", argv, workdir, loop)


async def start_proxy(
    name: str,
    upstream: str,
    policy_file: Path,
    workdir: Path,
    *,
    loop: str = "auto",
    settings: dict[str, Any] | None = None,
) -> Process:
    """``shieldgate serve`` (one process) on a free port with ``loop`` as its event loop.

    ``settings`` go through a ``--config`` file, as an operator would set them."""
    loop = resolve_loop(loop)
    argv = [
        sys.executable,
        "-m",
        "bench.perf.proxy_main",
        "--loop",
        loop,
        "--upstream",
        upstream,
        "--policy",
        str(policy_file),
        # Nothing is logged per request either way; warning keeps stderr for real problems.
        "--log-level",
        "warning",
    ]
    if settings:
        config = workdir / f"{_file_name(name)}.config.json"  # JSON is YAML
        config.write_text(json.dumps(settings))
        argv += ["--config", str(config)]
    return await start_server(name, argv, workdir, loop)


async def stop_processes(children: Sequence[Process]) -> None:
    alive = [c.process for c in children if c.process.returncode is None]
    # Signal them all before awaiting anything: if a second interrupt cuts the waiting short,
    # every child has still been told to stop.
    for process in alive:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()  # SIGTERM: both shut down cleanly
    for process in alive:
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


def rss_bytes(pid: int) -> tuple[int, int]:
    """Resident memory of ``pid`` now and at its peak (VmRSS, VmHWM), in bytes (Linux)."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["VmHWM"]


def load_average() -> float:
    return os.getloadavg()[0]


def human_size(size: int) -> str:
    if size >= MB:
        return f"{size / MB:g} MB"
    if size >= 1000:
        return f"{size / 1000:g} KB"
    return f"{size} B"


def write_results(path: Path, document: dict[str, Any]) -> None:
    """A benchmark's figures as JSON, for ``bench/perf/report.py``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results written to {path}", flush=True)


def run_main(name: str, bench: Coroutine[Any, Any, int]) -> int:
    """Runs a benchmark's coroutine: its exit code; 1 on a BenchError, 130 when interrupted
    (the processes it started are stopped by its own cleanup either way)."""
    try:
        return asyncio.run(bench)
    except BenchError as exc:
        print(f"{name}: {exc}", file=sys.stderr, flush=True)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"{name}: interrupted; processes stopped", file=sys.stderr, flush=True)
        return 130
