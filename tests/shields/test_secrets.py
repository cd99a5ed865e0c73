"""``secrets``: every rule finds its kind of key, near misses and placeholders pass, long
secrets are redacted whole, streams agree with whole texts and never leak a character.

No real credential appears here: every key is generated from a seeded random generator at
test time (which also keeps repository secret scanners quiet about this file).
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from proxy.endpoints.chat_request import check_input, parse_chat_request
from proxy.exchange.reply_check import check_reply
from proxy.stream.guard import GuardState
from shields.base import Finding, Verdict, verdict_of
from shields.builtin.regex import prefix_pattern
from shields.builtin.secrets import RULES, SecretsShield, SecretsSpec, shannon_entropy
from shields.policy import PolicyError, parse_policy
from shields.scan import TextScan, check_text, merge_redactions, redact
from tests.support.fake_upstream import chat_completion, chunk, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = string.ascii_uppercase + "234567"


def shield(**kwargs: object) -> SecretsShield:
    return SecretsShield(SecretsSpec(id="sec", **kwargs))  # type: ignore[arg-type]


DEFAULT = shield()
REDACT = shield(action="redact")


def found(text: str, guard: SecretsShield = DEFAULT) -> list[tuple[str, str]]:
    return [(f.label, text[f.start : f.end]) for f in check_text([guard], text)]


def redacted(text: str, guard: SecretsShield = REDACT) -> str:
    return redact(text, 0, merge_redactions(check_text([guard], text)))


# -- fake keys ---------------------------------------------------------------------------------


# What a generated key all but never holds, and the shield takes for a hand-typed example:
# "xxxx", "your", six of a character, six ascending ("cdefgh"). A seed drawing one would be a
# value the shield rightly passes, not a secret, and the zero-leak properties would fail on it.
_NOT_GENERATED = re.compile(
    r"example|xxxx|your|change|placeholder|redacted|dummy|sample|insert|replace|(.)\1{5}"
    r"|012345|123456|234567|345678|456789|abcdef|bcdefg|cdefgh",
    re.IGNORECASE,
)


def rand(rng: random.Random, n: int, alphabet: str = ALNUM, *, mixed: bool = False) -> str:
    """``n`` random characters, as a generator makes them (never one of ``_NOT_GENERATED``);
    ``mixed`` guarantees an upper, a lower and a digit."""
    while True:
        chars = [rng.choice(alphabet) for _ in range(n)]
        if mixed:
            chars[:3] = [
                rng.choice(string.ascii_uppercase),
                rng.choice("abcdefghjk"),
                rng.choice("79"),
            ]
        value = "".join(chars)
        if _NOT_GENERATED.search(value) is None:
            return value


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def pem(rng: random.Random, kind: str = "RSA ", lines: int = 8, newline: str = "\n") -> str:
    body = newline.join(rand(rng, 64, B64) for _ in range(lines))
    return (
        f"-----BEGIN {kind}PRIVATE KEY-----{newline}{body}{newline}{rand(rng, 20, B64)}=="
        f"{newline}-----END {kind}PRIVATE KEY-----"
    )


def ntlm_authenticate(rng: random.Random) -> str:
    """An NTLM authenticate message: its header (type 3, an LM and an NTLMv2 response's
    fields), then random payload."""
    head = b"NTLMSSP\0" + struct.pack("<IHHIHHI", 3, 24, 24, 88, 278, 278, 112)
    return base64.b64encode(head + rng.randbytes(300)).decode()


# rule id -> (fragment of text holding the secret, the secret itself)
Fake = Callable[[random.Random], tuple[str, str]]


def _whole(make: Callable[[random.Random], str]) -> Fake:
    def fake(rng: random.Random) -> tuple[str, str]:
        secret = make(rng)
        return secret, secret

    return fake


def _assigned(template: str, make: Callable[[random.Random], str]) -> Fake:
    def fake(rng: random.Random) -> tuple[str, str]:
        secret = make(rng)
        return template.format(secret), secret

    return fake


FAKES: dict[str, Fake] = {
    "aws_access_key_id": _whole(lambda r: "AKIA" + rand(r, 16, B32)),
    "aws_secret_access_key": _assigned(
        'aws_secret_access_key = "{}"', lambda r: rand(r, 40, B64, mixed=True)
    ),
    "github_token": _whole(lambda r: "ghp_" + rand(r, 36, mixed=True)),
    "github_fine_grained_token": _whole(
        lambda r: "github_pat_" + rand(r, 22, mixed=True) + "_" + rand(r, 59)
    ),
    "anthropic_api_key": _whole(lambda r: "sk-ant-api03-" + rand(r, 93, B64URL) + "AA"),
    "openai_api_key": _whole(lambda r: "sk-proj-" + rand(r, 156, B64URL, mixed=True)),
    "slack_token": _whole(
        lambda r: f"xoxb-{rand(r, 12, string.digits)}-{rand(r, 13, string.digits)}-{rand(r, 24)}"
    ),
    "slack_webhook": _whole(
        lambda r: (
            "https://hooks.slack.com/services/T"
            + rand(r, 8, string.ascii_uppercase + string.digits)
            + "/B"
            + rand(r, 8, string.ascii_uppercase + string.digits)
            + "/"
            + rand(r, 24, mixed=True)
        )
    ),
    "google_api_key": _whole(lambda r: "AIza" + rand(r, 35, B64URL, mixed=True)),
    "stripe_secret_key": _whole(lambda r: "sk_live_" + rand(r, 24, mixed=True)),
    "jwt": _whole(
        lambda r: (
            b64url({"alg": "RS256", "typ": "JWT", "kid": rand(r, 8)})
            + "."
            + b64url({"sub": rand(r, 10, string.digits), "name": "Jane Doe", "iat": 1716239022})
            + "."
            + rand(r, 43, B64URL)
        )
    ),
    # A GitHub token of the dated format that wraps a JWT (made up: the header decodes to JSON
    # with an "alg", as the rule checks).
    "github_jwt_token": _whole(
        lambda r: (
            "ghs_20260523_"
            + b64url({"alg": "RS256", "typ": "JWT"})
            + "."
            + b64url({"iat": 1792521450, "iss": rand(r, 6, string.digits)})
            + "."
            + rand(r, 43, B64URL)
        )
    ),
    "private_key": _whole(lambda r: pem(r, lines=3)),
    # A generated secret has a digit somewhere: letters alone in long case runs read as a
    # name (``is_name``), which the rule leaves alone on purpose.
    "generic_secret": _assigned(
        'client_secret: "{}"', lambda r: rand(r, 24, ALNUM + "!#%*", mixed=True)
    ),
    "config_password": _assigned(
        "DB_PASSWORD={}\n", lambda r: rand(r, 12, ALNUM + "!#%*", mixed=True)
    ),
    "element_pair_password": _assigned(
        "<key>Password</key>\n<string>{}</string>", lambda r: rand(r, 12, mixed=True)
    ),
    "url_credentials": _assigned(
        "postgres://app:{}@db.internal:5432/app", lambda r: rand(r, 16, mixed=True)
    ),
    "basic_auth": _assigned(
        "Authorization: Basic {}",
        lambda r: base64.b64encode(f"deploy:{rand(r, 16, mixed=True)}".encode()).decode(),
    ),
    "password_hash": _whole(lambda r: "$2b$12$" + rand(r, 53, ALNUM + "./")),
    "putty_private_key": lambda r: putty(r, lines=2),
    # Vendor token formats (shields/builtin/secrets_vendors.py), built from each vendor's
    # documented prefix, alphabet and length.
    "gitlab_token": _whole(lambda r: "glpat-" + rand(r, 20, B64URL, mixed=True)),
    "npm_token": _whole(lambda r: "npm_" + rand(r, 36, mixed=True)),
    "pypi_token": _whole(lambda r: "pypi-AgEIcHlwaS5vcmc" + rand(r, 150, B64URL, mixed=True)),
    "rubygems_api_key": _whole(lambda r: "rubygems_" + rand(r, 48, HEX)),
    # The 11 characters before the infix are not reported: without the rest they are no key.
    "dropbox_long_lived_token": lambda r: (lambda head, tail: (head + tail, tail))(
        rand(r, 11, string.ascii_lowercase + string.digits),
        "A" * 10 + rand(r, 43, B64URL, mixed=True),
    ),
    "docker_hub_token": _whole(lambda r: "dckr_pat_" + rand(r, 27, B64URL, mixed=True)),
    "atlassian_api_token": _whole(
        lambda r: "ATATT3xFfGF0" + rand(r, 171, B64URL, mixed=True) + "=" + rand(r, 8, HEXU)
    ),
    "sonarqube_token": _whole(lambda r: "squ_" + rand(r, 40, HEX)),
    "jfrog_token": _whole(lambda r: "AKCp" + rand(r, 69, mixed=True)),
    "huggingface_token": _whole(lambda r: "hf_" + rand(r, 34, string.ascii_letters)),
    "groq_api_key": _whole(lambda r: "gsk_" + rand(r, 52, mixed=True)),
    "ai_api_key": _whole(lambda r: "pplx-" + rand(r, 48, mixed=True)),
    "digitalocean_token": _whole(lambda r: "dop_v1_" + rand(r, 64, HEX)),
    "vault_token": _whole(lambda r: "hvs.CAESI" + rand(r, 90, B64URL, mixed=True)),
    "terraform_cloud_token": lambda r: _terraform(r),
    "pulumi_access_token": _whole(lambda r: "pul-" + rand(r, 40, HEX)),
    "doppler_token": _whole(lambda r: "dp.pt." + rand(r, 43, mixed=True)),
    "databricks_token": _whole(lambda r: "dapi" + rand(r, 32, HEX) + "-2"),
    "planetscale_token": _whole(lambda r: "pscale_tkn_" + rand(r, 43, B64URL, mixed=True)),
    "supabase_token": _whole(lambda r: "sbp_" + rand(r, 40, HEX)),
    "alibaba_access_key_id": _whole(lambda r: "LTAI" + rand(r, 20, mixed=True)),
    "heroku_api_key": _whole(lambda r: "HRKU-AA" + rand(r, 58, B64URL, mixed=True)),
    "netlify_token": _whole(lambda r: "nfp_" + rand(r, 36, mixed=True)),
    "sentry_token": _whole(
        lambda r: (
            "sntrys_"
            + b64(r, {"iat": 1716239022, "url": "https://sentry.io"})
            + "_"
            + rand(r, 43, B64, mixed=True)
        )
    ),
    "grafana_token": _whole(lambda r: "glsa_" + rand(r, 32, mixed=True) + "_" + rand(r, 8, HEX)),
    "new_relic_key": _whole(lambda r: "NRAK-" + rand(r, 27, B32U36)),
    "dynatrace_token": _whole(
        lambda r: "dt0c01." + rand(r, 24, B32U36) + "." + rand(r, 64, B32U36)
    ),
    "posthog_personal_key": _whole(lambda r: "phx_" + rand(r, 43, mixed=True)),
    "shopify_token": _whole(lambda r: "shpat_" + rand(r, 32, HEX)),
    "twilio_api_key": _whole(lambda r: "SK" + rand(r, 32, HEX)),
    "sendgrid_api_key": _whole(
        lambda r: "SG." + rand(r, 22, B64URL, mixed=True) + "." + rand(r, 43, B64URL, mixed=True)
    ),
    "mailgun_api_key": _whole(lambda r: "key-" + rand(r, 32, LOWER36)),
    "brevo_api_key": _whole(
        lambda r: "xkeysib-" + rand(r, 64, HEX) + "-" + rand(r, 16, mixed=True)
    ),
    "postman_api_key": _whole(lambda r: "PMAK-" + rand(r, 24, HEX) + "-" + rand(r, 34, HEX)),
    "env_ampersand_password": _assigned(
        "DB_PASSWORD={}\nDB_HOST=db\n", lambda r: rand(r, 6, ALNUM) + "&" + rand(r, 5, ALNUM)
    ),
    "piped_password": _assigned(
        "RUN echo 'deploy:{}' | chpasswd", lambda r: rand(r, 12, ALNUM + "!#%")
    ),
    "yaml_word_password": _assigned(
        "database:\n  password: {}\n", lambda r: rand(r, 9, string.ascii_lowercase)
    ),
    "twitch_stream_key": _whole(lambda r: "live_126031192_" + rand(r, 30, mixed=True)),
    "telegram_bot_token": _whole(
        lambda r: rand(r, 10, "123456789") + ":AA" + rand(r, 33, B64URL, mixed=True)
    ),
    "discord_bot_token": _whole(
        lambda r: (
            base64.urlsafe_b64encode(rand(r, 18, "123456789").encode()).decode()
            + "."
            + rand(r, 6, B64URL)
            + "."
            + rand(r, 38, B64URL, mixed=True)
        )
    ),
    "discord_webhook": lambda r: _discord_webhook(r),
    "slack_app_token": _whole(
        lambda r: (
            "xapp-1-A"
            + rand(r, 10, string.ascii_uppercase + string.digits)
            + "-"
            + rand(r, 13, string.digits)
            + "-"
            + rand(r, 64, HEX)
        )
    ),
    "stripe_webhook_secret": _whole(lambda r: "whsec_" + rand(r, 32, mixed=True)),
    "square_token": _whole(lambda r: "EAAA" + rand(r, 60, B64URL, mixed=True)),
    "braintree_access_token": _whole(
        lambda r: "access_token$production$" + rand(r, 16, LOWER36) + "$" + rand(r, 32, HEX)
    ),
    "linear_api_key": _whole(lambda r: "lin_api_" + rand(r, 40, mixed=True)),
    "notion_token": _whole(lambda r: "ntn_" + rand(r, 11, string.digits) + rand(r, 35, mixed=True)),
    "figma_token": _whole(lambda r: "figd_" + rand(r, 40, B64URL, mixed=True)),
    "google_oauth_token": _whole(lambda r: "GOCSPX-" + rand(r, 28, B64URL, mixed=True)),
    "onepassword_token": _whole(
        lambda r: "ops_" + b64(r, {"signInAddress": "my.1password.com", "email": "ci"})
    ),
    "age_secret_key": _whole(lambda r: "AGE-SECRET-KEY-1" + rand(r, 58, BECH32)),
    "deepseek_api_key": lambda r: _deepseek(r),
    # Nothing marks the end of a key without PEM lines but the end of its last line.
    "private_key_base64": lambda r: (lambda key: (key + "\n", key))(der_key(r)),
    "cloudflare_token": _whole(lambda r: "cfut_" + rand(r, 40, mixed=True)),
    "aws_mws_key": _whole(
        lambda r: "amzn.mws." + "-".join(rand(r, n, LOWER36) for n in (8, 4, 4, 4, 12))
    ),
    "aws_bedrock_api_key": _whole(lambda r: "ABSK" + rand(r, 132, B64, mixed=True)),
    "azure_ad_client_secret": lambda r: _azure_ad(r),
    "flyio_token": _whole(lambda r: "FlyV1 fm2_" + rand(r, 180, B64 + "_-", mixed=True)),
    "vercel_token": _whole(lambda r: "vcp_" + rand(r, 56, mixed=True)),
    "akamai_client_token": _whole(
        lambda r: f"akab-{rand(r, 16, LOWER36, mixed=True).lower()}-{rand(r, 16, LOWER36)}"
    ),
    "defined_networking_key": _whole(lambda r: f"dnkey-{rand(r, 26, B32)}-{rand(r, 52, B32)}"),
    "nats_nkey_seed": _whole(lambda r: "SU" + rand(r, 56, B32)),
    "dropbox_token": _whole(lambda r: "sl.u." + rand(r, 140, B64URL, mixed=True)),
    "sourcegraph_token": _whole(lambda r: "sgp_" + rand(r, 16, HEX) + "_" + rand(r, 40, HEX)),
    "bitbucket_access_token": _whole(lambda r: "BBDC-MTQ3" + rand(r, 40, B64URL, mixed=True)),
    "package_registry_token": _whole(lambda r: "oy2" + rand(r, 43, LOWER36, mixed=True).lower()),
    "docker_swarm_secret": _whole(
        lambda r: f"SWMTKN-1-{rand(r, 50, LOWER36)}-{rand(r, 25, LOWER36)}"
    ),
    "new_relic_license_key": _whole(lambda r: "eu01xx" + rand(r, 30, HEX) + "NRAL"),
    "facebook_app_token": lambda r: _facebook_app(r),
    "facebook_access_token": _whole(lambda r: "EAAG" + rand(r, 180, mixed=True)),
    "instagram_token": _whole(lambda r: "IGQVJ" + rand(r, 150, B64URL, mixed=True)),
    "x_bearer_token": _whole(
        lambda r: "A" * 21 + rand(r, 4, mixed=True) + "A" * 7 + rand(r, 80, ALNUM + "%")
    ),
    "mailchimp_api_key": _whole(lambda r: rand(r, 32, HEX) + "-us14"),
    "intra42_secret": _whole(lambda r: "s-s4t2ud-" + rand(r, 64, HEX)),
    "wundergraph_api_key": _whole(lambda r: "cosmo_" + rand(r, 32, HEX)),
    "onepassword_secret_key": _whole(
        lambda r: "-".join(["A3", *(rand(r, n, B32U36) for n in (6, 11, 5, 5, 5))])
    ),
    "jwk_private_key": _assigned(
        '{{"kty": "oct", "k": "{}"}}', lambda r: rand(r, 43, B64URL, mixed=True)
    ),
    "cli_user_password": _assigned(
        "curl -u deploy:{} https://api.example.com/v1", lambda r: rand(r, 14, mixed=True)
    ),
    "auth_pair_password": _assigned(
        "requests.get(url, auth=('deploy', '{}'))", lambda r: rand(r, 14, mixed=True)
    ),
    "connect_call_password": _assigned(
        '$link = mysqli_connect("db.internal", "app", "{}", "shop");',
        lambda r: rand(r, 12, mixed=True),
    ),
    "oracle_connect_password": _assigned(
        "sqlplus scott/{}@//db.internal:1521/orcl", lambda r: rand(r, 12, mixed=True)
    ),
    "pgpass_password": _assigned(
        "db.internal:5432:shop:app:{}\n", lambda r: rand(r, 12, mixed=True)
    ),
    "cli_password_option": _assigned(
        "mysqldump -u backup -p{} --all-databases", lambda r: rand(r, 12, mixed=True)
    ),
    # Secrets as tools store or print them (shields/builtin/secrets_stored.py).
    "encrypted_password_element": _assigned(
        "<server><id>nexus</id><password>{{{}}}</password></server>",
        lambda r: base64.b64encode(r.randbytes(32)).decode(),
    ),
    "gcp_private_key_id": _assigned('"private_key_id": "{}",', lambda r: rand(r, 40, HEX)),
    "hash_salt_line": _whole(lambda r: rand(r, 32, HEX) + ":" + rand(r, 8, mixed=True)),
    "recovery_codes": lambda r: (lambda codes: (f"Recovery codes: {codes}", codes))(
        " ".join(f"{rand(r, 4, string.digits)}-{rand(r, 4, string.digits)}" for _ in range(4))
    ),
    "cli_user_token": _assigned(
        "curl -u {}: https://api.example.com/v1/charges", lambda r: rand(r, 32, mixed=True)
    ),
    "pass_the_hash_option": _assigned(
        "wmiexec.py -hashes {} CORP/admin@10.0.0.5", lambda r: ":" + rand(r, 32, HEX)
    ),
    # Passwords given to commands (shields/builtin/secrets_commands.py).
    "domain_user_password": _assigned(
        "secretsdump.py CORP/backup_svc:{}@10.20.0.5", lambda r: rand(r, 14, mixed=True)
    ),
    "net_use_password": _assigned(
        "net use Z: \\\\files01\\finance /user:CORP\\ann {}", lambda r: rand(r, 12, mixed=True)
    ),
    "redis_cli_password": _assigned(
        "redis-cli -h cache.internal -a {} ping", lambda r: rand(r, 16, mixed=True)
    ),
    "archive_password": _assigned(
        "zip -r -P {} backup.zip /srv/data", lambda r: rand(r, 12, mixed=True)
    ),
    "openssl_key_password": _assigned(
        "openssl enc -aes-256-cbc -salt -k {} -in db.sql -out db.enc",
        lambda r: rand(r, 14, mixed=True),
    ),
    "htpasswd_password": _assigned(
        "htpasswd -b /etc/nginx/.htpasswd deploy {}", lambda r: rand(r, 12, mixed=True)
    ),
    "rabbitmq_user_password": _assigned(
        "rabbitmqctl add_user worker {}", lambda r: rand(r, 16, mixed=True)
    ),
    "urlencoded_credential": _assigned(
        "next=%2Fcallback%3Faccess_token%3D{}%26state%3D1", lambda r: rand(r, 32, mixed=True)
    ),
    "encoded_json_credentials": _whole(
        lambda r: base64.b64encode(
            json.dumps({"type": "oauth", "client_secret": rand(r, 32, mixed=True)}).encode()
        ).decode()
    ),
    "jira_confluence_pat": _whole(
        lambda r: base64.b64encode(
            rand(r, 12, string.digits).encode() + b":" + r.randbytes(20)
        ).decode()
    ),
    # Kinds widened from public catalogues of credential formats (gitleaks, trufflehog,
    # CredSweeper, detect-secrets): tests/test_secrets_catalogue.py has their look-alikes.
    "buildkite_token": _whole(lambda r: "bkua_" + rand(r, 40, LOWER36)),
    "circleci_token": _whole(
        lambda r: "CCIPAT_" + rand(r, 22, mixed=True) + "_" + rand(r, 40, HEX)
    ),
    "harness_token": _whole(
        lambda r: f"pat.{rand(r, 22, B64URL, mixed=True)}.{rand(r, 24)}.{rand(r, 20)}"
    ),
    "octopus_deploy_key": _whole(lambda r: "API-" + rand(r, 26, B32U36)),
    "openshift_token": _whole(lambda r: "sha256~" + rand(r, 43, B64URL, mixed=True)),
    "dev_platform_token": _whole(lambda r: "pnu_" + rand(r, 36, mixed=True)),
    "ai_secret_key": _whole(lambda r: "sk_" + rand(r, 47, HEX) + "7"),
    "openrouter_api_key": _whole(lambda r: "sk-or-v1-" + rand(r, 64, HEX)),
    "pinecone_api_key": _whole(lambda r: "pcsk_" + rand(r, 6) + "_" + rand(r, 63, mixed=True)),
    "readme_api_key": _whole(lambda r: "rdme_" + rand(r, 69, LOWER36) + "7"),
    "frameio_token": _whole(lambda r: "fio-u-" + rand(r, 64, B64URL, mixed=True)),
    "tailscale_key": _whole(
        lambda r: "tskey-auth-k" + rand(r, 11, mixed=True) + "CNTRL-" + rand(r, 32, mixed=True)
    ),
    "aws_session_token": _whole(lambda r: "IQoJb3JpZ2luX2Vj" + rand(r, 300, B64, mixed=True)),
    "salesforce_token": _whole(
        lambda r: "00D" + rand(r, 12, mixed=True) + "!" + rand(r, 96, ALNUM + "._", mixed=True)
    ),
    "yandex_cloud_key": _whole(lambda r: "AQVN" + rand(r, 36, B64URL, mixed=True)),
    "clickhouse_cloud_key": _whole(lambda r: "4b1d" + rand(r, 38, mixed=True)),
    "fcm_server_key": _whole(
        lambda r: "AAAA" + rand(r, 7, B64URL) + ":APA91b" + rand(r, 134, B64URL, mixed=True)
    ),
    "wechat_app_id": _whole(lambda r: "wx" + rand(r, 15, HEX) + "7"),
    "teams_webhook": lambda r: _teams_webhook(r),
    "mapbox_secret_token": _whole(
        lambda r: "sk.eyJ1Ijoi" + rand(r, 40, B64URL, mixed=True) + "." + rand(r, 22, B64URL)
    ),
    "hubspot_token": _whole(
        lambda r: "pat-na1-" + "-".join(rand(r, n, HEX) for n in (8, 4, 4, 4, 12))
    ),
    "airtable_token": _whole(lambda r: "pat" + rand(r, 14, mixed=True) + "." + rand(r, 64, HEX)),
    "adobe_client_secret": _whole(lambda r: "p8e-" + rand(r, 32, mixed=True)),
    "payments_api_key": _whole(lambda r: "shippo_live_" + rand(r, 40, HEX)),
    "ntlm_authenticate": _whole(ntlm_authenticate),
    "bundler_credentials": _assigned(
        "BUNDLE_GEMS__CONTRIBSYS__COM=deploy:{}", lambda r: rand(r, 16, mixed=True)
    ),
    "otp_seed": _assigned("2FA recovery seed: {}", lambda r: rand(r, 31, B32) + "7"),
    "otpauth_uri_seed": _assigned(
        "otpauth://totp/Shop:ann?secret={}&issuer=Shop", lambda r: rand(r, 32, B32)
    ),
    "windows_hash_dump": _assigned(
        "ann:1107:{}:::",
        lambda r: rand(r, 32, "0123456789abcdef") + ":" + rand(r, 32, "0123456789abcdef"),
    ),
    "nt_hash": _assigned("nthash = {}", lambda r: rand(r, 32, "0123456789abcdef")),
    "kerberos_roast_hash": _assigned(
        "$krb5asrep$23$svc@CORP.LOCAL:{}",
        lambda r: rand(r, 32, "0123456789abcdef") + "$" + rand(r, 48, "0123456789abcdef"),
    ),
    "mysql_password_hash": _whole(lambda r: "*" + rand(r, 40, "0123456789ABCDEF")),
    "postgres_password_hash": _whole(lambda r: "md5" + rand(r, 32, "0123456789abcdef")),
    "cli_option_password": _assigned(
        "crackmapexec smb 10.0.0.7 -u ann -p {}", lambda r: rand(r, 12, mixed=True)
    ),
    "encoded_user_password": _assigned(
        "btoa('deploy:{}')", lambda r: rand(r, 12, ALNUM + "!#%", mixed=True)
    ),
}

HEX = "0123456789abcdef"
HEXU = HEX.upper()
B32U36 = string.ascii_uppercase + string.digits
LOWER36 = string.ascii_lowercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def b64(rng: random.Random, data: dict[str, object]) -> str:
    """Base64 of a JSON payload with a random key, as vendors build structured tokens."""
    payload = {**data, "key": rand(rng, 40, mixed=True)}
    return base64.b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def _terraform(rng: random.Random) -> tuple[str, str]:
    """``<id>.atlasv1.<secret>``: the secret after the infix is what is reported."""
    secret = rand(rng, 67, B64URL, mixed=True)
    return f"{rand(rng, 14, mixed=True)}.atlasv1.{secret}", secret


def _discord_webhook(rng: random.Random) -> tuple[str, str]:
    token = rand(rng, 68, B64URL, mixed=True)
    url = f"https://discord.com/api/webhooks/{rand(rng, 18, '123456789')}/{token}"
    return url, token


def _deepseek(rng: random.Random) -> tuple[str, str]:
    """``sk-`` and 32 hex digits: the digits are the secret (the prefix is no secret)."""
    secret = rand(rng, 31, HEX) + "7"
    return "sk-" + secret, secret


def _azure_ad(rng: random.Random) -> tuple[str, str]:
    """``<3>8Q~<34>``: reported from the version digit on."""
    secret = "8Q~" + rand(rng, 34, ALNUM + "_~.-", mixed=True)
    return rand(rng, 3, mixed=True) + secret, secret


def _teams_webhook(rng: random.Random) -> tuple[str, str]:
    """A Teams incoming webhook: the secret path after ``IncomingWebhook/`` is reported."""

    def uuid() -> str:
        return "-".join(rand(rng, n, HEX) for n in (8, 4, 4, 4, 12))

    secret = f"{rand(rng, 32, HEX)}/{uuid()}"
    return (
        f"https://acme.webhook.office.com/webhookb2/{uuid()}@{uuid()}/IncomingWebhook/{secret}",
        secret,
    )


def _facebook_app(rng: random.Random) -> tuple[str, str]:
    """``<app id>|<app secret>``: the secret after the bar is what is reported."""
    secret = rand(rng, 27, B64URL, mixed=True)
    return f"{rand(rng, 15, '123456789')}|{secret}", secret


# The DER of an RSA private key (PKCS#1): SEQUENCE, two length bytes, INTEGER 0, INTEGER ...
DER_RSA = bytes.fromhex("308204a40201000282010100")


def der_key(rng: random.Random, width: int = 64) -> str:
    """A private key's DER in base64, in lines, without its PEM lines."""
    body = base64.b64encode(DER_RSA + rng.randbytes(600)).decode()
    return "\n".join(body[i : i + width] for i in range(0, len(body), width))


