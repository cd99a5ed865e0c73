"""Private keys, as data: the ``secrets`` shield's rules for PEM blocks and base64 key material.

A PEM private key is thousands of characters, so its rule reports the identifying head (the
BEGIN line and the start of the body) and then each further line as a piece of its own
(``Rule.tail``), as the engine in ``shields.builtin.secrets`` describes; ``max_match`` stays
bounded (159 with every rule) and every pattern here is measured against it.

Keys are pasted in many wrappers, and every one of them must still read as one key:

- JSON and other strings escape the line breaks (``\\n``, or ``\\\\n`` when escaped twice);
- code quotes the block line by line and joins the lines (``"MIIE...\\n" +``, PHP's ``.``,
  Python's implicit concatenation), so each line has a lead (``+ "``) and a trail (``\\n"``);
- logs put a prefix before every line (``2026-04-26 12:36:01 ``, ``#6 0.245 ``), comments a
  ``// `` or ``# ``, YAML and XML an indentation;
- the END line may be missing (a truncated paste) or altered.

A line reached through a lead is taken only when it is long enough to be key material (16
characters), or when the END line follows it: a line of prose after a truncated key, even one
ending in a base64-looking word, is not part of the key.

Without PEM lines, a key is still recognisable: the base64 of a PEM block starts ``LS0tLS1CRUdJ
Ti`` ("-----BEGIN"; ``LS0tQkVHSU4g`` or ``LS0tLUJFR0lOI`` when one or two bytes came before it in
what was encoded, a line break or a blank, and the match starts there), and the base64 of a
key's DER encoding starts with the fixed bytes of a private key structure (a SEQUENCE holding
version 0 or 1: PKCS#1, PKCS#8, SEC1), which public keys and certificates do not.
"""

from __future__ import annotations

import base64
import binascii
import re

from shields.builtin.secrets_rules import (
    PLACEHOLDER_WORDS,
    REPEATED,
    Rule,
    Thresholds,
    random_looking,
    shannon_entropy,
)

__all__ = ["KEY_RULES"]

# A line break: raw, or JSON-escaped ("\n" as two characters, as in service-account key files;
# "\\n" when the string was escaped twice).
_ESC_NL = r"(?:\\{1,2}r)?\\{1,2}n"
_NL = f"(?:\\r?\\n|{_ESC_NL})"
_B64 = "[A-Za-z0-9+/=]"
_KIND = r"(?:[A-Z0-9]{1,10} ){0,2}PRIVATE KEY(?: BLOCK)?-----"
_HEADER_NAME = r"(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset): "
_HEADER_LINE = _HEADER_NAME + r"[^\r\n\\]{1,64}"
# A plain break: trailing blanks, the break, at most one blank line (PGP puts one after its
# headers), and the indentation of the next line; absent when a line longer than 64
# characters goes on.
_BREAK = f"(?:[ \\t]{{0,4}}{_NL}(?:[ \\t]{{0,8}}{_NL})?)?[ \\t]{{0,8}}"
# What code and markup put around a line's break: blanks, quotes, joining operators; and what a
# line may end with after its key material (`" >> id_rsa`, `\n" +`).
_JUNK = r"[^A-Za-z0-9\r\n]{0,6}"
_TRAIL = r"[^\r\n]{0,12}?"
# A wrapped break: the end of a quoted or prefixed line, its break (an escaped one may be
# followed by a raw one, as in `"...\n" +` at a line's end), and the next line's lead — up to
# 32 characters that end in one that is not base64 (`+ "`, a timestamp and a blank, `// `).
_WRAP = "".join(
    [
        _TRAIL,
        f"(?:{_ESC_NL}{_JUNK}(?:\\r?\\n)?|\\r?\\n)",
        r"(?:[^\r\n]{0,32}?[^A-Za-z0-9+/=\r\n])?",
    ]
)
# After a wrapped line: its trail, then a break (or the end of the text).
_WRAP_END = f"{_TRAIL}(?:{_NL}|$)"
# A wrapped break with a short lead (`  *  `, `// `, `# `): before an armor header, whose value
# leaves less room for the lead; and one over a blank line, as PGP puts after its headers.
_WRAP_SHORT = "".join(
    [
        _TRAIL,
        f"(?:{_ESC_NL}{_JUNK}(?:\\r?\\n)?|\\r?\\n)",
        r"(?:[^\r\n]{0,8}?[^A-Za-z0-9+/=\r\n])?",
    ]
)
_WRAP_BLANK = "".join(
    [
        _TRAIL,
        f"(?:{_ESC_NL}{_JUNK})?\\r?\\n",
        # The blank line, bare or with its wrapper (` *`, `"\n"`).
        f"[^A-Za-z0-9+/=\\r\\n]{{0,16}}(?:{_ESC_NL}{_JUNK})?\\r?\\n",
        r"(?:[^\r\n]{0,32}?[^A-Za-z0-9+/=\r\n])?",
    ]
)

