"""The policy in force, its file, and hot reload.

A reload is atomic: the new policy is compiled off to the side (in a thread, so a large deny
list does not stall the event loop) and swapped in with one assignment. A request takes the
policy once, when it starts (``proxy.state.policy_for``), so requests in flight finish under the
policy they started with while new requests see the new one. An invalid edit is rejected: the
last good policy stays in force, the error is logged, and ``stale`` says so until a good edit.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from shields.policy import CompiledPolicy, PolicyError, load_policy

__all__ = ["PolicySource"]

log = logging.getLogger("shieldgate.policy")


@dataclass(frozen=True, slots=True)
class _Fingerprint:
    inode: int
    size: int
    mtime_ns: int


def _fingerprint(path: Path) -> _Fingerprint | None:
    try:
        # stat() follows symlinks: a Kubernetes ConfigMap update swaps a symlink, which shows
        # up here as a new inode.
        info = os.stat(path)
    except OSError:
        return None
    return _Fingerprint(info.st_ino, info.st_size, info.st_mtime_ns)


class PolicySource:
    def __init__(self, policy: CompiledPolicy, path: Path | None = None) -> None:
        self.current = policy
        self.path = path
        self.stale = False
        self.error: str | None = None
        self.loaded_at = time.time()
        self.reloads = 0
        self.failures = 0
        self._seen = _fingerprint(path) if path is not None else None
        self._lock = asyncio.Lock()

    async def reload(self) -> bool:
        """Loads the file again; True when a new policy is in force."""
        if self.path is None:
            return False
        async with self._lock:
            self._seen = _fingerprint(self.path)
            try:
                policy = await asyncio.to_thread(load_policy, self.path)
            except PolicyError as exc:
                self.failures += 1
                self.stale = True
                self.error = str(exc)
                log.error(
                    "policy reload rejected, keeping %s (%s): %s",
                    self.current.name,
                    self.current.digest,
                    exc,
                )
                return False
            previous = self.current
            self.current = policy
            self.stale = False
            self.error = None
            self.loaded_at = time.time()
            self.reloads += 1
            log.info(
                "policy reloaded: %s (%s) -> %s (%s)",
                previous.name,
                previous.digest,
                policy.name,
                policy.digest,
            )
            return True

    async def watch(self, interval: float) -> None:
        """Polls the file and reloads when it changes. Runs until cancelled.

        Polling a stat() every ``interval`` seconds costs nothing measurable, needs no
        inotify, and works the same on bind mounts and ConfigMap volumes.
        """
        if self.path is None:
            return
        while True:
            await asyncio.sleep(interval)
            if _fingerprint(self.path) != self._seen:
                await self.reload()
