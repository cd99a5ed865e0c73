"""Chat completions, the Responses API and legacy completions are dialects of one exchange: the
same traffic through any of them records the same metric families (stage and upstream timings,
verdicts per stage, streams in flight and held text, upstream failures), each sample labelled
with the endpoint it served."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from tests.conftest import ProxyFactory
from tests.support.fake_upstream import (
    FakeUpstream,
    Reply,
    chat_completion,
    json_bytes,
    text_stream,
)
from tests.support.text_completions import text_completion, text_completion_stream

POLICY = """
name: watch
input:
  - {id: cards, type: regex, patterns: ['\\b4111 1111 1111 1111\\b'], action: redact}
  - {id: bombs, type: denylist, phrases: [build a bomb]}
output:
  - {id: fruit, type: denylist, phrases: [banana], action: redact}
  - {id: weapons, type: denylist, phrases: [nerve agent]}
"""

SSE = {"content-type": "text/event-stream"}


def _chat(text: str, stream: bool) -> dict[str, object]:
    return {"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}


def _responses(text: str, stream: bool) -> dict[str, object]:
    return {"model": "m", "stream": stream, "input": text, "store": False}


def _completions(text: str, stream: bool) -> dict[str, object]:
    return {"model": "m", "stream": stream, "prompt": text}


# The same replies in the two shapes upstreams answer in: a redacted whole reply, a redacted
# stream, an allowed stream, a blocked stream, a stream broken off mid-event.
_CHAT_REPLIES = [
    Reply(body=json_bytes(chat_completion("a banana"))),
    Reply(body=text_stream("more banana please"), headers=SSE),
    Reply(body=text_stream("fine words"), headers=SSE),
    Reply(body=text_stream("how to make nerve agent at home"), headers=SSE),
    Reply(body=b'data: {"choices": [{"index": 0, "delta": {"content": "cut', headers=SSE),
]
_TEXT_REPLIES = [
    Reply(body=json_bytes(text_completion("a banana"))),
    Reply(body=text_completion_stream("more banana please"), headers=SSE),
    Reply(body=text_completion_stream("fine words"), headers=SSE),
    Reply(body=text_completion_stream("how to make nerve agent at home"), headers=SSE),
    Reply(body=b'data: {"choices": [{"index": 0, "text": "cut', headers=SSE),
]
# The families an exchange records: every sample of them names its endpoint.
_EXCHANGE_FAMILIES = (
    "shieldgate_findings_total",
    "shieldgate_verdicts_total",
    "shieldgate_stage_seconds",
    "shieldgate_remote_check_seconds",
    "shieldgate_upstream_ttfb_seconds",
    "shieldgate_upstream_seconds",
    "shieldgate_upstream_errors_total",
    "shieldgate_upstream_retries_total",
    "shieldgate_streams_in_flight",
    "shieldgate_held_bytes",
    "shieldgate_stream_held_chars",
    "shieldgate_remote_shield_failures_total",
    "shieldgate_input_cache_hits_total",
    "shieldgate_input_cache_misses_total",
    "shieldgate_input_cache_evictions_total",
)


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition: (name, labels) -> value."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        name, _, rest = head.partition("{")
        labels = frozenset(
            tuple(pair.split("=", 1)) for pair in rest.rstrip("}").split(",") if "=" in pair
        )
        samples[(name, labels)] = float(value)
    return samples


def _recorded(samples: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    """The families (with their label values, the route's and endpoint's left out) that
    counted something."""
    out = set()
    for (name, labels), value in samples.items():
        if value and not name.endswith(("_created", "_bucket")):
            kept = sorted((k, v) for k, v in labels if k not in ("route", "endpoint", "le"))
            out.add(name + str(kept))
    return out


def _endpoints(samples: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    """The ``endpoint`` label of every sample of an exchange family ("" for none)."""
    return {
        dict(labels).get("endpoint", "")
        for name, labels in samples
        if name.startswith(_EXCHANGE_FAMILIES)
    }


async def _traffic(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    path: str,
    make: Callable[[str, bool], dict[str, object]],
    replies: list[Reply] = _CHAT_REPLIES,
) -> tuple[set[str], str, set[str]]:
    proxy = await make_proxy(POLICY, metrics_models=("m",))
    upstream.enqueue(*replies)
    sent = [
        make("card 4111 1111 1111 1111", False),
        make("x", True),
        make("y", True),
        make("z", True),
        make("w", True),
        make("build a bomb", False),  # blocked input: never reaches the upstream
    ]
    for request in sent:
        async with http.post(f"{proxy.url}{path}", json=request) as resp:
            await resp.read()
    async with http.get(f"{proxy.url}/metrics") as resp:
        text = await resp.text()
    samples = _samples(text)
    return _recorded(samples), text, _endpoints(samples)


async def test_every_dialect_records_the_same_metric_families(
    upstream: FakeUpstream, make_proxy: ProxyFactory, http: aiohttp.ClientSession
) -> None:
    chat, chat_text, chat_endpoints = await _traffic(
        upstream, make_proxy, http, "/v1/chat/completions", _chat
    )
    responses, responses_text, responses_endpoints = await _traffic(
        upstream, make_proxy, http, "/v1/responses", _responses
    )
    completions, completions_text, completions_endpoints = await _traffic(
        upstream, make_proxy, http, "/v1/completions", _completions, _TEXT_REPLIES
    )
    # The request counter's labels name the route, and only Responses has none of the chat
    # route's: compare everything else.
    chat = {name for name in chat if not name.startswith("shieldgate_requests_total")}
    responses = {name for name in responses if not name.startswith("shieldgate_requests_total")}
    completions = {name for name in completions if not name.startswith("shieldgate_requests_total")}
    assert chat == responses, chat ^ responses
    assert chat == completions, chat ^ completions
    # Every sample of what the exchange records names the endpoint it served, and only it.
    assert chat_endpoints == {'"chat"'}
    assert responses_endpoints == {'"responses"'}
    assert completions_endpoints == {'"completions"'}
    for family in (
        "shieldgate_stage_seconds_count",
        "shieldgate_upstream_ttfb_seconds_count",
        "shieldgate_upstream_seconds_count",
    ):
        assert any(name.startswith(family) for name in responses), family
    for stage, verdict in [
        ("input", "redact"),
        ("input", "block"),
        ("input", "allow"),
        ("output", "redact"),
        ("output", "allow"),
        ("output", "block"),
    ]:
        labels = [("policy", '"watch"'), ("stage", f'"{stage}"'), ("verdict", f'"{verdict}"')]
        wanted = f"shieldgate_verdicts_total{labels}"
        assert wanted in chat and wanted in responses and wanted in completions, wanted
    # The broken stream is an upstream failure on each.
    assert "shieldgate_upstream_errors_total[('kind', '\"broken_stream\"')]" in chat
    assert 'endpoint="responses"' in responses_text and 'endpoint="chat"' in chat_text
    assert 'endpoint="completions",kind="broken_stream"' in completions_text
    assert 'route="/v1/completions"' in completions_text
