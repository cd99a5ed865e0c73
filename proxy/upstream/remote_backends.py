"""The network side of remote shields: ``shields.remote.RemoteBackends`` over HTTP.

Guard models and moderation endpoints are called through the ``openai`` package's
``AsyncOpenAI`` (one client per endpoint and key, its own retries off: the shield's tenacity loop
retries within the shield's budget); webhooks through one aiohttp session. Every wire failure
becomes a ``RemoteCallError`` saying whether a retry may help (connection errors, 429, 5xx).

Keys come from environment variables the policy names. A judge without ``api_key_env`` is sent a
placeholder key, never whatever ``OPENAI_API_KEY`` the proxy's environment happens to hold.
"""

from __future__ import annotations

import os
from typing import Any

import aiohttp
import openai

from proxy.upstream.client import retry_after_seconds
from shields import json_codec
from shields.builtin.llm_judge import LlmJudgeSpec
from shields.builtin.moderation import ModerationSpec
from shields.builtin.webhook import WebhookSpec
from shields.remote import RemoteAnswerError, RemoteCallError

__all__ = ["HttpBackends"]

_NO_KEY = "unused"
_MAX_REPLY_BYTES = 4 * 1024 * 1024
_CLIENTS_KEPT = 64


def _key_from(env_name: str | None) -> str:
    if env_name is None:
        return _NO_KEY
    value = os.environ.get(env_name)
    if not value:
        raise RemoteCallError(
            f"the environment variable {env_name} is not set", retryable=False, kind="config"
        )
    return value


def _status_error(status: int, retry_after: float | None) -> RemoteCallError:
    if status == 429:
        return RemoteCallError("429", retryable=True, kind="status_429", retry_after=retry_after)
    if status >= 500:
        return RemoteCallError(str(status), retryable=True, kind="status_5xx")
    return RemoteCallError(str(status), retryable=False, kind="status_4xx")


def _openai_error(exc: openai.OpenAIError) -> Exception:
    if isinstance(exc, openai.APITimeoutError):
        return RemoteCallError("timed out", retryable=True, kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return RemoteCallError("cannot connect", retryable=True, kind="connect")
    if isinstance(exc, openai.APIStatusError):
        retry_after = retry_after_seconds(exc.response.headers.get("retry-after"))
        return _status_error(exc.status_code, retry_after)
    return RemoteAnswerError(f"unreadable answer ({type(exc).__name__})")


class HttpBackends:
    """One per proxy process; ``close`` it on shutdown."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        self._session: aiohttp.ClientSession | None = None

    def _client(self, base_url: str, api_key_env: str | None) -> openai.AsyncOpenAI:
        key = _key_from(api_key_env)
        client = self._clients.get((base_url, key))
        if client is None:
            if len(self._clients) >= _CLIENTS_KEPT:
                # Rotated keys and edited policies must not pile up clients for ever.
                self._clients.pop(next(iter(self._clients)))
            client = openai.AsyncOpenAI(
                base_url=base_url, api_key=key, max_retries=0, timeout=600.0
            )
            self._clients[(base_url, key)] = client
        return client

    async def chat(self, spec: Any, messages: list[dict[str, str]]) -> str:
        assert isinstance(spec, LlmJudgeSpec)
        client = self._client(spec.base_url, spec.api_key_env)
        try:
            completion = await client.chat.completions.create(
                model=spec.model,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=spec.max_tokens,
                temperature=0,
            )
        except openai.OpenAIError as exc:
            raise _openai_error(exc) from None
        choices = getattr(completion, "choices", None)
        if not choices:
            raise RemoteAnswerError("the judge's reply has no choices")
        content = getattr(choices[0].message, "content", None)
        if not isinstance(content, str):
            raise RemoteAnswerError("the judge's reply has no text")
        return content

    async def moderate(self, spec: Any, text: str) -> dict[str, Any]:
        assert isinstance(spec, ModerationSpec)
        client = self._client(spec.base_url, spec.api_key_env)
        try:
            if spec.model:
                raw = await client.moderations.with_raw_response.create(
                    input=text, model=spec.model
                )
            else:
                raw = await client.moderations.with_raw_response.create(input=text)
        except openai.OpenAIError as exc:
            raise _openai_error(exc) from None
        try:
            reply = json_codec.loads(raw.content)
        except json_codec.InvalidJSON:
            raise RemoteAnswerError("the moderation reply is not JSON") from None
        if not isinstance(reply, dict):
            raise RemoteAnswerError("the moderation reply is not an object")
        return reply

    async def post_json(self, spec: Any, payload: dict[str, Any]) -> Any:
        assert isinstance(spec, WebhookSpec)
        headers = {"Content-Type": "application/json"}
        for name, env_name in spec.headers_env.items():
            headers[name] = _key_from(env_name)
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None), raise_for_status=False
            )
        try:
            async with self._session.post(
                spec.url, data=json_codec.dumps(payload), headers=headers
            ) as reply:
                if reply.status >= 300:
                    retry_after = retry_after_seconds(reply.headers.get("Retry-After"))
                    raise _status_error(reply.status, retry_after)
                body = b""
                async for data in reply.content.iter_chunked(64 * 1024):
                    body += data
                    if len(body) > _MAX_REPLY_BYTES:
                        break
        except aiohttp.ClientError:
            raise RemoteCallError("cannot connect", retryable=True, kind="connect") from None
        if len(body) > _MAX_REPLY_BYTES:
            raise RemoteAnswerError("the webhook's answer is too large")
        try:
            return json_codec.loads(body)
        except json_codec.InvalidJSON:
            raise RemoteAnswerError("the webhook's answer is not JSON") from None

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None
