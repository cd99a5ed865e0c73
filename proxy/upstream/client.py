"""The upstream client: a header allow-list, retries before the first byte, over one pool.

Only headers an OpenAI-compatible server needs are forwarded: cookies, proxy headers and
hop-by-hop headers of the client's connection never reach the upstream. Of the upstream's
response headers, hop-by-hop ones (the fixed list and whatever its ``Connection`` names),
framing headers and ``Set-Cookie`` are not relayed; end-to-end headers are, ``Server`` and
``Date`` included. Connection errors and 429/502/503/504 answers are retried with exponential
backoff and jitter, honouring ``Retry-After`` up to a cap — always before anything has been sent
to the client, so a retry can never duplicate or mix output. A redirect, or an answer that is
not HTTP, is an upstream error (502): neither retried nor relayed.

Every failure is logged once, as a warning naming its kind, the upstream's ``host:port`` (never
its path or query, which may carry credentials), the attempts made and the request id — never a
body, which is unchecked upstream text or the client's prompt.

The retry loop is written out rather than built from tenacity's ``AsyncRetrying``: that one
costs some 40 µs of setup and bookkeeping on every request, retried or not — a tenth of the
proxy's whole CPU time per non-stream request (``bench/perf/overhead_bench.py``, py-spy).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import re
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from urllib.parse import quote

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from proxy.errors import UpstreamError, UpstreamTimeout
from proxy.ops.metrics import Metrics
from proxy.serving.request_context import current_request_id
from proxy.settings import Settings
from proxy.upstream.http1 import Http1Pool, InvalidReply, UpstreamReply

__all__ = [
    "LoggedFailure",
    "Upstream",
    "encoded_query",
    "host_of",
    "log_failure",
    "response_headers",
    "retry_after_seconds",
]

log = logging.getLogger("shieldgate.upstream")

_FORWARDED_REQUEST_HEADERS = frozenset(
    {
        "authorization",
        "content-type",
        "accept",
        "user-agent",
        "openai-organization",
        "openai-project",
        "openai-beta",
        "idempotency-key",
    }
)
# Which organization and project an OpenAI key's usage is billed to.
_BILLING_HEADERS = frozenset({"openai-organization", "openai-project"})
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_MAX_BACKOFF = 5.0  # seconds: the cap of the exponential backoff between attempts
# Hop-by-hop headers (RFC 9110 7.6.1, and the obsolete Proxy-Connection some clients and
# proxies still honour), the framing headers aiohttp sets itself, and cookies: the client's
# Cookie is never forwarded, so an upstream cookie could not come back and would only hand
# every client the upstream's state (or, behind a browser, set cookies on the proxy's origin).
#
# ``Server`` and ``Date`` are end-to-end and relayed: aiohttp adds its own only when the
# response has none (``StreamResponse._prepare_headers``), so a relayed reply carries the
# upstream's, and one from an upstream that sent neither carries aiohttp's. The proxy's own
# answers (its errors, refusals, Responses API output) keep aiohttp's ``Server`` on purpose:
# it is the proxy that answered them, and the header tells an operator so.
_NOT_RELAYED_RESPONSE_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "content-encoding",
        "set-cookie",
        "set-cookie2",
    }
)


# A header name is a token (RFC 9110 5.1). A value the shields read must be the value the
# client gets: an undecodable byte (kept as a lone surrogate), a control character or DEL is
# dropped or mangled by the writer after the check (aiohttp's C writer deletes a surrogate, so
# ``AKIA\xffIOSF...`` would be checked as two pieces and arrive whole; its Python writer raises),
# and a terminal hides C0/C1 controls. Such a line is not relayed at all.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_UNWRITABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")


def response_headers(upstream: Mapping[str, str]) -> CIMultiDict[str]:
    """The upstream's response headers that may be relayed to the client.

    Besides the fixed hop-by-hop headers, every header the upstream's ``Connection`` header
    names is hop-by-hop for that response (RFC 9110 7.6.1) and stays behind. ``upstream`` may
    be a multidict: every ``Connection`` line counts.
    """
    items = list(upstream.items())
    named = {
        option.strip().lower()
        for name, value in items
        if name.lower() == "connection"
        for option in value.split(",")
    }
    headers: CIMultiDict[str] = CIMultiDict()
    for name, value in items:
        lower = name.lower()
        if lower in _NOT_RELAYED_RESPONSE_HEADERS or lower in named:
            continue
        if not _TOKEN.fullmatch(name) or _UNWRITABLE.search(value):
            log.warning(
                "an upstream response header with characters no header may carry was dropped"
            )
            continue
        headers.add(name, value)
    return headers


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds; None when unreadable."""
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


# RFC 3986 query characters besides the unreserved ones ``quote`` always keeps; ``%`` too, so
# existing escapes pass through as they are.
_QUERY_SAFE = "!$&'()*+,;=:@/?%"
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


