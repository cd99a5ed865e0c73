"""``secrets``: what a black-box review of the shield found (issue 17), as kinds: code and
documents that are no credential, and credentials written in ways people write them. Every
value here is made up for the test."""

from __future__ import annotations

import pytest

from shields.builtin.secrets import SecretsShield, SecretsSpec
from shields.scan import TextScan, check_text

SHIELD = SecretsShield(SecretsSpec(id="sec", action="redact"))  # type: ignore[call-arg]


def found(text: str) -> list[tuple[str, str]]:
    return [(f.label, text[f.start : f.end]) for f in check_text([SHIELD], text)]


def streamed_in_two(text: str) -> None:
    """Split in two at every point, the stream finds exactly what the whole text has."""
    whole = [(f.label, f.start, f.end) for f in check_text([SHIELD], text)]
    for cut in range(1, len(text)):
        scan = TextScan([SHIELD], holdback=SHIELD.max_match)
        got = scan.feed(text[:cut]) + scan.feed(text[cut:]) + scan.finish()
        assert [(f.label, f.start, f.end) for f in got] == whole, cut


@pytest.mark.parametrize(
    "text",
    [
        # Code that reads or derives a password: calls through `::`, PowerShell cmdlets.
        "$password = Read-Host -AsSecureString 'Password'",
        "$secure = ConvertTo-SecureString $plain -AsPlainText -Force",
        "$password = Get-Content -Path C:\\secrets\\pw.txt",
        "'password'        => Hash::make($request->password),",
        'let password = std::env::var("DB_PASSWORD").expect("set it");',
        'let password = rpassword::prompt_password("Password: ")?;',
        'char[] password = console.readPassword("Password: ");',
        "$password = $_POST['password'] ?? '';",
        # Settings about a password: its hashing, strength, confirmation, history.
        'PASSWORD_HASH_ALGO = "argon2id"',
        "passwordStrength: 'medium'",
        "password_confirmation: confirmation",
        '{"password_last_changed": "2024-03-01T10:00:00Z"}',
        'static final String SECRET_KEY_ALGORITHM\n        = "PBKDF2WithHmacSHA256";',
        "hmacKey: 'X-Hub-Signature-256',",
        '"api_key_hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
        # Ids under key names: a cache's, a queue's, a table's keys.
        '{"idempotency_key": "3f2c7a9e-5b1d-4e8f-a6c2-9d0b1e7f4a35"}',
        '{"cache_key": "5d41402abc4b2a76b9719d911017c592"}',
        "{'pkey': 'USER#1042', 'skey': 'PROFILE#main'}",
        # References and templates.
        "mongodb+srv://<username>:<password>@cluster0.ab1cd.mongodb.net/?retryWrites=true&w=1",
        '"password": "@Microsoft.KeyVault(VaultName=myvault;SecretName=dbpw)"',
        "password = \"#{ENV.fetch('DB_PASSWORD')}\"",
        "'password' => '@@DB_PASSWORD@@',",
        'password: "@vault(secret/db#password)"',
        'url = f"postgresql://{user}:{password}@{host}:{port}/{db}"',
        # Words in other languages and field words.
        "Senha: mínimo de oito caracteres.",
        "Password: Mínimo ocho caracteres.",
        "i18n:\n  password: contraseña",
        "sv:\n  password: lösenord\n",
        "password: writeonly\n",
        "password: deprecated\n",
        # A URL's query goes on after "&": the next parameter is not the password's.
        "see https://example.com/login?PASSWORD=&user=app",
        # Demo words with little else: stand-ins of examples and test data.
        '"Password": "generatedwebdavpassword1"',
        'MasterUserPassword: "mynewpassword"',
        'NOPASSWORD = "no-password-required"',
    ],
)
def test_code_settings_references_and_words_are_no_credentials(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # wp-config.php's own layout: values aligned after the comma.
        (
            "define( 'AUTH_KEY',         'q7#Lm2@Xv9!Rt4$Wk8^Zp3&Nc6*Hb1%J' );",
            "q7#Lm2@Xv9!Rt4$Wk8^Zp3&Nc6*Hb1%J",
        ),
        ("define( 'DB_PASSWORD',      'Maple&Syrup#77' );", "Maple&Syrup#77"),
        # A chosen password that starts with a symbol.
        ("password: '!Qaz2wsx'", "!Qaz2wsx"),
        ('{"password": "*Starfish99"}', "*Starfish99"),
        ('db:\n  password: "#hashtagLife2"', "#hashtagLife2"),
        # Demo words inside a password someone chose.
        ('DB_PASSWORD="Password123!"', "Password123!"),
        ('db_password = "Tf!Secret-2024"', "Tf!Secret-2024"),
        ('{"password": "MySecret#42"}', "MySecret#42"),
        # URL passwords holding "@" twice or a "#".
        ("postgresql://app:p@ss@w0rd@db:5432/app", "p@ss@w0rd"),
        ("DATABASE_URL=postgres://app:Wint3r#Is#Coming@pg.internal:5432/app", "Wint3r#Is#Coming"),
        # Prose that tells a password.
        ("The password for the VPN is Vpn#Access22", "Vpn#Access22"),
        ("I changed the root password to Rosebud!1987 yesterday", "Rosebud!1987"),
        ("mein Passwort ist Gr0ssV@ter7", "Gr0ssV@ter7"),
        # Wi-Fi, Cisco, shell history, a value on the line after "=".
        ('network={\n    ssid="home"\n    psk="Lemonade-Stand-9"\n}', "Lemonade-Stand-9"),
        ("username admin privilege 15 password 0 Cisc0Adm!n", "Cisc0Adm!n"),
        ("echo 'Hunter2!Hunter2' | sudo -S apt-get update", "Hunter2!Hunter2"),
        ("RUN echo 'bob:Chpass!22' | chpasswd", "Chpass!22"),
        ('password =\n    "Wrapped-Line-55"', "Wrapped-Line-55"),
        ("vncpass=Vnc4Remote9", "Vnc4Remote9"),
        # An environment file's unquoted password holding "&", whole.
        ("DB_USER=app\nDB_PASSWORD=Tr0ub4dor&3\nDB_HOST=db\n", "Tr0ub4dor&3"),
        ("export SMTP_PASS=Fluffy&Whiskers9 # mail", "Fluffy&Whiskers9"),
        # YAML words with a comment after them, and in a file a tool read (escaped lines).
        ("db:\n  password: sunshine   # prod\n", "sunshine"),
        ('{"content": "spring:\\n  datasource:\\n    password: sunshine\\n"}', "sunshine"),
    ],
)
def test_credentials_as_people_write_them_are_redacted_whole(text: str, secret: str) -> None:
    got = found(text)
    assert "".join(value for _, value in got) == secret, got
    streamed_in_two(text)
