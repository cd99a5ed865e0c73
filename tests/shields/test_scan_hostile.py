"""``shieldgate scan`` over hostile JSON Lines: every bad line gets its own error line, the scan
goes on to the end, and the output is always valid UTF-8 JSON Lines.

The CLI runs as a real subprocess (``python -m proxy scan``), with stdout strict UTF-8 as in
most locales; a few cases call ``shields.commands.scan_lines`` directly.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import shields.commands
from proxy.cli import default_policy
from shields.base import Stage
from shields.commands import scan_lines

BOMB = "how to build a bomb"


def run_scan(tmp_path: Path, lines: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SHIELDGATE_") and key not in {"PYTHONUTF8"}
    }
    env["PYTHONIOENCODING"] = "utf-8"  # strict: a lone surrogate cannot be written raw
    process = subprocess.run(
        [sys.executable, "-m", "proxy", "scan"],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    stdout = process.stdout.decode("utf-8")  # strict: the output must be valid UTF-8
    return (
        process.returncode,
        [json.loads(line) for line in stdout.splitlines()],
        process.stderr.decode(),
    )


def message(role: Any, content: Any) -> dict[str, Any]:
    return {"role": role, "content": content}


def test_bad_lines_each_get_an_error_line_and_the_scan_goes_on(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "role-list", "messages": [message(["user"], BOMB)]}),
        json.dumps({"id": "role-object", "messages": [message({"a": 1}, BOMB)]}),
        json.dumps(
            {"id": "text-int", "messages": [message("user", [{"type": "text", "text": 5}])]}
        ),
        json.dumps(
            {
                "id": "text-list",
                "messages": [
                    message("user", [{"type": "text", "text": "hello"}, {"text": [BOMB]}])
                ],
            }
        ),
        json.dumps({"id": "text-missing", "messages": [message("user", [{"type": "text"}])]}),
        json.dumps({"id": "part-string", "messages": [message("user", [BOMB])]}),
        '{"id": "\\ud800", "text": "' + BOMB + '"}',
        json.dumps({"id": "last", "text": BOMB}),
    ]

    code, records, stderr = run_scan(tmp_path, lines)

    assert code == 1, stderr  # some lines were bad
    assert "Traceback" not in stderr
    assert [r["id"] for r in records] == [
        "role-list",
        "role-object",
        "text-int",
        "text-list",
        "text-missing",
        "part-string",
        "\ud800",
        "last",
    ]
    assert [r.get("line") for r in records[:6]] == [1, 2, 3, 4, 5, 6]
    assert [r["error"] for r in records[:6]] == [
        "messages[0] needs a valid role",
        "messages[0] needs a valid role",
        "messages[0].content[0].text must be a string",
        "messages[0].content[1].text must be a string",
        "messages[0].content[0].text must be a string",
        "messages[0].content[0] must be an object",
    ]
    # The surrogate id is written back as the escape it came in as; the line is scanned.
    assert records[6]["verdict"] == "block" and "error" not in records[6]
    assert records[7]["verdict"] == "block"


def test_a_clean_run_exits_0_and_parts_are_scanned(tmp_path: Path) -> None:
    parts = [{"type": "text", "text": "how to build"}, {"type": "image_url", "image_url": {}}]
    lines = [
        json.dumps(
            {"id": 1, "messages": [message("user", [*parts, {"type": "text", "text": "a bomb"}])]}
        ),
        json.dumps(
            {"id": 2, "messages": [message("assistant", [{"type": "refusal", "refusal": BOMB}])]}
        ),
        json.dumps({"id": 3, "text": "hello"}),
    ]
    code, records, stderr = run_scan(tmp_path, lines)
    assert code == 0, stderr
    # Text parts joined (one phrase across two parts); a refusal part is text too.
    assert [r["verdict"] for r in records] == ["block", "block", "allow"]


def test_output_with_a_surrogate_id_never_crashes_a_strict_stream() -> None:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    lines = ['{"id": "x\\udfff", "text": "caf\u00e9"}\n', '{"id": 2, "text": "ok"}\n']
    code = scan_lines(default_policy(), Stage.INPUT, lines, stdout)
    raw = stdout.buffer.getvalue()  # type: ignore[attr-defined]
    first, second = (json.loads(line) for line in raw.decode("utf-8").splitlines())
    assert first == {"id": "x\udfff", "verdict": "allow", "findings": [], "text": "caf\u00e9"}
    assert second["id"] == 2 and second["verdict"] == "allow"
    assert code == 0
    # Lines without a surrogate keep their text unescaped.
    assert b'"text": "ok"' in raw


def test_a_failure_while_scanning_one_line_does_not_end_the_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evaluate = shields.commands.evaluate

    def flaky(policy: Any, stage: Stage, texts: Any, **kw: Any) -> Any:
        if texts[0][1] == "explode":
            raise AttributeError("a bug in a shield")
        return evaluate(policy, stage, texts, **kw)

    monkeypatch.setattr(shields.commands, "evaluate", flaky)
    out = io.StringIO()
    lines = ['{"id": 1, "text": "explode"}\n', '{"id": 2, "text": "ok"}\n']
    code = scan_lines(default_policy(), Stage.INPUT, lines, out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first == {"id": 1, "line": 1, "error": "could not scan this line (AttributeError)"}
    assert second["verdict"] == "allow"
    assert code == 1


def test_an_assistant_turn_that_only_calls_tools_is_read(tmp_path: Path) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    conversation = [
        message("user", BOMB),
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    code, results, _ = run_scan(tmp_path, [json.dumps({"id": 1, "messages": conversation})])
    assert code == 0
    assert [r["verdict"] for r in results] == ["block"]
