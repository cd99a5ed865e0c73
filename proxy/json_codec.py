"""JSON decoding for hostile input: fast (orjson) first, exact (json) when orjson refuses.

orjson rejects a few things Python's ``json`` accepts — NaN, integers beyond 64 bits — so a
valid body must not become an error just because of the fast path; and deep nesting must be a
clear error, never a RecursionError that escapes as a 500.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["InvalidJSON", "dumps", "loads"]


class InvalidJSON(ValueError):
    """The bytes are not JSON; the message says why."""


def loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(data)
    except RecursionError:
        raise InvalidJSON("JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidJSON(str(exc)) from None


def dumps(value: Any) -> bytes:
    """Serializes data that came from hostile JSON.

    The ``json`` fallback of ``loads`` accepts lone surrogates (``"\\ud800"``), which orjson
    refuses to encode; ``json.dumps`` writes them back as the escapes they came in as.
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()
