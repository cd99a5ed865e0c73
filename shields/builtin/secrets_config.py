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
import dataclasses
import itertools
import re

from shields.builtin.secrets_rules import (
    ASCENDING,
    PLACEHOLDER_WORDS,
    REPEATED,
    Judge,
    Rule,
    Thresholds,
    generic_value,
    is_name,
    random_looking,
)

__all__ = [
    "CONFIG_RULES",
    "NOT_SECRET_KEYS",
    "PASSWORD_KEYS",
    "SEPARATORS",
    "SHORT_TOKEN_KEYS",
    "TOKEN_KEYS",
    "VETO_RULES",
    "after_user_password",
    "is_placeholder",
]


# -- the vocabulary (RE2, read case-insensitively) -------------------------------------------

# Keys whose value is a password: typed by people, so any value that is not a placeholder,
# a word or code counts. A bare "pass" only with nothing or a separator after it ("DB_PASS",
# "pass_hash"), never "passage", "passport", "passenger".
PASSWORD_KEYS = (
    # password, passwd, pswd, psswrd, pasword, and the typos of hurried keys: passwrod,
    # passowrd, passworsd; passcode, passord (Norwegian).
    r"(?:pa?s{1,2}(?:w(?:o?r)?s?d|o?wr?o?d)|passphrase|passwort|passcode|passord|pwd)"
    r"[A-Za-z0-9_-]{0,20}"
    # The word in other languages (Portuguese, Spanish, French, Dutch, Finnish, Czech, German,
    # Italian/Romanian, Swedish without its diacritic), from the start of a word or a name's
    # part: inside words their first letters ("he", "wa") would hold every "the" of a stream.
    r"|(?:\b|_)(?:senha|contrase(?:n|ny|\?)a|mot[ _-]?de[ _-]?passe|wachtwoord|salasana|heslo"
    r"|kennwort|parola|losenord)[A-Za-z0-9_-]{0,20}"
    # Short keys only as a word of their own: "DB_PASS", "pw", not "compass" or "bypass";
    # glued to what the password is for as PHP and shell scripts name it (`$dbpass`,
    # `smtppass`, `rootpw`), from a list: "bypass", "overpass" and Apache's "ProxyPass" are
    # not passwords (nor is "sshpass": a program, whose `-p` gives the password).
    r"|(?:\b|_)(?:db|mysql|sql|pg|ftp|sftp|smtp|mail|email|root|admin|user|ldap|my|new|old|vnc"
    r"|web|wifi|wlan|redis|mongo|site|server|vpn|rdp|bind|rabbit|imap|pop3?|ad)?"
    r"(?:pass|pw)(?:[_-][A-Za-z0-9_-]{0,20})?"
    # A Wi-Fi network's pre-shared key (wpa_supplicant's and NetworkManager's `psk=`).
    r"|(?:\b|_)psk\b"
    # Servers' own password directives: Redis `requirepass`/`masterauth`, OpenLDAP and
    # nss-ldap `rootpw`/`bindpw`.
    r"|\b(?:requirepass|masterauth|rootpw|bindpw)\b"
    # An upper-case name that ends in PASS (`MYSQLPASS`, `SMTPPASS`), a camelCase one that ends
    # in Pass (`adminPass`, `smtpPass`): case decides, since "compass" and "bypass" are words.
    r"|(?-i:[A-Z0-9]PASS|[a-z0-9]Pass)\b"
    # Command lines and SQL put the password after a word rather than a key, or after options
    # (`ConvertTo-SecureString -String -Force ...`, `sshpass -p ...`).
    r"|convertto-securestring(?:[ \t]{1,2}-(?:string|asplaintext|force)){0,2}"
    r"|identified[ \t]{1,3}by|\bsshpass[ \t]{1,3}-p"
    # Java's keytool and jarsigner take the keystore's and the key's passwords as options.
    r"|(?-i:-(?:src|dest)?(?:store|key)pass)\b"
)
# Keys whose value is generated: a token, a key, a secret. The value must look random.
TOKEN_KEYS = (
    r"(?:secret|token|bearer|credentials?|api[ _-]?key"
    # The other HTTP authorization schemes whose credential is a token: `Authorization: OAuth
    # ...` (OAuth 1.0), `SSWS ...` (Okta), in their own case.
    r"|(?-i:\bOAuth|\bSSWS)"
    r"|(?:access|private|priv|auth(?:entication)?|master|account|encryption|signing|session"
    r"|consumer|license|storage|shared|hmac|subscription|service|admin|root|sdk)[ _-]?key"
    # The salt of a framework's hashes (`AUTH_SALT`, `SECURITY_PASSWORD_SALT`, `salt_value`)
    # and its pepper (a salt kept out of the database), one-time password seeds (`MFA_SEED`,
    # `totp_seed`, `otp_secret`, `hotpKey`, `2fa_code`: from the one-time password word on, so
    # that the judge sees it; a code of digits, a one-time password itself, is a number to the
    # judge and no secret), SonarQube's token property (`sonar.login`), from the start of a word or
    # name part; a nonce kept with them (`NONCE_KEY`, `nonce_secret`), which is one as long as
    # it is fixed.
    r"|(?:\b|_)(?:salt|pepper|nonce|(?:h?otp|totp|mfa|2fa)[ _-]?(?:seed|secret|key|code|token)"
    r"|sonar[._-]?login))"
    r"[A-Za-z0-9_-]{0,20}"
)
# "key", "auth", "api", "authorization", "authentication" and one-time password seeds ("totp",
# "mfa") alone or as the last word of a name (`ANY_KEY`, `db.auth`, `gi_api`), never as the
# start of a word ("keyboard", "author", "apiary"). Common words in prose ("the key is..."),
# so only with a separator that assigns (``ASSIGNING``), not a blank. Numbered too (`key2`).
# Also "pat" (a personal access token), "creds", "sig" (the signature that makes a shared
# access URL a credential: Azure SAS `&sig=`), "iv" (a fixed initialization vector), and
# session cookies (`sessionid`, `_gitlab_session`, `PHPSESSID`, `JSESSIONID`): a session id is
# the credential.
SHORT_TOKEN_KEYS = (
    r"(?:\b|_)(?:key|auth|api|authori[sz]ation|authentication|t?otp|mfa|2fa|pat|creds|sig|iv"
    r"|session(?:[_-]?id)?|(?:php)?sessid|jsessionid)(?:s|[0-9]{1,2})?\b"
    # The last word of a camelCase name (`appKey`, `hmacKey`, `sharedKey`, `basicAuth`,
    # `userSalt`).
    r"|(?-i:[a-z0-9](?:Key|Auth|Salt))s?\b"
)
# Keys that name a value made to be shared: a public key or token, an anti-forgery (CSRF)
# token, which every page a server sends carries; and the tokens APIs hand out to page through
# results or to make a call idempotent or conditional (`NextToken`, `nextPageToken`,
# `continuationToken`, `ChangeToken`, `LockToken`, `IdempotencyToken`): a cursor, not a
# credential, which an agent's tool result carries and must pass on unchanged. Their words
# come before a token key word, so they are vetoes (``Rule.veto``), not judges.
NOT_SECRET_KEYS = (
    r"(?:public|publishable|pub)[ _-]?(?:key|token|api[ _-]?key)(?:[ _-]?(?:token|id))?s?"
    r"|(?:csrf|xsrf|authenticity)[ _-]?(?:token|key)?|csrfmiddlewaretoken"
    r"|(?:next|prev(?:ious)?|page|continuation|continue|pagination|paging|sync|resume|change"
    r"|lock|idempotency|lifecycle[ _-]?action)[ _-]?(?:page[ _-]?)?(?:lock[ _-]?)?token"
    # A database's, a cache's or a queue's keys: ids of rows, entries and messages.
    r"|(?:idempotency|dedupe?|deduplication|cache|partition|sort|primary|foreign|row|range"
    r"|routing|shard|lookup)[ _-]?key"
)
# After the key: its closing quote or bracket (`"password":`, `$cfg['password'] =`).
_KEY_END = r"(?:\\?[\"'])?\]?"
# Separators prose puts after a word too: a comma, blanks, a parenthesis.
# define('DB_PASSWORD', '...'), ("password", "..."), and wp-config's values aligned in a
# column (`define( 'AUTH_KEY',         '...' );`).
_COMMA = r"[ \t]{0,3},[ \t]{0,16}"
# .netrc "password ...", "--password ...", "IDENTIFIED BY '...'"; `\t` as code in a string
# literal writes a tab (`"#define\tPASSWORD\t\"...\""`).
_BLANKS = r"(?:[ \t]|\\t){1,3}"
_CALL_OPEN = r"[ \t]{0,3}\([ \t]{0,3}"  # a setter or builder: `setPassword("...")`
SEPARATORS: tuple[str, ...] = (
    # A typed declaration, `val password: String = "..."`, `passwd: str = "..."`, Rust's
    # `let token: &str = "..."`: before the plain `:`, which would otherwise take the type for
    # the value (the first branch wins).
    r"[ \t]{0,3}:[ \t]{0,3}&?[A-Za-z_][A-Za-z0-9_.]{0,19}[ \t]{0,3}=[ \t]{0,3}",
    # YAML: the value on the next line, plain or as a block scalar (`secret: >-`, `key: |`).
    r"[ \t]{0,3}:[ \t]{0,3}(?:[|>][-+]?[ \t]{0,3})?\r?\n[ \t]{1,16}",
    # The value on the next line after "=", as Java's and Kotlin's formatters break a long
    # assignment (`static final String ACCOUNT_KEY\n        = "..."`), or after it.
    r"[ \t]{0,3}\r?\n[ \t]{1,16}=[ \t]{0,3}",
    r"[ \t]{0,3}=[ \t]{0,3}\r?\n[ \t]{1,16}",
    # A literal fallback after an environment lookup: `os.environ.get("PASSWORD") or "..."`,
    # `process.env.JWT_SECRET || '...'`, `getenv('DB_PASS') ?: '...'`, `?? "..."`.
    r"\)?[ \t]{0,3}(?:\|\||\?\?|\?:)[ \t]{0,3}",
    r"\)?[ \t]{1,3}or[ \t]{1,3}",
    # The default of an environment or settings lookup assigned to the key: `SECRET =
    # os.getenv("OTHER", "...")`, `ENV.fetch('X', '...')`, `'key' => env('APP', '...')`. Only a
    # quoted literal after the comma is a value (the judges). At most 35 characters, as every
    # separator here: the longest one bounds the stream hold-back (``max_match``).
    r"[ \t]?(?::?=|=>)[ \t]?(?:(?:os|ENV)\.)?(?:getenv|get|fetch|env)\(\\?[\"'][A-Za-z0-9_.-]{1,14}"
    r"\\?[\"'],[ \t]?",
    # A name/value pair that names the key: a Kubernetes container's `- name: DB_PASSWORD`
    # with `value: "..."` on the next line, JSON's `{"name": "api_key", "value": "..."}`.
    r"[ \t]{0,2}(?:,[ \t]{0,2}|\r?\n[ \t]{0,16})\\?[\"']?value\\?[\"']?[ \t]{0,2}[=:][ \t]{0,2}",
    # INI, .env, YAML, JSON, code, XML attributes; Makefile `?=`, `::=`, PHP `.=`, Ruby `||=`,
    # JS `??=`; a comparison with a literal (`if password == "..."`), which the judges look at
    # apart. Blanks that align a block's values in a column (`password        => '...'`,
    # `fbApiKey:            "..."`) on either side, within the 34 characters of a separator.
    r"[ \t]{0,16}(?:={2,3}|!={1,2}|:{1,3}=|[?.+]=|\|\|=|\?\?=|=>|->|=|:)[ \t]{0,15}",
    # R's assignment (`api_key <- "..."`); a Markdown table's next cell (`| password | ... |`).
    r"[ \t]{1,3}<<?-[ \t]{1,3}",
    r"[ \t]{0,3}\|[ \t]{1,3}",
    _COMMA,
    r">(?:[ \t]{0,8}\r?\n)?[ \t]{0,16}",  # <password>...</password>, on its own line too
    # An element with an attribute: <Pass encoding="base64">...</Pass> (FileZilla),
    # <password xsi:type="xs:string">.
    r"[ \t]{1,3}[A-Za-z_][A-Za-z0-9_:.-]{0,12}=[\"'][^\"'<>\r\n]{0,12}[\"'][ \t]{0,2}>",
    # A type after a blank, as Go and C declare (`var apiKey string = "..."`, `char secret[] =
    # "..."`), only before a quoted literal (a blank and a word is prose) and with a blank
    # before the "=" (`encoding="base64"` is an attribute).
    r"[ \t]{1,3}[A-Za-z_][A-Za-z0-9_.]{0,12}(?:\[\])?[ \t]{1,3}=[ \t]{0,3}\\?[\"']",
    r"[ \t]{1,3}value[ \t]{0,3}=[ \t]{0,3}",  # <add key="Password" value="..."/>
    _BLANKS,
    _CALL_OPEN,
)
_PROSE_SEPARATORS = (_COMMA, _BLANKS, _CALL_OPEN)
# A password told in a sentence or a note: "the password is ...", "password for root: ...".
# Only after a password key, whose values the judge reads as typed passwords (a word, a name
# or a number is none: "the password is incorrect", "password for 8 characters").
PASSWORD_PROSE_SEPARATORS: tuple[str, ...] = (
    # "is" in English, Spanish, German, French ("mi contraseña es ...", "mein Passwort ist").
    r"[ \t]{1,3}(?:is|was|es|era|ist|war|est|etait)[ \t]{1,3}(?:now[ \t]{1,3})?(?::[ \t]{0,3})?",
    # What it is for, then "is": "the password for the VPN is ...", "password of prod is".
    r"[ \t](?:for|of|to)[ \t](?:the[ \t])?[^ \t\r\n=:]{1,12}[ \t](?:is|was)[ \t]",
    # Set to: "changed the root password to ...", "set the password to ...".
    r"[ \t]{1,3}to[ \t]{1,3}",
    # Cisco IOS: `username admin password 0 ...` (type 0, in clear) and type 7 (reversible).
    r"[ \t]{1,3}[07][ \t]{1,3}",
    r"[ \t]{1,3}(?:for|of)[ \t]{1,3}[^ \t\r\n=:]{1,16}[ \t]{0,3}[=:][ \t]{0,3}",
)
# OpenSSL's pass phrase arguments (`-pass pass:...`, `-passin pass:...`): the value is what
# follows "pass:" (`env:`, `file:`, `fd:` name where it is kept, not the pass phrase).
_OPENSSL_PASS = r"[ \t]{1,3}pass:"
# A string literal's opening quote, with a language's prefix (Python b'' r'' u'' f'', C#
# @"" $"", C++ L"" u8"") or as markup writes it (`&quot;`, `&#39;`).
_OPEN_QUOTE = r"(?:(?:[bBrRuUfFL]{1,2}|u8|@|\$)?\\?[\"'`]|&(?:quot|apos|#0?3[49]);)?"
# A value: no blanks, quotes, markup, list or statement ends. It neither starts with "=" (so
# `password == x` is a comparison, not a value) nor ends with ".", ":" or ")" (a sentence's
# full stop, a call's closing parenthesis).
_VALUE_CHAR = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\]]"
_VALUE_FIRST = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\]=]"
_VALUE_LAST = r"[^\x00-\x20\x7f-\xff\"'`<>;,\\&{}\[\].:)]"
_VALUE = f"({_VALUE_FIRST}(?:{_VALUE_CHAR}{{0,62}}{_VALUE_LAST})?)"
# A value longer than 64 characters goes on in pieces of its own (``Rule.tail``).
_VALUE_TAIL = f"{_VALUE_CHAR}{{0,63}}{_VALUE_LAST}"
# A quoted literal is the value up to its closing quote, whatever it holds but blanks and
# backslashes: generated keys use every symbol (WordPress's `define('AUTH_SALT', '...')`,
# Django's SECRET_KEY), and a value cut at its first ";" or "&" would leave the rest of the
# secret in the text. First in the body: a quote takes this branch, a bare value the other.
# Python's triple quotes first (`"""..."""`): a single quote would open an empty literal.
_QUOTE_ONLY = r"(?:[bBrRuUfFL]{1,2}|u8|@|\$)?(?:\"\"\"|'''|\\?[\"'`])"
_WIDE_CHAR = r"[^\x00-\x20\x7f-\xff\"'`\\]"
_WIDE_FIRST = r"[^\x00-\x20\x7f-\xff\"'`\\=]"
_QUOTED_VALUE = f"{_QUOTE_ONLY}({_WIDE_FIRST}{_WIDE_CHAR}{{0,63}})"
# A key as escaped bytes (`SECRET_KEY = b"\xd3\x1f..."`, C's "\x8a\x11..."): up to 16 bytes a
# piece, the rest in the tail's pieces.
_ESCAPED_BYTES_RUN = r"(?:\\x[0-9a-fA-F]{2})"
_KEY_VALUE = (
    f"(?:{_QUOTE_ONLY}({_ESCAPED_BYTES_RUN}{{6,16}})|{_QUOTED_VALUE}|{_OPEN_QUOTE}{_VALUE})"
)
_KEY_VALUE_TAIL = f"(?:{_ESCAPED_BYTES_RUN}{{1,16}}|{_VALUE_TAIL})"