# The BEGIN line and the start of the body or an encryption header: enough to know it is a
# private key. The body's first 32 characters, so that a wrapped head stays within bounds;
# the rest of the line is the first piece.
_HEAD = "".join(
    [
        _KIND,
        r"[ \t]{0,4}(?:",
        _BREAK,
        f"(?:{_HEADER_NAME}[^\\r\\n\\\\]{{1,52}}|{_B64}{{32}})",
        f"|{_WRAP}{_B64}{{32}}",
        # A header in a comment block or a quoted line (`  *  Version: GnuPG v1.4.12`): a key
        # for sure; what is left of its line is the next piece's trail.
        f"|{_WRAP_SHORT}{_HEADER_NAME}[^\\r\\n\\\\]{{1,48}})",
    ]
)
# Then one line at a time; the piece is the first group that took part, what follows it is
# look-ahead, left for the next piece.
_LINE = "|".join(
    [
        # A plain line (or a header line), which a break or the end of the text must follow:
        # a line of prose after a truncated key is not part of the key.
        f"({_BREAK}(?:{_HEADER_LINE}|{_B64}{{1,64}}))[ \\t]{{0,4}}(?:{_NL}|$)",
        # 64 characters of a longer line.
        f"({_BREAK}{_B64}{{64}})",
        # The rest of a line that has a trail (`...\n" +`).
        f"({_B64}{{1,64}}){_WRAP_END}",
        # A wrapped line: 64 characters of it, all of a long enough one, or a short last one
        # when the END line follows.
        f"({_WRAP}{_B64}{{64}})",
        f"({_WRAP}{_B64}{{16,64}}){_WRAP_END}",
        f"({_WRAP}{_B64}{{1,15}}){_WRAP}-----END",
        # A wrapped header line (`  *  Hash: SHA256`), a wrapped line after a blank one.
        f"({_WRAP_SHORT}{_HEADER_LINE})",
        f"({_WRAP_BLANK}{_B64}{{64}})",
    ]
)
_END = f"(?:{_BREAK}|{_WRAP})-----END {_KIND}"
# The lines of a key without PEM lines: nothing marks its end, so every line is long enough to
# be key material (a short last line is left: a word on the next line is not part of the key).
_BODY_LINE = "|".join(
    [
        f"({_BREAK}{_B64}{{16,64}})[ \\t]{{0,4}}(?:{_NL}|$)",
        f"({_BREAK}{_B64}{{64}})",
        f"({_B64}{{1,64}}){_WRAP_END}",
        f"({_WRAP}{_B64}{{64}})",
        f"({_WRAP}{_B64}{{16,64}}){_WRAP_END}",
    ]
)

_B64_RUN = re.compile(r"[A-Za-z0-9+/=]{32}\Z")


def _pem_head(head: str, _: Thresholds) -> bool:
    """The start of the body must look like key material, not a placeholder (``xxxx``)."""
    body = _B64_RUN.search(head)
    if body is None:
        return True  # an encryption header: a key for sure
    sample = body.group()
    return (
        shannon_entropy(sample) >= 3.0
        and PLACEHOLDER_WORDS.search(sample) is None
        and REPEATED.search(sample) is None
    )


