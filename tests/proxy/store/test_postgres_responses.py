"""The Responses API's stored responses end to end, on PostgreSQL: the tests that run on SQLite
in tests/proxy/endpoints/test_responses.py, run again here with a real PostgreSQL store behind the
proxy (the
imported tests use this module's ``proxy`` fixture), and the SQLite-specific ones rewritten."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import aiohttp
import openai
import psycopg
import pytest

from tests.conftest import ProxyFactory
from tests.guarantees.test_stored_and_large_inputs import REDACTING, TOKEN, create
from tests.proxy.endpoints.test_responses import MODEL, MakeClient, Proxy, text_reply, validated
from tests.proxy.endpoints.test_responses import (
    test_blocked_input_is_not_replayed_by_previous_response_id as test_blocked_input_is_not_replayed_by_previous_response_id,  # noqa: E501
)
from tests.proxy.endpoints.test_responses import (
    test_function_call_output_round_trip_with_previous_response as test_function_call_output_round_trip_with_previous_response,  # noqa: E501
)
from tests.proxy.endpoints.test_responses import (
    test_input_redaction_reaches_upstream_and_store_redacted as test_input_redaction_reaches_upstream_and_store_redacted,  # noqa: E501
)
from tests.proxy.endpoints.test_responses import (
    test_missing_response_is_404_in_openai_shape as test_missing_response_is_404_in_openai_shape,
)
from tests.proxy.endpoints.test_responses import (
    test_previous_response_id_continues_the_conversation as test_previous_response_id_continues_the_conversation,  # noqa: E501
)
from tests.proxy.endpoints.test_responses import (
    test_responses_survive_a_restart as test_responses_survive_a_restart,
)
from tests.support.fake_upstream import FakeUpstream


@pytest.fixture
async def proxy(make_proxy: ProxyFactory, pg_url: str) -> Proxy:
    """``await proxy(policy=None, **settings)``: a proxy whose store is a fresh PostgreSQL
    database (the same one for every proxy of the test: a restart finds what was stored)."""

    async def start(policy: Any = None, /, **settings: Any) -> Any:
        settings.setdefault("responses_db", pg_url)
        return await make_proxy(policy, **settings)

    return start


def table_bytes(url: str) -> bytes:
    """Every stored row's bytes, as the database holds them."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, owner, response, conversation FROM shieldgate_responses"
        ).fetchall()
    return b"\n".join(
        b"|".join(v if isinstance(v, bytes) else str(v).encode() for v in row) for row in rows
    )


async def test_retrieve_and_delete_stored_responses(
    upstream: FakeUpstream,
    proxy: Proxy,
    make_client: MakeClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    upstream.enqueue(text_reply("stored"), text_reply("not stored"))
    server = await proxy()
    client = make_client(server)

    created = await client.responses.create(model=MODEL, input="keep this")
    fetched = await client.responses.retrieve(created.id)
    assert validated(fetched).model_dump() == validated(created).model_dump()

    # Only the credential that created a response can read it.
    with pytest.raises(openai.NotFoundError):
        await make_client(server, api_key="sk-someone-else").responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        await make_client(server, api_key="sk-someone-else").responses.delete(created.id)

    unstored = await client.responses.create(model=MODEL, input="forget this", store=False)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(unstored.id)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input="x", previous_response_id=unstored.id)
    assert caught.value.param == "previous_response_id"

    await client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(created.id)
    assert len(upstream.requests) == 2
    # Nothing went to a SQLite file instead.
    assert os.listdir(tmp_path) == []


async def test_a_stored_response_holds_the_redacted_instructions_and_tools(
    upstream: FakeUpstream, proxy: Proxy, http: aiohttp.ClientSession, pg_url: str
) -> None:
    server = await proxy(REDACTING)
    tool = {
        "type": "function",
        "name": "deploy",
        "description": f"Deploys with the token {TOKEN}.",
        "parameters": {"type": "object", "properties": {}},
    }
    status, created = await create(
        http,
        server.url,
        {"model": "m", "input": "hi", "instructions": f"Use {TOKEN} to log in.", "tools": [tool]},
    )
    assert status == 200
    async with http.get(f"{server.url}/v1/responses/{created['id']}") as reply:
        stored = await reply.json()
    for response in (created, stored):
        assert response["instructions"] == "Use [CREDENTIAL] to log in."
        assert response["tools"][0]["description"] == "Deploys with the token [CREDENTIAL]."
        assert TOKEN not in json.dumps(response)
    rows = table_bytes(pg_url)
    assert b"[CREDENTIAL]" in rows and TOKEN.encode() not in rows
