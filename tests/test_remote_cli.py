"""``shieldgate test`` and ``scan`` with remote shields: offline unless ``--remote``.

The commands run as real subprocesses (they own their event loop); the judge is a fake of the
outside world in this test's loop.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fake_judges import Answer, FakeJudges

MODULE = (sys.executable, "-m", "proxy")


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
