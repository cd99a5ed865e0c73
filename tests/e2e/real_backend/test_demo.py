"""``shieldgate demo`` as a newcomer runs it: it starts a real model and shieldgate, runs its tour
(whose claims the command checks itself: a claim that fails exits 1 before serving), serves,
and stops both processes on Ctrl-C; a port in use is a one-line error."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys

import openai
import pytest

from proxy.demo.llama_server import LlamaServer, free_port

DEMO = [sys.executable, "-c", "import sys; from proxy.cli import main; sys.exit(main())", "demo"]


async def read_until(stream: asyncio.StreamReader, marker: str) -> list[str]:
    lines: list[str] = []
    while True:
        raw = await stream.readline()
        if not raw:
            raise AssertionError("the demo ended early:\n" + "".join(lines))
        lines.append(raw.decode())
        if marker in lines[-1]:
            return lines


def accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("tour", [True, False], ids=["tour", "no-tour"])
async def test_demo_tours_serves_and_stops_both_processes(llama: LlamaServer, tour: bool) -> None:
    port = free_port()
    flags = [] if tour else ["--no-tour"]
    process = await asyncio.create_subprocess_exec(
        *DEMO, "--port", str(port), *flags,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    try:
        async with asyncio.timeout(300):
            lines = await read_until(process.stdout, "Serving on")
    finally:
        if process.returncode is not None:
            print((await process.stderr.read()).decode())
    text = "".join(lines)
    model_port = int(re.search(r"ready in .*127\.0\.0\.1:(\d+)/v1", text).group(1))  # type: ignore[union-attr]
    assert f"shieldgate listening on http://127.0.0.1:{port}" in text
    assert "curl -s" in text and "from openai import OpenAI" in text
    if tour:
        for step in ("[1/4]", "[2/4]", "[3/4]", "[4/4]", "Where to look:"):
            assert step in text
        assert "the model received: My GitHub token is [CREDENTIAL]." in text
        assert "blocked mid-stream (finish_reason content_filter)" in text
    else:
        assert "[1/4]" not in text
    async with openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120
    ) as client:
        reply = await client.chat.completions.create(
            model="smollm2-135m", messages=[{"role": "user", "content": "Hello!"}], max_tokens=8
        )
    assert reply.choices[0].message.content
    process.send_signal(signal.SIGINT)
    async with asyncio.timeout(30):
        rest = (await process.stdout.read()).decode()
        assert await process.wait() == 0
    assert "Stopped shieldgate and the model." in rest
    assert not accepts_connections(port)
    assert not accepts_connections(model_port)


async def test_demo_with_its_port_in_use_says_so_in_one_line(llama: LlamaServer) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            *DEMO, "--port", str(port),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 2
    assert out == b""
    assert err.decode() == (
        f"shieldgate demo: port {port} on 127.0.0.1 is in use (pick another with --port N)\n"
    )
