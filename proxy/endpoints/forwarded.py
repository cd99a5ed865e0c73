"""The request side of the dialects whose upstream speaks the client's own API (chat,
completions, embeddings): what goes upstream, and what is refused before it.

The client's body goes upstream byte for byte unless the input stage redacted it; then the
re-serialized body, redactions written in, is what the upstream gets. Token ids given as a
prompt or input cannot be read by any shield: refused (400) unless the policy's
``request.token_inputs`` is ``allow``.
"""

from __future__ import annotations

from typing import Any

from proxy.errors import BadRequest
from proxy.exchange.lifecycle import Exchange, UpstreamCall
from proxy.state import UPSTREAM
from shields import json_codec
from shields.policy import CompiledPolicy

__all__ = ["forwarded_call", "refuse_token_inputs"]


def forwarded_call(
    exchange: Exchange, raw: bytes, body: dict[str, Any], redacted: bool, *, path: str
) -> UpstreamCall:
    """``raw`` as the client sent it, or ``body`` (the parsed request, redactions written in)
    when the input stage ``redacted`` it, to the upstream's ``path``."""
    request = exchange.request
    headers = exchange.app[UPSTREAM].headers(request.headers)
    if redacted:
        headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        headers["Content-Type"] = "application/json"
    return UpstreamCall(
        body=json_codec.dumps(body) if redacted else raw,
        headers=headers,
        # Still percent-encoded, as the client sent it: decoding it would change what it says.
        query=request.rel_url.raw_query_string,
        path=path,
    )


def refuse_token_inputs(policy: CompiledPolicy, token_ids: bool, param: str) -> None:
    """A BadRequest naming ``param`` if it holds ``token_ids`` and ``policy`` does not let
    them pass unchecked."""
    if token_ids and policy.spec.request.token_inputs != "allow":
        raise BadRequest(
            f"'{param}' is token ids, which shieldgate cannot check: send the text instead "
            f"(policy {policy.name!r} refuses token inputs)",
            param=param,
            code="token_inputs_refused",
        )
