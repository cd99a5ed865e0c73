"""Finding text hidden in an encoding: base64, hex, percent-encoding and named ROT13.

A payload written as ``aWdub3JlIGFsbCBwcmV2aW91cyBpbnN0cnVjdGlvbnM=`` passes every shield that
reads the text as it is, while the model reads it decoded when asked to. ``decoded_pieces``
finds such runs in a whole text and returns what each decodes to, with the span of the encoded
run in the original text, so that a finding in the decoded text can block or redact the run.

Decoding never flags anything by itself: a run counts only if it decodes to readable text
(valid UTF-8, at least ``MIN_DECODED`` characters, at least ``MIN_READABLE`` of them
printable), and only what the shields then find in it matters. Binary data (images, digests,
random tokens) fails the readability test, so it is never handed to the shields.

Bounds, so that a hostile text cannot make decoding expensive: every search is a single
linear regex pass (no pattern here can backtrack over more than one run), nesting stops at
``MAX_DEPTH`` levels (base64 of hex is decoded, base64 of hex of base64 is not), and all the
decoded text together is at most ``BUDGET_FACTOR`` times the length of the original text —
decoding stops when the next piece would exceed it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = [
    "BUDGET_FACTOR",
    "ENCODINGS",
    "MAX_DEPTH",
    "MIN_DECODED",
    "MIN_READABLE",
    "MIN_RUN",
    "Decoded",
    "decoded_label",
    "decoded_pieces",
    "redecode",
]

ENCODINGS = ("base64", "hex", "percent", "rot13")
MIN_RUN = 16  # characters of a base64 or hex run: shorter ones are words and numbers
MIN_PERCENT = 3  # %XX escapes in a percent-encoded token
MIN_DECODED = 8  # characters a decoded run must have to be read
MIN_READABLE = 0.9  # the share of printable characters in it
MAX_DEPTH = 2
BUDGET_FACTOR = 2
ROT13_SPAN = 1024  # characters after a mention of ROT13 that are read as ROT13

# The base64 alphabets, standard and URL-safe together (a run that mixes them is decoded as
# one: the mix is no reason to look away). Hex digits are a subset, so hex runs are found
# here too and told apart by their characters.
_RUN = re.compile(r"[A-Za-z0-9+/_-]{" + str(MIN_RUN) + r",}={0,2}")
# Runs separated by whitespace only: MIME wraps base64 at 76 characters, and a payload split
# in two is still one payload. Only the whitespace between runs is matched, never a run.
_GAP = re.compile(r"\s+")
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})+")
_TOKEN = re.compile(r"\S+")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# The text must name ROT13 (or a Caesar shift) for anything to be read as ROT13: every
# stretch of letters is a ROT13 "encoding" of something, so unnamed ones are never decoded.
_ROT13_NAME = re.compile(r"\brot[\s_-]?13\b|\bcaesar\b", re.IGNORECASE)
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)
_URLSAFE = str.maketrans("-_", "+/")
_LAYOUT = str.maketrans("", "", "\t\n\r")


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one encoded run of the original text decodes to."""

    start: int  # the encoded run, in the original text
    end: int
    text: str
    encoding: str  # "base64", or the chain from the outside in for nested runs: "base64+hex"


def _readable(text: str) -> bool:
    """Decoded text worth showing the shields: long enough and mostly printable."""
    if len(text) < MIN_DECODED:
        return False
    laid_out = text.translate(_LAYOUT)  # line breaks and tabs are printable enough
    if laid_out.isprintable():
        return True
    unprintable = sum(1 for ch in laid_out if not ch.isprintable())
    return unprintable <= (1 - MIN_READABLE) * len(text)


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _from_hex(run: str) -> str | None:
    if len(run) % 2 or _HEX.fullmatch(run) is None:
        return None
    return _utf8(bytes.fromhex(run))


def _from_base64(run: str) -> str | None:
    body = run.rstrip("=").translate(_URLSAFE)
    if len(body) % 4 == 1:
        body = body[:-1]  # a stray last character holds no whole byte
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error:
        return None
    return _utf8(data)


