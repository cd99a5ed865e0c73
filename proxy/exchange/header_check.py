"""The upstream's response headers through the output shields before they are relayed.

A header is upstream text the client receives as surely as the body: a debugging header that
echoes a key (``X-Upstream-Auth: sk-...``), a router that copies the provider's raw answer into
``X-Error-Detail``, or a hostile upstream that puts there what the body's shields would block.
Every relayed header (``response_headers``: hop-by-hop, framing and cookies already stay
behind) is read as the line ``name: value``; the lines are checked as one text, joined by
newlines, in one scan. A line that an enforced finding touches — to block or to redact — is not
relayed at all: a header is not prose, and half a header is no better than none. Findings are
logged, counted and audited as output findings (never their text); in monitor mode they are
recorded and the headers go as they came.

Most lines repeat from reply to reply (``Content-Type``, ``Server``, rate-limit ceilings), so
the lines a policy passed are remembered (``proxy.exchange.passed_texts``) and only the new ones
(a ``Date``, a request id) are scanned: a reply's headers cost a scan of a few dozen characters.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from aiohttp import web
from multidict import CIMultiDict

from proxy.exchange.envelope_check import outside_answer_shields
from proxy.exchange.passed_texts import passed_texts
from proxy.state import policy_for, record_findings
from proxy.upstream.client import response_headers
from shields.base import Stage
from shields.policy import CompiledPolicy
from shields.scan import check_text

__all__ = ["guarded_response_headers"]

log = logging.getLogger("shieldgate.headers")


def guarded_response_headers(
    request: web.Request,
    upstream: Mapping[str, str],
    endpoint: str,
    policy: CompiledPolicy | None = None,
) -> CIMultiDict[str]:
    """The headers to relay with a reply: ``response_headers(upstream)`` less every header an
    enforced output finding touches. ``policy``: the request's (as the endpoint sees it);
    by default the one ``policy_for`` fixed."""
    headers = response_headers(upstream)
    if policy is None:
        policy = policy_for(request)
    shields = outside_answer_shields(policy)
    if not shields or not headers:
        return headers
    passed = passed_texts(policy)
    items = list(headers.items())
    lines = [f"{name}: {value}" for name, value in items]
    unknown = [index for index, line in enumerate(lines) if line not in passed]
    if not unknown:
        return headers
    offsets: list[int] = []
    start = 0
    for index in unknown:
        offsets.append(start)
        start += len(lines[index]) + 1
    text = "\n".join([lines[index] for index in unknown])
    rule = policy.enforcement
    found = check_text(shields, text, fail_closed=rule.fail_closed)
    if not found:
        passed.remember([lines[index] for index in unknown])
        return headers
    record_findings(request, Stage.OUTPUT, found, endpoint)
    enforced = rule.enforced(found)
    if not enforced:
        return headers
    touched: set[int] = set()
    for finding in enforced:
        end = max(finding.end, finding.start + 1)
        for position, index in enumerate(unknown):
            line_start = offsets[position]
            if finding.start < line_start + len(lines[index]) + 1 and end > line_start:
                touched.add(index)
    # Not their names: a hostile upstream chooses those too.
    log.warning("%d upstream response header(s) withheld by the output policy", len(touched))
    kept: CIMultiDict[str] = CIMultiDict()
    for index, (name, value) in enumerate(items):
        if index not in touched:
            kept.add(name, value)
    return kept
