"""JSON decoding for hostile input: fast (orjson) first, exact (json) when orjson refuses.

orjson rejects a few things Python's ``json`` accepts — NaN, integers beyond 64 bits — so a
valid body must not become an error just because of the fast path; and deep nesting must be a
clear error, never a RecursionError (or orjson's TypeError) that escapes as a 500.

Nesting deeper than ``MAX_DEPTH`` is ``InvalidJSON``, whichever parser read it and whatever the
caller asked for: orjson reads 1,024 levels but writes only 254, so a deeper value would fail
later, wherever it is written back (a redaction, a store, a translation) — as a 500, or a cut
stream. Refusing it here makes it a 400 for a request and a 502 (or an in-band error) for an
upstream reply, and guarantees that every value ``loads`` returns can be written by orjson as
far as nesting goes.

A client's request body is forwarded as it came, so it is read with ``unique_keys``: an object
with the same key twice means whatever each parser decides (the last value here, possibly the
first upstream), and the upstream could act on a value the shields never saw.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "DuplicateKey", "InvalidJSON", "dumps", "go_fold", "loads"]

# Arrays and objects nested in one another, at most: what orjson writes (255 levels raise
# "Recursion limit reached"). No request or reply of the APIs served needs a tenth of it.
MAX_DEPTH = 254
_TOO_DEEP = f"JSON nested more than {MAX_DEPTH} levels deep"
# orjson's message when it refuses to write a value nested too deeply.
_ORJSON_TOO_DEEP = "Recursion limit reached"


class InvalidJSON(ValueError):
    """The bytes are not JSON; the message says why."""


class DuplicateKey(InvalidJSON):
    """An object has the same key twice. The message does not quote the key (an upstream's
    key is upstream text, which error messages never carry); ``key`` holds it."""

    def __init__(self, key: str) -> None:
        super().__init__("an object has the same key twice")
        self.key = key


def _not_a_number(name: str) -> Any:
    raise InvalidJSON(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    # "1e400" is JSON, but Python reads it as infinity, which it writes back as "Infinity".
    value = float(text)
    if math.isinf(value):
        raise InvalidJSON(f"{text[:32]} is too large for a number")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return obj


def loads(data: bytes, *, unique_keys: bool = False, allow_nan: bool = True) -> Any:
    """Decodes JSON; with ``unique_keys``, an object with a repeated key is ``DuplicateKey``;
    without ``allow_nan``, ``NaN`` and ``Infinity`` (which are not JSON) are ``InvalidJSON``;
    nesting deeper than ``MAX_DEPTH`` is always ``InvalidJSON``.

    Compact JSON as servers write it (no spaces, what orjson writes back) is proved free of
    repeated keys by orjson alone: a repeated key would be one pair short in what it writes
    back. Anything else needs every object's keys in order, which orjson does not give:
    Python's ``json`` parses it again (~5x orjson's time: ~20 µs for a 4 KB request).
    """
    try:
        value = orjson.loads(data)  # never NaN or infinity: orjson refuses them
    except orjson.JSONDecodeError:
        pass  # not JSON, or JSON only Python's parser reads (NaN, huge integers): it says which
    else:
        if not unique_keys:
            _check_depth(data, value)
            return value
        try:
            compact = orjson.dumps(value) == data  # written back: no deeper than MAX_DEPTH
        except TypeError as exc:
            if str(exc) == _ORJSON_TOO_DEEP:
                raise InvalidJSON(_TOO_DEEP) from None
            compact = False  # cannot happen to what orjson read; the slow path decides
        if compact:
            return value
    try:
        # JSON between systems is UTF-8 (RFC 8259). Python's parser would also detect UTF-16
        # and UTF-32 from the bytes, a reading an upstream may not share: refused instead.
        text = str(data, "utf-8")
    except UnicodeDecodeError:
        raise InvalidJSON("JSON text must be encoded as UTF-8") from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys if unique_keys else None,
            parse_constant=None if allow_nan else _not_a_number,
            parse_float=None if allow_nan else _finite_float,
        )
    except RecursionError:
        raise InvalidJSON(_TOO_DEEP) from None
    except InvalidJSON:
        raise
    except ValueError as exc:
        raise InvalidJSON(str(exc)) from None
    _check_depth(data, value)
    return value


def _check_depth(data: bytes, value: Any) -> None:
    """InvalidJSON when ``value`` (parsed from ``data``) nests deeper than ``MAX_DEPTH``.

    Almost always proved by counting brackets in C: fewer than MAX_DEPTH cannot nest deeper.
    Otherwise orjson tries to write it (C again); only a value it refuses for another reason
    (a lone surrogate, an integer beyond 64 bits: the ``json`` path's) is walked in Python.
    """
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return
    try:
        orjson.dumps(value)
    except TypeError as exc:
        if str(exc) == _ORJSON_TOO_DEEP or _depth(value) > MAX_DEPTH:
            raise InvalidJSON(_TOO_DEEP) from None


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in ``value`` (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > deepest:
            deepest = depth
            if deepest > MAX_DEPTH:
                break  # deep enough to refuse: the rest does not matter
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def go_fold(key: str) -> str:
    """``key`` as Go's ``encoding/json`` compares it with a struct's field names.

    Go (Ollama's OpenAI endpoint among others) matches object keys to fields ignoring case and
    keeps the last key that matches: ``"Content"`` or ``"ſtream"`` (long s) or
    ``"\u212aind"`` (KELVIN SIGN) set the field ``content``, ``stream`` or ``kind``. Its
    ``foldName`` folds ASCII to upper case and any other character to the smallest one of its
    simple case-folding orbit; two keys Go takes for one field fold to the same string here.
    """
    if key.isascii():
        return key.upper()  # the fast path: what nearly every key is
    return "".join(_fold_char(char) for char in key)


def _fold_char(char: str) -> str:
    if char < "\x80":
        return char.upper()
    # The orbit of ``char`` under simple case mappings, two steps out: enough for the orbits
    # that reach ASCII (K/k/KELVIN SIGN, S/s/LONG S), which are all a field name can match.
    orbit = {char}
    for _ in range(2):
        for known in list(orbit):
            for mapped in (known.lower(), known.upper(), known.casefold()):
                if len(mapped) == 1:
                    orbit.add(mapped)
    # The Turkic dotted and dotless i fold only to themselves in Go (its ``caseOrbit``), where
    # Python's mappings reach I and i.
    return char if char in ("\u0130", "\u0131") else min(orbit)


def dumps(value: Any) -> bytes:
    """Serializes data that came from hostile JSON.

    The ``json`` fallback of ``loads`` accepts lone surrogates (``"\\ud800"``), which orjson
    refuses to encode; ``json.dumps`` writes them back as the escapes they came in as.
    """
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()
