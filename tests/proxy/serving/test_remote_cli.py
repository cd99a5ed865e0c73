"""``shieldgate test`` and ``scan`` with remote shields: offline unless ``--remote``.

The commands run as real subprocesses (they own their event loop); the judge is a fake of the
outside world in this test's loop.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from tests.support.constants import MODULE
from tests.support.fake_judges import Answer, FakeJudges


@pytest.fixture
async def judges() -> AsyncIterator[FakeJudges]:
    async with FakeJudges() as fake:
        yield fake


def write_policy(tmp_path: Path, judges: FakeJudges) -> Path:
    path = tmp_path / "judged.yaml"
    path.write_text(
        f"""
version: 1
name: judged
input:
  - {{id: words, type: denylist, phrases: [build a bomb]}}
  - {{id: guard, type: llm_judge, base_url: {judges.base_url}, model: g, timeout: 5}}
cases:
  - {{name: local block, stage: input, text: "how to build a bomb", expect: block, shield: words}}
  - {{name: judge flags threats, stage: input, text: "DANGER please", expect: block, shield: guard}}
  - {{name: plain question, stage: input, text: "what is 2+2?", expect: allow}}
"""
    )
    return path


def danger_judge(body: Any) -> Answer:
    return Answer(text="unsafe\nS1" if "DANGER" in body["messages"][-1]["content"] else "safe")


async def run(*args: str, stdin: bytes = b"") -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *MODULE,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_policy_tests_skip_remote_cases_offline(tmp_path, judges) -> None:
    code, out = await run("test", str(write_policy(tmp_path, judges)))
    assert code == 0, out
    assert "SKIP" in out and "remote shield 'guard' not called (use --remote)" in out
    assert out.strip().endswith("2 passed, 0 failed, 1 skipped")
    assert judges.calls == []


async def test_policy_tests_call_the_judge_with_remote(tmp_path, judges) -> None:
    judges.judge = danger_judge
    code, out = await run("test", "--remote", str(write_policy(tmp_path, judges)))
    assert code == 0, out
    assert out.strip().endswith("3 passed, 0 failed")
    # The local block needed no call; the other two cases asked the judge once each.
    assert len(judges.calls_to("judge")) == 2


async def test_a_wrong_judge_fails_the_remote_case(tmp_path, judges) -> None:
    judges.judge = lambda body: Answer(text="safe")
    code, out = await run("test", "--remote", str(write_policy(tmp_path, judges)))
    assert code == 1
    assert "FAIL" in out and "expected block, got allow" in out


async def test_scan_lists_skipped_remote_shields_or_calls_them(tmp_path, judges) -> None:
    judges.judge = danger_judge
    policy = str(write_policy(tmp_path, judges))
    lines = b'{"id": 1, "text": "DANGER please"}\n{"id": 2, "text": "hello"}\n'
    code, out = await run("scan", "--policy", policy, stdin=lines)
    assert code == 0
    offline = [json.loads(line) for line in out.splitlines()]
    assert [r["verdict"] for r in offline] == ["allow", "allow"]
    assert offline[0]["skipped"] == ["guard"]
    code, out = await run("scan", "--policy", policy, "--remote", stdin=lines)
    assert code == 0
    online = [json.loads(line) for line in out.splitlines()]
    assert [r["verdict"] for r in online] == ["block", "allow"]
    assert online[0]["findings"][0]["shield"] == "guard"
    assert online[0]["findings"][0]["label"] == "S1"
    assert "skipped" not in online[0]


def free_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def judged_policy(tmp_path: Path, base_url: str, cases: str) -> Path:
    path = tmp_path / "judged.yaml"
    path.write_text(
        f"""
version: 1
name: judged
input:
  - {{id: words, type: denylist, phrases: [build a bomb]}}
  - {{id: guard, type: llm_judge, base_url: {base_url}, model: g, timeout: 5, retries: 0}}
