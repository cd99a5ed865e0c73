"""The fields every shield spec shares; each shield type extends ``ShieldSpecBase``.

Specs are pydantic models with ``extra="forbid"`` so a typo in a policy file is an error at load
time, never a silently ignored setting.

``ENDPOINTS`` names the surfaces a shield can be scoped to (``endpoints:``); a dialect of the
proxy's exchange is served under the policy's view for its name
(``CompiledPolicy.for_endpoint``).
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from shields.base import Role

__all__ = ["ENDPOINTS", "Endpoint", "ShieldSpecBase", "StrictModel"]

# The client-facing surfaces a policy applies to: chat completions, the Responses API, the
# Anthropic Messages API, legacy completions and embeddings.
Endpoint = Literal["chat", "responses", "messages", "completions", "embeddings"]
ENDPOINTS: tuple[Endpoint, ...] = get_args(Endpoint)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShieldSpecBase(StrictModel):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=100)
    type: str
    action: Literal["block", "redact"] = "block"
    mode: Literal["enforce", "monitor"] = "enforce"
    # Input stage only: the message roles this shield looks at (all roles when unset).
    roles: list[Role] | None = None
    # The endpoints this shield runs on (every endpoint when unset).
    endpoints: list[Endpoint] | None = Field(default=None, min_length=1)
    placeholder: str = Field(default="[REDACTED]", max_length=200)
