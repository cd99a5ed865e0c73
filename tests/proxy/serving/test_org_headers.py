"""With the proxy's own upstream key, the organization and project it is billed to are the
operator's: the client's ``OpenAI-Organization`` and ``OpenAI-Project`` never reach the upstream.

End to end with the openai client, which sends those headers when it is given an
``organization`` and a ``project``; the fake upstream records what the proxy forwarded.
"""

from __future__ import annotations

from collections.abc import Callable

import openai
import pytest
from pydantic import ValidationError

from proxy.settings import Settings
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream

Client = Callable[..., openai.AsyncOpenAI]
MESSAGES = [{"role": "user", "content": "hi"}]


async def forwarded(
    make_proxy: ProxyFactory, make_client: Client, upstream: FakeUpstream, **settings: str
) -> dict[str, str]:
    """The billing headers the upstream got for one request from a client that names its own
    organization and project."""
    proxy = await make_proxy(**settings)
    client = make_client(proxy, organization="org-client", project="proj-client")
    for stream in (False, True):
        reply = await client.chat.completions.create(
            model="m",
            messages=MESSAGES,  # type: ignore[arg-type]
            stream=stream,
        )
        if stream:
            async for _ in reply:  # type: ignore[union-attr]
                pass
    headers = [request.headers for request in upstream.requests]
    assert len(headers) == 2
    seen = [
        {
            name.lower(): value
            for name, value in h.items()
            if name.lower() in {"openai-organization", "openai-project", "authorization"}
        }
        for h in headers
    ]
    assert seen[0] == seen[1]
    # Each header once: a client's lower-case copy beside the operator's would be two.
    for h in headers:
        assert len(h.getall("OpenAI-Organization", [])) <= 1
        assert len(h.getall("OpenAI-Project", [])) <= 1
    return seen[0]


async def test_with_the_proxys_key_the_clients_organization_and_project_stay_behind(
    make_proxy: ProxyFactory, make_client: Client, upstream: FakeUpstream
) -> None:
    got = await forwarded(make_proxy, make_client, upstream, upstream_api_key="sk-operator")
    assert got == {"authorization": "Bearer sk-operator"}


async def test_with_the_proxys_key_the_operators_organization_and_project_are_sent(
    make_proxy: ProxyFactory, make_client: Client, upstream: FakeUpstream
) -> None:
    got = await forwarded(
        make_proxy,
        make_client,
        upstream,
        upstream_api_key="sk-operator",
        upstream_organization="org-operator",
        upstream_project="proj-operator",
    )
    assert got == {
        "authorization": "Bearer sk-operator",
        "openai-organization": "org-operator",
        "openai-project": "proj-operator",
    }


async def test_without_the_proxys_key_the_clients_own_credentials_go_through(
    make_proxy: ProxyFactory, make_client: Client, upstream: FakeUpstream
) -> None:
    """The client's key is what the upstream bills: its organization and project go with it,
    unless the operator has set one, which then replaces the client's."""
    got = await forwarded(make_proxy, make_client, upstream)
    assert got == {
        "authorization": "Bearer sk-client",
        "openai-organization": "org-client",
        "openai-project": "proj-client",
    }
    upstream.requests.clear()
    got = await forwarded(make_proxy, make_client, upstream, upstream_project="proj-operator")
    assert got == {
        "authorization": "Bearer sk-client",
        "openai-organization": "org-client",
        "openai-project": "proj-operator",
    }


@pytest.mark.parametrize("value", ["", "  ", "org\r\nX-Injected: 1", "org\x00"])
def test_an_organization_that_is_not_a_header_value_is_refused(value: str) -> None:
    assert Settings(upstream_organization="org-1", upstream_project="proj_1").upstream_project
    with pytest.raises(ValidationError):
        Settings(upstream_organization=value)
    with pytest.raises(ValidationError):
        Settings(upstream_project=value)
