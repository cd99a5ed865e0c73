"""Which code a benchmark measured: the commit, "+dirty" when the given paths have local edits.

Shared by the scripts in bench/ so every recorded figure names its revision the same way.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["REPO_ROOT", "changed_files", "code_revision"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout


def changed_files(*paths: str) -> list[str] | None:
    """Tracked files with local changes under ``paths`` (all when none); None outside git."""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", *paths)
    if status is None:
        return None
    return sorted(line[3:] for line in status.splitlines() if line.strip())


def code_revision(*paths: str) -> str:
    """``abc1234``, ``abc1234+dirty``, or ``unknown`` outside a git checkout."""
    head = _git("rev-parse", "--short", "HEAD")
    changed = changed_files(*paths)
    if head is None or changed is None:
        return "unknown"
    return head.strip() + ("+dirty" if changed else "")


# What the proxy's figures depend on: its code, the policies it loads and the benchmarks
# themselves (never the docs a report run rewrites).
MEASURED_PATHS = ("proxy", "shields", "policies", "bench", "pyproject.toml")
