"""What every ``ResponseStore`` does, run against each backend: SQLite and a real PostgreSQL.

The end-to-end behaviour on top of it (owners, previous_response_id, redacted storage) is in
tests/proxy/endpoints/test_responses.py for SQLite and tests/proxy/store/test_postgres_responses.py
for PostgreSQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from proxy.store.responses import DAY, ResponseStore, SQLiteResponseStore, StoredResponse

OWNER = "a" * 64
OTHER = "b" * 64


def record(response_id: str = "resp_1", owner: str = OWNER, **response: Any) -> StoredResponse:
    return StoredResponse(
        id=response_id,
        owner=owner,
        response={"id": response_id, "object": "response", "status": "completed", **response},
        conversation=[
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "hi there"},
        ],
    )


async def age(store: ResponseStore, response_id: str, days: float) -> None:
    """Makes a stored record ``days`` older, as if it had been stored that long ago."""
    if isinstance(store, SQLiteResponseStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute(
                "UPDATE responses SET created_at = created_at - ? WHERE id = ?",
                (days * DAY, response_id),
            )
        return
    async with store._connection() as conn:  # type: ignore[attr-defined]
        await conn.execute(
            "UPDATE shieldgate_responses SET created_at = created_at - make_interval(secs => %s)"
            " WHERE id = %s",
            (days * DAY, response_id),
        )


async def test_a_record_comes_back_as_it_was_put(store: ResponseStore) -> None:
    stored = StoredResponse(
        id="resp_text",
        owner=OWNER,
        response={
            "id": "resp_text",
            "output_text": "naïve café — 東京 🎉",
            "nul": "a\x00b",  # PostgreSQL's text and jsonb refuse it; the store must not
            "surrogate": "odd \ud800 text",  # kept as the JSON escape it came in
            "numbers": [1, 1.5, -0.0, 10**18],
            "nested": {"z": 1, "a": {"b": [None, True, False]}},
        },
        conversation=[{"role": "user", "content": "x" * 1_000_000}],
    )
    await store.put(stored)
    fetched = await store.get("resp_text")
    assert fetched == stored
    assert fetched is not None
    assert list(fetched.response["nested"]) == ["z", "a"]  # key order kept


async def test_unknown_ids_are_absent(store: ResponseStore) -> None:
    assert await store.get("resp_missing") is None
    assert await store.delete("resp_missing") is False


async def test_the_owner_is_kept_with_the_record(store: ResponseStore) -> None:
    # The handlers compare it with the digest of the caller's credential.
    await store.put(record("resp_a", owner=OWNER))
    await store.put(record("resp_b", owner=OTHER))
    a, b = await store.get("resp_a"), await store.get("resp_b")
    assert a is not None and a.owner == OWNER
    assert b is not None and b.owner == OTHER


async def test_put_replaces_a_record_of_the_same_id(store: ResponseStore) -> None:
    await store.put(record("resp_1", status="in_progress"))
    await store.put(record("resp_1", status="completed"))
    fetched = await store.get("resp_1")
    assert fetched is not None and fetched.response["status"] == "completed"


async def test_delete_removes_once(store: ResponseStore) -> None:
    await store.put(record("resp_1"))
    await store.put(record("resp_2"))
    assert await store.delete("resp_1") is True
    assert await store.get("resp_1") is None
    assert await store.delete("resp_1") is False
    assert await store.get("resp_2") is not None


@pytest.mark.parametrize(
    "response_id",
    ["x" * 257, "resp_\ud800", "resp_\x00", "", "resp_' OR '1'='1", "resp_%", "resp_*"],
)
async def test_ids_the_store_could_not_have_written_are_not_found(
    store: ResponseStore, response_id: str
) -> None:
    await store.put(record("resp_real"))
    assert await store.get(response_id) is None
    assert await store.delete(response_id) is False
    assert await store.get("resp_real") is not None


async def test_concurrent_use(store: ResponseStore) -> None:
    ids = [f"resp_{i}" for i in range(40)]
    await asyncio.gather(*(store.put(record(i, n=n)) for n, i in enumerate(ids)))
    fetched = await asyncio.gather(*(store.get(i) for i in ids))
    assert [f.response["n"] if f else None for f in fetched] == list(range(40))
    deleted = await asyncio.gather(*(store.delete(i) for i in ids[::2]))
    assert all(deleted)
    left = await asyncio.gather(*(store.get(i) for i in ids))
    assert [f is not None for f in left] == [n % 2 == 1 for n in range(40)]


async def stored_ids(store: ResponseStore) -> set[str]:
    """Every id in the table, expired or not (read past the store)."""
    if isinstance(store, SQLiteResponseStore):
        with sqlite3.connect(store.path) as conn:
            return {row[0] for row in conn.execute("SELECT id FROM responses")}
    async with store._connection() as conn:  # type: ignore[attr-defined]
        cursor = await conn.execute("SELECT id FROM shieldgate_responses")
        return {row[0] for row in await cursor.fetchall()}


async def test_records_past_the_retention_are_not_found_and_are_purged(
    store: ResponseStore,
) -> None:
    await store.put(record("resp_old"))
    await store.put(record("resp_edge"))
    await store.put(record("resp_new"))
    await age(store, "resp_old", 31)
    await age(store, "resp_edge", 29.9)

    # Not found as soon as it is past the retention, whether or not it was deleted yet.
    assert await store.get("resp_old") is None
    assert await stored_ids(store) == {"resp_old", "resp_edge", "resp_new"}
    assert await store.get("resp_edge") is not None
    assert await store.purge() == 1
    assert await stored_ids(store) == {"resp_edge", "resp_new"}
    assert await store.purge() == 0
    assert await store.get("resp_edge") is not None
    assert await store.get("resp_new") is not None


async def test_a_purge_deletes_in_batches_until_none_is_left(
    store: ResponseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import proxy.store.postgres
    import proxy.store.responses

    monkeypatch.setattr(proxy.store.responses, "_PURGE_BATCH", 2)
    monkeypatch.setattr(proxy.store.postgres, "_PURGE_BATCH", 2)
    for n in range(5):
        await store.put(record(f"resp_old{n}"))
        await age(store, f"resp_old{n}", 45)
    await store.put(record("resp_new"))
    assert await store.purge() == 5
    assert await stored_ids(store) == {"resp_new"}


async def test_a_write_purges_now_and_then_by_itself(tmp_path: Path) -> None:
    # SQLite has no task of its own: the first write, then one per interval, purges.
    store = SQLiteResponseStore(str(tmp_path / "r.sqlite3"), retention_days=1, purge_interval=0)
    try:
        await store.put(record("resp_old"))
        await age(store, "resp_old", 2)
        await store.put(record("resp_new"))
        assert await stored_ids(store) == {"resp_new"}
    finally:
        await store.close()


# --- first-use records of MCP servers' tools (proxy.mcp.pinning) ---------------------------

TOOLS = {"sha256": "1" * 64, "tools": {"echo": {"sha256": "2" * 64, "fields": {}}}}
OTHER_TOOLS = {"sha256": "3" * 64, "tools": {}}


async def test_the_first_tool_record_of_a_server_wins(store: ResponseStore) -> None:
    assert await store.tool_record("k1") is None
    assert await store.keep_tool_record("k1", "http://h/mcp", TOOLS) == TOOLS
    # A later (or concurrent) first listing gets the record in force, not its own.
    assert await store.keep_tool_record("k1", "http://h/mcp", OTHER_TOOLS) == TOOLS
    assert await store.tool_record("k1") == TOOLS
    assert await store.tool_record("k2") is None


async def test_concurrent_first_listings_agree_on_one_record(store: ResponseStore) -> None:
    records = [{"sha256": str(i) * 64, "tools": {}} for i in range(8)]
    kept = await asyncio.gather(
        *(store.keep_tool_record("k", "http://h/mcp", record) for record in records)
    )
    assert len({json_key(record) for record in kept}) == 1
    assert kept[0] in records
    assert await store.tool_record("k") == kept[0]


async def test_a_forgotten_tool_record_is_made_anew(store: ResponseStore) -> None:
    await store.keep_tool_record("k", "http://h/mcp", TOOLS)
    assert await store.forget_tool_record("k") is True
    assert await store.forget_tool_record("k") is False
    assert await store.tool_record("k") is None
    assert await store.keep_tool_record("k", "http://h/mcp", OTHER_TOOLS) == OTHER_TOOLS


async def test_tool_records_outlive_the_retention_purge(store: ResponseStore) -> None:
    await store.keep_tool_record("k", "http://h/mcp", TOOLS)
    await store.put(record("resp_old"))
    await age(store, "resp_old", 31)
    await store.purge()
    assert await store.get("resp_old") is None
    assert await store.tool_record("k") == TOOLS


def json_key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True)
