"""Passwords given to commands, as data: the ``secrets`` shield's rules for command lines whose
password is an argument of its own, not the value of a password key.

Administrators paste such lines into tickets and chats, and they stay in shell histories:

- Impacket and other Windows tools take ``DOMAIN/user:password@host`` as their target;
- ``net use \\\\host\\share /user:DOMAIN\\user PASSWORD`` (or the password before ``/user:``);
- ``redis-cli -a PASSWORD``, ``zip -P PASSWORD``, ``7z a -pPASSWORD``, ``openssl enc -k
  PASSWORD``, ``htpasswd -b FILE USER PASSWORD``, ``rabbitmqctl add_user USER PASSWORD``.

(``curl -u``, ``mysql -p``, ``sshpass -p``, ``-u user -p pass``, ``--password=``, ``-passin
pass:`` and keytool's ``-storepass`` are ``secrets_config``'s rules.)

Each rule starts at the command's name (or, for a target, at the "/" after the domain), so a
stream holds text only from there, and reports the password alone. The judge is the one for a
password after its user (``after_user_password``): not the user again, not a placeholder
(``$PASS``, ``<password>``, ``*``), a word, a name, a number or a flag.
"""

from __future__ import annotations

from shields.builtin.secrets_config import after_user_password
from shields.builtin.secrets_rules import Rule, Thresholds

__all__ = ["COMMAND_RULES"]


def _argument(longest: int) -> str:
    """An argument of at most ``longest`` characters: double-quoted, single-quoted or bare (a
    bare one does not start with "-": that is the next option), also joined to its option
    (`-pSECRET`). Each alternative captures; the first group that took part is the secret."""
    return (
        f"(?:\"([^\"\r\n]{{1,{longest}}})\"|'([^'\r\n]{{1,{longest}}})'"
        f"|([^\\s\"'-][^\\s\"']{{0,{longest - 1}}}))"
    )


# Every match is at most as wide as the widest other rule's (``max_match``, the hold-back of a
# stream): a password of 64 characters, 40 in the longer command lines.
_ARGUMENT = _argument(64)
# `net use` options (`/persistent:no`, `/savecred`) that may stand between its arguments.
_NET_USE_OPTION = r"(?:/[A-Za-z]{1,12}(?::[A-Za-z]{1,3})?[ \t]{1,3})?"


def _htpasswd_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``htpasswd -b [FILE] USER PASSWORD``: only with -b (batch mode) does
    the command line hold one, after a file and a user, or after the user alone with -n
    (print the line, no file)."""
    words = context.split()[1:]  # after "htpasswd"
    flags = "".join(word[1:] for word in words if word.startswith("-"))
    arguments = [word for word in words if not word.startswith("-")]
    if "b" not in flags or len(arguments) != (1 if "n" in flags else 2):
        return False
    return after_user_password(context, value, thresholds)


def _target_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``DOMAIN/user:password@host``. The "/" starts every path, and paths
    with a colon and an "@" name things in documents (`docs/api:getUserById@latest`): a
    password of letters alone is left to the words it may be."""
    return not value.isalpha() and after_user_password(context, value, thresholds)


