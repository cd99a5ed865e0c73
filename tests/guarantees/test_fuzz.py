"""Hostile input, fuzzed with hypothesis: the request parser, the SSE decoder, the policy loader.

Three parsers take bytes from someone else — a client's request body, an upstream's event
stream, a policy file from a pull request — and each has one documented way to say no:

- ``proxy.endpoints.chat_request.parse_chat_request`` raises ``BadRequest`` (an HTTP 4xx with an
  OpenAI
  error body); through the running proxy no body gets anything but a 4xx or a forward (200);
- ``proxy.stream.sse.SSEDecoder`` raises ``SSEError`` for an event over ``max_event_bytes`` and
  nothing else; how the bytes are split into reads never changes the events; it never holds
  more than ``max_event_bytes``;
- ``shields.policy.parse_policy`` raises ``PolicyError`` with a message.

Nesting depth is fuzzed on both sides (``nested_json``: up to 1,500 levels of mixed arrays and
objects, around every limit there is): ``json_codec.loads`` reads up to ``MAX_DEPTH`` and says
``InvalidJSON`` past it; chat and Responses request bodies are parsed or a ``BadRequest``, and
a 4xx through the endpoint; a stream event is released or fails the stream closed, an error
body is relayed or replaced — never an exception.

Anything else — another exception, a 500, a crash, unbounded buffering — fails a test.

Example counts per target (CI / ``SHIELDGATE_FUZZ=nightly``): the parser 200 / 20,000, the
endpoint 150 / 15,000, each SSE property 500 / 50,000, the policy loader 200 / 20,000, each
nesting-depth target 100 / 10,000 — about 25 s in all in CI, about 25 minutes nightly on the
2-core development machine. The two modes are the hypothesis profiles ``shieldgate-fuzz-ci``
and ``shieldgate-fuzz-nightly``, registered here and applied to these tests only, so the rest
of the suite keeps its own settings.
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import os
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.cli import default_policy
from proxy.endpoints.chat_request import ChatRequest, check_input, parse_chat_request
from proxy.endpoints.responses_request import parse_responses_request
from proxy.errors import BadRequest
from proxy.exchange.refusal import StreamContext
from proxy.exchange.reply_check import check_error_body
from proxy.serving.server import RunningServer, start_server
from proxy.settings import Settings
from proxy.stream.guard import GuardState, StreamGuard
from proxy.stream.sse import SSEDecoder, SSEError
from shields.base import Action, Finding
from shields.json_codec import MAX_DEPTH, InvalidJSON
from shields.json_codec import dumps as json_dumps
from shields.json_codec import loads as json_loads
from shields.policy import CompiledPolicy, PolicyError, parse_policy
from shields.scan import TextScan, check_text
from tests.conftest import FAST_SETTINGS
from tests.proxy.stream.test_sse import frames, reference_frames
from tests.support.fake_upstream import FakeUpstream

# ---- profiles ------------------------------------------------------------------------------

_COMMON: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("shieldgate-fuzz-ci", max_examples=100, **_COMMON)
settings.register_profile("shieldgate-fuzz-nightly", max_examples=10_000, **_COMMON)
MODE = os.environ.get("SHIELDGATE_FUZZ", "ci")
if MODE not in ("ci", "nightly"):
    raise ValueError(f"SHIELDGATE_FUZZ must be 'ci' or 'nightly', not {MODE!r}")
PROFILE = settings.get_profile(f"shieldgate-fuzz-{MODE}")


def fuzz(weight: float = 1.0) -> settings:
    """This module's profile, with ``weight`` times its examples (cheap targets get more)."""
    return settings(PROFILE, max_examples=max(10, int(PROFILE.max_examples * weight)))


# ---- (a) the request parser ----------------------------------------------------------------

