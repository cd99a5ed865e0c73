"""Stored responses: what ``store: true`` keeps, behind a small interface.

A stored response is the Response object a client got (for ``GET /v1/responses/{id}``) and the
conversation it ends, as the chat messages that were sent upstream plus the reply — so that
``previous_response_id`` continues it without walking a chain of records. The messages are the
ones after the input stage: a redacted credential is stored redacted, and a request blocked at
input is not stored at all (only the refusal that answered it).

Records are bound to a digest of the client's ``Authorization`` header: a response can be read
or continued only with the credential that created it.

SQLite is the embedded default (one file, no setup; several proxy processes on one host may
share it). ``ResponseStore`` is the seam for a shared database serving several hosts.

Ids come from clients (``previous_response_id``, the path of ``GET``/``DELETE``): one the store
could never have written — not well-formed Unicode (a lone surrogate that SQLite cannot
encode), or longer than any id the proxy makes — is simply not found, never a store failure.
"""

from __future__ import annotations

import abc
import asyncio
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from proxy import json_codec

__all__ = [
    "ResponseStore",
    "SQLiteResponseStore",
    "StoredResponse",
    "open_response_store",
    "storable_id",
]


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
    if len(response_id) > _MAX_ID_CHARS:
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
    async def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at REAL NOT NULL,
    response BLOB NOT NULL,
    conversation BLOB NOT NULL
)
"""


class SQLiteResponseStore(ResponseStore):
    """One connection used from worker threads, one statement at a time.

    The database is opened on first use, so a proxy that never serves ``store: true`` never
    creates the file.
    """

    def __init__(self, path: str) -> None:
        self.path = path
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
                conn.execute(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _get(self, response_id: str) -> StoredResponse | None:
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT owner, response, conversation FROM responses WHERE id = ?",
                    (response_id,),
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

    def _delete(self, response_id: str) -> bool:
        with self._lock:
            cursor = self._connection().execute(
                "DELETE FROM responses WHERE id = ?", (response_id,)
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

    async def close(self) -> None:
        await asyncio.to_thread(self._close)


def open_response_store(location: str) -> ResponseStore:
    """The store named by the ``responses_db`` setting: a SQLite file path, or ``:memory:``."""
    return SQLiteResponseStore(location)
