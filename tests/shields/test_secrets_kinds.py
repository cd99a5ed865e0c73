"""``secrets``: kinds of credential text added for issue 17 (dev half of CredSweeper's samples),
each with benign look-alikes that must stay clean.

UUIDs next to a key name, defaults of environment lookups, name/value pairs, Ruby's ``||=``,
servers' password directives, short generated values, tokens inside terminal color codes and
GitHub tokens that wrap a JWT. Every value here is made up (random ones come from a seeded
generator at test time).
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from shields.builtin.secrets import SecretsShield, SecretsSpec
from shields.scan import TextScan, check_text, merge_redactions, redact

ALNUM = string.ascii_letters + string.digits
RNG = random.Random("issue-17-kinds")


def rand(n: int, alphabet: str = ALNUM) -> str:
    chars = [RNG.choice(alphabet) for _ in range(n)]
    chars[:3] = [RNG.choice("ABCDEFGH"), RNG.choice("jkmnpq"), RNG.choice("79")]
    return "".join(chars)


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


SHIELD = SecretsShield(SecretsSpec(id="sec", action="redact"))  # type: ignore[call-arg]


def found(text: str) -> list[tuple[str, str]]:
    return [(f.label, text[f.start : f.end]) for f in check_text([SHIELD], text)]


def redacted(text: str) -> str:
    return redact(text, 0, merge_redactions(check_text([SHIELD], text)))


def streamed_everywhere(text: str) -> None:
    """Split in two at every point, the stream finds exactly what the whole text has."""
    whole = [(f.label, f.start, f.end) for f in check_text([SHIELD], text)]
    for cut in range(1, len(text)):
        scan = TextScan([SHIELD], holdback=SHIELD.max_match)
        got = scan.feed(text[:cut]) + scan.feed(text[cut:]) + scan.finish()
        assert [(f.label, f.start, f.end) for f in got] == whole, cut


# -- UUIDs ---------------------------------------------------------------------------------------

# A UUID whose characters repeat a lot: 3.3 bits each, under the threshold of other values.
PLAIN_UUID = "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"


@pytest.mark.parametrize(
    "template",
    [
        "X-API-Key: {}",
        'curl -H "Authorization: Bearer {}" https://api.example.net',
        '"client_secret": "{}"',
        "license_key: {}",
    ],
)
def test_a_uuid_next_to_a_key_name_is_a_secret(template: str) -> None:
    text = template.format(PLAIN_UUID)
    assert found(text) == [("generic_secret", PLAIN_UUID)]
    assert redacted(text) == template.format("[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        f"{PLAIN_UUID} # a bare id",
        f"The request {PLAIN_UUID} failed twice.",
        f'request_id = "{PLAIN_UUID}"',
        f"session uuid {PLAIN_UUID} was logged",
        "token: 00000000-0000-0000-0000-000000000000",
        "api_key = 12345678-ABCD-ABCD-ABCD-1234567890AB",
    ],
)
def test_a_uuid_without_a_key_name_or_made_by_hand_is_not(text: str) -> None:
    assert found(text) == []


# -- environment lookups, name/value pairs, ||= ---------------------------------------------------


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ('if SECRET := getenv("CONF", "{}"):', "generic_secret"),
        ('db_pass = os.getenv("DB", "{}")', "config_password"),
        ("password = ENV.fetch('X', '{}')", "config_password"),
        ("'api_key' => env('SVC', '{}'),", "generic_secret"),
        ("ENV['SECRET_KEY_BASE'] ||= '{}'", "generic_secret"),
        ('  - name: DB_PASSWORD\n    value: "{}"', "config_password"),
        ('{{"name": "api_key", "value": "{}"}}', "generic_secret"),
    ],
)
def test_defaults_pairs_and_or_assignments_redact_the_value_alone(
    template: str, label: str
) -> None:
    value = rand(24)
    text = template.format(value)
    assert found(text) == [(label, value)]
    assert redacted(text) == template.format("[SECRET]")


@pytest.mark.parametrize(
    "text",
    [
        'password = os.getenv("DB_PASSWORD", "")',
        'password = os.getenv("DB_PASSWORD", "changeme")',
        'token = os.getenv("TOKEN", None)',
        "secret = os.getenv('NAME', default_secret)",
        'SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY")',
        "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: db, key: pw}",
        '  - name: DB_PASSWORD\n    value: "${DB_PASSWORD}"',
        '{"name": "api_key", "value": "<your key>"}',
        '{"name": "password", "value": ""}',
        "ENV['SECRET_KEY_BASE'] ||= generate_secret",
    ],
)
def test_lookups_without_a_literal_and_placeholders_are_not_credentials(text: str) -> None:
    assert found(text) == []


# -- servers' password directives ------------------------------------------------------------------


@pytest.mark.parametrize("template", ["requirepass {}", "masterauth {}", "rootpw {}", "bindpw {}"])
def test_server_password_directives(template: str) -> None:
    value = rand(14)
    assert found(template.format(value)) == [("config_password", value)]


@pytest.mark.parametrize(
    "text",
    [
        "requirepass yes",
        "Set requirepass in redis.conf and restart the server.",
        "masterauth <master-password>",
        "rootpw {SSHA}",
    ],
)
def test_server_directives_without_a_password_do_not_fire(text: str) -> None:
    assert found(text) == []


# -- short generated values ------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["Qw7rT2yU9pL", "aZ3kR9pQ", "x8K#q2Lm9w"])
def test_a_short_generated_value_next_to_a_token_key_is_a_secret(value: str) -> None:
    # Under 12 characters no value reaches 3.5 bits a character: all but one different and of
    # three kinds is what a generated one looks like.
    assert found(f'secret = "{value}"') == [("generic_secret", value)]


@pytest.mark.parametrize(
    "value",
    [
        "AbCdEF123",
        "Pass123x",
        "Hello123",
        "GEHEIMNIS",
        "qwerty12",
        "Ctrl+Shift",
        "Ctrl+Shift+F5",
        "xY7xY7xY7",
    ],
)
def test_short_typed_values_next_to_a_token_key_are_not(value: str) -> None:
    assert found(f'secret = "{value}"') == []


# -- terminal color codes --------------------------------------------------------------------------


def test_a_token_inside_terminal_color_codes_is_found_and_the_codes_stay() -> None:
    token = "ghp_" + rand(36)
    text = f"$ gh auth token\n\x1b[1;32m{token}\x1b[0m\n"
    assert found(text) == [("github_token", token)]
    assert redacted(text) == "$ gh auth token\n\x1b[1;32m[SECRET]\x1b[0m\n"


def test_a_stream_cut_inside_a_color_code_agrees_with_the_whole_text() -> None:
    token = "sk-" + "".join(RNG.choice("0123456789abcdef") for _ in range(32))
    text = f"key: \x1b[93m{token}\x1b[0m and \x1b[38;5;196mghp_{rand(36)}\x1b[0m done"
    assert [label for label, _ in found(text)] == ["deepseek_api_key", "github_token"]
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        "\x1b[32mINFO\x1b[0m loaded 12 tokens from the cache",
        "\x1b[1;31merror\x1b[0m: the sk-learn pipeline failed",
        "\x1b]0;window title\x07 \x1b[K done",
        "a lone \x1b escape and a [93m bracket",
    ],
)
def test_colored_prose_is_not_a_secret(text: str) -> None:
    assert found(text) == []
    streamed_everywhere(text)


# -- GitHub tokens that wrap a JWT -----------------------------------------------------------------


def test_a_github_token_wrapping_a_jwt_is_redacted_whole() -> None:
    token = (
        "ghs_20260523_"
        + b64url({"alg": "RS256", "typ": "JWT"})
        + "."
        + b64url({"iat": 1792521450, "iss": "4242"})
        + "."
        + rand(43)
    )
    text = f"GITHUB_TOKEN: {token}. Then push."
    assert {label for label, _ in found(text)} == {"github_jwt_token"}
    assert redacted(text) == "GITHUB_TOKEN: [SECRET]. Then push."


@pytest.mark.parametrize(
    "text",
    [
        "ghs_20260523_eyJub3RhIGhlYWRlcg.eyJ0aGlz",  # the header is no JOSE header
        "the ghs_ prefix marks an installation token",
        "ghs_20260523_ and nothing after it",
    ],
)
def test_github_look_alikes_do_not_fire(text: str) -> None:
    assert found(text) == []


# -- .pgpass lines ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "db.internal:5432:shop:app:{}\n",
        "*:*:*:replicator:{}",
        "10.0.0.5:6432:*:postgres:{}\r\nlocalhost:5432:*:app:other",
    ],
)
def test_a_pgpass_line_redacts_the_password_alone(template: str) -> None:
    value = rand(16)
    text = template.format(value)
    assert ("pgpass_password", value) in found(text)
    assert "[SECRET]" in redacted(text) and value not in redacted(text)


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-01 10:15:30:INFO:worker42\n",
        "db.internal:5432:shop:app:*\n",
        "db.internal:5432:shop:app:app\n",
        "db.internal:5432:shop:app:changeme\n",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "fe80:0000:0000:0000:0202:b3ff:fe1e:8329\n",
        "Meet at 10:30: bring the slides and the laptop.\n",
        "db.internal:5432:shop:app:Zx8Kq2Lm9w and more words on the line",
    ],
)
def test_colon_lines_without_a_password_field_do_not_fire(text: str) -> None:
    assert found(text) == []


# -- passwords that are words; key and value as sibling elements ---------------------------------


@pytest.mark.parametrize(
    "template",
    [
        'password = "{}"',  # Python
        '{{"password": "{}"}}',  # JSON
        "$db_pass = '{}';",  # PHP
        "'password' => '{}',",  # PHP array
        "DB_PASSWORD='{}'",  # .env, quoted
        "<key>Password</key>\n\t<string>{}</string>",  # a property list
        "<entry>\n  <key>business.password</key>\n  <value>{}</value>\n</entry>",
        "mysql://admin:{}@db.internal:3306/shop",  # a URL's user information
    ],
)
def test_a_lower_case_word_set_as_a_password_is_one(template: str) -> None:
    text = template.format("sunshine")
    assert [value for _, value in found(text)] == ["sunshine"]
    assert "sunshine" not in redacted(text)
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        'BasicAuth = namedtuple("BasicAuth", ["login", "password", "encoding"])',  # a list
        "Pass `snapshot` to boot from a saved sandbox.",  # a code span in prose
        "password = sunshine_value",  # unquoted: a name in code
        '"password": "Password",',  # a capitalized label
        '"password": "required",',  # a schema's word
        "'password' => 'required|string|min:8|confirmed',",  # a validation rule list
        '"password": "passwort",',  # the word itself, another language's
        'password = "short"',  # under six letters
        "<key>Password</key><string>Password</string>",
        "<key>password</key>\n<value></value>",
        "https://user:pass@example.com",  # a placeholder pair
        "https://user:password@example.com",
    ],
)
def test_words_that_name_or_describe_a_password_are_not_one(text: str) -> None:
    assert found(text) == []


def test_the_longer_shopify_tokens_with_letters_are_found() -> None:
    token = "shpat_" + rand(38)
    assert found(f"SHOPIFY_TOKEN={token}") == [("shopify_token", token)]
    assert found("shpat_access_token_for_the_store_app") == []


@pytest.mark.parametrize("value", ["abuser123456", "Summer123456", "qwerty123abc"])
def test_a_chosen_password_with_a_counted_run_is_one(value: str) -> None:
    assert found(f"password = '{value}'") == [("config_password", value)]


@pytest.mark.parametrize("value", ["abcdef12", "x1234567", "123456789"])
def test_a_counted_run_with_little_beside_it_is_a_placeholder(value: str) -> None:
    assert found(f"password = '{value}'") == []


def test_a_kubernetes_bootstrap_token_next_to_a_token_key_is_a_secret() -> None:
    token = "be8dfd." + "da8a689a46edc282"
    assert found(f'BOOTSTRAP_TOKEN: "{token}"') == [("generic_secret", token)]
    assert found(f"kubeadm join 10.0.0.5:6443 --token {token}") == [("generic_secret", token)]
    assert found("token: abcdef.0123456789abcdef") == []  # kubeadm's documented example
    assert found("token: docker.composeframework") == []  # no digit: names


@pytest.mark.parametrize(
    ("rule", "token"),
    [
        ("doppler_token", "dp.st.dev." + rand(43)),  # a Doppler service token names its config
        ("new_relic_key", "NRIQ-" + rand(32)),  # a New Relic query key
        ("adobe_client_secret", "p8e-" + rand(14) + "-" + rand(17)),  # with a hyphen
        ("twitch_stream_key", "live_126031192_" + rand(30)),  # a Twitch stream key
    ],
)
def test_vendor_token_shapes_from_other_scanners_examples(rule: str, token: str) -> None:
    assert found(f"sent {token} by mistake") == [(rule, token)]
    streamed_everywhere(f"sent {token}\n")


def test_a_twitch_path_segment_is_not_a_stream_key() -> None:
    assert found("see https://example.com/live_12345678_stream for more") == []


def test_prose_that_tells_a_key_gives_it_away() -> None:
    key = "2afddb813193eb9d3b5bd99bf5d834cd"
    assert found(f"Your API2CART key is {key}, which you keep.") == [("generic_secret", key)]
    assert found("The key is important; the primary key is user_id_column.") == []


@pytest.mark.parametrize("text", ["MYSQL_PASSWORD=wordpress\n", "export PGPASSWORD=sunshine\n"])
def test_an_environment_file_word_password_is_one(text: str) -> None:
    value = text.strip().rsplit("=", 1)[1]
    assert found(text) == [("config_password", value)]


@pytest.mark.parametrize(
    "text",
    ["PASSWORD = request\n", "call it with password=sunshine_var\n", "PASSWORD=settings\n"],
)
def test_unquoted_words_in_code_are_not_environment_passwords(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "template",
    [
        '  fbApiKey:            "{}",\n',  # YAML and JS objects aligned in a column
        "    'password'        => '{}',\n",  # PHP and Ruby hashes
        "$mail->Password      = '{}';\n",
        "db_password\t\t\t= {}\n",  # INI aligned with tabs
    ],
)
def test_values_aligned_in_a_column_are_read(template: str) -> None:
    value = rand(20)
    text = template.format(value)
    assert [v for _, v in found(text)] == [value]
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        "Password                 Last changed\n",  # a table's header, no separator
        "Password:                never expires\n",  # a word
        "api_key                  = os.environ['API_KEY']\n",
    ],
)
def test_aligned_columns_without_a_value_stay_clean(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "value",
    [
        # Keys as Django's startproject draws them (letters, digits and `!@#$%^&*(-_=+)`),
        # made up here: symbols first, and `%(`, `$(` inside (`$(` and a letter is a shell command).
        "%(^+=gr@cu@v9-v7ulhbk2s3!w&39w4+n3*k*$_du9e^cmago!",
        "!k7^b2@q9#w_x(m4)z+e8=r1&t6*y3-u5%i0$o9p2^a7@s4!d",
        "$r^cf%&ex!b6h-r&i*!scr3mk!%!_x0wfs_ya-imy+=vdx!p0q",
        "&x*n3=p$(8k)q!w2@e7^r4%t9#y1_u6-i5+o0z2*c4&v6!b8m",
        "django-insecure-_du9e^cmago!%(^+=gr@cu@v9-v7ulhbk2s3!w&39w4",
    ],
)
def test_a_generated_key_with_symbols_is_no_template(value: str) -> None:
    """A symbol first, or `%(` and `$(` inside, read as a reference or a template only when a
    name follows: a generated key draws them anywhere. (A key that happens to hold what reads
    as code, `==`, `&&`, `->`, `()` or `%s`, is still taken for code.)"""
    text = f"SECRET_KEY = '{value}'\n"
    assert "".join(v for _, v in found(text)) == value
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        "password = '%(db_password)s'\n",
        "password = '$(cat /run/secrets/db)'\n",
        "password: *default_password\n",
        "password: !vault\n",
        "password = '$HOME/$USER'\n",
        "You can pass *codec_errors* to control how errors are handled.\n",
        "pass **None** to disable it\n",
    ],
)
def test_templates_references_and_emphasis_stay_placeholders(text: str) -> None:
    assert found(text) == []


def test_a_url_password_holding_an_at_sign_is_redacted_whole() -> None:
    password = "bria@" + rand(9)
    text = f"MONGO_URL=mongodb+srv://app:{password}@cluster0.ab12cd.mongodb.net/test\n"
    assert found(text) == [("url_credentials", password)]
    streamed_everywhere(text)
    # The host's "@" ends a plain password, whatever follows the URL.
    plain = rand(12)
    text = f"postgres://app:{plain}@db.example.com:5432/app, mail admin@example.com\n"
    assert found(text) == [("url_credentials", plain)]


@pytest.mark.parametrize(
    "text",
    [
        '"NextToken": "9d624e0c-388b-4862-a31e-a85c64fc1d4a"',
        'nextPageToken = "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA3"',
        '"continuationToken": "eyJsYXN0IjoiMTIzNDUiLCJwYWdlIjoyfQ3x"',
        '"ChangeToken": "abcd1234-57a8-4cd2-a8b4-0b1d2c3e4f5a"',
        '"LockToken":"447e55ac-2396-4c6d-b9f9-86b67c17f8b5"',
        '"IdempotencyToken": "527c5358-2a1a-4b9e-b1b9-7293b0ddff42"',
        '"S3ObjectKey": "pipelines/app-build_linux-x64.zip"',
        "<dsig:XPath>/env:body/child::b:foo[@att1 != 'c:val']</dsig:XPath>",
    ],
)
def test_cursors_file_keys_and_xpath_are_not_secrets(text: str) -> None:
    """An API's paging, idempotency and lock tokens pass through an agent's tool results and
    must reach the next call unchanged; an object's key names a file."""
    assert found(text) == []