# Text of every kind, lone surrogates (JSON can carry them as \ud800 escapes) and characters
# above U+FFFF (which once corrupted the denylist scanner's heap) included.
_any_text = st.text(st.characters(exclude_categories=()), max_size=20)
_keys = (
    st.sampled_from(
        [
            "model",
            "messages",
            "stream",
            "n",
            "stream_options",
            "include_usage",
            "role",
            "content",
            "refusal",
            "type",
            "text",
            "image_url",
            "tool_calls",
            "function_call",
            "function",
            "arguments",
            "name",
            "index",
            "id",
        ]
    )
    | _any_text
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | _any_text
    | st.sampled_from(["user", "assistant", "system", "tool", "developer", "function", "text"])
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=12,
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually the well-formed value, sometimes anything at all."""
    return st.one_of(strategy, strategy, strategy, json_values)


_roles = _maybe(st.sampled_from(["user", "assistant", "system", "tool", "developer", "function"]))
_parts = st.lists(
    _maybe(
        st.fixed_dictionaries(
            {"type": _maybe(st.sampled_from(["text", "refusal", "image_url", "input_audio"]))},
            optional={"text": _maybe(_any_text), "refusal": _maybe(_any_text)},
        )
    ),
    max_size=3,
)
_calls = st.lists(
    _maybe(
        st.fixed_dictionaries(
            {},
            optional={
                "id": _any_text,
                "type": st.just("function"),
                "function": _maybe(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "name": _any_text,
                            "arguments": _maybe(
                                _any_text | st.dictionaries(_any_text, json_values)
                            ),
                        },
                    )
                ),
            },
        )
    ),
    max_size=2,
)
_messages = st.lists(
    _maybe(
        st.fixed_dictionaries(
            {"role": _roles},
            optional={
                "content": _maybe(_any_text | _parts),
                "refusal": _maybe(_any_text),
                "tool_calls": _maybe(_calls),
                "function_call": _maybe(st.fixed_dictionaries({"arguments": _maybe(_any_text)})),
                "name": _any_text,
            },
        )
    ),
    max_size=4,
)
chat_requests = st.fixed_dictionaries(
    {"messages": _maybe(_messages)},
    optional={
        "model": _maybe(_any_text),
        "stream": _maybe(st.booleans()),
        "n": _maybe(st.integers(-2, 200)),
        "stream_options": _maybe(st.fixed_dictionaries({"include_usage": _maybe(st.booleans())})),
        "temperature": json_values,
        "x_extra": json_values,
    },
)


@st.composite
def request_bodies(draw: st.DrawFn) -> bytes:
    """Request-shaped JSON, any JSON, raw bytes, and JSON with its bytes damaged."""
    kind = draw(st.sampled_from(["request", "request", "json", "bytes", "damaged"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    value = draw(chat_requests if kind != "json" else json_values)
    body = json.dumps(value, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if kind == "damaged" and body:
        at = draw(st.integers(0, len(body)))
        junk = draw(st.binary(max_size=4))
        body = body[:at] + junk + body[at + draw(st.integers(0, 4)) :]
    return body


_POLICY = default_policy()


def check_parsed(request: ChatRequest) -> None:
    assert isinstance(request.body, dict)
    assert isinstance(request.body["messages"], list) and request.body["messages"]
    assert isinstance(request.stream, bool)
    assert isinstance(request.model, str)
    assert 1 <= request.n <= 128
    for message in request.texts:
        for field in message.fields:
            assert isinstance(field.text, str)
    # The input stage must cope with whatever the parser let through (a 500 otherwise), and a
    # redacted body must serialize for forwarding.
    check_input(_POLICY, request)
    assert isinstance(json_loads(json_dumps(request.body)), dict)


def check_refused(exc: BadRequest) -> None:
    assert exc.status == 400 and exc.type == "invalid_request_error"
    assert isinstance(exc.message, str) and exc.message
    assert exc.param is None or isinstance(exc.param, str)
    body = json.loads(exc.response().body)  # type: ignore[arg-type]
    assert set(body["error"]) == {"message", "type", "param", "code"}


@fuzz(weight=2)
@given(body=request_bodies())
def test_parse_chat_request_accepts_or_refuses_with_bad_request(body: bytes) -> None:
    try:
        request = parse_chat_request(body)
    except BadRequest as exc:
        check_refused(exc)
    else:
        check_parsed(request)


def test_unhashable_role_is_a_bad_request() -> None:
    # Found by the fuzzer: a dict or list as a role was looked up in a dict -> TypeError -> 500.
    for role in ("{}", "[]", '{"a": 1}', '["user"]'):
        with pytest.raises(BadRequest, match=r"messages\[0\]\.role"):
            parse_chat_request(b'{"messages": [{"role": %s, "content": "x"}]}' % role.encode())


class ProxyThread:
    """The real proxy and a fake upstream on their own event loop in a background thread, so
    that a synchronous hypothesis test can send it thousands of requests over TCP."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.upstream = FakeUpstream()
        self.server: RunningServer | None = None

    def run(self, coro: Any, timeout: float = 15.0) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise

    async def _start(self) -> RunningServer:
        await self.upstream.start()
        values = {"upstream": self.upstream.base_url, "port": 0, **FAST_SETTINGS}
        # A small body limit, so that fuzzed bodies also reach the 413 path.
        return await start_server(Settings(**values, max_body_bytes=2048), _POLICY)

    async def _stop(self) -> None:
        if self.server is not None:
            await self.server.close()
        await self.upstream.close()

    def __enter__(self) -> ProxyThread:
        self.thread.start()
        self.server = self.run(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.run(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()

    def post(
        self, body: bytes, content_type: str | None
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        assert self.server is not None
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            headers = {"Connection": "close", "Authorization": "Bearer sk-fuzz"}
            if content_type is not None:
                headers["Content-Type"] = content_type
            conn.request("POST", "/v1/chat/completions", body=body, headers=headers)
            response = conn.getresponse()
            return response.status, response.msg, response.read()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def proxy_thread() -> Iterator[ProxyThread]:
    with ProxyThread() as running:
        yield running


@fuzz(weight=1.5)
@given(
    body=request_bodies() | st.binary(min_size=2049, max_size=2200),
    content_type=st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/x-www-form-urlencoded",
            None,
        ]
    ),
)
def test_chat_endpoint_answers_4xx_or_forwards_never_5xx(
    proxy_thread: ProxyThread, body: bytes, content_type: str | None
) -> None:
    before = len(proxy_thread.upstream.requests)
    status, headers, raw = proxy_thread.post(body, content_type)
    forwarded = proxy_thread.upstream.requests[before:]

    assert status in (200, 400, 413), (status, raw[:300])
    if status != 200:
        assert forwarded == []
        assert headers["content-type"].startswith("application/json")
        error = json.loads(raw)["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["type"] == "invalid_request_error" and error["message"]
        if status == 413:
            assert len(body) > 2048
        return
    if headers.get("x-shieldgate-blocked") == "input":
        assert forwarded == []
        return
    [request] = forwarded
    sent = json_loads(request.body)
    assert isinstance(sent, dict) and sent["messages"]
    assert json.loads(raw)["object"] == "chat.completion"


# ---- (b) the SSE decoder -------------------------------------------------------------------

_sse_tokens = st.sampled_from(
    [
        b"data",
        b"data:",
        b"data: ",
        b"event:",
        b"event: x",
        b"id: 1",
        b"retry: 5",
        b":",
        b" ",
        b"x",
        b'{"choices": []}',
        b"\xc3\xa9",
        b"\xf0\x9f\x98",
        b"\x80",
        b"\xff",
        b"\x00",
        b"\xef\xbb\xbf",
        b"\r",
        b"\n",
        b"\r\n",
        b"\n\n",
    ]
)
sse_streams = st.one_of(
    st.binary(max_size=400),
    st.lists(_sse_tokens, max_size=60).map(b"".join),
    st.lists(st.sampled_from([b"\r", b"\n", b"a", b"data: ", b"\xef\xbb\xbf"]), max_size=40).map(
        b"".join
    ),
)


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    cuts = sorted(set(draw(st.lists(st.integers(0, len(data)), max_size=30))))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@fuzz(weight=5)
@given(data=st.data(), stream=sse_streams)
def test_sse_any_split_of_any_bytes_gives_the_same_events(
    data: st.DataObject, stream: bytes
) -> None:
    chunks = data.draw(splits(stream), label="chunks")
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    rest = decoder.finish()

    assert frames(events) == reference_frames(stream)
    assert b"".join(e.raw for e in events) + rest == stream  # every byte, exactly once
    whole = SSEDecoder()
    assert frames(whole.feed(stream)) == frames(events)
    assert whole.finish() == rest


@fuzz(weight=5)
@given(data=st.data(), stream=sse_streams, limit=st.integers(4, 64))
def test_sse_holds_at_most_max_event_bytes_and_fails_only_with_sse_error(
    data: st.DataObject, stream: bytes, limit: int
) -> None:
    chunks = data.draw(splits(stream), label="chunks")
    # What the stream holds, framed with no limit: the longest event (or unfinished tail).
    unlimited = SSEDecoder(max_event_bytes=len(stream) + 1)
    longest = max([len(e.raw) for e in unlimited.feed(stream)] + [len(unlimited.finish())])

    decoder = SSEDecoder(max_event_bytes=limit)
    try:
        for chunk in chunks:
            decoder.feed(chunk)
            assert decoder.buffered_bytes <= limit
    except SSEError as exc:
        assert str(exc)
        # Refused only what is too long. (One byte of slack: a CR ending an event goes out at
        # once, so the LF of a CRLF split from it may start a blank event of its own.)
        assert longest > limit - 1
    else:
        assert longest <= limit + 1


def test_sse_endless_line_is_refused_at_the_limit_not_buffered() -> None:
    decoder = SSEDecoder(max_event_bytes=1 << 20)
    fed = 0
    with pytest.raises(SSEError):
        for _ in range(10_000):
            decoder.feed(b"x" * 4096)
            fed += 4096
            assert decoder.buffered_bytes <= 1 << 20
    assert fed <= 1 << 20


# ---- (c) the policy loader -----------------------------------------------------------------

_SHIELD_TYPES = [
    "denylist",
    "regex",
    "pii",
    "secrets",  # (injection is left out: building it takes 60 ms, and it has no options)
    "invisible_text",
    "length",
    "llm_judge",
    "moderation",
    "webhook",
    "nope",
]
_policy_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=15)
_regexes = st.lists(
    st.sampled_from(list("ab.*+?()[]{}|^$\\-,0123456789dwsSbB:?P<>=!#")), max_size=12
).map("".join)
_shield = st.fixed_dictionaries(
    {"id": _maybe(_policy_text), "type": _maybe(st.sampled_from(_SHIELD_TYPES))},
    optional={
        "action": _maybe(st.sampled_from(["block", "redact", "allow"])),
        "phrases": _maybe(st.lists(_policy_text, max_size=3)),
        "words": _maybe(st.lists(_policy_text, max_size=3)),
        "patterns": _maybe(st.lists(_regexes, max_size=3)),
        "placeholder": _maybe(_policy_text),
        "roles": _maybe(st.lists(st.sampled_from(["user", "system", "tool", "x"]), max_size=2)),
        "threshold": _maybe(st.floats(-1, 2)),
        "mode": _maybe(st.sampled_from(["monitor", "enforce"])),
        "max_match": _maybe(st.integers(-1, 100)),
        "entities": _maybe(st.lists(st.sampled_from(["email", "phone", "iban", "x"]))),
        "max_chars_per_message": _maybe(st.integers(-1, 100)),
    },
)
_policies = st.fixed_dictionaries(
    {"name": _maybe(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,8}", fullmatch=True))},
    optional={
        "version": _maybe(st.just(1)),
        "mode": _maybe(st.sampled_from(["enforce", "monitor"])),
        "on_error": _maybe(st.sampled_from(["block", "allow"])),
        "refusal": _maybe(
            st.fixed_dictionaries(
                {}, optional={"message": _policy_text, "style": st.sampled_from(["message", "x"])}
            )
        ),
        "stream": _maybe(st.fixed_dictionaries({"holdback_chars": _maybe(st.integers(-5, 500))})),
        "input": _maybe(st.lists(_shield, max_size=3)),
        "output": _maybe(st.lists(_shield, max_size=3)),
        "cases": _maybe(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "stage": _maybe(st.sampled_from(["input", "output"])),
                        "expect": _maybe(st.sampled_from(["allow", "block", "redact"])),
                    },
                    optional={"text": _policy_text, "shield": _policy_text},
                ),
                max_size=2,
            )
        ),
    },
)
# Pieces of YAML syntax, policy keys and troublesome scalars, glued in any order.
_yaml_tokens = st.sampled_from(
    [
        "name: p\n",
        "version: 1\n",
        "output:\n",
        "input:\n",
        "  - ",
        "id: a",
        "type: denylist",
        "type: regex",
        "phrases: [x, y]",
        "patterns: ['(']",
        "stream: {holdback_chars: 9}",
        "\n",
        "  ",
        ": ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        ",",
        "'",
        '"',
        "&a ",
        "*a",
        "<<: *a\n",
        "!!binary ",
        "!!python/object:os.system ",
        "!!str ",
        "? ",
        "---\n",
        "...\n",
        "%YAML 1.1\n",
        "|\n",
        ">-\n",
        "~",
        "null",
        ".inf",
        ".nan",
        "0x1F",
        "0o17",
        "1_000",
        "1e400",
        "2020-01-01",
        "\t",
        "\x00",
        "\ufeff",
        "\\ud800",
        "é",
    ]
)
policy_sources = st.one_of(
    st.binary(max_size=200),
    st.lists(_yaml_tokens, max_size=40).map("".join),
    _policies.map(lambda p: yaml.safe_dump(p, allow_unicode=True, sort_keys=False)),
    json_values.map(lambda v: json.dumps(v)),
)