def encoded_query(query: str) -> str:
    """A query string as it may go into a URL: escapes kept exactly, and everything a URL's
    query cannot hold (``#``, spaces, quotes, non-ASCII, a ``%`` that starts no escape)
    percent-encoded, so nothing in it can end the query or reach the request line raw."""
    quoted = quote(query.encode("utf-8", "surrogatepass"), safe=_QUERY_SAFE)
    return _STRAY_PERCENT.sub("%25", quoted)


def host_of(url: str | URL) -> str:
    """``host:port`` of a URL, the port always shown: what a log may say about an upstream
    (its user info, path and query may hold credentials)."""
    parsed = URL(url)
    host = parsed.host or "?"
    if ":" in host:  # IPv6
        host = f"[{host}]"
    return f"{host}:{parsed.port}" if parsed.port is not None else host


def log_failure(
    kind: str, host: str, attempts: int | None = None, *, status: int | None = None
) -> None:
    """The one warning an upstream failure gets: its kind (``connect_error``, ``timeout``,
    ``status_5xx``, ``invalid_reply``, ...), the upstream's ``host:port``, the attempts made
    when known, and the request id. Never a body: that is the client's prompt or unchecked
    upstream text."""
    request_id = current_request_id.get() or "-"
    extra: dict[str, object] = {
        "kind": kind,
        "upstream": host,
        "attempts": attempts,
        "request_id": request_id,
    }
    if status is not None:
        extra["status"] = status
    described = kind if status is None else f"{kind} (HTTP {status})"
    tried = "" if attempts is None else f"{attempts} attempt{'s' if attempts != 1 else ''}, "
    log.warning(
        "upstream failure: %s at %s (%srequest %s)",
        described,
        host,
        tried,
        request_id,
        extra=extra,
    )


class LoggedFailure:
    """Marks an exception whose failure :func:`log_failure` has already reported, so that
    whoever logs the upstream errors it sees does not report it a second time."""


class _LoggedError(UpstreamError, LoggedFailure):
    pass


class _LoggedTimeout(UpstreamTimeout, LoggedFailure):
    pass


