"""Malformed and hostile HTTP requests: always an OpenAI-shaped JSON error, never a 500, a hang,
an echo of the request's bytes or the prompt in the logs.

The requests are written byte for byte on raw sockets (no client library would send most of
them) to the real server: the proxy started by ``make_proxy`` and, for the logs, the
``shieldgate serve`` command itself with its default JSON logs on stderr.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage
from yarl import URL

from proxy.serving.server import RunningServer
from proxy.settings import Settings
from proxy.upstream.client import Upstream
from tests.conftest import FAST_SETTINGS, ProxyFactory
from tests.proxy.serving.test_cli import running_proxy, stop
from tests.support.fake_upstream import FakeUpstream, json_bytes, models_list

SECRET = "MY SECRET PROMPT sk-live-abc"
SECRET_BODY = json.dumps({"messages": [{"role": "user", "content": SECRET}]}).encode()
GOOD_BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
TIMEOUT = 5.0  # a hang fails the test after this long; every answer here takes milliseconds


# --- raw HTTP ---------------------------------------------------------------------------------


async def exchange(port: int, *parts: bytes, pause: float = 0.0, to_eof: bool = True) -> bytes:
    """Writes ``parts`` (``pause`` seconds apart) and reads until the server closes (or, with
    ``to_eof=False``, until one whole response is in) or ``TIMEOUT`` passes (then the result
    ends with ``<<HANG>>``)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for i, part in enumerate(parts):
            if i and pause:
                await asyncio.sleep(pause)
            writer.write(part)
            await writer.drain()
        received = b""
        try:
            async with asyncio.timeout(TIMEOUT):
                while chunk := await reader.read(65536):
                    received += chunk
                    if not to_eof and complete(received):
                        break
        except TimeoutError:
            received += b"<<HANG>>"
        return received
    finally:
        writer.close()


def complete(raw: bytes) -> bool:
    head, separator, rest = raw.partition(b"\r\n\r\n")
    found = re.search(rb"(?im)^content-length: *([0-9]+)", head)
    return bool(separator) and found is not None and len(rest) >= int(found[1])


def first_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-cased names) and body of the first response in ``raw``."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", len(rest)))
    return int(status_line.split()[1]), headers, rest[:length]


def assert_openai_error(raw: bytes, status: int, code: str | None = None) -> dict[str, Any]:
    assert b"<<HANG>>" not in raw, raw
    got, headers, body = first_response(raw)
    assert got == status, raw
    assert headers["content-type"].startswith("application/json"), raw
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    if code is not None:
        assert error["code"] == code, error
    # Not one byte of what the client sent comes back.
    assert b"SECRET" not in raw and b"sk-live" not in raw, raw
    return dict(error)


def post(
    headers: bytes, body: bytes = b"", path: bytes = b"/v1/chat/completions", *, length: bool
) -> bytes:
    start = b"POST %s HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n" % path
    if length:
        headers += b"Content-Length: %d\r\n" % len(body)
    return start + headers + b"\r\n" + body


def chunked(body: bytes, size_line: bytes | None = None) -> bytes:
    size = size_line if size_line is not None else b"%x" % len(body)
    return size + b"\r\n" + body + b"\r\n0\r\n\r\n"


@pytest.fixture
async def proxy_port(make_proxy: ProxyFactory) -> int:
    server: RunningServer = await make_proxy()
    return server.port


def secret_in(records: list[logging.LogRecord]) -> list[str]:
    """The log records (formatted as a handler would, traceback included) that quote the
    secret."""
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    texts = [formatter.format(record) for record in records]
    return [text for text in texts if "SECRET" in text or "sk-live" in text]


# --- parser errors: JSON answers, nothing echoed ----------------------------------------------

PARSER_ERRORS = {
    # No Content-Length: the body is read as the next request, which is garbage.
    "body without length after connection close": post(
        b"Connection: close\r\n", SECRET_BODY, length=False
    ),
    "bad chunk size": post(
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n",
        chunked(SECRET_BODY, size_line=SECRET_BODY),
        length=False,
    ),
    "absurd content length": post(
        b"Content-Length: 99999999999999999999999\r\n", SECRET_BODY, length=False
    ),
    "negative content length": post(b"Content-Length: -1\r\n", SECRET_BODY, length=False),
    "content length and chunked": post(
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", chunked(SECRET_BODY), length=False
    ),
}


