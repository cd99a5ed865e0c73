"""What ``GET /readyz`` says: a cached TCP probe of the upstream, and the policies in force.

Its body has two levels. Anyone (load balancers and probes carry no key) learns whether the
proxy is ready, the policies' names and hashes, and whether the last reload failed. The
details — a failed reload's error text, which names the policy file and quotes the bad
pattern, and the kind of the upstream probe's error — go only to a request with a valid
client key; without a keys file, only to the log (where the reload's error always is).

Readiness only asks whether the upstream accepts connections: an HTTP request would cost the
upstream work (and tokens, on a paid API) on every probe, and any HTTP answer — even a 401 —
already proves the same thing a connection does. Results are cached for ``ttl`` seconds and
only one probe runs at a time, so a load balancer probing every second from many places sends
the upstream at most one connection per ``ttl``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from yarl import URL

from proxy.ops.policy_source import PolicySource

__all__ = ["WITHHELD_ERROR", "ProbeResult", "UpstreamProbe", "readiness"]

# What an unauthenticated /readyz says in place of a failed reload's error text.
WITHHELD_ERROR = "the last policy reload failed: see the server's log"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    reachable: bool
    checked_at: float
    error: str | None = None


class UpstreamProbe:
    def __init__(self, upstream: str, *, timeout: float, ttl: float) -> None:
        url = URL(upstream)
        self._host = url.host or "localhost"
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._timeout = timeout
        self._ttl = ttl
        self._last: ProbeResult | None = None
        self._lock = asyncio.Lock()

    async def check(self) -> ProbeResult | None:
        """The (cached) probe result; None when probing is off (``ttl`` 0)."""
        if self._ttl <= 0:
            return None
        async with self._lock:
            last = self._last
            if last is not None and time.monotonic() - last.checked_at < self._ttl:
                return last
            self._last = await self._connect()
            return self._last

    async def _connect(self) -> ProbeResult:
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port), self._timeout
            )
        except (OSError, TimeoutError) as exc:
            return ProbeResult(False, time.monotonic(), type(exc).__name__)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return ProbeResult(True, time.monotonic())


def readiness(
    source: PolicySource, upstream: ProbeResult | None, *, details: bool
) -> tuple[dict[str, Any], bool]:
    """``/readyz``'s body and whether the proxy is ready; ``details`` for a request with a
    valid client key (see the module's docstring)."""
    policy = source.policies.default
    ready = upstream is None or upstream.reachable
    error = source.error
    if error is not None and not details:
        error = WITHHELD_ERROR
    body: dict[str, Any] = {
        "status": "ready" if ready else "not ready",
        "policy": {
            "name": policy.name,
            "hash": policy.digest,
            "policies": {p.name: p.digest for p in source.policies.policies.values()},
            "stale": source.stale,
            "error": error,
            "loaded_at": source.loaded_at,
            "reloads": source.reloads,
            "reload_failures": source.failures,
        },
    }
    if upstream is not None:
        body["upstream"] = {
            "reachable": upstream.reachable,
            "error": upstream.error if details else None,
        }
    return body, ready
