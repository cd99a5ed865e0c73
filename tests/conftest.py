"""Shared fixtures: a scripted fake upstream, the real proxy in front of it, and clients.

Everything here is real: ``upstream`` is a :class:`~tests.support.fake_upstream.FakeUpstream` (an
aiohttp
server on 127.0.0.1, port 0) and ``make_proxy`` starts the same server code the ``shieldgate
serve`` command runs (``proxy.serving.server.start_server``) on another free port. Tests talk to the
proxy over TCP, either with the official ``openai`` SDK (``make_client``) or with plain aiohttp
(``http``) when the exact bytes on the wire matter.

Typical use::

    async def test_something(upstream, make_proxy, make_client):
        upstream.enqueue(Reply(body=json_bytes(chat_completion("hi"))))
        proxy = await make_proxy()                      # default policy, fast timeouts
        client = make_client(proxy)
        reply = await client.chat.completions.create(model="m", messages=[...])
        assert upstream.requests[-1].json()["messages"] == [...]
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import openai
import pytest

from proxy.cli import default_policy
from proxy.serving.server import RunningServer, start_server
from proxy.settings import Settings
from shields.policy import CompiledPolicy, parse_policy
from shields.routing import PolicySet
from tests.support.fake_upstream import FakeUpstream

__all__ = ["FAST_SETTINGS", "PolicySource", "ProxyFactory", "load_test_policy"]

# Small timeouts so a test about failures takes milliseconds, not the production defaults
# (10 s connect, 600 s read, 0.25 s backoff). A test may override any of them.
FAST_SETTINGS: dict[str, Any] = {
    "connect_timeout": 1.0,
    "read_timeout": 2.0,
    "retry_backoff": 0.01,
    "retry_after_cap": 0.5,
}

PolicySource = CompiledPolicy | PolicySet | str | bytes | None
ProxyFactory = Callable[..., Awaitable[RunningServer]]


def load_test_policy(policy: PolicySource) -> CompiledPolicy | PolicySet:
    """``None`` -> the packaged default policy; YAML text -> parsed; loaded policies as they are."""
    if policy is None:
        return default_policy()
    if isinstance(policy, CompiledPolicy | PolicySet):
        return policy
    return parse_policy(policy, source="<test policy>")


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    """A started :class:`FakeUpstream`; closed after the test.

    Script it with ``upstream.enqueue(Reply(...))`` (an empty queue answers with a minimal valid
    ``chat.completion``); inspect ``upstream.requests`` (what the proxy forwarded) and
    ``await upstream.wait_for_disconnect(timeout)`` (the proxy hung up mid-reply).
    """
    async with FakeUpstream() as fake:
        yield fake


@pytest.fixture
async def make_proxy(upstream: FakeUpstream) -> AsyncIterator[ProxyFactory]:
    """Async factory starting a real proxy server; every server is closed at teardown.

    ``await make_proxy(policy=None, /, **settings)`` -> :class:`proxy.serving.server.RunningServer`
    (``.url`` is ``http://127.0.0.1:PORT``; the OpenAI base URL is ``.url + "/v1"``).

    - ``policy``: ``None`` for ``policies/default.yaml``, YAML text (str/bytes), or a
      ``CompiledPolicy``.
    - ``settings``: overrides of :class:`proxy.settings.Settings` (``policy=<path>`` among
      them: the file the server watches for hot reload). By default the proxy
      points at the ``upstream`` fixture, listens on port 0 and uses ``FAST_SETTINGS``;
      pass ``upstream="http://..."`` to point it elsewhere.
    """
    servers: list[RunningServer] = []

    async def factory(policy: PolicySource = None, /, **overrides: Any) -> RunningServer:
        values: dict[str, Any] = {"upstream": upstream.base_url, "port": 0, **FAST_SETTINGS}
        values.update(overrides)
        server = await start_server(Settings(**values), load_test_policy(policy))
        servers.append(server)
        return server

    yield factory
    for server in reversed(servers):
        await server.close()


@pytest.fixture
async def make_client() -> AsyncIterator[Callable[..., openai.AsyncOpenAI]]:
    """Factory for the real ``openai.AsyncOpenAI`` pointed at a running proxy.

    ``make_client(server, api_key="sk-client", **kwargs)``: no SDK retries (``max_retries=0``,
    so every retry seen is the proxy's), a 10 s timeout as a backstop against hangs. Clients are
    closed at teardown.
    """
    clients: list[openai.AsyncOpenAI] = []

    def factory(
        server: RunningServer, *, api_key: str = "sk-client", **kwargs: Any
    ) -> openai.AsyncOpenAI:
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 10.0)
        client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=api_key, **kwargs)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        await client.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain aiohttp session (10 s total timeout) for byte-exact requests and reads."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session