def _key_rule_prefix(keys: str, short_keys: str | None = None, more: tuple[str, ...] = ()) -> str:
    # ``more`` first: the first branch that matches is the one judged, and a blank would take
    # "password is ..." for a password "is".
    prefix = f"(?i:{keys}){_KEY_END}(?:{'|'.join((*more, *SEPARATORS))})"
    if short_keys is None:
        return prefix
    # Every separator but those prose puts after a word too; a comma after a quoted key is
    # code (`define('NONCE_KEY', '...')`).
    assigning = "|".join(sep for sep in SEPARATORS if sep not in _PROSE_SEPARATORS)
    quoted_comma = r"\\?[\"']\]?[ \t]{0,3},[ \t]{0,16}"
    # Blanks, then a quoted literal: `#define API_KEY "..."`, `setenv AUTH "..."`, `(def key
    # "...")`. The quote is part of the separator (a blank alone is prose's).
    blanks_quote = r"(?:[ \t]|\\t){1,3}\\?[\"']"
    # Prose that tells the value: "your API key is ...", "the auth was: ..." (the judge wants a
    # generated value: "the key is important" is no secret).
    told = r"[ \t]{1,3}(?:is|was)[ \t]{1,3}(?::[ \t]{0,3})?"
    return (
        f"(?:{prefix}|(?i:{short_keys})"
        f"(?:{quoted_comma}|{_KEY_END}(?:{assigning}|{blanks_quote})|{told}))"
    )


