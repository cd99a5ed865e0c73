"""Evaluating a policy stage outside the proxy, with the proxy's own reading and stages.

The policy's own cases, ``shieldgate scan`` and the shield evaluation all go through here. A
conversation (input stage) is read as the chat request it stands for
(``shields.openai.request``) and checked by the proxy's input stage
(``shields.openai.input_check``); the texts of a reply (output stage) as a whole chat
completion, checked by the proxy's output stage for whole replies
(``shields.openai.reply_check``). So the findings, the verdict and the redactions are the
proxy's, without HTTP.

Remote shields run only when the caller passes a ``BlockingRemote`` (the network is opt-in for
offline tools); otherwise they are listed in ``Evaluation.skipped``. As in the proxy, they run
after the local shields, on the text those left, and not at all when a local shield blocked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shields.base import Action, Finding, Role, Stage, Verdict
from shields.openai.channels import Channel, channel_path, is_name
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField, joined_text
from shields.openai.input_check import check_input_texts
from shields.openai.reply import choice_message, reply_fields
from shields.openai.reply_check import check_reply_texts, withhold_side_channels
from shields.openai.request import PART_SEPARATOR, ChatRequest, read_chat_request
from shields.pipeline import BlockingRemote, latest_message
from shields.policy import CompiledPolicy
from shields.remote import JudgeRequest, RemoteShield
from shields.verdict import StageOutcome

__all__ = ["Evaluation", "TextResult", "evaluate", "evaluate_reply", "evaluate_request"]


@dataclass(frozen=True, slots=True)
class TextResult:
    role: Role | None
    text: str
    findings: tuple[Finding, ...]
    redacted: str  # the text as it would be forwarded (input) or sent (output)
    # Where the text is: the message (input) or choice (output) it belongs to, None for a
    # request's own fields (``tools``...); and which text of it (``content``, the message's
    # own text fields; ``tool_calls[0].function.arguments``, ``tools``...).
    message: int | None = None
    where: str = "content"


@dataclass(frozen=True, slots=True)
class Evaluation:
    verdict: Verdict
    texts: tuple[TextResult, ...]
    request_findings: tuple[Finding, ...]  # request-wide checks (input stage)
    skipped: tuple[str, ...] = ()  # remote shields not asked (no network given)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for t in self.texts for f in t.findings) + self.request_findings


def evaluate(
    policy: CompiledPolicy,
    stage: Stage,
    texts: Sequence[tuple[Role | None, str]],
    *,
    remote: BlockingRemote | None = None,
) -> Evaluation:
    """What the policy decides for these texts: at the input stage a conversation, each text a
    message's content (``None`` as a role is the user's); at the output stage the texts of a
    reply, each the content of a choice. One ``TextResult`` per text, in order."""
    if not texts:
        return Evaluation(Verdict.ALLOW, (), ())
    if stage is Stage.INPUT:
        messages = [{"role": (role or Role.USER).value, "content": text} for role, text in texts]
        evaluation = evaluate_request(
            policy, read_chat_request({"messages": messages}), remote=remote
        )
    else:
        choices = [{"index": i, "message": {"content": text}} for i, (_, text) in enumerate(texts)]
        evaluation = evaluate_reply(policy, {"choices": choices}, remote=remote)
    # One result per text given, with the role given: an empty reply text has no channel.
    contents = {r.message: r for r in evaluation.texts if r.where == "content"}
    results = []
    for index, (role, text) in enumerate(texts):
        result = contents.get(index)
        if result is None:
            results.append(TextResult(role, text, (), text, index))
        else:
            results.append(TextResult(role, result.text, result.findings, result.redacted, index))
    return Evaluation(
        evaluation.verdict, tuple(results), evaluation.request_findings, evaluation.skipped
    )


def evaluate_request(
    policy: CompiledPolicy, request: ChatRequest, *, remote: BlockingRemote | None = None
) -> Evaluation:
    """The input stage over a chat request, as the proxy runs it (redactions are written into
    ``request.body``): one ``TextResult`` per text of the request that has any."""
    originals = [joined_text(text.fields, PART_SEPARATOR)[0] for text in request.texts]
    check = check_input_texts(policy, request)
    results = [
        TextResult(
            text.role,
            original,
            tuple(check.by_text.get(place, ())),
            joined_text(text.fields, PART_SEPARATOR)[0],
            text.message_index if text.message_index >= 0 else None,
            text.where,
        )
        for place, (text, original) in enumerate(zip(request.texts, originals, strict=True))
        if text.fields
    ]
    outcome, results, skipped = _with_remote(policy, Stage.INPUT, check.outcome, results, remote)
    return Evaluation(outcome.verdict, tuple(results), tuple(check.request_findings), skipped)


def evaluate_reply(
    policy: CompiledPolicy, completion: dict[str, Any], *, remote: BlockingRemote | None = None
) -> Evaluation:
    """The output stage over a whole chat completion, as the proxy runs it (redactions are
    written into ``completion``): one ``TextResult`` per channel of its choices (a choice's
    content, refusal, reasoning, each tool call's arguments and name...). Raises
    MalformedReply when the completion cannot be read."""
    originals = {channel: joined_text(fields)[0] for channel, fields in _channels(completion)}
    check = check_reply_texts(policy, completion)
    channels = _channels(completion)
    results = [
        TextResult(
            None,
            originals[channel],
            tuple(check.by_channel.get(channel, ())),
            joined_text(fields)[0],
            channel.choice,
            channel_path(channel),
        )
        for channel, fields in channels
    ]
    # Names are the local shields' (the proxy's remote shields judge the texts of a reply).
    judged = [not is_name(channel) for channel, _ in channels]
    outcome, updated, skipped = _with_remote(
        policy, Stage.OUTPUT, check.outcome, results, remote, judged
    )
    for (channel, fields), before, after in zip(channels, results, updated, strict=True):
        if after.redacted != before.redacted:
            # A remote redaction replaces the whole text, as the proxy writes it back.
            for place, text_field in enumerate(fields):
                text_field.write(after.redacted if place == 0 else "")
            choice = completion["choices"][channel.choice]
            withhold_side_channels(choice, choice.get("message"), audio=channel.field == "audio")
    return Evaluation(outcome.verdict, tuple(updated), (), skipped)


def _channels(completion: dict[str, Any]) -> list[tuple[Channel, list[TextField]]]:
    """The channels of a whole reply with their fields, as the output stage reads them."""
    if completion.get("error") is not None:
        raise MalformedReply("the reply reports an error")
    choices = completion.get("choices")
    if choices is None:
        return []
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    channels: dict[Channel, list[TextField]] = {}
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise MalformedReply("a choice is not an object")
        message = choice_message(choice, stream=False)
        for text_field in reply_fields(message, position, stream=False):
            channels.setdefault(text_field.channel, []).append(text_field)
    return list(channels.items())


def _with_remote(
    policy: CompiledPolicy,
    stage: Stage,
    outcome: StageOutcome,
    results: list[TextResult],
    remote: BlockingRemote | None,
    judged: Sequence[bool] | None = None,
) -> tuple[StageOutcome, list[TextResult], tuple[str, ...]]:
    """The remote shields after the local ones (not when those blocked): the outcome of both,
    the results with the remote findings, and the remote shields skipped (no network)."""
    shields = policy.remote(stage)
    if not shields or outcome.blocked:
        return outcome, results, ()
    if remote is None:
        return outcome, results, tuple(shield.id for shield in shields)
    checks: list[tuple[int, RemoteShield, JudgeRequest]] = []
    if stage is Stage.INPUT:
        conversation = tuple((r.role or Role.USER, r.redacted) for r in results)
        for shield in shields:
            index = latest_message(shield, conversation)
            if index is not None:
                text = conversation[index][1]
                request = JudgeRequest(stage, text, conversation[: index + 1], policy.name)
                checks.append((index, shield, request))
    else:
        for index, result in enumerate(results):
            if judged is not None and not judged[index]:
                continue
            for shield in shields:
                if result.redacted:
                    request = JudgeRequest(stage, result.redacted, (), policy.name)
                    checks.append((index, shield, request))
    found = remote.run(
        [(shield, request) for _, shield, request in checks],
        policy_on_error=policy.spec.on_error,
        enforcing=policy.enforcing,
    )
    updated = list(results)
    rule = policy.enforcement
    remote_outcome = StageOutcome()
    for (index, _, _), findings in zip(checks, found, strict=True):
        if not findings:
            continue
        remote_outcome.findings += findings
        result = updated[index]
        redacted = result.redacted
        for finding in rule.enforced(findings):
            if finding.action is Action.REDACT:
                redacted = finding.placeholder  # a remote verdict covers the whole text
                remote_outcome.redacted = True
        updated[index] = TextResult(
            result.role,
            result.text,
            result.findings + tuple(findings),
            redacted,
            result.message,
            result.where,
        )
    remote_outcome.blocked = rule.blocks(remote_outcome.findings)
    return outcome.merge(remote_outcome), updated, ()
