"""Fixtures of the stored-responses tests: a real PostgreSQL server, a fresh database per test,
and the store under test for each backend.

Tests that use PostgreSQL are marked ``postgres``. Whether they run follows
``SHIELDGATE_REAL_BACKEND``, as the tests against a real model do (tests/e2e/real_backend):

- unset: they run when psycopg (the ``postgres`` extra, which the ``test`` extra includes) and
  PostgreSQL's server programs (Debian's ``postgresql`` package) are installed, and are
  skipped, with the reason, when not;
- ``required`` (what ``.ci/run`` sets): anything missing is a failure;
- ``off``: skipped.

One server serves the whole session; each test gets a database of its own.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from proxy.store.responses import ResponseStore, SQLiteResponseStore
from tests.proxy.store.pg_server import PostgresServer, find_bindir, running_postgres

_MODE_VARIABLE = "SHIELDGATE_REAL_BACKEND"
_names = itertools.count()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents and "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)


def _unavailable() -> str | None:
    if importlib.util.find_spec("psycopg") is None:
        return "PostgreSQL tests need psycopg (pip install -e '.[test]')"
    if find_bindir() is None:
        return "PostgreSQL tests need its server programs (apt-get install postgresql)"
    return None


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The running server (``.url(dbname)``, ``.stop()``, ``.start()``)."""
    mode = os.environ.get(_MODE_VARIABLE, "").strip().lower()
    if mode == "off":
        pytest.skip(f"{_MODE_VARIABLE}=off")
    reason = _unavailable()
    if reason is not None:
        if mode == "required":
            pytest.fail(reason)
        pytest.skip(reason)
    bindir = find_bindir()
    assert bindir is not None
    with running_postgres(bindir) as server:
        yield server


@pytest.fixture
def pg_url(postgres: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on the server, dropped after the test: its URL (as the
    superuser)."""
    import psycopg

    if not postgres.running():  # a test that stopped it failed before starting it again
        postgres.start()
    name = f"t{os.getpid()}_{next(_names)}"
    with psycopg.connect(postgres.url(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    yield postgres.url(name)
    if not postgres.running():
        postgres.start()
    with psycopg.connect(postgres.url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)'.encode())


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ResponseStore]:
    """The store under test, once per backend, with a retention of 30 days."""
    opened: ResponseStore
    if request.param == "sqlite":
        opened = SQLiteResponseStore(str(tmp_path / "responses.sqlite3"), retention_days=30)
    else:
        from proxy.store.postgres import PostgresResponseStore

        url = request.getfixturevalue("pg_url")
        opened = await PostgresResponseStore.open(url, retention_days=30)
    yield opened
    await opened.close()
