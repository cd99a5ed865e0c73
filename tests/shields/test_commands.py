"""The offline commands ``shieldgate check``, ``test`` and ``scan`` (issue 5 items 2, 3, 6;
issue 3 "Offline use: shieldgate scan").

Most tests run the CLI the way CI does: a real ``python -m proxy ...`` subprocess started in a
temporary directory (so the paths it prints are short and predictable), policy files written
there, JSON Lines fed on stdin; they assert the exit code and the exact output lines. Each
subprocess costs about half a second, so one run usually covers several cases. A few tests call
``shields.commands`` directly for fine-grained cases that need no process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from proxy.cli import default_policy, main
from shields.base import Stage
from shields.commands import check_policies, policy_files, run_policy_tests, scan_lines
from shields.policy import parse_policy
from tests.support.constants import MODULE, REPO_ROOT

TIMEOUT = 60.0


# --- helpers ---------------------------------------------------------------------------------


def clean_env() -> dict[str, str]:
    """The test's environment without anything that would steer shieldgate or the encoding of
    its standard streams; UTF-8 mode so the result does not depend on the machine's locale."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SHIELDGATE_") and key not in {"PYTHONIOENCODING", "PYTHONUTF8"}
    }
    env["PYTHONUTF8"] = "1"
    return env


@dataclass
class Run:
    code: int
    stdout_bytes: bytes
    stderr: str

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8")  # strict: the output must be valid UTF-8

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


def start(
    cwd: Path, *args: str, stdin: bytes | str = b"", env: dict[str, str] | None = None
) -> Callable[[], Run]:
    """Starts ``python -m proxy ARGS`` now; the returned function feeds stdin and waits.

    Starting several before waiting for any lets independent runs overlap: most of each
    run's cost is the interpreter starting and importing."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    process = subprocess.Popen(
        [*MODULE, *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or clean_env(),
    )

    def wait() -> Run:
        try:
            out, err = process.communicate(data, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
        return Run(process.returncode, out, err.decode("utf-8", "replace"))

    return wait


def shieldgate(
    cwd: Path, *args: str, stdin: bytes | str = b"", env: dict[str, str] | None = None
) -> Run:
    return start(cwd, *args, stdin=stdin, env=env)()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def at(path: Path, needle: str, *, nth: int = 0, skip: int = 0) -> str:
    """``line:column`` (1-based) of the ``nth`` occurrence of ``needle`` in the file, moved
    ``skip`` characters into it: where a problem about that text must point."""
    text = path.read_text(encoding="utf-8")
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    index += skip
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"{line}:{column}"


def jsonl(*records: Any) -> str:
    """JSON Lines; a ``str`` item is written as the raw line (for unreadable or blank lines)."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


# --- check -----------------------------------------------------------------------------------

VALID_POLICY = """
    version: 1
    name: default
    input:
      - id: weapons
        type: denylist
        phrases: [build a bomb]
    output:
      - id: keys
        type: regex
        action: redact
        patterns: ['key-[0-9]{4}']
    cases:
      - {stage: input, text: "how to build a bomb", expect: block, shield: weapons}
"""


def test_check_exit_codes_for_a_valid_file_and_an_empty_directory(tmp_path: Path) -> None:
    write(tmp_path / "policies" / "default.yaml", VALID_POLICY)
    (tmp_path / "empty").mkdir()
    valid = start(tmp_path, "check", "policies/default.yaml")
    empty = start(tmp_path, "check", "empty")
    run = valid()
    assert (run.code, run.lines, run.stderr) == (0, ["1 policy file ok"], "")
    run = empty()
    assert (run.code, run.lines) == (1, ["no policy files found"])