@fuzz(weight=2)
@given(source=policy_sources)
def test_policy_loader_loads_or_raises_policy_error(source: str | bytes) -> None:
    try:
        policy = parse_policy(source, source="fuzz.yaml")
    except PolicyError as exc:
        assert str(exc) and exc.problems
        assert all(str(p).startswith("fuzz.yaml") for p in exc.problems)
    else:
        assert isinstance(policy, CompiledPolicy)


LOADER_BUGS = {
    "int-past-4300-digits": "name: p\nstream: {holdback_chars: " + "9" * 5000 + "}\n",
    "impossible-timestamp": "name: p\ndescription: 2020-13-45\n",
    "deep-nesting": "name: p\ndescription: " + "[" * 2000 + "]" * 2000 + "\n",
}


@pytest.mark.parametrize("source", list(LOADER_BUGS.values()), ids=list(LOADER_BUGS))
def test_policy_loader_turns_yaml_construction_failures_into_policy_errors(source: str) -> None:
    with pytest.raises(PolicyError, match=r"fuzz\.yaml"):
        parse_policy(source, source="fuzz.yaml")


# ---- a crash the fuzzer found -----------------------------------------------------------------

# Streams "Hello", then an emoji, then more through the default policy's output scanners, in
# a child process: the heap corruption it shows would otherwise take this test run down with
# it, at some random later point. PYTHONMALLOC=debug makes the corruption abort at once.
_ASTRAL_SCRIPT = """
from proxy.cli import default_policy
from shields.scan import TextScan

policy = default_policy()
scan = TextScan(policy.output_shields, holdback=policy.holdback)
for piece in ["Hello ", "there \\U0001F600", " friend, ", "more \\U00022472 text", " end"]:
    scan.feed(piece)
scan.finish()
print("survived")
"""


