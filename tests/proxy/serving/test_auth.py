"""Client keys and tenants (issue 6, item 1): salted hashes, 401 before anything else happens,
tenants in metrics and audit, key policies first in routing, and no client key upstream."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import openai
import pytest
import yaml

from proxy.clients.keys import KeyRing, KeysFileError, load_keys, new_key, parse_keys
from proxy.state import POLICY
from shields.routing import load_policy_set
from tests.conftest import ProxyFactory
from tests.proxy.serving.test_cli import MODULE, clean_env
from tests.support.fake_upstream import FakeUpstream

STRICT = """
name: strict
input: [{id: zebra, type: denylist, phrases: [project zebra]}]
"""
DEFAULT = """
name: default
input: [{id: bombs, type: denylist, phrases: [build a bomb]}]
"""
ROUTES = """
default: default
models: [{match: "gpt-4*", policy: strict}]
client_header: true
"""
ClientFactory = Callable[..., openai.AsyncOpenAI]
UNAUTHORIZED_BODY = {
    "type": "invalid_request_error",
    "param": None,
    "code": "invalid_api_key",
}


def policy_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "policies"
    directory.mkdir()
    (directory / "strict.yaml").write_text(STRICT)
    (directory / "default.yaml").write_text(DEFAULT)
    (directory / "routes.yaml").write_text(ROUTES)
    return directory


def keys_yaml(*entries: dict[str, str]) -> str:
    return yaml.safe_dump({"keys": list(entries)}, sort_keys=False)


def write_keys(path: Path, *entries: dict[str, str]) -> Path:
    temporary = path.with_suffix(".tmp")
    temporary.write_text(keys_yaml(*entries))
    os.replace(temporary, path)  # as editors and ConfigMap updates do
    return path


def chat_body(text: str = "hi", model: str = "m") -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def metric(text: str, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` with these label values."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((name + "{", name + " "))
        and all(f'{k}="{v}"' in line for k, v in labels.items())
    )


# --- the key format and the keys file ------------------------------------------------------


def test_a_new_key_authenticates_and_its_entry_holds_no_secret() -> None:
    key, entry = new_key("team-a", "strict")
    prefix, key_id, secret = key.split("-")
    assert (prefix, key_id, len(secret)) == ("sg", entry["id"], 64)
    assert secret not in json.dumps(entry) and key not in json.dumps(entry)
    ring = parse_keys(keys_yaml(entry).encode())
    found = ring.authenticate(key)
    assert found is not None and (found.tenant, found.policy) == ("team-a", "strict")
    # A second key of the same tenant has its own salt: equal inputs never hash alike.
    other_key, other = new_key("team-a")
    assert other["salt"] != entry["salt"] and other["sha256"] != entry["sha256"]
    assert ring.authenticate(other_key) is None


@pytest.mark.parametrize(
    "presented",
    [
        None,
        "",
        "sg-",
        "sk-proj-abc",
        "not-a-key",
        "sg-{id}",
        "sg-{id}-",
        "sg-{id}-{secret}x",
        "sg-{id}-" + "0" * 64,
        "sg-000000000000-{secret}",  # the right secret under another id
        "SG-{id}-{secret}",
        "sg-{id}-{secret}" + "0" * 300,
    ],
)
def test_anything_but_the_exact_key_is_refused(presented: str | None) -> None:
    key, entry = new_key("t")
    _, key_id, secret = key.split("-")
    ring = parse_keys(keys_yaml(entry).encode())
    if presented is not None:
        presented = presented.format(id=key_id, secret=secret)
    assert ring.authenticate(presented) is None
    assert ring.authenticate(key) is not None


def test_lookup_is_by_id_not_by_trying_every_entry() -> None:
    keys = [new_key(f"t{i}") for i in range(2000)]
    ring = parse_keys(keys_yaml(*(entry for _, entry in keys)).encode())
    assert len(ring.keys) == 2000
    started = time.perf_counter()
    for key, entry in keys[:200]:
        found = ring.authenticate(key)
        assert found is not None and found.tenant == entry["tenant"]
    # One hash per attempt: 200 lookups among 2000 keys are far below a millisecond each.
    assert time.perf_counter() - started < 0.2


def located(raw: str, policies: tuple[str, ...] | None = None) -> list[str]:
    with pytest.raises(KeysFileError) as info:
        parse_keys(raw.encode(), source="keys.yaml", policies=policies)
    return str(info.value).splitlines()


def test_keys_file_problems_name_the_file_line_and_column() -> None:
    _, entry = new_key("team-a")
    good = "keys:\n  - " + "\n    ".join(f'{k}: "{v}"' for k, v in entry.items()) + "\n"
    assert located("keys: [unclosed\n") == [
        "keys.yaml:2:1: invalid YAML: expected ',' or ']', but got '<stream end>'"
    ]
    assert located(good + "    policy: strickt\n", ("default", "strict")) == [
        "keys.yaml:6:13: keys[0].policy: no policy is named 'strickt' (policies: default, strict)"
    ]
    assert located(good + good.removeprefix("keys:\n")) == [
        f"keys.yaml:6:9: keys[1].id: duplicate key id '{entry['id']}'"
    ]
    assert located(good + "    secret: x\n") == ["keys.yaml:6:5: keys[0].secret: unknown key"]
    assert located(good.replace('tenant: "team-a"', 'tenant: "team a"')) == [
        "keys.yaml:3:13: keys[0].tenant: a tenant is 1-64 letters, digits and _ . : - "
        "(a metrics label)"
    ]
    assert located("") == [
        "keys.yaml: keys: a keys file is a mapping with a `keys:` list (may be `keys: []`)"
    ]
    assert parse_keys(b"keys: []\n").keys == {}
    assert parse_keys(good.encode(), policies=("default",)).keys[entry["id"]].tenant == "team-a"


def test_an_unreadable_keys_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KeysFileError, match="cannot read keys file"):
        load_keys(tmp_path / "missing.yaml")


# --- the proxy with a keys file ---------------------------------------------------------------


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A keys file with three keys: team-a (policy strict), team-b (no policy), team-c; it
    serves with the policies of :func:`policy_dir` (``strict`` and ``default``)."""
    made = {"a": new_key("team-a", "strict"), "b": new_key("team-b"), "c": new_key("team-c")}
    path = write_keys(tmp_path / "keys.yaml", *(entry for _, entry in made.values()))
    return path, {name: key for name, (key, _) in made.items()}