def putty(rng: random.Random, lines: int) -> tuple[str, str]:
    """A PuTTY key file; the secret is its private lines (the public ones are not)."""
    private = "\n".join(rand(rng, 64, B64) for _ in range(lines - 1)) + "\n" + rand(rng, 20, B64)
    text = (
        "PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: deploy\n"
        f"Public-Lines: 1\n{rand(rng, 64, B64)}\nPrivate-Lines: {lines}\n{private}\n"
        f"Private-MAC: {rand(rng, 64, '0123456789abcdef')}"
    )
    return text, private


def test_every_rule_has_a_fake() -> None:
    assert set(FAKES) == {rule.id for rule in RULES}


@pytest.mark.parametrize("rule_id", sorted(FAKES))
def test_every_rule_finds_its_secret_and_only_its_secret(rule_id: str) -> None:
    fragment, secret = FAKES[rule_id](random.Random(rule_id))
    text = f"Here you go: {fragment}\nanything else?"
    findings = check_text([REDACT], text)
    assert findings, rule_id
    assert {f.label for f in findings} == {rule_id}
    # Long secrets come as contiguous pieces; together they are exactly the secret.
    spans = merge_redactions(findings)
    assert [text[s.start : s.end] for s in spans] == [secret]
    assert redacted(text) == text.replace(secret, "[SECRET]")


