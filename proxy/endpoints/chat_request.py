"""A ``/v1/chat/completions`` request as the proxy reads it: the library's reader
(``shields.openai.request``) and input stage (``shields.openai.input_check``), with the
reader's shape errors answered as 400s (``proxy.errors.bad_request``).

The offline tools (``shieldgate scan``, ``test``) read and check requests with the same
functions, so a record is read alike wherever it is checked.
"""

from __future__ import annotations

from typing import Any

from proxy.errors import read_as_bad_request
from shields.openai import request as _reader
from shields.openai.input_check import check_input, conversation_of
from shields.openai.request import PART_SEPARATOR, ChatRequest, MessageText
from shields.openai.request_keys import REQUEST_TEXTS

__all__ = [
    "PART_SEPARATOR",
    "REQUEST_TEXTS",
    "ChatRequest",
    "MessageText",
    "check_input",
    "conversation_of",
    "parse_chat_request",
    "request_object",
]


def request_object(raw: bytes, *, allow_nan: bool) -> dict[str, Any]:
    """A client's request body as a JSON object, or a BadRequest saying why not (a key twice
    in one object among the reasons: parsers differ on which one counts)."""
    with read_as_bad_request():
        return _reader.request_object(raw, allow_nan=allow_nan)


def parse_chat_request(raw: bytes) -> ChatRequest:
    """A client's request body, read; a BadRequest for a shape that cannot be checked."""
    with read_as_bad_request():
        return _reader.parse_chat_request(raw)
