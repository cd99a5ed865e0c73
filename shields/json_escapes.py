"""Scanning JSON text for what its string escapes stand for.

A tool call's ``arguments`` is JSON held in a string: once the reply is parsed, the client still
has to parse the arguments, and only then do escapes like ``\\u0062`` become the "b" of "bomb".
A shield that read the arguments as they are would see ``how to build a \\u0062omb`` and a
token whose last letter is ``\\u0071``, while the application acts on "bomb" and on the token.
Models emit such escapes on their own (``json.dumps`` escapes every non-ASCII character), and a
prompt can ask for them.

``JsonEscapedScan`` puts a ``TextScan`` behind a decoder of those escapes. The decoder is
incremental, like the rest of a scan: an escape cut between two chunks of a stream waits for
its end (at most 11 characters, a surrogate pair) before anything of it is scanned. Offsets go
back to the text as received through a sparse map — where ``received - decoded`` changes,
after each escape — so a finding's span covers whole escapes, a redaction replaces them whole
and ``safe_end`` never falls inside one. Text without a backslash costs one ``str.find``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import replace

from shields.base import Finding, Role, Shield
from shields.scan import TextScan, scan_whole

__all__ = ["JsonEscapedScan", "check_json_text", "decode_json_escapes"]

# The two-character escapes of JSON (RFC 8259, section 7).
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
# A lone surrogate is no character: scanned as the replacement character (the text scanners
# encode to UTF-8, which a surrogate would break), mapped to its escape like any other.
_LONE = "\ufffd"
# Breakpoints are pruned once there are this many: a long stream of escaped text keeps its map
# bounded by what the scan can still report on.
_PRUNE_FROM = 64


def _hex4(text: str, at: int) -> int | None:
    digits = text[at : at + 4]
    if len(digits) == 4 and _HEX.issuperset(digits):
        return int(digits, 16)
    return None


class _Decoder:
    """Decodes JSON escapes chunk by chunk and maps decoded offsets back to received ones."""

    __slots__ = ("_bp_decoded", "_bp_delta", "_delta", "decoded_len", "received", "tail")

    def __init__(self) -> None:
        self.tail = ""  # the start of an escape that the next chunk completes
        self.received = 0  # characters decoded (``tail`` excluded)
        self.decoded_len = 0
        self._delta = 0  # received - decoded, after the last escape
        # From decoded offset _bp_decoded[i] on, received = decoded + _bp_delta[i].
        self._bp_decoded: list[int] = [0]
        self._bp_delta: list[int] = [0]

    def decode(self, chunk: str, *, final: bool = False) -> str:
        """The decoded text of ``chunk`` (after what is left of the last one). With ``final``,
        an unfinished escape at the end is taken as the characters it is."""
        text = self.tail + chunk if self.tail else chunk
        self.tail = ""
        if text.find("\\") < 0:
            self.received += len(text)
            self.decoded_len += len(text)
            return text
        pieces: list[str] = []
        decoded = self.decoded_len
        pos = 0
        size = len(text)
        while True:
            slash = text.find("\\", pos)
            if slash < 0:
                pieces.append(text[pos:])
                decoded += size - pos
                pos = size
                break
            pieces.append(text[pos:slash])
            decoded += slash - pos
            char, length = self._escape(text, slash, final)
            if length == 0:  # unfinished: wait for the rest
                self.tail = text[slash:]
                pos = slash
                break
            pieces.append(char)
            decoded += 1
            if length > 1:
                # The characters after this one sit ``length - 1`` further on.
                self._delta += length - 1
                self._bp_decoded.append(decoded)
                self._bp_delta.append(self._delta)
            pos = slash + length
        self.received += pos
        self.decoded_len = decoded
        return "".join(pieces)

    @staticmethod
    def _escape(text: str, at: int, final: bool) -> tuple[str, int]:
        """The character the escape at ``text[at]`` stands for and its length; length 0 when
        the text ends before the escape does (and more may come); a backslash that starts no
        escape stands for itself (length 1)."""
        size = len(text)
        if at + 1 >= size:
            return ("\\", 1) if final else ("", 0)
        kind = text[at + 1]
        if kind != "u":
            simple = _SIMPLE.get(kind)
            return (simple, 2) if simple is not None else ("\\", 1)
        if at + 6 > size:
            if final or not _HEX.issuperset(text[at + 2 :]):
                return "\\", 1
            return "", 0
        code = _hex4(text, at + 2)
        if code is None:
            return "\\", 1
        if 0xDC00 <= code <= 0xDFFF:
            return _LONE, 6
        if not 0xD800 <= code <= 0xDBFF:
            return chr(code), 6
        # A high surrogate: the pair's low half may follow, possibly in the next chunk.
        rest = text[at + 6 : at + 12]
        if len(rest) < 6 and not final and "\\u".startswith(rest[:2]) and _HEX.issuperset(rest[2:]):
            return "", 0
        low = _hex4(text, at + 8) if rest.startswith("\\u") else None
        if low is not None and 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), 12
        return _LONE, 6

    def received_offset(self, decoded: int) -> int:
        """Where decoded character ``decoded`` starts in the received text (for one past the
        end: where the decoded text ends)."""
        i = bisect_right(self._bp_decoded, decoded) - 1
        return decoded + self._bp_delta[max(i, 0)]

    def forget_before(self, decoded: int) -> None:
        if len(self._bp_decoded) < _PRUNE_FROM:
            return
        i = bisect_right(self._bp_decoded, decoded) - 1
        if i > 0:
            del self._bp_decoded[:i]
            del self._bp_delta[:i]


def decode_json_escapes(text: str) -> str:
    """The text with its JSON escapes decoded (an escape that is not one stays as it is)."""
    return _Decoder().decode(text, final=True)


class JsonEscapedScan:
    """A ``TextScan`` of the text that JSON text's escapes stand for, with findings and
    ``safe_end`` in offsets of the text as received."""

    __slots__ = ("_decoder", "_scan", "safe_end")

    def __init__(self, scan: TextScan) -> None:
        self._scan = scan
        self._decoder = _Decoder()
        self.safe_end = 0

    @property
    def active(self) -> bool:
        return self._scan.active

    @property
    def received(self) -> int:
        """Characters taken in so far (an unfinished escape included)."""
        return self._decoder.received + len(self._decoder.tail)

    def feed(self, raw: str) -> list[Finding]:
        decoded = self._decoder.decode(raw)
        findings = self._scan.feed(decoded) if decoded else []
        return self._settled(findings)

    def finish(self) -> list[Finding]:
        findings: list[Finding] = []
        if self._decoder.tail:
            decoded = self._decoder.decode("", final=True)
            findings += self._scan.feed(decoded)
        findings += self._scan.finish()
        return self._settled(findings)

    def _settled(self, findings: list[Finding]) -> list[Finding]:
        decoder = self._decoder
        if findings:
            offset = decoder.received_offset
            findings = [replace(f, start=offset(f.start), end=offset(f.end)) for f in findings]
        safe = self._scan.safe_end
        self.safe_end = decoder.received_offset(safe)
        # Not up to ``safe``: without a hold-back it is the end of the text, yet ``finish()``
        # may still report a match that ends there, whose offsets need the map.
        decoder.forget_before(min(safe, decoder.decoded_len - self._scan.lookback))
        return findings


def check_json_text(
    shields: Sequence[Shield],
    text: str,
    *,
    role: Role | None = None,
    fail_closed: bool = True,
    fingerprint: Callable[[str], str] | None = None,
) -> list[Finding]:
    """``check_text`` for JSON text: all findings of ``shields`` on what its escapes stand
    for, in offsets of ``text``."""
    text_scan = TextScan(shields, fail_closed=fail_closed, role=role, fingerprint=fingerprint)
    return scan_whole(JsonEscapedScan(text_scan), text)
