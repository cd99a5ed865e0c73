"""A plugin that registers itself like a built-in instead of naming its ShieldType."""

from __future__ import annotations

from shieldgate_misfits import MisfitShield, MisfitSpec

from shields import ShieldType
from shields.registry import register

register(MisfitSpec, MisfitShield)  # refused: only built-ins register
SHIELD_TYPE = ShieldType(MisfitSpec, MisfitShield)
