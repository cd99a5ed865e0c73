"""``secrets``: kinds of credential widened from public catalogues of credential formats
(gitleaks' default rules, trufflehog's detectors, CredSweeper's and detect-secrets' rule lists),
each with the look-alikes and placeholders that must stay clean and the span a redaction takes.

Every value here is made up: random ones come from a seeded generator at test time, and the
fixed ones are hand-made to a format's shape.
"""

from __future__ import annotations

import base64
import random
import string
import struct

import pytest

from shields.builtin.secrets import SecretsShield, SecretsSpec
from shields.scan import TextScan, check_text, merge_redactions, redact

RNG = random.Random("issue-17-catalogue")
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
LOWER36 = string.ascii_lowercase + string.digits
UPPER36 = string.ascii_uppercase + string.digits
B32 = string.ascii_uppercase + "234567"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def rand(n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters with a digit in them (and both cases, for a mixed alphabet)."""
    chars = [RNG.choice(alphabet) for _ in range(n)]
    for i, pool in enumerate((string.ascii_uppercase, string.ascii_lowercase, string.digits)):
        usable = [c for c in pool if c in alphabet]
        if usable and n > 3:
            chars[i] = RNG.choice(usable)
    return "".join(chars)


def uuid() -> str:
    return "-".join(rand(n, HEX) for n in (8, 4, 4, 4, 12))


SHIELD = SecretsShield(SecretsSpec(id="sec", action="redact"))  # type: ignore[call-arg]


def found(text: str) -> list[tuple[str, str]]:
    """(label, secret) per secret: the pieces of a long one merged into one span."""
    findings = check_text([SHIELD], text)
    spans = merge_redactions(findings)
    labels = [next(f.label for f in findings if s.start <= f.start < s.end) for s in spans]
    return [(label, text[s.start : s.end]) for label, s in zip(labels, spans, strict=True)]


def redacted(text: str) -> str:
    return redact(text, 0, merge_redactions(check_text([SHIELD], text)))


def streamed(text: str, step: int = 3) -> list[tuple[str, int, int]]:
    scan = TextScan([SHIELD], holdback=SHIELD.max_match)
    got = []
    for i in range(0, len(text), step):
        got += scan.feed(text[i : i + step])
    got += scan.finish()
    return [(f.label, f.start, f.end) for f in got]


# -- vendor formats: (label, token) -------------------------------------------------------------

VENDOR_TOKENS: list[tuple[str, str]] = [
    ("buildkite_token", "bkua_" + rand(40, LOWER36)),
    ("circleci_token", f"CCIPAT_{rand(22)}_{rand(40, HEX)}"),
    ("harness_token", f"pat.{rand(22, URLSAFE)}.{rand(24)}.{rand(20)}"),
    ("harness_token", f"sat.{rand(22, URLSAFE)}.{rand(24)}.{rand(20)}"),
    ("octopus_deploy_key", "API-" + rand(26, UPPER36)),
    ("openshift_token", "sha256~" + rand(43, URLSAFE)),
    ("dev_platform_token", "pnu_" + rand(36)),
    ("readme_api_key", "rdme_" + rand(70, LOWER36)),
    ("dev_platform_token", "tk-us-" + rand(48, URLSAFE)),
    ("dev_platform_token", "ico-" + rand(32)),
    ("frameio_token", "fio-u-" + rand(64, URLSAFE)),
    ("dev_platform_token", "tfp_" + rand(59)),
    ("dev_platform_token", "CFPAT-" + rand(43, URLSAFE)),
    ("tailscale_key", f"tskey-auth-k{rand(11)}CNTRL-{rand(32)}"),
    ("openrouter_api_key", "sk-or-v1-" + rand(64, HEX)),
    ("ai_secret_key", "sk-lf-" + uuid()),
    ("ai_secret_key", "sk_" + rand(48, HEX)),
    ("pinecone_api_key", f"pcsk_{rand(6)}_{rand(63)}"),
    ("aws_session_token", "IQoJb3JpZ2luX2Vj" + rand(340, B64) + "=="),
    ("aws_session_token", "FwoGZXIvYXdzE" + rand(220, B64)),
    ("salesforce_token", f"00D{rand(12)}!{rand(96, ALNUM + '._')}"),
    ("salesforce_token", "5AEP861" + rand(90, ALNUM + "._")),
    ("yandex_cloud_key", "AQVN" + rand(36, URLSAFE)),
    ("yandex_cloud_key", "YC" + rand(38, URLSAFE)),
    ("clickhouse_cloud_key", "4b1d" + rand(38)),
    ("aws_bedrock_api_key", "ABSKQmVkcm9ja0FQSUtleS1" + rand(90, B64)),
    ("flyio_token", "fm2_" + rand(200, B64)),
    ("flyio_token", "fo1_" + rand(43, URLSAFE)),
    ("twilio_api_key", "AC" + rand(32, HEX)),
    ("mailgun_api_key", f"{rand(32, HEX)}-{rand(8, HEX)}-{rand(8, HEX)}"),
    ("postman_api_key", "PMAT-" + rand(26, UPPER36)),
    ("fcm_server_key", f"AAAA{rand(7, URLSAFE)}:APA91b{rand(134, URLSAFE)}"),
    ("wechat_app_id", "wx" + rand(16, HEX)),
    ("mapbox_secret_token", f"sk.eyJ1IjoiZXhhbXBsZS11c2VyIiwiYSI6Im{rand(20)}.{rand(22, URLSAFE)}"),
    ("hubspot_token", "pat-eu1-" + uuid()),
    ("airtable_token", f"pat{rand(14)}.{rand(64, HEX)}"),
    ("adobe_client_secret", "p8e-" + rand(32)),
    ("payments_api_key", "shippo_test_" + rand(40, HEX)),
    ("payments_api_key", "EZAK" + rand(54)),
    ("payments_api_key", "duffel_live_" + rand(43, URLSAFE)),
    ("payments_api_key", f"FLWSECK-{rand(32, HEX)}-X"),
    ("payments_api_key", "access-production-" + uuid()),
    # Type 3, with an LM and an NTLMv2 response's fields, then random payload.
    (
        "ntlm_authenticate",
        base64.b64encode(
            b"NTLMSSP\0"
            + struct.pack("<IHHIHHI", 3, 24, 24, 88, 278, 278, 112)
            + RNG.randbytes(300)
        ).decode(),
    ),
]


@pytest.mark.parametrize(("label", "token"), VENDOR_TOKENS)
def test_a_vendor_token_is_found_whole_and_redacted(label: str, token: str) -> None:
    for template in ("{}", 'TOKEN = "{}"', "curl -H 'Authorization: Bearer {}' https://api"):
        text = template.format(token)
        assert found(text) == [(label, token)], text
        assert redacted(text) == template.format("[SECRET]")


@pytest.mark.parametrize(("label", "token"), VENDOR_TOKENS)
def test_a_vendor_token_streamed_in_small_pieces_gives_the_same_findings(
    label: str, token: str
) -> None:
    text = f"The key {token} leaked, and again: {token}."
    assert streamed(text) == [(f.label, f.start, f.end) for f in check_text([SHIELD], text)]


@pytest.mark.parametrize(
    "text",
    [
        # Placeholders in the vendor's shape, and masks.
        "bkua_" + "x" * 40,
        "CCIPAT_" + "X" * 22 + "_" + "0" * 40,
        "sk-or-v1-" + "0" * 64,
        "sk-or-v1-" + "abcdef0123456789" * 4,
        "sk_" + "a" * 48,
        "AC" + "x" * 32,
        "ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "AC00000000000000000000000000000000",
        "wx0000000000000000",
        "wxffffffffffffffff",
        "API-XXXXXXXXXXXXXXXXXXXXXXXXXX",
        "API-YOURAPIKEYGOESHEREXXXXXX",
        "sha256~" + "x" * 43,
        "pcsk_xxxxxx_" + "x" * 63,
        "4b1d" + "0" * 38,
        "AAAAxxxxxxx:APA91b" + "x" * 134,
        "00D000000000000!" + "x" * 96,
        "FLWSECK-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-X",
        "access-sandbox-00000000-0000-0000-0000-000000000000",
        "p8e-" + "x" * 32,
        "TlRMTVNTUAADAAAA" + "A" * 100,
        # Near misses: the shape cut short or run on, another alphabet, another message type.
        "bkua_" + "abc123" * 5,
        "AC" + rand(31, HEX),
        "AC" + rand(33, HEX),
        "wx" + rand(15, HEX),
        "wx" + rand(17, HEX),
        "sk_" + rand(47, HEX),
        "pat-na1-" + rand(8, HEX),
        "API-" + rand(25, UPPER36),
        "IQoJb3JpZ2luX2Vj",
        "TlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAGAbEdAAAADw==",  # type 1: negotiate
        # Type 3 without an NT response: an anonymous authentication.
        base64.b64encode(
            b"NTLMSSP\0" + struct.pack("<IHHIHHI", 3, 1, 1, 88, 0, 0, 89) + bytes(range(60))
        ).decode(),
        # Words and identifiers that begin like a prefix.
        "The pattern sat.on the mat; pat.down the API-first design of sha256~ hashing.",
        "wxWidgets wxString wxDEFAULT; the ACME SKU; access-production-ready guide",
        "Use a 4b1d-shaped key? See shippo_live_mode and duffel_test_mode in the docs.",
    ],
)
def test_placeholders_near_misses_and_words_are_not_tokens(text: str) -> None:
    assert found(text) == []


def test_the_teams_webhook_secret_path_is_redacted_the_url_stays() -> None:
    secret = f"{rand(32, HEX)}/{uuid()}"
    url = f"https://acme.webhook.office.com/webhookb2/{uuid()}@{uuid()}/IncomingWebhook/{secret}"
    assert found(url) == [("teams_webhook", secret)]
    assert redacted(url) == url.replace(secret, "[SECRET]")
    masked = url.replace(secret, "0" * 32 + "/" + "0" * 8 + "-0000-0000-0000-" + "0" * 12)
    assert found(masked) == []


def test_a_config_key_whose_value_is_a_new_vendor_token_reports_the_token_rule() -> None:
    token = "sk-or-v1-" + rand(64, HEX)
    assert found(f"OPENROUTER_API_KEY={token}") == [("openrouter_api_key", token)]
    # A password that happens to begin like a short prefix is still the password's.
    assert found("password = 'pat.Sunny-Day7'") == [("config_password", "pat.Sunny-Day7")]


# -- base64 of a PEM block that does not start at the blob's start ---------------------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    + "\n".join(rand(64, B64) for _ in range(6))
    + "\n-----END RSA PRIVATE KEY-----\n"
)


@pytest.mark.parametrize("lead", [b"", b"\n", b"ab", b"key:\n"])
def test_base64_of_a_pem_private_key_is_found_at_any_alignment(lead: bytes) -> None:
    blob = base64.b64encode(lead + PEM.encode()).decode()
    findings = found(f"Here is the blob from the backup:\n{blob}\n")
    assert [label for label, _ in findings] == ["private_key_base64"]
    secret = findings[0][1]
    # Redacted from the block's start to the blob's end: at most the encoding of the lead
    # before it stays.
    assert blob.endswith(secret) and len(blob) - len(secret) <= len(lead) * 4 // 3 + 4
    # After a key name the whole blob is the key's value, redacted whole.
    assert redacted(f"tls.key: {blob}\n") == "tls.key: [SECRET]\n"


def test_base64_of_a_certificate_or_public_key_at_any_alignment_is_not() -> None:
    for kind in ("CERTIFICATE", "PUBLIC KEY"):
        block = f"-----BEGIN {kind}-----\nMIIC{rand(200, B64)}\n-----END {kind}-----\n"
        for lead in (b"", b"\n", b"ab"):
            assert found(base64.b64encode(lead + block.encode()).decode()) == []


# -- configuration syntaxes and keys -------------------------------------------------------------

TOKEN = rand(32)
PASSWORD = "Tr0ub4dor#3x"
SEED = rand(31, B32) + "7"


@pytest.mark.parametrize(
    ("template", "label", "value"),
    [
        # YAML: the value on the next line, or a block scalar.
        ("auth:\n  token:\n    {tok}\n", "generic_secret", TOKEN),
        ("secret_key: >-\n  {tok}\n", "generic_secret", TOKEN),
        ("password: |\n  {pw}\n", "config_password", PASSWORD),
        # R's assignment, a Markdown table's cells, Rust's and Go's typed declarations.
        ('api_key <- "{tok}"', "generic_secret", TOKEN),
        ("| api_token | {tok} |", "generic_secret", TOKEN),
        ("| password | {pw} |", "config_password", PASSWORD),
        ('let token: &str = "{tok}";', "generic_secret", TOKEN),
        ('var apiKey string = "{tok}"', "generic_secret", TOKEN),
        # A short key with blanks, then a quoted literal.
        ('#define API_KEY "{tok}"', "generic_secret", TOKEN),
        ('setenv AUTH "{tok}"', "generic_secret", TOKEN),
        ('(def key "{tok}")', "generic_secret", TOKEN),
        # A token key in a sentence: the value must still look generated.
        ("The deploy token is {tok}", "generic_secret", TOKEN),
        ("secret for staging: {tok}", "generic_secret", TOKEN),
        # Keys: a pepper, a camelCase salt, SonarQube's login property.
        ("config.pepper = '{tok}'", "generic_secret", TOKEN),
        ('userSalt: "{tok}"', "generic_secret", TOKEN),
        ("sonar.login={tok}", "generic_secret", TOKEN),
        # A TOTP seed in capitals with one digit reads as a name, but is a seed.
        ('totp_secret = "{seed}"', "generic_secret", SEED),
    ],
)
def test_more_syntaxes_and_keys_redact_the_value_alone(
    template: str, label: str, value: str
) -> None:
    text = template.format(tok=TOKEN, pw=PASSWORD, seed=SEED)
    assert found(text) == [(label, value)], text
    assert redacted(text) == text.replace(value, "[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        # The next line is a nested key, a list item, a word.
        "auth:\n  username: deploy\n",
        "secret:\n  - name: db\n",
        "Tokens:\n  Each model reads text as tokens.\n",
        # R, tables and sentences with ordinary values.
        'api_key <- Sys.getenv("API_KEY")',
        "| token | description |",
        "| password | required, 8 characters at least |",
        "The API token is required for every request.",
        "The secret is out: everyone knows.",
        "secret for staging: see the vault",
        # A blank and a quoted word after a short key is prose or a label.
        'the key "Enter" closes it',
        '#define API_KEY "YOUR_API_KEY"',
        # Shell pipes, Go declarations of references, the element-attribute form.
        "echo $TOKEN | base64 --decode",
        'var apiKey string = os.Getenv("API_KEY")',
        '<Pass encoding="base64">',
        # Environment variables interpolated in a string, an argument after a blank.
        "The cksum contain the key 'cpan_path=$cksum->{$basename}{cpan_path}'",
        'api_key = "k8s-$CLUSTER_NAME-2024-x9Zq"',
        "TOKEN=anonymous:$FROM_EMAIL",
        # A constant's name in capitals with a digit is a name, not a seed.
        "API_TOKEN = SETTINGSAPITOKEN2",
        "pepper = get_pepper()",
    ],
)
def test_those_syntaxes_with_ordinary_values_are_not_secrets(text: str) -> None:
    assert found(text) == []


def test_a_base64_value_that_begins_with_a_slash_is_no_path() -> None:
    value = "/Hr6eKc8WD8mXkmszZrNu5XAm2WmUFk1eMBJjGVS"
    assert found(f'client_secret = "{value}"') == [("generic_secret", value)]
    assert found('client_secret = "/var/run/secrets/kubernetes.io/serviceaccount/token"') == []


# -- Bundler's credentials for a gem source --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("BUNDLE_GEMS__CONTRIBSYS__COM=deploy:{}", rand(16)),
        ('export BUNDLE_ENTERPRISE__CONTRIBSYS__COM="{}"', rand(8, HEX) + ":" + rand(8, HEX)),
        ("BUNDLE_RUBYGEMS__PKG__GITHUB__COM: octocat:{}", rand(40)),
        ("BUNDLE_GEMS__EXAMPLE__COM: {}", rand(32)),
    ],
)
def test_bundler_credentials_redact_the_password_or_token(text: str, secret: str) -> None:
    full = text.format(secret)
    password = secret.rsplit(":", 1)[-1]
    assert found(full) == [("bundler_credentials", password)]
    assert redacted(full) == full.replace(password, "[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        "BUNDLE_PATH=vendor/bundle",
        "BUNDLE_JOBS: 4",
        "BUNDLE_GEMS__EXAMPLE__COM: user:changeme",
        "BUNDLE_GEMS__EXAMPLE__COM: ${GEMS_TOKEN}",
        "BUNDLE_GEMS__EXAMPLE__COM=deploy:deploy",
    ],
)
def test_bundler_settings_and_placeholders_are_not(text: str) -> None:
    assert found(text) == []


# -- one-time password seeds in prose ------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "2FA backup seed: {}",
        "Your MFA secret key is {}",
        "TOTP secret (base32): {}",
        "Authenticator setup key {}",
        "two-factor recovery: {}",
    ],
)
def test_an_otp_seed_after_a_word_that_names_it_is_found(template: str) -> None:
    for seed in (rand(15, B32) + "2", rand(31, B32) + "6"):
        text = template.format(seed)
        assert found(text) == [("otp_seed", seed)], text
        assert redacted(text) == template.format("[SECRET]")


def test_an_otp_seed_shown_in_groups_of_four_is_found_whole() -> None:
    seed = " ".join(rand(4, B32).lower() for _ in range(4))
    if not any(c.isdigit() for c in seed):
        seed = "k7" + seed[2:]
    text = f"Google Authenticator key: {seed}"
    assert found(text) == [("otp_seed", seed)]


@pytest.mark.parametrize(
    "text",
    [
        "Erlang/OTP 26 [erts-14.0] [source] [64-bit]",
        "MFA is required for ENABLEDFORALLUSERSNOW",
        "2FA code: 123456",
        "OTP: ABCDEFGHIJKLMNOP",
        "OTP: AAAAAAAAAAAAAAAA2",
        "TOTP seed: <your seed here>",
        "authenticator app: GOOGLEAUTHENTICATOR",
        "TOTP period 30 seconds, digits 6, algorithm SHA1",
    ],
)
def test_otp_words_without_a_seed_are_not(text: str) -> None:
    assert found(text) == []
