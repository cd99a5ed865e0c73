"""Credentials written as configuration, as data: the ``secrets`` shield's non-vendor rules.

A configuration credential is a *value* next to a credential *key* (``password``, ``token``,
``api_key``...) in one of the syntaxes people write settings in, or a credential in a shape of
its own (``scheme://user:pass@host``, a base64 ``user:pass`` auth blob, a crypt(3) password
hash, a PuTTY key's private lines). Every rule reports the value alone, so a redaction keeps
the key and the syntax around it.

Key rules are built from three pieces of data: the key words (``PASSWORD_KEYS``,
``TOKEN_KEYS``), the ways a key is followed by its value (``SEPARATORS``: ``=``, ``:``, ``=>``,
``:=``, XML ``>``, a define()/tuple comma, .NET's ``" value="``, blanks as in ``.netrc`` and
command lines) and the characters a value is made of. The match starts at the key word, so a
stream holds text only from a credential-key word on (``Scanner.open_from``): ordinary prose is
held for at most the few letters that may still begin one.

A key alone says little: ``password: required``, ``token = tokenizer.encode(text)``,
``api_key: ${API_KEY}`` are not credentials. The judges decide from the value and what came
before it in the match: placeholders and templates, names and calls in code, words (a
dictionary-like shape), paths, e-mail addresses and numbers are not secrets; a password is
anything else of ``min_password_length`` characters, a token must also look generated (the
entropy thresholds), since token keys name far more non-secrets than password keys do.
"""

from __future__ import annotations

import base64
import binascii
import re

from shields.builtin.secrets_rules import (
    ASCENDING,
    PLACEHOLDER_WORDS,
    REPEATED,
    Rule,
    Thresholds,
    generic_value,
    is_name,
)

__all__ = ["CONFIG_RULES", "PASSWORD_KEYS", "SEPARATORS", "TOKEN_KEYS"]


# -- the vocabulary (RE2, read case-insensitively) -------------------------------------------

# Keys whose value is a password: typed by people, so any value that is not a placeholder,
# a word or code counts. A bare "pass" only with nothing or a separator after it ("DB_PASS",
# "pass_hash"), never "passage", "passport", "passenger".
PASSWORD_KEYS = (
    # password, passwd, pswd, psswrd, pasword... (abbreviations and misspellings seen in keys)
    r"(?:pa?s{1,2}w(?:o?r)?d|passphrase|passwort|pwd)[A-Za-z0-9_-]{0,20}"
    # Short keys only as a word of their own: "DB_PASS", "pw", not "compass" or "bypass".
    r"|(?:\b|_)(?:pass|pw)(?:[_-][A-Za-z0-9_-]{0,20})?"
    # Command lines and SQL put the password after a word rather than a key.
    r"|convertto-securestring(?:[ \t]{1,3}-string)?|identified[ \t]{1,3}by"
)
# Keys whose value is generated: a token, a key, a secret. The value must look random.
TOKEN_KEYS = (
    r"(?:secret|token|bearer|credentials?|api[ _-]?key"
    r"|(?:access|private|auth(?:entication)?|master|account|encryption|signing|session"
    r"|consumer|license)[ _-]?key)[A-Za-z0-9_-]{0,20}"
)
# After the key: its closing quote or bracket (`"password":`, `$cfg['password'] =`).
_KEY_END = r"(?:\\?[\"'])?\]?"
SEPARATORS: tuple[str, ...] = (
    # A typed declaration, `val password: String = "..."`, `passwd: str = "..."`: before the
    # plain `:`, which would otherwise take the type for the value (the first branch wins).
    r"[ \t]{0,3}:[ \t]{0,3}[A-Za-z_][A-Za-z0-9_.]{0,20}[ \t]{0,3}=[ \t]{0,3}",
    r"[ \t]{0,3}(?::=|=>|->|=|:)[ \t]{0,3}",  # INI, .env, YAML, JSON, code, XML attributes
    r"[ \t]{0,3},[ \t]{0,3}",  # define('DB_PASSWORD', '...'), ("password", "...")
    r">",  # <password>...</password>
    r"[ \t]{1,3}value[ \t]{0,3}=[ \t]{0,3}",  # <add key="Password" value="..."/>
    r"[ \t]{1,3}",  # .netrc "password ...", "--password ...", "IDENTIFIED BY '...'"
)
_OPEN_QUOTE = r"(?:\\?[\"'`])?"
# A value: no blanks, quotes, markup, list or statement ends. It neither starts with "=" (so
# `password == x` is a comparison, not a value) nor ends with ".", ":" or ")" (a sentence's
# full stop, a call's closing parenthesis).
_VALUE_CHAR = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\]]"
_VALUE_FIRST = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\]=]"
_VALUE_LAST = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\].:)]"
_VALUE = f"({_VALUE_FIRST}(?:{_VALUE_CHAR}{{0,62}}{_VALUE_LAST})?)"
# A value longer than 64 characters goes on in pieces of its own (``Rule.tail``).
_VALUE_TAIL = f"{_VALUE_CHAR}{{0,63}}{_VALUE_LAST}"


