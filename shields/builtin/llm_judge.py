"""``llm_judge``: a guard model (Llama Guard 3 or alike) behind an OpenAI-compatible endpoint.

The judge is asked about the conversation's last turn: at the input stage the turn under
judgement is the end of the conversation it is given (the messages the shield's roles cover,
system and developer prompts included, shown as the user's side: a guard model's template
knows only user and assistant turns), at the output stage the reply as the assistant's turn
after the conversation.

Two ways to ask (``prompt``):

- ``chat`` (default): the conversation goes as chat messages (user/assistant turns); the guard
  model's own chat template builds its prompt. This is how Llama Guard 3 served by vLLM (or
  Ollama's ``llama-guard3``) expects to be called.
- a template string: one user message, built from the template with ``{categories}`` (the
  taxonomy lines ``S1: Violent Crimes.`` ...), ``{conversation}`` (``User: ...`` /
  ``Agent: ...`` lines) and ``{role}`` (``User`` or ``Agent``, whose turn is judged). The
  built-in ``llama_guard_3`` template is Llama Guard 3's published prompt, for servers that do
  not apply the model's template.

The answer must be Llama Guard's format, exactly: first line ``safe`` or ``unsafe``; after
``unsafe`` a second line with comma-separated category codes (``S1``..``S14``). Anything else is
a shield error — never "safe by default". Categories not listed in ``categories`` are logged as
monitor findings and do not block.
"""

from __future__ import annotations

import re
import string
from typing import Literal

from pydantic import Field, field_validator

from shields.base import Role, Stage
from shields.registry import register
from shields.remote import (
    JudgeRequest,
    RemoteAnswerError,
    RemoteBackends,
    RemoteShield,
    RemoteSpec,
    Vote,
)

__all__ = ["HAZARDS", "LLAMA_GUARD_3_TEMPLATE", "LlmJudgeShield", "LlmJudgeSpec", "parse_verdict"]

# The Llama Guard 3 hazard taxonomy (MLCommons), by code.
HAZARDS: dict[str, str] = {
    "S1": "Violent Crimes",
    "S2": "Non-Violent Crimes",
    "S3": "Sex-Related Crimes",
    "S4": "Child Sexual Exploitation",
    "S5": "Defamation",
    "S6": "Specialized Advice",
    "S7": "Privacy",
    "S8": "Intellectual Property",
    "S9": "Indiscriminate Weapons",
    "S10": "Hate",
    "S11": "Suicide & Self-Harm",
    "S12": "Sexual Content",
    "S13": "Elections",
    "S14": "Code Interpreter Abuse",
}

LLAMA_GUARD_3_TEMPLATE = """Task: Check if there is unsafe content in '{role}' messages in \
conversations according our safety policy with the below categories.

<BEGIN UNSAFE CONTENT CATEGORIES>
{categories}
<END UNSAFE CONTENT CATEGORIES>

<BEGIN CONVERSATION>

{conversation}

<END CONVERSATION>

Provide your safety assessment for ONLY THE LAST {role} message in the above conversation:
 - First line must read 'safe' or 'unsafe'.
 - If unsafe, a second line must include a comma-separated list of violated categories."""

_PLACEHOLDERS = frozenset({"categories", "conversation", "role"})
_CODE = re.compile(r"S(?:[1-9]|1[0-4])")
# Roles a guard model's chat template accepts: everything the model reads that it did not write
# itself (system and developer prompts, tool definitions and results) is shown as user text.
_CHAT_ROLE = {
    Role.SYSTEM: "user",
    Role.DEVELOPER: "user",
    Role.USER: "user",
    Role.TOOL: "user",
    Role.FUNCTION: "user",
    Role.ASSISTANT: "assistant",
}