@pytest.mark.parametrize("rule_id", sorted(FAKES))
def test_a_secret_alone_and_at_the_edges_of_the_text(rule_id: str) -> None:
    fragment, secret = FAKES[rule_id](random.Random(rule_id + "edge"))
    assert redacted(fragment) == fragment.replace(secret, "[SECRET]")


LEGACY_OPENAI = "sk-" + rand(random.Random(1), 48, mixed=True)
SERVICE_ACCOUNT = "sk-svcacct-" + rand(random.Random(2), 150, B64URL, mixed=True)
ASIA = "ASIA" + rand(random.Random(3), 16, B32)
OAUTH = "gho_" + rand(random.Random(4), 36, mixed=True)
RESTRICTED = "rk_test_" + rand(random.Random(5), 99, mixed=True)
USER_SLACK = "-".join(
    ["xoxp", rand(random.Random(6), 11, string.digits), rand(random.Random(7), 32, "abcdef0123")]
)


@pytest.mark.parametrize(
    ("secret", "label"),
    [
        (LEGACY_OPENAI, "openai_api_key"),
        (SERVICE_ACCOUNT, "openai_api_key"),
        (ASIA, "aws_access_key_id"),
        (OAUTH, "github_token"),
        (RESTRICTED, "stripe_secret_key"),
        (USER_SLACK, "slack_token"),
    ],
)
def test_format_variants(secret: str, label: str) -> None:
    text = f"key={secret};"
    assert {f.label for f in check_text([REDACT], text)} == {label}
    assert redacted(text) == "key=[SECRET];"


def test_a_slack_webhook_with_json_escaped_slashes_is_redacted_whole() -> None:
    _, url = FAKES["slack_webhook"](random.Random("escaped"))
    escaped = url.replace("/", "\\/")  # as PHP's json_encode writes it
    text = f'{{"webhook": "{escaped}"}}'
    assert found(text) == [("slack_webhook", escaped)]
    assert redacted(text) == '{"webhook": "[SECRET]"}'


@pytest.mark.parametrize("glue", ["_", "x", "1", "key", "A"])
@pytest.mark.parametrize(
    "token",
    [
        "AKIA" + rand(random.Random("glued aws"), 16, B32),
        "ghp_" + rand(random.Random("glued ghp"), 36, mixed=True),
        "github_pat_"
        + rand(random.Random("glued pat1"), 22, mixed=True)
        + "_"
        + rand(random.Random("glued pat2"), 59, mixed=True),
        "xoxb-"
        + "-".join(rand(random.Random(f"glued slack{i}"), 12, string.digits) for i in (1, 2))
        + "-"
        + rand(random.Random("glued slack3"), 24, mixed=True),
        "glpat-" + rand(random.Random("glued gitlab"), 20, mixed=True),
    ],
    ids=["aws", "github", "github-pat", "slack", "gitlab"],
)
def test_a_distinctive_prefix_glued_to_a_word_is_still_a_token(glue: str, token: str) -> None:
    # What a reader sees is the token, whatever comes right before it ("_AKIA...", "keyghp_").
    text = f"use {glue}{token} now"
    assert [text[f.start : f.end] for f in check_text([REDACT], text)] == [token]
    assert feed_in_chunks(REDACT, text, [1]) == check_text([REDACT], text)


# -- what must not fire ------------------------------------------------------------------------

NEAR = random.Random(99)


@pytest.mark.parametrize(
    "text",
    [
        "AKIA" + rand(NEAR, 15, B32),  # one character short
        "AKIA" + rand(NEAR, 17, B32),  # one too many: some other identifier
        "AKIA" + rand(NEAR, 15, B32) + "a",  # lower case: no key id
        "AKIAIOSFODNN7EXAMPLE",  # the AWS documentation's example key
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AIDA" + rand(NEAR, 16, B32),  # a user id: a public identifier, not a credential
        "ghp_" + rand(NEAR, 35, mixed=True),
        "ghp_" + rand(NEAR, 37, mixed=True),
        "ghx_" + rand(NEAR, 36, mixed=True),
        "ghp_" + "x" * 36,
        "ghp_1234567890abcdefghijklmnopqrstuvwxyz",
        "github_pat_" + rand(NEAR, 22) + "_" + rand(NEAR, 58),
        "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "sk-your-openai-api-key-goes-here-please",
        "use sk-learn-pipelines-for-feature-engineering today",
        "sk-ant-api03-" + "X" * 95,
        "pk_live_" + rand(NEAR, 24, mixed=True),  # publishable: meant to be public
        "sk_live_" + "0" * 24,
        "xoxb-your-bot-token-here",
        "xoxb-XXXXXXXXXXXX-XXXXXXXXXXXXX-XXXXXXXXXXXXXXXXXXXXXXXX",
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "AIza" + rand(NEAR, 34, mixed=True),
        "AIza" + rand(NEAR, 36, mixed=True),
        # A JWT header alone, as JWT tutorials show it; and a header without "alg".
        "The header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 decodes to JSON.",
        b64url({"typ": "JWT", "kid": "x"}) + "." + b64url({"sub": "1"}) + ".sig",
        "eyJ" + rand(NEAR, 30, B64URL) + ".ey" + rand(NEAR, 30, B64URL),  # not JSON
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN PUBLIC KEY-----\n" + rand(NEAR, 64, B64) + "\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\n" + rand(NEAR, 64, B64) + "\n-----END CERTIFICATE-----",
        "password=changeme",
        "PASSWORD=correcthorsebatterystaple",
        'api_key: "<your-key>"',
        "api_key: ${OPENAI_API_KEY}",
        "token: xxxxxxxxxxxxxxxxxxxx",
        "secret=****************",
        'password: "YOUR_PASSWORD_HERE"',
        "api_key = os.environ['OPENAI_API_KEY']",
        "token = tokenizer.encode(text)",
        "secret = get_secret_from_vault(name)",
        "api_key = settings.OPENAI_API_KEY",
        "def encode_private(self, private_key: ed25519.Ed25519PrivateKey) -> bytes:",
        '{"max_tokens_per_1_minute": max_tokens_per_1_minute}',
        "tokenizer = AutoTokenizer.from_pretrained(model_id)",
        "password_file: /etc/app/secrets/db_password.txt",
        "secret_contact: alice.smith@company.org",
        "max_tokens=4096, temperature=0.7",
        "token_count: 1234567890",
        "The secret: patience, practice and a good night's sleep.",
        "Token: the smallest unit of text a language model reads.",
        "if password == 'hunter2': print('weak')",
        "My API key: please keep it safe, it starts with sk and is long.",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    ],
)
def test_near_misses_and_placeholders_do_not_fire(text: str) -> None:
    assert found(text) == []


def test_secrets_are_case_sensitive() -> None:
    key = "AKIA" + rand(random.Random(8), 16, B32)
    assert found(key) == [("aws_access_key_id", key)]
    assert found(key.lower()) == []


# -- spans and redaction -----------------------------------------------------------------------