async def test_good_bad_and_missing_keys(
    tmp_path: Path,
    keys: tuple[Path, dict[str, str]],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: ClientFactory,
    http: aiohttp.ClientSession,
) -> None:
    path, key = keys
    proxy = await make_proxy(load_policy_set(policy_dir(tmp_path)), keys_file=str(path))
    good = make_client(proxy, api_key=key["b"])
    reply = await good.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content
    assert len(upstream.requests) == 1

    wrong = key["b"][:-1] + ("0" if key["b"][-1] != "0" else "1")
    for api_key in (wrong, "sk-some-openai-key"):
        with pytest.raises(openai.AuthenticationError) as info:
            await make_client(proxy, api_key=api_key).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert info.value.status_code == 401 and info.value.code == "invalid_api_key"
        assert api_key not in info.value.response.text  # what was sent is never echoed

    url = f"{proxy.url}/v1/chat/completions"
    for headers in ({}, {"Authorization": "Basic abc"}, {"x-api-key": key["b"]}):
        async with http.post(url, json=chat_body(), headers=headers) as resp:
            assert resp.status == 401
            assert resp.headers["WWW-Authenticate"].startswith("Bearer")
            body = await resp.json()
            assert {k: body["error"][k] for k in UNAUTHORIZED_BODY} == UNAUTHORIZED_BODY
            assert body["error"]["message"]
            assert resp.headers["x-request-id"]
    # Before anything else: a body that is not even JSON, or a path that does not exist, is a
    # 401 too — nothing is parsed or routed for a client without a key.
    async with http.post(url, data=b"{not json", headers={"Authorization": f"Bearer {wrong}"}) as r:
        assert r.status == 401
    async with http.get(f"{proxy.url}/v1/embeddings") as r:
        assert r.status == 401
    for path_ in ("/v1/models", "/v1/responses/resp_1"):
        async with http.get(f"{proxy.url}{path_}") as r:
            assert r.status == 401
    async with http.post(f"{proxy.url}/v1/responses", json={"model": "m", "input": "x"}) as r:
        assert r.status == 401
    assert len(upstream.requests) == 1  # none of the refused requests reached the upstream
    # The probes and the metrics stay open.
    for open_path in ("/healthz", "/readyz", "/metrics"):
        async with http.get(f"{proxy.url}{open_path}") as r:
            assert r.status == 200, open_path
    async with http.get(f"{proxy.url}/metrics") as r:
        text = await r.text()
    assert metric(text, "shieldgate_rejected_total", reason="auth") == 10
    assert metric(text, "shieldgate_requests_total", status="401", tenant="-") == 10
    assert metric(text, "shieldgate_requests_total", status="200", tenant="team-b") == 1
    assert key["b"] not in text and key["b"].split("-")[2] not in text


