"""Secrets as tools store or print them, as data: the ``secrets`` shield's rules for encrypted
passwords of build servers, a cloud key file's key id, cracked-hash lists and one-time
recovery codes.

- Maven (``settings.xml``, ``settings-security.xml``) and Jenkins (``credentials.xml``,
  ``config.xml``) keep passwords encrypted as ``{base64}`` in their elements; the key that
  decrypts them sits next to them (``~/.m2/settings-security.xml``, Jenkins' ``secrets/``),
  so a leaked one is as good as the password.
- A Google service-account key file names its private key by ``private_key_id`` (40
  hexadecimal digits), which the key's own rules do not see when the file is cut short.
- Hash lists for hashcat and John the Ripper write ``hash:salt`` a line; a salted hash is
  cracked offline.
- Recovery (backup) codes of two-factor authentication each log in once without the second
  factor: a list of them after the words that name them.

Each rule reports the value alone (the element, the key and the words stay).
"""

from __future__ import annotations

import base64
import binascii
import re

from shields.builtin.secrets_config import is_placeholder
from shields.builtin.secrets_rules import (
    ASCENDING,
    REPEATED,
    Rule,
    Thresholds,
    hex_digest,
    random_looking,
)

__all__ = ["STORED_RULES"]

# Maven's and Jenkins' ciphertexts: an IV (16 bytes) and at least a block.
_MIN_CIPHERTEXT_BYTES = 16
# Random bytes repeat little: 16 bytes and more hold at least 10 different ones (all but 1 in
# 10^6 of random ones do); a mask or a typed run does not.
_MIN_DISTINCT_BYTES = 10


