"""Stored responses: what ``store: true`` keeps, behind a small interface.

A stored response is the Response object a client got (for ``GET /v1/responses/{id}``) and the
conversation it ends, as the chat messages that were sent upstream plus the reply — so that
``previous_response_id`` continues it without walking a chain of records. The messages are the
ones after the input stage: a redacted credential is stored redacted, and a request blocked at
input is not stored at all (only the refusal that answered it).

Records are bound to a digest of the client's ``Authorization`` header: a response can be read
or continued only with the credential that created it.

SQLite is the embedded default (one file, no setup; several proxy processes on one host may
share it). PostgreSQL (``proxy.store.postgres``, chosen by a ``postgresql://`` URL) is the
store several hosts share: replicas behind a load balancer.

The same store keeps the MCP tools each server listed the first time the proxy saw it
(``proxy.mcp.pinning``: trust on first use), keyed by a digest of the server's URL: its own
table, outside the retention (a first-use record must outlive any response).

Records older than the retention (``responses_retention_days``) are not found, whether or not
they have been deleted yet; deleting them is housekeeping (see each store).

Ids come from clients (``previous_response_id``, the path of ``GET``/``DELETE``): one the store
could never have written — not well-formed Unicode (a lone surrogate that SQLite cannot
encode), a NUL character (which PostgreSQL's text cannot hold), or longer than any id the proxy
makes — is simply not found, never a store failure.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from proxy.settings import Settings, default_responses_db
from shields import json_codec

__all__ = [
    "DAY",
    "ResponseStore",
    "SQLiteResponseStore",
    "StoreStartupError",
    "StoredResponse",
    "open_response_store",
    "read_tool_record",
    "storable_id",
]

log = logging.getLogger("shieldgate.app")

DAY = 86_400.0  # seconds
# How often expired records are deleted, at most (see each store).
PURGE_INTERVAL = 3_600.0


class StoreStartupError(Exception):
    """The store cannot be used at all (unreachable, refused credentials, missing
    permissions, a schema from a newer shieldgate): the server must not start. The message is
    one line, fit for an operator, and never holds a password."""


@dataclass(frozen=True, slots=True)
class StoredResponse:
    id: str
    owner: str  # digest of the credential that created it
    response: dict[str, Any]  # the Response object, as returned to the client
    conversation: list[dict[str, Any]]  # chat messages, instructions excluded


# Far above the proxy's own ids ("resp_" and 32 hex digits), far below anything costly.
_MAX_ID_CHARS = 256


def storable_id(response_id: str) -> bool:
    """Whether ``response_id`` could name a stored response: others are not looked up."""
    if len(response_id) > _MAX_ID_CHARS or "\x00" in response_id:
        return False
    try:
        response_id.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a JSON escape or a path
        return False
    return True


class ResponseStore(abc.ABC):
    """Where responses are kept. Implementations must be safe for concurrent use."""

    @abc.abstractmethod
    async def get(self, response_id: str) -> StoredResponse | None: ...

    @abc.abstractmethod
    async def put(self, record: StoredResponse) -> None: ...

    @abc.abstractmethod
    async def delete(self, response_id: str) -> bool:
        """True when a record was deleted."""

    @abc.abstractmethod
    async def purge(self) -> int:
        """Deletes the records past the retention now; how many there were. (Each store also
        does it by itself; see there.)"""

    @abc.abstractmethod
    async def tool_record(self, server_key: str) -> dict[str, Any] | None:
        """The MCP tools a server listed the first time it was seen (``proxy.mcp.pinning``),
        or None."""

    @abc.abstractmethod
    async def keep_tool_record(
        self, server_key: str, server: str, record: dict[str, Any]
    ) -> dict[str, Any]:
        """Keeps ``record`` as the server's first-use record unless it has one already; the
        record in force afterwards (another process's, when it was first)."""

    @abc.abstractmethod
    async def forget_tool_record(self, server_key: str) -> bool:
        """Deletes a server's first-use record (its next listing is recorded anew); True when
        there was one."""

    @abc.abstractmethod
    async def close(self) -> None: ...


_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS responses (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        created_at REAL NOT NULL,
        response BLOB NOT NULL,
        conversation BLOB NOT NULL
    )
    """,
    # Deleting expired records reads only them (files made before retention get it too).
    "CREATE INDEX IF NOT EXISTS responses_created_at ON responses (created_at)",
    # First-use records of MCP servers' tools (files made before it get it at their next
    # opening, like the index above): no retention.
    """
    CREATE TABLE IF NOT EXISTS mcp_tool_records (
        server_key TEXT PRIMARY KEY,
        server TEXT NOT NULL,
        created_at REAL NOT NULL,
        record BLOB NOT NULL
    )
    """,
)
# Expired records deleted per statement: a writer never holds the file for long.
_PURGE_BATCH = 1_000


class SQLiteResponseStore(ResponseStore):
    """One connection used from worker threads, one statement at a time.

    The database is opened on first use, so a proxy that never serves ``store: true`` never
    creates the file. Expired records are deleted by a write at most once per
    ``purge_interval`` seconds (no thread of its own: an idle proxy leaves them, unreadable,
    until its next write).
    """

    def __init__(
        self,
        path: str,
        *,
        retention_days: float = 0.0,
        purge_interval: float = PURGE_INTERVAL,
    ) -> None:
        self.path = path
        self._retention = retention_days * DAY
        self._purge_interval = purge_interval
        self._next_purge = 0.0  # time.monotonic() of the next purge: the first write does one
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA busy_timeout = 5000")
                if self.path != ":memory:":
                    # Readers never wait for a writer: several processes can share the file.
                    conn.execute("PRAGMA journal_mode = WAL")
                for statement in _SCHEMA:
                    conn.execute(statement)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _oldest(self) -> float:
        """The creation time of the oldest record still kept."""
        return time.time() - self._retention if self._retention else float("-inf")

    def _get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT owner, response, conversation FROM responses"
                    " WHERE id = ? AND created_at >= ?",
                    (response_id, self._oldest()),
                )
                .fetchone()
            )
        if row is None:
            return None
        owner, response, conversation = row
        return StoredResponse(
            id=response_id,
            owner=owner,
            response=json_codec.loads(response),
            conversation=json_codec.loads(conversation),
        )

    def _put(self, record: StoredResponse) -> None:
        values = (
            record.id,
            record.owner,
            time.time(),
            json_codec.dumps(record.response),
            json_codec.dumps(record.conversation),
        )
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO responses (id, owner, created_at, response, conversation)"
                " VALUES (?, ?, ?, ?, ?)",
                values,
            )
            if self._retention and time.monotonic() >= self._next_purge:
                self._next_purge = time.monotonic() + self._purge_interval
                self._purge_locked()

    def _purge_locked(self) -> int:
        deleted = 0
        conn = self._connection()
        while True:
            cursor = conn.execute(
                "DELETE FROM responses WHERE id IN"
                " (SELECT id FROM responses WHERE created_at < ? LIMIT ?)",
                (self._oldest(), _PURGE_BATCH),
            )
            deleted += cursor.rowcount
            if cursor.rowcount < _PURGE_BATCH:
                return deleted

    def _purge(self) -> int:
        if not self._retention:
            return 0
        with self._lock:
            return self._purge_locked()

    def _delete(self, response_id: str) -> bool:
        with self._lock:
            cursor = self._connection().execute(
                "DELETE FROM responses WHERE id = ?", (response_id,)
            )
        return cursor.rowcount > 0

    def _tool_record(self, server_key: str) -> dict[str, Any] | None:
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT record FROM mcp_tool_records WHERE server_key = ?", (server_key,))
                .fetchone()
            )
        return None if row is None else read_tool_record(row[0])

    def _keep_tool_record(
        self, server_key: str, server: str, record: dict[str, Any]
    ) -> dict[str, Any]:
        with self._lock:
            conn = self._connection()
            # One statement, then a read: whichever process inserted first, all see its record.
            conn.execute(
                "INSERT OR IGNORE INTO mcp_tool_records (server_key, server, created_at, record)"
                " VALUES (?, ?, ?, ?)",
                (server_key, server, time.time(), json_codec.dumps(record)),
            )
            row = conn.execute(
                "SELECT record FROM mcp_tool_records WHERE server_key = ?", (server_key,)
            ).fetchone()
        return read_tool_record(row[0])

    def _forget_tool_record(self, server_key: str) -> bool:
        with self._lock:
            cursor = self._connection().execute(
                "DELETE FROM mcp_tool_records WHERE server_key = ?", (server_key,)
            )
        return cursor.rowcount > 0

    def _close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def get(self, response_id: str) -> StoredResponse | None:
        if not storable_id(response_id):
            return None
        return await asyncio.to_thread(self._get, response_id)

    async def put(self, record: StoredResponse) -> None:
        await asyncio.to_thread(self._put, record)

    async def delete(self, response_id: str) -> bool:
        if not storable_id(response_id):
            return False
        return await asyncio.to_thread(self._delete, response_id)

    async def purge(self) -> int:
        """Deletes the expired records now; how many there were."""
        return await asyncio.to_thread(self._purge)

    async def tool_record(self, server_key: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._tool_record, server_key)

    async def keep_tool_record(
        self, server_key: str, server: str, record: dict[str, Any]
    ) -> dict[str, Any]:
        return await asyncio.to_thread(self._keep_tool_record, server_key, server, record)

    async def forget_tool_record(self, server_key: str) -> bool:
        return await asyncio.to_thread(self._forget_tool_record, server_key)

    async def close(self) -> None:
        await asyncio.to_thread(self._close)


def read_tool_record(raw: bytes) -> dict[str, Any]:
    """A stored first-use record, as the stores wrote it."""
    record = json_codec.loads(raw)
    if not isinstance(record, dict):
        raise ValueError("a first-use record of MCP tools is not a JSON object")
    return record


async def open_response_store(settings: Settings) -> ResponseStore:
    """The store the ``responses_db`` setting names, ready for use, and says which it is.

    A SQLite file or ``:memory:`` is opened on first use; a ``postgresql://`` URL is connected
    to now, its schema created or migrated. Raises ``StoreStartupError``.
    """
    location = settings.responses_db
    retention = settings.responses_retention_days
    if settings.responses_db_is_postgres:
        try:
            from proxy.store.postgres import PostgresResponseStore
        except ImportError as exc:
            raise StoreStartupError(
                f"a postgresql:// responses_db needs the PostgreSQL driver ({exc.name} is not "
                "installed): pip install 'shieldgate[postgres]'"
            ) from None
        store = await PostgresResponseStore.open(
            location, retention_days=retention, pool_size=settings.responses_db_pool_size
        )
        log.info("responses store: %s", store.where, extra={"path": store.where})
        return store
    _announce_sqlite(location)
    return SQLiteResponseStore(location, retention_days=retention)


def _announce_sqlite(location: str) -> None:
    """Says where stored responses go (an operator should not have to find the file), and
    makes the default location's directory."""
    if location == ":memory:":
        log.info("responses store: in memory (lost at exit)")
        return
    path = os.path.abspath(location)
    log.info("responses store: %s", path, extra={"path": path})
    if location == default_responses_db():
        _make_state_directory(os.path.dirname(path))


def _make_state_directory(path: str) -> None:
    """The default store's directory, made private to the user (0700): stored responses are
    conversations. A directory named by the operator is theirs to make."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        # Not fatal: the Responses API answers on, and reading stored responses gets a 503.
        log.warning("cannot create the responses store's directory %s: %s", path, exc.strerror)
