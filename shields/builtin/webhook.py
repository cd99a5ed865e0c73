"""``webhook``: an in-house classifier behind a URL.

The shield POSTs ``{"stage", "text", "messages", "policy"}`` as JSON (``messages`` is the
conversation as ``[{"role", "content"}]``, with the roles the client wrote — system and
developer prompts too; at the input stage it ends with the judged turn, whose messages ``text``
joins; at the output stage ``text`` is the reply) and reads
``{"action": "allow"|"block"|"redact", "reason": ..., "text": ...}``. ``redact`` needs ``text``:
it replaces the judged text. Any other answer is a shield error (fail closed).

The reason becomes the finding's label, cut to a short, log-safe token: the service is the
operator's own, but a label is written to logs and the audit trail and must not carry text.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from shields.base import Action
from shields.registry import register
from shields.remote import (
    JudgeRequest,
    RemoteAnswerError,
    RemoteBackends,
    RemoteShield,
    RemoteSpec,
    Vote,
)

__all__ = ["WebhookShield", "WebhookSpec", "read_answer"]

_LABEL_CHARS = re.compile(r"[^A-Za-z0-9_.:/-]+")
_MAX_LABEL = 64
_MAX_REPLACEMENT = 1_000_000


class WebhookSpec(RemoteSpec):
    type: Literal["webhook"]
    url: str = Field(pattern=r"^https?://", max_length=2000)
    # Header name -> NAME of the environment variable holding its value (e.g. a bearer token).
    headers_env: dict[str, str] = Field(default_factory=dict)


def read_answer(answer: Any) -> list[Vote]:
    if not isinstance(answer, dict):
        raise RemoteAnswerError("the webhook's answer is not a JSON object")
    action = answer.get("action")
    reason = answer.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise RemoteAnswerError("the webhook's `reason` is not a string")
    label = _LABEL_CHARS.sub("_", reason or "").strip("_")[:_MAX_LABEL] or str(action)
    if action == "allow":
        return []
    if action == "block":
        return [Vote(label, Action.BLOCK)]
    if action == "redact":
        text = answer.get("text")
        if not isinstance(text, str) or len(text) > _MAX_REPLACEMENT:
            raise RemoteAnswerError("a webhook `redact` answer needs the replacement `text`")
        return [Vote(label, Action.REDACT, replacement=text)]
    raise RemoteAnswerError("the webhook's `action` is not allow, block or redact")


class WebhookShield(RemoteShield):
    type_name = "webhook"
    spec: WebhookSpec

    def __init__(self, spec: WebhookSpec) -> None:
        super().__init__(spec)
        self.spec = spec

    def payload(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "stage": request.stage.value,
            "text": request.text,
            "messages": [
                {"role": role.value, "content": text} for role, text in request.conversation
            ],
            "policy": request.policy,
        }

    async def judge(self, request: JudgeRequest, backends: RemoteBackends) -> list[Vote]:
        answer = await backends.post_json(self.spec, self.payload(request))
        return read_answer(answer)


register(WebhookSpec, WebhookShield)