def test_an_assignment_redacts_the_value_and_keeps_the_name() -> None:
    value = rand(random.Random(9), 20, mixed=True)
    for text, expected in [
        (f"PASSWORD={value}", "PASSWORD=[SECRET]"),
        (f'"api_key": "{value}"', '"api_key": "[SECRET]"'),
        (f"client_secret: '{value}'", "client_secret: '[SECRET]'"),
        (f"$db->auth_key => '{value}';", "$db->auth_key => '[SECRET]';"),
        (f"export GITLAB_TOKEN={value}\n", "export GITLAB_TOKEN=[SECRET]\n"),
    ]:
        assert redacted(text) == expected, text


def test_an_assigned_key_is_reported_by_its_own_rule_whole() -> None:
    key = "sk-proj-" + rand(random.Random(10), 156, B64URL, mixed=True)
    text = f"OPENAI_API_KEY={key}"
    assert {f.label for f in check_text([REDACT], text)} == {"openai_api_key"}
    assert redacted(text) == "OPENAI_API_KEY=[SECRET]"
    # Without the OpenAI rule the generic one still catches the value, all of it.
    generic_only = shield(action="redact", rules=["generic_secret"])
    assert redacted(text, generic_only) == "OPENAI_API_KEY=[SECRET]"


def test_hex_values_have_their_own_entropy_threshold() -> None:
    value = "5d41402abc4b2a76b9719d911017c592"
    assert shannon_entropy(value) < 3.5
    assert found(f"api_key={value}") == [("generic_secret", value)]
    assert found(f"api_key={value}", shield(min_entropy_hex=3.9)) == []


def test_min_entropy_and_min_length_tune_the_generic_rule() -> None:
    value = "Tr0ub4dor%3xTr0u"
    assert found(f"secret={value}") == []  # 16 characters, 3.33 bits each
    assert found(f"secret={value}", shield(min_entropy=3.0)) == [("generic_secret", value)]
    assert found(f"secret={value}", shield(min_entropy=3.0, min_length=17)) == []
    # A password is typed, not generated: no entropy threshold, only a length.
    assert found(f"password={value}") == [("config_password", value)]
    assert found(f"password={value}", shield(min_password_length=17)) == []


def test_a_pem_block_is_redacted_whole_through_its_end_line() -> None:
    block = pem(random.Random(11), lines=40)
    text = f"Use this key:\n{block}\nthen restart the server."
    findings = check_text([REDACT], text)
    # The first finding is the BEGIN line and the start of the body: enough to block on.
    first = text[findings[0].start : findings[0].end]
    assert first.startswith("-----BEGIN RSA PRIVATE KEY-----\n") and len(first) < 120
    assert all(f.end - f.start <= REDACT.max_match for f in findings)
    assert redacted(text) == "Use this key:\n[SECRET]\nthen restart the server."


@pytest.mark.parametrize(
    "kind", ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "PGP ", "SSH2 ENCRYPTED "]
)
def test_pem_kinds(kind: str) -> None:
    block = pem(random.Random(kind), kind=kind, lines=3)
    if kind == "PGP ":
        block = block.replace("KEY-----", "KEY BLOCK-----")
    assert redacted(f"x\n{block}\ny") == "x\n[SECRET]\ny"


def test_pem_with_headers_and_escaped_newlines() -> None:
    rng = random.Random(12)
    encrypted = (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
        f"DEK-Info: AES-128-CBC,{rand(rng, 32, '0123456789ABCDEF')}\n\n"
        + "\n".join(rand(rng, 64, B64) for _ in range(3))
        + "\n-----END RSA PRIVATE KEY-----"
    )
    assert redacted(f"key:\n{encrypted}\nok") == "key:\n[SECRET]\nok"
    # A service-account JSON file: the newlines are the two characters backslash and n.
    escaped = pem(rng, kind="", lines=4, newline="\\n")
    text = f'{{"type": "service_account", "private_key": "{escaped}\\n", "x": 1}}'
    assert redacted(text) == '{"type": "service_account", "private_key": "[SECRET]\\n", "x": 1}'


@pytest.mark.parametrize(
    ("newline", "indent", "width", "trailing"),
    [
        ("\r\n", "", 64, ""),  # Windows line ends
        ("\n", "      ", 64, ""),  # nested in a YAML block scalar
        ("\n", "", 76, ""),  # lines longer than 64 characters
        ("\n", "", 64, "  "),  # blanks at the ends of lines
    ],
)
def test_pem_layouts(newline: str, indent: str, width: int, trailing: str) -> None:
    rng = random.Random(newline + indent + str(width) + trailing)
    lines = [f"{indent}{rand(rng, width, B64)}{trailing}" for _ in range(5)]
    block = newline.join(
        [f"{indent}-----BEGIN EC PRIVATE KEY-----", *lines, f"{indent}-----END EC PRIVATE KEY-----"]
    )
    text = f"tls.key: |{newline}{block}{newline}next: 1"
    expected = f"tls.key: |{newline}{indent}[SECRET]{newline}next: 1"
    assert redacted(text) == expected


def test_a_truncated_pem_block_is_redacted_to_where_it_stops() -> None:
    rng = random.Random(13)
    body = "\n".join(rand(rng, 64, B64) for _ in range(3))
    text = f"-----BEGIN PRIVATE KEY-----\n{body}\n\nThat is all."
    assert redacted(text) == "[SECRET]\n\nThat is all."
    text = f"-----BEGIN PRIVATE KEY-----\n{body}\nThat is all."
    assert redacted(text) == "[SECRET]\nThat is all."


def test_a_jwt_is_redacted_whole_and_the_full_stop_after_it_stays() -> None:
    rng = random.Random(14)
    header = b64url({"alg": "RS256", "typ": "JWT", "kid": rand(rng, 40)})
    claims = b64url({"sub": rand(rng, 30), "scope": "read write admin", "exp": 1916239022})
    token = f"{header}.{claims}.{rand(rng, 342, B64URL)}"  # an RS256 signature is long
    assert len(token) > 3 * REDACT.max_match
    assert redacted(f"Bearer {token}. Next") == "Bearer [SECRET]. Next"
    assert redacted(f"https://app.example/cb?id_token={token}&state=1") == (
        "https://app.example/cb?id_token=[SECRET]&state=1"
    )


def test_offsets_are_exact_around_non_ascii_text() -> None:
    key = "ghp_" + rand(random.Random(15), 36, mixed=True)
    text = f"😀 Schlüssel: «{key}» 日本"
    assert found(text) == [("github_token", key)]
    # A non-ASCII letter ends a token like any other character that cannot be part of it.
    assert found(f"{key}é") == [("github_token", key)]
    assert found(f"é{key}") == [("github_token", key)]


# -- the spec ----------------------------------------------------------------------------------


def test_rules_select_what_runs() -> None:
    aws = "AKIA" + rand(random.Random(16), 16, B32)
    _, token = FAKES["jwt"](random.Random(17))
    text = f"{aws} {token}"
    only_aws = shield(rules=["aws_access_key_id"])
    assert [label for label, _ in found(text, only_aws)] == ["aws_access_key_id"]
    assert {label for label, _ in found(text)} == {"aws_access_key_id", "jwt"}
    # The longest selected pattern sets the hold-back a stream needs.
    assert only_aws.max_match < DEFAULT.max_match


def test_placeholders_default_and_per_rule() -> None:
    aws = "AKIA" + rand(random.Random(18), 16, B32)
    ghp = "ghp_" + rand(random.Random(19), 36, mixed=True)
    text = f"{aws} and {ghp}"
    assert redacted(text) == "[SECRET] and [SECRET]"
    typed = shield(
        action="redact", placeholder="<secret>", placeholders={"aws_access_key_id": "[AWS_KEY]"}
    )
    assert redacted(text, typed) == "[AWS_KEY] and <secret>"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"rules": ["aws_access_key_id", "aws_key"]},
            "rules[1]: unknown rule 'aws_key' (known rules: aws_access_key_id, ",
        ),
        ({"rules": []}, "`rules` is empty"),
        ({"rules": ["all"]}, "write `rules: all`, not a list"),
        ({"rules": ["jwt", "jwt"]}, "rules[1]: rule 'jwt' is listed twice"),
        ({"rules": "some"}, "`rules` is `all` or a list of rule ids, not 'some'"),
        ({"rules": 3}, "`rules` is `all` or a list of rule ids"),
        ({"placeholders": {"nope": "[X]"}}, "placeholders: unknown rule 'nope'"),
        ({"rules": ["jwt"], "placeholders": {"private_key": "[X]"}}, "not in `rules`"),
        ({"min_entropy": 9}, "less than or equal to 8"),
        ({"min_length": 0}, "greater than or equal to 1"),
        ({"entropy": 3}, "Extra inputs are not permitted"),
    ],
)
def test_bad_specs_are_explained(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        SecretsSpec(id="s", **options)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_policy_errors_name_the_key_path() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy("name: x\ninput:\n  - {id: s, type: secrets, rules: [jwt, acme_token]}\n")
    text = str(info.value)
    assert "input[0].rules" in text and "unknown rule 'acme_token'" in text
    assert "github_fine_grained_token" in text  # the known ids are listed
    with pytest.raises(PolicyError, match="raise it to at least"):
        parse_policy("name: x\nstream: {holdback_chars: 64}\noutput: [{id: s, type: secrets}]\n")


# -- input and output stages -------------------------------------------------------------------


STAGES = parse_policy(
    f"""
name: secrets-stages
stream: {{holdback_chars: {DEFAULT.max_match}}}
input:
  - {{id: keys, type: secrets, action: redact}}
output:
  - {{id: keys, type: secrets}}
"""
)


def test_input_redaction_changes_what_the_upstream_receives() -> None:
    key = "sk-ant-api03-" + rand(random.Random(20), 93, B64URL) + "AA"
    raw = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": f"Why does {key} fail?"}]}
    ).encode()
    request = parse_chat_request(raw)
    check = check_input(STAGES, request)
    assert check.redacted and not check.blocked
    assert request.body["messages"][0]["content"] == "Why does [SECRET] fail?"


def test_output_with_a_secret_is_blocked() -> None:
    key = "AIza" + rand(random.Random(21), 35, B64URL, mixed=True)
    check = check_reply(STAGES, chat_completion(f"Your key is {key}."))
    assert check.blocked
    assert verdict_of([f for f in check_text(STAGES.output_shields, key)]) is Verdict.BLOCK


# -- streams -----------------------------------------------------------------------------------

STREAM_REDACT = parse_policy(
    f"""
name: secrets-redact
stream: {{holdback_chars: {DEFAULT.max_match}}}
output:
  - {{id: keys, type: secrets, action: redact}}
"""
)
STREAM_BLOCK = parse_policy(
    f"""
name: secrets-block
stream: {{holdback_chars: {DEFAULT.max_match}}}
output:
  - {{id: keys, type: secrets}}
"""
)

filler = st.text(alphabet="ab Z9=:\n.é\u200b", max_size=80)
chunk_sizes = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=20)
rule_ids = st.sampled_from(sorted(FAKES))
seeds = st.integers(min_value=0, max_value=2**32)


def fake_text(rule_id: str, rng: random.Random, before: str, after: str) -> tuple[str, str]:
    fragment, secret = FAKES[rule_id](rng)
    return f"{before} {fragment} {after}", secret


def feed_in_chunks(guard: SecretsShield, text: str, sizes: list[int]) -> list[Finding]:
    scan = TextScan([guard], holdback=guard.max_match)
    findings: list[Finding] = []
    pos, i = 0, 0
    while pos < len(text):
        size = sizes[i % len(sizes)]
        safe_before = scan.safe_end
        new = scan.feed(text[pos : pos + size])
        # max_match is honest: nothing is reported in text the stream guard already released.
        assert all(f.start >= safe_before for f in new)
        findings += new
        pos, i = pos + size, i + 1
    return findings + scan.finish()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_id=rule_ids, seed=seeds, before=filler, after=filler, sizes=chunk_sizes)
def test_chunked_scanning_finds_exactly_what_whole_text_finds(
    rule_id: str, seed: int, before: str, after: str, sizes: list[int]
) -> None:
    text, _ = fake_text(rule_id, random.Random(seed), before, after)
    whole = [(f.label, f.start, f.end) for f in check_text([REDACT], text)]
    assert [(f.label, f.start, f.end) for f in feed_in_chunks(REDACT, text, sizes)] == whole


PROSE = "A long sentence of ordinary prose, with nothing secret in it at all, goes first here. " * 3


