"""Client authentication: with a keys file, every request needs a valid shieldgate key.

The check is a middleware, so it runs before any handler: a request without a valid key is
answered 401 before its body is read, before a policy is chosen and before the upstream hears
of it. ``/healthz``, ``/readyz`` and ``/metrics`` stay open (probes and scrapers carry no key);
every other path, unknown ones included, needs a key, so an unauthenticated client learns
nothing about the service. ``/readyz`` tells it whether the proxy is ready and the policies'
hashes only; its details (a failed reload's error, which quotes the policy file) need a valid
key (:func:`presents_valid_key`).

The key is read from ``Authorization: Bearer ...`` — what every OpenAI SDK sends. On the
Anthropic surface (``/v1/messages`` and below) it may come as ``x-api-key`` instead, as Anthropic
SDKs send it; two different keys in the two headers are refused. Only there: elsewhere a second
header would be a second credential channel that the rest of the proxy does not know about
(stored responses, for one, belong to the ``Authorization`` credential that created them), and
the Messages API stores nothing.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from proxy.clients.keys import ClientKey, KeySource
from proxy.errors import Handler, anthropic_path, error_body, json_response
from proxy.ops.metrics import Metrics

__all__ = [
    "CLIENT_KEY",
    "KEYS",
    "OPEN_PATHS",
    "auth_middleware",
    "bearer_token",
    "client_key_of",
    "presented_keys",
    "presents_valid_key",
    "refused",
]

KEYS = web.AppKey("keys", KeySource)
CLIENT_KEY = web.RequestKey("client_key", ClientKey)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def bearer_token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def presented_keys(request: web.Request) -> list[str]:
    """The distinct keys the request presents: its bearer token, and on the Anthropic surface
    its ``x-api-key``."""
    keys = []
    bearer = bearer_token(request)
    if bearer is not None:
        keys.append(bearer)
    if anthropic_path(request.path):
        api_key = request.headers.get("x-api-key", "").strip()
        if api_key and api_key != bearer:
            keys.append(api_key)
    return keys


def _one_key(request: web.Request) -> str | None:
    """The key the request authenticates with: None for none, or for two different ones
    (which one the client meant is anyone's guess: neither is taken)."""
    keys = presented_keys(request)
    return keys[0] if len(keys) == 1 else None


def client_key_of(request: web.Request) -> ClientKey | None:
    """The key the request authenticated with (None when auth is off)."""
    return request.get(CLIENT_KEY)


def presents_valid_key(request: web.Request) -> bool:
    """Whether the request carries a valid client key — for the open paths, which the
    middleware lets through without one. False when there is no keys file: then no request
    can prove it is a client of the operator's."""
    keys = request.app.get(KEYS)
    return keys is not None and keys.ring.authenticate(_one_key(request)) is not None


def _unauthorized(message: str) -> web.Response:
    body = error_body(message, type="invalid_request_error", code="invalid_api_key")
    return json_response(
        body, status=401, headers={"WWW-Authenticate": 'Bearer realm="shieldgate"'}
    )


def auth_middleware(metrics: Metrics, keys: KeySource) -> Any:
    """Checks the client's key against ``keys`` (the app's keys file, also ``app[KEYS]``).
    Without a keys file there is no such check at all. The proxy's own app runs it within its
    one middleware (``proxy.serving.middleware``): ``refused``."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        answer = refused(request, metrics, keys)
        if answer is not None:
            return answer
        return await handler(request)

    return middleware


def refused(request: web.Request, metrics: Metrics, keys: KeySource) -> web.Response | None:
    """The 401 for a request without a valid key (an open path needs none); None when it may
    go on, its key then recorded (``client_key_of``)."""
    if request.path in OPEN_PATHS:
        return None
    key = keys.ring.authenticate(_one_key(request))
    if key is None:
        metrics.rejected.labels("auth").inc()
        # Never echo what was sent: it may be a real key of some other service.
        presented = presented_keys(request)
        if not presented:
            how = "`Authorization: Bearer sg-...`"
            if anthropic_path(request.path):
                how = "`x-api-key: sg-...` or " + how
            return _unauthorized(f"Missing API key: send your shieldgate key as {how}")
        if len(presented) > 1:
            return _unauthorized("Two different API keys provided (x-api-key, Authorization)")
        return _unauthorized("Incorrect API key provided")
    request[CLIENT_KEY] = key
    return None
