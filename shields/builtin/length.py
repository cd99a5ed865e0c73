"""``length``: size limits — characters per text, characters per request, messages per request.

Lengths are counted in characters of the ORIGINAL text (Unicode code points, what Python's
``len`` counts): not bytes, not tokens, not the normalized view.

``max_chars_per_message`` applies to every text the shields check on its own: at input, each
message's content (its text parts joined by a newline) and each tool call's arguments; at
output, each choice's content, reasoning, refusal and each tool call's arguments. Its scanner
reports the characters past the limit in the feed that brings them, so a stream is stopped (or
cut) exactly where it crosses the limit: ``max_match`` is 1.

``max_chars_per_request`` and ``max_messages`` are request-wide (``Shield.check_request``),
input stage only; they can only block, as there is nothing sensible to truncate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from shields.base import Chunk, Finding, Role, Scanner, Shield
from shields.registry import register
from shields.spec import ShieldSpecBase

__all__ = ["LengthShield", "LengthSpec"]

# strict: a YAML ``true`` or "100" is a mistake in a policy, not the number 1 or 100.
_Limit = Annotated[int, Field(strict=True, ge=1)]


class LengthSpec(ShieldSpecBase):
    type: Literal["length"] = "length"
    # With ``action: redact`` the text past the limit is cut and replaced by this.
    placeholder: str = Field(default="[TRUNCATED]", max_length=200)
    max_chars_per_message: _Limit | None = None
    max_chars_per_request: _Limit | None = None
    max_messages: _Limit | None = None

    @model_validator(mode="after")
    def _limits(self) -> LengthSpec:
        request_wide = [
            key for key in ("max_chars_per_request", "max_messages") if getattr(self, key)
        ]
        if self.max_chars_per_message is None and not request_wide:
            raise ValueError(
                "a length shield needs at least one of `max_chars_per_message`, "
                "`max_chars_per_request` or `max_messages`"
            )
        if self.action == "redact" and request_wide:
            raise ValueError(
                f"action: redact truncates each message at `max_chars_per_message`; "
                f"{' and '.join(f'`{k}`' for k in request_wide)} can only block: put them in "
                f"another length shield with action: block"
            )
        return self


class LengthShield(Shield):
    type_name = "length"
    reads_content = False

    def __init__(self, spec: LengthSpec) -> None:
        super().__init__(spec)
        # Counted in original characters: the limit is about what the client sent or receives.
        self.matches_raw = True
        self.max_chars = spec.max_chars_per_message
        self.max_request_chars = spec.max_chars_per_request
        self.max_messages = spec.max_messages

    @property
    def max_match(self) -> int:
        return 1

    def scanner(self) -> Scanner:
        return _LengthScanner(self)

    def check_request(self, messages: Sequence[tuple[Role, str]]) -> list[Finding]:
        # Only the roles this shield applies to count, like the per-message check.
        texts = [text for role, text in messages if self.applies_to(role)]
        findings = []
        if self.max_messages is not None and len(texts) > self.max_messages:
            findings.append(self.finding("max_messages", 0, 0))
        if self.max_request_chars is not None and (sum(map(len, texts)) > self.max_request_chars):
            findings.append(self.finding("max_chars_per_request", 0, 0))
        return findings


class _LengthScanner(Scanner):
    __slots__ = ("_limit", "_shield")

    def __init__(self, shield: LengthShield) -> None:
        self._shield = shield
        self._limit = shield.max_chars

    def feed(self, chunk: Chunk) -> list[Finding]:
        start = chunk.raw_start
        end = start + len(chunk.raw)
        limit = self._limit
        if limit is None or end <= limit:
            return []
        # The part of this chunk past the limit. A redaction merges these spans into one, so
        # a stream is cut like the whole text: the placeholder once, at the limit.
        return [self._shield.finding("max_chars_per_message", max(start, limit), end)]


register(LengthSpec, LengthShield)