def test_check_reports_one_located_line_per_problem(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    write(policies / "default.yaml", VALID_POLICY)
    # Valid cases, but no policy (a YAML list): it must not be loaded as one.
    write(policies / "default.cases.yaml", '- {stage: input, text: "hi", expect: allow}\n')
    write(policies / "notes.txt", "not yaml at all: [\n")
    syntax = write(
        policies / "syntax.yaml",
        """
        version: 1
        name: syntax
        input: [
          - id: x
        """,
    )
    schema = write(
        policies / "schema.yaml",
        """
        version: 1
        name: schema
        input:
          - id: words
            type: denylist
            phrases: [a]
            colour: red
        output:
          - id: rx
            type: regex
            patterns:
              - 'fine'
              - '(unclosed'
        """,
    )
    compiled = write(
        policies / "compile.yaml",
        """
        version: 1
        name: compile
        stream:
          holdback_chars: 8
        input:
          - id: same
            type: denylist
            phrases: [a]
          - id: same
            type: denylist
            phrases: [b]
        output:
          - id: long
            type: denylist
            phrases: [a rather long phrase]
        """,
    )
    cases = write(
        policies / "cases.yaml",
        """
        version: 1
        name: cases
        input:
          - id: words
            type: denylist
            phrases: [a]
        cases:
          - stage: input
            text: hi
            expect: allow
            shield: ghost
        """,
    )

    run = shieldgate(tmp_path, "check", "policies")
    bad_pattern = at(schema, "'(unclosed'")

    assert run.code == 1, run.stdout + run.stderr
    assert run.lines == [
        f"policies/cases.yaml:{at(cases, 'ghost')}: cases[0].shield: "
        "no input shield has id 'ghost'",
        f"policies/compile.yaml:{at(compiled, 'same', nth=1)}: input[1].id: "
        "duplicate shield id 'same' (also input[0])",
        f"policies/compile.yaml:{at(compiled, 'holdback_chars: 8', skip=16)}: "
        "stream.holdback_chars: 8 is shorter than the longest match of output[0] (long): "
        "21 characters; raise it to at least 21",
        f"policies/schema.yaml:{at(schema, 'colour')}: input[0].colour: unknown key",
        f"policies/schema.yaml:{bad_pattern}: output[0].patterns[1]: "
        "bad regex '(unclosed': missing )",
        f"policies/syntax.yaml:{at(syntax, '- id: x')}: "
        "invalid YAML: expected the node content, but found '-'",
    ]


def test_check_reads_a_sibling_cases_file_as_test_would(tmp_path: Path) -> None:
    write(tmp_path / "default.yaml", VALID_POLICY)
    write(
        tmp_path / "default.cases.yaml",
        """
        - {stage: input, text: "hi", expect: allow}
        - {stage: output, text: "hi", expect: block, shield: weapons}
        - {stage: input, text: "hi", expect: allow, colour: red}
        """,
    )
    out = io.StringIO()
    assert check_policies([tmp_path], out) == 1
    sibling = tmp_path / "default.cases.yaml"
    assert out.getvalue().splitlines() == [f"{sibling}: [2].colour: Extra inputs are not permitted"]
    write(sibling, '- {stage: output, text: "hi", expect: block, shield: weapons}\n')
    out = io.StringIO()
    assert check_policies([tmp_path / "default.yaml"], out) == 1
    assert out.getvalue().splitlines() == [
        f"{sibling}: [0].shield: no output shield has id 'weapons'"
    ]
    write(sibling, '- {stage: input, text: "a bomb", expect: allow, shield: weapons}\n')
    out = io.StringIO()
    assert check_policies([tmp_path], out) == 0  # what a case expects is ``test``'s business


def test_check_a_directory_of_cases_files_only_finds_no_policy(tmp_path: Path) -> None:
    write(tmp_path / "p.cases.yaml", '- {stage: input, text: "hi", expect: allow}\n')
    out = io.StringIO()
    assert check_policies([tmp_path], out) == 1
    assert out.getvalue() == "no policy files found\n"


def test_check_reports_an_unreadable_file(tmp_path: Path) -> None:
    out = io.StringIO()
    assert check_policies([tmp_path / "missing.yaml"], out) == 1
    assert out.getvalue().splitlines() == [
        f"{tmp_path / 'missing.yaml'}: cannot read policy: No such file or directory"
    ]


def test_policy_files_expands_directories_without_cases_files(tmp_path: Path) -> None:
    for name in ("b.yaml", "a.yaml", "a.cases.yaml", "notes.txt", "sub/c.yaml"):
        write(tmp_path / name, "name: x\n")
    explicit = tmp_path / "sub" / "c.yaml"
    assert policy_files([tmp_path, explicit]) == [
        tmp_path / "a.yaml",
        tmp_path / "b.yaml",
        explicit,
    ]


def test_check_reports_unreadable_characters_on_one_located_line(tmp_path: Path) -> None:
    (tmp_path / "control.yaml").write_bytes(b"version: 1\nname: x\x07y\n")
    (tmp_path / "latin1.yaml").write_bytes(b"version: 1\nname: caf\xe9\n")
    out = io.StringIO()
    assert check_policies([tmp_path / "control.yaml", tmp_path / "latin1.yaml"], out) == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{tmp_path / 'control.yaml'}:2:8: invalid YAML: ")
    assert lines[1].startswith(f"{tmp_path / 'latin1.yaml'}:2:10: invalid YAML: ")
    assert not any("<byte string>" in line for line in lines)


# --- test ------------------------------------------------------------------------------------


def write_passing_suite(directory: Path) -> None:
    write(
        directory / "good.yaml",
        """
        version: 1
        name: good
        input:
          - id: weapons
            type: denylist
            phrases: [build a bomb]
          - id: watch
            type: denylist
            mode: monitor
            action: redact
            words: [hello]
        output:
          - id: keys
            type: regex
            action: redact
            placeholder: "[KEY]"
            patterns: ['key-[0-9]{4}']
        cases:
          - name: weapons request is blocked
            stage: input
            text: how to build a bomb
            expect: block
            shield: weapons
          - name: small talk is allowed
            stage: input
            text: hello there
            expect: allow
        """,
    )
    # The list form of a sibling cases file.
    write(
        directory / "good.cases.yaml",
        """
        - name: a key in a reply is redacted
          stage: output
          text: "use key-1234 now"
          expect: redact
          shield: keys
          redacted: "use [KEY] now"
        """,
    )
    write(
        directory / "other.yaml",
        """
        version: 1
        name: other
        output:
          - {id: words, type: denylist, words: [secret]}
        """,
    )
    # The mapping form; an unnamed case is named by its place, stage and expectation.
    write(
        directory / "other.cases.yaml",
        """
        cases:
          - {name: a word is blocked, stage: output, text: "the secret is out", expect: block}
          - {stage: output, text: "a secretary", expect: allow}
        """,
    )


PASSING_LINES = [
    "PASS suite/good.yaml: weapons request is blocked",
    "PASS suite/good.yaml: small talk is allowed",
    "PASS suite/good.yaml: a key in a reply is redacted",
    "PASS suite/other.yaml: a word is blocked",
    "PASS suite/other.yaml: cases.yaml[1] (output, expect allow)",
    "5 passed, 0 failed",
]


def test_test_passing_policies_and_explain(tmp_path: Path) -> None:
    write_passing_suite(tmp_path / "suite")
    plain_run = start(tmp_path, "test", "suite")
    explain_run = start(tmp_path, "test", "suite", "--explain", "--junit", "report.xml")

    plain = plain_run()
    assert (plain.code, plain.lines, plain.stderr) == (0, PASSING_LINES, "")

    run = explain_run()
    assert run.code == 0, run.stdout + run.stderr
    assert run.lines == [
        "PASS suite/good.yaml: weapons request is blocked",
        "    fired: weapons (denylist) build a bomb block at 7:19",
        "PASS suite/good.yaml: small talk is allowed",
        "    fired: watch (denylist) hello redact at 0:5 [monitor]",
        "PASS suite/good.yaml: a key in a reply is redacted",
        "    fired: keys (regex) pattern[0] redact at 4:12",
        "PASS suite/other.yaml: a word is blocked",
        "    fired: words (denylist) secret block at 4:10",
        "PASS suite/other.yaml: cases.yaml[1] (output, expect allow)",
        "5 passed, 0 failed",
    ]
    root = ElementTree.parse(tmp_path / "report.xml").getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"suite/good.yaml", "suite/other.yaml"}
    assert (suites["suite/good.yaml"].get("tests"), suites["suite/good.yaml"].get("failures")) == (
        "3",
        "0",
    )
    assert [c.get("name") for c in suites["suite/other.yaml"].iter("testcase")] == [
        "a word is blocked",
        "cases.yaml[1] (output, expect allow)",
    ]
    assert not list(root.iter("failure"))