def _key_rule_prefix(keys: str) -> str:
    return f"(?i:{keys}){_KEY_END}(?:{'|'.join(SEPARATORS)})"


# -- the judges ------------------------------------------------------------------------------

# Template, variable and reference syntaxes: `${DB_PASS}`, `{{ vault_pw }}`, `%(pw)s`, `$(cat
# f)`, `<password>`, `%env(X)%`, `$PASSWORD`, `@param`, `:symbol`, YAML tags and aliases.
_TEMPLATE = re.compile(r"\$\{|\$\(|\{\{|%\(|<|^[$%@:!&*?#]|__[A-Z]")
_DEMO = re.compile(r"password|passwd|secret|changeme|change_me", re.IGNORECASE)
# Whole values that stand for no value (matched whole: "nonentity" or "Xnull9" may be real).
_NO_VALUE = frozenset(
    ["none", "null", "nil", "undefined", "empty", "todo", "fixme", "string", "str", "true"]
)
# One word, as typed: "required", "Reset", "NONE" (a dictionary-like shape, not a password).
_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")
_CALL = re.compile(r"[A-Za-z_$][\w.$]*\(")  # `getpass()`, `os.getenv(...`, `env("DB_PASS"`
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")  # `self.password`, `cfg.db.pw`
_NUMBER = re.compile(r"[0-9]+|0x[0-9A-Fa-f]+")  # a count, a port, a bit mask in code
_EMAIL = re.compile(r"[^@]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\.?")
_PATH_START = ("/", "~/", "./", "../")


def _placeholder(value: str) -> bool:
    """A stand-in for a value rather than one: template syntax, a demo word, a mask."""
    return (
        _TEMPLATE.search(value) is not None
        or PLACEHOLDER_WORDS.search(value) is not None
        or _DEMO.search(value) is not None
        or value.lower() in _NO_VALUE
        or REPEATED.search(value) is not None
        or ASCENDING.search(value) is not None
        or len(set(value)) < 3  # "xxxx", "****", "abab"
    )


def _not_a_literal(value: str) -> bool:
    """A word, a name or call in code, a number, a path, an address: not a secret."""
    if _WORD.fullmatch(value) or _NUMBER.fullmatch(value) or _CALL.match(value):
        return True
    if "://" in value or value.startswith(_PATH_START) or _EMAIL.fullmatch(value):
        return True
    # An identifier without digits made of word-like runs: `db_password`, `userPass`.
    return not any(c.isdigit() for c in value) and is_name(value)


def _quoted(context: str) -> bool:
    return context[-1:] in "\"'`"


def _password_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """A value assigned to a password key that is a password someone set."""
    if len(value) < thresholds.min_password_length or _placeholder(value):
        return False
    if _not_a_literal(value):
        return False
    quoted = _quoted(context)
    # After a comma only a quoted literal is a value (a define(), a tuple), not a word list.
    if context.rstrip().endswith(",") and not quoted:
        return False
    # Unquoted in code, `cfg.db.pw` is a reference; in an .env file it would need no dots.
    return quoted or _DOTTED.fullmatch(value) is None


def _token_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """A value assigned to a token/key/secret key that looks generated."""
    if _placeholder(value) or _CALL.match(value) or _DOTTED.fullmatch(value):
        return False
    if context.rstrip().endswith(",") and not _quoted(context):
        return False
    return generic_value(value, thresholds)


