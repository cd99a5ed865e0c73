"""Password hashes as tools and databases write them, as data: the ``secrets`` shield's rules
for Windows NT and LM hashes and database servers' stored password hashes (crypt(3) and
framework hashes are ``password_hash``; the NTLM authenticate message is a vendor-token rule,
``ntlm_authenticate``).

An NT hash is as good as the password on a Windows network (pass-the-hash). Hashes leak in
the output of credential dumping tools pasted into tickets and chats:

- pwdump and Impacket's secretsdump write ``user:RID:LM:NT:::``, 32 hexadecimal digits each;
- mimikatz writes ``* NTLM     : <NT hash>``, and notes write ``nthash = ...``;
- pass-the-hash tools take them in place of a password (``-hashes LM:NT``, ``-H NT``);
- Kerberoasting and AS-REP roasting tools write ``$krb5tgs$23$*user$REALM$spn*$<checksum>$``
  and ``$krb5asrep$23$user@REALM:<checksum>$``, then the encrypted part: a ticket encrypted
  with the account's key, cracked offline for its password;
- MySQL stores ``*`` and 40 hexadecimal digits (SHA-1 twice), PostgreSQL ``md5`` and 32 or
  ``SCRAM-SHA-256$<iterations>:<salt>$<stored key>:<server key>``: a dump of ``mysql.user`` or
  ``pg_authid``, a ``CREATE ROLE ... PASSWORD 'md5...'`` migration. Each is cracked offline,
  and a SCRAM stored key (or an MD5 one) logs in as it is.

Each rule reports the hashes alone (the user's name stays). Hashes every installation shares
are no secret: the LM hash of an empty password (``aad3b435...``), which dumps show when LM is off,
and the NT hash of an empty password (``31d6cfe0...``), a disabled or blank account's.
"""

from __future__ import annotations

from shields.builtin.secrets_rules import (
    Rule,
    Thresholds,
    hex_digest,
    random_looking,
)

__all__ = ["HASH_RULES"]

_HEX32 = "[0-9A-Fa-f]{32}"
_EMPTY_LM = "aad3b435b51404eeaad3b435b51404ee"
_EMPTY_NT = "31d6cfe0d16ae931b73c59d7e0c089c0"


def _dump_hashes(secret: str, _: Thresholds) -> bool:
    """``LM:NT`` of a dump line: an NT hash that is a real password's."""
    lm, _colon, nt = secret.partition(":")
    nt = nt.lower()
    if nt == _EMPTY_NT or not hex_digest(nt):
        return False
    return lm.lower() == _EMPTY_LM or lm.startswith(("*", "NO PASSWORD")) or hex_digest(lm)


def _nt_hash(secret: str, _: Thresholds) -> bool:
    return secret.lower() not in (_EMPTY_NT, _EMPTY_LM) and hex_digest(secret)


def _option_hashes(secret: str, thresholds: Thresholds) -> bool:
    """``LM:NT``, ``:NT`` or ``NT`` given to a pass-the-hash tool: a real password's NT hash."""
    lm, _colon, nt = secret.rpartition(":")
    if not _nt_hash(nt, thresholds):
        return False
    return not lm or lm.lower() == _EMPTY_LM or hex_digest(lm)


def _hex_digest(secret: str, _: Thresholds) -> bool:
    """``*`` + 40 or ``md5`` + 32 hexadecimal digits, the digits a digest's."""
    return hex_digest(secret.lstrip("*").removeprefix("md5"))


def _postgres_hash(secret: str, thresholds: Thresholds) -> bool:
    if secret.startswith("md5"):
        return _hex_digest(secret, thresholds)
    # SCRAM: the salt and both keys must look generated (a template repeats "A" or "x").
    _, _, rest = secret.partition(":")
    return all(random_looking(part.rstrip("="), 3.5) for part in rest.replace("$", ":").split(":"))


_B64 = "[A-Za-z0-9+/]"


HASH_RULES: tuple[Rule, ...] = (
    Rule(
        "windows_hash_dump",
        "LM and NT password hashes of a pwdump/secretsdump line (user:RID:LM:NT:::)",
        # From the RID on (a stream holds text from a ":" and digits, as for .pgpass lines);
        # the user's name before it stays, the hashes go. pwdump writes "NO PASSWORD" and
        # asterisks for an empty LM hash.
        r":[0-9]{1,10}:",
        f"((?:{_HEX32}|NO PASSWORD\\*{{21}}|\\*{{32}}):{_HEX32})(?::|[ \\t]{{0,8}}(?:\\r?\\n|$))",
        _dump_hashes,
    ),
    Rule(
        "nt_hash",
        "An NT (NTLM) password hash after the word that names it: mimikatz `* NTLM : ...`, "
        "`nthash = ...`, `NT hash: ...`",
        r"\b(?i:ntlm(?:[ _-]?hash)?|nt[ _-]?hash|nthash)",
        f"\\\\?[\"']?[ \\t]{{0,12}}(?:=>|[=:])[ \\t]{{0,3}}\\\\?[\"']?({_HEX32})",
        _nt_hash,
        not_followed_by="0-9A-Za-z",
    ),
    Rule(
        "pass_the_hash_option",
        "The hashes given to a pass-the-hash tool in place of a password: Impacket's `-hashes "
        "LM:NT` (or `:NT`), NetExec / CrackMapExec / evil-winrm `-H NT`",
        r"\B-(?:hashes|H)[ \t]{1,3}",
        f"[\"']?((?:{_HEX32})?:{_HEX32}|{_HEX32})",
        _option_hashes,
        not_followed_by="0-9A-Za-z",
    ),
    Rule(
        "kerberos_roast_hash",
        "A Kerberos ticket or AS-REP encrypted with a user's key, as Kerberoasting and AS-REP "
        "roasting tools write it for cracking: $krb5tgs$, $krb5asrep$ (etype 23, 17, 18)",
        r"\$krb5(?:tgs|asrep)\$(?:23|17|18)\$",
        # The account, realm and service name stay; the checksum and the encrypted part go.
        # At most 159 characters a match (the default policy's stream hold-back): the rest of
        # the encrypted part follows in pieces.
        r"(?:[^\s]{0,60}?[$:])?([0-9a-f]{24,32}\$[0-9a-f]{48})",
        lambda secret, _: hex_digest(secret[: secret.index("$")]),
        tail="[0-9a-f]{1,64}",
    ),
    Rule(
        "mysql_password_hash",
        "MySQL's stored password hash (mysql_native_password): * and 40 hexadecimal digits",
        # The "*" with a few digits: a "*" alone would hold text at every Markdown emphasis of
        # a stream.
        r"\*[0-9A-F]{8}",
        "[0-9A-F]{32}",
        _hex_digest,
        not_followed_by="0-9A-Za-z",
    ),
    Rule(
        "postgres_password_hash",
        "PostgreSQL's stored password hash: md5 and 32 hexadecimal digits, or "
        "SCRAM-SHA-256$<iterations>:<salt>$<stored key>:<server key>",
        r"\b(?:md5[0-9a-f]{8}|SCRAM-SHA-256\$)",
        f"(?:[0-9a-f]{{24}}|[0-9]{{1,7}}:{_B64}{{16,32}}={{0,2}}\\${_B64}{{43}}=:{_B64}{{43}}=)",
        _postgres_hash,
        not_followed_by="0-9A-Za-z",
    ),
)