@pytest.mark.parametrize("rule_id", sorted(FAKES))
def test_every_split_point_agrees_with_the_whole_text(rule_id: str) -> None:
    """A stream split in two anywhere: in particular where the scanner has seen a secret's
    first characters and not the rest, with its window already far behind."""
    fragment, _ = FAKES[rule_id](random.Random(rule_id + "split"))
    text = f"{PROSE}{fragment} and {fragment}\n"
    whole = [(f.label, f.start, f.end) for f in check_text([REDACT], text)]
    assert whole
    for cut in range(1, len(text)):
        scan = TextScan([REDACT], holdback=REDACT.max_match)
        got = scan.feed(text[:cut]) + scan.feed(text[cut:]) + scan.finish()
        assert [(f.label, f.start, f.end) for f in got] == whole, cut


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="AKIA27sk-_ghp=:\"' eyJ.\nxob", max_size=200),
    sizes=chunk_sizes,
)
def test_chunking_never_changes_findings_on_noise(text: str, sizes: list[int]) -> None:
    whole = [(f.label, f.start, f.end) for f in check_text([REDACT], text)]
    assert [(f.label, f.start, f.end) for f in feed_in_chunks(REDACT, text, sizes)] == whole


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule_id=rule_ids,
    seed=seeds,
    before=filler,
    after=filler,
    sizes=chunk_sizes,
    key=st.sampled_from(["content", "reasoning_content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=4),
)
def test_zero_leak_no_character_of_a_blocked_secret_is_sent(
    rule_id: str,
    seed: int,
    before: str,
    after: str,
    sizes: list[int],
    key: str,
    flush_every: int,
) -> None:
    text, _ = fake_text(rule_id, random.Random(seed), before, after)
    start = min(f.start for f in check_text(STREAM_BLOCK.output_shields, text))
    body = sse(*deltas(text, key, sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_BLOCK, body, flush_every=flush_every)
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, key)
    assert text.startswith(released)
    assert len(released) <= start
    assert payloads(out)[-2]["choices"][0]["finish_reason"] == "content_filter"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rule_id=rule_ids,
    seed=seeds,
    before=filler,
    after=filler,
    sizes=chunk_sizes,
    flush_every=st.integers(min_value=1, max_value=4),
)
def test_zero_leak_a_redacted_secret_never_leaves_in_any_event(
    rule_id: str,
    seed: int,
    before: str,
    after: str,
    sizes: list[int],
    flush_every: int,
) -> None:
    text, secret = fake_text(rule_id, random.Random(seed), before, after)
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_REDACT, body, flush_every=flush_every)
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == redacted(text)
    assert redacted(text).count("[SECRET]") == 1
    # No event carries a piece of the secret: every delta is free of any 8 of its characters.
    sent = [
        choice["delta"].get("content") or ""
        for payload in payloads(out)[:-1]
        for choice in payload["choices"]
    ]
    pieces = {secret[i : i + 8] for i in range(len(secret) - 7)}
    assert not any(piece in delta for delta in sent for piece in pieces)
    assert not any(piece in "".join(sent) for piece in pieces)


def test_a_long_stream_keeps_a_bounded_window() -> None:
    """Linear cost: the scanner holds at most about two windows of text, however long the
    stream, so each character is matched a bounded number of times."""
    scan = TextScan([DEFAULT], holdback=DEFAULT.max_match)
    scanner: Any = scan._scanners[0][1]
    prose = "The token count and the secret of good passwords: entropy. " * 300
    held = 0
    for char in prose:
        assert scan.feed(char) == []
        held = max(held, len(scanner._buf) + sum(len(p) for p in scanner._pending))
    assert scan.finish() == []
    assert held <= 2 * DEFAULT.max_match


