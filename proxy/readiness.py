"""Is the upstream reachable? A cached TCP probe behind ``GET /readyz``.

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

from yarl import URL

__all__ = ["ProbeResult", "UpstreamProbe"]


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