class LlmJudgeSpec(RemoteSpec):
    type: Literal["llm_judge"]
    base_url: str = Field(pattern=r"^https?://", max_length=2000)
    model: str = Field(min_length=1, max_length=200)
    # The NAME of the environment variable holding the API key; never the key itself.
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    categories: list[str] = Field(default_factory=lambda: list(HAZARDS), min_length=1)
    prompt: str = Field(default="chat", min_length=1, max_length=20_000)
    max_tokens: int = Field(default=20, ge=1, le=1000)

    @field_validator("categories")
    @classmethod
    def _known_codes(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in HAZARDS]
        if unknown:
            raise ValueError(f"unknown categories {unknown}: use codes S1..S14")
        return value

    @field_validator("prompt")
    @classmethod
    def _valid_template(cls, value: str) -> str:
        if value in ("chat", "llama_guard_3"):
            return value
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"bad prompt template: {exc}") from None
        unknown = names - _PLACEHOLDERS
        if unknown:
            raise ValueError(
                f"unknown placeholders {sorted(unknown)} in prompt; use {sorted(_PLACEHOLDERS)}"
            )
        if "conversation" not in names:
            raise ValueError("the prompt template must contain {conversation}")
        return value


def parse_verdict(answer: str) -> tuple[bool, list[str]]:
    """``(unsafe, codes)`` from a Llama Guard answer; raises RemoteAnswerError otherwise."""
    lines = answer.strip().splitlines()
    if not lines:
        raise RemoteAnswerError("the judge gave an empty answer")
    first = lines[0].strip()
    rest = [line.strip() for line in lines[1:] if line.strip()]
    if first == "safe" and not rest:
        return False, []
    if first == "unsafe" and len(rest) == 1:
        codes = [code.strip() for code in rest[0].split(",")]
        if codes and all(_CODE.fullmatch(code) for code in codes):
            return True, list(dict.fromkeys(codes))
        raise RemoteAnswerError("the judge's categories are not S1..S14 codes")
    raise RemoteAnswerError("the judge's answer is not in Llama Guard's format")


class LlmJudgeShield(RemoteShield):
    type_name = "llm_judge"
    spec: LlmJudgeSpec

    def __init__(self, spec: LlmJudgeSpec) -> None:
        super().__init__(spec)
        self.spec = spec
        self._enforced = frozenset(spec.categories)
        template = LLAMA_GUARD_3_TEMPLATE if spec.prompt == "llama_guard_3" else spec.prompt
        self._template = None if spec.prompt == "chat" else template
        self._taxonomy = "\n".join(
            f"{code}: {name}." for code, name in HAZARDS.items() if code in self._enforced
        )

    def messages(self, request: JudgeRequest) -> list[dict[str, str]]:
        """The chat messages sent to the judge for ``request``."""
        turns = self._turns(request)
        if self._template is None:
            return [{"role": _CHAT_ROLE[role], "content": text} for role, text in turns]
        judged = "Agent" if turns[-1][0] is Role.ASSISTANT else "User"
        lines = "\n\n".join(
            f"{'Agent' if role is Role.ASSISTANT else 'User'}: {text}" for role, text in turns
        )
        prompt = self._template.format_map(
            {"categories": self._taxonomy, "conversation": lines, "role": judged}
        )
        return [{"role": "user", "content": prompt}]

    def _turns(self, request: JudgeRequest) -> list[tuple[Role, str]]:
        """User and assistant turns, ending with the judged one: at the input stage the
        conversation's last, at the output stage the reply."""
        turns = [(r, t) for r, t in request.conversation if r in _CHAT_ROLE]
        if request.stage is Stage.OUTPUT:
            turns.append((Role.ASSISTANT, request.text))
        # A chat template wants turns to alternate: merge neighbours of the same side.
        merged: list[tuple[Role, str]] = []
        for role, text in turns:
            side = Role.ASSISTANT if role is Role.ASSISTANT else Role.USER
            if merged and merged[-1][0] is side:
                merged[-1] = (side, merged[-1][1] + "\n\n" + text)
            else:
                merged.append((side, text))
        if not merged or merged[0][0] is not Role.USER:
            merged.insert(0, (Role.USER, ""))
        return merged

    async def judge(self, request: JudgeRequest, backends: RemoteBackends) -> list[Vote]:
        answer = await backends.chat(self.spec, self.messages(request))
        unsafe, codes = parse_verdict(answer)
        if not unsafe:
            return []
        # The codes the policy enforces decide; the others are kept as monitor-only votes.
        return [Vote(code, self.action, monitor=code not in self._enforced) for code in codes]


register(LlmJudgeSpec, LlmJudgeShield)