def test_the_public_re2_api_finds_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without google-re2's binding (another release), ``searcher`` falls back to the public
    API: the same findings, whole and streamed."""
    import shields.builtin.regex as regex_module

    monkeypatch.setattr(regex_module, "_BINDING", False)
    public = shield()
    rng = random.Random(23)
    text = " and ".join(FAKES[rule_id](rng)[0] for rule_id in sorted(FAKES)) + f" {PROSE}"
    whole = [(f.label, f.start, f.end) for f in check_text([DEFAULT], text)]
    assert len(whole) > len(FAKES)  # long secrets come in several pieces
    assert [(f.label, f.start, f.end) for f in check_text([public], text)] == whole
    for size in (1, 7, 256):
        got = feed_in_chunks(public, text, [size])
        assert [(f.label, f.start, f.end) for f in got] == whole


# -- configuration credentials -------------------------------------------------------------------

CONFIG_RNG = random.Random("config")
PW = rand(CONFIG_RNG, 11, ALNUM + "!#%*", mixed=True)  # a password someone set
TOKEN = rand(CONFIG_RNG, 32, mixed=True)  # a generated token
HEX_KEY = rand(CONFIG_RNG, 64, "0123456789abcdef")


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ("[database]\npassword = {}\nport = 5432", "config_password"),  # INI
        ("DB_PASSWORD={}\n", "config_password"),  # .env
        ("export PGPASSWORD={}\n", "config_password"),  # shell
        ("db:\n  password: {}\n  user: app", "config_password"),  # YAML
        ('{{"user": "app", "password": "{}"}}', "config_password"),  # JSON
        ('{{\\"pwd\\": \\"{}\\"}}', "config_password"),  # JSON inside a JSON string
        ('<connection user="app" password="{}"/>', "config_password"),  # XML attribute
        ("<password>{}</password>", "config_password"),  # XML element
        ('<add key="DbPassword" value="{}" />', "config_password"),  # .NET appSettings
        ("define('DB_PASSWORD', '{}');", "config_password"),  # PHP define()
        ("$cfg['Servers'][$i]['password'] = '{}';", "config_password"),  # PHP array
        ('db_pass = "{}"', "config_password"),  # Python
        ("config.password = '{}'", "config_password"),  # Ruby / JS
        ("password: '{}',", "config_password"),  # a JS object
        ('val password: String = "{}"', "config_password"),  # Scala / Kotlin typed
        ('passwd := "{}"', "config_password"),  # Go
        ("machine example.com login app password {}\n", "config_password"),  # .netrc
        ("mysql --user=app --password={} db", "config_password"),  # command line
        ("Server=db;Database=app;User Id=app;Password={};", "config_password"),  # ADO.NET
        ("DRIVER={{PostgreSQL}};UID=app;PWD={};", "config_password"),  # ODBC
        ("CREATE USER app IDENTIFIED BY '{}';", "config_password"),  # SQL
        ('$p = ConvertTo-SecureString "{}" -AsPlainText -Force', "config_password"),
        ("jdbc:mysql://db:3306/app?user=app&password={}&ssl=true", "config_password"),
    ],
)
def test_a_password_in_every_config_syntax_is_redacted_alone(template: str, label: str) -> None:
    text = template.format(PW)
    assert found(text) == [(label, PW)], text
    assert redacted(text) == template.format("[SECRET]")


@pytest.mark.parametrize(
    "template",
    [
        "SECRET_KEY = '{}'",  # Django
        "secret_key_base: {}",  # Rails
        "RAILS_MASTER_KEY={}",
        "//registry.npmjs.org/:_authToken={}",  # .npmrc
        'api_key: "{}"',
        "Authorization: Bearer {}",
        "AccountName=app;AccountKey={};EndpointSuffix=core.windows.net",  # Azure
        "<client_secret>{}</client_secret>",
    ],
)
def test_a_generated_value_next_to_a_token_key_is_redacted_alone(template: str) -> None:
    for value in (TOKEN, HEX_KEY):
        text = template.format(value)
        assert found(text) == [("generic_secret", value)], text


def test_a_django_secret_key_with_symbols_is_one_value() -> None:
    value = "django-insecure-" + rand(
        random.Random(30), 50, "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"
    )
    value = value.replace("&", "!")  # "&" ends a value (a query string's next parameter)
    text = f"SECRET_KEY = '{value}'\nDEBUG = True"
    assert redacted(text) == "SECRET_KEY = '[SECRET]'\nDEBUG = True"


@pytest.mark.parametrize(
    "text",
    [
        "password=",
        "password: ''",
        "password = None",
        "password: null",
        "PASSWORD=changeme",
        "password: <password>",
        "password: ${DB_PASSWORD}",
        "password = %(db_password)s",
        "password: '{{ vault_db_password }}'",
        "password: xxxxxxxx",
        "password: '********'",
        "password=your_password_here",
        "password: !vault |",
        "password: '%env(DB_PASSWORD)%'",
        "password = $DB_PASSWORD",
        "password: abc12",  # too short
        "password: 123456789",  # a number
        "password_min_length: 12",
        "password = 0x1f2e3d4c",  # a bit mask in code
        "password = getpass.getpass()",
        "password = os.getenv('DB_PASSWORD')",
        "password = self.db_password",
        "password = request.form['password']",
        "password: required",
        "Password: Reset",
        "password_reset_url: https://example.com/reset",
        "passport: X1234567",
        "passenger: Jane",
        "compass = n0rth3ast",
        "the password is incorrect",  # prose: a word, not a password
        "Choose a password, a token, and a key.",
        "if password == 'hunter2': print('weak')",
        "token: true",
        "secret: S3cr3tSauce",  # a demo word
        "api_key = get_key(name)",
        "https://user:password@example.com/",
        "https://user:${PASS}@example.com/",
        "postgres://postgres:postgres@localhost/db",  # the user's name again
        "https://example.com:8443/path@v2",
        "Authorization: Basic dXNlcm5hbWU6cGFzc3dvcmQ=",  # base64 of "username:password"
        "The Basic Authentication scheme sends credentials in a header.",
        "It costs $5 or $6 at most; $2y is not a hash.",
    ],
)
def test_placeholders_code_and_prose_are_not_config_credentials(text: str) -> None:
    assert found(text) == []


def test_credentials_in_urls_and_auth_blobs() -> None:
    secret = rand(random.Random(31), 14, mixed=True)
    url = f"amqp://worker:{secret}@mq.internal:5672/vhost"
    assert found(url) == [("url_credentials", secret)]
    assert redacted(url) == "amqp://worker:[SECRET]@mq.internal:5672/vhost"
    # The user may be an e-mail address.
    smtp = f"smtps://me@example.com:{secret}@smtp.example.com:465"
    assert found(smtp) == [("url_credentials", secret)]
    blob = base64.b64encode(f"ci-bot:{secret}".encode()).decode()
    docker = f'{{"auths": {{"registry.example.com": {{"auth": "{blob}"}}}}}}'
    assert found(docker) == [("basic_auth", blob)]
    assert found(f"_auth = {blob}") == [("basic_auth", blob)]  # .npmrc
    assert found(f"curl -H 'Authorization: Basic {blob}'") == [("basic_auth", blob)]


def test_a_vendor_token_in_a_url_is_left_to_its_own_rule() -> None:
    key = "ghp_" + rand(random.Random(32), 36, mixed=True)
    assert found(f"https://bot:{key}@github.com/org/repo.git") == [("github_token", key)]


@pytest.mark.parametrize(
    "hashed",
    [
        "$2y$10$" + rand(random.Random(33), 53, ALNUM + "./"),  # bcrypt (htpasswd -B)
        "$apr1$" + rand(random.Random(34), 8, ALNUM) + "$" + rand(random.Random(35), 22, ALNUM),
        "$6$" + rand(random.Random(36), 16, ALNUM) + "$" + rand(random.Random(37), 86, ALNUM),
        "$5$rounds=5000$" + rand(random.Random(38), 16, ALNUM) + "$" + rand(random.Random(39), 43),
        "$1$" + rand(random.Random(40), 8, ALNUM) + "$" + rand(random.Random(41), 22, ALNUM),
        "{SHA}" + rand(random.Random(42), 27, B64) + "=",
    ],
)
def test_password_hashes_in_htpasswd_and_shadow_lines(hashed: str) -> None:
    assert found(f"admin:{hashed}") == [("password_hash", hashed)]
    shadow = f"root:{hashed}:19000:0:99999:7:::"
    assert redacted(shadow) == "root:[SECRET]:19000:0:99999:7:::"


def test_a_putty_key_is_redacted_through_its_last_private_line() -> None:
    text, private = putty(random.Random(43), lines=5)
    assert redacted(text) == text.replace(private, "[SECRET]")
    assert "Public-Lines: 1\n" in redacted(text) and "Private-MAC" in redacted(text)


def test_a_long_configured_value_is_redacted_whole() -> None:
    value = rand(random.Random(44), 150, mixed=True)
    text = f"client_secret={value}\nnext=1"
    assert redacted(text) == "client_secret=[SECRET]\nnext=1"
    assert all(f.end - f.start <= REDACT.max_match for f in check_text([REDACT], text))


CONFIG_FILE = """# deployed by ci
[db]
host = db.internal
user = app
password = {pw}
[queue]
url = amqp://worker:{pw}@mq.internal:5672/
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=seeds, sizes=chunk_sizes, flush_every=st.integers(min_value=1, max_value=4))
def test_zero_leak_a_config_file_streamed_in_any_chunks(
    seed: int, sizes: list[int], flush_every: int
) -> None:
    pw = rand(random.Random(seed), 12, ALNUM + "!*", mixed=True)  # "#" would end a URL
    text = CONFIG_FILE.format(pw=pw)
    body = sse(*deltas(text, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(STREAM_REDACT, body, flush_every=flush_every)
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == CONFIG_FILE.format(pw="[SECRET]")
    sent = "".join(
        choice["delta"].get("content") or ""
        for payload in payloads(out)[:-1]
        for choice in payload["choices"]
    )
    assert pw[:6] not in sent and pw[-6:] not in sent


def test_prose_is_held_only_from_a_credential_key_word() -> None:
    """The key rules start at the key: prose without one is released at once (but for the
    last letters, which may still begin one); after "password" only the next word waits."""
    scan = TextScan([DEFAULT], holdback=DEFAULT.max_match, adaptive=True)
    scan.feed("The weather is fine today and the river runs high. ")
    assert scan.safe_end == scan.received
    scan.feed("Your pass")  # may become "password = ..."
    assert scan.received - scan.safe_end == len("pass")
    scan.feed("word reset link expires soon. ")  # "password reset" is no credential
    assert scan.safe_end == scan.received


# -- vendor token formats ------------------------------------------------------------------------

VENDOR = random.Random("vendor")
ROUTABLE = "glpat-" + rand(VENDOR, 40, B64URL, mixed=True) + ".01" + rand(VENDOR, 7, LOWER36)


@pytest.mark.parametrize(
    ("secret", "label"),
    [
        (ROUTABLE, "gitlab_token"),  # a routable token: payload, then ".<version><crc>"
        ("gldt-" + rand(VENDOR, 20, B64URL, mixed=True), "gitlab_token"),
        ("glptt-" + rand(VENDOR, 40, HEX), "gitlab_token"),
        ("GR1348941" + rand(VENDOR, 20, B64URL, mixed=True), "gitlab_token"),
        ("api_org_" + rand(VENDOR, 34, string.ascii_letters), "huggingface_token"),
        ("pypi-AgENdGVzdC5weXBpLm9yZw" + rand(VENDOR, 120, B64URL, mixed=True), "pypi_token"),
        ("sntryu_" + rand(VENDOR, 64, HEX), "sentry_token"),
        ("NRII-" + rand(VENDOR, 32, B64URL, mixed=True), "new_relic_key"),
        ("sq0csp-" + rand(VENDOR, 43, B64URL, mixed=True), "square_token"),
        ("ya29." + rand(VENDOR, 150, B64URL, mixed=True), "google_oauth_token"),
        ("hvb." + rand(VENDOR, 138, B64URL, mixed=True), "vault_token"),
        ("secret_" + rand(VENDOR, 43, mixed=True), "notion_token"),
        ("sb_secret_" + rand(VENDOR, 32, B64URL, mixed=True), "supabase_token"),
        ("xai-" + rand(VENDOR, 80, mixed=True), "ai_api_key"),
        ("dor_v1_" + rand(VENDOR, 64, HEX), "digitalocean_token"),
        ("shpss_" + rand(VENDOR, 32, HEX), "shopify_token"),
    ],
)
def test_vendor_format_variants(secret: str, label: str) -> None:
    text = f"token: {secret}\n"
    assert {f.label for f in check_text([REDACT], text)} == {label}
    assert redacted(text) == "token: [SECRET]\n"


def test_a_vendor_token_assigned_to_a_key_is_reported_by_its_own_rule_whole() -> None:
    """`NPM_TOKEN=npm_...`: the configuration rule leaves the value to the vendor rule."""
    _, token = FAKES["npm_token"](random.Random("npmrc"))
    text = f"//registry.npmjs.org/:_authToken={token}\nNPM_TOKEN={token}\n"
    assert found(text) == [("npm_token", token), ("npm_token", token)]


def test_an_azure_storage_account_key_is_a_generic_secret() -> None:
    key = rand(random.Random("azure"), 86, B64, mixed=True) + "=="
    text = f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={key};EndpointSuffix=x"
    assert redacted(text) == text.replace(key, "[SECRET]")


def test_a_routable_gitlab_token_keeps_the_full_stop_after_it() -> None:
    assert redacted(f"Use {ROUTABLE}.") == "Use [SECRET]."


def test_a_terraform_token_redacts_the_secret_after_the_infix() -> None:
    """Alone, the rule reports the secret after ".atlasv1." (the id before it is public);
    next to a token key, the configuration rule takes the whole value first."""
    fragment, secret = FAKES["terraform_cloud_token"](random.Random("tfc"))
    text = f"Run terraform login; it stores {fragment} for you."
    assert found(text) == [("terraform_cloud_token", secret)]
    config = f'credentials "app.terraform.io" {{ token = "{fragment}" }}'
    assert redacted(config) == config.replace(fragment, "[SECRET]")


VR = random.Random("vendor near")


@pytest.mark.parametrize(
    "text",
    [
        "glpat-" + rand(VR, 19, B64URL, mixed=True),  # one character short
        "glpat-xxxxxxxxxxxxxxxxxxxx",  # the placeholder of docs and READMEs
        "glpat-EXAMPLEEXAMPLEEXAMPLE",
        "Prefix your GitLab tokens: glpat- for personal ones, gldt- for deploy tokens.",
        "hf_" + rand(VR, 33, string.ascii_letters),  # one letter short
        "hf_" + rand(VR, 34, string.ascii_letters) + "_cache",  # a longer identifier
        "hf_TokenizerConfigurationLoaderMain",  # a CamelCase name: a capital a word
        "from huggingface_hub import hf_hub_download; hf_hub_download(repo_id)",
        "npm_" + rand(VR, 36, string.ascii_letters),  # a real npm token has digits
        "npm_config_cache=/tmp/npm",
        "gsk_" + "x" * 52,
        "phc_" + rand(VR, 43, mixed=True),  # PostHog's project key: public by design
        "SK" + rand(VR, 31, HEX),  # Twilio SIDs are 32 hex digits
        "SKU-" + rand(VR, 32, HEX),
        "key-" + "a" * 32,
        "key-value store: key-" + "0123456789abcdef" * 2,  # ascending: typed, not generated
        "dapi" + rand(VR, 31, HEX),
        "pul-" + rand(VR, 40, string.ascii_lowercase),  # not hex
        "secret_" + rand(VR, 42, mixed=True),
        "secret_key_base_for_development_only",
        "SG." + rand(VR, 21, B64URL, mixed=True) + "." + rand(VR, 43, B64URL, mixed=True),
        "123456789:AB" + rand(VR, 33, B64URL, mixed=True),  # bot tokens go on with "AA"
        "at 12:30 the bot replied 1234567890",
        # The id segment must decode to digits: these letters are base64 of other bytes.
        "MTEx" + rand(VR, 20, string.ascii_lowercase) + "." + rand(VR, 6) + "." + rand(VR, 38),
        "AGE-SECRET-KEY-1" + rand(VR, 58, BECH32).lower(),  # bech32 keys are upper case
        "AGE-SECRET-KEY-1" + "Q" * 58,
        "dt0c01." + rand(VR, 24, LOWER36) + "." + rand(VR, 64, LOWER36),
        "host.atlasv1.short",
        "pypi-AgEIcHlwaS5vcmc...",
        "shpat_" + rand(VR, 31, HEX),
        "AKCp" + rand(VR, 56, mixed=True),  # a JFrog API key is 73 characters
        "Meet Mo, NOTE: MDT is Mountain Daylight Time; OTP codes expire.",
        "access_token$production$...",
        "sq0atp-your-access-token-here",
    ],
)
def test_vendor_look_alikes_and_placeholders_do_not_fire(text: str) -> None:
    assert found(text) == []


def test_prose_is_held_only_for_what_may_begin_a_vendor_token() -> None:
    """A number may be a Telegram bot id and "M" a Discord token's first letter: held until
    the next character says otherwise, and nothing else is."""
    scan = TextScan([DEFAULT], holdback=DEFAULT.max_match, adaptive=True)
    scan.feed("The build finished in 42 minutes. Ask ")
    assert scan.safe_end == scan.received
    scan.feed("M")
    assert scan.received - scan.safe_end == 1
    scan.feed("ary about it; the bot's id is 1234567890")
    assert scan.received - scan.safe_end == len("1234567890")
    scan.feed(" and the prefix is glp")
    assert scan.received - scan.safe_end == len("glp")
    scan.feed("at- or gl, which we do not share. ")
    assert scan.safe_end == scan.received
    # "key is" may tell a key ("your API key is ..."): held from the key word to the value's end.
    scan.feed("The key is")
    assert scan.received - scan.safe_end == len("key is")
    scan.feed(" plain prose. ")
    assert scan.safe_end == scan.received


@pytest.mark.parametrize(
    "value", ["Ga9RyNQD56FiCdhNUJKJXUYJ", "Xq7KLMnop8RSTuvWXYZab12c"], ids=["runs", "capitals"]
)
def test_a_generated_value_with_long_runs_is_not_taken_for_a_name(value: str) -> None:
    """Random tokens sometimes have long letter runs; a name in code has few words and at most
    one acronym. (Hypothesis found the first: it passed as a name, so it was not redacted.)"""
    findings = check_text([DEFAULT], f'client_secret = "{value}"')
    spans = [(f.label, f.start, f.end) for f in findings]
    assert spans == [("generic_secret", 17, 17 + len(value))]


@pytest.mark.parametrize(
    "name", ["HTTPSConnectionPool", "getPasswordFromEnvironment", "settings.API_TOKEN"]
)
def test_names_in_code_are_still_not_secrets(name: str) -> None:
    assert check_text([DEFAULT], f"client_secret = {name}") == []


# -- private keys in wrappers (issue 17) -----------------------------------------------------------

WRAP = random.Random("wrapped keys")
KEY_LINES = [rand(WRAP, 64, B64) for _ in range(5)] + [rand(WRAP, 22, B64) + "=="]


def _wrapped(lead: str, trail: str, begin: str = "-----BEGIN RSA PRIVATE KEY-----") -> str:
    lines = [begin, *KEY_LINES, "-----END RSA PRIVATE KEY-----"]
    return "\n".join(f"{lead}{line}{trail}" for line in lines)


@pytest.mark.parametrize(
    "text",
    [
        # Java: a string per line, joined with "+" at the start of the next line.
        'KEY = "'
        + '\\n"\n    + "'.join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES])
        + '\\n"\n    + "-----END RSA PRIVATE KEY-----\\n";',
        # JavaScript: "+" at the end of each line.
        "const key = '"
        + "\\n' +\n  '".join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES])
        + "\\n' +\n  '-----END RSA PRIVATE KEY-----';",
        # Python's implicit concatenation of a string escaped twice.
        'k = ("\\"'
        + '\\\\n"\n     "'.join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES])
        + '\\\\n"\n     "-----END RSA PRIVATE KEY-----\\"")',
        # JSON on one line.
        '{"key": "'
        + "\\n".join(["-----BEGIN RSA PRIVATE KEY-----", *KEY_LINES])
        + '\\n-----END RSA PRIVATE KEY-----\\n"}',
        # A log prefix, a build step's prefix, comments on every line.
        _wrapped("2026-04-26 12:36:01 ", ""),
        _wrapped("#6 0.245 ", ""),
        _wrapped("// ", ""),
        _wrapped("  *  ", ""),
        # Quoted line by line in a shell script, and a trailing blank.
        _wrapped('echo "', '" >> id_rsa'),
    ],
    ids=[
        "java",
        "js",
        "python-escaped-twice",
        "json",
        "log",
        "docker-log",
        "comment",
        "javadoc",
        "shell",
    ],
)
def test_a_pem_key_in_a_wrapper_is_redacted_line_by_line(text: str) -> None:
    out = redacted(text)
    assert "BEGIN RSA PRIVATE KEY" not in out
    for line in KEY_LINES:
        assert line[:16] not in out and line[-16:] not in out, (line, out)


