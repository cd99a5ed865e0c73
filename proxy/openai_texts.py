"""Where text sits in OpenAI chat-completions replies: the library's reader
(``shields.openai.reply``, ``channels``, ``stream_indices``, ``fields``), under the names the
proxy has always imported it by. A malformed reply (``MalformedReply``) is the proxy's 502, or
its in-band error mid-stream.
"""

from __future__ import annotations

from shields.openai.channels import NAME_CHANNELS, call_key
from shields.openai.errors import MalformedReply
from shields.openai.fields import TextField, joined_text, serialize_arguments
from shields.openai.reply import (
    READERS,
    TEXT_KEYS,
    check_choice_index,
    check_choice_keys,
    check_message_key,
    choice_message,
    reply_fields,
)
from shields.openai.stream_indices import MAX_TOOL_CALLS, StreamIndices

__all__ = [
    "MAX_TOOL_CALLS",
    "NAME_CHANNELS",
    "READERS",
    "TEXT_KEYS",
    "MalformedReply",
    "StreamIndices",
    "TextField",
    "call_key",
    "check_choice_index",
    "check_choice_keys",
    "check_message_key",
    "choice_message",
    "joined_text",
    "reply_fields",
    "serialize_arguments",
]
