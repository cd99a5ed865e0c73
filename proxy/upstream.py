"""The upstream client: one shared session, a header allow-list, retries before the first byte.

Only headers an OpenAI-compatible server needs are forwarded: cookies, proxy headers and
hop-by-hop headers of the client's connection never reach the upstream. Connection errors and
429/502/503/504 answers are retried with exponential backoff and jitter, honouring
``Retry-After`` up to a cap — always before anything has been sent to the client, so a retry can
never duplicate or mix output.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import aiohttp
from multidict import CIMultiDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from proxy.errors import UpstreamError, UpstreamTimeout
from proxy.metrics import Metrics
from proxy.settings import Settings

__all__ = ["Upstream", "response_headers"]

_FORWARDED_REQUEST_HEADERS = frozenset(
    {
        "authorization",
        "content-type",
        "accept",
        "user-agent",
        "openai-organization",
        "openai-project",
        "openai-beta",
        "x-request-id",
        "idempotency-key",
    }
)
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Hop-by-hop headers (RFC 9110 7.6.1) and the framing headers aiohttp sets itself.
_NOT_RELAYED_RESPONSE_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
        "date",
        "server",
    }
)


def response_headers(upstream: Mapping[str, str]) -> CIMultiDict[str]:
    """The upstream's response headers that may be relayed to the client."""
    headers: CIMultiDict[str] = CIMultiDict()
    for name, value in upstream.items():
        if name.lower() not in _NOT_RELAYED_RESPONSE_HEADERS:
            headers.add(name, value)
    return headers


class _RetryableStatus(Exception):
    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(status)
        self.status = status
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Upstream:
    """Owns the ClientSession; created and closed by the app's cleanup context."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self._metrics = metrics
        self.base_url = settings.upstream
        self._session: aiohttp.ClientSession | None = None
        self._backoff = wait_random_exponential(multiplier=settings.retry_backoff, max=5.0)

    async def start(self) -> None:
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.settings.connect_timeout,
            sock_read=self.settings.read_timeout,
        )
        self._session = aiohttp.ClientSession(
            timeout=timeout,
            auto_decompress=True,
            connector=aiohttp.TCPConnector(
                limit=self.settings.upstream_pool_size, enable_cleanup_closed=True
            ),
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        headers = {
            name: value
            for name, value in client_headers.items()
            if name.lower() in _FORWARDED_REQUEST_HEADERS or name.lower().startswith("x-stainless-")
        }
        if self.settings.upstream_api_key or self.settings.keys_file:
            # The client's key (if any) is never passed on: with a keys file it is a shieldgate
            # key, meant for the proxy alone.
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
        if self.settings.upstream_api_key:
            # The proxy's own key replaces whatever the client sent, and the proxy's key never
            # goes anywhere but the upstream.
            headers["Authorization"] = f"Bearer {self.settings.upstream_api_key}"
        return headers

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _RetryableStatus) and exc.retry_after is not None:
            return min(exc.retry_after, self.settings.retry_after_cap)
        return float(self._backoff(state))

    def _count_retry(self, state: RetryCallState) -> None:
        if self._metrics is not None:
            self._metrics.upstream_retries.inc()

    def _count_error(self, kind: str) -> None:
        if self._metrics is not None:
            self._metrics.upstream_errors.labels(kind).inc()

    @asynccontextmanager
    async def request(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str],
        body: bytes | None = None,
        query: str = "",
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """Sends the request (with retries) and yields the response, closed on exit."""
        assert self._session is not None, "Upstream.start() was not awaited"
        url = f"{self.base_url}/{path}"
        if query:
            url = f"{url}?{query}"
        attempts = self.settings.retry_attempts
        response: aiohttp.ClientResponse | None = None
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(attempts),
                wait=self._wait,
                retry=retry_if_exception_type(
                    (_RetryableStatus, aiohttp.ClientConnectionError, asyncio.TimeoutError)
                ),
                reraise=True,
                before_sleep=self._count_retry,
            ):
                with attempt:
                    response = await self._session.request(
                        method, url, headers=headers, data=body, allow_redirects=False
                    )
                    last = attempt.retry_state.attempt_number >= attempts
                    if response.status in _RETRY_STATUSES and not last:
                        retry_after = _retry_after(response.headers.get("retry-after"))
                        response.release()
                        response = None
                        raise _RetryableStatus(status=0, retry_after=retry_after)
        except TimeoutError:
            self._count_error("timeout")
            raise UpstreamTimeout(
                f"The upstream did not answer in time ({attempts} attempts)"
            ) from None
        except aiohttp.ClientError as exc:
            self._count_error("unreachable")
            raise UpstreamError(
                f"The upstream is unreachable after {attempts} attempts: {type(exc).__name__}"
            ) from None
        assert response is not None
        try:
            yield response
        finally:
            # A response read to the end goes back to the pool; one abandoned mid-way (a block,
            # a client that left) is closed so the upstream stops generating at once.
            if response.content.at_eof():
                response.release()
            else:
                response.close()