def _base64_pem(secret: str, _: Thresholds) -> bool:
    """Base64 of a PEM block: its first line must decode to a private key's BEGIN line."""
    head = secret[: len(secret) // 4 * 4]
    try:
        decoded = base64.b64decode(head, validate=True)
    except (binascii.Error, ValueError):
        return False
    # "PRIVATE" on the BEGIN line: the line may be cut or altered (`-----BEGIN PRIVATE ...`),
    # and public keys and certificates never say it.
    return b"PRIVATE" in decoded.split(b"\n", 1)[0]


def _base64_key(secret: str, thresholds: Thresholds) -> bool:
    """Base64 of a PEM block, or of a key's DER encoding whose bytes after the fixed structure
    look random. Each of the three starts of a PEM block is on a 4-character boundary of the
    encoding ("---" is ``LS0t``), so it decodes from there."""
    if secret.startswith("LS0t"):
        return _base64_pem(secret, thresholds)
    return shannon_entropy(secret[16:]) >= 4.0 and REPEATED.search(secret[16:]) is None


# The DER of a private key starts with a SEQUENCE whose first element is version 0 (PKCS#1,
# PKCS#8) or 1 (SEC1 EC keys): in base64, by the length's size, "MII" + 2 + "[AQgw]IBA(AJ|AK|DA)"
# (two length bytes), "MI[GH]" + 1 + "AgE[AB]" (one byte >= 128), "M[A-H]" + 1 + "CAQ[AE]" (one
# byte < 128). Public keys and certificates start with a SEQUENCE in a SEQUENCE instead.
_DER_PREFIX = (
    r"\b(?:MII[A-Za-z0-9+/]{2}[AQgw]IBA(?:A[JK]|DA)|MI[GH][A-Za-z0-9+/]AgE[AB]"
    r"|M[A-H][A-Za-z0-9+/]CAQ[AE])"
)

# A JSON Web Key's private members (RFC 7518): "d" of an RSA or EC key, the RSA primes and CRT
# values "p", "q", "dp", "dq", "qi", and "k", a symmetric key; base64url, 22 characters (a
# 128-bit key) and more. Quoted: a JWK is JSON.
_JWK_MEMBER = r"[\"'](?:d|p|q|dp|dq|qi|k)[\"'][ \t]{0,3}:[ \t]{0,3}[\"']"


def _jwk_value(secret: str, _: Thresholds) -> bool:
    """Key material: generated (mixed case, entropy), not a word or an id."""
    mixed = any(c.isupper() for c in secret) and any(c.islower() for c in secret)
    return mixed and random_looking(secret, 3.5)


KEY_RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        "PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP ... PRIVATE KEY), also "
        "JSON-escaped, quoted line by line in code, or with a log prefix on every line",
        r"-----BEGIN ",
        _HEAD,
        _pem_head,
        tail=_LINE,
        tail_end=_END,
    ),
    Rule(
        "private_key_base64",
        "A private key without its PEM lines: the base64 of a PEM block (LS0tLS1CRUdJTi..., or "
        "shifted by a byte or two before it) or "
        "of a key's DER encoding (PKCS#1 MIIEpAIBAAK..., PKCS#8 MIIEvQIBADAN..., SEC1 MHcCAQEE...)",
        # The shifted starts have no word boundary: characters that encode the byte before
        # "-----BEGIN" come right before them.
        f"(?:\\bLS0tLS1CRUdJTi|LS0tQkVHSU4g|LS0tLUJFR0lOI|{_DER_PREFIX})",
        f"{_B64}{{44,64}}",
        _base64_key,
        tail=_BODY_LINE,
    ),
    Rule(
        "jwk_private_key",
        "A JSON Web Key's private member: d (RSA, EC, OKP), p, q, dp, dq, qi (RSA), k (oct)",
        _JWK_MEMBER,
        "([A-Za-z0-9_-]{22,64})",
        _jwk_value,
        tail="[A-Za-z0-9_-]{1,64}",
    ),
)
