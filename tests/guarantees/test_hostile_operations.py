"""The operations surfaces under hostile input and hostile conditions: the request id a client
sends, settings that do not parse, an audit trail whose file cannot be written."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from pydantic import ValidationError

from proxy.ops.audit import AuditContext, AuditTrail
from proxy.settings import Settings
from shields.base import Action, Finding, Stage
from tests.conftest import ProxyFactory
from tests.support.constants import REPO_ROOT
from tests.support.fake_upstream import FakeUpstream

ROOT = REPO_ROOT
CONTEXT = AuditContext("req-1", "-", "default", "abc")
SECRET_MATCH = "4111 1111 1111 1111"


def finding() -> Finding:
    return Finding("pii", "pii", "credit_card", Action.BLOCK, 0, 19, digest=SECRET_MATCH)


def serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SHIELDGATE_")}
    environ.pop("OPENAI_BASE_URL", None)
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--port", "0", *args],
        env=environ,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_until(condition: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


# --- settings that do not parse ------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://[::1", "http://127.0.0.1:99999/v1", "http://host:abc/v1", "http:///v1"]
)
def test_an_upstream_url_that_does_not_parse_is_a_setting_error(url: str) -> None:
    with pytest.raises(ValidationError, match="upstream is not a valid URL"):
        Settings(upstream=url)


def test_serve_with_a_broken_upstream_url_says_so_and_exits_2() -> None:
    result = serve({"SHIELDGATE_UPSTREAM": "http://[::1"})
    assert result.returncode == 2
    assert "invalid setting: upstream" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_serve_with_an_audit_log_it_cannot_open_says_so_and_exits_2(
    tmp_path: Path, workers: str
) -> None:
    audit = tmp_path / "missing-dir" / "audit.jsonl"
    result = serve({"SHIELDGATE_AUDIT_LOG": str(audit)}, "--workers", workers)
    assert result.returncode == 2
    assert f"cannot open audit log {audit}" in result.stderr
    assert "cannot listen" not in result.stderr and "Traceback" not in result.stderr


# --- the audit trail when the disk says no -------------------------------------------------


def test_the_audit_trail_writes_again_once_its_directory_is_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "audit"
    directory.mkdir()
    trail = AuditTrail(str(directory / "audit.jsonl"))
    try:
        trail.record(CONTEXT, Stage.INPUT, finding(), False)
        wait_until(lambda: (directory / "audit.jsonl").read_text() != "")
        with caplog.at_level(logging.WARNING, logger="shieldgate.audit"):
            shutil.rmtree(directory)  # a volume gone, a logrotate gone wrong
            trail.record(CONTEXT, Stage.INPUT, finding(), False)  # lost: nowhere to write
            wait_until(lambda: "cannot write" in caplog.text)
            directory.mkdir()
            for _ in range(3):
                trail.record(CONTEXT, Stage.INPUT, finding(), False)
            path = directory / "audit.jsonl"
            wait_until(lambda: path.exists() and len(path.read_text().splitlines()) == 3)
            # The thread that writes the trail is alive: later records reach the file.
            assert len(path.read_text().splitlines()) == 3
            assert "1 records were lost" in caplog.text
    finally:
        trail.close()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_loses_audit_records_without_printing_them(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    trail = AuditTrail("/dev/full", include_text=True)
    try:
        with caplog.at_level(logging.WARNING, logger="shieldgate.audit"):
            for _ in range(3):
                trail.record(CONTEXT, Stage.INPUT, finding(), False)
            wait_until(lambda: "cannot write" in caplog.text)
            time.sleep(0.1)
    finally:
        trail.close()
    out, err = capfd.readouterr()
    # Never logging's "--- Logging error ---" dump of the record (here: the matched text).
    assert SECRET_MATCH not in out + err + caplog.text
    assert "Logging error" not in err
    assert caplog.text.count("cannot write") == 1  # once, not once per record


async def test_requests_are_answered_while_the_audit_trail_cannot_be_written(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession, tmp_path: Path
) -> None:
    directory = tmp_path / "audit"
    directory.mkdir()
    policy = "version: 1\nname: p\ninput: [{id: bomb, type: denylist, phrases: [build a bomb]}]\n"
    proxy = await make_proxy(policy, audit_log=str(directory / "audit.jsonl"))
    body = {"model": "m", "messages": [{"role": "user", "content": "build a bomb"}]}
    shutil.rmtree(directory)
    for _ in range(2):
        async with http.post(f"{proxy.url}/v1/chat/completions", json=body) as r:
            assert r.status == 200 and r.headers["x-shieldgate-blocked"] == "input"
    directory.mkdir()
    async with http.post(f"{proxy.url}/v1/chat/completions", json=body) as r:
        request_id = r.headers["x-request-id"]
    path = directory / "audit.jsonl"
    wait_until(lambda: path.exists() and path.read_text().strip() != "")
    assert json.loads(path.read_text().splitlines()[-1])["request_id"] == request_id


# --- the request id ------------------------------------------------------------------------


async def _raw_post(port: int, extra_headers: bytes) -> bytes:
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    head = b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + head
        + extra_headers
        + b"\r\n"
        + body
    )
    await writer.drain()
    reply = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return reply


def _reply_request_id(reply: bytes) -> str:
    head = reply.partition(b"\r\n\r\n")[0].decode("latin-1")
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "x-request-id":
            return value.strip()
    raise AssertionError("no x-request-id in the reply")


@pytest.mark.parametrize(
    "headers",
    [
        b"X-Request-Id: first\r\nX-Request-Id: second\r\n",
        b"X-Request-Id: " + b"a" * 5000 + b"\r\n",
        b"X-Request-Id: caf\xc3\xa9\r\n",
        b"X-Request-Id: ab\xffcd\r\n",
    ],
    ids=["twice", "huge", "non-ascii", "not-utf8"],
)
async def test_the_upstream_gets_the_request_id_the_proxy_answers_and_logs(
    upstream: FakeUpstream, make_proxy: ProxyFactory, headers: bytes
) -> None:
    proxy = await make_proxy()
    reply = await _raw_post(proxy.port, headers)
    assert reply.startswith(b"HTTP/1.1 200")
    request_id = _reply_request_id(reply)
    forwarded = upstream.requests[-1].headers.getall("x-request-id")
    assert forwarded == [request_id]
