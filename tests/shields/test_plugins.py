"""Shield plugins: installed packages whose ``shieldgate.shields`` entry points add shield types.

The packages under tests/support/plugins/ are installed for real, by pip, each into a folder of its
own
(never into the venv), and used by real ``shieldgate`` processes that have the folders a test
names on PYTHONPATH: the policy model is built once per process, from the plugins installed
when it starts. ``tickets`` works; the others are broken in the ways a plugin can be.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shields.base import Finding
from shields.scan import TextScan, check_text
from tests.support.constants import MODULE, REPO_ROOT
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    json_bytes,
    text_stream,
)

PLUGINS = REPO_ROOT / "tests" / "support" / "plugins"

TICKETS = "shieldgate-tickets 0.1.0 (entry point tickets = shieldgate_tickets:SHIELD_TYPE)"
TWIN = "shieldgate-tickets-twin 0.1.0 (entry point tickets = shieldgate_tickets_twin:SHIELD_TYPE)"
BROKEN = "shieldgate-broken 0.1.0 (entry point broken = shieldgate_broken:SHIELD_TYPE)"
MISFITS = "shieldgate-misfits 0.1.0 (entry point {} = {})"

POLICY = """\
name: tickets
input:
  - {id: tickets-in, type: tickets, action: redact, projects: [OPS, SEC]}
output:
  - {id: internal, type: tickets, action: redact, projects: [OPS]}
  - {id: security, type: tickets, projects: [SEC], max_digits: 4}
cases:
  - {stage: input, text: "see OPS-1234", expect: redact, shield: tickets-in,
     redacted: "see [TICKET]"}
  - {stage: output, text: "fixed with SEC-77.", expect: block, shield: security}
  - {stage: output, text: "OPS-1234567 and SEC-12345 are too long", expect: allow}