def test_test_failures_errors_and_junit(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed"
    write(
        mixed / "a.yaml",
        """
        version: 1
        name: a
        input:
          - {id: words, type: denylist, phrases: [forbidden]}
        cases:
          - {name: own case passes, stage: input, text: "a forbidden thing", expect: block}
        """,
    )
    # An invalid sibling cases file is an error (each problem a failure); the policy's own
    # cases still run.
    write(
        mixed / "a.cases.yaml",
        """
        - {name: typo, stage: input, text: "x", expect: allow, expected: block}
        - {name: bad stage, stage: sideways, text: "x", expect: allow}
        """,
    )
    broken = write(
        mixed / "b.yaml",
        """
        version: 1
        name: b
        input:
          - {id: x, type: denylist, phrases: [a]}
          - {id: x, type: denylist, phrases: [b]}
        cases:
          - {stage: input, text: "a", expect: block}
        """,
    )
    write(
        mixed / "c.yaml",
        """
        version: 1
        name: c
        input:
          - id: keys
            type: regex
            action: redact
            placeholder: "[KEY]"
            patterns: ['key-[0-9]{4}']
        cases:
          - {name: passes, stage: input, text: "key-1111", expect: redact, redacted: "[KEY]"}
          - {name: wrong verdict, stage: input, text: "my key-1234 here", expect: allow}
          - name: wrong redaction
            stage: input
            text: "a key-0000 b"
            expect: redact
            redacted: "a [KEY] c"
        """,
    )
    write(
        mixed / "c.cases.yaml",
        """
        cases:
          - {name: ghost shield, stage: input, text: "hello", expect: allow, shield: ghost}
        """,
    )

    run = shieldgate(tmp_path, "test", "mixed", "--junit", "report.xml")

    assert run.code == 1, run.stdout + run.stderr
    lines = run.lines
    assert lines[0].startswith("ERROR mixed/a.cases.yaml") and "[0].expected" in lines[0]
    assert lines[1].startswith("ERROR mixed/a.cases.yaml") and "[1].stage" in lines[1]
    assert lines[2:] == [
        "PASS mixed/a.yaml: own case passes",
        f"ERROR mixed/b.yaml:{at(broken, 'x', nth=1)}: input[1].id: "
        "duplicate shield id 'x' (also input[0])",
        "PASS mixed/c.yaml: passes",
        "FAIL mixed/c.yaml: wrong verdict",
        "    expected allow, got redact",
        "    fired: keys (regex) pattern[0] redact at 3:11",
        "FAIL mixed/c.yaml: wrong redaction",
        "    expected redacted text 'a [KEY] c', got 'a [KEY] b'",
        "    fired: keys (regex) pattern[0] redact at 2:10",
        "FAIL mixed/c.yaml: ghost shield",
        "    no input shield has id 'ghost'",
        "2 passed, 6 failed",
    ]

    root = ElementTree.parse(tmp_path / "report.xml").getroot()
    suites = list(root.iter("testsuite"))
    assert sum(int(s.get("tests", "0")) for s in suites) == 8
    assert sum(int(s.get("failures", "0")) for s in suites) == 6
    assert len(list(root.iter("testcase"))) == 8
    assert len(list(root.iter("failure"))) == 6
    by_name = {s.get("name"): s for s in suites}
    c_suite = by_name["mixed/c.yaml"]
    assert (c_suite.get("tests"), c_suite.get("failures")) == ("4", "3")
    c_cases = {c.get("name"): c for c in c_suite.iter("testcase")}
    assert c_cases["passes"].find("failure") is None
    failure = c_cases["wrong verdict"].find("failure")
    assert failure is not None
    assert failure.get("message") == "expected allow, got redact"
    ghost = c_cases["ghost shield"].find("failure")
    assert ghost is not None and "no input shield has id 'ghost'" in (ghost.text or "")
    # The policy that failed to load is a failing test case too.
    b_suite = by_name["mixed/b.yaml"]
    assert (b_suite.get("tests"), b_suite.get("failures")) == ("1", "1")
    assert b_suite.find("testcase/failure") is not None


def test_test_without_cases_fails_unless_allowed(tmp_path: Path) -> None:
    write(tmp_path / "lonely.yaml", "version: 1\nname: lonely\n")
    strict_run = start(tmp_path, "test", "lonely.yaml")
    allowed_run = start(tmp_path, "test", "lonely.yaml", "--allow-empty")
    strict = strict_run()
    assert strict.code == 1
    assert strict.lines[0] == "0 passed, 0 failed"
    assert len(strict.lines) == 2 and "--allow-empty" in strict.lines[1]
    allowed = allowed_run()
    assert (allowed.code, allowed.lines) == (0, ["0 passed, 0 failed"])


def test_test_a_policy_that_cannot_be_read_is_a_failure(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_policy_tests([tmp_path / "missing.yaml"], out, allow_empty=True) == 1
    assert out.getvalue().splitlines() == [
        f"ERROR {tmp_path / 'missing.yaml'}: cannot read policy: No such file or directory",
        "0 passed, 1 failed",
    ]


def test_test_empty_sibling_cases_file_adds_nothing(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", VALID_POLICY)
    write(tmp_path / "p.cases.yaml", "# no cases yet\n")
    out = io.StringIO()
    assert run_policy_tests([tmp_path / "p.yaml"], out) == 0
    assert out.getvalue().splitlines()[-1] == "1 passed, 0 failed"


def test_test_cases_file_syntax_error_is_one_located_line(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", VALID_POLICY)
    sibling = write(tmp_path / "p.cases.yaml", '- {stage: input, text: "x", expect: allow\n')
    out = io.StringIO()
    assert run_policy_tests([tmp_path / "p.yaml"], out) == 1
    lines = out.getvalue().splitlines()
    errors = [line for line in lines if line.startswith("ERROR")]
    assert len(errors) == 1
    assert errors[0].startswith(f"ERROR {sibling}:2:1: invalid YAML: ")
    assert lines[1:] == [
        f"PASS {tmp_path / 'p.yaml'}: cases[0] (input, expect block)",
        "1 passed, 1 failed",
    ]


def test_test_cases_file_with_an_unknown_key_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "p.yaml", "version: 1\nname: p\n")
    sibling = write(
        tmp_path / "p.cases.yaml",
        """
        case:
          - {stage: input, text: "x", expect: block}
        """,
    )
    out = io.StringIO()
    assert run_policy_tests([tmp_path / "p.yaml"], out, allow_empty=True) == 1
    assert out.getvalue().startswith(f"ERROR {sibling}")


def test_test_and_check_skip_the_routes_file(tmp_path: Path) -> None:
    write(tmp_path / "default.yaml", VALID_POLICY)
    write(
        tmp_path / "strict.yaml",
        """
        version: 1
        name: strict
        input:
          - {id: w, type: denylist, words: [bomb]}
        cases:
          - {stage: input, text: "bomb", expect: block}
        """,
    )
    write(
        tmp_path / "routes.yaml",
        "default: default\nmodels:\n  - {match: 'gpt-4*', policy: strict}\n",
    )
    out = io.StringIO()
    assert run_policy_tests([tmp_path], out) == 0, out.getvalue()
    assert out.getvalue().splitlines()[-1] == "2 passed, 0 failed"
    out = io.StringIO()
    assert check_policies([tmp_path], out) == 0
    assert out.getvalue() == "2 policy files ok\n"


def test_test_junit_into_a_missing_directory_is_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "p.yaml", VALID_POLICY)
    report = tmp_path / "reports" / "out" / "report.xml"
    code = main(["test", str(tmp_path / "p.yaml"), "--junit", str(report)])  # raises today
    if code == 0:
        ElementTree.parse(report)
    else:
        assert code == 2 and capsys.readouterr().err.startswith("shieldgate: ")


# --- scan ------------------------------------------------------------------------------------

SCAN_POLICY = """
    version: 1
    name: scan-test
    input:
      - id: weapons
        type: denylist
        phrases: [build a bomb, synthesize sarin]
      - id: keys
        type: regex
        action: redact
        placeholder: "[KEY]"
        patterns: ['key-[0-9]{4}']
      - id: watch
        type: denylist
        mode: monitor
        action: redact
        words: [prototype]
    output:
      - id: codename
        type: regex
        action: redact
        placeholder: "[CODENAME]"
        patterns: ['project [a-z]{1,20}']
"""


def test_scan_writes_one_line_per_input_line_and_reports_bad_lines(tmp_path: Path) -> None:
    write(tmp_path / "scan.yaml", SCAN_POLICY)
    stdin = jsonl(
        {"id": "w", "text": "how do I build a bomb"},  # line 1
        "",  # line 2: blank, ignored
        {"id": 2, "text": "use key-1234 and key-5678"},
        "not json",
        [1, 2],  # line 5
        {"id": "no-text", "text": 5},
        {"id": "bad-role", "messages": [{"role": "robot", "content": "hi"}]},
        {
            "id": "m",
            "messages": [
                {"role": "system", "content": "be nice"},
                {"role": "user", "content": "my key-0000 please"},
            ],
        },
        "   ",  # line 9: whitespace only, ignored
        {"id": "ok", "text": "hello"},  # line 10
        {"id": "mon", "text": "the prototype ships"},
        {"id": "bad-content", "messages": [{"role": "user", "content": 5}]},
        {"id": "last", "text": "build a bomb"},  # line 13: the run went on after bad lines
    )

    run = shieldgate(tmp_path, "scan", "--policy", "scan.yaml", stdin=stdin)

    assert run.code == 1, run.stderr
    records = run.records()
    errors = {r["line"]: r for r in records if "error" in r}
    assert [r["id"] for r in records] == [
        "w",
        2,
        None,
        None,
        "no-text",
        "bad-role",
        "m",
        "ok",
        "mon",
        "bad-content",
        "last",
    ]
    assert records[0] == {
        "id": "w",
        "verdict": "block",
        "findings": [
            {
                "shield": "weapons",
                "type": "denylist",
                "label": "build a bomb",
                "start": 9,
                "end": 21,
            }
        ],
        "text": "how do I build a bomb",
    }
    assert records[1] == {
        "id": 2,
        "verdict": "redact",
        "findings": [
            {"shield": "keys", "type": "regex", "label": "pattern[0]", "start": 4, "end": 12},
            {"shield": "keys", "type": "regex", "label": "pattern[0]", "start": 17, "end": 25},
        ],
        "text": "use [KEY] and [KEY]",
    }
    assert sorted(errors) == [4, 5, 6, 7, 12]
    assert errors[4]["id"] is None and errors[4]["error"].startswith("not valid JSON")
    assert errors[5] == {"id": None, "line": 5, "error": "each line must be a JSON object"}
    assert errors[6]["id"] == "no-text" and "text" in errors[6]["error"]
    assert errors[7] == {"id": "bad-role", "line": 7, "error": "messages[0] needs a valid role"}
    assert errors[12]["id"] == "bad-content" and "messages[0].content" in errors[12]["error"]
    assert records[6] == {
        "id": "m",
        "verdict": "redact",
        "findings": [
            {
                "shield": "keys",
                "type": "regex",
                "label": "pattern[0]",
                "start": 3,
                "end": 11,
                "message": 1,
            }
        ],
        "messages": [
            {"role": "system", "content": "be nice"},
            {"role": "user", "content": "my [KEY] please"},
        ],
    }
    assert records[7] == {"id": "ok", "verdict": "allow", "findings": [], "text": "hello"}
    # A monitor shield's finding is listed but enforces nothing.
    assert records[8] == {
        "id": "mon",
        "verdict": "allow",
        "findings": [
            {"shield": "watch", "type": "denylist", "label": "prototype", "start": 4, "end": 13}
        ],
        "text": "the prototype ships",
    }
    assert records[10]["verdict"] == "block"


def test_scan_explain_and_offsets_in_the_original_text(tmp_path: Path) -> None:
    write(tmp_path / "scan.yaml", SCAN_POLICY)
    disguised = "how to ｓｙｎｔｈｅｓｉｚｅ\u200b SARIN"
    wide_key = "send ｋｅｙ-１２３４ now"
    stdin = jsonl(
        {"id": "disguised", "text": disguised},
        {"id": "wide-key", "text": wide_key},
        {
            "id": "parts",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "hi"},
                        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
                        {"type": "text", "text": "key-9999"},
                    ],
                }
            ],
        },
        {"id": "mon", "text": "a prototype"},
    )

    run = shieldgate(tmp_path, "scan", "--policy", "scan.yaml", "--explain", stdin=stdin)

    assert run.code == 0, run.stderr
    records = run.records()
    assert len(records) == 4
    (finding,) = records[0]["findings"]
    assert disguised[finding["start"] : finding["end"]] == "ｓｙｎｔｈｅｓｉｚｅ\u200b SARIN"
    assert finding == {
        "shield": "weapons",
        "type": "denylist",
        "label": "synthesize sarin",
        "start": 7,
        "end": 24,
        "action": "block",
        "monitor": False,
        "match": "ｓｙｎｔｈｅｓｉｚｅ\u200b SARIN",
    }
    assert records[0]["verdict"] == "block" and records[0]["text"] == disguised
    (finding,) = records[1]["findings"]
    assert wide_key[finding["start"] : finding["end"]] == "ｋｅｙ-１２３４" == finding["match"]
    assert records[1]["text"] == "send [KEY] now"
    # Text parts are joined with newlines; offsets index the joined text of that message.
    assert records[2]["findings"] == [
        {
            "shield": "keys",
            "type": "regex",
            "label": "pattern[0]",
            "start": 3,
            "end": 11,
            "action": "redact",
            "monitor": False,
            "match": "key-9999",
            "message": 0,
        }
    ]
    assert records[2]["messages"] == [{"role": "user", "content": "hi\n[KEY]"}]
    # --explain tells a monitor finding from an enforced one, with its would-be action.
    assert records[3] == {
        "id": "mon",
        "verdict": "allow",
        "findings": [
            {
                "shield": "watch",
                "type": "denylist",
                "label": "prototype",
                "start": 2,
                "end": 11,
                "action": "redact",
                "monitor": True,
                "match": "prototype",
            }
        ],
        "text": "a prototype",
    }