def test_a_pem_key_without_its_end_line_stops_before_the_prose_after_it() -> None:
    text = _wrapped("2026-04-26 12:36:01 ", "").rsplit("\n", 1)[0]  # no END line
    text += "\n2026-04-26 12:36:02 Done, see https://example.com/docs/keys for more."
    out = redacted(text)
    assert all(line[:16] not in out for line in KEY_LINES)
    assert out.endswith("12:36:02 Done, see https://example.com/docs/keys for more.")


def test_a_placeholder_after_a_begin_line_is_not_a_key() -> None:
    for body in ["x" * 64, "A" * 64, "your-private-key-goes-here-" * 2]:
        assert found(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----") == []


def test_a_key_without_pem_lines_is_redacted_whole() -> None:
    key = der_key(random.Random("der"), width=76)
    text = f"<data>\n        {key.replace(chr(10), chr(10) + '        ')}\n    </data>"
    assert redacted(text) == "<data>\n        [SECRET]\n    </data>"
    # The base64 of a whole PEM block, as in a Kubernetes secret.
    block = pem(random.Random("k8s"), lines=10)
    encoded = base64.b64encode(block.encode()).decode()
    assert redacted(f"data:\n  tls.key: {encoded}\n") == "data:\n  tls.key: [SECRET]\n"


@pytest.mark.parametrize(
    "text",
    [
        # A public key and a certificate: a SEQUENCE in a SEQUENCE, not a version number.
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + rand(random.Random(60), 64, B64),
        "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ" + rand(NEAR, 40, B64),
        # The base64 of a certificate's PEM block.
        base64.b64encode(
            ("-----BEGIN CERTIFICATE-----\n" + rand(random.Random(61), 64, B64)).encode()
        ).decode(),
        # The DER's fixed start, then no key material.
        "MIIEpAIBAAKCAQEA" + "A" * 60,
    ],
)
def test_public_keys_and_certificates_in_base64_are_not_private_keys(text: str) -> None:
    assert found(text) == []


# -- configuration syntaxes and what is not a credential (issue 17) ----------------------------

CFG = rand(random.Random("cfg"), 24, ALNUM, mixed=True)


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ('API_TOKEN ?= "{}"', "generic_secret"),  # Makefile
        ('API_TOKEN ::= "{}"', "generic_secret"),
        ('$apiToken .= "{}";', "generic_secret"),  # PHP
        ("<ClickHouseToken>\n    {}\n</ClickHouseToken>", "generic_secret"),
        ("ANY_KEY={}", "generic_secret"),
        ('service_api = "{}"', "generic_secret"),
        ("auth: {}", "generic_secret"),
        ("MYSQLPASS: {}", "config_password"),
        ('if (password !== "{}") {{', "config_password"),  # a hard-coded comparison
        ("curl --user 'ci:{}' https://api.example.com", "cli_user_password"),
        ('curl -s -u "deploy:{}" https://api.example.com', "cli_user_password"),
        ('token: "s.{}"', "generic_secret"),  # a Vault token is dotted, not a name
    ],
)
def test_more_config_syntaxes_redact_the_value_alone(template: str, label: str) -> None:
    value = ("s." + CFG) if template.startswith("token") else CFG
    text = template.format(CFG)
    assert found(text) == [(label, value)], text


@pytest.mark.parametrize(
    "text",
    [
        f'LLM_SECRET_NAME = "{CFG}"',  # the key names the secret, it is not the secret
        f"credentialsId: '{CFG}'",
        f"token_url: {CFG}",
        f"api_key_file = {CFG}",
        "access_token_url='https://github.com/login/oauth/access_token'",
        'LLM_SECRET = "NEXUS-GPT4-API-KEY"',  # a kebab-case name
        "[DEBUG] org.slf4j.slf4j-api:jar:1.7.8.:compile",  # Maven coordinates
        "COMMUNICATION_API_VERSION=rc0.13.0_20230412_0712-SNAPSHOT",
        "event-bus-api: rc0.15.0_20231217_1420-SNAPSHOT",
        "db_password: 192.168.10.12",  # an address
        "curl http://127.0.0.1:5000/file --user user:pass --digest",
        "docker run -u 1000:1000 alpine",
        "git push -u origin main",
        f'publicToken = "{CFG}"',  # public by its name
        f"PUBLIC_KEY={CFG}",
        f'<input type="hidden" name="authenticity_token" value="{CFG}">',  # CSRF
        f"csrf-token={CFG}",
        "The key to success is practice, and the key point is focus.",
        "Which API, which key, which auth flow: that is the question.",
        "if password == 'hunter2': print('weak')",  # an example, not a set password
        "Authorization: Basic eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",  # base64 of JSON
    ],
)
def test_names_versions_addresses_and_shared_values_are_not_credentials(text: str) -> None:
    assert found(text) == []


def test_a_veto_still_lets_a_vendor_token_through() -> None:
    _, token = FAKES["github_token"](random.Random("veto"))
    assert found(f"PUBLIC_KEY={token}") == [("github_token", token)]
    assert found(f"csrf_token: x, api_token: {CFG}") == [("generic_secret", CFG)]


NEW_NEAR = random.Random("new vendor near")


@pytest.mark.parametrize(
    "text",
    [
        "xoxe.xoxp-1-SlackAppConfigurationAccessTokenHere",  # words, not a generated part
        "xoxe.xoxp-1-RANDOMSTRINGHERE",
        "xoxp-572370529330-573807301142-572331691188-####################",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29x",  # not the fixed start
        "ABSK" + rand(NEW_NEAR, 40, B64),  # too short for a long-term key
        "4Q~ is not a secret, nor is 8Q~short",
        rand(NEW_NEAR, 32, HEX) + "-uk1",  # not a Mailchimp data center
        "SU" + rand(NEW_NEAR, 56, B32).lower(),  # nkey seeds are upper case
        "sk-" + rand(NEW_NEAR, 32, HEX) + "x",  # longer than DeepSeek's key
        "cosmo_" + rand(NEW_NEAR, 31, HEX),
        "A" * 21 + "B" * 60,
    ],
)
def test_new_vendor_look_alikes_and_placeholders_do_not_fire(text: str) -> None:
    assert found(text) == []


def test_the_private_members_of_a_json_web_key_are_redacted() -> None:
    rng = random.Random("jwk")
    d = base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("=")
    xy = base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("=")
    ec = json.dumps({"kty": "EC", "crv": "P-256", "x": xy, "y": xy[::-1], "d": d})
    assert found(ec) == [("jwk_private_key", d)]
    # An RSA key's members are long: each is redacted whole, in pieces.
    n = base64.urlsafe_b64encode(rng.randbytes(256)).decode().rstrip("=")
    rsa = json.dumps({"kty": "RSA", "n": n, "e": "AQAB", "d": n[::-1], "p": n[:171]})
    assert redacted(rsa).count("[SECRET]") == 2 and n[::-1][:40] not in redacted(rsa)
    # The public members and other one-letter keys are not key material.
    assert found(json.dumps({"kty": "EC", "x": xy, "y": xy})) == []
    assert found('{"q": "how to cook pasta", "p": "first paragraph of the text"}') == []


def test_an_authorization_header_without_a_scheme_is_a_token_key() -> None:
    value = "5eb4223e-5008-46e5-be67-c7b8f2732305"
    assert found(f"curl --header 'Authorization: {value}'") == [("generic_secret", value)]
    # With a scheme, the scheme's own rule takes the credential after it.
    assert found(f"Authorization: Bearer {CFG}") == [("generic_secret", CFG)]


@pytest.mark.parametrize(
    "text",
    [
        "Passwort angeben?",  # prose: a question after the key word
        "apa password anda|apa password kamu",  # alternatives in a pattern
        "PyPI API token (pypi-AgEIcHlwaS5vcmc...)",  # a parenthesis opened after a key word
        "Pass stdout=PIPE and stderr=PIPE to capture them.",  # an argument
        "If the archive is large, pass force_zip64 to the writer.",
        "Do not pass client-supplied state to the runner.",
        "max_tokens=20).configurable_fields(temperature=0.5)",  # a call chain in code
        'prompt_cache_key="tenant:acme:support-v1"',  # a name of words
        'CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"',
        "account_key: AuthAzureSandboxesSandboxAzureMountAccountKeyAuthConfigAccountKeyValue",
        'publicKeyToken="1fc8b3b9a1e18e3b"',  # a .NET assembly's public key token
    ],
)
def test_prose_and_code_after_a_key_word_are_not_credentials(text: str) -> None:
    assert found(text) == []


# -- more ways to write a configuration credential (issue 17, second round) ------------------------

KIND = random.Random("kinds")
KPW = rand(KIND, 11, ALNUM + "!%*", mixed=True)  # a password someone set
KTOK = rand(KIND, 32, mixed=True)  # a generated token
SEED = rand(KIND, 16, B32)  # a TOTP seed: base32, 16 characters
B64PW = base64.b64encode(KPW.encode()).decode()


@pytest.mark.parametrize(
    ("template", "label", "value"),
    [
        # A literal fallback after an environment lookup.
        ('DB_PASSWORD = os.environ.get("DB_PASSWORD") or "{pw}"', "config_password", KPW),
        ("const secret = process.env.JWT_SECRET || '{tok}';", "generic_secret", KTOK),
        ("$pass = getenv('SMTP_PASSWORD') ?: '{pw}';", "config_password", KPW),
        ('var token = config["API_TOKEN"] ?? "{tok}";', "generic_secret", KTOK),
        # A setter or a builder called with a literal.
        ('ds.setPassword("{pw}");', "config_password", KPW),
        ("client = Client.builder().apiKey('{tok}').build()", "generic_secret", KTOK),
        # A string literal with a language's prefix, or quoted as markup quotes it.
        ("user_password = b'{pw}'", "config_password", KPW),
        ("pwd = u'{pw}'", "config_password", KPW),
        ('string connPassword = @"{pw}";', "config_password", KPW),
        ('<a href="/cb?token=&quot;{tok}&quot;">', "generic_secret", KTOK),
        ("<p>Password: &#39;{pw}&#39;</p>", "config_password", KPW),
        # Options between the command and its password.
        ("ConvertTo-SecureString -AsPlainText -Force '{pw}'", "config_password", KPW),
        ("sshpass -p '{pw}' ssh deploy@build.internal", "config_password", KPW),
        # A password told in a sentence or a note.
        ("FYI the wifi password is {pw} until Monday", "config_password", KPW),
        ("root password for db-01: {pw}", "config_password", KPW),
        ("Password of admin = {pw}", "config_password", KPW),
        ('"#define\\tPASSWORD\\t\\"{pw}\\""', "config_password", KPW),  # code in a string
        # Azure's shared access signature: the signature makes the URL a credential.
        (
            "https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig={tok}",
            "generic_secret",
            KTOK,
        ),
        # An XML element with an attribute.
        ('<Pass encoding="base64">{b64pw}</Pass>', "config_password", B64PW),
        ('<password xsi:type="xs:string">{pw}</password>', "config_password", KPW),
        # The last word of a camelCase name.
        ('"appKey": "{tok}"', "generic_secret", KTOK),
        ('private static final String hmacKey = "{tok}";', "generic_secret", KTOK),
        ("adminPass: {pw}", "config_password", KPW),
        # Typos of "password" in keys, and the word in other languages.
        ('if passwrod == "{pw}":', "config_password", KPW),
        ("db.passowrd={pw}", "config_password", KPW),
        ("senha: {pw}", "config_password", KPW),
        ("wachtwoord={pw}", "config_password", KPW),
        ('"mot_de_passe": "{pw}"', "config_password", KPW),
        ("admin_passcode = '{pw}'", "config_password", KPW),
        # Salts and keys of a framework, short key names in a define().
        ("define( 'NONCE_KEY', '{tok}' );", "generic_secret", KTOK),
        ("define('SECURE_AUTH_SALT', '{tok}');", "generic_secret", KTOK),
        ("SECURITY_PASSWORD_SALT = '{tok}'", "config_password", KTOK),
        ("salt: {tok}", "generic_secret", KTOK),
        ('$salt_value = "{tok}";', "generic_secret", KTOK),
        ("KEY2={tok}", "generic_secret", KTOK),  # numbered
        # Session cookies: the session id is the credential.
        ("Cookie: sessionid={tok}; theme=dark", "generic_secret", KTOK),
        ("Set-Cookie: _shop_session={tok}; path=/; HttpOnly", "generic_secret", KTOK),
        ("JSESSIONID={tok}", "generic_secret", KTOK),
        # A personal access token, credentials, one-time password seeds (base32).
        ("GITHUB_PAT: {tok}", "generic_secret", KTOK),
        ('creds = "{tok}"', "generic_secret", KTOK),
        ("totp_secret: {seed}", "generic_secret", SEED),
        ("MFA_SEED={seed}", "generic_secret", SEED),
    ],
)
def test_more_ways_to_write_a_credential_redact_the_value_alone(
    template: str, label: str, value: str
) -> None:
    text = template.format(pw=KPW, tok=KTOK, seed=SEED, b64pw=B64PW)
    assert found(text) == [(label, value)], text
    assert value not in redacted(text)


