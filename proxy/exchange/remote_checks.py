"""Remote shields on whole texts: the request (input stage) and a non-stream reply.

They run after the local shields of the same stage (``shields.pipeline``): only when nothing
local blocked, on the text as the local shields left it.

Input: a judge must see every text the model will see — system and developer messages, the
request's tool definitions and other rendered fields (``request_keys.REQUEST_TEXTS`` in
``shields.openai``), a trailing system message — except what its ``roles`` leave out. Each
remote shield is shown the messages its roles cover, in order (and the assistant's turns as
context), and judges them as turns: a run of consecutive covered messages on one side (the
assistant's, or everyone else's: system, developer, user and tool text are all input to the
model, as a guard model's user turn) is one judged text, with what it is shown up to the run's
end as the conversation. A conversation sent again with one more turn asks only about what is
new: earlier turns are in the shield's verdict cache.

Output: each text of the reply that a client reads as one — a channel, as the local shields
and the stream guard read it: a choice's content parts joined, its ``reasoning_details`` items
joined, each tool call's arguments — is judged as the assistant's turn after the request's
conversation. Tool-call names are the local shields' (``channels.is_name``). A legacy
completion's texts are its choices' ``text`` (``shields.openai.text_completion``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.stream.remote_checks import RemoteContext
from shields.base import Finding, Role, Stage
from shields.openai.channels import Channel, is_name
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField, joined_text
from shields.openai.input_check import conversation_of
from shields.openai.reply import reply_fields
from shields.openai.reply_check import withhold_side_channels
from shields.openai.request import PART_SEPARATOR, ChatRequest
from shields.openai.text_completion import ReplyShape, text_completion_fields
from shields.pipeline import run_remote
from shields.policy import CompiledPolicy
from shields.remote import JudgeRequest, RemoteShield
from shields.scan import redact
from shields.verdict import Enforcement, StageOutcome

__all__ = ["check_input_remote", "check_reply_remote", "judged_turns"]


async def check_input_remote(
    policy: CompiledPolicy, chat: ChatRequest, remote: RemoteContext
) -> StageOutcome:
    shields = policy.remote(Stage.INPUT)
    conversation = conversation_of(chat)
    fields = _fields_by_message(chat)
    checks: list[tuple[RemoteShield, JudgeRequest]] = []
    judged: list[list[int]] = []
    for shield in shields:
        for turn, context in judged_turns(shield, conversation):
            text = PART_SEPARATOR.join(conversation[index][1] for index in turn)
            checks.append((shield, JudgeRequest(Stage.INPUT, text, context, policy.name)))
            judged.append(turn)
    results, outcome = await _run(policy, checks, remote)
    if not outcome.blocked:
        rule = policy.enforcement
        for turn, found in zip(judged, results, strict=True):
            turn_fields = [field for index in turn for field in fields[index]]
            outcome.redacted |= _rewrite(turn_fields, rule, found, PART_SEPARATOR)
    return outcome


def judged_turns(
    shield: RemoteShield, conversation: Sequence[tuple[Role, str]]
) -> list[tuple[list[int], tuple[tuple[Role, str], ...]]]:
    """What ``shield`` judges at the input stage: each run of consecutive non-empty messages
    its roles cover and on one side (assistant, or not), as their indices in ``conversation``,
    with the conversation it is shown up to the run's end: the covered messages, and the
    assistant's turns as context (a guard model reads a user turn as the answer to the turn
    before it; they are never part of a judged user turn)."""
    turns: list[tuple[list[int], tuple[tuple[Role, str], ...]]] = []
    shown: list[tuple[Role, str]] = []
    run: list[int] = []
    side: bool | None = None  # the run's side: True for the assistant's
    for index, (role, text) in enumerate(conversation):
        if not text:
            continue  # nothing for a judge to see; it does not part two turns either
        assistant = role is Role.ASSISTANT
        if not shield.applies_to(role):
            if assistant:
                shown.append((role, text))
            side = None  # what the shield does not judge parts the turns around it
            continue
        shown.append((role, text))
        if side is not assistant:
            run = []
            turns.append((run, ()))
            side = assistant
        run.append(index)
        turns[-1] = (run, tuple(shown))
    return turns


async def check_reply_remote(
    policy: CompiledPolicy,
    completion: dict[str, Any],
    remote: RemoteContext,
    *,
    shape: ReplyShape = ReplyShape.CHAT,
) -> StageOutcome:
    """Raises MalformedReply when the completion cannot be read."""
    shields = policy.remote(Stage.OUTPUT)
    choices = completion.get("choices")
    if not shields or choices is None:
        return StageOutcome()
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    # One text per channel, joined as the client (and the Responses translation) joins it.
    channels: dict[Channel, list[TextField]] = {}
    if shape is ReplyShape.TEXT:
        for _, text_field in text_completion_fields(completion):
            if text_field is not None:
                channels[text_field.channel] = [text_field]
    else:
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                raise MalformedReply("a choice is not an object")
            for field in reply_fields(choice.get("message"), position, stream=False):
                if field.text and not is_name(field.channel):
                    channels.setdefault(field.channel, []).append(field)
    texts = list(channels.items())
    checks = [
        (
            shield,
            JudgeRequest(Stage.OUTPUT, joined_text(fields)[0], remote.conversation, policy.name),
        )
        for _, fields in texts
        for shield in shields
    ]
    results, outcome = await _run(policy, checks, remote)
    if not outcome.blocked:
        rule = policy.enforcement
        for k, (channel, fields) in enumerate(texts):
            per_channel = results[k * len(shields) : (k + 1) * len(shields)]
            if _rewrite(fields, rule, [f for found in per_channel for f in found], ""):
                outcome.redacted = True
                # Its logprobs (and audio, for a transcript) would still say what was redacted.
                choice = choices[channel.choice]
                withhold_side_channels(
                    choice, choice.get("message"), audio=channel.field == "audio"
                )
    return outcome


async def _run(
    policy: CompiledPolicy,
    checks: list[tuple[RemoteShield, JudgeRequest]],
    remote: RemoteContext,
) -> tuple[list[list[Finding]], StageOutcome]:
    """Each check's findings, and the outcome: all of them, and whether they block."""
    results = await run_remote(
        checks,
        remote.backends,
        policy_on_error=policy.spec.on_error,
        enforcing=policy.enforcing,
        on_failure=remote.on_failure,
    )
    findings = [f for found in results for f in found]
    return results, StageOutcome(findings, blocked=policy.enforcement.blocks(findings))


def _fields_by_message(chat: ChatRequest) -> list[list[TextField]]:
    """Each message's text fields in order, as ``conversation_of`` joins them."""
    fields: dict[int, list[TextField]] = {}
    for text in chat.texts:
        fields.setdefault(text.message_index, []).extend(text.fields)
    return list(fields.values())


def _rewrite(
    fields: list[TextField], rule: Enforcement, findings: list[Finding], separator: str
) -> bool:
    """Applies whole-text redactions to the fields that make up one judged text (joined by
    ``separator``)."""
    spans = rule.redactions(findings)
    if not spans:
        return False
    offset = 0
    for field in fields:
        text = field.text
        field.write(redact(text, offset, spans))
        offset += len(text) + len(separator)
    return True
