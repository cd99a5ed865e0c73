"""Stored responses in PostgreSQL: one database that every replica of the proxy shares.

Chosen by a ``postgresql://`` URL as ``responses_db``. What is stored, and who may read it, is
exactly as in the SQLite store (``proxy.store.responses``): a record is one row, bound to the
digest of the credential that created it, its JSON kept as the bytes the proxy wrote (``bytea``:
PostgreSQL's ``text`` and ``jsonb`` cannot hold a NUL character, and ``jsonb`` would reorder a
response's keys).

The first-use records of MCP servers' tools (``proxy.mcp.pinning``) live in a table of their
own (``shieldgate_mcp_tool_records``, schema version 2), outside the retention.

At start (``PostgresResponseStore.open``) the store connects once on its own, creates or
migrates its tables (a version table says which schema the database has; replicas starting
together take turns through an advisory lock), and checks that it may read, write and delete
there. Anything wrong is a ``StoreStartupError`` naming the reason: the server does not start.

Then a pool of connections (psycopg_pool) serves requests. Each statement is its own
transaction: a record is written whole by one ``INSERT``, or not at all — a process killed in
the middle of it leaves nothing behind. A request that finds the database down waits at most
``WAIT_FOR_CONNECTION`` seconds for a connection, then fails (the handlers answer 503 with
``Retry-After``); the pool keeps reconnecting in the background and, once it has given up, again
at the next request, so service resumes by itself when the database is back.

Retention: a record older than ``retention_days`` is never returned, and a background task
deletes such records at start (after a short random delay) and then about every
``PURGE_INTERVAL`` seconds, in batches, through an index on the creation time. Only one replica
purges at a time (a transaction-level advisory lock; the others skip that round).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, LiteralString

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from proxy.store.responses import (
    DAY,
    PURGE_INTERVAL,
    ResponseStore,
    StoredResponse,
    StoreStartupError,
    read_tool_record,
    storable_id,
)
from shields import json_codec

__all__ = [
    "PURGE_QUERY",
    "SCHEMA_VERSION",
    "WAIT_FOR_CONNECTION",
    "PostgresResponseStore",
]

log = logging.getLogger("shieldgate.store")

Connection = psycopg.AsyncConnection[TupleRow]

TABLE = "shieldgate_responses"
# First-use records of MCP servers' tools (``proxy.mcp.pinning``): no retention.
TOOL_TABLE = "shieldgate_mcp_tool_records"
VERSION_TABLE = "shieldgate_schema_version"

# One list of statements per schema version, applied in order; never edit a released one.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        f"""
        CREATE TABLE {TABLE} (
            id text PRIMARY KEY,
            owner text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            response bytea NOT NULL,
            conversation bytea NOT NULL
        )
        """,
        # The retention purge reads only the expired rows through it.
        f"CREATE INDEX {TABLE}_created_at ON {TABLE} (created_at)",
    ),
    (
        f"""
        CREATE TABLE {TOOL_TABLE} (
            server_key text PRIMARY KEY,
            server text NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            record bytea NOT NULL
        )
        """,
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)

# Advisory lock keys (any two bigints that other applications are unlikely to use).
_MIGRATION_LOCK = 0x73_67_72_73_01
_PURGE_LOCK = 0x73_67_72_73_02

# What a request waits for a pooled connection while the database is unreachable.
WAIT_FOR_CONNECTION = 3.0
# One operation's whole time (a database that accepts connections but stopped answering).
_OPERATION_TIMEOUT = 15.0
# libpq's own connect timeout, unless the URL sets one.
_CONNECT_TIMEOUT = 5
# The pool retries a lost connection with backoff (1, 2, 4... s) this long, then gives up
# until the next request asks: service resumes within seconds of the database coming back.
_RECONNECT_GIVE_UP = 10.0
# Rows deleted per purge transaction: short transactions, short locks.
_PURGE_BATCH = 5_000
_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE")
# A batch of expired rows: found through the creation time's index, deleted by their physical
# place (a TID scan), never a scan of the whole table. Parameters: the retention in seconds,
# the batch size.
PURGE_QUERY = sql.SQL(
    "DELETE FROM {table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {table}"
    " WHERE created_at < now() - make_interval(secs => %s) LIMIT %s))"
).format(table=sql.Identifier(TABLE))


class PostgresResponseStore(ResponseStore):
    """Open it with :meth:`open`; safe for concurrent use (one pooled connection each)."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Connection],
        where: str,
        *,
        retention_days: float,
        purge_interval: float,
    ) -> None:
        self._pool = pool
        self.where = where  # for the log: never the password
        self._retention = retention_days * DAY
        self._purge_interval = purge_interval
        self._purger: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        retention_days: float = 0.0,
        pool_size: int = 4,
        purge_interval: float = PURGE_INTERVAL,
    ) -> PostgresResponseStore:
        """Connects, creates or migrates the schema, checks permissions, opens the pool.

        Raises ``StoreStartupError`` with the reason when any of it fails.
        """
        conninfo, where = _conninfo(url)
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise StoreStartupError(
                f"cannot connect to the responses database {where}: {_one_line(exc)}"
            ) from None
        try:
            await _migrate(conn, where)
            await _check_privileges(conn, where)
        except psycopg.Error as exc:
            raise StoreStartupError(
                f"cannot set up the responses database {where}: {_one_line(exc)}"
            ) from None
        finally:
            await conn.close()
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            conninfo,
            kwargs={"autocommit": True},
            min_size=1,
            max_size=pool_size,
            open=False,
            check=AsyncConnectionPool.check_connection,  # a connection that died while idle
            timeout=WAIT_FOR_CONNECTION,
            reconnect_timeout=_RECONNECT_GIVE_UP,
            name="shieldgate-responses",
        )
        try:
            await pool.open(wait=True, timeout=_CONNECT_TIMEOUT * 2)
        except PoolTimeout:
            await pool.close()
            raise StoreStartupError(
                f"cannot connect to the responses database {where}: it stopped accepting "
                "connections during start"
            ) from None
        store = cls(pool, where, retention_days=retention_days, purge_interval=purge_interval)
        if store._retention:
            store._purger = asyncio.create_task(store._purge_periodically())
        return store

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        async with (
            asyncio.timeout(_OPERATION_TIMEOUT),
            self._pool.connection(timeout=WAIT_FOR_CONNECTION) as conn,
        ):
            yield conn

    def _kept(self) -> tuple[sql.Composable, tuple[float, ...]]:
        """The condition a row must meet to be returned, and its parameters."""
        if not self._retention:
            return sql.SQL("TRUE"), ()
        return sql.SQL("created_at >= now() - make_interval(secs => %s)"), (self._retention,)

    async def get(self, response_id: str) -> StoredResponse | None:
        if not storable_id(response_id):
            return None
        kept, params = self._kept()
        query = sql.SQL(
            "SELECT owner, response, conversation FROM {table} WHERE id = %s AND {kept}"
        ).format(table=sql.Identifier(TABLE), kept=kept)
        async with self._connection() as conn:
            cursor = await conn.execute(query, (response_id, *params))
            row = await cursor.fetchone()
        if row is None:
            return None
        owner, response, conversation = row
        return StoredResponse(
            id=response_id,
            owner=owner,
            response=json_codec.loads(bytes(response)),
            conversation=json_codec.loads(bytes(conversation)),
        )

    async def put(self, record: StoredResponse) -> None:
        query = sql.SQL(
            "INSERT INTO {table} (id, owner, response, conversation) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, created_at = now(),"
            " response = EXCLUDED.response, conversation = EXCLUDED.conversation"
        ).format(table=sql.Identifier(TABLE))
        values = (
            record.id,
            record.owner,
            json_codec.dumps(record.response),
            json_codec.dumps(record.conversation),
        )
        # One statement: its own transaction, so the row is there whole or not at all.
        async with self._connection() as conn:
            await conn.execute(query, values)

    async def delete(self, response_id: str) -> bool:
        if not storable_id(response_id):
            return False
        query = sql.SQL("DELETE FROM {table} WHERE id = %s").format(table=sql.Identifier(TABLE))
        async with self._connection() as conn:
            cursor = await conn.execute(query, (response_id,))
        return cursor.rowcount > 0

    async def tool_record(self, server_key: str) -> dict[str, Any] | None:
        query = sql.SQL("SELECT record FROM {table} WHERE server_key = %s").format(
            table=sql.Identifier(TOOL_TABLE)
        )
        async with self._connection() as conn:
            cursor = await conn.execute(query, (server_key,))
            row = await cursor.fetchone()
        return None if row is None else read_tool_record(bytes(row[0]))

    async def keep_tool_record(
        self, server_key: str, server: str, record: dict[str, Any]
    ) -> dict[str, Any]:
        # One statement: the row inserted, or, when a replica was first, its row returned.
        # (``DO UPDATE`` of the key to itself, so that RETURNING sees the existing row.)
        query = sql.SQL(
            "INSERT INTO {table} (server_key, server, record) VALUES (%s, %s, %s)"
            " ON CONFLICT (server_key) DO UPDATE SET server_key = EXCLUDED.server_key"
            " RETURNING record"
        ).format(table=sql.Identifier(TOOL_TABLE))
        async with self._connection() as conn:
            cursor = await conn.execute(query, (server_key, server, json_codec.dumps(record)))
            row = await cursor.fetchone()
        assert row is not None  # RETURNING a row inserted or updated
        return read_tool_record(bytes(row[0]))

    async def forget_tool_record(self, server_key: str) -> bool:
        query = sql.SQL("DELETE FROM {table} WHERE server_key = %s").format(
            table=sql.Identifier(TOOL_TABLE)
        )
        async with self._connection() as conn:
            cursor = await conn.execute(query, (server_key,))
        return cursor.rowcount > 0

    async def purge(self) -> int:
        """Deletes the expired rows, a batch per transaction; 0 at once when another replica
        is purging."""
        if not self._retention:
            return 0
        deleted = 0
        while True:
            async with self._connection() as conn, conn.transaction():
                cursor = await conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (_PURGE_LOCK,))
                locked = await cursor.fetchone()
                if locked is None or not locked[0]:
                    return deleted
                cursor = await conn.execute(PURGE_QUERY, (self._retention, _PURGE_BATCH))
            deleted += cursor.rowcount
            if cursor.rowcount < _PURGE_BATCH:
                return deleted

    async def _purge_periodically(self) -> None:
        # Replicas started together do not all purge at once (they would only skip, but
        # every one would ask).
        delay = random.uniform(0, min(60.0, self._purge_interval))
        while True:
            await asyncio.sleep(delay)
            try:
                deleted = await self.purge()
            except (psycopg.Error, PoolTimeout, TimeoutError) as exc:
                log.warning("deleting expired responses failed: %s", _one_line(exc))
            else:
                if deleted:
                    log.info("deleted %d expired responses", deleted, extra={"deleted": deleted})
            delay = self._purge_interval * random.uniform(0.9, 1.1)

    async def close(self) -> None:
        if self._purger is not None:
            self._purger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._purger
        await self._pool.close()


