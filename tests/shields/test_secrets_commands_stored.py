"""``secrets``: kinds of credential text added for issue 17 (secrets part, second round).

Authorization schemes (Bearer, OAuth, SSWS, Basic), curl's ``-u`` forms, passwords given to
commands (``shields/builtin/secrets_commands.py``: Impacket targets, ``net use``, redis-cli,
archives, OpenSSL, htpasswd, rabbitmqctl, keytool), and secrets as tools store them
(``shields/builtin/secrets_stored.py``: Maven/Jenkins encrypted passwords, a service-account
key's id, ``hash:salt`` lines, recovery codes), nonces, IVs and triple-quoted values. Each kind
has near misses that must stay clean: placeholders, variables, prompts, words and paths.

Every value here is made up; random ones come from a seeded generator at test time.
"""

from __future__ import annotations

import base64
import random
import string

import pytest

from shields.builtin.secrets import SecretsShield, SecretsSpec
from shields.scan import TextScan, check_text, merge_redactions, redact

RNG = random.Random("issue-17-commands-stored")
ALNUM = string.ascii_letters + string.digits
LOWER36 = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters that mix classes as a generated value does."""
    chars = [RNG.choice(alphabet) for _ in range(n)]
    chars[:3] = [RNG.choice(alphabet[:26]), RNG.choice("79"), RNG.choice(alphabet[:26])]
    return "".join(chars)


def password(n: int = 12) -> str:
    return rand(n - 2) + "#" + RNG.choice("!%*")


SHIELD = SecretsShield(SecretsSpec(id="sec", action="redact"))  # type: ignore[call-arg]


def found(text: str) -> list[tuple[str, str]]:
    return [(f.label, text[f.start : f.end]) for f in check_text([SHIELD], text)]


def redacted(text: str) -> str:
    return redact(text, 0, merge_redactions(check_text([SHIELD], text)))


def assert_value_alone(text: str, value: str, label: str) -> None:
    """The value is found by ``label`` and redaction replaces it alone, in the whole text and
    in a stream split at any point."""
    findings = found(text)
    assert {lab for lab, _ in findings} == {label}, findings
    assert [text[s.start : s.end] for s in merge_redactions(check_text([SHIELD], text))] == [value]
    assert redacted(text) == text.replace(value, "[SECRET]", 1)
    whole = [(f.label, f.start, f.end) for f in check_text([SHIELD], text)]
    for cut in range(1, len(text), 3):
        scan = TextScan([SHIELD], holdback=SHIELD.max_match)
        got = scan.feed(text[:cut]) + scan.feed(text[cut:]) + scan.finish()
        assert [(f.label, f.start, f.end) for f in got] == whole, cut


# -- authorization schemes -----------------------------------------------------------------------

# 16 lower-case characters and digits: a third of such tokens read as a name (``is_name``).
LOWER_TOKEN = "k2x9vq7mz4bn8rt3"
TOKEN = rand(24)


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ('curl -H "Authorization: Bearer {}" https://api.example.net/v1/me', LOWER_TOKEN),
        ("Authorization: Bearer {}", rand(16)),
        ("GET /v1/orders HTTP/1.1\r\nHost: api.internal\r\nAuthorization: Bearer {}\r\n", TOKEN),
        ("Authorization: OAuth {}", TOKEN),
        ("Authorization: SSWS {}", "00" + rand(40)),
        ("headers = {{'Authorization': 'bearer {}'}}", TOKEN),
    ],
)
def test_a_token_after_an_authorization_scheme_is_redacted_alone(template: str, value: str) -> None:
    assert_value_alone(template.format(value), value, "generic_secret")


def test_basic_credentials_that_repeat_the_user_are_still_sent_ones() -> None:
    blob = base64.b64encode(b"grafana:grafana").decode()
    assert_value_alone(
        f"curl -H 'Authorization: Basic {blob}' http://grafana:3000", blob, "basic_auth"
    )


@pytest.mark.parametrize(
    "text",
    [
        'curl -H "Authorization: Bearer $TOKEN" https://api.example.net',
        'curl -H "Authorization: Bearer ${ACCESS_TOKEN}" https://api.example.net',
        'curl -H "Authorization: Bearer <token>" https://api.example.net',
        "Authorization: Bearer YOUR_TOKEN",
        "Authorization: Bearer xxxxxxxxxxxxxxxxxxxx",
        "Authorization: Bearer accesstoken2024x",  # a name with a number, not generated
        "Authorization: Basic dXNlcm5hbWU6cGFzc3dvcmQ=",  # username:password
        "The OAuth 2.0 flow returns a Bearer token that expires in an hour.",
        "Okta's SSWS tokens and OAuth apps are configured in the admin console.",
    ],
)
def test_authorization_placeholders_and_prose_are_not_secrets(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ("curl -u {}: https://api.example.com/v1/charges", "cli_user_token"),
        ('curl -u ":{}" https://api.example.com', "cli_user_token"),
        ("curl -u ann@example.com:{} https://dav.example.com", "cli_user_password"),
    ],
)
def test_curl_user_forms(template: str, label: str) -> None:
    value = rand(28) if label == "cli_user_token" else password()
    assert_value_alone(template.format(value), value, label)


def test_a_quoted_curl_password_may_hold_blanks() -> None:
    value = "Xq7 " + password()
    assert_value_alone(f'curl -u deploy:"{value}" https://x.example', value, "cli_user_password")


@pytest.mark.parametrize(
    "text",
    [
        'curl -u "$USER:$PASS" https://api.example.com',
        "curl -u myusername: https://api.example.com",  # a name, not a token
        "curl -u :password https://api.example.com",
        "curl -u admin https://api.example.com",  # curl prompts for the password
    ],
)
def test_curl_user_near_misses(text: str) -> None:
    assert found(text) == []


# -- passwords given to commands -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ("impacket-secretsdump CORP/administrator:{}@10.0.0.5", "domain_user_password"),
        ("wmiexec.py acme.local/jdoe:{}@dc01.acme.local 'whoami'", "domain_user_password"),
        ("net use \\\\files01\\share /user:CORP\\bob {}", "net_use_password"),
        ("net use Z: \\\\10.0.0.8\\c$ {} /user:CORP\\bob /persistent:no", "net_use_password"),
        ("redis-cli -h cache.internal -p 6379 -a {} ping", "redis_cli_password"),
        ("zip -r -P {} backup.zip /srv/data", "archive_password"),
        ("unzip -P {} backup.zip", "archive_password"),
        ("7z a -p{} -mhe=on archive.7z docs/", "archive_password"),
        ("openssl enc -aes-256-cbc -salt -k {} -in db.sql -out db.enc", "openssl_key_password"),
        (
            "openssl pkcs12 -export -in c.crt -inkey c.key -out c.p12 -passout pass:{}",
            "config_password",
        ),
        ("openssl enc -d -aes-256-cbc -pass pass:{} -in db.enc", "config_password"),
        ("htpasswd -b /etc/nginx/.htpasswd deploy {}", "htpasswd_password"),
        ("htpasswd -nbB deploy {}", "htpasswd_password"),
        ("rabbitmqctl add_user worker {}", "rabbitmq_user_password"),
        (
            "keytool -importkeystore -srckeystore a.p12 -srcstorepass {} -noprompt",
            "config_password",
        ),
    ],
)
def test_a_password_given_to_a_command_is_redacted_alone(template: str, label: str) -> None:
    value = password()
    assert_value_alone(template.format(value), value, label)


def test_a_quoted_archive_password() -> None:
    value = password()
    assert_value_alone(f"7z x -p'{value}' archive.7z", value, "archive_password")


@pytest.mark.parametrize(
    "text",
    [
        "secretsdump.py DOMAIN/user:password@host",
        "docker pull registry.example.com/team/api:v2.14.0@sha256:" + "ab12" * 16,
        "see docs/guide:getUserById@latest for details",
        "net use \\\\host\\share /user:DOMAIN\\user password",
        "net use Z: \\\\host\\share * /user:CORP\\bob",  # "*" prompts
        "redis-cli -a $REDIS_PASSWORD --no-auth-warning",
        "zip -P $ZIP_PASS out.zip report.pdf",
        "7z a -p archive.7z files/",  # prompts
        "7z a -t7z -mx=9 archive.7z files/",
        "unzip -p archive.zip notes.txt",  # -p: extract to a pipe
        "openssl rsa -in key.pem -passin env:KEY_PASS -out plain.pem",
        "openssl rsa -in key.pem -passin file:/run/secrets/key_pass",
        "htpasswd -c /etc/nginx/.htpasswd deploy",  # prompts
        "htpasswd -b .htpasswd admin password",
        "sort -k 2 data.txt | zip -q out.zip -",
        "rabbitmqctl add_user worker $WORKER_PASS",
        "I zipped it with zip -P and a password I typed.",
    ],
)
def test_command_near_misses_are_not_secrets(text: str) -> None:
    assert found(text) == []


# -- stored secrets ------------------------------------------------------------------------------

MAVEN = base64.b64encode(RNG.randbytes(32)).decode()
JENKINS = base64.b64encode(bytes.fromhex("01000000100000") + RNG.randbytes(57)).decode()


@pytest.mark.parametrize(
    ("template", "value", "label"),
    [
        ("<server>\n  <id>nexus</id>\n  <password>{{{}}}</password>\n</server>", MAVEN, None),
        ("<settingsSecurity><master>{{{}}}</master></settingsSecurity>", MAVEN, None),
        ("<privateKeyPassphrase>{{{}}}</privateKeyPassphrase>", JENKINS, None),
        ("<apiToken>\n    {{{}}}</apiToken>", JENKINS, None),
    ],
)
def test_an_encrypted_password_element_is_redacted_inside_its_braces(
    template: str, value: str, label: str | None
) -> None:
    assert_value_alone(template.format(value), value, label or "encrypted_password_element")


@pytest.mark.parametrize(
    "text",
    [
        "<password>{COQLCE6DU6GtcS5P=}</password>",  # 12 bytes: Maven's documented example
        "<password>${env.NEXUS_PASSWORD}</password>",
        "<password>{" + "A" * 44 + "}</password>",
        "<token>{{ vault_token }}</token>",
    ],
)
def test_encrypted_password_near_misses(text: str) -> None:
    assert found(text) == []


def test_a_service_account_key_id() -> None:
    key_id = rand(40, HEX).lower()
    text = f'{{\n  "type": "service_account",\n  "private_key_id": "{key_id}",\n}}'
    assert_value_alone(text, key_id, "gcp_private_key_id")
    assert found('"private_key_id": "0000000000000000000000000000000000000000"') == []


@pytest.mark.parametrize("digits", [32, 40, 64, 128])
def test_a_salted_hash_line(digits: int) -> None:
    line = rand(digits, HEX) + ":" + rand(8)
    assert_value_alone(f"{line}\n", line, "hash_salt_line")


@pytest.mark.parametrize(
    "text",
    [
        "git show " + rand(40, HEX) + ":README.md",
        "git show " + rand(40, HEX) + ":src/app.py",
        "commit " + rand(40, HEX) + ": fix the build",
        "image@sha256:" + rand(64, HEX),
        rand(32, HEX) + ":Makefile",
        "0" * 32 + ":x7Gq2Lm9",
    ],
)
def test_digests_that_are_no_salted_hash(text: str) -> None:
    assert found(text) == []


def test_recovery_codes_are_redacted_as_one_list() -> None:
    codes = [f"{rand(4, LOWER36)}-{rand(4, LOWER36)}" for _ in range(4)]
    text = "GitHub recovery codes:\n  " + "\n  ".join(codes) + "\nKeep them somewhere safe."
    spans = merge_redactions(check_text([SHIELD], text))
    assert [text[s.start : s.end] for s in spans] == ["\n  ".join(codes)]
    assert redacted(text).endswith("codes:\n  [SECRET]\nKeep them somewhere safe.")


def test_backup_codes_in_a_list_literal() -> None:
    codes = ["".join(RNG.choice(string.digits) for _ in range(8)) for _ in range(3)]
    text = "backup_codes = [" + ", ".join(f'"{c}"' for c in codes) + "]"
    assert redacted(text) == 'backup_codes = ["[SECRET]"]'


@pytest.mark.parametrize(
    "text",
    [
        "Recovery codes: none yet. Generate them in Settings.",
        "Backup codes: 10 codes were generated.",
        "Save your recovery codes somewhere safe.",
        "recovery_codes = generate_codes(10)",
        "Backup code: 0000-0000",
        "backup codes: xxxx-xxxx xxxx-xxxx",
        "Emergency codes: 1234-5678",
        "backup codes: 2024 edition of the manual",
    ],
)
def test_recovery_code_near_misses(text: str) -> None:
    assert found(text) == []


# -- nonces, IVs, triple quotes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        'nonce = "{}"',
        "NONCE_KEY={}",
        'iv = "{}"',
        "aes.iv: {}",
        'token = """{}"""',
        "password = '''{}'''",
    ],
)
def test_nonces_ivs_and_triple_quoted_values(template: str) -> None:
    value = rand(24, HEX).lower() if "iv" in template or "nonce" in template.lower() else password()
    text = template.format(value)
    assert redacted(text) == template.format("[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        "nonce = generate_nonce()",
        "iv = get_random_bytes(16)",
        "A nonce is a number used once; an IV must never repeat under one key.",
        'nonce = ""',
        "iv = bytes(16)",
    ],
)
def test_nonce_and_iv_code_is_not_a_secret(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "template",
    ["Authentication: {}", "authentication={}", '"2fa_code": "{}"', "MFA_TOKEN={}"],
)
def test_authentication_and_one_time_password_code_keys(template: str) -> None:
    value = rand(20)
    assert_value_alone(template.format(value), value, "generic_secret")


@pytest.mark.parametrize(
    "text",
    [
        "Authentication: required",
        "authentication = OAuth2PasswordBearer(tokenUrl='token')",
        "2fa_code: 482913",  # a one-time password itself: a number, gone in 30 seconds
        "Authentication is handled by the gateway.",
    ],
)
def test_authentication_and_code_near_misses(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "template",
    [
        "secretsdump.py -hashes {} CORP/administrator@10.0.0.5",
        "nxc smb 10.0.0.0/24 -u administrator -H {} --local-auth",
        "evil-winrm -i 10.0.0.5 -u administrator -H '{}'",
    ],
)
def test_hashes_given_to_a_pass_the_hash_tool(template: str) -> None:
    nt = rand(32, HEX).lower()
    value = ("aad3b435b51404eeaad3b435b51404ee:" + nt) if "-hashes" in template else nt
    assert_value_alone(template.format(value), value, "pass_the_hash_option")


@pytest.mark.parametrize(
    "text",
    [
        'curl -H "X-Request-Id: 5f0c3b1e" https://api.example.net',
        # The NT hash of an empty password: a blank account's, every installation's.
        "nxc smb dc01 -u guest -H 31d6cfe0d16ae931b73c59d7e0c089c0",
        "psexec.py -hashes :00000000000000000000000000000000 CORP/admin@dc01",
    ],
)
def test_pass_the_hash_near_misses(text: str) -> None:
    assert found(text) == []