def test_a_real_token_next_to_a_cursor_is_still_found() -> None:
    token = "ghp_" + rand(36)
    client = rand(32)
    text = f'{{"NextToken": "{token}", "client_token": "{client}"}}'
    assert found(text) == [("github_token", token), ("generic_secret", client)]


@pytest.mark.parametrize(
    "template",
    [
        '    static final String ACCOUNT_KEY\n            = "{}";\n',  # Java's formatter
        "AzureCleanup.exe -storagename prodbackups -storagekey {} -container sql\n",
        "SHAREDKEY: {}\n",
    ],
)
def test_more_key_names_and_a_value_on_the_next_line(template: str) -> None:
    value = rand(40)
    text = template.format(value)
    assert found(text) == [("generic_secret", value)]
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        '    static final String ACCOUNT_KEY\n            = System.getenv("ACCOUNT_KEY");\n',
        "the monkey = banana\n",
        "sskey = 42\n",
    ],
)
def test_next_line_references_and_words_ending_in_key_stay_clean(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "text",
    ["$dbpass = 'Wq7rTz9kLm';\n", "smtppass: Wq7rTz9kLm\n", "$ftppass='Wq7rTz9kLm';\n"],
)
def test_a_password_key_glued_to_what_it_is_for(text: str) -> None:
    assert found(text) == [("config_password", "Wq7rTz9kLm")]


