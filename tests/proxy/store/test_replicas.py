"""Replicas sharing one PostgreSQL store: two ``shieldgate serve`` processes (as two pods behind
a load balancer would be) on one database, in front of one upstream.

A conversation started on one continues on the other; a replica killed while it is writing a
record leaves nothing half-written, and the other serves everything that was stored.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import Any

import aiohttp
import psycopg

from tests.proxy.endpoints.test_responses import text_reply
from tests.proxy.serving.test_cli import Proxy, clean_env, running_proxy
from tests.support.fake_upstream import FakeUpstream

AUTH = {"Authorization": "Bearer sk-client"}
OTHER = {"Authorization": "Bearer sk-someone-else"}


def replica_env(upstream: FakeUpstream, pg_url: str) -> dict[str, str]:
    return clean_env(
        SHIELDGATE_UPSTREAM=upstream.base_url,
        SHIELDGATE_RESPONSES_DB=pg_url,
        SHIELDGATE_LOG_LEVEL="warning",
    )


async def call(
    http: aiohttp.ClientSession,
    method: str,
    url: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] = AUTH,
) -> tuple[int, Any]:
    async with http.request(method, url, json=body, headers=headers) as reply:
        return reply.status, await reply.json()


def upstream_messages(upstream: FakeUpstream) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = upstream.requests[-1].json()["messages"]
    return messages


async def test_a_conversation_moves_between_replicas(
    upstream: FakeUpstream, pg_url: str, http: aiohttp.ClientSession
) -> None:
    env = replica_env(upstream, pg_url)
    async with running_proxy(env=env) as a, running_proxy(env=env) as b:
        upstream.enqueue(text_reply("Nice to meet you, Ada."), text_reply("You are Ada."))
        status, created = await call(
            http, "POST", f"{a.url}/v1/responses", {"model": "m", "input": "My name is Ada."}
        )
        assert status == 200

        # Retrieved on B, exactly as A answered it, and only by its owner.
        status, fetched = await call(http, "GET", f"{b.url}/v1/responses/{created['id']}")
        assert (status, fetched) == (200, created)
        status, _ = await call(http, "GET", f"{b.url}/v1/responses/{created['id']}", None, OTHER)
        assert status == 404

        # Continued on B: the upstream gets the conversation A stored.
        follow_up = {"model": "m", "input": "Who am I?", "previous_response_id": created["id"]}
        status, second = await call(http, "POST", f"{b.url}/v1/responses", follow_up)
        assert status == 200 and second["previous_response_id"] == created["id"]
        assert upstream_messages(upstream) == [
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": "Nice to meet you, Ada."},
            {"role": "user", "content": "Who am I?"},
        ]

        # Deleted on B: gone on A too.
        status, deleted = await call(http, "DELETE", f"{b.url}/v1/responses/{created['id']}")
        assert status == 200 and deleted["deleted"] is True
        status, _ = await call(http, "GET", f"{a.url}/v1/responses/{created['id']}")
        assert status == 404
        status, _ = await call(http, "GET", f"{a.url}/v1/responses/{second['id']}")
        assert status == 200


def rows(pg_url: str) -> dict[str, tuple[str, Any, Any]]:
    with psycopg.connect(pg_url) as conn:
        found = conn.execute(
            "SELECT id, owner, response, conversation FROM shieldgate_responses"
        ).fetchall()
    # Every row reads whole: both JSON documents parse, and the response is that row's.
    return {
        id_: (owner, json.loads(response), json.loads(conversation))
        for id_, owner, response, conversation in found
    }


async def insert_waiting(pg_url: str) -> int:
    """The pid of the server backend whose INSERT into the store waits for a lock."""
    deadline = time.monotonic() + 60
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                " AND query LIKE 'INSERT INTO \"shieldgate_responses\"%'"
            ).fetchone()
            if row is not None:
                return int(row[0])
            await asyncio.sleep(0.05)
    raise AssertionError("no INSERT of a record ever waited")


async def read_events(reply: aiohttp.ClientResponse) -> list[dict[str, Any]]:
    """The Responses events of a stream until it ends or breaks off."""
    events = []
    try:
        async for line in reply.content:
            if line.startswith(b"data: "):
                events.append(json.loads(line[6:]))
    except aiohttp.ClientPayloadError:
        pass  # the replica died mid-stream
    return events


async def test_a_replica_killed_mid_write_leaves_nothing_half_written(
    upstream: FakeUpstream, pg_url: str, http: aiohttp.ClientSession
) -> None:
    env = replica_env(upstream, pg_url)
    async with running_proxy(env=env) as a, running_proxy(env=env) as b:
        upstream.enqueue(text_reply("First answer."))
        status, first = await call(
            http, "POST", f"{a.url}/v1/responses", {"model": "m", "input": "first"}
        )
        assert status == 200

        # Writers wait on this lock (readers do not): A's write of the next record is under
        # way, inside its transaction, when A is killed.
        with psycopg.connect(pg_url) as blocker:
            blocker.execute("LOCK TABLE shieldgate_responses IN EXCLUSIVE MODE")
            upstream.enqueue(text_reply("Second answer, never finished."))
            body = {"model": "m", "input": "second", "stream": True}
            async with http.post(f"{a.url}/v1/responses", json=body, headers=AUTH) as reply:
                reading = asyncio.create_task(read_events(reply))
                await insert_waiting(pg_url)
                kill(a)
                events = await reading
            blocker.rollback()  # the lock goes; A's backend finds its client gone

        # The client saw the response begin but not end: its id, no completion.
        (second_id,) = {e["response"]["id"] for e in events if e["type"] == "response.created"}
        assert not any(e["type"] == "response.completed" for e in events)
        await wait_for_backends_of_a(pg_url)

        stored = rows(pg_url)  # parses every row: nothing corrupt
        assert first["id"] in stored
        # Written whole, or not at all. Today whole: the INSERT had reached the server, and
        # one statement commits by itself once the lock is free, whoever waits for the answer.
        if second_id in stored:
            _, response, conversation = stored[second_id]
            assert response["status"] == "completed"
            assert response["output"][0]["content"][0]["text"] == "Second answer, never finished."
            assert conversation[-1] == {
                "role": "assistant",
                "content": "Second answer, never finished.",
            }

        # B serves the rest: the first conversation, continued and deleted.
        status, fetched = await call(http, "GET", f"{b.url}/v1/responses/{first['id']}")
        assert (status, fetched) == (200, first)
        upstream.enqueue(text_reply("Third."))
        follow_up = {"model": "m", "input": "third", "previous_response_id": first["id"]}
        status, third = await call(http, "POST", f"{b.url}/v1/responses", follow_up)
        assert status == 200 and third["output"][0]["content"][0]["text"] == "Third."
        status, _ = await call(http, "DELETE", f"{b.url}/v1/responses/{first['id']}")
        assert status == 200
        status, _ = await call(http, "GET", f"{b.url}/v1/responses/{third['id']}")
        assert status == 200


def kill(proxy: Proxy) -> None:
    proxy.process.send_signal(signal.SIGKILL)


async def wait_for_backends_of_a(pg_url: str) -> None:
    """Until no backend is left mid-statement on the table (the killed replica's ended)."""
    deadline = time.monotonic() + 30
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            busy = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'shieldgate'"
                " AND state <> 'idle'"
            ).fetchone()
            if busy is not None and busy[0] == 0:
                return
            await asyncio.sleep(0.05)
    raise AssertionError("the killed replica's database session did not end")
