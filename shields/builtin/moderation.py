"""``moderation``: an OpenAI-compatible ``/v1/moderations`` endpoint with per-category thresholds.

The judged text is sent as the ``input`` (at the input stage a turn of the conversation —
system and developer prompts are turns too — at the output stage the reply); each category of
the first result whose score reaches its threshold becomes a finding labelled with the
category (``violence``, ``harassment/threatening`` ...). Categories without a threshold of
their own use ``default_threshold`` when it is set, and otherwise the endpoint's own
``categories`` flag. A reply without a readable result is a shield error (fail closed).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from shields.registry import register
from shields.remote import (
    JudgeRequest,
    RemoteAnswerError,
    RemoteBackends,
    RemoteShield,
    RemoteSpec,
    Vote,
)

__all__ = ["ModerationShield", "ModerationSpec", "flagged_categories"]


class ModerationSpec(RemoteSpec):
    type: Literal["moderation"]
    base_url: str = Field(pattern=r"^https?://", max_length=2000)
    model: str | None = Field(default=None, max_length=200)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    thresholds: dict[str, float] = Field(default_factory=dict)
    default_threshold: float | None = Field(default=None, ge=0, le=1)


def flagged_categories(
    reply: Any, thresholds: dict[str, float], default_threshold: float | None
) -> list[str]:
    """The categories of a moderation reply that reach their threshold, in the reply's order."""
    if not isinstance(reply, dict):
        raise RemoteAnswerError("the moderation reply is not an object")
    results = reply.get("results")
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        raise RemoteAnswerError("the moderation reply has no results")
    result = results[0]
    scores = result.get("category_scores")
    flags = result.get("categories") or {}
    if not isinstance(scores, dict) or not isinstance(flags, dict):
        raise RemoteAnswerError("the moderation result has no category scores")
    flagged = []
    for category, score in scores.items():
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise RemoteAnswerError("a moderation score is not a number")
        limit = thresholds.get(category, default_threshold)
        if (flags.get(category) is True) if limit is None else score >= limit:
            flagged.append(category)
    # A threshold for a category the endpoint does not score is a mismatch worth failing on:
    # the policy would silently check nothing.
    missing = [c for c in thresholds if c not in scores]
    if missing:
        raise RemoteAnswerError(f"the moderation reply does not score {missing}")
    return flagged


class ModerationShield(RemoteShield):
    type_name = "moderation"
    spec: ModerationSpec

    def __init__(self, spec: ModerationSpec) -> None:
        super().__init__(spec)
        self.spec = spec

    async def judge(self, request: JudgeRequest, backends: RemoteBackends) -> list[Vote]:
        reply = await backends.moderate(self.spec, request.text)
        categories = flagged_categories(reply, self.spec.thresholds, self.spec.default_threshold)
        return [Vote(category, self.action) for category in categories]


register(ModerationSpec, ModerationShield)