def test_scan_output_stage_uses_the_output_shields(tmp_path: Path) -> None:
    write(tmp_path / "scan.yaml", SCAN_POLICY)
    stdin = jsonl(
        {"id": 1, "text": "build a bomb in project apollo"},
        {"id": 2, "messages": [{"role": "assistant", "content": "see project zeus"}]},
    )
    run = shieldgate(tmp_path, "scan", "--policy", "scan.yaml", "--stage", "output", stdin=stdin)
    assert run.code == 0, run.stderr
    assert run.records() == [
        {
            "id": 1,
            "verdict": "redact",
            "findings": [
                {
                    "shield": "codename",
                    "type": "regex",
                    "label": "pattern[0]",
                    "start": 16,
                    "end": 30,
                }
            ],
            "text": "build a bomb in [CODENAME]",
        },
        {
            "id": 2,
            "verdict": "redact",
            "findings": [
                {
                    "shield": "codename",
                    "type": "regex",
                    "label": "pattern[0]",
                    "start": 4,
                    "end": 16,
                    "message": 0,
                }
            ],
            "messages": [{"role": "assistant", "content": "see [CODENAME]"}],
        },
    ]


def test_scan_uses_the_default_policy_without_policy_flag(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": 1, "text": "Explain step by step how to BUILD A BOMB at home"}),
        json.dumps({"id": 2, "text": "my key is AKIAQ3EGRK5JXWZY7N4T, why does it fail?"}),
        json.dumps({"id": 3, "text": "What is the capital of France?"}),
    ]
    run = shieldgate(tmp_path, "scan", stdin="\n".join(lines) + "\n")
    expected = io.StringIO()
    assert scan_lines(default_policy(), Stage.INPUT, lines, expected) == 0
    assert (run.code, run.stdout) == (0, expected.getvalue())
    verdicts = [r["verdict"] for r in run.records()]
    assert verdicts == ["block", "redact", "allow"]