def _alphabet_run(run: str) -> tuple[str, str] | None:
    """A base64-alphabet run decoded, as (encoding, text); hex first, as its digits are
    base64 characters too (a hex run decoded as base64 is noise)."""
    for encoding, decode in (("hex", _from_hex), ("base64", _from_base64)):
        text = decode(run)
        if text is not None and _readable(text):
            return encoding, text
    return None


def _alphabet_runs(text: str) -> Iterator[Decoded]:
    """Base64 and hex runs; whitespace-separated runs are tried joined first."""
    group: list[re.Match[str]] = []
    for match in _RUN.finditer(text):
        if group and _GAP.fullmatch(text, group[-1].end(), match.start()) is None:
            yield from _group(text, group)
            group = []
        group.append(match)
    if group:
        yield from _group(text, group)


def _group(text: str, group: list[re.Match[str]]) -> Iterator[Decoded]:
    if len(group) > 1:
        joined = _alphabet_run("".join(m.group() for m in group))
        if joined is not None:
            yield Decoded(group[0].start(), group[-1].end(), joined[1], joined[0])
            return
    for match in group:
        decoded = _alphabet_run(match.group())
        if decoded is not None:
            yield Decoded(match.start(), match.end(), decoded[1], decoded[0])


def _percent_runs(text: str) -> Iterator[Decoded]:
    for match in _TOKEN.finditer(text):
        token = match.group()
        if "%" not in token or len(_ESCAPE.findall(token)) < MIN_PERCENT:
            continue
        try:
            decoded = unquote(token, errors="strict")
        except UnicodeDecodeError:
            continue
        if _readable(decoded):
            yield Decoded(match.start(), match.end(), decoded, "percent")


def _rot13_runs(text: str) -> Iterator[Decoded]:
    """After each mention of ROT13: the rest of its line, or the next line when the mention
    ends its line ("decode this rot13:" then the payload), at most ``ROT13_SPAN`` characters."""
    end = 0
    for match in _ROT13_NAME.finditer(text):
        start = match.end()
        if start < end:
            continue  # already inside the span of an earlier mention
        line_end = text.find("\n", start)
        if line_end == -1:
            line_end = len(text)
        if not text[start:line_end].strip(" \t:\"'`.-=>"):
            following = text.find("\n", line_end + 1)
            line_end = len(text) if following == -1 else following
        end = min(line_end, start + ROT13_SPAN)
        decoded = text[start:end].translate(_ROT13)
        if len(decoded.strip()) >= MIN_DECODED:
            yield Decoded(start, end, decoded, "rot13")


def _level(text: str) -> Iterator[Decoded]:
    yield from _alphabet_runs(text)
    yield from _percent_runs(text)
    yield from _rot13_runs(text)


def decoded_pieces(text: str) -> list[Decoded]:
    """Every readable encoded run of ``text`` (and readable runs inside those, one level
    down), in order of where they start, within the decoding budget."""
    budget = BUDGET_FACTOR * len(text)
    pieces: list[Decoded] = []
    for outer in _level(text):
        budget -= len(outer.text)
        if budget < 0:
            break
        pieces.append(outer)
        for inner in _level(outer.text):  # the second and last level (MAX_DEPTH)
            budget -= len(inner.text)
            if budget < 0:
                break
            # The inner run is somewhere in the outer one's decoded text: the encoded run the
            # client sent is the outer one, so that is what a finding covers.
            encoding = f"{outer.encoding}+{inner.encoding}"
            pieces.append(Decoded(outer.start, outer.end, inner.text, encoding))
        if budget < 0:
            break
    pieces.sort(key=lambda piece: piece.start)
    return pieces


def decoded_label(encoding: str, label: str) -> str:
    """The label of a finding in decoded text: the encoding, then the shield's own label."""
    return f"{encoding}:{label}"


def redecode(label: str, encoded: str) -> list[str]:
    """What the encoded text a decoded finding covers decodes to (``shieldgate scan
    --explain``); empty for a label that is not a decoded finding's."""
    encoding, _, rest = label.partition(":")
    if not rest or encoding.split("+")[0] not in ENCODINGS:
        return []
    if encoding.startswith("rot13"):
        return [encoded.translate(_ROT13)]
    return [piece.text for piece in decoded_pieces(encoded) if piece.encoding == encoding]
