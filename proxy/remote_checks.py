"""Remote shields on whole texts: the request (input stage) and a non-stream reply.

They run after the local shields of the same stage (``shields.pipeline``): only when nothing
local blocked, on the text as the local shields left it. At the input stage each remote shield
judges the latest message whose role it applies to, with the conversation up to it as context;
at the output stage each text of the reply (content, reasoning, tool-call arguments) is judged
as the assistant's turn after the request's conversation.
"""

from __future__ import annotations

from typing import Any

from proxy.chat_request import PART_SEPARATOR, ChatRequest, InputCheck, conversation_of
from proxy.openai_texts import MalformedReply, TextField, reply_fields
from proxy.reply_check import ReplyCheck, withhold_side_channels
from proxy.stream_checks import RemoteContext
from shields.base import Action, Finding, Stage
from shields.pipeline import blocks, latest_message, run_remote
from shields.policy import CompiledPolicy
from shields.remote import JudgeRequest, RemoteShield
from shields.scan import merge_redactions, redact

__all__ = ["check_input_remote", "check_reply_remote"]


async def check_input_remote(
    policy: CompiledPolicy, chat: ChatRequest, remote: RemoteContext
) -> InputCheck:
    shields = policy.remote(Stage.INPUT)
    conversation = conversation_of(chat)
    fields = _fields_by_message(chat)
    checks: list[tuple[RemoteShield, JudgeRequest]] = []
    judged: list[int] = []
    for shield in shields:
        latest = latest_message(shield, conversation)
        if latest is None:
            continue
        text = conversation[latest][1]
        checks.append(
            (
                shield,
                JudgeRequest(Stage.INPUT, text, tuple(conversation[: latest + 1]), policy.name),
            )
        )
        judged.append(latest)
    results, findings, blocked = await _run(policy, checks, remote)
    redacted = False
    if policy.enforcing and not blocked:
        for index, found in zip(judged, results, strict=True):
            redacted |= _rewrite(fields[index], found)
    return InputCheck(findings, blocked, redacted)


async def check_reply_remote(
    policy: CompiledPolicy, completion: dict[str, Any], remote: RemoteContext
) -> ReplyCheck:
    """Raises MalformedReply when the completion cannot be read."""
    shields = policy.remote(Stage.OUTPUT)
    choices = completion.get("choices")
    if not shields or choices is None:
        return ReplyCheck([], False, False)
    if not isinstance(choices, list):
        raise MalformedReply("`choices` is not a list")
    texts: list[TextField] = []
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            raise MalformedReply("a choice is not an object")
        texts += [f for f in reply_fields(choice.get("message"), position, stream=False) if f.text]
    checks = [
        (shield, JudgeRequest(Stage.OUTPUT, field.text, remote.conversation, policy.name))
        for field in texts
        for shield in shields
    ]
    results, findings, blocked = await _run(policy, checks, remote)
    redacted = False
    if policy.enforcing and not blocked:
        for k, field in enumerate(texts):
            per_field = results[k * len(shields) : (k + 1) * len(shields)]
            if _rewrite([field], [f for found in per_field for f in found]):
                redacted = True
                # Its logprobs (and audio, for a transcript) would still say what was redacted.
                choice = choices[field.channel[0]]
                withhold_side_channels(
                    choice, choice.get("message"), audio=field.channel[1] == "audio"
                )
    return ReplyCheck(findings, blocked, redacted)


async def _run(
    policy: CompiledPolicy,
    checks: list[tuple[RemoteShield, JudgeRequest]],
    remote: RemoteContext,
) -> tuple[list[list[Finding]], list[Finding], bool]:
    """Each check's findings, all of them, and whether they block."""
    results = await run_remote(
        checks,
        remote.backends,
        policy_on_error=policy.spec.on_error,
        enforcing=policy.enforcing,
        on_failure=remote.on_failure,
    )
    findings = [f for found in results for f in found]
    return results, findings, blocks(findings, enforcing=policy.enforcing)


def _fields_by_message(chat: ChatRequest) -> list[list[TextField]]:
    """Each message's text fields in order, as ``conversation_of`` joins them."""
    fields: dict[int, list[TextField]] = {}
    for text in chat.texts:
        fields.setdefault(text.message_index, []).extend(text.fields)
    return list(fields.values())


def _rewrite(fields: list[TextField], findings: list[Finding]) -> bool:
    """Applies whole-text redactions to the fields that make up one judged text."""
    spans = merge_redactions(f for f in findings if f.action is Action.REDACT and not f.monitor)
    if not spans:
        return False
    offset = 0
    for field in fields:
        text = field.text
        field.write(redact(text, offset, spans))
        offset += len(text) + len(PART_SEPARATOR)
    return True