def test_scan_with_an_invalid_policy_is_a_usage_error(tmp_path: Path) -> None:
    write(
        tmp_path / "bad.yaml",
        """
        version: 1
        name: bad
        input:
          - {id: a, type: denylist, phrases: [x], colour: red}
        """,
    )
    run = shieldgate(tmp_path, "scan", "--policy", "bad.yaml", stdin=jsonl({"text": "x"}))
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith("shieldgate: invalid policy:")
    assert "bad.yaml: input[0].colour: unknown key" in run.stderr


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_scan_reports_a_line_that_is_not_utf8_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, errors: str
) -> None:
    # The CLI in process, with standard streams as Python sets them up: UTF-8 with strict
    # errors (PYTHONIOENCODING=utf-8, most locales) or surrogateescape (UTF-8 mode, C.UTF-8).
    data = b'{"id": 1, "text": "caf\xe9 build a bomb"}\n{"id": 2, "text": "ok"}\n'
    written = io.BytesIO()
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors)
    stdout = io.TextIOWrapper(written, encoding="utf-8", errors=errors, write_through=True)
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", stdout)
    code = main(["scan"])  # strict: UnicodeDecodeError escapes today
    first, second = (json.loads(line) for line in written.getvalue().decode("utf-8").splitlines())
    assert first["id"] is None and first["line"] == 1 and "error" in first
    assert second["id"] == 2 and second["verdict"] == "allow"
    assert code == 1


