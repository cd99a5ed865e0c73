"""The offline commands behind a pipe whose reader leaves early (``shieldgate test | head``).

Real subprocesses: a pipe closes under a real process, with its real standard streams. Either
the reader is gone before the command writes a byte (its end of the pipe closed at once), or
``head`` leaves after one line of a long output.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.constants import MODULE, REPO_ROOT

ROOT = REPO_ROOT


def run_into_closed_pipe(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Runs ``shieldgate ARGS`` with stdout a pipe nobody reads: its reading end is closed
    before the command starts, so its first write to stdout fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*MODULE, *args],
            input=stdin,
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("test", "policies/"), id="test"),
        pytest.param(("check", "policies/"), id="check"),
        pytest.param(("scan",), id="scan"),
    ],
)
def test_a_reader_gone_is_a_quiet_exit(args: tuple[str, ...]) -> None:
    done = run_into_closed_pipe(*args, stdin=b'{"id": 1, "text": "how to build a bomb"}\n')
    assert done.stderr == b""  # no traceback, no "Exception ignored"
    assert done.returncode == 141  # 128 + SIGPIPE, as a shell reports a program it stopped


def test_scan_piped_into_head() -> None:
    # Far more output than a pipe holds: scan is still writing when head has left.
    lines = b"".join(b'{"id": %d, "text": "hello there"}\n' % i for i in range(20_000))
    command = f"{' '.join(MODULE)} scan | head -n 1"
    done = subprocess.run(
        ["sh", "-c", command], input=lines, capture_output=True, cwd=ROOT, timeout=120
    )
    assert done.stdout.startswith(b'{"id": 0, "verdict": "allow"')
    assert done.stdout.count(b"\n") == 1
    assert done.stderr == b""