@pytest.mark.parametrize(
    "text",
    [
        'pw = getpass("Password: ")',  # a prompt
        "password = os.environ.get('DB_PASSWORD') or default_password",  # a name, unquoted
        "token = cache.get(key) || fetchToken()",
        "Use a password or token to sign in.",  # prose
        "ds.setPassword(password);",  # a variable
        'ds.setPassword("");',
        'keyring.get_password("system", "username")',  # a word
        "client.secret(secretName)",
        f'secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/{CFG}"',
        "token: vault:secret/data/ci#token",  # a reference
        "session = requests.Session()",  # code
        "session_id: 42",
        'session: "sess_user_profile"',  # a name
        "Session: ended at 10:42",
        "Add salt and pepper; the salt: 2 teaspoons.",
        "salted caramel, salt water: 3 cups",
        "pat: Pat Smith",
        "pat = False",
        "ConvertTo-SecureString -AsPlainText -Force $plain",
        "sshpass -p $SSH_PASS ssh deploy@host",
        'define("LOGGED_IN_KEY", "put your unique phrase here");',  # WordPress's template
        "senha: sua_senha_aqui",  # a snake_case name
        "The password is case-sensitive and the password is required.",
        "Your password is at least 12 characters long.",
        "Your password is: ********",
        "A password of 8 characters: at least one digit.",
        "password for the account: see the vault",
        "The signature is valid; sig: verified.",
        "MFA_SEED=JBSWY3DPEHPK3PXP-EXAMPLE",
        "monkey: " + KTOK,  # "key" inside a word
        "keyMap: {a: 1}",
        "primaryKey: id",
        "partitionKey: /tenantId",
        "|| pIdxKey->default_rc==0",  # code: a member and a comparison
        '<input name="password" type="password" value="">',  # a form's empty field
        "if (pwd != null && pwd.equals(expected)) {",
    ],
)
def test_fallbacks_calls_references_and_session_code_are_not_credentials(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("template", "label", "value"),
    [
        # A (user, password) pair of literals in code.
        (
            "s = smtplib.SMTP_SSL(host); s.login('alerts@example.com', '{pw}')",
            "auth_pair_password",
            KPW,
        ),
        ('auth = HTTPBasicAuth("ci", "{pw}")', "auth_pair_password", KPW),
        ('"credentials": ["svc-backup", "{pw}"]', "auth_pair_password", KPW),
        # The .NET and Java credential objects, a database connect call's third literal.
        ('var cred = new NetworkCredential("svc", "{pw}");', "auth_pair_password", KPW),
        ('new PasswordAuthentication("svc", "{pw}".toCharArray())', "auth_pair_password", KPW),
        ("$db = new PDO($dsn, 'app', '{pw}');", "connect_call_password", KPW),
        (
            'conn = pymysql.connect("db.internal", "app", "{pw}", "shop")',
            "connect_call_password",
            KPW,
        ),
        # Oracle connect strings.
        ("jdbc:oracle:thin:app_user/{pw}@db.internal:1521:ORCL", "oracle_connect_password", KPW),
        ("SQL> CONNECT system/{pw}@xe", "oracle_connect_password", KPW),
        # A password against its option, or after the user of `net user`.
        ("mysql -h db -u root -p{pw} shop < dump.sql", "cli_password_option", KPW),
        ("net user svc_backup {pw} /add /y", "cli_password_option", KPW),
        # A URL-encoded query string inside another URL.
        (
            "redirect=https%3A%2F%2Fapp%2Fcb%3Fapi_key%3D{tok}%26v%3D2",
            "urlencoded_credential",
            KTOK,
        ),
        ("return_to=%2Flogin%3Fuser%3Dann%26password%3D{pw}", "urlencoded_credential", KPW),
        # Framework password hashes.
        (
            "$argon2id$v=19$m=65536,t=3,p=4$" + rand(KIND, 22, B64) + "$" + rand(KIND, 43, B64),
            "password_hash",
            None,
        ),
        (
            "pbkdf2_sha256$600000$" + rand(KIND, 22) + "$" + rand(KIND, 43, B64) + "=",
            "password_hash",
            None,
        ),
        (
            "$pbkdf2-sha256$29000$"
            + rand(KIND, 22, ALNUM + "./")
            + "$"
            + rand(KIND, 43, ALNUM + "./"),
            "password_hash",
            None,
        ),
        (
            "$scrypt$ln=16,r=8,p=1$" + rand(KIND, 22, B64) + "$" + rand(KIND, 43, B64),
            "password_hash",
            None,
        ),
    ],
)
def test_credential_shapes_of_code_commands_and_hashes(
    template: str, label: str, value: str | None
) -> None:
    text = template.format(pw=KPW, tok=KTOK) if value else template
    if value is None:  # a hash: the whole of it, from its identifier on
        value = text[text.index("$") if text.startswith("$") else 0 :]
    assert found(text) == [(label, value)], text
    assert value not in redacted(text)


@pytest.mark.parametrize(
    "text",
    [
        "smtp.login(user, password)",  # names
        'client.login("admin", "admin")',  # the user's name again
        'auth=("user", "password")',  # a demo
        "credentials: ['read', 'write']",  # words
        "auth('GET', '/api/v1/items')",  # a path
        "connect to the database/cache@startup",  # prose
        "sqlplus scott/tiger@orcl",  # the classic demo: a word
        "db.connect(host, user, password)",  # names
        'socket.connect(("localhost", 8080))',
        'new mysqli("localhost", "root", "", "test")',  # no password
        'new mysqli("localhost", "root", "root", "test")',  # the user's name again
        "mysql -u root -p shop",  # asks for the password
        "mysql --port 3306 -p$DB_PASS",  # a variable
        "net user alice /delete",
        "net user alice *",  # asks for the password
        "The net user base grew again this year.",
        "next=%2Fapi%3Ftoken%3D%24%7BTOKEN%7D",  # ${TOKEN}, encoded
        "q=password%3Dreset",  # a word
        "It costs $5 or $6; $argon2id$ is a prefix, not a hash.",
    ],
)
def test_code_commands_and_encoded_urls_without_a_credential_do_not_fire(text: str) -> None:
    assert found(text) == []


# -- keys and credentials in more wrappers and encodings (issue 17, second round) ---------------


def test_a_pgp_key_with_armor_headers_in_a_comment_block_is_redacted_whole() -> None:
    lines = [rand(WRAP, 64, B64) for _ in range(6)] + [
        rand(WRAP, 40, B64),
        "=" + rand(WRAP, 4, B64),
    ]
    block = [
        "-----BEGIN PGP PRIVATE KEY BLOCK-----",
        "Version: GnuPG v2.2.40 (GNU/Linux)",
        "Comment: build signing key",
        "",
        *lines,
        "-----END PGP PRIVATE KEY BLOCK-----",
    ]
    text = "/*\n" + "\n".join(f" *  {line}" if line else "" for line in block) + "\n */\nend"
    assert redacted(text) == "/*\n *  [SECRET]\n */\nend"


def test_an_encrypted_key_quoted_line_by_line_with_its_headers_is_redacted() -> None:
    rows = ["-----BEGIN RSA PRIVATE KEY-----", "Proc-Type: 4,ENCRYPTED"]
    rows += ["DEK-Info: AES-128-CBC," + rand(WRAP, 32, HEXU), "", *KEY_LINES]
    text = (
        "key = (\n"
        + "\n".join(f'    "{row}\\n"' for row in rows)
        + '\n    "-----END RSA PRIVATE KEY-----")'
    )
    out = redacted(text)
    assert "ENCRYPTED" not in out and all(line[:16] not in out for line in KEY_LINES), out


def test_the_base64_of_a_cut_begin_line_is_still_a_private_key() -> None:
    head = base64.b64encode(b"-----BEGIN PRIVATE " + WRAP.randbytes(60)).decode()
    assert (
        found(f'pkey = ("{head}"') == [("private_key_base64", head[:60])]
        or redacted(f'pkey = ("{head}"') == 'pkey = ("[SECRET]"'
    )
    public = base64.b64encode(b"-----BEGIN PUBLIC KEY-----\n" + WRAP.randbytes(60)).decode()
    assert found(public) == []


def _b64json(data: object, indent: int | None = None, *, compact: bool = False) -> str:
    separators = (",", ":") if compact else None
    text = json.dumps(data, indent=indent, separators=separators)
    return base64.b64encode(text.encode()).decode()


ENCODED = random.Random("encoded json")


@pytest.mark.parametrize(
    "blob",
    [
        # A cloud service account file, as in a CI variable or a Kubernetes secret.
        _b64json(
            {
                "type": "service_account",
                "project_id": "shop-prod",
                "private_key_id": rand(ENCODED, 40, HEX),
                "private_key": "-----BEGIN PRIVATE KEY-----\n" + rand(ENCODED, 64, B64),
            },
            indent=2,
        ),
        # A JSON Web Key set: its private member "d".
        _b64json(
            [{"kty": "EC", "crv": "P-256", "d": rand(ENCODED, 43, B64URL, mixed=True)}], indent=4
        ),
        # A Docker config's auths (.dockerconfigjson).
        _b64json(
            {
                "auths": {
                    "registry.example.com": {
                        "auth": base64.b64encode(f"ci:{KPW}".encode()).decode()
                    }
                }
            }
        ),
        # A Grafana API key.
        _b64json({"k": rand(ENCODED, 32, mixed=True), "n": "ci", "id": 7}, compact=True),
        # Credentials in compact JSON.
        _b64json({"user": "svc", "password": KPW}),
    ],
    ids=["service-account", "jwks", "dockerconfigjson", "grafana", "password"],
)
def test_the_base64_of_json_holding_a_credential_is_redacted_whole(blob: str) -> None:
    text = f"data:\n  config: {blob}\n"
    assert redacted(text) == "data:\n  config: [SECRET]\n", blob


@pytest.mark.parametrize(
    "blob",
    [
        _b64json({"alg": "HS256", "typ": "JWT"}),  # a JWT header alone
        _b64json({"page": 3, "cursor": "after:1042", "token": "next"}),  # a pagination cursor
        _b64json({"kty": "EC", "crv": "P-256", "x": rand(ENCODED, 43, B64URL)}, indent=2),
        _b64json(
            {
                "auths": {
                    "registry.example.com": {"auth": base64.b64encode(b"user:password").decode()}
                }
            }
        ),
        _b64json({"user": "svc", "password": "changeme-later"}),
    ],
)
def test_the_base64_of_json_without_a_credential_does_not_fire(blob: str) -> None:
    assert found(blob) == []


def test_a_jira_personal_access_token_is_found_where_it_is_written() -> None:
    pat = base64.b64encode(b"926607655526:" + ENCODED.randbytes(20)).decode()
    assert found(f"https://jira.example.com/rest/api/2/token/{pat}\n") == [
        ("jira_confluence_pat", pat)
    ]
    assert found(f"Authorization: Bearer {pat}") == [("jira_confluence_pat", pat)]
    # An id of a few digits is not one; neither are digits with no random bytes after.
    assert found(base64.b64encode(b"0001:" + ENCODED.randbytes(28)).decode()) == []
    assert found(base64.b64encode(b"926607655526:" + b"0" * 20).decode()) == []


def test_an_aws_key_id_with_any_digit_is_found() -> None:
    key = "AKIA" + rand(ENCODED, 16, string.ascii_uppercase + "0189")
    assert found(f'"AccessKeyId" : "{key}",') == [("aws_access_key_id", key)]
    assert found("AKIA0000000000000000") == []  # no generated part


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.id)
def test_every_rule_can_tell_where_a_match_may_still_form(rule: Any) -> None:
    """The adaptive hold-back needs each rule's pattern of prefixes: a construct that
    ``prefix_pattern`` does not translate would turn it off for the whole shield."""
    assert prefix_pattern(rule.prefix) is not None
    assert prefix_pattern(rule.prefix + rule.body) is not None
