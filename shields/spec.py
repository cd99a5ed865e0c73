"""The fields every shield spec shares; each shield type extends ``ShieldSpecBase``.

Specs are pydantic models with ``extra="forbid"`` so a typo in a policy file is an error at load
time, never a silently ignored setting.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from shields.base import Role

__all__ = ["ShieldSpecBase", "StrictModel"]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShieldSpecBase(StrictModel):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=100)
    type: str
    action: Literal["block", "redact"] = "block"
    mode: Literal["enforce", "monitor"] = "enforce"
    # Input stage only: the message roles this shield looks at (all roles when unset).
    roles: list[Role] | None = None
    placeholder: str = Field(default="[REDACTED]", max_length=200)