COMMAND_RULES: tuple[Rule, ...] = (
    Rule(
        "domain_user_password",
        "The password of a Windows tool's target DOMAIN/user:password@host (Impacket's "
        "secretsdump.py, psexec.py, wmiexec.py...; CrackMapExec, NetExec)",
        # From the "/" after the domain: a prefix that held the domain, any word, would hold
        # every word of a stream (and one that held the user, a run of name characters, makes
        # the search for triggers a quarter slower). Not `\b/`: whether a text may still become a
        # match is told from that text alone (``prefix_pattern``), where `\b` before a "/"
        # cannot hold.
        r"/",
        # The host ends the match: a name or an address, then a blank, a quote or the end (a
        # `registry/image:tag@sha256:...` digest is followed by ":"). No "/" in the password:
        # `https://host:8443/path@v2` is a URL's port and path (a URL's credentials are
        # ``url_credentials``'). Nor a ":" first: `/child::b:x[@a` is an XPath axis.
        r"[A-Za-z0-9_.$-]{1,32}:([^\s\"'/:][^\s\"'/]{0,63})@[A-Za-z0-9][A-Za-z0-9.-]{0,47}"
        r"(?:[\s\"',;)]|$)",
        judge=_target_password,
        deferred_to=False,
    ),
    Rule(
        "net_use_password",
        "The password of `net use \\\\host\\share PASSWORD /user:DOMAIN\\user` (or after "
        "the /user: option)",
        r"\b(?i:net)[ \t]{1,3}(?i:use)[ \t]{1,3}",
        r"(?:[A-Za-z*]:[ \t]{1,3})?\\\\[^\s]{1,32}[ \t]{1,3}" + _NET_USE_OPTION + "(?:"
        # The user first, then the password.
        r"/(?i:u(?:ser)?):[^\s]{1,24}[ \t]{1,3}"
        + _argument(40)
        # The password first, then the user (`*`, a prompt, is no password).
        + "|"
        + _argument(40)
        + r"[ \t]{1,3}/(?i:u(?:ser)?):)",
        judge=after_user_password,
    ),
    Rule(
        "redis_cli_password",
        "The password of `redis-cli -a PASSWORD` (or --pass)",
        r"\bredis-cli\b",
        r"[^\r\n]{0,48}?[ \t](?:-a|--pass)[ \t]{1,3}" + _ARGUMENT,
        judge=after_user_password,
    ),
    Rule(
        "archive_password",
        "The password of an archive: `zip -P PASSWORD`, `unzip -P PASSWORD`, `7z a "
        "-pPASSWORD`, `rar a -pPASSWORD`",
        r"\b(?:zip|unzip|zipcloak|7z[ar]?|rar|unrar)\b",
        # zip takes the password as the next argument, 7-Zip and RAR joined to -p (`-p` alone
        # prompts, `-p-` is none).
        r"[^\r\n]{0,48}?[ \t](?:-P[ \t]{1,3}" + _ARGUMENT + "|-p" + _ARGUMENT + ")",
        judge=after_user_password,
    ),
    Rule(
        "openssl_key_password",
        "The pass phrase of `openssl enc -k PASSWORD` (-pass pass:... is a password key's)",
        r"\bopenssl[ \t]",
        r"[^\r\n]{0,64}?[ \t]-k[ \t]{1,3}" + _ARGUMENT,
        judge=after_user_password,
    ),
    Rule(
        "htpasswd_password",
        "The password of `htpasswd -b FILE USER PASSWORD` (`-nb USER PASSWORD`)",
        r"\bhtpasswd[ \t]{1,3}",
        r"(?:-[A-Za-z]{1,4}[ \t]{1,3}){1,2}(?:[^\s\"'-][^\s\"']{0,29}[ \t]{1,3})?"
        r"[^\s\"'-][^\s\"']{0,23}[ \t]{1,3}" + _ARGUMENT,
        judge=_htpasswd_password,
    ),
    Rule(
        "piped_password",
        "A password echoed into a program that reads it from its input: `echo 'PASSWORD' | "
        "sudo -S ...`, `echo 'user:PASSWORD' | chpasswd`, as shell histories and "
        "Dockerfiles keep them",
        r"\becho[ \t]{1,3}",
        r"(?:-[ne][ \t]{1,3})?(?:\"(?:[^\"\s:]{1,32}:)?([^\"\r\n]{1,64})\"|'(?:[^'\s:]{1,32}:)?"
        r"([^'\r\n]{1,64})'|(?:[^\s\"':|]{1,32}:)?([^\s\"'|]{1,64}))[ \t]{0,3}\|[ \t]{0,3}"
        r"(?:sudo[ \t]{1,3}(?:-[A-Za-z][ \t]{1,3}){0,2}-S\b|(?:sudo[ \t]{1,3})?chpasswd\b)",
        judge=after_user_password,
    ),
    Rule(
        "rabbitmq_user_password",
        "The password of `rabbitmqctl add_user USER PASSWORD` (or change_password)",
        r"\brabbitmqctl[ \t]{1,3}(?:add_user|change_password)[ \t]{1,3}",
        r"[^\s\"']{1,32}[ \t]{1,3}" + _ARGUMENT,
        judge=after_user_password,
    ),
)