# -- the judges ------------------------------------------------------------------------------

# Template, variable and reference syntaxes: `${DB_PASS}`, `{{ vault_pw }}`, `%(pw)s`, `$(cat
# f)`, `<password>`, `%env(X)%`, `$PASSWORD`, `@param`, `:symbol`, YAML tags and aliases.
# (A "<" inside a generated value, which a quoted one may hold, is no template: `<word>` is.)
# A symbol only starts a reference when a name as code writes one follows (capitals, lower
# case, camelCase or PascalCase: `$DB_PASS`, `@Value`, `!vault`, `*default_pw`) and no other
# symbol: a generated key uses every symbol anywhere (Django's `'%(^+=gr@cu...'`), a chosen
# password mixes cases with digits (`'!Qaz2wsx'`, `"*Starfish99"`).
_TEMPLATE = re.compile(
    r"\$\{|\$\([A-Za-z_]|\{\{|%\([A-Za-z_]\w*\)|^<|<[A-Za-z_][\w .:-]*>"
    r"|^[$%@:!&*?#](?:[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+"
    r"(?:[A-Z][a-z]+)*)(?:[.:/(){}=;%$#-][\w.:/(){}=;%$#-]*)?$|__[A-Z]"
    # Ruby's interpolation (`"#{ENV.fetch('X')}"`), a build's replacement token
    # (`@@DB_PASSWORD@@`, `%%PASS%%`), a format string's field (`{password}`).
    r"|#\{|^(?P<token>[@%$#]{1,2})[A-Za-z_]\w*(?P=token)$|^\{[A-Za-z_][\w.]*\}$"
    # Markdown's emphasis: "pass *them* to", "pass **None**".
    r"|^(?P<emphasis>\*{1,2}|_)[\w.-]+(?P=emphasis)$"
)
# A demo word in a value makes it a stand-in (`secret`, `mynewpassword`, `no-password-required`,
# `generatedwebdavpassword1`), unless what is left mixes digits with a symbol, as a password
# someone chose does (`Password123!`, `MySecret#42`, `Tf!Secret-2024`). A hyphen, a dot or an
# underscore join words, and "%20" encodes a blank: neither counts as that symbol.
_DEMO = re.compile(r"password|passwd|secret|changeme|change_me|changeit", re.IGNORECASE)
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def _demo(value: str) -> bool:
    if _DEMO.search(value) is None:
        return False
    rest = _PERCENT_ESCAPE.sub("", _DEMO.sub("", value))
    digit = any(c.isdigit() for c in rest)
    symbol = any(not c.isalnum() and c not in "-._" for c in rest)
    return not (digit and symbol)


# Whole values that stand for no value (matched whole: "nonentity" or "Xnull9" may be real).
_NO_VALUE = frozenset(
    ["none", "null", "nil", "undefined", "empty", "todo", "fixme", "string", "str", "true"]
)
# One word, as typed: "required", "Reset", "NONE" (a dictionary-like shape, not a password).
_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")
# `getpass()`, `os.getenv(...`, `env("DB_PASS"`, `Hash::make(`, `std::env::var(`
_CALL = re.compile(r"[A-Za-z_$][\w.$]*(?:::[A-Za-z_$][\w$]*)*\(")
# A static member or a path through `::` (`Console::ReadLine`, `Hash::make`): code.
_SCOPED = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_$]\w*)+\(?")
# A PowerShell cmdlet (`Read-Host`, `ConvertTo-SecureString`, `Get-Content`): a verb of its
# approved list, a hyphen and a noun.
_CMDLET = re.compile(
    r"(?:Get|Set|Read|Write|New|Remove|ConvertTo|ConvertFrom|Import|Export|Invoke|Out|Select"
    r"|Test|Add|Start|Stop|Join|Split)-[A-Z][A-Za-z]+"
)
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")  # `self.password`, `cfg.db.pw`
_NUMBER = re.compile(r"[0-9]+|0x[0-9A-Fa-f]+")  # a count, a port, a bit mask in code
_EMAIL = re.compile(r"[^@]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\.?")
_PATH_START = ("/", "~/", "./", "../")
_NOT_IN_USER = frozenset(" \t\"'{}[]<>")
# Words that end a key name and say its value is about a secret, not the secret: its name,
# id, file, URL, type, length, ... (`SECRET_NAME`, `credentialsId`, `token_url`).
_ABOUT = re.compile(
    r"[_.-]?(?:name|id|ids|file|path|dir|url|uri|endpoint|type|kind|arn|ref|env|var|length"
    r"|len|size|count|min|max|prefix|suffix|header|field|param|format|pattern|regex|hint"
    r"|policy|expiry|expires|expiration|ttl|version|provider|store|vault|manager|location"
    # its hashing or checking (`PASSWORD_HASH_ALGO`, `api_key_hash`, `passwordStrength`,
    # `password_confirmation`), when it changed, and the words a form shows about it.
    r"|algo|algorithm|hash|hashed|digest|fingerprint|checksum|strength|complexity|rules?"
    r"|validation|validator|confirmation|changed|changed_at|updated_at|created_at|reset_at"
    r"|label|prompt|placeholder|message|msg|error|help|description|title|text|transformation"
    r"|padding)"
    r"[\"'\]]?[ \t]*(?:\[|$)",
    re.IGNORECASE,
)
_KEY_NAME = re.compile(r"[A-Za-z0-9_.-]*")
_USER_RUN = re.compile(r"[A-Za-z0-9_$#.@*-]+")
_PASSWORD_KEY = re.compile(f"(?:{PASSWORD_KEYS})", re.IGNORECASE)
_ENCODED_START = re.compile(r"^%(?:25)?(?:3[Ff]|26)")
# A version number (`1.7.8`, `0.15.0`) or an IP address: never a credential.
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
# A name of words joined by - : / | . (`NEXUS-GPT4-API-KEY`, `tenant:acme:support-v1`,
# `io.example/clientInfo`): words as typed (one case, capitalized, camelCase), each with at
# most two digits after it, or short numbers.
_NAME_WORD = r"(?:(?:[A-Z]{2,}|[A-Za-z][a-z]+(?:[A-Z][a-z]+)*|[a-z])[0-9]{0,2}|[0-9]{1,4})"
_COMPOUND_NAME = re.compile(f"{_NAME_WORD}(?:[-:/|.]{_NAME_WORD})+")
# A blank after the key (or after its closing quote: `name="password" type=...` in markup).
_BLANK_AFTER_KEY = re.compile(r"[A-Za-z0-9_\]\"'](?:[ \t]|\\t)+[`\"']?$")
_SNAKE_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
_PROSE = re.compile(r"[A-Za-z]+\?+|[A-Za-z]{2,}(?:[/|][A-Za-z]{2,})+|\(.*")
# A call chain (`20).configurable_fields(`), a comparison or a member access inside the value
# (`pKey->default_rc==0`): code, not a literal (base64's "==" only ever ends a value).
# A validation rule list (Laravel's `'password' => 'required|string|min:8|confirmed'`).
_RULE_LIST = re.compile(r"[a-z_]+(?::[\w.,-]+)?(?:\|[a-z_]+(?::[\w.,-]+)?)+")
_CODE = re.compile(r"\)\.|\(\)|[=!]=.|->|&&|\|\|")
_FLAG = re.compile(r"--?[A-Za-z]")  # `--digest`: the next option of a command line
# The separator of a comparison, and the quote that opens its literal.
_COMPARISON = re.compile(r"[=!]==?[ \t]*\\?[\"'`]?$")


# Characters only a quoted value holds (``_QUOTED_VALUE``): a value with them is a generated
# secret only if it mixes kinds of characters as one does, and is no format string
# (`f"{host}:{port}"`, `"%s;%s"`, `"{0},{1}"`) or a literal list, set or markup.
_QUOTED_ONLY_CHARS = re.compile(r"[;,<>{}\[\]&]")
_FORMAT = re.compile(r"\{[\w.:]*\}|%[-0-9.]*[sdrfx]|^[(\[{<]")


def _symbol_literal(value: str) -> bool:
    """A value with characters only quoted values hold reads as a generated one."""
    if _QUOTED_ONLY_CHARS.search(value) is None:
        return True
    if _FORMAT.search(value):
        return False
    kinds = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
    )
    return sum(kinds) >= 2 and len(value) >= 8


_ESCAPED_BYTES = re.compile(r"(?:\\x[0-9a-fA-F]{2})+")


def _random_bytes(value: str) -> bool:
    """Escaped bytes that look generated: mostly different (a mask or a counter is not)."""
    data = bytes.fromhex(value.replace("\\x", ""))
    if len(set(data)) < 0.75 * len(data):
        return False
    steps = {b - a for a, b in itertools.pairwise(data)}
    return len(steps) > 1  # not 00 01 02 ... or 10 20 30 ...