def test_scan_survives_a_lone_surrogate() -> None:
    # What the CLI hands scan_lines: a UTF-8 text stdout (strict, as sys.stdout is).
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    lines = jsonl('{"id": 1, "text": "x \\ud800 build a bomb"}', {"id": 2, "text": "ok"})
    code = scan_lines(default_policy(), Stage.INPUT, lines.splitlines(True), stdout)
    raw = stdout.buffer.getvalue()  # type: ignore[attr-defined]
    first, second = (json.loads(line) for line in raw.decode("utf-8").splitlines())
    assert first["id"] == 1
    assert first.get("line") == 1 if "error" in first else first["verdict"] == "block"
    assert second == {"id": 2, "verdict": "allow", "findings": [], "text": "ok"}
    assert code == (1 if "error" in first else 0)


# --- scan, in process ------------------------------------------------------------------------


def scan(policy_text: str, lines: list[str], stage: Stage = Stage.INPUT, **kw: Any) -> list[Any]:
    out = io.StringIO()
    policy = parse_policy(textwrap.dedent(policy_text))
    code = scan_lines(policy, stage, lines, out, **kw)
    return [code, *(json.loads(line) for line in out.getvalue().splitlines())]


def test_scan_line_numbers_count_blank_lines_and_crlf() -> None:
    lines = ["\n", '{"id": 1, "text": "build a bomb"}\r\n', "\r\n", "{oops\r\n"]
    code, result, error = scan(SCAN_POLICY, lines)
    assert code == 1
    assert result["verdict"] == "block"
    assert error["line"] == 4 and error["error"].startswith("not valid JSON")


