"""The PostgreSQL store's own behaviour against a real server: its schema and migrations, the
reasons it refuses to start (as ``shieldgate serve`` reports them: exit status 2 and one line),
and what requests get while the database is down and after it is back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import psycopg
import pytest

from proxy.store.postgres import (
    PURGE_QUERY,
    SCHEMA_VERSION,
    TABLE,
    VERSION_TABLE,
    PostgresResponseStore,
)
from proxy.store.responses import StoreStartupError
from tests.conftest import ProxyFactory
from tests.proxy.endpoints.test_responses import text_reply
from tests.proxy.serving.test_cli import clean_env
from tests.proxy.store.pg_server import PostgresServer
from tests.support.fake_upstream import FakeUpstream

AUTH = {"Authorization": "Bearer sk-client"}


def admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


# --- schema -------------------------------------------------------------------------------


async def test_the_schema_is_created_once_and_versioned(pg_url: str) -> None:
    # Replicas starting together: one creates, the others wait for it and find it done.
    stores = await asyncio.gather(*(PostgresResponseStore.open(pg_url) for _ in range(4)))
    for store in stores:
        await store.close()
    # What the start's log line shows: user, host, port, database, never the password.
    password = password_of(pg_url)
    assert stores[0].where == pg_url.replace(f":{password}@", "@")
    with admin(pg_url) as conn:
        assert conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (TABLE,)
        ).fetchall()
    assert any("(created_at)" in row[0] for row in indexes), indexes


async def test_the_retention_purge_reads_the_expired_rows_through_the_index(pg_url: str) -> None:
    store = await PostgresResponseStore.open(pg_url)
    await store.close()
    with admin(pg_url) as conn:
        conn.execute(
            f"INSERT INTO {TABLE} (id, owner, created_at, response, conversation)"
            " SELECT 'resp_' || n, 'o', now() - CASE WHEN n <= 200 THEN interval '2 days'"
            " ELSE n * interval '1 second' END, '{}', '[]' FROM generate_series(1, 20000) AS n"
        )
        conn.execute(f"ANALYZE {TABLE}")
        plan = conn.execute(b"EXPLAIN " + PURGE_QUERY.as_bytes(conn), (86400.0, 5000)).fetchall()
    text = "\n".join(row[0] for row in plan)
    # 200 of 20,000 rows are older than a day: found by the index, deleted by their place.
    assert f"Index Scan using {TABLE}_created_at" in text, text
    assert "Seq Scan" not in text, text


async def test_a_schema_newer_than_this_shieldgate_is_refused(pg_url: str) -> None:
    store = await PostgresResponseStore.open(pg_url)
    await store.close()
    with admin(pg_url) as conn:
        conn.execute(f"UPDATE {VERSION_TABLE} SET version = version + 1")
    with pytest.raises(StoreStartupError, match="upgrade shieldgate"):
        await PostgresResponseStore.open(pg_url)


# --- startup errors ------------------------------------------------------------------------


@pytest.fixture
async def users(postgres: PostgresServer, pg_url: str) -> AsyncIterator[dict[str, str]]:
    """Database users of the cases below, as URLs: ``none`` may only connect (to this database
    and to ``<it>_empty``, a database without tables), ``read`` may also read the tables."""
    dbname = pg_url.rsplit("/", 1)[1]
    none, read = f"{dbname}_none", f"{dbname}_read"
    with admin(pg_url) as conn:
        conn.execute(f"CREATE ROLE {none} LOGIN PASSWORD 'pw-none'".encode())
        conn.execute(f"CREATE ROLE {read} LOGIN PASSWORD 'pw-read'".encode())
        conn.execute(f'CREATE DATABASE "{dbname}_empty"'.encode())
        for database in (dbname, f"{dbname}_empty"):
            conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {none}, {read}'.encode())
    # The tables made by their owner; the reader may only read them.
    store = await PostgresResponseStore.open(pg_url)
    await store.close()
    with admin(pg_url) as conn:
        conn.execute(f"GRANT SELECT ON {TABLE}, {VERSION_TABLE} TO {read}".encode())
    yield {
        "none": postgres.url(f"{dbname}_empty", none, "pw-none"),
        "read": postgres.url(dbname, read, "pw-read"),
    }
    with admin(pg_url) as conn:
        conn.execute(f'DROP DATABASE "{dbname}_empty" WITH (FORCE)'.encode())
        conn.execute(f"DROP OWNED BY {none}, {read}".encode())  # their grants
        conn.execute(f"DROP ROLE {none}, {read}".encode())


def serve(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--port", "0", *extra],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=clean_env(SHIELDGATE_RESPONSES_DB=url, SHIELDGATE_LOG_LEVEL="warning"),
        timeout=120,
        check=False,
    )


async def test_a_database_that_cannot_be_used_is_refused_with_the_reason(
    postgres: PostgresServer, pg_url: str, users: dict[str, str]
) -> None:
    dbname = pg_url.rsplit("/", 1)[1]
    closed = PostgresServer(postgres.bindir, postgres.root)  # a free port: nothing listens
    cases = {
        "unreachable": (closed.url(dbname), "Connection refused"),
        "wrong password": (
            postgres.url(dbname, password="not-the-password"),
            "password authentication failed",
        ),
        "no such database": (postgres.url("nonexistent"), 'database "nonexistent" does not exist'),
        "may not create": (users["none"], "permission denied for schema public"),
        "may only read": (users["read"], "lacks INSERT, UPDATE, DELETE on table"),
    }
    for name, (url, reason) in cases.items():
        with pytest.raises(StoreStartupError) as caught:
            await PostgresResponseStore.open(url)
        message = str(caught.value)
        assert "\n" not in message and reason in message, (name, message)
        assert "127.0.0.1" in message, (name, message)  # where it tried...
        assert password_of(url) not in message, name  # ...but never the password


def password_of(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


async def test_serve_exits_2_with_one_line_when_the_database_cannot_be_used(
    users: dict[str, str],
) -> None:
    url = users["read"]
    unreadable = "postgresql://u:s3cret-pw@127.0.0.1:5432/db?no_such_option=1"
    # Started together: each is a cold interpreter loading the policy.
    single, workers, bad_url = await asyncio.gather(
        asyncio.to_thread(serve, url),
        asyncio.to_thread(serve, url, "--workers", "2"),
        asyncio.to_thread(serve, unreadable),
    )
    for result in (single, workers, bad_url):
        assert result.returncode == 2, result.stderr
        assert result.stdout == ""
        (line,) = result.stderr.strip().splitlines()  # one line, no traceback
        assert line.startswith("shieldgate: "), line
        assert password_of(url) not in result.stderr and "s3cret-pw" not in result.stderr
    for result in (single, workers):
        assert "the responses database postgresql://" in result.stderr
        assert "lacks INSERT, UPDATE, DELETE" in result.stderr
    assert "not a PostgreSQL URL libpq can read" in bad_url.stderr


# --- the database down at request time ----------------------------------------------------


async def test_the_database_down_is_503_with_retry_after_and_service_resumes(
    postgres: PostgresServer,
    pg_url: str,
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    server = await make_proxy(responses_db=pg_url)
    responses = f"{server.url}/v1/responses"
    upstream.enqueue(text_reply("kept"))
    async with http.post(responses, json={"model": "m", "input": "hi"}, headers=AUTH) as reply:
        assert reply.status == 200
        kept = (await reply.json())["id"]

    postgres.stop()
    try:
        for method, url, body in [
            ("GET", f"{responses}/{kept}", None),
            ("DELETE", f"{responses}/{kept}", None),
            ("POST", responses, {"model": "m", "input": "more", "previous_response_id": kept}),
        ]:
            async with http.request(method, url, json=body, headers=AUTH) as reply:
                assert reply.status == 503, (method, await reply.text())
                assert int(reply.headers["Retry-After"]) > 0
                error = (await reply.json())["error"]
                assert error["code"] == "store_unavailable"
        # Requests that need no store are served as usual.
        upstream.enqueue(text_reply("chat is fine"))
        chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        async with http.post(f"{server.url}/v1/chat/completions", json=chat) as reply:
            assert reply.status == 200
        upstream.enqueue(text_reply("answered, not stored"))
        unstored = {"model": "m", "input": "hi", "store": False}
        async with http.post(responses, json=unstored, headers=AUTH) as reply:
            assert reply.status == 200
        assert len(upstream.requests) == 3
    finally:
        postgres.start()

    # The same process, without a restart, finds the database again.
    deadline = time.monotonic() + 30
    while True:
        async with http.get(f"{responses}/{kept}", headers=AUTH) as reply:
            if reply.status == 200:
                assert (await reply.json())["output"][0]["content"][0]["text"] == "kept"
                break
            assert reply.status == 503
        assert time.monotonic() < deadline, "the store did not come back within 30 s"
        await asyncio.sleep(0.5)
    upstream.enqueue(text_reply("continued"))
    follow_up = {"model": "m", "input": "more", "previous_response_id": kept}
    async with http.post(responses, json=follow_up, headers=AUTH) as reply:
        assert reply.status == 200
    async with http.delete(f"{responses}/{kept}", headers=AUTH) as reply:
        assert reply.status == 200


async def test_a_version_1_database_is_migrated_with_its_responses_kept(pg_url: str) -> None:
    # The schema as the first release made it, with a stored response.
    with admin(pg_url) as conn:
        conn.execute(
            f"CREATE TABLE {TABLE} (id text PRIMARY KEY, owner text NOT NULL, created_at"
            " timestamptz NOT NULL DEFAULT now(), response bytea NOT NULL, conversation bytea"
            " NOT NULL)"
        )
        conn.execute(f"CREATE TABLE {VERSION_TABLE} (version integer NOT NULL)")
        conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (1)")
        conn.execute(
            f"INSERT INTO {TABLE} (id, owner, response, conversation)"
            " VALUES ('resp_1', 'o', '{\"id\": \"resp_1\"}', '[]')"
        )
    store = await PostgresResponseStore.open(pg_url)
    try:
        kept = await store.get("resp_1")
        assert kept is not None and kept.response == {"id": "resp_1"}
        record = {"sha256": "1" * 64, "tools": {}}
        assert await store.keep_tool_record("k", "http://h/mcp", record) == record
    finally:
        await store.close()
    with admin(pg_url) as conn:
        assert conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchall() == [(2,)]
    assert SCHEMA_VERSION == 2
