"""Policy directories: several policies, routes by model (and, if allowed, by header)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from shields.policy import PolicyError
from shields.routing import load_policy_set
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream

STRICT = """
name: strict
input: [{id: no-secrets, type: denylist, phrases: [project zebra]}]
"""
DEFAULT = """
name: default
input: [{id: nothing, type: denylist, phrases: [never matches this phrase]}]
"""
ROUTES = """
default: default
models:
  - {match: "gpt-4*", policy: strict}
  - {match: "*-secure", policy: strict}
"""


def directory(tmp_path: Path, routes: str | None = ROUTES, **extra: str) -> Path:
    (tmp_path / "strict.yaml").write_text(STRICT)
    (tmp_path / "default.yaml").write_text(DEFAULT)
    if routes is not None:
        (tmp_path / "routes.yaml").write_text(routes)
    for name, text in extra.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_models_choose_policies_by_glob(tmp_path: Path) -> None:
    policies = load_policy_set(directory(tmp_path))
    assert sorted(policies.policies) == ["default", "strict"]
    assert policies.choose(model="gpt-4o").name == "strict"
    assert policies.choose(model="llama-secure").name == "strict"
    assert policies.choose(model="llama-3").name == "default"
    assert policies.choose(model=None).name == "default"


def test_client_header_is_ignored_unless_the_operator_allows_it(tmp_path: Path) -> None:
    closed = load_policy_set(directory(tmp_path))
    assert closed.choose(model="llama", requested="strict").name == "default"
    opened = load_policy_set(directory(tmp_path, ROUTES + "client_header: true\n"))
    assert opened.choose(model="llama", requested="strict").name == "strict"
    with pytest.raises(KeyError):
        opened.choose(model="llama", requested="nonexistent")


def test_without_routes_a_policy_named_default_is_the_default(tmp_path: Path) -> None:
    assert load_policy_set(directory(tmp_path, routes=None)).default.name == "default"
    (tmp_path / "default.yaml").unlink()
    assert load_policy_set(tmp_path).default.name == "strict"  # the only one


def problems_of(path: Path) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policy_set(path)
    return [p.located() for p in info.value.problems]


def test_routes_naming_unknown_policies_are_located(tmp_path: Path) -> None:
    routes = "default: default\nmodels:\n  - {match: x, policy: strickt}\n"
    assert problems_of(directory(tmp_path, routes)) == [
        f"{tmp_path}/routes.yaml:3:24: models[0].policy: no policy is named 'strickt' "
        "(policies: default, strict)"
    ]


def test_a_broken_policy_is_not_reported_again_as_an_unknown_route(tmp_path: Path) -> None:
    folder = directory(tmp_path)
    (folder / "strict.yaml").write_text("name: strict\ninput: [\n")  # invalid YAML
    problems = problems_of(folder)
    assert len(problems) == 1 and problems[0].startswith(f"{folder}/strict.yaml:"), problems
    assert "invalid YAML" in problems[0]


def test_duplicate_names_and_ambiguous_defaults_are_errors(tmp_path: Path) -> None:
    folder = directory(tmp_path, routes=None)
    (folder / "strict-copy.yaml").write_text(STRICT)
    assert problems_of(folder) == [
        f"{folder}/strict.yaml: name: policy name 'strict' is also used by "
        f"{folder}/strict-copy.yaml"
    ]
    (folder / "strict-copy.yaml").unlink()
    (folder / "default.yaml").write_text(DEFAULT.replace("name: default", "name: lenient"))
    assert problems_of(folder) == [
        f"{folder}: 2 policies and no routes.yaml (nor a policy named 'default') to choose "
        "between them"
    ]


def test_cases_files_are_not_policies(tmp_path: Path) -> None:
    folder = directory(
        tmp_path, **{"strict.cases.yaml": "- {stage: input, text: a, expect: allow}\n"}
    )
    assert sorted(load_policy_set(folder).policies) == ["default", "strict"]


async def post(
    http: aiohttp.ClientSession, url: str, model: str, **headers: str
) -> tuple[int, str, str]:
    body = {"model": model, "messages": [{"role": "user", "content": "about project zebra"}]}
    async with http.post(f"{url}/v1/chat/completions", json=body, headers=headers) as resp:
        reply = await resp.json()
        return resp.status, resp.headers["x-shieldgate-policy"], str(reply)


async def test_the_proxy_routes_each_request_by_its_model(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    folder = directory(tmp_path)
    proxy = await make_proxy(load_policy_set(folder), policy=str(folder))
    status, policy, reply = await post(http, proxy.url, "gpt-4o")
    assert (status, policy) == (200, "strict") and "content_filter" in reply
    assert upstream.requests == []  # blocked at input by the strict policy
    status, policy, reply = await post(http, proxy.url, "llama-3")
    assert (status, policy) == (200, "default") and "content_filter" not in reply
    assert len(upstream.requests) == 1
    # Clients cannot pick their own policy unless routes.yaml allows it.
    status, policy, _ = await post(http, proxy.url, "llama-3", **{"x-shieldgate-policy": "strict"})
    assert policy == "default"


async def test_header_routing_when_allowed(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    folder = directory(tmp_path, ROUTES + "client_header: true\n")
    proxy = await make_proxy(load_policy_set(folder), policy=str(folder))
    status, policy, _ = await post(http, proxy.url, "llama-3", **{"x-shieldgate-policy": "strict"})
    assert (status, policy) == (200, "strict")
    status, _, reply = await post(http, proxy.url, "llama-3", **{"x-shieldgate-policy": "nope"})
    assert status == 400 and "Unknown policy 'nope'" in reply
    # A long unknown name is quoted back cut short, not reflected whole.
    long_name = "n" * 5000
    status, _, reply = await post(http, proxy.url, "llama-3", **{"x-shieldgate-policy": long_name})
    assert status == 400 and "Unknown policy 'nnnn" in reply
    assert long_name[:65] not in reply and len(reply) < 1000


async def test_a_directory_reloads_as_a_whole(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    folder = directory(tmp_path)
    proxy = await make_proxy(
        load_policy_set(folder), policy=str(folder), policy_reload_interval=0.05
    )
    (folder / "routes.yaml").write_text("default: strict\n")
    for _ in range(40):
        if (await post(http, proxy.url, "llama-3"))[1] == "strict":
            break
        await asyncio.sleep(0.05)
    assert (await post(http, proxy.url, "llama-3"))[1] == "strict"