def test_astral_characters_do_not_corrupt_the_process() -> None:
    env = {**os.environ, "PYTHONMALLOC": "debug"}
    done = subprocess.run(
        [sys.executable, "-c", _ASTRAL_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "survived"), done.stderr[-2000:]


# ---- (d) nesting depth ---------------------------------------------------------------------

# Depths around every limit there is: orjson writes 254 levels and reads 1,024, Python's json
# recurses about 1,000 deep; and anything up to well past them.
_depths = st.sampled_from([0, 1, 253, 254, 255, 256, 999, 1000, 1023, 1024, 1025]) | st.integers(
    0, 1500
)


@st.composite
def nested_json(draw: st.DrawFn, depth: int, inner: bytes = b"1") -> bytes:
    """``inner`` inside ``depth`` arrays and objects, mixed, compact or spaced, sometimes with
    siblings beside the path down."""
    kinds = draw(st.lists(st.booleans(), min_size=depth, max_size=depth))
    space = draw(st.sampled_from([b"", b" ", b"\n"]))
    sibling = draw(st.sampled_from([b"", b'"s",', b"null,"]))
    opening = b"".join(b"{" + space + b'"k":' + space if obj else b"[" + sibling for obj in kinds)
    closing = b"".join(space + b"}" if obj else b"]" for obj in reversed(kinds))
    return opening + inner + closing


def _depth_of(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


@st.composite
def deep_chat_bodies(draw: st.DrawFn) -> bytes:
    """A chat request with a deeply nested value in one of the places that take JSON."""
    deep = draw(nested_json(draw(_depths), draw(st.sampled_from([b"1", b'"x"', b"NaN", b"{}"]))))
    where = draw(st.sampled_from(["extra", "content", "arguments", "top"]))
    if where == "top":
        return deep
    if where == "content":
        message = b'{"role":"user","content":' + deep + b"}"
    elif where == "arguments":
        call = b'{"id":"c","type":"function","function":{"name":"f","arguments":' + deep + b"}}"
        message = b'{"role":"assistant","content":null,"tool_calls":[' + call + b"]}"
    else:
        message = b'{"role":"user","content":"hi"}'
    extra = b',"x":' + deep if where == "extra" else b""
    return b'{"model":"m","messages":[' + message + b"]" + extra + b"}"


@fuzz(weight=1)
@given(data=st.data(), depth=_depths, unique_keys=st.booleans())
def test_json_codec_reads_nesting_up_to_its_limit_and_refuses_the_rest(
    data: st.DataObject, depth: int, unique_keys: bool
) -> None:
    inner = data.draw(st.sampled_from([b"1", b'"\\ud800"', b"NaN", b"1" + b"0" * 25, b"[]"]))
    body = data.draw(nested_json(depth, inner))
    try:
        value = json_loads(body, unique_keys=unique_keys)
    except InvalidJSON:
        assert depth + (inner == b"[]") > MAX_DEPTH
        return
    assert _depth_of(value) <= MAX_DEPTH
    json_dumps(value)  # what was read can be written back


@fuzz(weight=1)
@given(body=deep_chat_bodies())
def test_deep_request_bodies_are_parsed_or_a_bad_request(body: bytes) -> None:
    for parse in (parse_chat_request, parse_responses_request):
        try:
            request = parse(body)
        except BadRequest as exc:
            check_refused(exc)
        else:
            if isinstance(request, ChatRequest):
                check_parsed(request)


@fuzz(weight=1)
@given(body=deep_chat_bodies())
def test_deep_request_bodies_through_the_endpoint_are_never_a_5xx(
    proxy_thread: ProxyThread, body: bytes
) -> None:
    status, _, raw = proxy_thread.post(body, "application/json")
    assert status in (200, 400, 413), (status, raw[:300])


@fuzz(weight=1)
@given(data=st.data(), depth=_depths)
def test_deep_upstream_replies_fail_closed_never_raise(data: st.DataObject, depth: int) -> None:
    deep = data.draw(nested_json(depth)).replace(b"\n", b" ")  # one SSE data line
    # A stream event: released, or the stream ends in an in-band error; never an exception.
    head = b'{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":'
    event = head + b'"hi"},"finish_reason":null}],"x":' + deep + b"}"
    guard = StreamGuard(_POLICY, StreamContext(model="m", n=1, include_usage=False))
    out = guard.feed_read(SSEDecoder(), b"data: " + event + b"\n\ndata: [DONE]\n\n")
    if depth + 1 > MAX_DEPTH:
        assert guard.state is GuardState.FAILED and b'"upstream_error"' in out
    else:
        assert guard.state is GuardState.DONE
    # An error body: relayed, or a generic error of its status.
    body = b'{"error":{"message":"hi","metadata":' + deep + b"}}"
    checked = check_error_body(_POLICY, body, 400)
    if checked is not None:
        assert json_loads(checked)["error"]["message"]
    assert (checked is None) == (depth + 2 <= MAX_DEPTH)


# ---- case-variant keys ---------------------------------------------------------------------

# A body with every kind of object whose fields the proxy reads by name. Go's encoding/json
# (Ollama) matches keys to fields ignoring case, with simple folding (LONG S is an s, KELVIN
# SIGN a k), so any variant of one of these keys, beside the key or instead of it, is a 400.
_CASE_BODY: dict[str, Any] = {
    "model": "m",
    "stream": False,
    "messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}], "name": "ann"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "thinking",
            "thinking": "more",
            "reasoning_details": [{"type": "reasoning.text", "text": "t", "summary": "s"}],
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d"}}],
}
_CASE_LEVELS: list[tuple[tuple[Any, ...], str]] = [
    ((), key) for key in ("model", "messages", "stream", "tools", "stop", "max_tokens")
]
_CASE_LEVELS += [(("messages", 0), key) for key in ("role", "content")]
_CASE_LEVELS += [(("messages", 1), key) for key in ("name", "content")]
_CASE_LEVELS += [(("messages", 1, "content", 0), key) for key in ("type", "text", "refusal")]
_CASE_LEVELS += [
    (("messages", 2), key)
    for key in ("reasoning_content", "thinking", "reasoning_details", "tool_calls", "refusal")
]
_CASE_LEVELS += [(("messages", 2, "reasoning_details", 0), key) for key in ("text", "summary")]
_CASE_LEVELS += [(("messages", 2, "tool_calls", 0), key) for key in ("function", "custom")]
_CASE_LEVELS += [(("messages", 2, "tool_calls", 0, "function"), k) for k in ("name", "arguments")]
_CASE_LEVELS += [(("messages", 3), "tool_call_id")]
_CASE_LEVELS += [(("tools", 0), "function"), (("tools", 0, "function"), "name")]
_FOLDS_TO = {"s": "\u017f", "k": "\u212a"}  # LONG S, KELVIN SIGN


@st.composite
def case_variants(draw: st.DrawFn, key: str) -> str:
    """``key`` with some letters in the other case, or as the characters Go folds onto them."""
    chars = []
    for char in key:
        options = [char, char.swapcase()]
        if char.lower() in _FOLDS_TO:
            options.append(_FOLDS_TO[char.lower()])
        chars.append(draw(st.sampled_from(options)))
    variant = "".join(chars)
    return variant if variant != key else key.upper()


@fuzz(weight=2)
@given(
    data=st.data(),
    level=st.sampled_from(_CASE_LEVELS),
    beside=st.booleans(),
    value=st.sampled_from(["build a bomb", ["x"], {"text": "x"}, None, True]),
)
def test_case_variant_keys_are_refused_at_every_level(
    data: st.DataObject, level: tuple[tuple[Any, ...], str], beside: bool, value: Any
) -> None:
    path, key = level
    body = json.loads(json.dumps(_CASE_BODY))
    parse_chat_request(json.dumps(body).encode())  # the body itself is fine
    holder = body
    for step in path:
        holder = holder[step]
    variant = data.draw(case_variants(key))
    if not beside:
        holder.pop(key, None)
    holder[variant] = value
    raw = json.dumps(body, ensure_ascii=data.draw(st.booleans())).encode()
    with pytest.raises(BadRequest) as raised:
        parse_chat_request(raw)
    check_refused(raised.value)


# ---- Unicode variants: decomposed text and blank-looking characters --------------------------

# The normalizer reads canonically equivalent texts alike and every blank-looking character as
# a space (tests/shields/test_normalize_unicode.py). Fuzzed here through a policy's output stage:
# the
# default policy's banned phrases with accents added, decomposed or composed, their words
# separated by any blank (a Hangul filler, the Braille blank, an ideographic space), cut into a
# stream anywhere (between a letter and its marks too), must be found as in the whole text, and
# nothing found may start in text already declared safe.
_BLANK_SEPARATORS = [" ", "\u3164", "\uffa0", "\u2800", "\u3000", "\u00a0", "\u2007", "\u115f"]
_MARKS = ["", "\u0301", "\u0308", "\u0327\u0301", "\u0336"]
_PROSE = ["Sure,", "here", "is", "the", "für", "한국어", "が", "か\u3099", "plan", "\n"]
_OUTPUT = default_policy().output_shields


@st.composite
def unicode_variant_texts(draw: st.DrawFn) -> tuple[str, bool]:
    """A text of prose and maybe a banned phrase, each word decorated and separated by blanks;
    and whether the phrase is in it."""
    words = draw(st.lists(st.sampled_from(_PROSE), max_size=8))
    banned = draw(st.booleans())
    if banned:
        phrase = draw(st.sampled_from(["build a bomb", "make napalm", "synthesize sarin"]))
        words.insert(draw(st.integers(0, len(words))), phrase)
    pieces = []
    for word in words:
        parts = []
        for word_part in word.split(" "):
            letters = [char + draw(st.sampled_from(_MARKS)) for char in word_part]
            parts.append("".join(letters))
        pieces.append(draw(st.sampled_from(_BLANK_SEPARATORS)).join(parts))
    text = draw(st.sampled_from(_BLANK_SEPARATORS)).join(pieces)
    form = draw(st.sampled_from(["NFC", "NFD", "NFKC", "NFKD", None]))
    return (unicodedata.normalize(form, text) if form else text), banned


@fuzz(weight=2)
@given(sample=unicode_variant_texts(), cuts=st.lists(st.integers(0, 300), max_size=10))
def test_decomposed_and_blank_separated_variants_stream_as_they_read_whole(
    sample: tuple[str, bool], cuts: list[int]
) -> None:
    text, banned = sample
    whole = check_text(_OUTPUT, text)
    if banned:
        assert any(f.shield_type == "denylist" for f in whole), repr(text)
    scan = TextScan(_OUTPUT, holdback=default_policy().holdback, adaptive=True)
    streamed: list[Finding] = []
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    for lo, hi in itertools.pairwise([0, *points, len(text)]):
        released = scan.safe_end
        found = scan.feed(text[lo:hi])
        assert all(f.start >= released for f in found), (released, found)
        streamed += found
    streamed += scan.finish()
    # Blocking findings: the same shields at the same starts (a whole text's span may also
    # swallow marks that follow it, which a stream had not received yet).
    assert {(f.shield_id, f.start) for f in streamed if f.action is Action.BLOCK} == {
        (f.shield_id, f.start) for f in whole if f.action is Action.BLOCK
    }
