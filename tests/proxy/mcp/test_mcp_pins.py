"""The pins file (``proxy.mcp.pins``): read strictly with errors naming the file and key,
written by ``render_pins`` so that any description — line breaks, characters YAML refuses —
stays a comment and the file loads back; and ``shieldgate serve`` refusing a broken one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proxy.mcp.fingerprints import server_print
from proxy.mcp.pins import PinsFileError, load_pins, pins_file_problem, render_pins
from tests.proxy.serving.test_cli import clean_env

URL = "http://127.0.0.1:9000/mcp"
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def listing(*descriptions: str | None) -> list[dict[str, Any]]:
    return [
        {"name": f"tool_{i}", "description": text, "input_schema": SCHEMA, "annotations": None}
        for i, text in enumerate(descriptions)
    ]


def written(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_rendered_file_loads_back_with_the_servers_fingerprints(tmp_path: Path) -> None:
    tools = listing("Finds things.", None)
    text = render_pins(URL, server_print(tools), tools)
    pins = load_pins(written(tmp_path / "pins.yaml", text))
    assert pins.for_url(URL) == server_print(tools)
    assert pins.for_url("http://127.0.0.1:9001/mcp") is None
    assert '# description: "Finds things."' in text
    assert "# description: null" in text


@pytest.mark.parametrize(
    "hostile",
    [
        "line one\nservers: {}",
        "carriage\rreturn",
        "next\x85line",
        "separator\u2028and\u2029paragraph",
        "nul \x00 and escape \x1b[31m",
        '"quoted" # not a comment ... ---',
        "lone \ud800 surrogate",
    ],
)
def test_no_description_escapes_its_comment(tmp_path: Path, hostile: str) -> None:
    tools = listing(hostile, "plain")
    text = render_pins(URL, server_print(tools), tools)
    # The comment is one line, and the file is the pins of exactly these tools.
    assert sum(line.lstrip().startswith("# description:") for line in text.splitlines()) == 2
    assert load_pins(written(tmp_path / "pins.yaml", text)).for_url(URL) == server_print(tools)


def test_keys_are_matched_by_the_normalized_url(tmp_path: Path) -> None:
    tools = listing("x")
    text = render_pins("HTTP://127.0.0.1:9000/mcp", server_print(tools), tools)
    assert load_pins(written(tmp_path / "pins.yaml", text)).for_url(URL) is not None


DIGEST = "a" * 64


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\nservers: [", "invalid YAML"),
        ("servers: {}\n", "version: Field required"),
        ("version: 2\nservers: {}\n", "version"),
        (f"version: 1\nservers: {{{URL}: {{tools: {{}}, extra: 1}}}}\n", "extra"),
        (f"version: 1\nservers: {{{URL}: {{tools: {{a: {{sha256: abc}}}}}}}}\n", "sha256"),
        (
            f"version: 1\nservers:\n  {URL}:\n    tools:\n      a:\n"
            f"        sha256: {DIGEST}\n        fields: {{description: x}}\n",
            "fields.description",
        ),
        ("version: 1\nservers: {'ftp://h/mcp': {tools: {}}}\n", "ftp://h/mcp: the URL"),
        (
            "version: 1\nservers: {'http://u@h/mcp': {tools: {}}}\n",
            "user name or password",
        ),
        (
            f"version: 1\nservers: {{'{URL}': {{tools: {{}}}}, "
            "'HTTP://127.0.0.1:9000/mcp': {tools: {}}}\n",
            "a second entry",
        ),
        (
            f"version: 1\nservers:\n  {URL}:\n    sha256: {DIGEST}\n"
            f"    tools: {{a: {{sha256: {DIGEST}}}}}\n",
            "not the fingerprint of the tools pinned",
        ),
    ],
)
def test_a_broken_file_is_an_error_naming_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = written(tmp_path / "pins.yaml", text)
    with pytest.raises(PinsFileError) as caught:
        load_pins(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    problem = pins_file_problem(str(tmp_path / "absent.yaml"))
    assert problem is not None and "cannot read pins file" in problem


def test_a_hand_pinned_tool_needs_only_its_fingerprint(tmp_path: Path) -> None:
    tools = listing("x")
    fingerprint = server_print(tools).tools["tool_0"].fingerprint
    path = written(
        tmp_path / "pins.yaml",
        f"version: 1\nservers:\n  {URL}:\n    tools:\n      tool_0: {{sha256: {fingerprint}}}\n",
    )
    pinned = load_pins(path).for_url(URL)
    assert pinned is not None and pinned.tools["tool_0"].fingerprint == fingerprint


def test_serve_refuses_a_broken_pins_file(tmp_path: Path) -> None:
    path = written(tmp_path / "pins.yaml", "version: 1\nservers: {x: 1}\n")
    done = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(
            SHIELDGATE_MCP_PINS_FILE=str(path),
            SHIELDGATE_RESPONSES_DB=str(tmp_path / "r.sqlite3"),
        ),
    )
    assert done.returncode == 2, done.stderr
    assert "invalid MCP pins file" in done.stderr
    assert str(path) in done.stderr