@pytest.mark.parametrize(
    "text",
    [
        "bypass = 'Wq7rTz9kLm'\n",
        "ProxyPass /app http://backend:8080/app\n",
        "the compass: Wq7rTz9kLm\n",
    ],
)
def test_words_ending_in_pass_are_no_password_keys(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "database:\n  user: app\n  password: sunshine\n  host: db\n",
        "services:\n  db:\n    environment:\n      MYSQL_PASSWORD: wordpress\n",
        "environment:\n  - POSTGRES_ROOT_PASSWORD: letmein\n",
    ],
)
def test_a_yaml_plain_word_that_ends_its_line_is_a_password(text: str) -> None:
    word = text.split("PASSWORD: " if "PASSWORD" in text else "password: ")[1].split("\n")[0]
    assert found(text) == [("yaml_word_password", word)]
    streamed_everywhere(text)


@pytest.mark.parametrize(
    "text",
    [
        "The secret of good passwords: entropy.\n",  # plural, prose
        "Password: incorrect\n",  # a label
        "password: sunshine and moonlight\n",  # the line goes on: prose
        "password: required\n",  # a field's description
        "password: changeme\n",  # a placeholder
        "const options = {password: userpass, user}\n",  # a variable
    ],
)
def test_words_after_a_password_label_elsewhere_are_not_passwords(text: str) -> None:
    assert found(text) == []


@pytest.mark.parametrize("text", ["The build finished", "hello world", "see the results"])
def test_a_word_in_prose_is_not_held_as_the_start_of_a_key(text: str) -> None:
    """The keys' prefixes start at their own words: one that could begin with any word
    (`[a-z_]*password:`) would hold the last word of every streamed delta back."""
    scan = TextScan([SHIELD], holdback=SHIELD.max_match, adaptive=True)
    scan.feed(text)
    assert scan.received - scan.safe_end <= 1
