"""Entry points that name something other than a well-formed ShieldType of their name."""

from __future__ import annotations

from typing import Literal

from shields import Scanner, Shield, ShieldSpecBase, ShieldType


class MisfitSpec(ShieldSpecBase):
    type: Literal["misfit"] = "misfit"


class MisfitShield(Shield):
    type_name = "misfit"

    @property
    def max_match(self) -> int:
        return 1

    def scanner(self) -> Scanner:
        raise NotImplementedError


class LooseSpec(ShieldSpecBase):
    type: str = "loose"  # not Literal["loose"]: the policy model cannot dispatch on it


class LooseShield(MisfitShield):
    type_name = "loose"


def make_shield() -> ShieldType:
    """A factory: the entry point must name the ShieldType itself."""
    return ShieldType(MisfitSpec, MisfitShield)


MISNAMED = ShieldType(MisfitSpec, MisfitShield)  # its entry point is named `misnamed`
LOOSE = ShieldType(LooseSpec, LooseShield)