"""
BUILTIN_POLICY = "name: plain\ninput:\n  - {id: words, type: denylist, words: [bomb]}\n"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each plugin package, installed by pip into a target folder of its own."""
    base = tmp_path_factory.mktemp("plugins")
    running = {}
    for source in sorted(path for path in PLUGINS.iterdir() if path.is_dir()):
        # Built from a copy: a build leaves build/ and *.egg-info beside the sources.
        copy = base / "sources" / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "build"))
        target = base / source.name
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        process = subprocess.Popen(
            [*command, "--target", str(target), str(copy)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        running[source.name] = (target, process)
    for name, (_, process) in running.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, (
            f"pip cannot install tests/support/plugins/{name}:\n{err.decode()}"
        )
    return {name: target for name, (target, _) in running.items()}


def plugin_env(installed: dict[str, Path], plugins: Sequence[str]) -> dict[str, str]:
    """The environment of a shieldgate process with these plugins installed, and nothing of
    the test's own environment that would steer it."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SHIELDGATE_") and key not in {"OPENAI_BASE_URL", "PYTHONPATH"}
    }
    env["PYTHONPATH"] = os.pathsep.join(str(installed[name]) for name in plugins)
    env["PYTHONUTF8"] = "1"
    return env


def shieldgate(
    installed: dict[str, Path],
    plugins: Sequence[str],
    *args: str,
    stdin: str = "",
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MODULE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=plugin_env(installed, plugins),
        timeout=timeout,
    )


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- a working plugin ------------------------------------------------------------------------


def test_scan_applies_the_plugin_shield(installed: dict[str, Path], tmp_path: Path) -> None:
    policy = write(tmp_path / "tickets.yaml", POLICY)
    lines = [
        {"id": 1, "text": "see OPS-1234 and sec-77."},
        {"id": 2, "text": "OPS-1234567 is too long to be one"},
        {"id": 3, "text": "ＯＰＳ－１２ in full-width forms"},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = shieldgate(installed, ["tickets"], "scan", "--policy", str(policy), stdin=stdin)
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["id"], r["verdict"], r["text"]) for r in results] == [
        (1, "redact", "see [TICKET] and [TICKET]."),
        (2, "allow", "OPS-1234567 is too long to be one"),
        (3, "redact", "[TICKET] in full-width forms"),
    ]
    assert {(f["shield"], f["type"], f["label"]) for f in results[0]["findings"]} == {
        ("tickets-in", "tickets", "ticket")
    }

    stdin = json.dumps({"text": "fixed with SEC-77, see OPS-9."}) + "\n"
    done = shieldgate(
        installed, ["tickets"], "scan", "--policy", str(policy), "--stage", "output", stdin=stdin
    )
    result = json.loads(done.stdout)
    assert result["verdict"] == "block"
    assert {f["shield"] for f in result["findings"]} == {"internal", "security"}


def test_check_and_test_accept_the_plugin_type(installed: dict[str, Path], tmp_path: Path) -> None:
    policy = write(tmp_path / "tickets.yaml", POLICY)
    done = shieldgate(installed, ["tickets"], "test", str(policy))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed, 0 failed" in done.stdout
    # The plugin's spec is validated like a built-in's, with the key path of the mistake.
    typo = write(
        tmp_path / "typo.yaml",
        "name: typo\ninput:\n  - {id: a, type: tickets, projects: [OPS], max_digit: 3}\n",
    )
    bad = write(
        tmp_path / "bad.yaml", "name: bad\ninput:\n  - {id: b, type: tickets, projects: [OPS-1]}\n"
    )
    done = shieldgate(installed, ["tickets"], "check", str(typo), str(bad))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{typo}:3:45: input[0].max_digit: unknown key",
        f"{bad}:3:5: input[0]: a project key is letters and digits: 'OPS-1'",
    ]
    # Without the plugin installed, the type is unknown (and the message lists the built-ins).
    done = shieldgate(installed, [], "check", str(policy))
    assert done.returncode == 1
    assert "unknown shield type 'tickets' (known types: classifier, denylist, " in done.stdout


async def test_the_proxy_serves_a_policy_with_the_plugin_type(
    installed: dict[str, Path], tmp_path: Path, upstream: FakeUpstream
) -> None:
    policy = write(tmp_path / "tickets.yaml", POLICY)
    process = await asyncio.create_subprocess_exec(
        *MODULE, "serve", "--port", "0", "--policy", str(policy),
        "--upstream", upstream.base_url,
        stdout=asyncio.subprocess.PIPE, env=plugin_env(installed, ["tickets"]),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        url = line.strip().rsplit(" ", 1)[-1]
        # A streamed reply, three characters per event: the ticket crosses events.
        upstream.enqueue(Reply(body=text_stream("Fixed in OPS-4321, see notes.", piece=3)))
        upstream.enqueue(Reply(body=json_bytes(chat_completion("The key is in SEC-99."))))
        async with aiohttp.ClientSession() as http:
            streamed = await chat(http, url, "What about OPS-12?", stream=True)
            blocked = await chat(http, url, "And the key?", stream=False)
        assert upstream.requests[0].json()["messages"][0]["content"] == "What about [TICKET]?"
        assert streamed == "Fixed in [TICKET], see notes."
        assert blocked["choices"][0]["finish_reason"] == "content_filter"
        assert "SEC-99" not in json.dumps(blocked)
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0


async def chat(http: aiohttp.ClientSession, url: str, text: str, *, stream: bool) -> Any:
    """The reply's content (streamed) or body (not streamed) of one chat completion."""
    body = {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}
    async with http.post(f"{url}/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        if not stream:
            return await resp.json()
        raw = await resp.read()
    content = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                content += choice["delta"].get("content") or ""
    return content


# -- plugins that cannot be used ----------------------------------------------------------------

FAILURES = {
    "two plugins, one name": (
        ["tickets", "tickets_twin"],
        [
            f"shield plugin {TICKETS}: shield type 'tickets' is also provided by {TWIN}",
            f"shield plugin {TWIN}: shield type 'tickets' is also provided by {TICKETS}",
        ],
    ),
    "an import error": (
        ["broken"],
        [
            f"shield plugin {BROKEN}: cannot be loaded: ModuleNotFoundError: No module named "
            "'shieldgate_missing_dependency' (`python -c 'import shieldgate_broken'` shows the "
            "traceback)"
        ],
    ),
    "a built-in's name": (
        ["override"],
        [
            "shield plugin shieldgate-override 0.1.0 (entry point regex = "
            "shieldgate_override:SHIELD_TYPE): 'regex' is a built-in shield type; a plugin "
            "cannot replace it"
        ],
    ),
    "not a well-formed ShieldType": (
        ["misfits"],
        [
            f"shield plugin {MISFITS.format('loose', 'shieldgate_misfits:LOOSE')}: "
            "LooseSpec.type must be declared as `type: Literal['loose'] = 'loose'` (the policy "
            "model tells shield types apart by it)",
            f"shield plugin {MISFITS.format('misnamed', 'shieldgate_misfits:MISNAMED')}: the "
            "entry point is named 'misnamed' but its shield's type_name is 'misfit'; they must "
            "be the same (it is the policy's `type`)",
            f"shield plugin {MISFITS.format('not_a_type', 'shieldgate_misfits:make_shield')}: "
            "names a function, not a shields.ShieldType (ShieldType(YourSpec, YourShield))",
            f"shield plugin "
            f"{MISFITS.format('registers', 'shieldgate_misfits_register:SHIELD_TYPE')}: cannot "
            "be loaded: RuntimeError: shields.registry.register() is for built-in shields; a "
            "plugin names a ShieldType in a 'shieldgate.shields' entry point instead "
            "(`python -c 'import shieldgate_misfits_register'` shows the traceback)",
        ],
    ),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_a_plugin_that_cannot_be_used_fails_every_policy_load(
    installed: dict[str, Path], tmp_path: Path, case: str
) -> None:
    """Named in a policy load error, even for a policy that uses only built-in types: which
    policies needed the plugin cannot be known. The twin and override modules raise if
    imported, so their messages also show that they were not."""
    plugins, problems = FAILURES[case]
    policy = write(tmp_path / "plain.yaml", BUILTIN_POLICY)
    done = shieldgate(installed, plugins, "check", str(policy))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [f"{policy}: {problem}" for problem in problems]
    assert "Traceback" not in done.stderr


def test_a_broken_plugin_stops_scan_and_serve(installed: dict[str, Path], tmp_path: Path) -> None:
    policy = write(tmp_path / "plain.yaml", BUILTIN_POLICY)
    expected = f"{policy}: shield plugin {BROKEN}: cannot be loaded: ModuleNotFoundError"
    scan = shieldgate(installed, ["broken"], "scan", "--policy", str(policy), stdin='{"text": "x"}')
    # serve, with the packaged default policy: it never starts listening.
    serve = shieldgate(installed, ["broken", "tickets"], "serve", "--port", "0", timeout=30)
    for done in (scan, serve):
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.startswith("shieldgate: invalid policy:\n")
        assert "Traceback" not in done.stderr
    assert expected in scan.stderr
    assert f"policies/default.yaml: shield plugin {BROKEN}: cannot be loaded" in serve.stderr


# -- the plugin's scanner keeps the Scanner contract ------------------------------------------


@pytest.fixture(scope="module")
def tickets_module() -> Iterator[Any]:
    """The plugin's module imported from its sources (no entry point: not a registered type)."""
    sys.path.insert(0, str(PLUGINS / "tickets"))
    try:
        import shieldgate_tickets

        yield shieldgate_tickets
    finally:
        sys.path.remove(str(PLUGINS / "tickets"))


_TEXT = st.lists(st.sampled_from(["OPS-", "ops", "SEC-", "1", "23", "4567", "-", " ", "x"]))


@settings(max_examples=300, deadline=None)
@given(pieces=_TEXT, cuts=st.lists(st.integers(0, 60), max_size=8))
def test_streamed_tickets_are_found_as_in_whole_texts_and_in_time(
    tickets_module: Any, pieces: list[str], cuts: list[int]
) -> None:
    """Fed in chunks, the scanner reports what it reports on the whole text, each finding by
    the time ``max_match`` characters from its start have been fed, and none that starts
    before where ``open_from`` said the open candidate was (ASCII text: normalized and
    original offsets are the same)."""
    spec = tickets_module.TicketsSpec(id="t", projects=["OPS", "SEC"], max_digits=4)
    shield = tickets_module.TicketsShield(spec)
    text = "".join(pieces)
    whole = check_text([shield], text)
    scan = TextScan([shield], holdback=shield.max_match, adaptive=True)
    streamed: list[tuple[Finding, int, int]] = []  # (finding, fed before, safe end before)
    bounds = sorted({min(cut, len(text)) for cut in cuts} | {len(text)})
    fed = 0
    for bound in bounds:
        safe_end = scan.safe_end
        streamed += [(finding, fed, safe_end) for finding in scan.feed(text[fed:bound])]
        fed = bound
    safe_end = scan.safe_end
    streamed += [(finding, fed, safe_end) for finding in scan.finish()]
    assert sorted((f.start, f.end) for f, _, _ in streamed) == sorted(
        (f.start, f.end) for f in whole
    )
    for finding, fed_before, safe_end in streamed:
        # Reported by the feed that crossed start + max_match, or by an earlier one.
        assert fed_before < finding.start + shield.max_match
        # Text before ``safe_end`` had been released: the finding may not reach into it.
        assert finding.start >= safe_end
