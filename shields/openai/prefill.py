"""A request's prefill: the assistant text the model is asked to continue, and how the output
stage reads a reply that continues it.

A chat request whose last message is the assistant's is a *prefill*: llama.cpp's server
continues that message by default (``--no-prefill-assistant`` turns it off), vLLM and SGLang
do with ``continue_final_message: true``, Mistral and DeepSeek with ``prefix: true`` on it, and
Anthropic's Messages API always (a final assistant turn). Without those flags vLLM starts a new
turn instead; the proxy cannot know which server it talks to, so every trailing assistant
message counts as a prefill (failing toward checking: at worst a phrase is read across a turn's
start). The Responses API's input reaches the proxy as the same chat messages.

The model's reply then continues the prefill's text: "Sure, to make" + " napalm you mix...".
The input stage sees only the prefill, the reply alone holds only the rest, so the output stage
reads each choice's ``content`` as the prefill followed by the reply (``PREFILL_WINDOW``
characters of it at most). A finding that lies wholly in the prefill is the input stage's to
judge and is dropped; one that runs into the reply is the reply's, mapped onto the reply's part
of it (``reply_findings``): it blocks, or its redaction removes the reply's part of the match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from shields.base import Finding

__all__ = ["PREFILL_FIELD", "PREFILL_WINDOW", "prefill_of", "reply_findings"]

# The reply field that continues the prefill: the assistant message's text.
PREFILL_FIELD = "content"
# How much of the prefill's end the output stage reads before each choice's content: a match
# that runs into the reply from further back is not seen. It bounds the cost of a long prefill
# (read again for each of a request's ``n`` choices) far above any shipped shield's reach.
PREFILL_WINDOW = 64 * 1024


def prefill_of(body: Mapping[str, Any]) -> str:
    """The end of the text a request's model continues (as the request goes upstream: with
    the input stage's redactions); empty when its last message is not the assistant's."""
    messages = body.get("messages")
    if type(messages) is not list or not messages:
        return ""
    last = messages[-1]
    if type(last) is not dict or last.get("role") != "assistant":
        return ""
    content = last.get("content")
    if type(content) is str:
        text = content
    elif type(content) is list:
        # Text parts as a template renders them, one after the other.
        text = "".join(
            part["text"]
            for part in content
            if type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str
        )
    else:
        return ""
    return text[-PREFILL_WINDOW:]


def reply_findings(findings: Sequence[Finding], base: int) -> list[Finding]:
    """Findings on a prefill of ``base`` characters followed by a reply, as the reply's: those
    wholly inside the prefill dropped, the others' offsets moved onto the reply (a match that
    starts in the prefill starts at the reply's first character). A finding without a span (a
    shield that failed) is kept."""
    if not base:
        return list(findings)
    kept = []
    for finding in findings:
        if finding.start < finding.end <= base:
            continue
        kept.append(
            replace(finding, start=max(finding.start - base, 0), end=max(finding.end - base, 0))
        )
    return kept