cases:
{cases}"""
    )
    return path


async def test_an_unreachable_judge_is_an_error_not_a_pass(tmp_path: Path) -> None:
    # Under on_error: block the failure blocks: "expect: block" must not pass on it.
    policy = str(write_policy_at(tmp_path, f"http://127.0.0.1:{free_port()}/v1"))
    code, out = await run("test", "--remote", policy)
    assert code == 1, out
    # The report's lines (stderr, merged in, has the shield's own log line).
    lines = [line for line in out.splitlines() if not line.startswith("shield guard ")]
    assert "PASS" in lines[0] and "local block" in lines[0]  # no judge needed
    assert lines[1].startswith("ERROR ") and "judge flags threats" in lines[1]
    assert "remote shield 'guard' failed: connect" in lines[2]
    assert any(line.startswith("ERROR ") and "plain question" in line for line in lines)
    assert "PASS" not in out.split("judge flags threats")[1]
    assert out.strip().endswith("1 passed, 0 failed, 2 errors")
    # Offline nothing changes: the judge is not asked, its case is skipped.
    code, out = await run("test", policy)
    assert code == 0, out
    assert out.strip().endswith("2 passed, 0 failed, 1 skipped")


def write_policy_at(tmp_path: Path, base_url: str) -> Path:
    return judged_policy(
        tmp_path,
        base_url,
        """  - {name: local block, stage: input, text: "how to build a bomb", expect: block}
  - {name: judge flags threats, stage: input, text: "DANGER", expect: block, shield: guard}
  - {name: plain question, stage: input, text: "what is 2+2?", expect: allow}
""",
    )


async def test_a_case_may_expect_the_judge_to_fail(tmp_path: Path, judges: FakeJudges) -> None:
    cases = """  - {name: judge down blocks, stage: input, text: "hello", expect: block,
     shield: guard, expect_error: true}
"""
    down = judged_policy(tmp_path, f"http://127.0.0.1:{free_port()}/v1", cases)
    junit = tmp_path / "report.xml"
    code, out = await run("test", "--remote", "--junit", str(junit), str(down))
    assert code == 0, out
    assert re.search("^PASS .*judge down blocks$", out, re.M), out
    assert out.strip().endswith("1 passed, 0 failed")
    # A judge that answers fails the case: the failure it expects did not happen.
    judges.judge = lambda body: Answer(text="safe")
    (tmp_path / "up").mkdir()
    up = judged_policy(tmp_path / "up", judges.base_url, cases)
    code, out = await run("test", "--remote", "--junit", str(junit), str(up))
    assert code == 1, out
    assert "FAIL" in out and "expected remote shield 'guard' to fail, but it answered" in out
    # Offline the case needs the network like any remote case: skipped.
    code, out = await run("test", "--allow-empty", str(down))
    assert code == 0 and "SKIP" in out, out


async def test_errors_are_junit_errors(tmp_path: Path) -> None:
    policy = write_policy_at(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    junit = tmp_path / "report.xml"
    code, _ = await run("test", "--remote", "--junit", str(junit), str(policy))
    assert code == 1
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("2", "0")
    errors = [c.get("name") for c in suite.iter("testcase") if c.find("error") is not None]
    assert errors == ["judge flags threats", "plain question"]


async def test_expect_error_is_checked_like_every_case_key(tmp_path: Path) -> None:
    path = tmp_path / "local.yaml"
    path.write_text(
        """version: 1
name: local
input:
  - {id: words, type: denylist, phrases: [build a bomb]}
cases:
  - {stage: input, text: "hi", expect: allow, expect_error: true}
"""
    )
    code, out = await run("check", str(path))
    assert code == 1
    assert "cases[0].expect_error: no input shield is a remote one" in out
    path.write_text(path.read_text().replace("expect_error: true", "expect_error: maybe"))
    code, out = await run("check", str(path))
    assert code == 1 and "cases[0].expect_error" in out and "bool" in out