def _conninfo(url: str) -> tuple[str, str]:
    """libpq's connection string for ``url`` with the proxy's defaults, and a description of
    where it leads for the log and error messages (user, host, port, database; no password)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as exc:
        # libpq quotes the pieces it cannot read, which could be a password: not repeated.
        reason = re.sub(r'"[^"]*"', '"…"', _one_line(exc))
        raise StoreStartupError(
            f"responses_db: not a PostgreSQL URL libpq can read: {reason}"
        ) from None
    extra: dict[str, Any] = {}
    if "connect_timeout" not in params:
        extra["connect_timeout"] = _CONNECT_TIMEOUT
    if "application_name" not in params:
        extra["application_name"] = "shieldgate"
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port") or "5432"
    user = f"{params['user']}@" if params.get("user") else ""
    where = f"postgresql://{user}{host}:{port}/{params.get('dbname') or ''}"
    return make_conninfo(url, **extra), where


async def _scalar(conn: Connection, query: LiteralString, params: Sequence[Any] = ()) -> Any:
    cursor = await conn.execute(query, params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def _migrate(conn: Connection, where: str) -> None:
    """Brings the schema to ``SCHEMA_VERSION``; one replica at a time."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        # Looked up first: CREATE ... IF NOT EXISTS needs the right to create even when the
        # table is there, which a user that only reads and writes it does not have.
        if not await _scalar(conn, "SELECT to_regclass(%s) IS NOT NULL", (VERSION_TABLE,)):
            await conn.execute(
                sql.SQL("CREATE TABLE {} (version integer NOT NULL)").format(
                    sql.Identifier(VERSION_TABLE)
                )
            )
            await conn.execute(
                sql.SQL("INSERT INTO {} VALUES (0)").format(sql.Identifier(VERSION_TABLE))
            )
        version = await _scalar(conn, f"SELECT max(version) FROM {VERSION_TABLE}")
        version = int(version or 0)
        if version > SCHEMA_VERSION:
            raise StoreStartupError(
                f"the responses database {where} has schema version {version}, newer than "
                f"this shieldgate's ({SCHEMA_VERSION}): upgrade shieldgate"
            )
        if version == SCHEMA_VERSION:
            return
        for statements in _MIGRATIONS[version:]:
            for statement in statements:
                await conn.execute(statement)
        await conn.execute(
            sql.SQL("UPDATE {} SET version = %s").format(sql.Identifier(VERSION_TABLE)),
            (SCHEMA_VERSION,),
        )
        log.info(
            "responses database %s: schema version %d -> %d",
            where,
            version,
            SCHEMA_VERSION,
            extra={"from_version": version, "to_version": SCHEMA_VERSION},
        )


async def _check_privileges(conn: Connection, where: str) -> None:
    """A user who may not write or delete would fail every request: fail at start instead."""
    for table in (TABLE, TOOL_TABLE):
        missing = [
            privilege
            for privilege in _PRIVILEGES
            if not await _scalar(conn, "SELECT has_table_privilege(%s, %s)", (table, privilege))
        ]
        if missing:
            user = await _scalar(conn, "SELECT current_user")
            raise StoreStartupError(
                f"the responses database {where}: user {user} lacks {', '.join(missing)} on "
                f"table {table} (grant them, or let the owner start shieldgate once to create "
                "it)"
            )


def _one_line(exc: BaseException) -> str:
    """libpq's messages span lines (a hint, one line per host tried): one line for the log."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__