@pytest.mark.parametrize("request_bytes", PARSER_ERRORS.values(), ids=PARSER_ERRORS.keys())
async def test_unparsable_request_is_an_openai_400_without_its_bytes(
    proxy_port: int,
    upstream: FakeUpstream,
    request_bytes: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    raw = await exchange(proxy_port, request_bytes)
    error = assert_openai_error(raw, 400, "invalid_http_request")
    assert "could not parse" in error["message"]
    assert upstream.requests == []
    assert secret_in(caplog.records) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("encoding", [b"br", b"zstd"])
async def test_unsupported_content_encoding_is_an_openai_415(
    proxy_port: int, upstream: FakeUpstream, encoding: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    request = post(b"Content-Encoding: %s\r\n" % encoding, SECRET_BODY, length=True)
    raw = await exchange(proxy_port, request)
    error = assert_openai_error(raw, 415, "unsupported_content_encoding")
    assert "Brotli" not in error["message"]  # aiohttp's advice to install a library
    assert upstream.requests == []
    assert secret_in(caplog.records) == []


async def test_a_chunk_size_broken_mid_body_is_a_400_not_a_hang(
    proxy_port: int, upstream: FakeUpstream
) -> None:
    # The headers and a first chunk arrive, the handler starts reading; then a chunk size that
    # is not hex. aiohttp's parser leaves the body open: the handler would wait forever.
    head = post(b"Transfer-Encoding: chunked\r\n", length=False) + b'5\r\n{"mod\r\n'
    raw = await exchange(proxy_port, head, b"zz\r\n" + SECRET_BODY + b"\r\n0\r\n\r\n", pause=0.2)
    assert_openai_error(raw, 400, "invalid_body")
    assert raw.count(b"HTTP/1.") == 1, raw  # one answer, then the connection is closed
    assert upstream.requests == []


# --- bodies that do not decode -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses"])
@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        (b"gzip", b"\x00\x01garbage"),
        (b"deflate", b"\x00\x01garbage"),
        (b"gzip", b"\x1f\x8b\x09" + gzip.compress(SECRET_BODY)[3:]),  # no such method
    ],
    ids=["gzip garbage", "deflate garbage", "gzip unknown method"],
)
async def test_a_body_that_does_not_decode_is_a_400_not_a_500(
    proxy_port: int,
    upstream: FakeUpstream,
    path: str,
    encoding: bytes,
    body: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    request = post(
        b"Content-Encoding: %s\r\nConnection: close\r\n" % encoding,
        body,
        path.encode(),
        length=True,
    )
    raw = await exchange(proxy_port, request)
    error = assert_openai_error(raw, 400, "invalid_body")
    assert "could not be decoded" in error["message"]
    assert upstream.requests == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert "Traceback" not in caplog.text


async def test_a_good_gzip_body_still_works(proxy_port: int, upstream: FakeUpstream) -> None:
    request = post(
        b"Content-Encoding: gzip\r\nConnection: close\r\n", gzip.compress(GOOD_BODY), length=True
    )
    raw = await exchange(proxy_port, request)
    assert first_response(raw)[0] == 200, raw
    assert upstream.requests[-1].json()["messages"][0]["content"] == "hi"


# --- duplicate keys: one parser's reading of the body must be every parser's --------------------

DUPLICATE_KEYS = {
    # The proxy reads the last value of a repeated key; an upstream that reads the first would
    # act on a value the shields never saw.
    "top-level messages": (
        b"/v1/chat/completions",
        b'{"model":"m","messages":[{"role":"user","content":"MY SECRET PROMPT"}],'
        b'"messages":[{"role":"user","content":"hi"}]}',
    ),
    "a message's content": (
        b"/v1/chat/completions",
        b'{"model":"m","messages":[{"role":"user","content":"MY SECRET","content":"hi"}]}',
    ),
    "a tool call's arguments": (
        b"/v1/chat/completions",
        b'{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c",'
        b'"type":"function","function":{"name":"f","arguments":"{}","arguments":"{}"}}]}]}',
    ),
    "responses input": (
        b"/v1/responses",
        b'{"model":"m","input":"MY SECRET PROMPT","input":"hi","store":false}',
    ),
}


@pytest.mark.parametrize("path,body", DUPLICATE_KEYS.values(), ids=DUPLICATE_KEYS.keys())
async def test_a_body_with_a_repeated_key_is_refused_before_the_upstream(
    proxy_port: int, upstream: FakeUpstream, path: bytes, body: bytes
) -> None:
    raw = await exchange(proxy_port, post(b"Connection: close\r\n", body, path, length=True))
    error = assert_openai_error(raw, 400)
    assert "appears twice in one object" in error["message"], error
    assert upstream.requests == []


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e999"])
async def test_nan_and_infinity_are_not_json_numbers(
    proxy_port: int, upstream: FakeUpstream, constant: bytes
) -> None:
    # Python's json reads them; the upstream's parser may refuse them or read something else.
    # (The Responses API refuses them naming the parameter: test_responses_hostile.py.)
    body = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":'
    body += constant + b"}"
    raw = await exchange(proxy_port, post(b"Connection: close\r\n", body, length=True))
    error = assert_openai_error(raw, 400)
    assert "is not a JSON number" in error["message"] or "too large" in error["message"], error
    assert upstream.requests == []


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-32-be"])
async def test_a_body_in_utf16_or_utf32_is_refused_before_the_upstream(
    proxy_port: int, upstream: FakeUpstream, encoding: str
) -> None:
    # JSON between systems is UTF-8 (RFC 8259). Python's parser would detect these from the
    # bytes; an upstream may read them otherwise, or not at all: one reading, or none.
    text = '{"model":"m","messages":[{"role":"user","content":"hi"}]}'
    raw = await exchange(
        proxy_port, post(b"Connection: close\r\n", text.encode(encoding), length=True)
    )
    error = assert_openai_error(raw, 400)
    assert "UTF-8" in error["message"] or "JSON" in error["message"], error
    assert upstream.requests == []


async def test_the_same_key_in_different_objects_is_fine(
    proxy_port: int, upstream: FakeUpstream
) -> None:
    body = (
        b'{"model":"m","messages":[{"role":"system","content":"be brief"},'
        b'{"role":"user","content":"hi"}]}'
    )
    raw = await exchange(proxy_port, post(b"Connection: close\r\n", body, length=True))
    assert first_response(raw)[0] == 200, raw
    assert upstream.requests[-1].body == body  # forwarded as it came


# --- Expect and Content-Length over the limit ---------------------------------------------------


async def test_expect_100_continue_over_the_limit_is_an_immediate_413(
    proxy_port: int, upstream: FakeUpstream
) -> None:
    head = post(b"Content-Length: 100000000\r\nExpect: 100-continue\r\n", length=False)
    # The body is never sent. (The server closes the connection after the answer, once
    # aiohttp's lingering close gives up waiting for a body: not waited for here.)
    raw = await exchange(proxy_port, head, to_eof=False)
    assert not raw.startswith(b"HTTP/1.1 100"), raw
    error = assert_openai_error(raw, 413, "payload_too_large")
    assert "larger than the limit" in error["message"]
    assert upstream.requests == []


async def test_expect_100_continue_within_the_limit_continues(
    proxy_port: int, upstream: FakeUpstream
) -> None:
    head = post(
        b"Content-Length: %d\r\nExpect: 100-continue\r\nConnection: close\r\n" % len(GOOD_BODY),
        length=False,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy_port)
    try:
        writer.write(head)
        async with asyncio.timeout(TIMEOUT):
            interim = await reader.readuntil(b"\r\n\r\n")
            assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
            writer.write(GOOD_BODY)
            raw = await reader.read()
    finally:
        writer.close()
    assert first_response(raw)[0] == 200, raw
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("path", [b"/v1/chat/completions", b"/v1/unknown"])
async def test_an_unknown_expectation_is_an_openai_417(
    proxy_port: int, upstream: FakeUpstream, path: bytes
) -> None:
    request = post(b"Expect: foo\r\n", GOOD_BODY, path, length=True)
    raw = await exchange(proxy_port, request)
    error = assert_openai_error(raw, 417)
    assert "foo" not in error["message"]
    assert upstream.requests == []


async def test_a_content_length_over_the_limit_is_refused_before_the_body(
    make_proxy: ProxyFactory, upstream: FakeUpstream
) -> None:
    server = await make_proxy(max_body_bytes=4096)
    # Only the headers: the 413 must not wait for 10 MB that are never sent.
    head = post(b"Content-Length: 10000000\r\n", length=False)
    raw = await exchange(server.port, head, to_eof=False)
    assert_openai_error(raw, 413, "payload_too_large")
    assert first_response(raw)[1]["connection"] == "close"
    assert upstream.requests == []


# --- the logs of `shieldgate serve` --------------------------------------------------------------


async def test_serve_logs_never_quote_a_malformed_request() -> None:
    async with running_proxy("--upstream", "http://127.0.0.1:9/v1") as proxy:
        answers = [
            await exchange(proxy.port, PARSER_ERRORS["body without length after connection close"]),
            await exchange(proxy.port, PARSER_ERRORS["bad chunk size"]),
            await exchange(
                proxy.port,
                post(b"Content-Encoding: br\r\nConnection: close\r\n", SECRET_BODY, length=True),
            ),
            await exchange(
                proxy.port,
                post(
                    b"Content-Encoding: gzip\r\nConnection: close\r\n", b"\x00garbage", length=True
                ),
            ),
        ]
        _, stderr = await stop(proxy)
    assert [first_response(raw)[0] for raw in answers] == [400, 400, 415, 400]
    for raw in answers:
        assert first_response(raw)[1]["content-type"].startswith("application/json")
        assert b"SECRET" not in raw
    assert "SECRET" not in stderr and "sk-live" not in stderr, stderr
    logs = [json.loads(line) for line in stderr.splitlines()]
    rejected = [entry for entry in logs if entry["logger"] == "aiohttp.server"]
    # One line per malformed request, naming the exception class: no traceback, no bytes.
    assert [entry["message"] for entry in rejected] == [
        "rejected a malformed request from 127.0.0.1: BadHttpMessage",
        "rejected a malformed request from 127.0.0.1: BadHttpMessage",
        "rejected a malformed request from 127.0.0.1: ContentEncodingError",
    ]
    assert all(entry["level"] == "info" and "error" not in entry for entry in rejected)
    assert not [entry for entry in logs if entry["level"] == "error"], stderr


def test_aiohttp_tracebacks_keep_their_frames_but_lose_their_text() -> None:
    from proxy.ops.logs import JsonFormatter, RedactExceptions

    def record_of(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException as raised:
            record = logging.makeLogRecord(
                {"name": "aiohttp.server", "msg": "Error handling request from %s"}
            )
            record.args = ("127.0.0.1",)
            record.exc_info = (type(raised), raised, raised.__traceback__)
            return record

    client = record_of(BadHttpMessage(SECRET))
    assert RedactExceptions().filter(client)
    entry = json.loads(JsonFormatter().format(client))
    assert entry["message"] == "Error handling request from 127.0.0.1: BadHttpMessage"
    assert "error" not in entry

    prompt = SECRET  # (the traceback quotes source lines: this one names no secret)
    try:
        try:
            raise KeyError(prompt)
        except KeyError as inner:
            raise RuntimeError(prompt) from inner
    except RuntimeError as outer:
        bug = record_of(outer)
    assert RedactExceptions().filter(bug)
    formatted = JsonFormatter().format(bug)
    assert SECRET not in formatted
    trace = json.loads(formatted)["error"]
    assert "Traceback (most recent call last)" in trace and "builtins.KeyError" in trace
    assert "raise RuntimeError(prompt) from inner" in trace  # the frames are kept
    assert trace.endswith("builtins.RuntimeError")
    plain = logging.Formatter("%(message)s").format(bug)
    assert SECRET not in plain and "builtins.RuntimeError" in plain


# --- the client's query string, forwarded as it came ------------------------------------------


class RawUpstream:
    """An upstream that records the request line exactly as it arrives."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.lines.append(head.split(b"\r\n", 1)[0])
        body = json_bytes(models_list("m"))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(body) + body
        )
        await writer.drain()
        writer.close()

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"


@pytest.fixture
async def raw_upstream() -> AsyncIterator[RawUpstream]:
    upstream = RawUpstream()
    upstream.server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    async with upstream.server:
        yield upstream


QUERIES = [
    "x=%23frag&y=1",  # an escaped '#': decoded, the rest of the query became a fragment
    "x=%2F..%2F..%2Fembeddings",  # escaped slashes stay escaped
    "a=%26b%3Dc",  # an escaped '&' and '=' stay one value
    "x=a+b&z=%2B",
    "q=%E2%82%AC",
    "x=%00",
]


async def test_models_query_reaches_the_upstream_as_the_client_sent_it(
    make_proxy: ProxyFactory, raw_upstream: RawUpstream
) -> None:
    import aiohttp

    server = await make_proxy(upstream=raw_upstream.base_url)
    async with aiohttp.ClientSession() as session:
        for query in QUERIES:
            url = URL(f"{server.url}/v1/models?{query}", encoded=True)
            async with session.get(url) as reply:
                assert reply.status == 200, await reply.text()
    assert raw_upstream.lines == [f"GET /v1/models?{q} HTTP/1.1".encode() for q in QUERIES]


@pytest.mark.parametrize(
    ("query", "sent"),
    [
        ("x=#frag", "x=%23frag"),  # a raw '#' cannot end the query
        ("a=b c", "a=b%20c"),
        ('a="<>', "a=%22%3C%3E"),
        ("a=%zz&b=%", "a=%25zz&b=%25"),  # a '%' that starts no escape is one
        ("a=é", "a=%C3%A9"),
        ("a=\ud800", "a=%ED%A0%80"),  # even a lone surrogate: never a crash
        ("@evil.example/x?y=../../embeddings", "@evil.example/x?y=../../embeddings"),
        ("/../embeddings HTTP/1.1\r\nHost: evil", "/../embeddings%20HTTP/1.1%0D%0AHost:%20evil"),
    ],
)
async def test_a_query_can_only_ever_be_the_upstream_query(
    raw_upstream: RawUpstream, query: str, sent: str
) -> None:
    from proxy.upstream.client import encoded_query

    assert encoded_query(query) == sent
    upstream = Upstream(Settings(upstream=raw_upstream.base_url, **FAST_SETTINGS))
    await upstream.start()
    try:
        async with upstream.request(
            "GET", "models", headers={}, query=query, endpoint="models"
        ) as reply:
            assert reply.status == 200
    finally:
        await upstream.close()
    assert raw_upstream.lines == [f"GET /v1/models?{sent} HTTP/1.1".encode()]
    assert re.fullmatch(rb"GET /v1/models\?[!-~]+ HTTP/1\.1", raw_upstream.lines[0])


async def test_runner_falls_back_to_aiohttps_own_server_if_its_internals_change(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """proxy.serving.connection hooks in below aiohttp's public API: an aiohttp whose internals
    differ must still serve, with its own error answers, and say so."""
    from proxy.serving import connection

    runner = connection.ProxyRunner(web.Application())
    await runner.setup()
    try:
        assert isinstance(runner.server, connection._Server)
    finally:
        await runner.cleanup()

    def changed(*args: object, **kwargs: object) -> None:
        raise TypeError("unexpected keyword argument")

    monkeypatch.setattr(connection, "_Server", changed)
    runner = connection.ProxyRunner(web.Application())
    with caplog.at_level(logging.WARNING, logger="shieldgate.server"):
        await runner.setup()
    try:
        assert type(runner.server) is web.Server
        assert "its own error answers" in caplog.text
    finally:
        await runner.cleanup()


async def test_runner_falls_back_if_aiohttp_no_longer_calls_an_overridden_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from proxy.serving import connection

    monkeypatch.setattr(connection, "_OVERRIDDEN", (*connection._OVERRIDDEN, "handle_bytes"))
    runner = connection.ProxyRunner(web.Application())
    await runner.setup()
    try:
        assert type(runner.server) is web.Server
    finally:
        await runner.cleanup()
