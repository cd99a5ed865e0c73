"""Vendor token formats, as data: the ``secrets`` shield's rules for prefixed API tokens.

Each rule is a vendor's documented token shape: a fixed prefix (``glpat-``, ``hf_``, ``npm_``,
``dop_v1_``...), then a body of a known alphabet and length. The prefix is what makes a token
recognisable without any key name next to it, so these rules need no context; the body is
checked to look generated (``random_looking``), which turns away documentation placeholders
(``hf_xxxxxxxx...``, ``glpat-EXAMPLE...``) and names in code.

Three constraints shape the patterns, all from the engine in ``shields.builtin.secrets``:

- A rule's *prefix* is a stream's trigger: text is held from where a prefix may begin. A
  prefix that is a common word or two letters (``key-``, ``SK``, ``dapi``, ``secret_``)
  therefore carries the token's fixed-length body too, so prose holds at most a word, and a
  configuration value that merely starts with those letters (``password: SKy-2024!``) is not
  left by the configuration rules (``defers_to_prefixes``) to a rule that will not take it.
- ``max_match`` stays bounded (159 with every rule): a body is at most 64 characters, and a
  token that may be longer (PyPI macaroons, GitLab routable tokens, Vault and Atlassian tokens)
  goes on in ``tail`` pieces, as JWTs do.
- A match may only start at its prefix: where a token's public part comes first (Terraform
  Cloud's ``<id>.atlasv1.<secret>``) the rule starts at the fixed infix and reports the secret
  part, which is what must not leak; an any-word prefix would hold every word of a stream.

Publishable keys made to be embedded in web pages are not rules, as with Stripe's ``pk_``:
PostHog's project key ``phc_``, New Relic's browser key ``NRJS-``, Supabase's
``sb_publishable_``, Mapbox's ``pk.``.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

from shields.builtin.secrets_rules import Rule, Thresholds, Validator, random_looking

__all__ = ["VENDOR_TOKEN_RULES"]


def _generated(
    head: str, min_bits: float = 3.0, *, digit: bool = False, mixed: bool = False
) -> Validator:
    """The part after ``head`` (a regex of the fixed prefix) must look generated; ``digit`` and
    ``mixed`` (upper and lower case) are what every real token of an alphabet that rich has."""
    fixed = re.compile(head)

    def check(secret: str, _: Thresholds) -> bool:
        found = fixed.match(secret)
        body = secret[found.end() :] if found else secret
        if digit and not any(c.isdigit() for c in body):
            return False
        if mixed and not (any(c.isupper() for c in body) and any(c.islower() for c in body)):
            return False
        return random_looking(body, min_bits)

    return check


def _letters(head: str) -> Validator:
    """A letters-only body (Hugging Face): random case, so about half its letters are capitals;
    a CamelCase name has one a word (``hf_TokenizerConfigurationLoaderMain``)."""
    generated = _generated(head, 3.5, mixed=True)
    fixed = re.compile(head)

    def check(secret: str, thresholds: Thresholds) -> bool:
        found = fixed.match(secret)
        body = secret[found.end() :] if found else secret
        capitals = sum(c.isupper() for c in body) / max(len(body), 1)
        return 0.25 <= capitals <= 0.75 and generated(secret, thresholds)

    return check


def _discord(secret: str, thresholds: Thresholds) -> bool:
    """A Discord bot token's first segment is the bot's numeric id, base64-encoded."""
    first = secret.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)).decode("ascii")
    except (binascii.Error, ValueError):  # ValueError covers bad ASCII
        return False
    if not (decoded.isdigit() and 17 <= len(decoded) <= 20):
        return False
    return random_looking(secret.rsplit(".", 1)[-1], 3.5)


def _digits_colon_random(secret: str, thresholds: Thresholds) -> bool:
    """Decodes to a numeric id, ":" and random bytes (what the prefix encodes is checked
    whole: the prefix pattern allows a little more than digits)."""
    try:
        decoded = base64.b64decode(secret, validate=True)
    except binascii.Error:
        return False
    head, colon, rest = decoded.partition(b":")
    if not (colon and head.isdigit() and len(rest) >= 16):
        return False
    return random_looking(secret[18:], 3.5)


def _bedrock(secret: str, thresholds: Thresholds) -> bool:
    """A short-term key is known by its fixed start; a long-term one must look generated."""
    if secret.startswith("bedrock-"):
        return True
    if len(secret) < 64:  # a long-term key has 110 characters and more
        return False
    # It is "ABSK" and the base64 of "BedrockAPIKey-<id>-at-<account>:<secret>": that start is
    # fixed, the rest must look generated.
    if secret.startswith("ABSKQmVkcm9ja0FQSUtleS"):
        return random_looking(secret[22:], 3.5)
    return random_looking(secret[4:], 3.5)


# Alphabets of token bodies (RE2 class bodies).
_ALNUM = "A-Za-z0-9"
_URLSAFE = "A-Za-z0-9_-"
_HEX = "0-9a-f"
_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _token_rule(
    rule_id: str,
    description: str,
    prefix: str,
    body: str,
    check: Validator,
    *,
    ends: str | None = _URLSAFE,
    tail: str | None = None,
) -> Rule:
    """A prefixed token; ``ends`` are the characters that may not follow it (the body would
    go on: not this format), ``tail`` its continuation pieces when it may be longer."""
    return Rule(rule_id, description, prefix, body, check, not_followed_by=ends, tail=tail)


# NTLMSSP message 3 (authenticate, MS-NLMP 2.2.1.3): the signature "NTLMSSP\0", the type (3,
# little-endian), the LM response's length, maximum length and offset, then the NT response's.
_NTLM_NT_FIELDS = struct.Struct("<HHI")
_NTLM_NT_AT = 20  # bytes before the NT response's fields
_NTLM_MIN_RESPONSE = 24  # NTLMv1's response; NTLMv2's is longer


def _ntlm_authenticate(secret: str, _: Thresholds) -> bool:
    """An authenticate message that answers with an NT response (an anonymous one has none).
    Judged by its structure, not by entropy: its fixed fields are mostly zero bytes, "AAAA" in
    base64, which the random-looking check takes for a typed run."""
    try:
        decoded = base64.b64decode(secret[:40], validate=True)  # 30 bytes: the fields above
    except binascii.Error:
        return False
    if len(decoded) < _NTLM_NT_AT + _NTLM_NT_FIELDS.size:
        return False
    length, maximum, _offset = _NTLM_NT_FIELDS.unpack_from(decoded, _NTLM_NT_AT)
    return bool(length >= _NTLM_MIN_RESPONSE and maximum >= length)


VENDOR_TOKEN_RULES: tuple[Rule, ...] = (
    # -- source hosting, CI, package registries --------------------------------------------
    _token_rule(
        "gitlab_token",
        "GitLab tokens: personal/project/group (glpat-), deploy (gldt-), runner (glrt-), "
        "CI job (glcbt-), trigger (glptt-), OAuth app secret (gloas-), feed (glft-), incoming "
        "mail (glimt-), agent (glagent-), SCIM (glsoat-), feature flags (glffct-), workspace "
        "(glwt-), runner (glrtr-), runner registration (GR1348941); routable tokens "
        "(payload.version+crc) whole",
        r"(?:gl(?:pat|dt|rtr?|cbt|ptt|oas|ft|imt|agent|soat|ffct|wt)-|GR1348941)",
        f"[{_URLSAFE}]{{20,64}}",
        _generated(r"gl[a-z]+-|GR1348941", 3.0),
        ends=None,
        # A routable token goes on with ".<version><crc>": a dot only when more follows, so
        # the full stop after a token in a sentence stays.
        tail=f"\\.?[{_URLSAFE}]{{1,64}}",
    ),
    _token_rule(
        "npm_token",
        "npm access token (npm_ + 36)",
        r"\bnpm_",
        f"[{_ALNUM}]{{36}}",
        _generated("npm_", 3.5, digit=True),
    ),
    _token_rule(
        "pypi_token",
        "PyPI / TestPyPI API token (pypi-AgEIcHlwaS5vcmc..., a macaroon)",
        r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)",
        f"[{_URLSAFE}]{{50,64}}",
        _generated(r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)", 3.5),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    # A long-lived Dropbox token (the short-lived one is ``dropbox_token``, with the other
    # file-storage tokens below) is 11 characters, ten "A"s, then 43: the rule starts at its fixed
    # infix (a match may only start at its prefix) and reports the part that is secret, which
    # the 11 characters before it are not without. Base64 data holds runs of "A" (zero bytes)
    # too, but not one followed by exactly 43 URL-safe characters of mixed case with digits
    # and no "+" or "/" that then ends.
    _token_rule(
        "dropbox_long_lived_token",
        "Dropbox long-lived access token (11 characters, AAAAAAAAAA, 43 URL-safe characters)",
        "AAAAAAAAAA",
        f"[={_URLSAFE}]{{43}}",
        _generated("AAAAAAAAAA", 3.5, digit=True, mixed=True),
        ends="=+/" + _URLSAFE,
    ),
    _token_rule(
        "rubygems_api_key",
        "RubyGems API key (rubygems_ + 48 hex)",
        r"\brubygems_",
        f"[{_HEX}]{{48}}",
        _generated("rubygems_", 3.0),
    ),
    _token_rule(
        "docker_hub_token",
        "Docker Hub personal or organization access token (dckr_pat_, dckr_oat_)",
        r"\bdckr_(?:pat|oat)_",
        f"[{_URLSAFE}]{{27,64}}",
        _generated(r"dckr_[a-z]+_", 3.0),
    ),
    _token_rule(
        "atlassian_api_token",
        "Atlassian API token (ATATT3...), Atlassian admin key (ATCTT3...), Bitbucket app "
        "password (ATBB...)",
        r"\b(?:ATATT3|ATCTT3|ATBB)",
        f"[{_ALNUM}_=-]{{28,64}}",
        _generated(r"ATATT3|ATCTT3|ATBB", 3.5, digit=True),
        ends=None,
        tail=f"[{_ALNUM}_=-]{{1,64}}",
    ),
    # The base64 of "<12-digit id>:<20 random bytes>": a run of base64 digit triples, then ":"
    # (the prefix), so that no word of prose is a prefix.
    _token_rule(
        "jira_confluence_pat",
        "Jira / Confluence Data Center personal access token (base64 of a 12-digit id, ':' and "
        "20 random bytes; 44 characters)",
        r"\b(?:[MNO][DTjz][AEIMQUYcgk][w-z0-5]){4}O[g-v]",
        f"[{_ALNUM}+/]{{26}}",
        _digits_colon_random,
        ends=f"{_ALNUM}+=",
    ),
    _token_rule(
        "sonarqube_token",
        "SonarQube token: user (squ_), project analysis (sqp_), global analysis (sqa_)",
        r"\bsq[upa]_",
        f"[{_HEX}]{{40}}",
        _generated(r"sq[upa]_", 3.0),
    ),
    # Exact lengths in the prefix: a shorter AKCp... run is not a JFrog key.
    _token_rule(
        "jfrog_token",
        "JFrog Artifactory API key (AKCp + 69) or reference token (base64 'reftkn:01:' + 50)",
        f"\\b(?:AKCp[{_ALNUM}]{{69}}|cmVmdGtuOjAxOj[{_ALNUM}]{{50}})",
        "",
        _generated(r"AKCp|cmVmdGtuOjAxOj", 3.5, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "sourcegraph_token",
        "Sourcegraph access token (sgp_ + 40 hex, with an instance id or local_ before it)",
        r"\bsgp_(?:[0-9a-fA-F]{16}_|local_)?",
        "[0-9a-fA-F]{40}",
        _generated(r"sgp_(?:[0-9a-fA-F]{16}_|local_)?", 3.0),
    ),
    _token_rule(
        "bitbucket_access_token",
        "Bitbucket Data Center HTTP access token (BBDC- + base64 of the user id and a secret)",
        r"\bBBDC-[MNO][ADQTgjwz]",
        f"[AEIMQUYcgk][0-5w-z][{_URLSAFE}]{{40}}",
        _generated(r"BBDC-", 3.5),
    ),
    _token_rule(
        "package_registry_token",
        "Package registry tokens: NuGet API key (oy2 + 43), Clojars deploy token (CLOJARS_ + 60 "
        "hex)",
        r"\b(?:oy2[a-z0-9]{43}|CLOJARS_[0-9a-f]{60})",
        "",
        _generated(r"oy2|CLOJARS_", 3.0, digit=True),
    ),
    _token_rule(
        "docker_swarm_secret",
        "Docker Swarm join token (SWMTKN-1-) or unlock key (SWMKEY-1-)",
        r"\bSWM(?:TKN|KEY)-1-",
        f"(?:[0-9a-z]{{50}}-[0-9a-z]{{25}}|[{_ALNUM}+/]{{43}})",
        _generated(r"SWM[A-Z]{3}-1-", 3.5),
    ),
    _token_rule(
        "buildkite_token",
        "Buildkite API access token (bkua_ + 40)",
        r"\bbkua_",
        "[a-z0-9]{40}",
        _generated("bkua_", 3.0, digit=True),
    ),
    _token_rule(
        "circleci_token",
        "CircleCI personal API token (CCIPAT_<22>_<40 hex>)",
        r"\bCCIPAT_",
        f"[{_ALNUM}]{{22}}_[0-9a-fA-F]{{40}}",
        _generated("CCIPAT_", 3.5),
    ),
    # "pat." and "sat." begin words and sentences: the prefix carries the account id too. (A
    # prefix longer than 64 characters would not be seen in a configuration value, which is
    # judged on its first 64: `TOKEN = "pat...."` would not be left to this rule.)
    _token_rule(
        "harness_token",
        "Harness personal or service account token (pat.<22>.<24>.<20>, sat.)",
        f"\\b[ps]at\\.[{_URLSAFE}]{{22}}\\.",
        f"[{_ALNUM}]{{24}}\\.[{_ALNUM}]{{20}}",
        _generated(r"[ps]at\.", 3.5, digit=True),
    ),
    _token_rule(
        "octopus_deploy_key",
        "Octopus Deploy API key (API- + 26 upper-case letters and digits)",
        r"\bAPI-[A-Z0-9]{26}",
        "",
        _generated("API-", 3.0, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "openshift_token",
        "OpenShift user or service account OAuth token (sha256~ + 43)",
        r"\bsha256~",
        f"[{_URLSAFE}]{{43}}",
        _generated("sha256~", 3.5),
    ),
    # Each shape whole in the prefix ("ico-" begins icon class names), at most 64 characters.
    _token_rule(
        "dev_platform_token",
        "Developer platform tokens: Prefect (pnu_ + 36), Scalingo (tk-us- + 48), Infracost "
        "(ico- + 32), Typeform (tfp_ + 59), Contentful personal access token (CFPAT- + 43)",
        r"\b(?:pnu_[A-Za-z0-9]{36}|tk-us-[A-Za-z0-9_-]{48}|ico-[A-Za-z0-9]{32}"
        r"|tfp_[A-Za-z0-9_.=-]{59}|CFPAT-[A-Za-z0-9_-]{43})",
        "",
        _generated(r"pnu_|tk-us-|ico-|tfp_|CFPAT-", 3.5, digit=True),
        ends=".=" + _URLSAFE,
    ),
    _token_rule(
        "readme_api_key",
        "ReadMe API key (rdme_ + 70)",
        r"\brdme_",
        "[a-z0-9]{70}",
        _generated("rdme_", 3.5, digit=True),
    ),
    _token_rule(
        "frameio_token",
        "Frame.io developer token (fio-u- + 64)",
        r"\bfio-u-",
        f"[{_URLSAFE}]{{64}}",
        _generated("fio-u-", 3.5, digit=True),
    ),
    _token_rule(
        "tailscale_key",
        "Tailscale auth, API or OAuth client key (tskey-<kind>-<id>-<secret>)",
        r"\btskey-[a-z]{3,8}-",
        "[A-Za-z0-9]{6,24}-[A-Za-z0-9]{16,64}",
        _generated(r"tskey-[a-z]+-", 3.5, digit=True),
    ),
    # -- AI and ML platforms -----------------------------------------------------------------
    _token_rule(
        "huggingface_token",
        "Hugging Face user access token (hf_ + 34 letters) or organization token (api_org_)",
        r"\b(?:hf_|api_org_)",
        "[A-Za-z]{34}",
        _letters("hf_|api_org_"),
        ends=_URLSAFE,
    ),
    _token_rule(
        "groq_api_key",
        "Groq API key (gsk_ + 52)",
        r"\bgsk_",
        f"[{_ALNUM}]{{52}}",
        _generated("gsk_", 3.5, digit=True),
    ),
    _token_rule(
        "ai_api_key",
        "AI platform API keys: Perplexity (pplx-), xAI (xai-), Replicate (r8_), Together AI "
        "(tgp_v1_), Tavily (tvly-), LangSmith (lsv2_pt_, lsv2_sk_), Meta Llama API (llx-)",
        r"\b(?:pplx-|xai-|r8_|tgp_v1_|tvly-(?:dev-|prod-)?|lsv2_(?:pt|sk)_|llx-)",
        f"[{_URLSAFE}]{{32,80}}",
        _generated(r"pplx-|xai-|r8_|tgp_v1_|tvly-(?:dev-|prod-)?|lsv2_(?:pt|sk)_|llx-", 3.5),
    ),
    # Before OpenAI's rule would see them: both begin "sk-", and a body of lower-case hex is no
    # OpenAI key (it mixes cases), so that rule rejects these and the table order lets this one
    # take them.
    _token_rule(
        "ai_secret_key",
        "AI platform secret keys: Langfuse (sk-lf- + UUID), ElevenLabs (sk_ + 48 hex)",
        r"\b(?:sk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        r"|sk_[0-9a-f]{48})",
        "",
        _generated(r"sk-lf-|sk_", 3.0, digit=True),
    ),
    _token_rule(
        "openrouter_api_key",
        "OpenRouter API key (sk-or-v1- + 64 hex)",
        r"\bsk-or-v1-",
        f"[{_HEX}]{{64}}",
        _generated("sk-or-v1-", 3.0, digit=True),
    ),
    _token_rule(
        "pinecone_api_key",
        "Pinecone API key (pcsk_<5-6>_<63>)",
        r"\bpcsk_",
        f"[{_ALNUM}]{{5,6}}_[{_ALNUM}]{{63}}",
        _generated(r"pcsk_[A-Za-z0-9]+_", 3.5, digit=True),
    ),
    # -- cloud, infrastructure, databases ------------------------------------------------------
    _token_rule(
        "digitalocean_token",
        "DigitalOcean token: personal (dop_v1_), OAuth (doo_v1_), refresh (dor_v1_)",
        r"\bdo[por]_v1_",
        f"[{_HEX}]{{64}}",
        _generated(r"do[por]_v1_", 3.0),
    ),
    _token_rule(
        "vault_token",
        "HashiCorp Vault token: service (hvs.), batch (hvb.), recovery (hvr.)",
        r"\bhv[sbr]\.",
        f"[{_URLSAFE}]{{24,64}}",
        _generated(r"hv[sbr]\.", 3.5),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    # "<14-character id>.atlasv1.<secret>": the match starts at the fixed infix (a prefix
    # of any 14 characters would make every word of a stream a possible start, and one that
    # starts with the dot every full stop), and the secret after it is what is reported.
    _token_rule(
        "terraform_cloud_token",
        "Terraform Cloud / Enterprise API token (<id>.atlasv1.<secret>): the secret part",
        r"\batlasv1\.",
        f"([{_ALNUM}_=-]{{60,70}})",
        _generated("", 3.5),
        ends=f"{_ALNUM}_=-",
    ),
    _token_rule(
        "pulumi_access_token",
        "Pulumi access token (pul- + 40 hex)",
        f"\\bpul-[{_HEX}]{{40}}",
        "",
        _generated("pul-", 3.0),
    ),
    _token_rule(
        "doppler_token",
        "Doppler token: personal (dp.pt.), service (dp.st., with its config's name in it: "
        "dp.st.dev.), service account (dp.sa.), CLI (dp.ct.), SCIM (dp.scim.), audit (dp.audit.)",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.",
        f"(?:[a-z0-9_-]{{1,24}}\\.)?[{_ALNUM}]{{40,44}}",
        _generated(r"dp\.[a-z]+\.(?:[a-z0-9_-]+\.)?", 3.5),
    ),
    _token_rule(
        "databricks_token",
        "Databricks personal access token (dapi + 32 hex, optionally -N)",
        f"\\bdapi[{_HEX}]{{32}}",
        "(?:-[0-9])?",
        _generated("dapi", 3.0, digit=True),
        ends=_ALNUM + "_",
    ),
    _token_rule(
        "planetscale_token",
        "PlanetScale service token (pscale_tkn_), password (pscale_pw_), OAuth (pscale_oauth_)",
        r"\bpscale_(?:tkn|pw|oauth)_",
        f"[{_ALNUM}_.=-]{{32,64}}",
        _generated(r"pscale_[a-z]+_", 3.5),
    ),
    _token_rule(
        "supabase_token",
        "Supabase personal access token (sbp_) or secret API key (sb_secret_)",
        r"\b(?:sbp_|sb_secret_)",
        f"[{_URLSAFE}]{{20,64}}",
        _generated(r"sbp_|sb_secret_", 3.0),
    ),
    _token_rule(
        "alibaba_access_key_id",
        "Alibaba Cloud AccessKey ID (LTAI + 12-20)",
        r"\bLTAI",
        f"[{_ALNUM}]{{12,20}}",
        _generated("LTAI", 3.0, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "heroku_api_key",
        "Heroku API key, current format (HRKU-AA + 58, or HRKU- + a UUID)",
        r"\bHRKU-",
        f"(?:AA[{_URLSAFE}]{{58}}|{_UUID})",
        _generated("HRKU-(?:AA)?", 3.0),
    ),
    _token_rule(
        "netlify_token",
        "Netlify personal access token (nfp_ + 36)",
        r"\bnfp_",
        f"[{_ALNUM}]{{36}}",
        _generated("nfp_", 3.5, digit=True),
    ),
    _token_rule(
        "cloudflare_token",
        "Cloudflare API token: user (cfut_), account (cfat_), API key (cfk_); Origin CA key "
        "(v1.0-<24 hex>-<146 hex>)",
        r"\b(?:cf(?:ut|at|k)_|v1\.0-[0-9a-f]{24}-)",
        f"(?:[{_ALNUM}]{{40,50}}|[{_HEX}]{{64}})",
        _generated(r"cf[a-z]{1,2}_|v1\.0-[0-9a-f]{24}-", 3.0, digit=True),
        ends=None,
        tail=f"[{_HEX}]{{1,64}}",
    ),
    _token_rule(
        "aws_mws_key",
        "Amazon Marketplace Web Service auth token (amzn.mws.<uuid>)",
        r"\bamzn\.mws\.",
        "[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}",
        _generated(r"amzn\.mws\.", 3.0),
    ),
    _token_rule(
        "aws_bedrock_api_key",
        "Amazon Bedrock API key: short-term (bedrock-api-key- and the base64 of "
        "bedrock.amazonaws.com that every one starts with) or long-term (ABSK...)",
        r"\b(?:bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t|ABSK)",
        f"[{_ALNUM}+/=]{{0,64}}",
        _bedrock,
        ends=None,
        tail=f"[{_ALNUM}+/=]{{1,64}}",
    ),
    # Microsoft Entra (Azure AD) client secrets have no prefix: 3 random characters, a digit
    # (the secret's version) and "Q~" begin them. A match starts at the digit: a prefix of any
    # three characters would hold the end of every word of a stream. The three characters
    # before it are left, the other 37 of the 40 redacted.
    _token_rule(
        "azure_ad_client_secret",
        "Microsoft Entra ID (Azure AD) client secret (<3><digit>Q~ + 31-34): from the digit",
        r"[0-9]Q~",
        "[A-Za-z0-9_~.-]{31,34}",
        _generated(r"[0-9]Q~", 3.5),
        ends="A-Za-z0-9_~.-",
    ),
    _token_rule(
        "flyio_token",
        "Fly.io access token (FlyV1 fm1_..., fm2_..., with or without the scheme; fo1_ + 43)",
        r"(?:\bFlyV1 |\b)(?:fm[12][ar]?_|fo1_)",
        f"[{_ALNUM}+/=_-]{{40,64}}",
        _generated(r"(?:FlyV1 )?f[mo][12][ar]?_", 3.5),
        ends=None,
        tail=f"[{_ALNUM}+/=_-]{{1,64}}",
    ),
    _token_rule(
        "vercel_token",
        "Vercel token: personal (vcp_), integration (vci_), app access (vca_) and refresh (vcr_), "
        "API key (vck_)",
        r"\bvc[pikar]_",
        f"[{_ALNUM}]{{40,64}}",
        _generated(r"vc[a-z]_", 3.5, digit=True),
    ),
    _token_rule(
        "akamai_client_token",
        "Akamai EdgeGrid client or access token (akab-<16>-<16>)",
        r"\bakab-",
        "[0-9a-z]{16}-[0-9a-z]{16}",
        _generated("akab-", 3.0, digit=True),
    ),
    # An STS session token is base64 of a binary structure whose first bytes are fixed: what
    # `aws sts get-session-token` and instance roles hand out with a temporary access key id.
    _token_rule(
        "aws_session_token",
        "AWS temporary session token (IQoJb3JpZ2luX2Vj..., FwoGZXIvYXdzE...), a few hundred "
        "base64 characters",
        r"\b(?:IQoJb3JpZ2luX2Vj|F[wQ]oGZXIvYXdzE)",
        f"[{_ALNUM}+/]{{64}}",
        _generated(r"IQoJb3JpZ2luX2Vj|F[wQ]oGZXIvYXdzE", 3.5),
        ends=None,
        tail=f"[{_ALNUM}+/=]{{1,64}}",
    ),
    _token_rule(
        "salesforce_token",
        "Salesforce access or session token (<15-character org id 00D...>!<token>) or refresh "
        "token (5AEP861...)",
        r"\b(?:00D[A-Za-z0-9]{12}!|5AEP861)",
        "[A-Za-z0-9_.]{64}",
        _generated(r"00D[A-Za-z0-9]{12}!|5AEP861", 3.5, digit=True),
        ends=None,
        tail="[A-Za-z0-9_.]{1,64}",
    ),
    _token_rule(
        "yandex_cloud_key",
        "Yandex Cloud API key (AQVN + 35-38) or static access key (YC + 38)",
        r"\b(?:AQVN[A-Za-z0-9_-]{35,38}|YC[A-Za-z0-9_-]{38})",
        "",
        _generated(r"AQVN|YC", 3.5, digit=True, mixed=True),
    ),
    _token_rule(
        "clickhouse_cloud_key",
        "ClickHouse Cloud API secret key (4b1d + 38)",
        r"\b4b1d[A-Za-z0-9]{38}",
        "",
        _generated("4b1d", 3.5, digit=True),
    ),
    _token_rule(
        "defined_networking_key",
        "Defined Networking (Nebula) API key (dnkey-<26>-<52> base32)",
        r"\bdnkey-",
        "[A-Z2-7]{26}-[A-Z2-7]{52}",
        _generated("dnkey-", 3.5),
    ),
    _token_rule(
        "nats_nkey_seed",
        "NATS nkey seed (S + the key's type: U user, A account, O operator, N server, C "
        "cluster, X curve; then 56 base32)",
        r"\bS[UAONCX]",
        "[A-Z2-7]{56}",
        _generated("S[A-Z]", 3.5),
        ends=_ALNUM,
    ),
    _token_rule(
        "dropbox_token",
        "Dropbox OAuth2 access token (sl. or sl.u. + 77-177)",
        r"\bsl\.(?:u\.)?",
        f"[{_URLSAFE}]{{64}}",
        _generated(r"sl\.(?:u\.)?", 3.5, digit=True, mixed=True),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    # -- observability ---------------------------------------------------------------------
    _token_rule(
        "sentry_token",
        "Sentry organization auth token (sntrys_eyJ...) or user auth token (sntryu_ + 64 hex)",
        r"\bsntry[su]_",
        f"[{_ALNUM}+/=_]{{40,64}}",
        _generated(r"sntry[su]_", 3.5),
        ends=None,
        tail=f"[{_ALNUM}+/=_]{{1,64}}",
    ),
    _token_rule(
        "grafana_token",
        "Grafana token: Cloud access policy (glc_), service account (glsa_), API key (eyJrIjoi)",
        r"\b(?:glc_|glsa_|eyJrIjoi)",
        f"[{_ALNUM}+/=_]{{32,64}}",
        _generated(r"glc_|glsa_|eyJrIjoi", 3.5),
        ends=None,
        tail=f"[{_ALNUM}+/=_]{{1,64}}",
    ),
    _token_rule(
        "new_relic_key",
        "New Relic user API key (NRAK- + 27) or Insights insert or query key (NRII-, NRIQ- + "
        "25-32)",
        r"\bNR(?:AK|II|IQ)-",
        f"[{_URLSAFE}]{{25,32}}",
        _generated(r"NR[A-Z]{2}-", 3.5, digit=True),
    ),
    # The key's marker is its end: the prefix is the whole key (40 characters), so prose is
    # held only for a run of hex digits at its end.
    _token_rule(
        "new_relic_license_key",
        "New Relic ingest license key (36 hex digits, or eu01xx and 30, then NRAL)",
        r"\b(?:eu01xx[0-9a-f]{30}|[0-9a-f]{36})NRAL",
        "",
        _generated("", 3.0, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "dynatrace_token",
        "Dynatrace API token (dt0c01.<24>.<64>, dt0s..)",
        r"\bdt0[a-z][0-9]{2}\.",
        "[A-Z0-9]{24}\\.[A-Z0-9]{64}",
        _generated(r"dt0[a-z][0-9]{2}\.", 3.5),
        ends=_ALNUM,
    ),
    _token_rule(
        "posthog_personal_key",
        "PostHog personal API key (phx_), project secret key (phs_), OAuth access (pha_) and "
        "refresh (phr_) tokens; the project key phc_ is public by design",
        r"\bph[xsar]_",
        f"[{_ALNUM}]{{43,64}}",
        _generated("ph[xsar]_", 3.5, digit=True),
    ),
    # -- communication, payments, productivity ---------------------------------------------------
    # The secret follows the app id: "<app id>|<app secret>" is an app access token.
    _token_rule(
        "facebook_app_token",
        "Facebook app access token (<app id>|<app secret>): the secret",
        r"\b[0-9]{12,18}\|",
        f"([{_URLSAFE}]{{24,28}})",
        _generated("", 3.5, digit=True),
    ),
    _token_rule(
        "facebook_access_token",
        "Facebook / Meta Graph API access token (EAA + an app letter, 100 and more)",
        r"\bEAA[B-Z]",
        f"[{_ALNUM}]{{60,64}}",
        _generated("EAA[A-Z]", 3.5, digit=True, mixed=True),
        ends=None,
        tail=f"[{_ALNUM}]{{1,64}}",
    ),
    _token_rule(
        "instagram_token",
        "Instagram Graph API access token (IGQVJ...)",
        r"\bIGQVJ",
        f"[{_URLSAFE}]{{60,64}}",
        _generated("IGQVJ", 3.5),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    # 21 "A"s open the token; the generated part comes later (the validator looks there).
    _token_rule(
        "x_bearer_token",
        "X (Twitter) app-only bearer token (AAAAAAAAAAAAAAAAAAAAA + URL-encoded base64)",
        r"\bA{21}",
        f"[{_ALNUM}%]{{40,64}}",
        lambda secret, _: random_looking(secret[-32:], 3.5),
        ends=None,
        tail=f"[{_ALNUM}%]{{1,64}}",
    ),
    # The key's marker is its end: the prefix is the whole key.
    _token_rule(
        "mailchimp_api_key",
        "Mailchimp API key (32 hex digits, then -us and the data center)",
        r"\b[0-9a-f]{32}-us[0-9]{1,2}",
        "",
        _generated("", 3.0, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "intra42_secret",
        "42 intranet (intra.42.fr) client secret (s-s4t2ud-, s-s4t2af- + 64 hex)",
        r"\bs-s4t2(?:ud|af)-",
        f"[{_HEX}]{{64}}",
        _generated(r"s-s4t2[a-z]{2}-", 3.0),
    ),
    _token_rule(
        "wundergraph_api_key",
        "WunderGraph Cosmo API key (cosmo_ + 32 hex)",
        r"\bcosmo_",
        f"[{_HEX}]{{32}}",
        _generated("cosmo_", 3.0, digit=True),
    ),
    _token_rule(
        "shopify_token",
        "Shopify token: admin API (shpat_), shared secret (shpss_), custom app (shpca_), "
        "private app (shppa_); 32 hex digits, or letters and digits in the longer tokens "
        "Shopify announced in 2024",
        r"\bshp(?:at|ss|ca|pa)_",
        "[0-9a-zA-Z]{32,48}",
        _generated(r"shp[a-z]{2}_", 3.0),
    ),
    _token_rule(
        "twilio_api_key",
        "Twilio API key SID (SK + 32 hex) or account SID (AC + 32 hex; with the auth token, the "
        "account's credentials)",
        f"\\b(?:SK|AC)[{_HEX}]{{32}}",
        "",
        _generated("SK|AC", 3.0, digit=True),
    ),
    _token_rule(
        "sendgrid_api_key",
        "SendGrid API key (SG.<22>.<43>)",
        r"\bSG\.",
        f"[{_URLSAFE}]{{22}}\\.[{_URLSAFE}]{{43}}",
        _generated(r"SG\.", 3.5),
    ),
    _token_rule(
        "mailgun_api_key",
        "Mailgun private API key: legacy (key- + 32) or current (<32 hex>-<8 hex>-<8 hex>)",
        r"\b(?:key-[0-9a-z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})",
        "",
        _generated("key-", 3.0, digit=True),
    ),
    _token_rule(
        "brevo_api_key",
        "Brevo (Sendinblue) API or SMTP key (xkeysib-, xsmtpsib- + 64 hex + -16)",
        r"\bx(?:keysib|smtpsib)-",
        f"[{_HEX}]{{64}}-[{_ALNUM}]{{16}}",
        _generated(r"x[a-z]+-", 3.0),
    ),
    _token_rule(
        "postman_api_key",
        "Postman API key (PMAK-<24 hex>-<34 hex>) or collection access token (PMAT- + 26)",
        r"\bPMA[KT]-",
        f"(?:[{_HEX}]{{24}}-[{_HEX}]{{34}}|[0-9A-Z]{{26}})",
        _generated("PMA[KT]-", 3.0),
    ),
    _token_rule(
        "twitch_stream_key",
        "Twitch stream key (live_ + the channel's id + _ + 30): whoever holds it broadcasts as "
        "the channel",
        r"\blive_[0-9]{6,12}_",
        f"[{_ALNUM}]{{30}}",
        _generated(r"live_[0-9]+_", 3.5),
    ),
    _token_rule(
        "telegram_bot_token",
        "Telegram bot token (<bot id>:AA + 33)",
        r"\b[0-9]{8,10}:AA",
        f"[{_URLSAFE}]{{33}}",
        _generated(r"[0-9]+:AA", 3.5),
    ),
    # The id segment is base64 of ASCII digits, so it begins M, N or O, then D, T, j or z...:
    # prose is held for the one capital letter that may begin it, not for every word.
    _token_rule(
        "discord_bot_token",
        "Discord bot token (<base64 bot id>.<timestamp>.<hmac>)",
        r"\b[MNO][DTjz][AEIMQUYcgk][w-z0-5]",
        f"[{_URLSAFE}]{{19,22}}\\.[{_URLSAFE}]{{6}}\\.[{_URLSAFE}]{{27,38}}",
        _discord,
    ),
    _token_rule(
        "discord_webhook",
        "Discord webhook URL (discord.com/api/webhooks/<id>/<token>): the token",
        r"discord(?:app)?\.com/api/webhooks/",
        f"[0-9]{{17,20}}/([{_URLSAFE}]{{60,68}})",
        _generated("", 3.5),
    ),
    _token_rule(
        "slack_app_token",
        "Slack app-level token (xapp-<n>-<app id>-<n>-<64 hex>)",
        r"\bxapp-[0-9]-",
        f"[A-Z0-9]{{9,12}}-[0-9]{{10,13}}-[{_HEX}]{{64}}",
        _generated(r"xapp-[0-9]-[A-Z0-9]+-[0-9]+-", 3.0),
    ),
    _token_rule(
        "stripe_webhook_secret",
        "Stripe webhook signing secret (whsec_)",
        r"\bwhsec_",
        f"[{_ALNUM}+/=]{{32,64}}",
        _generated("whsec_", 3.5, digit=True),
        ends=_ALNUM + "+/=_",
    ),
    _token_rule(
        "square_token",
        "Square access token (EAAA + 60) or application secret (sq0csp-, legacy sq0atp-)",
        r"\b(?:EAAA|sq0atp-|sq0csp-)",
        f"[{_URLSAFE}]{{22,60}}",
        _generated(r"EAAA|sq0[a-z]{3}-", 3.5),
    ),
    _token_rule(
        "braintree_access_token",
        "PayPal Braintree access token (access_token$production$...)",
        r"access_token\$(?:production|sandbox)\$",
        f"[0-9a-z]{{16}}\\$[{_HEX}]{{32}}",
        _generated(r"access_token\$[a-z]+\$", 3.0),
    ),
    _token_rule(
        "linear_api_key",
        "Linear API key (lin_api_ + 40) or OAuth token (lin_oauth_)",
        r"\blin_(?:api|oauth)_",
        f"[{_ALNUM}]{{40,64}}",
        _generated(r"lin_[a-z]+_", 3.5),
    ),
    _token_rule(
        "notion_token",
        "Notion integration token (ntn_ + 46; legacy secret_ + 43)",
        f"\\b(?:ntn_[{_ALNUM}]{{46}}|secret_[{_ALNUM}]{{43}})",
        "",
        _generated(r"ntn_|secret_", 3.5, digit=True),
    ),
    _token_rule(
        "figma_token",
        "Figma personal access token (figd_)",
        r"\bfigd_",
        f"[{_URLSAFE}]{{40,64}}",
        _generated("figd_", 3.5),
    ),
    _token_rule(
        "google_oauth_token",
        "Google OAuth client secret (GOCSPX-), access token (ya29.), refresh token (1//0)",
        r"(?:\bGOCSPX-|\bya29\.|\b1//0)",
        f"[{_URLSAFE}]{{28,64}}",
        _generated(r"GOCSPX-|ya29\.|1//0", 3.5),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    _token_rule(
        "onepassword_token",
        "1Password service account token (ops_eyJ...)",
        r"\bops_eyJ",
        f"[{_ALNUM}+/=_-]{{40,64}}",
        _generated("ops_", 3.5),
        ends=None,
        tail=f"[{_ALNUM}+/=_-]{{1,64}}",
    ),
    _token_rule(
        "onepassword_secret_key",
        "1Password account Secret Key (A3-XXXXXX-XXXXXXXXXXX-XXXXX-XXXXX-XXXXX)",
        r"\bA3-[A-Z0-9]{6}-",
        "(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
        _generated(r"A3-", 3.0, digit=True),
        ends=_ALNUM,
    ),
    _token_rule(
        "age_secret_key",
        "age encryption secret key (AGE-SECRET-KEY-1 + 58 bech32)",
        r"\bAGE-SECRET-KEY-1",
        "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        _generated("AGE-SECRET-KEY-1", 3.5),
        ends=_ALNUM,
    ),
    # -- more messaging, maps, CRM, payments, authentication protocols ------------------------
    # A legacy Firebase Cloud Messaging server key: "AAAA" + 7, ":APA91b", then 134 more.
    _token_rule(
        "fcm_server_key",
        "Firebase Cloud Messaging legacy server key (AAAA<7>:APA91b + 134)",
        f"\\bAAAA[{_URLSAFE}]{{7}}:APA91b",
        f"[{_URLSAFE}]{{64}}",
        _generated(r"AAAA[A-Za-z0-9_-]{7}:APA91b", 3.5),
        ends=None,
        tail=f"[{_URLSAFE}]{{1,64}}",
    ),
    # An app's identity rather than its secret, but the half of the pair that scanners report
    # with it (CredSweeper, trufflehog): the AppSecret is found by its key name.
    _token_rule(
        "wechat_app_id",
        "Tencent WeChat official account or mini program AppID (wx + 16 hex)",
        r"\bwx[0-9a-f]{16}",
        "",
        # 16 hex digits carry 3.4 bits each on average, and 1 in 20 random ones under 3.0.
        _generated("wx", 2.5, digit=True),
    ),
    _token_rule(
        "teams_webhook",
        "Microsoft Teams incoming webhook URL (.../IncomingWebhook/<32 hex>/<uuid>): the secret "
        "path",
        r"/IncomingWebhook/",
        f"([{_HEX}]{{32}}/{_UUID})",
        _generated("", 3.0),
    ),
    _token_rule(
        "mapbox_secret_token",
        "Mapbox secret access token (sk.eyJ1Ijoi<user and id, base64url>.<22>); pk. tokens are "
        "public",
        r"\bsk\.eyJ1Ijoi",
        f"[{_URLSAFE}]{{8,90}}\\.[{_URLSAFE}]{{22}}",
        _generated(r"sk\.eyJ1Ijoi", 3.5),
    ),
    _token_rule(
        "hubspot_token",
        "HubSpot private app access token (pat-na1-, pat-eu1- + a UUID)",
        r"\bpat-(?:na|eu)[0-9]-",
        f"{_UUID}",
        _generated(r"pat-[a-z]{2}[0-9]-", 3.0),
    ),
    _token_rule(
        "airtable_token",
        "Airtable personal access token (pat<14>.<64 hex>)",
        r"\bpat[A-Za-z0-9]{14}\.",
        f"[{_HEX}]{{64}}",
        _generated(r"pat[A-Za-z0-9]{14}\.", 3.0),
    ),
    _token_rule(
        "adobe_client_secret",
        "Adobe I/O (Developer Console) client secret (p8e- + 32, hyphens and underscores too)",
        r"\bp8e-",
        f"[{_URLSAFE}]{{32}}",
        _generated("p8e-", 3.5, digit=True),
    ),
    _token_rule(
        "payments_api_key",
        "Shipping and payment API keys: Shippo (shippo_live_, shippo_test_ + 40 hex), EasyPost "
        "(EZAK, EZTK + 54), Duffel (duffel_live_, duffel_test_ + 43), Flutterwave secret key "
        "(FLWSECK-, FLWSECK_TEST- + 32 hex + -X) and encryption key (FLWSECK_TEST + 12 hex), "
        "Plaid access token (access-production-, access-sandbox-, access-development- + a UUID)",
        r"\b(?:shippo_(?:live|test)_|EZ[AT]K|duffel_(?:live|test)_|FLWSECK(?:_TEST)?-?"
        r"|access-(?:production|sandbox|development)-)",
        f"(?:[0-9a-fA-F]{{40}}|[{_ALNUM}]{{54}}|[{_ALNUM}_=-]{{43}}|[0-9a-fA-F]{{32}}-X"
        f"|[0-9a-fA-F]{{12}}|{_UUID})",
        _generated(
            r"shippo_[a-z]{4}_|EZ[AT]K|duffel_[a-z]{4}_|FLWSECK(?:_TEST)?-?|access-[a-z]+-",
            3.0,
            digit=True,
        ),
        ends=_URLSAFE,
    ),
    # The third message of an NTLM handshake (base64 of "NTLMSSP\0" and type 3) carries the
    # user's name and a response to the server's challenge that can be cracked offline; the
    # first two messages carry neither.
    _token_rule(
        "ntlm_authenticate",
        "NTLM authenticate message (TlRMTVNTUAADAAAA...), as sent in `Authorization: NTLM`",
        r"\bTlRMTVNTUAADAAAA",
        f"[{_ALNUM}+/]{{28,64}}",
        _ntlm_authenticate,
        ends=None,
        tail=f"[{_ALNUM}+/=]{{1,64}}",
    ),
)
