"""Where ``shieldgate serve`` keeps its state: the user's XDG state directory, never the
working directory it was started from, and it says so at start."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import aiohttp
import pytest

from proxy.settings import Settings
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream


def test_the_default_store_is_in_the_state_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert Settings().responses_db == str(tmp_path / "state/shieldgate/responses.sqlite3")
    # Without the variable (or with a relative path, which the XDG spec says to ignore):
    # ~/.local/state.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for unset in ("", "relative/state"):
        monkeypatch.setenv("XDG_STATE_HOME", unset)
        expected = tmp_path / "home/.local/state/shieldgate/responses.sqlite3"
        assert Settings().responses_db == str(expected)
    # Set explicitly, it is what it says.
    assert Settings(responses_db="x.sqlite3").responses_db == "x.sqlite3"


async def test_serve_creates_the_store_there_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    state = tmp_path / "state"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.chdir(work)
    proxy = await make_proxy()
    store = state / "shieldgate" / "responses.sqlite3"
    assert f"responses store: {store}" in caplog.messages
    # The directory is the user's alone: stored responses are conversations.
    assert stat.S_IMODE(os.stat(store.parent).st_mode) == 0o700
    async with http.post(f"{proxy.url}/v1/responses", json={"model": "m", "input": "hi"}) as r:
        assert r.status == 200
    assert store.exists()
    assert list(work.iterdir()) == []  # nothing in the working directory


async def test_a_store_in_memory_is_announced_too(
    make_proxy: ProxyFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    await make_proxy(responses_db=":memory:")
    assert "responses store: in memory (lost at exit)" in caplog.messages
