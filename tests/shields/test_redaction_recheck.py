"""A redacted request text is checked again before it goes upstream.

A redaction can make a match the original text did not hold: the default policy strips
zero-width and tag characters from prompts (``hidden-text``), while the credentials shield
reads the original text, where such a character breaks a token apart — so stripping it used
to hand the upstream the joined, working token (found by black-box QA). What goes upstream is
now itself checked, round after round, and a text whose redactions keep uncovering matches is
blocked.
"""

from __future__ import annotations

import aiohttp
import pytest

from shields.openai.input_check import check_input_texts
from shields.openai.request import parse_chat_request
from shields.policy import parse_policy
from tests.conftest import ProxyFactory
from tests.support.fake_upstream import FakeUpstream

GITHUB_TOKEN = "ghp_az8EnCQZlX0SgTqTtfKV0XRYPpo3YiuPAeTv"
AWS_KEY = "AKIAQ3EGRK5JXWZY7N4T"


def broken(token: str, char: str) -> str:
    """``token`` with ``char`` in its middle."""
    half = len(token) // 2
    return token[:half] + char + token[half:]


@pytest.mark.parametrize("char", ["\u200b", "\u2060", "\U000e0041", "\u200c\u200d"])
@pytest.mark.parametrize("token", [GITHUB_TOKEN, AWS_KEY])
async def test_a_token_joined_by_stripping_hidden_text_never_goes_upstream(
    upstream: FakeUpstream,
    make_proxy: ProxyFactory,
    http: aiohttp.ClientSession,
    token: str,
    char: str,
) -> None:
    proxy = await make_proxy()  # the packaged default policy
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": f"my key {broken(token, char)}"}],
    }
    for _ in range(2):  # the second time the input cache answers for the text
        async with http.post(f"{proxy.url}/v1/chat/completions", json=body) as reply:
            assert reply.status == 200
            await reply.read()
    assert len(upstream.requests) == 2
    for request in upstream.requests:
        sent = request.json()["messages"][0]["content"]
        assert token not in sent
        assert sent == "my key [CREDENTIAL]"


def test_the_findings_of_the_second_round_are_reported() -> None:
    policy = parse_policy(
        """
name: t
input:
  - {id: hidden, type: invisible_text, action: redact}
  - {id: keys, type: secrets, action: redact, placeholder: "[K]"}
"""
    )
    chat = parse_chat_request(
        b'{"model": "m", "messages": [{"role": "user", "content": "x '
        + broken(GITHUB_TOKEN, "\\u200b").encode()
        + b'"}]}'
    )
    check = check_input_texts(policy, chat)
    shields = [finding.shield_id for finding in check.outcome.findings]
    assert shields == ["hidden", "keys"]
    assert check.outcome.redacted and not check.outcome.blocked
    assert chat.body["messages"][0]["content"] == "x [K]"


def test_a_redaction_that_keeps_uncovering_matches_is_blocked() -> None:
    # A placeholder that its own pattern matches: every round finds it again.
    policy = parse_policy(
        """
name: loop
input:
  - {id: loop, type: regex, action: redact, placeholder: "XXXX", patterns: ["X{4}"]}
"""
    )
    chat = parse_chat_request(
        b'{"model": "m", "messages": [{"role": "user", "content": "a XXXX"}]}'
    )
    check = check_input_texts(policy, chat)
    assert check.outcome.blocked
    assert check.outcome.findings[-1].label == "redaction_loop"


def test_a_plain_redaction_is_checked_once_more_and_passes() -> None:
    policy = parse_policy(
        """
name: once
input:
  - {id: keys, type: secrets, action: redact, placeholder: "[K]"}
"""
    )
    chat = parse_chat_request(
        b'{"model": "m", "messages": [{"role": "user", "content": "key '
        + AWS_KEY.encode()
        + b'"}]}'
    )
    check = check_input_texts(policy, chat)
    assert [finding.shield_id for finding in check.outcome.findings] == ["keys"]
    assert check.outcome.redacted and not check.outcome.blocked
    assert chat.body["messages"][0]["content"] == "key [K]"