async def test_without_a_keys_file_nothing_changes(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    proxy = await make_proxy()
    async with http.post(f"{proxy.url}/v1/chat/completions", json=chat_body()) as resp:
        assert resp.status == 200
    async with http.get(f"{proxy.url}/metrics") as resp:
        assert metric(await resp.text(), "shieldgate_requests_total", tenant="-") == 1


async def test_tenant_is_in_metrics_audit_and_finding_logs(
    tmp_path: Path,
    keys: tuple[Path, dict[str, str]],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="shieldgate.findings")
    path, key = keys
    audit = tmp_path / "audit.jsonl"
    policies = load_policy_set(policy_dir(tmp_path))
    proxy = await make_proxy(policies, keys_file=str(path), audit_log=str(audit))
    url = f"{proxy.url}/v1/chat/completions"
    for name, text in (("b", "how to build a bomb"), ("c", "build a bomb now"), ("c", "hi")):
        headers = {"Authorization": f"Bearer {key[name]}"}
        async with http.post(url, json=chat_body(text), headers=headers) as resp:
            assert resp.status == 200
            await resp.read()
    async with http.get(f"{proxy.url}/metrics") as resp:
        text = await resp.text()
    assert metric(text, "shieldgate_requests_total", tenant="team-b") == 1
    assert metric(text, "shieldgate_requests_total", tenant="team-c") == 2
    await proxy.close()  # flushes the audit trail
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["tenant"], r["shield"], r["action"]) for r in records] == [
        ("team-b", "bombs", "block"),
        ("team-c", "bombs", "block"),
    ]
    raw = audit.read_text()
    assert not any(k in raw for k in key.values())
    findings = [r for r in caplog.records if r.name == "shieldgate.findings"]
    assert [getattr(r, "tenant", None) for r in findings] == ["team-b", "team-c"]