def test_scan_deeply_nested_json_is_a_bad_line_not_a_crash() -> None:
    lines = ["[" * 100_000 + "]" * 100_000 + "\n", '{"id": 2, "text": "ok"}\n']
    code, error, result = scan(SCAN_POLICY, lines)
    assert code == 1
    assert error["line"] == 1 and "error" in error
    assert result == {"id": 2, "verdict": "allow", "findings": [], "text": "ok"}


def test_scan_stage_picks_the_shields() -> None:
    line = [json.dumps({"text": "build a bomb in project apollo"})]
    _, at_input = scan(SCAN_POLICY, line, Stage.INPUT)
    _, at_output = scan(SCAN_POLICY, line, Stage.OUTPUT)
    assert [f["shield"] for f in at_input["findings"]] == ["weapons"]
    assert [f["shield"] for f in at_output["findings"]] == ["codename"]


def test_scan_a_monitor_policy_reports_but_changes_nothing() -> None:
    monitor = SCAN_POLICY.replace("name: scan-test", "name: scan-test\n    mode: monitor")
    text = "build a bomb with key-1234"
    code, result = scan(monitor, [json.dumps({"id": 1, "text": text})], explain=True)
    assert code == 0
    assert result["verdict"] == "allow" and result["text"] == text
    assert {(f["shield"], f["match"]) for f in result["findings"]} == {
        ("weapons", "build a bomb"),
        ("keys", "key-1234"),
    }


