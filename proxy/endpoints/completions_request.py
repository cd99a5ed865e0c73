"""Reading a legacy ``/v1/completions`` request: its prompt and suffix as the texts the input
stage checks.

The keys are a closed list, as for chat completions: ``prompt``, ``suffix`` and the parameters
that put no text into the prompt (``request_keys.PARAMETERS``: sampling and length settings,
``echo``, ``logprobs``, ``best_of``, ``stop``, the backends' extras...). Any other key is a 400
naming it, and so is a key that differs from one of them only in letter case (Ollama's Go
server would read it as that key, unchecked).

``prompt`` is a string or a list of strings, each a completion of its own; or token ids (a list
of integers, or a list of such lists), which no shield can read. The strings are one user text,
one prompt per line (one scan per request, however many prompts: the embeddings dialect's
reading), and ``suffix`` (fill-in-the-middle: the text after the gap) another user text. A
redaction is written back into what goes upstream. Token ids are only noted here: whether they
may pass is the policy's to say (``request.token_inputs``), asked by the dialect once the policy
is chosen.

The server answers ``n`` choices per prompt (``best_of`` is chosen from, not added): the
request's ``ChatRequest.n`` is that count, the most choices a reply or a stream may have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.endpoints.chat_request import ChatRequest, MessageText, request_object
from proxy.errors import BadRequest, read_as_bad_request
from shields.base import Role
from shields.openai.channels import FieldChannel
from shields.openai.fields import TextField
from shields.openai.request_keys import PARAMETERS, Keys

__all__ = ["MAX_CHOICES", "CompletionRequest", "parse_completion_request"]

_KEYS = Keys("prompt", "suffix", *PARAMETERS)
# The choices one request may ask for (``n`` per prompt): the stream guard keeps state per
# choice, and a list of a million one-character prompts must not make it keep a million.
MAX_CHOICES = 2048
_PROMPT_SHAPES = (
    "'prompt' must be a string, a list of strings, a list of token ids (integers) or a list of "
    "lists of token ids"
)


@dataclass(slots=True)
class CompletionRequest:
    """A read request: ``chat`` is what the input stage checks (its body is the request's);
    ``token_prompts``: the prompt is token ids, which no shield read."""

    body: dict[str, Any]
    model: str | None
    chat: ChatRequest
    token_prompts: bool
    # The list of strings ``prompt`` is, one holder per string (its ``TextField`` writes into
    # ``"text"``); None when ``prompt`` is one string (its field writes into the body itself).
    items: list[dict[str, str]] | None = None

    def write_back(self) -> None:
        """Puts what the input stage wrote into the prompts' holders back into ``prompt``."""
        if self.items is not None:
            self.body["prompt"] = [item["text"] for item in self.items]


def parse_completion_request(raw: bytes) -> CompletionRequest:
    """A client's request body, read; a BadRequest for a key or a shape it does not take."""
    body = request_object(raw, allow_nan=False)
    with read_as_bad_request():
        _KEYS.check(body, "", closed=True)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("'model' must be a string", param="model")
    stream = body.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("'stream' must be a boolean", param="stream")
    echo = body.get("echo")
    if echo is not None and not isinstance(echo, bool):
        raise BadRequest("'echo' must be a boolean", param="echo")
    n = body.get("n")
    if n is None:
        n = 1
    if not _is_int(n) or not 1 <= n <= 128:
        raise BadRequest("'n' must be an integer between 1 and 128", param="n")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("'stream_options' must be an object", param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    if "prompt" not in body:
        raise BadRequest("Missing required parameter: 'prompt'", param="prompt")
    prompts, items, token_prompts = _prompts(body)
    if n * prompts > MAX_CHOICES:
        raise BadRequest(
            f"'n' times the number of prompts is {n * prompts}: shieldgate relays at most "
            f"{MAX_CHOICES} choices per request",
            param="prompt",
        )
    texts: list[MessageText] = []
    if items is not None:
        fields = [
            TextField(FieldChannel(i, "prompt"), item, "text", item["text"])
            for i, item in enumerate(items)
        ]
        texts.append(MessageText(Role.USER, 0, fields, where="prompt"))
    elif not token_prompts:
        field = TextField(FieldChannel(0, "prompt"), body, "prompt", body["prompt"])
        texts.append(MessageText(Role.USER, 0, [field], where="prompt"))
    suffix = body.get("suffix")
    if isinstance(suffix, str):
        field = TextField(FieldChannel(1, "suffix"), body, "suffix", suffix)
        texts.append(MessageText(Role.USER, 1, [field], where="suffix"))
    elif suffix is not None:
        raise BadRequest("'suffix' must be a string or null", param="suffix")
    chat = ChatRequest(
        body=body,
        stream=bool(stream),
        model=model or "unknown",
        n=n * prompts,
        include_usage=include_usage,
        texts=texts,
    )
    return CompletionRequest(body, model, chat, token_prompts, items)


def _prompts(body: dict[str, Any]) -> tuple[int, list[dict[str, str]] | None, bool]:
    """How many prompts ``prompt`` holds; the holders of its strings when it is a list of
    them; whether it is token ids."""
    value = body["prompt"]
    if isinstance(value, str):
        return 1, None, False
    if not isinstance(value, list):
        raise BadRequest(_PROMPT_SHAPES, param="prompt")
    if not value:
        raise BadRequest("'prompt' must not be an empty list", param="prompt")
    if all(isinstance(item, str) for item in value):
        return len(value), [{"text": item} for item in value], False
    if all(_is_int(item) for item in value):
        return 1, None, True  # one prompt of token ids
    if all(_is_token_list(item) for item in value):
        return len(value), None, True
    raise BadRequest(_PROMPT_SHAPES, param="prompt")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_token_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_int(item) for item in value)