def _call(value: str) -> bool:
    """Code that calls a function (`getpass()`, `os.getenv("X"`): a name, then "(". Generated
    keys hold "(" too (Django's), after a run that is no name."""
    if _SCOPED.fullmatch(value) or _CMDLET.fullmatch(value):
        return True
    call = _CALL.match(value)
    return call is not None and is_name(call.group()[:-1].replace("::", "."))


def _quoted_whole(judge: Judge) -> Judge:
    """``judge`` on a whole quoted value, else on its start up to the first character only a
    quoted value holds (what a bare value's pattern would have taken): a literal whose start
    is a password is one to its closing quote (`"Xk9#mq2&&Zp4"`)."""

    def whole_or_start(context: str, value: str, thresholds: Thresholds) -> bool:
        if _ESCAPED_BYTES.fullmatch(value):
            return _random_bytes(value) and not _about_a_secret(context)
        if judge(context, value, thresholds):
            return True
        cut = _QUOTED_ONLY_CHARS.search(value)
        start = value[: cut.start()].rstrip(".:)") if cut else ""
        return bool(start) and judge(context, start, thresholds)

    return whole_or_start


def _placeholder(value: str) -> bool:
    """A stand-in for a value rather than one: template syntax, a demo word, a mask."""
    return (
        _TEMPLATE.search(value) is not None
        or PLACEHOLDER_WORDS.search(value) is not None
        or _demo(value)
        or value.lower() in _NO_VALUE
        or REPEATED.search(value) is not None
        or ASCENDING.search(value) is not None
        or len(set(value)) < 3  # "xxxx", "****", "abab"
    )


def _about_a_secret(context: str) -> bool:
    """The key names something about a secret (``SECRET_NAME``, ``token_url``)."""
    key = _KEY_NAME.match(context)
    if key is None or _SESSION_ID.search(key.group()):
        return False
    return _ABOUT.search(key.group()) is not None


def _unicode_word(value: str) -> bool:
    """A word in another language, as typed: lower case, capitalized or capitals ("Mínimo",
    "lösenord"), which ``_WORD``'s ASCII letters do not read. The rules read an ASCII view
    of the text, where each other character is a "?"."""
    if "?" not in value:
        return False
    letters = value.replace("?", "")
    return letters.isalpha() and (letters.islower() or letters.istitle() or letters.isupper())


# A prompt's label in a string (`readPassword("Password: ")`): a word and a colon.
_LABEL = re.compile(r"[A-Za-z?]+:")


def _not_a_literal(value: str) -> bool:
    """A word, a name or call in code, a number, a version, a path, an address: not a secret."""
    if _WORD.fullmatch(value) or _NUMBER.fullmatch(value) or _call(value):
        return True
    if _unicode_word(value) or _LABEL.fullmatch(value):
        return True
    # Prose: a word ending a question ("Passwort angeben?"; "cackle!" may be a password),
    # alternatives ("read/write", "anda|apa"), a parenthesis opened after a key word
    # ("token (pypi-...)").
    if _PROSE.fullmatch(value) or _RULE_LIST.fullmatch(value):
        return True
    if _VERSION.search(value):
        return True
    if "://" in value or value.startswith(_PATH_START) or _EMAIL.fullmatch(value):
        return True
    if _FLAG.match(value) or _REFERENCE.match(value) or _CODE.search(value):
        return True
    # An identifier without digits made of word-like runs: `db_password`, `userPass`.
    return not any(c.isdigit() for c in value) and is_name(value)


# The opening of a quoted literal, at the end of what came before a value (``_OPEN_QUOTE``).
_QUOTE = r"(?:(?:[bBrRuUfFL]{1,2}|u8|@|\$)?\\?[\"'`]|&(?:quot|apos|#0?3[49]);)"
_QUOTED = re.compile(_QUOTE + "$")
# Separators after which only a quoted literal is a value: a fallback (`... or "..."`, `||`,
# `??`, `?:`) and a call's parenthesis; `or token` and `setPassword(pw)` are code.
_LITERAL_ONLY = re.compile(r"(?:\|\||\?\?|\?:|[ \t]or|\()[ \t]*" + _QUOTE + "?$")
# A reference to a secret kept elsewhere (`arn:aws:secretsmanager:...`, `vault:secret/db`,
# `projects/p/secrets/db`): not the secret.
_REFERENCE = re.compile(
    r"(?:arn|urn|vault|ssm|sops|secretsmanager|awskms|gcpkms|azurekeyvault|keyvault):|projects/"
    # Azure App Service's Key Vault reference; the host after a template's userinfo
    # (`mongodb+srv://<username>:<password>@cluster0.ab1cd.mongodb.net/?retryWrites=true`).
    r"|@microsoft\.keyvault\(|@[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:[:/?#]|$)",
    re.IGNORECASE,
)
# A session id is the credential itself, though its key ends in "id" (`sessionid`, `JSESSIONID`).
_SESSION_ID = re.compile(r"sess(?:ion)?[_.-]?id$", re.IGNORECASE)


def _quoted(context: str) -> bool:
    return _QUOTED.search(context) is not None


def _class_changes(value: str) -> int:
    """How often the kind of character (lower, upper, digit, other) changes along ``value``."""
    kinds = [
        "l" if c.islower() else "u" if c.isupper() else "d" if c.isdigit() else "o" for c in value
    ]
    return sum(a != b for a, b in itertools.pairwise(kinds))


# A lower-case word of six letters and more, quoted as a literal for a password key, is a
# password someone chose (`pwd = "qwertyui"`, `"password": "sunshine"`); unquoted, a word is
# a name in code (`password=secret_value`), and capitalized, a label (`"password": "Passwort"`).
_LOWER_WORD = re.compile(r"[a-z]{6,}")
# Words a password key holds that describe the field instead: a schema's type, a validation
# rule, a form field's state, a hashing or storage scheme.
_FIELD_WORDS = frozenset(
    [
        # Schema and settings words (a column's type, an access rule, a lifecycle state).
        "redact",
        "lookup",
        "filtered",
        "forbidden",
        "varchar",
        "inherit",
        "inherited",
        "always",
        "mandatory",
        "writeonly",
        "external",
        "internal",
        "builtin",
        "digest",
        "deprecated",
        "removed",
        "obsolete",
        "locked",
        "unlocked",
        "custom",
        "static",
        "dynamic",
        "confirmation",
        "protected",
        "secured",
        "encoded",
        "encrypt",
        "decrypt",
        "omitted",
        "excluded",
        "managed",
        "visible",
        "minimum",
        "maximum",
        "unique",
        "denied",
        "allowed",
        "accepted",
        "rejected",
        "pending",
        "active",
        "inactive",
        "unchanged",
        "medium",
        "masking",
        "required",
        "optional",
        "string",
        "hidden",
        "masked",
        "encrypted",
        "hashed",
        "default",
        "unknown",
        "invalid",
        "incorrect",
        "missing",
        "confirm",
        "confirmed",
        "current",
        "blank",
        "disabled",
        "enabled",
        "nullable",
        "readonly",
        "sensitive",
        "private",
        "plaintext",
        "random",
        "generated",
        "prompt",
        "input",
        "variable",
        "value",
        "field",
        "keyring",
        "keychain",
        "vault",
        "reset",
        "expired",
        "update",
        "updated",
        "verify",
        "mismatch",
        "strong",
        "weak",
        "length",
        "pattern",
        "bcrypt",
        "argon",
        "sha",
        "native",
        "plain",
        "cleartext",
        "clear",
        "environment",
        "keyword",
        "number",
        "integer",
        "boolean",
        "object",
        "unicode",
        "charfield",
        "textfield",
        "secure",
        "ignore",
        "ignored",
        "forgot",
        "forgotten",
        "changed",
        "policy",
        "username",
        "login",
        "account",
        "anonymous",
        "public",
        "guest",
        "nobody",
        "system",
        "server",
        "client",
        "local",
        "remote",
        "manual",
        "automatic",
        "interactive",
        "stdin",
        "setting",
        "settings",
    ]
)


# Assigned, then quoted: not a list of names (`["login", "password", "encoding"]`) or a code
# span in prose ("pass `snapshot` to ...").
_ASSIGNED_QUOTE = re.compile(r"(?:=|:|=>)[ \t]{0,3}\\?[\"']$")


# Passwords the world uses as examples (xkcd's passphrase, the films' and jokes' ones).
_FAMOUS_EXAMPLES = frozenset(["correcthorsebatterystaple", "opensesame", "swordfish"])


def _chosen_word(value: str) -> bool:
    """A lower-case word of six letters and more that does not describe a password field."""
    return (
        _LOWER_WORD.fullmatch(value) is not None
        and value not in _FIELD_WORDS
        and value not in _FAMOUS_EXAMPLES
        and _PASSWORD_KEY.fullmatch(value) is None  # the word itself in a language: a label
    )


# An environment file's or a shell's assignment: a capitals key glued to "=" (`DB_PASSWORD=`),
# whose unquoted value is a literal, not a name in code.
_ENV_ASSIGN = re.compile(r"[A-Z0-9_]+=")


def _word_password(context: str, value: str) -> bool:
    if _ASSIGNED_QUOTE.search(context) is None and _ENV_ASSIGN.fullmatch(context) is None:
        return False
    return _chosen_word(value)