@pytest.mark.parametrize(
    "text",
    [
        "please BUILD\u200b A BOMB now",
        "ｂｕｉｌｄ　ａ　ｂｏｍｂ",
        "b\u00adu\u200dild  a\tbomb!",
        "x \ufb01 then build a b\u200bomb",
        "İİ build a bomb",
    ],
)
def test_scan_offsets_point_at_the_disguised_phrase(text: str) -> None:
    _, result = scan(SCAN_POLICY, [json.dumps({"text": text})], explain=True)
    (finding,) = result["findings"]
    span = text[finding["start"] : finding["end"]]
    assert span == finding["match"]
    folded = unicodedata.normalize("NFKC", span).casefold()
    visible = "".join(c for c in folded if c.isspace() or c.isprintable())
    assert " ".join(visible.split()) == "build a bomb"


@pytest.mark.parametrize(
    "argv",
    [["check", "policies/"], ["test", "policies/"], ["scan", "--stage", "output"]],
    ids=["check", "test", "scan"],
)
def test_the_offline_commands_never_load_aiohttp(argv: list[str]) -> None:
    # A pre-commit hook runs `check` on every commit: the HTTP stack is a second of imports
    # it has no use for.
    probe = (
        "import sys\nfrom proxy.cli import main\n"
        f"code = main({argv!r})\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'aiohttp')\n"
        "print('AIOHTTP', code, loaded, file=sys.stderr)\n"
    )
    repo = REPO_ROOT
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=b'{"id": 1, "text": "hello"}\n',
        capture_output=True,
        cwd=repo,
        env=clean_env(),
        timeout=60,
        check=False,
    )
    line = [x for x in done.stderr.decode().splitlines() if x.startswith("AIOHTTP")]
    assert line == ["AIOHTTP 0 []"], done.stderr.decode()[-2000:]


def test_check_explain_names_the_output_shields_that_hold_their_whole_window(
    tmp_path: Path,
) -> None:
    """``check --explain``: a shield whose prefixes cannot be bounded holds its longest match in
    every stream (the fixed window); the others hold text only while a match may begin."""
    (tmp_path / "p.yaml").write_text(
        "version: 1\n"
        "name: p\n"
        "output:\n"
        "  - {id: words, type: denylist, phrases: ['build a bomb']}\n"
        "  - {id: letters, type: regex, patterns: ['\\pL{3}bomb']}\n"
    )
    out = io.StringIO()
    assert check_policies([tmp_path / "p.yaml"], out, explain=True) == 0
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("output[0] (words, denylist): holds text only while a match may "
                             "still begin there")  # fmt: skip
    assert lines[2].endswith("output[1] (letters, regex): holds its longest match, 64 "
                             "characters, in every stream")  # fmt: skip
    assert lines[-1] == "1 policy file ok"
    plain = io.StringIO()
    assert check_policies([tmp_path / "p.yaml"], plain) == 0
    assert plain.getvalue() == "1 policy file ok\n"
