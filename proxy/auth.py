"""Client authentication: with a keys file, every request needs a valid shieldgate key.

The check is a middleware, so it runs before any handler: a request without a valid key is
answered 401 before its body is read, before a policy is chosen and before the upstream hears
of it. ``/healthz``, ``/readyz`` and ``/metrics`` stay open (probes and scrapers carry no key);
every other path, unknown ones included, needs a key, so an unauthenticated client learns
nothing about the service. ``/readyz`` tells it whether the proxy is ready and the policies'
hashes only; its details (a failed reload's error, which quotes the policy file) need a valid
key (:func:`presents_valid_key`).

The key is read from ``Authorization: Bearer ...`` only — what every OpenAI SDK sends. A second
header (``x-api-key``) would be a second credential channel that the rest of the proxy does not
know about: stored responses, for one, belong to the ``Authorization`` credential that created
them.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from proxy.errors import Handler, error_body, json_response
from proxy.keys import ClientKey, KeySource
from proxy.metrics import Metrics

__all__ = [
    "CLIENT_KEY",
    "KEYS",
    "OPEN_PATHS",
    "auth_middleware",
    "bearer_token",
    "client_key_of",
    "presents_valid_key",
]

KEYS = web.AppKey("keys", KeySource)
CLIENT_KEY = web.RequestKey("client_key", ClientKey)
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})


def bearer_token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def client_key_of(request: web.Request) -> ClientKey | None:
    """The key the request authenticated with (None when auth is off)."""
    return request.get(CLIENT_KEY)


def presents_valid_key(request: web.Request) -> bool:
    """Whether the request carries a valid client key — for the open paths, which the
    middleware lets through without one. False when there is no keys file: then no request
    can prove it is a client of the operator's."""
    keys = request.app.get(KEYS)
    return keys is not None and keys.ring.authenticate(bearer_token(request)) is not None


def _unauthorized(message: str) -> web.Response:
    body = error_body(message, type="invalid_request_error", code="invalid_api_key")
    return json_response(
        body, status=401, headers={"WWW-Authenticate": 'Bearer realm="shieldgate"'}
    )


def auth_middleware(metrics: Metrics, keys: KeySource) -> Any:
    """Checks the client's key against ``keys`` (the app's keys file, also ``app[KEYS]``).
    Without a keys file there is no such middleware at all."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        token = bearer_token(request)
        key = keys.ring.authenticate(token)
        if key is None:
            metrics.rejected.labels("auth").inc()
            # Never echo what was sent: it may be a real key of some other service.
            if token is None:
                return _unauthorized(
                    "Missing API key: send your shieldgate key as `Authorization: Bearer sg-...`"
                )
            return _unauthorized("Incorrect API key provided")
        request[CLIENT_KEY] = key
        return await handler(request)

    return middleware