def _yaml_word(_context: str, value: str, _thresholds: Thresholds) -> bool:
    return _chosen_word(value) and not _placeholder(value)


def _password_placeholder(value: str) -> bool:
    """A placeholder as ``_placeholder`` says, except that people append a counted run to a
    word they choose (`abuser123456`, `Summer123456`): an ascending run makes a password a
    placeholder only when fewer than four characters are left beside it (`abcdef12`)."""
    if not _placeholder(value):
        return False
    run = ASCENDING.search(value)
    if run is None or REPEATED.search(value) or len(set(value)) < 3:
        return True
    if _TEMPLATE.search(value) or PLACEHOLDER_WORDS.search(value) or _demo(value):
        return True
    if value.lower() in _NO_VALUE:
        return True
    rest = _without_counted_runs(value)
    return len(rest) < 4 or ASCENDING.search(rest) is not None


def _without_counted_runs(value: str) -> str:
    """``value`` less its runs of four and more characters that count up (`123456`, `abcd`)."""
    kept: list[str] = []
    run = value[:1]
    for char in value[1:]:
        prev = run[-1]
        if char.isalnum() and prev.isalnum() and ord(char.lower()) == ord(prev.lower()) + 1:
            run += char
            continue
        kept.append(run if len(run) < 4 else "")
        run = char
    kept.append(run if len(run) < 4 else "")
    return "".join(kept)


def _password_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """A value assigned to a password key that is a password someone set."""
    if len(value) < thresholds.min_password_length or _password_placeholder(value):
        return False
    if not _symbol_literal(value):
        return False
    quoted = _quoted(context)
    if _about_a_secret(context):
        return False
    if _not_a_literal(value) and not _word_password(context, value):
        return False
    if not quoted and _LITERAL_ONLY.search(context):
        return False
    if _COMPARISON.search(context):
        # `if password == "..."` hard-codes a password, but code compares with examples too
        # (`== 'hunter2'`): only a quoted literal that mixes kinds of characters throughout,
        # as a set password does, counts.
        return quoted and _class_changes(value) >= 4
    # After a comma only a quoted literal is a value (a define(), a tuple), not a word list.
    if context.rstrip().endswith(",") and not quoted:
        return False
    # After a blank, `name=value` is an argument ("pass stdout=PIPE to ..."), a snake_case
    # word a name ("pass force_zip64 to ...") and hyphenated words prose ("pass
    # client-supplied state"), not a password.
    if _BLANK_AFTER_KEY.search(context) and (
        "=" in value or _SNAKE_NAME.fullmatch(value) or _COMPOUND_NAME.fullmatch(value)
    ):
        return False
    # Unquoted in code, `cfg.db.pw` is a reference; in an .env file it would need no dots.
    return quoted or _DOTTED.fullmatch(value) is None


# A salt or a pepper (`$salt`, `AUTH_SALT`, `userSalt`, `config.pepper`) is set by hand as often
# as generated (Flask-Security's `SECURITY_PASSWORD_SALT = "..."`): its value is judged as a
# password's, a typed secret's. The match starts at the key word, or at the character before
# its camelCase capital or the "_" before it.
_SALT_KEY = re.compile(r"[A-Za-z0-9_]?(?i:salt|pepper)(?![a-z])")
_SALT_MIN_DIGITS = 10
_SALT_MIN_DISTINCT = 7
_INTERPOLATION = re.compile(r"\$[A-Z][A-Z0-9_]{3,}")
# A one-time password key (`otp_secret`, `totpSeed`, `MFA_KEY`, `2fa: ...`), as the token-key
# rule's match starts: at the word, or at the "_" before it.
_OTP_KEY = re.compile(r"_?(?i:h?otp|totp|mfa|2fa)")
# An HTTP authorization scheme whose credential is a token (RFC 6750's Bearer, OAuth 1.0's
# `OAuth`, Okta's `SSWS`), as the key: `Authorization: Bearer <token>`.
_BOOTSTRAP_TOKEN = re.compile(r"[a-z0-9]{6}\.[a-z0-9]{16}")
_BEARER = re.compile(r"(?:(?i:bearer)|OAuth|SSWS)(?:[ \t]|\\t)+$")
_BEARER_MIN_LENGTH = 16
# A generated token switches between letters and digits every few characters; a name with a
# number (`accesstoken2024`) does once or twice.
_BEARER_MIN_CHANGES = 4


# An HTTP header's name (`X-Hub-Signature-256`, `X-Api-Key`): capitalized words and numbers
# joined by hyphens, which a generated token never is.
_HEADER_NAME = re.compile(r"[A-Z][a-z0-9]*(?:-[A-Z0-9][A-Za-z0-9]*)+")


def _token_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """A value assigned to a token/key/secret key that looks generated."""
    if _placeholder(value) or _call(value) or _about_a_secret(context):
        return False
    if not _symbol_literal(value):
        return False
    if "://" in value or _VERSION.search(value) or _COMPOUND_NAME.fullmatch(value):
        return False
    if _HEADER_NAME.fullmatch(value):
        return False
    if _PROSE.fullmatch(value) or _CODE.search(value) or _REFERENCE.match(value):
        return False
    # `cfg.api_token` is a reference; `s.ZC9Ecf4M...` (a Vault token) is not a name.
    if _DOTTED.fullmatch(value) and is_name(value):
        return False
    # An environment variable interpolated in a string (`"-test-$PYTHON_VERSION"`,
    # `"anonymous:$FROM_EMAIL"`), or, after a blank, an argument (`the key 'path=...'`): code
    # and prose, not a generated literal. (Generated values may hold "$", Django's keys do, but
    # not before upper-case letters: their alphabet has none.)
    if _INTERPOLATION.search(value):
        return False
    if _BLANK_AFTER_KEY.search(context) and "=" in value.rstrip("="):
        return False
    quoted = _quoted(context)
    if context.rstrip().endswith(",") and not quoted:
        return False
    if not quoted and _LITERAL_ONLY.search(context):
        return False
    if _COMPARISON.search(context) and not quoted:
        return False
    if _SALT_KEY.match(context):
        # A salt may be a long random number (`SALT=8472919361`), which a password is not: ten
        # digits and more, most of them different (a date, a count or a typed run is not).
        if value.isdigit() and len(value) >= _SALT_MIN_DIGITS:
            return len(set(value)) >= _SALT_MIN_DISTINCT and not _placeholder(value)
        return _password_value(context, value, thresholds)
    if _OTP_KEY.match(context) and _BASE32_SEED.fullmatch(value) and _otp_seed_any_case(value):
        # A one-time password seed is base32 in either case, and a random one may be letters
        # alone (1 in 25 of 16 characters): the key says what it is, the value need only look
        # generated. A value in mixed case is no seed, but may be another generated secret
        # (a recovery code, a token), judged as any other.
        return True
    if _BOOTSTRAP_TOKEN.fullmatch(value) and any(c.isdigit() for c in value[7:]):
        # A Kubernetes bootstrap token (`abcdef.0123456789abcdef`, kubeadm's --token): 16
        # lower-case characters after the id, too few kinds of character for the bar below.
        return random_looking(value[7:], 3.0)
    if _BEARER.match(context) and len(value) >= _BEARER_MIN_LENGTH:
        # "Bearer X" says X is an access token (RFC 6750): the context is strong enough for
        # the lower threshold of hexadecimal and base32 values, and for a lower-case token
        # that happens to read as a name (`k2x9vq...`: 1 in 3 of 16 characters do).
        lower = min(thresholds.min_entropy, thresholds.min_entropy_hex)
        if generic_value(value, dataclasses.replace(thresholds, min_entropy=lower)):
            return True
        return (
            any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value)
            and _class_changes(value) >= _BEARER_MIN_CHANGES
            and random_looking(value, lower)
            and not _DOTTED.fullmatch(value)
        )
    return generic_value(value, thresholds)


def _url_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``scheme://user:password@host``: not the user's name again."""
    user = context[3:-1]  # the match starts "://" and the password follows "user:"
    if value == user or len(value) < 3 or _placeholder(value):
        return False
    # A word is a placeholder's shape (`user:pass@`, `admin:Secret@`), unless it is a word
    # someone chose as a password (`admin:sunshine@`): a URL's user information holds nothing
    # else.
    return not _WORD.fullmatch(value) or _chosen_word(value)


def _cli_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``-u user:password``: not a placeholder, a word, a number or the user."""
    user = context.rstrip("\"'").rsplit(":", 1)[0].split()[-1].lstrip("\"'=")
    if value == user or len(value) < thresholds.min_password_length or _placeholder(value):
        return False
    return not _not_a_literal(value)


def _user_password_blob(secret: str, _: Thresholds, *, same_as_user: bool = False) -> bool:
    """Base64 of ``user:password`` (HTTP Basic, Docker ``auths``, npm ``_auth``); a password
    that repeats the user only when ``same_as_user`` (a request's header sends what logs in,
    `admin:admin` too)."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
        text = decoded.decode("ascii")
    except (binascii.Error, ValueError):  # ValueError covers bad ASCII
        return False
    user, colon, password = text.partition(":")
    if not (colon and user and password and text.isprintable()):
        return False
    # A user name has no blanks, quotes or braces: `{"alg":"HS256"...` is a JWT header.
    if any(c in _NOT_IN_USER for c in user):
        return False
    return not (_placeholder(password) or (password == user and not same_as_user))