class Upstream:
    """Owns the ClientSession; created and closed by the app's cleanup context."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None) -> None:
        self.settings = settings
        self._metrics = metrics
        self.base_url = settings.upstream
        self.host = host_of(settings.upstream)
        self._pool: Http1Pool | None = None
        # The client's key (if any) is never passed on: with a keys file it is a shieldgate
        # key, meant for the proxy alone; with an upstream key, the proxy's own replaces it.
        self._drop_client_key = bool(settings.upstream_api_key or settings.keys_file)
        self._own_key = f"Bearer {settings.upstream_api_key}" if settings.upstream_api_key else None
        # With the proxy's own key, the organization and project it is billed to are the
        # operator's choice (or the key's default): never the client's headers. A value the
        # operator set replaces the client's in any case (one header, not two).
        self._billing = {
            name: value
            for name, value in (
                ("OpenAI-Organization", settings.upstream_organization),
                ("OpenAI-Project", settings.upstream_project),
            )
            if value is not None
        }
        self._dropped = (
            _BILLING_HEADERS
            if settings.upstream_api_key
            else frozenset(name.lower() for name in self._billing)
        )

    async def start(self) -> None:
        settings = self.settings
        self._pool = Http1Pool(
            settings.upstream,
            limit=settings.upstream_pool_size,
            connect_timeout=settings.connect_timeout,
            read_timeout=settings.read_timeout,
        )
        self._base_path = self._pool.base_path

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    def headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        headers: dict[str, str] = {}
        drop_client_key = self._drop_client_key
        dropped = self._dropped
        for name, value in client_headers.items():
            lower = name.lower()
            if lower in _FORWARDED_REQUEST_HEADERS:
                if (lower == "authorization" and drop_client_key) or lower in dropped:
                    continue
            elif not lower.startswith("x-stainless-"):
                continue
            headers[name] = value
        if self._own_key is not None:
            # The proxy's key never goes anywhere but the upstream.
            headers["Authorization"] = self._own_key
        if self._billing:
            headers.update(self._billing)
        # The request's id as the proxy's logs, audit records and reply carry it: the client's
        # own when it was a plain token, else the one made for it — never a value the proxy
        # refused (huge, odd characters) and never the second of two.
        request_id = current_request_id.get()
        if request_id is not None:
            headers["X-Request-Id"] = request_id
        return headers

    def _backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff after failed attempt number ``attempt`` (1-based):
        uniform in [0, min(retry_backoff * 2**(attempt - 1), 5 s)]."""
        base = self.settings.retry_backoff
        if base <= 0:
            return 0.0
        # Past the cap the power is not computed at all (it could overflow a float).
        if attempt - 1 > math.log2(_MAX_BACKOFF / base):
            return random.uniform(0, _MAX_BACKOFF)
        return random.uniform(0, min(base * 2 ** (attempt - 1), _MAX_BACKOFF))

    def _count_error(self, kind: str, endpoint: str) -> None:
        if self._metrics is not None:
            self._metrics.upstream_errors.labels(kind, endpoint).inc()

    def log_failure(self, kind: str, attempts: int | None = None) -> None:
        """:func:`log_failure` for this upstream."""
        log_failure(kind, self.host, attempts)

    def request(
        self,
        method: str,
        path: str,
        *,
        headers: dict[str, str],
        body: bytes | None = None,
        query: str = "",
        endpoint: str,
    ) -> AbstractAsyncContextManager[UpstreamReply]:
        """Sends the request (with retries) on entering; yields the response, closed on exit.

        ``query`` is the client's query string as it came on the wire, still percent-encoded
        (``request.rel_url.raw_query_string``): it is forwarded byte for byte, so ``%23`` stays
        a ``#`` inside a value and ``%2F`` is not turned into a ``/``. Whatever it holds, it
        only ever becomes the query of the upstream URL, never its host or path.
        ``endpoint``: the client-facing endpoint the call serves (``chat``, ``models``...),
        the label of its retries and failures in the metrics."""
        assert self._pool is not None, "Upstream.start() was not awaited"
        target = f"{self._base_path}/{path}"
        if query:
            target = f"{target}?{encoded_query(query)}"
        return _Exchange(self, method, target, headers, body, endpoint)

    async def _send(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
        endpoint: str,
    ) -> UpstreamReply:
        pool = self._pool
        assert pool is not None, "Upstream.start() was not awaited"
        attempts = self.settings.retry_attempts
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= attempts
            try:
                response = await pool.request(method, target, headers, body)
            except TimeoutError:
                # Checked first: aiohttp's timeout errors are connection errors too.
                if last:
                    self._count_error("timeout", endpoint)
                    log_failure("timeout", self.host, attempt)
                    raise _LoggedTimeout(
                        f"The upstream did not answer in time ({attempts} attempts)"
                    ) from None
                delay = self._backoff(attempt)
            except InvalidReply as exc:
                # It answered, but not in HTTP (a bad status line, headers or framing): asking
                # again will not help. Only the kind of error is passed on, never the
                # upstream's bytes (unchecked text).
                self._count_error("bad_reply", endpoint)
                log_failure("invalid_reply", self.host, attempt)
                raise _LoggedError(
                    f"The upstream sent an invalid HTTP response ({type(exc).__name__})"
                ) from None
            except aiohttp.ClientError as exc:
                connection = isinstance(exc, aiohttp.ClientConnectionError)
                if last or not connection:
                    self._count_error("unreachable", endpoint)
                    log_failure(
                        "connect_error" if connection else "client_error", self.host, attempt
                    )
                    raise _LoggedError(
                        f"The upstream is unreachable after {attempt} "
                        f"attempt{'s' if attempt > 1 else ''}: {type(exc).__name__}"
                    ) from None
                delay = self._backoff(attempt)
            else:
                if 300 <= response.status < 400:
                    # Relayed, a redirect would send the client's SDK (which follows redirects)
                    # to fetch its answer from wherever the upstream points, past the shields.
                    status = response.status
                    response.close()
                    self._count_error("bad_reply", endpoint)
                    log_failure("redirect", self.host, attempt, status=status)
                    raise _LoggedError(
                        f"The upstream answered with a redirect ({status}), which shieldgate "
                        "neither follows nor relays"
                    )
                if last or response.status not in _RETRY_STATUSES:
                    break
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                response.close()
                if retry_after is None:
                    delay = self._backoff(attempt)
                else:
                    delay = min(retry_after, self.settings.retry_after_cap)
            if self._metrics is not None:
                self._metrics.upstream_retries.labels(endpoint).inc()
            await asyncio.sleep(delay)
        status = response.status
        if status >= 500 or status == 429:
            # Relayed to the client as the upstream's own error; logged here all the same, as
            # an operator needs to see it.
            kind = "status_429" if status == 429 else "status_5xx"
            log_failure(kind, self.host, attempt, status=status)
        return response


class _Exchange:
    """``async with upstream.request(...)``: a class rather than ``@asynccontextmanager``,
    whose async-generator machinery (the wrapper, the loop's first-iteration hook and weak
    reference, the teardown) costs some 4 µs per request on its own."""

    __slots__ = (
        "_body",
        "_endpoint",
        "_headers",
        "_method",
        "_reply",
        "_target",
        "_upstream",
    )

    def __init__(
        self,
        upstream: Upstream,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
        endpoint: str,
    ) -> None:
        self._upstream = upstream
        self._method = method
        self._target = target
        self._headers = headers
        self._body = body
        self._endpoint = endpoint
        self._reply: UpstreamReply | None = None

    async def __aenter__(self) -> UpstreamReply:
        reply = self._reply = await self._upstream._send(
            self._method, self._target, self._headers, self._body, self._endpoint
        )
        return reply

    async def __aexit__(self, *exc_info: object) -> None:
        # A reply read to the end has gone back to the pool already; one abandoned mid-way
        # (a block, a client that left) closes its connection so the upstream stops at once.
        if self._reply is not None:
            self._reply.close()