def _ciphertext(secret: str, _: Thresholds) -> bool:
    """Base64 of bytes that look encrypted: at least an IV and a block, varied."""
    head = secret.rstrip("=")
    head = head[: len(head) // 4 * 4]
    try:
        data = base64.b64decode(head, validate=True)
    except binascii.Error:
        return False
    return len(data) >= _MIN_CIPHERTEXT_BYTES and len(set(data)) >= _MIN_DISTINCT_BYTES


def _key_id(secret: str, _: Thresholds) -> bool:
    return hex_digest(secret)


# A file name or a revision after a digest (`git show <sha>:README.md`, `<sha>:Makefile`): one
# word, or a name with an extension.
_FILE_LIKE = re.compile(r"[A-Za-z]+|[A-Za-z0-9_-]+\.[A-Za-z0-9]{1,5}")


def _hash_salt(secret: str, _: Thresholds) -> bool:
    """``hash:salt``: a digest in one case, and a salt that is no file name or word."""
    digest, _colon, salt = secret.partition(":")
    if not (digest.islower() or digest.isupper() or digest.isdigit()):
        return False
    return hex_digest(digest) and not _FILE_LIKE.fullmatch(salt) and not is_placeholder(salt)


_MIN_CODE_DIGITS = 4


def _recovery_code(secret: str, _: Thresholds) -> bool:
    """A one-time recovery code: 8 characters and more, digits in it (words and names have
    none), and no placeholder or typed run (`0000-0000`, `1234-5678`, `xxxx-xxxx`)."""
    code = secret.replace("-", "").replace(" ", "")
    if len(code) < 8 or not any(c.isdigit() for c in code):
        return False
    if code.isdigit():
        # Eight random digits are too few for an entropy bar (half of them fall under 2.5
        # bits, one in twelve under 2.0): only a typed run, or few different digits, is not a
        # code (random ones have fewer than four different digits 1 time in 150).
        return (
            len(set(code)) >= _MIN_CODE_DIGITS
            and REPEATED.search(code) is None
            and ASCENDING.search(code) is None
            and not is_placeholder(secret)
        )
    return not is_placeholder(secret) and random_looking(code, 2.5)


_B64 = "[A-Za-z0-9+/]"
# A recovery code as services print them: 8-12 digits or letters and digits, whole or in
# groups of 4 and 5 (`4821-7730`, `a7k2-9xq4`, `5Q7R-X2KP-9MZL`).
# The whole form first: RE2 takes the first alternative that matches, and a group of 4-5 would
# stop inside a whole code.
_CODE = r"[A-Za-z0-9]{8,12}|[A-Za-z0-9]{4,5}(?:[- ][A-Za-z0-9]{4,5}){0,3}"
# A further code of the list: a digit in it, so that a word on the line after the list ("Keep",
# "well-known") is not taken for one.
_TAIL_CODE = (
    r"[0-9]{4}[ -]?[0-9]{4}"
    r"|[A-Za-z0-9]{0,4}[0-9][A-Za-z0-9]{0,4}(?:-[A-Za-z0-9]{4,5}){1,3}"
    r"|[A-Za-z0-9]{2,6}[0-9][A-Za-z0-9]{2,6}"
)

STORED_RULES: tuple[Rule, ...] = (
    Rule(
        "encrypted_password_element",
        "A password encrypted as {base64} in a Maven settings.xml / settings-security.xml "
        "or Jenkins credentials.xml element (<password>, <passphrase>, <master>, <secret>, "
        "<apiToken>, <privateKeyPassphrase>...), which the key next to it decrypts",
        # The element names the two tools use; a prefix that took any element name would
        # hold every "<" of a stream for a tag's length.
        r"<(?:password|passphrase|privateKeyPassphrase|master|secret|apiToken|token"
        r"|storePassword|keyPassword)>[ \t]{0,8}(?:\r?\n[ \t]{0,16})?\{",
        # Up to 96 characters in the head, the rest of a longer one in pieces (``tail``).
        f"({_B64}{{22,96}}={{0,2}})",
        _ciphertext,
        tail=f"{_B64}{{1,64}}={{0,2}}",
    ),
    Rule(
        "gcp_private_key_id",
        'The id of a Google service-account key file\'s private key ("private_key_id": 40 '
        "hexadecimal digits)",
        r"\bprivate_key_id\\?[\"']?[ \t]{0,3}[=:][ \t]{0,3}\\?[\"']?",
        "([0-9a-f]{40})",
        _key_id,
        not_followed_by="0-9A-Za-z",
    ),
    Rule(
        "hash_salt_line",
        "A salted hash of a hashcat / John the Ripper list: an MD5, SHA-1, SHA-256 or SHA-512 "
        "digest (32, 40, 64 or 128 hexadecimal digits), a colon and its salt",
        # Eight digits to start from (as for MySQL's hashes): every hexadecimal-looking word
        # of a stream would otherwise be held.
        r"\b[0-9a-fA-F]{8}",
        # 159 characters at most, as every rule (``max_match``).
        # No group: the secret is the whole match, the digest from its first digit.
        r"[0-9a-fA-F]{24}(?:[0-9a-fA-F]{8}(?:[0-9a-fA-F]{24}(?:[0-9a-fA-F]{64})?)?)?"
        r":[A-Za-z0-9+=_$!@#%^&*.-]{1,24}",
        _hash_salt,
        # The salt ends at a blank or the line's end (`<sha>:src/app.py` is a path).
        not_followed_by=r"^\s",
        deferred_to=False,
    ),
    Rule(
        "recovery_codes",
        "Two-factor recovery (backup) codes after the words that name them: `Recovery codes: "
        "4821-7730 ...`, `backup_codes = [...]`",
        r"\b(?i:(?:recovery|backup|emergency|scratch)[ _-]?codes?)",
        r"\\?[\"']?[ \t]{0,3}[=:][ \t]{0,3}(?:\[[ \t]{0,3})?(?:\r?\n[ \t]{0,8}(?:[-*][ \t]{1,2})?)?"
        f"\\\\?[\"']?({_CODE})",
        _recovery_code,
        not_followed_by="A-Za-z0-9",
        # Each further code, with what separates it from the one before (a list's commas and
        # quotes, a line's bullet): contiguous pieces, one redaction over the whole list.
        tail=(
            r"((?:[ \t,;\"']|\r?\n[ \t]{0,8}(?:[-*][ \t]{1,2}|[0-9]{1,2}[.)][ \t]{1,2})?){1,6}"
            f"(?:{_TAIL_CODE}))(?:[\\s,;\"'\\]]|$)"
        ),
    ),
)