def _basic_auth(context: str, secret: str, thresholds: Thresholds) -> bool:
    """An HTTP Basic credential: after "Basic", what a request sends, a server's default
    (`admin:admin`) too; after a key (`_auth =`), a stored one, not the user's name twice."""
    return _user_password_blob(secret, thresholds, same_as_user=context.startswith("Basic"))


def _after_user_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """A password after its user name (``scott/PASSWORD@db``, ``('user', 'PASSWORD')``, ``net
    user NAME PASSWORD``): not the user's name again, not a placeholder, a word or a name.
    The user is the last run of name characters before the separator."""
    users = _USER_RUN.findall(context)
    if users and value == users[-1]:
        return False
    if len(value) < thresholds.min_password_length or _placeholder(value):
        return False
    return not _not_a_literal(value)


def _element_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """An element's text is a literal: judged as the key's quoted value."""
    key = context.split("<", 1)[0].strip()
    return _password_value(f'{key}="', value, thresholds)


# The judges the rules of other modules (``secrets_commands``, ``secrets_stored``) share.
after_user_password: Judge = _after_user_password


def is_placeholder(value: str) -> bool:
    """A stand-in for a value: template syntax, a demo word, a mask (``_placeholder``)."""
    return _placeholder(value)


def _encoded_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of a ``user:password`` literal being encoded; a name of words joined by
    colons (`'ns:component:name'`) is a key, not a credential."""
    return _COMPOUND_NAME.fullmatch(value) is None and _after_user_password(
        context, value, thresholds
    )


_LETTER = re.compile(r"[A-Za-z]")
# What other tools' -p takes: a program and its version (`python3`, `python3.11`), a git
# revision (`HEAD~1`, `main^2`).
_PROGRAM_OR_REVISION = re.compile(r"[a-z]+[0-9]{1,2}(?:\.[0-9]{1,2})?|\S*[~^][0-9]{0,3}")


def _cli_option_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The value of a password option after a user option. Options of other tools share the
    letters (`docker run -u app -p 8080:80`, `ssh -l ann -p 2222`, `-p prod-profile`, `mysql
    -u root -p shop_db`, `git diff -U3 -p HEAD~1`): a port mapping has no letter, a profile,
    file or database is a name."""
    if _LETTER.search(value) is None or _PROGRAM_OR_REVISION.fullmatch(value):
        return False
    if _COMPOUND_NAME.fullmatch(value) or _SNAKE_NAME.fullmatch(value):
        return False
    return _after_user_password(context, value, thresholds)


