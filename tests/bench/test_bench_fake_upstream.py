"""The benchmarks' fake upstream answers what the benchmarks check against, byte for byte.

``bench/perf/fake_upstream.py`` speaks HTTP/1.1 by hand (to cost microseconds, not an aiohttp
server's hundreds), so its framing is tested here with a real aiohttp client: keep-alive,
Content-Length replies, chunked streams, and the model names the benchmarks use.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bench.perf import fake_upstream, harness


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(fake_upstream.serve("127.0.0.1", 0, ready.set_result))
    url = await asyncio.wait_for(ready, 5)
    yield url + "/v1"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def post(session: aiohttp.ClientSession, url: str, model: str) -> tuple[int, str, bytes]:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}]})
    async with session.post(f"{url}/chat/completions", data=body.encode()) as response:
        return response.status, response.content_type, await response.read()


async def test_a_completion_then_streams_on_one_keep_alive_connection(upstream: str) -> None:
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(connector=connector) as session:
        status, kind, body = await post(session, upstream, "bench-json")
        assert (status, kind, body) == (200, "application/json", harness.COMPLETION)

        status, kind, body = await post(session, upstream, "stream-3000-7-11")
        expected = harness.make_stream("x", 3000, 7, 11)
        assert (status, kind, body) == (200, "text/event-stream", expected.body)
        assert harness.content_of(body) == expected.text

        status, _, body = await post(session, upstream, "stream-200")  # chunk 4, seed 201
        assert body == harness.make_stream("x", 200, 4, 201).body

        status, _, body = await post(session, upstream, "slow-5-1")
        found = harness.slow_events("slow-5-1")
        assert found is not None
        assert body == b"".join(found[1])
        assert len(harness.content_of(body)) == 5 * harness.SLOW_CHUNK


async def test_unknown_models_and_paths_are_404s(upstream: str) -> None:
    async with aiohttp.ClientSession() as session:
        for model in ("nope", "stream-x", "stream-0", "slow-1"):
            status, _, body = await post(session, upstream, model)
            assert status == 404, model
            assert "error" in json.loads(body)
        async with session.get(f"{upstream}/embeddings") as response:
            assert response.status == 404


def test_the_generated_texts_pass_the_default_policy() -> None:
    from proxy.cli import default_policy
    from shields.base import Stage
    from shields.scan import check_text

    policy = default_policy()
    assert not check_text(policy.shields(Stage.OUTPUT), harness.COMPLETION_TEXT)
    assert not check_text(policy.shields(Stage.OUTPUT), harness.make_prose(20_000, seed=5))