def _url_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``scheme://user:password@host``: not the user's name again."""
    user = context[3:-1]  # the match starts "://" and the password follows "user:"
    if value == user or len(value) < 3 or _placeholder(value):
        return False
    return not _WORD.fullmatch(value)


def _user_password_blob(secret: str, _: Thresholds) -> bool:
    """Base64 of ``user:password`` (HTTP Basic, Docker ``auths``, npm ``_auth``)."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
        text = decoded.decode("ascii")
    except (binascii.Error, ValueError):  # ValueError covers bad ASCII
        return False
    user, colon, password = text.partition(":")
    if not (colon and user and password and text.isprintable()):
        return False
    return not (_placeholder(password) or password == user)


# -- the rules -------------------------------------------------------------------------------

_B64 = r"[A-Za-z0-9+/]"
_CRYPT = r"[./A-Za-z0-9]"

CONFIG_RULES: tuple[Rule, ...] = (
    Rule(
        "config_password",
        "A password assigned to a password key (password, passwd, pwd, pass, passphrase) in any "
        "config or code syntax: INI, .env, YAML, JSON, XML, define(), assignments, export, "
        ".netrc, connection strings (Password=...;), command lines",
        _key_rule_prefix(PASSWORD_KEYS),
        _OPEN_QUOTE + _VALUE,
        judge=_password_value,
        tail=_VALUE_TAIL,
        defers_to_prefixes=True,
    ),
    Rule(
        "generic_secret",
        "A high-entropy value assigned to a secret, token, bearer, credentials or *_key key "
        "(api_key, access_key, private_key, auth_key, master_key, SECRET_KEY, "
        "secret_key_base...) in any config or code syntax",
        _key_rule_prefix(TOKEN_KEYS),
        _OPEN_QUOTE + _VALUE,
        judge=_token_value,
        tail=_VALUE_TAIL,
        defers_to_prefixes=True,
    ),
    Rule(
        "url_credentials",
        "The password in a URL or connection URI (scheme://user:password@host)",
        r"://",
        # The user may be an e-mail address (smtps://me@example.com:pass@smtp.example.com).
        r"[^\s:/?#\"'`<>\[\]]{0,64}:([^\s:/@?#\"'`<>\[\]]{1,64})@",
        judge=_url_password,
        defers_to_prefixes=True,
    ),
    Rule(
        "basic_auth",
        "Base64 of user:password: HTTP Basic authorization, Docker config.json auths, npm _auth",
        r"(?:Basic[ \t]{1,3}|(?i:_?auth)\\?[\"']?[ \t]{0,3}[=:][ \t]{0,3}\\?[\"']?)",
        f"({_B64}{{6,120}}={{0,2}})",
        _user_password_blob,
        not_followed_by=r"A-Za-z0-9+/=",
    ),
    Rule(
        "password_hash",
        "A crypt(3) or htpasswd password hash: bcrypt $2a$/$2b$/$2y$, md5crypt $1$, Apache "
        "$apr1$, sha256/512-crypt $5$/$6$, yescrypt $y$, {SHA}/{SSHA}",
        r"(?:\$(?:2[abxy]?|1|apr1|5|6|y)\$|\{S?SHA\})",
        f"(?:[0-9]{{2}}\\${_CRYPT}{{53}}"  # bcrypt: cost, then salt and hash
        f"|(?:rounds=[0-9]{{1,9}}\\$)?{_CRYPT}{{1,16}}\\${_CRYPT}{{22,86}}"  # salt $ hash
        f"|{_CRYPT}{{1,8}}\\${_CRYPT}{{1,32}}\\${_CRYPT}{{43}}"  # yescrypt: params $ salt $ hash
        f"|{_B64}{{27,40}}={{0,2}})",  # {SHA} / {SSHA}: base64
        not_followed_by=r"./A-Za-z0-9+=$",
    ),
    Rule(
        "putty_private_key",
        "The private lines of a PuTTY key file (.ppk)",
        r"Private-Lines:[ \t]{0,3}[0-9]{1,3}",
        f"[ \\t]{{0,4}}\\r?\\n({_B64}{{8,64}}={{0,2}})",
        tail=f"(\\r?\\n{_B64}{{1,64}}={{0,2}})(?:\\r?\\n|$)",
    ),
)