async def test_a_keys_policy_comes_before_header_model_and_default(
    tmp_path: Path,
    keys: tuple[Path, dict[str, str]],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    path, key = keys
    directory = policy_dir(tmp_path)
    proxy = await make_proxy(load_policy_set(directory), policy=str(directory), keys_file=str(path))
    url = f"{proxy.url}/v1/chat/completions"

    async def policy_of(name: str, model: str = "m", header: str | None = None) -> str:
        headers = {"Authorization": f"Bearer {key[name]}"}
        if header is not None:
            headers["x-shieldgate-policy"] = header
        async with http.post(url, json=chat_body("hi", model), headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            return resp.headers["x-shieldgate-policy"]

    assert await policy_of("a") == "strict"  # the key's policy
    assert await policy_of("a", header="default") == "strict"  # beats the client header
    assert await policy_of("a", model="gpt-4o", header="nope") == "strict"  # and everything
    assert await policy_of("b") == "default"  # no key policy: the default
    assert await policy_of("b", model="gpt-4o") == "strict"  # ... or the model route
    assert await policy_of("b", model="gpt-4o", header="default") == "default"  # header allowed
    # The key's policy is the one that judges: team-a cannot say "project zebra".
    headers = {"Authorization": f"Bearer {key['a']}"}
    async with http.post(url, json=chat_body("project zebra"), headers=headers) as resp:
        assert resp.headers["x-shieldgate-blocked"] == "input"


@pytest.mark.parametrize("upstream_key", [None, "sk-proxy-own"])
async def test_the_client_key_never_reaches_the_upstream(
    upstream_key: str | None,
    tmp_path: Path,
    keys: tuple[Path, dict[str, str]],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: ClientFactory,
    http: aiohttp.ClientSession,
) -> None:
    path, key = keys
    policies = load_policy_set(policy_dir(tmp_path))
    proxy = await make_proxy(policies, keys_file=str(path), upstream_api_key=upstream_key)
    client = make_client(proxy, api_key=key["b"])
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    await client.models.list()
    headers = {"Authorization": f"Bearer {key['b']}"}
    stream = {**chat_body(), "stream": True}
    async with http.post(f"{proxy.url}/v1/chat/completions", json=stream, headers=headers) as r:
        await r.read()
    async with http.post(
        f"{proxy.url}/v1/responses", json={"model": "m", "input": "hi"}, headers=headers
    ) as r:
        await r.read()
    assert [r.path for r in upstream.requests] == [
        "/v1/chat/completions",
        "/v1/models",
        "/v1/chat/completions",
        "/v1/chat/completions",
    ]
    secret = key["b"].split("-")[2]
    for request in upstream.requests:
        seen = " ".join(f"{k}: {v}" for k, v in request.headers.items())
        assert secret not in seen and secret not in request.body.decode()
        expected = f"Bearer {upstream_key}" if upstream_key else None
        assert request.headers.get("Authorization") == expected


async def test_keys_reload_with_the_policies_or_not_at_all(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    old_key, old = new_key("old")
    new_key_, new = new_key("new")
    path = write_keys(tmp_path / "keys.yaml", old)
    proxy = await make_proxy(keys_file=str(path), policy_reload_interval=0.1)
    url = f"{proxy.url}/v1/chat/completions"

    async def status(key: str) -> int:
        headers = {"Authorization": f"Bearer {key}"}
        async with http.post(url, json=chat_body(), headers=headers) as resp:
            return resp.status

    async def readyz() -> dict[str, object]:
        # With a key in force: the details of a failed reload are for clients only.
        headers = {"Authorization": f"Bearer {new_key_}"}
        async with http.get(f"{proxy.url}/readyz", headers=headers) as resp:
            policy: dict[str, object] = (await resp.json())["policy"]
            return policy

    async def eventually(predicate: Callable[[], Awaitable[bool]]) -> None:
        deadline = time.monotonic() + 2.0
        while not await predicate():
            assert time.monotonic() < deadline, "not reloaded within 2 seconds"
            await asyncio.sleep(0.05)

    assert (await status(old_key), await status(new_key_)) == (200, 401)
    write_keys(path, new)  # rotate: the new key in, the old one out

    async def rotated() -> bool:
        return (await status(old_key), await status(new_key_)) == (401, 200)

    await eventually(rotated)
    # A key naming a policy that is not loaded is rejected: the last good keys stay in force.
    _, bad = new_key("bad", "no-such-policy")
    write_keys(path, old, bad)

    async def stale() -> bool:
        return (await readyz())["stale"] is True

    await eventually(stale)
    error = str((await readyz())["error"])
    assert f"{path}:" in error and "keys[1].policy: no policy is named 'no-such-policy'" in error
    assert (await status(old_key), await status(new_key_)) == (401, 200)
    path.write_text("keys: [\n")  # broken YAML: rejected the same way
    await asyncio.sleep(0.3)
    assert await status(new_key_) == 200
    write_keys(path, old)

    async def recovered() -> bool:
        return (await readyz())["stale"] is False and await status(old_key) == 200

    await eventually(recovered)


async def test_a_policy_reload_that_orphans_a_key_is_rejected(
    tmp_path: Path,
    keys: tuple[Path, dict[str, str]],
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
) -> None:
    path, key = keys
    directory = policy_dir(tmp_path)
    proxy = await make_proxy(load_policy_set(directory), policy=str(directory), keys_file=str(path))
    (directory / "strict.yaml").unlink()  # team-a's key names it
    (directory / "routes.yaml").write_text("default: default\n")
    source = proxy.app[POLICY]
    assert await source.reload() is False
    assert source.stale and "no policy is named 'strict'" in str(source.error)
    headers = {"Authorization": f"Bearer {key['a']}"}
    async with http.post(
        f"{proxy.url}/v1/chat/completions", json=chat_body(), headers=headers
    ) as r:
        assert r.headers["x-shieldgate-policy"] == "strict"


async def test_a_bad_keys_file_stops_the_app_from_starting(
    tmp_path: Path, make_proxy: ProxyFactory
) -> None:
    _, entry = new_key("t", "strickt")
    path = write_keys(tmp_path / "keys.yaml", entry)
    with pytest.raises(KeysFileError, match=r"keys\.yaml:\d+:\d+: keys\[0\]\.policy"):
        await make_proxy(keys_file=str(path))


# --- the command line -------------------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args],
        capture_output=True,
        text=True,
        env=clean_env(**(env or {})),
        timeout=60,
        check=False,
    )


def test_keys_new_prints_an_entry_and_a_key_that_authenticate(tmp_path: Path) -> None:
    done = run_cli("keys", "new", "--tenant", "team-a", "--policy", "strict")
    assert done.returncode == 0, done.stderr
    key = done.stderr.strip().splitlines()[-1]
    assert key.startswith("sg-") and key not in done.stdout
    # The entry goes under `keys:` as it is: `shieldgate keys new ... >> keys.yaml`.
    path = tmp_path / "keys.yaml"
    path.write_text("keys:\n" + done.stdout)
    ring: KeyRing = load_keys(path, ("strict",))
    found = ring.authenticate(key)
    assert found is not None and (found.tenant, found.policy) == ("team-a", "strict")
    assert key.split("-")[2] not in path.read_text()


def test_keys_new_refuses_a_tenant_that_is_no_label() -> None:
    done = run_cli("keys", "new", "--tenant", "team a")
    assert done.returncode == 2 and "invalid tenant" in done.stderr and not done.stdout


async def test_keys_new_output_serves_as_is(
    tmp_path: Path, upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: ClientFactory
) -> None:
    done = await asyncio.to_thread(run_cli, "keys", "new", "--tenant", "ops")
    path = tmp_path / "keys.yaml"
    path.write_text("keys:\n" + done.stdout)
    proxy = await make_proxy(keys_file=str(path))
    client = make_client(proxy, api_key=done.stderr.strip().splitlines()[-1])
    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].message.content


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("keys: [\n", r"keys\.yaml:2:1: invalid YAML"),
        (None, r"keys\.yaml:\d+:\d+: keys\[0\]\.policy: no policy is named 'strickt'"),
        ("missing", r"keys\.yaml: cannot read keys file"),
    ],
)
def test_serve_with_a_bad_keys_file_exits_2(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "keys.yaml"
    if content is None:
        write_keys(path, new_key("t", "strickt")[1])
    elif content != "missing":
        path.write_text(content)
    done = run_cli("serve", "--port", "0", env={"SHIELDGATE_KEYS_FILE": str(path)})
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert "shieldgate: invalid keys file:" in done.stderr
    assert re.search(expected, done.stderr), done.stderr
