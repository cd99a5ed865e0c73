"""Reading a ``/v1/embeddings`` request: its input strings as the text the input stage checks.

The request's keys are OpenAI's (``model``, ``input``, ``encoding_format``, ``dimensions``,
``user``), a closed list: any other key is a 400 naming it, as for chat completions, since a
backend's own extras are unknown to the proxy and could carry text it never reads.

``input`` is a string or a list of strings, each of which the backend embeds on its own; or
token ids (a list of integers, or a list of such lists), which no shield can read. The strings
become one ``ChatRequest`` of one user message whose fields are the strings, so the input stage
runs unchanged and scans the whole batch as one text, one input per line: one scan set up per
request, not per input (2,048 inputs: ~9 ms against ~90 ms scanned one by one). A redaction is
written back into ``input``: what is embedded is the redacted text. Token ids are only noted
here; whether they may pass is the policy's to say (``request.token_inputs``), and the dialect
asks it once the policy is chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy.endpoints.chat_request import ChatRequest, MessageText, request_object
from proxy.errors import BadRequest
from shields.base import Role
from shields.openai.fields import TextField

__all__ = ["EmbeddingsRequest", "parse_embeddings_request"]

_KEYS = frozenset({"model", "input", "encoding_format", "dimensions", "user"})
_ENCODINGS = frozenset({"float", "base64"})
_INPUT_SHAPES = (
    "'input' must be a string, a list of strings, a list of token ids (integers) or a list of "
    "lists of token ids"
)


@dataclass(slots=True)
class EmbeddingsRequest:
    """A read request: ``chat`` is what the input stage checks (its body is the request's);
    ``token_inputs``: the input is token ids, which no shield read."""

    body: dict[str, Any]
    model: str | None
    chat: ChatRequest
    token_inputs: bool
    # The list of strings ``input`` is, one holder per string (its ``TextField`` writes into
    # ``"text"``); None when ``input`` is one string (its field writes into the body itself).
    items: list[dict[str, str]] | None = None

    def write_back(self) -> None:
        """Puts what the input stage wrote into the strings' holders back into ``input``."""
        if self.items is not None:
            self.body["input"] = [item["text"] for item in self.items]


def parse_embeddings_request(raw: bytes) -> EmbeddingsRequest:
    """A client's request body, read; a BadRequest for a key or a shape it does not take."""
    body = request_object(raw, allow_nan=False)
    for key in body:
        if key not in _KEYS:
            shown = key if len(key) <= 64 else key[:64] + "..."
            raise BadRequest(
                f"Unknown parameter: '{shown}'. shieldgate forwards only fields it knows carry "
                "no unchecked text",
                param=shown,
                code="unknown_parameter",
            )
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("'model' must be a string", param="model")
    encoding = body.get("encoding_format")
    # A string test first: a list or an object is not hashable, and ``in`` a set would raise.
    if encoding is not None and not (isinstance(encoding, str) and encoding in _ENCODINGS):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'", param="encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None and (not _is_int(dimensions) or dimensions < 1):
        raise BadRequest("'dimensions' must be a positive integer", param="dimensions")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise BadRequest("'user' must be a string", param="user")
    if "input" not in body:
        raise BadRequest("Missing required parameter: 'input'", param="input")
    value = body["input"]
    fields: list[TextField] = []
    items: list[dict[str, str]] | None = None
    token_inputs = False
    if isinstance(value, str):
        fields.append(TextField(_channel(0), body, "input", value))
    elif isinstance(value, list) and value:
        if all(isinstance(item, str) for item in value):
            items = [{"text": item} for item in value]
            fields = [
                TextField(_channel(i), item, "text", item["text"]) for i, item in enumerate(items)
            ]
        elif all(_is_int(item) for item in value) or all(_is_token_list(v) for v in value):
            token_inputs = True
        else:
            raise BadRequest(_INPUT_SHAPES, param="input")
    elif isinstance(value, list):
        raise BadRequest("'input' must not be empty", param="input")
    else:
        raise BadRequest(_INPUT_SHAPES, param="input")
    texts = [MessageText(Role.USER, 0, fields)] if fields else []
    chat = ChatRequest(
        body=body, stream=False, model=model or "unknown", n=1, include_usage=False, texts=texts
    )
    return EmbeddingsRequest(body, model, chat, token_inputs, items)


def _channel(index: int) -> Any:
    # A request field's channel only says where its text came from (input ``index``): the
    # (message, field) pair every request field carries.
    return (index, "input")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_token_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_int(item) for item in value)