def _pgpass_password(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of ``host:port:database:user:password``. The match starts at the port; a
    clock (``10:15:30:INFO:worker42``) reads as a port, then digits for a database."""
    database = context.split(":")[2]  # context: ":port:database:user:"
    # A query string with times in it (`se=2026-01-01T00:00:00Z&sp=r&sig=...`) is no line of
    # fields: its signature is the `sig` key's value.
    if database.isdigit() or "&" in context or "&" in value:
        return False
    return _after_user_password(context, value, thresholds)


def _bundler_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """The password of a ``user:password`` pair (the match's context ends with the user and a
    colon), else a token, judged as a token key's value."""
    if context.endswith(":") and not context.rstrip(":").endswith(("=", " ", "\t", '"', "'")):
        return _after_user_password(context, value, thresholds)
    return _token_value(context, value, thresholds)


# Base32 (RFC 4648), as authenticator apps show a seed: one run, or groups of four.
_SEED_GROUPS = re.compile(r"[A-Za-z2-7]{4}(?: [A-Za-z2-7]{4})+")
# A seed of 80 bits and more (16 characters), padded or not.
_BASE32_SEED = re.compile(r"[A-Za-z2-7]{16,}=*")
# Runs of a keyboard's letter rows: typed into a demo seed ("QWERTYUIOPASDFGH"), not generated.
_KEYBOARD = re.compile(r"qwer|wert|erty|rtyu|tyui|yuio|uiop|asdf|sdfg|dfgh|fghj|zxcv|xcvb", re.I)


def _otp_seed_any_case(value: str) -> bool:
    """A base32 seed where the context says it is one (an ``otpauth://`` URI, a one-time
    password key): one case throughout (base32 has one; a mix is a word or a name) and
    random-looking; letters alone are allowed."""
    seed = value.rstrip("=")
    if not (seed.isupper() or seed.islower()) or len(seed) < 16 or _KEYBOARD.search(seed):
        return False
    return random_looking(seed.upper(), 3.0)


def _otp_uri_seed(secret: str, _: Thresholds) -> bool:
    return _otp_seed_any_case(secret)


def _otp_seed(secret: str, thresholds: Thresholds) -> bool:
    """A generated base32 seed: 16 characters and more (80 bits), letters and digits mixed,
    varied, no template marks. Grouped ones may be in lower case. (Not ``is_name``: a run of
    capitals and one digit reads as a name in code, and a random seed is often just that.)"""
    if _SEED_GROUPS.fullmatch(secret):
        secret = secret.replace(" ", "").upper()
    elif not secret.isupper():
        return False
    if len(secret) < 16 or not any(c.isdigit() for c in secret):
        return False
    return random_looking(secret, 3.0)


def _encoded_value(context: str, value: str, thresholds: Thresholds) -> bool:
    """A value in a URL-encoded query string, judged by its key as anywhere else."""
    key = _ENCODED_START.sub("", context)  # the encoded "?" or "&" the match starts with
    if _PASSWORD_KEY.search(key.partition("%")[0]):
        return _password_value(key, value, thresholds)
    return _token_value(key, value, thresholds)


# In the JSON a base64 blob decodes to: a credential's type, and members whose value is a
# secret (a JSON Web Key's private members, a key, a password, a token, a Docker auth).
_CREDENTIAL_TYPE = re.compile(r'"type"\s*:\s*"(?:service_account|authorized_user)"')
_GRAFANA_KEY = re.compile(r'\{"k":"[A-Za-z0-9]{16,}","n":"')
_SECRET_MEMBER = re.compile(
    r'"(d|p|q|dp|dq|qi|k|private_?key|privateKey|client_?secret|clientSecret|password|passwd'
    r'|secret|auth|token|access_?token|accessToken|refresh_?token|refreshToken|api_?key|apiKey)"'
    r'\s*:\s*"([^"\\]{8,})'
)
_JWK_MEMBERS = frozenset(["d", "p", "q", "dp", "dq", "qi", "k"])


def _json_credentials(secret: str, thresholds: Thresholds) -> bool:
    """Base64 of JSON that holds a credential: a cloud credential file (``"type":
    "service_account"``), a Grafana key (``{"k":...,"n":...}``) or a member whose value is a
    secret, judged as that key's value anywhere else. Only the decoded start is read (the
    match is bounded): a member after it is not seen."""
    head = secret[: len(secret) // 4 * 4].replace("-", "+").replace("_", "/")
    try:
        decoded = base64.b64decode(head, validate=True).decode("utf-8", "replace")
    except binascii.Error:
        return False
    if _CREDENTIAL_TYPE.search(decoded) or _GRAFANA_KEY.match(decoded):
        return True
    for member in _SECRET_MEMBER.finditer(decoded):
        name, value = member.group(1), member.group(2)
        if name in _JWK_MEMBERS:
            if len(value) >= 16 and random_looking(value, 3.5) and not value.islower():
                return True
        elif name == "auth":
            if _user_password_blob(value, thresholds):
                return True
        elif name in ("password", "passwd"):
            if _password_value('"password": "', value, thresholds):
                return True
        elif value.startswith("-----BEGIN") or _token_value('"token": "', value, thresholds):
            return True
    return False


# -- the rules -------------------------------------------------------------------------------

_B64 = r"[A-Za-z0-9+/]"
_CRYPT = r"[./A-Za-z0-9]"

# A one-time password seed told in prose or a note ("2FA backup code seed: JBSW...", "TOTP
# secret (base32) JBSW Y3DP ..."): a word that says what it is, then within a few words a base32
# run. Keys written as keys (`totp_seed = ...`, `otp_secret: ...`) are the token keys' values.
_OTP_WORDS = r"(?i:\b(?:2fa|mfa|t?otp|authenticator|two[ -]factor)\b)"
# The user option of curl, httpie, wget (`-u`, `--user`, `--proxy-user`, `--user=`).
_CLI_USER = r"--?(?:proxy-)?u(?:ser)?[ \t=]{1,3}"

# An environment file's password key glued to "=" (`DB_PASSWORD=`), as `_ENV_ASSIGN` reads,
# from the password word on: a prefix that could begin with any capitals would hold every
# acronym of a stream back.
_ENV_PASSWORD_KEY = r"(?:\b|_)(?:PASSWORD|PASSWD|PASS|PWD)(?:_[A-Z0-9_]{1,12})?="
# A query string's next parameter (`&user=`): what a value of a URL's query stops before.
_NEXT_PARAMETER = re.compile(r"&[A-Za-z_][\w.-]*=")


def _env_password_with_ampersand(context: str, value: str, thresholds: Thresholds) -> bool:
    """An environment file's unquoted password holding "&" (`DB_PASSWORD=Tr0ub4dor&3`): read to
    its end, where ``config_password`` stops at the "&" (a URL's query goes on there) and
    would redact only the part before it."""
    if "&" not in value or _NEXT_PARAMETER.search(value):
        return False
    return _password_value(context, value, thresholds)


CONFIG_RULES: tuple[Rule, ...] = (
    Rule(
        "env_ampersand_password",
        'An environment file\'s unquoted password that holds "&" (`DB_PASSWORD=Tr0ub4dor&3`), '
        "whole to the line's end",
        _ENV_PASSWORD_KEY,
        r"([^\s\"'&=][^\s\"']{0,63})",
        judge=_env_password_with_ampersand,
        not_followed_by="^\r\n \t",  # the value ends where the line or a blank does
    ),
    Rule(
        "config_password",
        "A password assigned to a password key (password, passwd, pwd, pass, passphrase) in any "
        "config or code syntax: INI, .env, YAML, JSON, XML, define(), assignments, export, "
        ".netrc, connection strings (Password=...;), command lines",
        _key_rule_prefix(PASSWORD_KEYS, more=(*PASSWORD_PROSE_SEPARATORS, _OPENSSL_PASS)),
        _KEY_VALUE,
        judge=_quoted_whole(_password_value),
        tail=_KEY_VALUE_TAIL,
        defers_to_prefixes=True,
    ),
    Rule(
        "element_pair_password",
        "A password as the element after a key element that names it: property lists "
        "(<key>Password</key><string>...</string>), key/value entries "
        "(<key>db.password</key><value>...</value>)",
        # From the key word on: a name's start (`pro_`, `business.`) is found by the search.
        f"(?i:{PASSWORD_KEYS})[ \\t]{{0,3}}</key>",
        # The closing tag is not part of the match (each character of a match is one more a
        # stream holds back): the value must end at a "<".
        r"\s{0,16}?<(?:string|value)>([^<\s]{1,64})",
        judge=_element_password,
        not_followed_by=r"^<",
    ),
    # Before the token keys: `_auth = <base64>` is an npm user:password blob, said so.
    Rule(
        "basic_auth",
        "Base64 of user:password: HTTP Basic authorization, Docker config.json auths, npm _auth",
        r"(?:Basic[ \t]{1,3}|(?i:_?auth)\\?[\"']?[ \t]{0,3}[=:][ \t]{0,3}\\?[\"']?)",
        f"({_B64}{{6,120}}={{0,2}})",
        judge=_basic_auth,
        not_followed_by=r"A-Za-z0-9+/=",
    ),
    Rule(
        "encoded_user_password",
        "The password of a user:password literal that code base64-encodes for HTTP Basic "
        "authorization: btoa('user:...'), base64.b64encode(b'user:...'), "
        'Base64.getEncoder().encodeToString("user:...".getBytes()), base64_encode(...)',
        r"\b(?:btoa|b64encode|base64_encode|encodeToString|encodebytes|encode64"
        r"|strict_encode64)[ \t]{0,2}\([ \t]{0,2}",
        r"(?:[bu]|u8)?\\?[\"'`][^\s:\"'`\\$]{1,40}:([^\s\"'`\\]{1,64})\\?[\"'`]",
        judge=_encoded_password,
    ),
    Rule(
        "generic_secret",
        "A high-entropy value assigned to a secret, token, bearer, credentials or *_key key "
        "(api_key, access_key, private_key, auth_key, master_key, SECRET_KEY, "
        "secret_key_base...) in any config or code syntax",
        # "The API token is ...", "secret for staging: ...": the judge wants a generated value.
        _key_rule_prefix(TOKEN_KEYS, SHORT_TOKEN_KEYS, more=PASSWORD_PROSE_SEPARATORS),
        _KEY_VALUE,
        judge=_quoted_whole(_token_value),
        tail=_KEY_VALUE_TAIL,
        defers_to_prefixes=True,
    ),
    Rule(
        "url_credentials",
        "The password in a URL or connection URI (scheme://user:password@host)",
        r"://",
        # The user may be an e-mail address (smtps://me@example.com:pass@smtp.example.com). A
        # password may hold one "@" left unencoded (`mongodb+srv://app:pa@ss1!@host`): the
        # last "@" before the host ends it, tried first so that half of it is not taken alone.
        r"[^\s:/?#\"'`<>\[\]]{0,64}:([^\s:/@?\"'`<>\[\]]{1,20}@[^\s:/@?\"'`<>\[\]]{1,20}"
        r"@[^\s:/@?\"'`<>\[\]]{1,22}|[^\s:/@?\"'`<>\[\]]{1,31}@[^\s:/@?\"'`<>\[\]]{1,32}"
        r"|[^\s:/@?\"'`<>\[\]]{1,64})@",
        judge=_url_password,
        defers_to_prefixes=True,
    ),
    Rule(
        "cli_user_password",
        "The password of `-u user:password` / `--user user:password` on a command line (curl, "
        "httpie, wget...)",
        _CLI_USER,
        # A password quoted apart from its user (`-u admin:"..."`, `-u "admin":"..."`), which
        # may hold blanks, before a run: the first alternative that matches is the one taken.
        # The user may be an e-mail address.
        r"(?:(?:\"[^\"\r\n:]{1,40}\"|[^\s:\"']{1,40}):\"([^\"\r\n]{1,64})\""
        r"|[\"']?[^\s:\"'@]{1,32}(?:@[A-Za-z0-9.-]{1,32})?:[\"']?([^\s\"']{1,64}))",
        judge=_cli_password,
    ),
    Rule(
        "cli_user_token",
        "A token given as the user of `-u TOKEN:` (an empty password: Stripe's, Mailgun's, "
        "Harvest's way with curl) or as the password of `-u :TOKEN`",
        _CLI_USER,
        # Nothing follows but a blank or the end: `-u name:password` is the rule above's.
        r"[\"']?(?::([^\s:\"']{16,64})|([^\s:\"']{16,64}):)[\"']?(?:\s|$)",
        lambda secret, thresholds: generic_value(secret, thresholds),
    ),
    Rule(
        "password_hash",
        "A crypt(3), htpasswd or framework password hash: bcrypt $2a$/$2b$/$2y$, md5crypt $1$, "
        "Apache $apr1$, sha256/512-crypt $5$/$6$, yescrypt $y$, {SHA}/{SSHA}, Argon2 "
        "$argon2id$, PBKDF2 and scrypt (passlib $pbkdf2-sha256$, $scrypt$; Django "
        "pbkdf2_sha256$)",
        r"(?:\$(?:2[abxy]?|1|apr1|5|6|y|argon2(?:id|i|d)|pbkdf2(?:-sha(?:1|256|512))?|scrypt)\$"
        r"|\{S?SHA\}|\bpbkdf2_sha(?:1|256)\$)",
        # Argon2 and scrypt: parameters, salt, hash; PBKDF2: iterations, salt, hash.
        f"(?:v=[0-9]{{1,3}}\\$m=[0-9]{{1,7}},t=[0-9]{{1,3}},p=[0-9]{{1,3}}\\$"
        f"{_B64}{{8,32}}\\${_B64}{{16,64}}"
        f"|ln=[0-9]{{1,2}},r=[0-9]{{1,2}},p=[0-9]{{1,2}}\\${_B64}{{8,32}}\\${_B64}{{16,64}}"
        f"|[0-9]{{1,7}}\\$[./A-Za-z0-9+]{{6,32}}\\$[./A-Za-z0-9+]{{16,86}}={{0,2}}"
        f"|[0-9]{{2}}\\${_CRYPT}{{53}}"  # bcrypt: cost, then salt and hash
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
    Rule(
        "auth_pair_password",
        "The password of a (user, password) pair of literals in code: auth=('user', '...'), "
        "HTTPBasicAuth('user', '...'), smtp.login('user', '...'), credentials: ['user', '...'], "
        'new NetworkCredential("user", "..."), new PasswordAuthentication("user", "...")',
        r"(?:(?i:auth(?:entication)?|credentials?)|\b(?i:login))\\?[\"']?\]?[ \t]{0,3}"
        r"(?:[=:][ \t]{0,3})?[(\[][ \t]{0,3}",
        r"\\?[\"'][^\s\"'\\]{1,40}\\?[\"'][ \t]{0,3},[ \t]{0,3}\\?[\"']([^\s\"'\\]{1,64})\\?[\"']",
        judge=_after_user_password,
    ),
    Rule(
        "connect_call_password",
        "The password of a database connect call with literal arguments (host, user, password): "
        'mysqli_connect("db", "app", "..."), new mysqli(...), new PDO($dsn, \'app\', \'...\'), '
        "pymysql.connect('db', 'app', '...')",
        r"(?:(?i:connect)|\bmysqli|\bPDO)[ \t]{0,2}\([ \t]{0,3}",
        # The first argument may be a DSN in a variable; the password is the third.
        r"(?:\$?[A-Za-z_]\w{0,20}|\\?[\"'][^\"'\r\n]{0,30}\\?[\"'])[ \t]{0,3},[ \t]{0,3}"
        r"\\?[\"'][^\"'\s]{1,24}\\?[\"'][ \t]{0,3},[ \t]{0,3}\\?[\"']([^\"'\s\\]{1,64})\\?[\"']",
        judge=_after_user_password,
    ),
    Rule(
        "cli_option_password",
        "A password given as a command-line option after the user's (`-u admin -p ...`, "
        "`-U sa -P ...`, `-D cn=admin -w ...`, `-l root -p ...`, `/u:admin /p:...`, "
        "`--username ann -p ...`) or joined to it (`smbclient -U admin%...`), as "
        "penetration-testing, database, directory and remote-desktop tools take them "
        "(`--password ...` is a password key's, ``config_password``)",
        # From the user option, after a blank or a quote (`\B`: not inside a word).
        r"\B(?:-[uUlD]|--user(?:name)?|/u(?:ser)?:)",
        # The user: quoted (a distinguished name has blanks and commas) or a run.
        r"[ \t=]{0,3}(?:\"[^\"\r\n]{1,32}\"|'[^'\r\n]{1,32}'|[^\s\"'%]{1,32})"
        r"(?:%([^\s\"']{1,40})"
        # At most one other option between them (`-d CORP`), then the password's.
        r"|(?:[ \t]{1,2}-{1,2}[A-Za-z][\w-]{0,8}(?:[ \t]{1,2}[^\s-][^\s]{0,15})?)?"
        r"[ \t]{1,2}(?:-[pPw]|/p:)[ \t=]{0,3}\\?[\"']?([^\s\"'\\]{1,40}))",
        judge=_cli_option_password,
    ),
    Rule(
        "yaml_word_password",
        "A word chosen as a password, as a YAML mapping's plain value that ends its line "
        "(`password: sunshine`, `MYSQL_PASSWORD: wordpress` in a compose file). Only there: "
        "in prose and code the same shape is a label or a variable (`good passwords: "
        "entropy.`, `{password: userpass},`)",
        # A snake_case or capitals key, singular: prose capitalizes its labels ("Password:
        # incorrect") and talks of passwords in the plural. From the password word (or the
        # "_" before it) on: a prefix that could begin with any word would hold every word
        # of a stream back.
        r"(?:\b|_)(?:(?:password|passwd)(?:_[a-z0-9_]{1,12})?"
        r"|(?:PASSWORD|PASSWD|PASS)(?:_[A-Z0-9_]{1,12})?):[ \t]{1,3}",
        # Blanks and a comment may follow the word before the line ends.
        r"([a-z]{6,40})[ \t]{0,8}(?:#[^\r\n\\]{0,60})?",
        judge=_yaml_word,
        # The line ends there: a line break, or one escaped in a JSON string ("\n" of a file
        # read by a tool).
        not_followed_by="^\r\n\\\\",
        after_match=True,
    ),
    Rule(
        "pgpass_password",
        "The password of a .pgpass-style line (hostname:port:database:username:password)",
        # From the port on: a prefix of the host, any word, would hold every word of a stream.
        # A port is 2-5 digits or "*"; a time ("12:30:45") has no two fields after it.
        r"(?::(?:[0-9]{2,5}|\*):)",
        r"[^\s:\\\"'`]{1,40}:[^\s:\\\"'`]{1,40}:([^\s:\\\"'`]{1,64})(?:\r?\n|$)",
        judge=_pgpass_password,
    ),
    Rule(
        "bundler_credentials",
        "Credentials for a gem source in Bundler's settings or environment "
        "(BUNDLE_<HOST>__<TLD>=user:password, or a token): the password or token",
        # Bundler writes a source's host in a key with "." as "__" (`gems.contribsys.com` ->
        # `BUNDLE_GEMS__CONTRIBSYS__COM`); `BUNDLE_PATH`, `BUNDLE_JOBS` hold no "__".
        r"\bBUNDLE_[A-Z0-9_]{1,32}__[A-Z0-9]{2,8}\\?[\"']?[ \t]{0,3}[=:][ \t]{0,3}\\?[\"']?",
        r"(?:[^\s:\"'\\]{1,24}:)?([^\s:\"'\\]{4,48})",
        judge=_bundler_value,
        not_followed_by=r"^\s:\"'\\",
    ),
    Rule(
        "oracle_connect_password",
        "The password of an Oracle connect string: sqlplus scott/...@db, "
        "jdbc:oracle:thin:scott/...@host, CONNECT scott/...@db",
        # Whole words to start from: a stream holds the text from where a prefix may begin,
        # and "thin:" or "connect" would hold every "th" and "con" of prose.
        r"(?:\b(?i:sqlplus|jdbc:oracle:thin:)|\bCONN(?:ECT)?\b)",
        r"(?:[ \t]{1,3}-[A-Za-z]{1,2}){0,2}[ \t]{0,3}[\"']?[A-Za-z0-9_$#.]{1,30}/"
        r"([^\s/@\"']{1,64})@",
        judge=_after_user_password,
    ),
    Rule(
        "cli_password_option",
        "A password written against its command-line option (mysql -p...) or after the user of "
        "`net user NAME ...`",
        # The prefix is the command alone: a run of any characters in a prefix would make the
        # search for prefixes, done on every token of a stream, a DFA too large to cache.
        r"(?:\b(?:mysql|mysqldump|mysqladmin|mariadb)\b|\bnet[ \t]{1,3}user[ \t]{1,3})",
        r"(?:[ \t][^\r\n]{0,48}?[ \t]-p|[^\s/\"']{1,32}[ \t]{1,3})([^\s\"'/*-][^\s\"']{0,63})",
        judge=_after_user_password,
    ),
    Rule(
        "encoded_json_credentials",
        "Base64 of JSON that holds a credential: a cloud service account file, a JSON Web Key "
        "set, a Docker config with auths, a Grafana API key (eyJrIjoi...)",
        # What `{"`, `{ "`, `{\n  "`, `{\r\n`, `[{"`, `[\n  ` encode to.
        r"\b(?:eyJ|eyAi|ewo[gJi]|ew0K|W3si|Wwo[gJ]|Wwp7)",
        r"[A-Za-z0-9+/_-]{40,148}={0,2}",
        _json_credentials,
        tail=r"[A-Za-z0-9+/_-]{1,64}={0,2}",
    ),
    Rule(
        "urlencoded_credential",
        "A credential in a URL-encoded query string (a redirect or callback URL inside another: "
        "...%3Ftoken%3D...%26...), judged as the same key's value anywhere else",
        # From the encoded "?" or "&" before the parameter (a stream holds text only from a
        # "%"), whose name ends in a credential word (`access_token`); the whole vocabulary
        # again would double the pattern that finds prefixes in every token of a stream.
        r"%(?:25)?(?:3[Ff]|26)(?i:[a-z0-9_.-]{0,16}(?:token|key|secret|password|passwd|pwd|pass"
        r"|auth|sig|signature|session|sessionid|session_id))%(?:25)?3[Dd]",
        r"([A-Za-z0-9._~-]{1,64})",
        judge=_encoded_value,
        tail=r"[A-Za-z0-9._~-]{1,64}",
        defers_to_prefixes=True,
    ),
    Rule(
        "otpauth_uri_seed",
        "The seed of a one-time password URI (otpauth://totp/Label?secret=BASE32&issuer=...), "
        "as QR codes and authenticator exports hold it",
        r"\botpauth://",
        # The label (URL-encoded: no blanks), then at most two parameters before `secret`.
        # Bounded as every rule: the longest match bounds a stream's hold-back (max_match).
        r"[ht]otp/[^\s?#\"'<>]{0,24}\?(?:[A-Za-z]{1,8}=[^\s&#\"'<>]{0,12}&){0,2}secret="
        r"([A-Za-z2-7]{16,52}={0,4})",
        _otp_uri_seed,
        not_followed_by="A-Za-z0-9",
    ),
    Rule(
        "otp_seed",
        "A one-time password (TOTP/HOTP) seed: base32, 16 characters and more, after a word "
        "that names it (2FA, MFA, OTP, TOTP, authenticator, two-factor) on the same line",
        _OTP_WORDS,
        r"[^\r\n]{0,40}?[ \t:=\"'>]([A-Z2-7]{16,32}|[A-Za-z2-7]{4}(?: [A-Za-z2-7]{4}){3,7})",
        _otp_seed,
        not_followed_by="A-Za-z0-9",
    ),
)

VETO_RULES: tuple[Rule, ...] = (
    Rule(
        "not_secret_key",
        "A value assigned to a key that names a shared value (a public key or token, a CSRF "
        "token): not a secret, and not looked at again by the token-key rule",
        _key_rule_prefix(NOT_SECRET_KEYS),
        _OPEN_QUOTE + _VALUE,
        defers_to_prefixes=True,
        veto=True,
    ),
    Rule(
        "secret_reference",
        "An Amazon resource name (arn:aws:secretsmanager:...:secret:prod/db-AbCdEf): it names a "
        "secret kept elsewhere, and the words in it (`secret:`, `key/`) are not keys",
        r"\barn:aws(?:-[a-z]{2,10}){0,2}:",
        r"[a-z0-9-]{1,24}:[a-z0-9-]{0,20}:[0-9]{0,12}:[^\s\"'`<>]{1,64}",
        veto=True,
    ),
)
