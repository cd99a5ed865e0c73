"""Translating a ``POST /v1/messages`` request (Anthropic's Messages API) into the chat-completions
request the shields read and the upstream gets.

Requests are hostile input, and the Messages API is larger than what a chat-completions backend
can do: every key is translated, accepted as a hint that changes nothing the model sees
(``metadata``, ``thinking``, ``service_tier``, ``cache_control``...), or refused with a 400 that
names it — never silently forwarded. The same holds inside messages and content blocks: a block
type or a block key the translation does not know is refused.

What the model will see is what the shields read: the translation builds a chat body and the
chat request reader (``parse_chat_request``) reads it, so the input stage checks the system
prompt, every text block, tool calls sent back, tool results and tool definitions exactly as it
checks a ``/v1/chat/completions`` request, and a redaction rewrites the body that goes upstream.

The mapping (a chat-completions backend has no place for the rest):

- ``system`` (a string, or text blocks joined by a line break) → a ``system`` message;
- a user turn's ``text`` and ``image`` blocks → a ``user`` message (a string when it is text
  only; else content parts, an image as an ``image_url`` part: base64 as a ``data:`` URL, a
  ``url`` source as that URL, which the shields read as text); each ``tool_result`` block → a
  ``tool`` message (text only: images in tool results are refused), in the order they come;
- an assistant turn's ``text`` blocks → its content, ``tool_use`` blocks → its ``tool_calls``
  (``input`` as JSON arguments); ``thinking`` and ``redacted_thinking`` blocks are dropped, as
  the Responses translation drops reasoning items;
- ``tools`` (custom tools: name, description, ``input_schema``) → function tools; Anthropic's
  server tools (web search, bash, text editor...) are refused; ``tool_choice`` auto / any /
  tool / none → auto / required / the named function / none, ``disable_parallel_tool_use`` →
  ``parallel_tool_calls: false``;
- ``max_tokens`` (required, as in Anthropic's API), ``stop_sequences`` → ``stop``,
  ``temperature``, ``top_p``, ``top_k``;
- ``stream``: a stream upstream, with usage; otherwise a whole reply.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Any

from proxy.endpoints.chat_request import ChatRequest, parse_chat_request, request_object
from proxy.errors import BadRequest
from shields import json_codec
from shields.openai.fields import serialize_arguments

__all__ = ["MessagesRequest", "new_message_id", "parse_messages_request"]

# The largest max_tokens passed on: a signed 32-bit integer, as backends read it.
_MAX_TOKENS_LIMIT = 2**31 - 1

_TRANSLATED = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "top_k",
        "tools",
        "tool_choice",
    }
)
# Accepted and not forwarded: bookkeeping (``metadata.user_id``), routing and caching hints
# that a chat-completions backend has no use for, and ``thinking``: whether a backend reasons is
# its own (a chat request has no portable switch for it); reasoning it returns becomes
# ``thinking`` blocks all the same. Their shapes are checked, their contents never reach the
# model.
_IGNORED = frozenset(
    {"metadata", "thinking", "service_tier", "cache_control", "inference_geo", "speed"}
)
# Features only Anthropic's own servers run; refused unless null.
_UNSUPPORTED = frozenset(
    {"container", "mcp_servers", "context_management", "output_config", "output_format"}
)
_ROLES = frozenset({"user", "assistant"})
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_THINKING_TYPES = frozenset({"enabled", "disabled", "adaptive"})
# A block's keys, per type. ``cache_control`` (prompt caching) and ``citations`` are markers no
# chat template renders: read for their shape, not forwarded.
_BLOCK_KEYS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
# Fields of Anthropic's blocks that a chat backend has no use for, accepted when null (as the
# SDKs write them when a client sends a reply's blocks back as they came).
_NULL_ONLY = {
    "tool_use": frozenset({"caller", "toolset_name"}),
    "tool_result": frozenset({"toolset_name"}),
}
_USER_BLOCKS = frozenset({"text", "image", "tool_result"})
_ASSISTANT_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})
_TOOL_KEYS = frozenset({"type", "name", "description", "input_schema", "cache_control", "strict"})
_TOOL_CHOICE_KEYS = frozenset({"type", "name", "disable_parallel_tool_use"})


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class MessagesRequest:
    """A validated Messages request, translated: ``chat`` is what the input stage checks and
    (as checked) goes upstream."""

    model: str
    stream: bool
    chat: ChatRequest


def parse_messages_request(raw: bytes) -> MessagesRequest:
    """A client's ``/v1/messages`` body, read and translated; a BadRequest naming what cannot
    be (an unknown key, a shape the API does not allow, a feature the backend cannot serve)."""
    body = request_object(raw, allow_nan=False)
    for key, value in body.items():
        if key in _UNSUPPORTED:
            if value is not None:
                raise BadRequest(
                    f"'{key}' is not supported by shieldgate's Messages API (it serves messages "
                    "over a chat-completions backend)",
                    param=key,
                    code="unsupported_parameter",
                )
        elif key not in _TRANSLATED and key not in _IGNORED:
            shown = key if len(key) <= 64 else key[:64] + "..."
            raise BadRequest(f"Unknown parameter: '{shown}'.", param=shown)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("Missing required parameter: 'model' (a string)", param="model")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest(
            "Missing required parameter: 'max_tokens' (a positive integer)", param="max_tokens"
        )
    if max_tokens > _MAX_TOKENS_LIMIT:
        # Written into the chat request we send: a number no backend takes (or no JSON
        # encoder of 64-bit integers writes) is the client's error, said here.
        raise BadRequest(
            f"max_tokens is more than the largest allowed, {_MAX_TOKENS_LIMIT}",
            param="max_tokens",
        )
    stream = _optional(body, "stream", bool, False)
    _check_ignored(body)

    messages: list[dict[str, Any]] = []
    system = _system(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    messages += _messages(body.get("messages"))
    chat: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    tools = _tools(body.get("tools"))
    _tool_choice(body.get("tool_choice"), tools, chat)
    stop = _stop_sequences(body.get("stop_sequences"))
    if stop:
        chat["stop"] = stop
    for key in ("temperature", "top_p"):
        value = _optional(body, key, float, None)
        if value is not None:
            chat[key] = value
    top_k = _optional(body, "top_k", int, None)
    if top_k is not None:
        if top_k < 0:
            raise BadRequest("'top_k' must be a non-negative integer", param="top_k")
        chat["top_k"] = top_k
    if stream:
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    # The chat reader reads the translation as it reads any chat request: every text the model
    # will see becomes a text of the input stage.
    return MessagesRequest(
        model=model, stream=stream, chat=parse_chat_request(json_codec.dumps(chat))
    )


def _optional(body: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = body.get(key)
    if value is None:
        return default
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and not math.isfinite(value):
            raise BadRequest(f"'{key}' must be a finite number", param=key)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        names = {bool: "a boolean", str: "a string", float: "a number", int: "an integer"}
        raise BadRequest(f"'{key}' must be {names[kind]}", param=key)
    return value


def _check_ignored(body: dict[str, Any]) -> None:
    """The accepted-and-ignored parameters still have the shape Anthropic's API gives them: a
    client that sends something else is told, not silently served otherwise."""
    metadata = body.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict) or set(metadata) - {"user_id"}:
            raise BadRequest("'metadata' must be an object with only 'user_id'", param="metadata")
        if not isinstance(metadata.get("user_id"), str | None):
            raise BadRequest("'metadata.user_id' must be a string", param="metadata.user_id")
    thinking = body.get("thinking")
    if thinking is not None:
        kind = thinking.get("type") if isinstance(thinking, dict) else None
        if not isinstance(kind, str) or kind not in _THINKING_TYPES:
            raise BadRequest(
                "'thinking' must be an object whose type is enabled, disabled or adaptive",
                param="thinking.type",
            )
        budget = thinking.get("budget_tokens")
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool)):
            raise BadRequest(
                "'thinking.budget_tokens' must be an integer", param="thinking.budget_tokens"
            )
    for key in ("service_tier", "inference_geo", "speed"):
        _optional(body, key, str, None)
    control = body.get("cache_control")
    if control is not None and not isinstance(control, dict):
        raise BadRequest("'cache_control' must be an object", param="cache_control")


# ---- system and messages ---------------------------------------------------------------------


def _system(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        raise BadRequest("'system' must be a string or a list of text blocks", param="system")
    texts = []
    for j, block in enumerate(value):
        at = f"system[{j}]"
        if _block_type(block, at) != "text":
            raise BadRequest(f"{at} must be a text block", param=f"{at}.type")
        texts.append(_text(block, at))
    return "\n".join(texts)


def _messages(value: Any) -> list[dict[str, Any]]:
    if value is None:
        raise BadRequest("Missing required parameter: 'messages'", param="messages")
    if not isinstance(value, list) or not value:
        raise BadRequest("'messages' must be a non-empty list of messages", param="messages")
    out: list[dict[str, Any]] = []
    for i, message in enumerate(value):
        at = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{at} must be an object", param=at)
        _closed(message, frozenset({"role", "content"}), at)
        role = message.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            got = f"; got {role!r}" if isinstance(role, str) else ""
            raise BadRequest(f"{at}.role must be user or assistant{got}", param=f"{at}.role")
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif not isinstance(content, list):
            raise BadRequest(
                f"{at}.content must be a string or a list of content blocks",
                param=f"{at}.content",
            )
        elif role == "user":
            out += _user_turn(content, at)
        else:
            out.append(_assistant_turn(content, at))
    return out


def _user_turn(blocks: list[Any], at: str) -> list[dict[str, Any]]:
    """A user turn's blocks as chat messages: its text and images as a user message, each tool
    result as a tool message, in the order they come."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []

    def flush() -> None:
        if parts:
            out.append({"role": "user", "content": _user_content(parts)})
            parts.clear()

    for j, block in enumerate(blocks):
        where = f"{at}.content[{j}]"
        kind = _block_type(block, where, allowed=_USER_BLOCKS, role="user")
        if kind == "text":
            parts.append({"type": "text", "text": _text(block, where)})
        elif kind == "image":
            parts.append(_image(block, where))
        else:
            flush()
            out.append(_tool_result(block, where))
    flush()
    if not out:
        raise BadRequest(f"{at}.content must not be empty", param=f"{at}.content")
    return out


def _user_content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    # A string is what every backend and chat template reads; parts only for images.
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return list(parts)


def _assistant_turn(blocks: list[Any], at: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        where = f"{at}.content[{j}]"
        kind = _block_type(block, where, allowed=_ASSISTANT_BLOCKS, role="assistant")
        if kind == "text":
            texts.append(_text(block, where))
        elif kind == "tool_use":
            calls.append(_tool_use(block, where))
        elif kind == "thinking":
            if not isinstance(block.get("thinking"), str):
                raise BadRequest(f"{where}.thinking must be a string", param=f"{where}.thinking")
        elif not isinstance(block.get("data"), str):  # redacted_thinking
            raise BadRequest(f"{where}.data must be a string", param=f"{where}.data")
    # "" rather than null beside tool calls: llama.cpp's server rejects a null content.
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message


def _block_type(
    block: Any,
    at: str,
    *,
    allowed: frozenset[str] | None = None,
    role: str | None = None,
) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise BadRequest(f"{at} must be an object with a 'type'", param=at)
    kind: str = block["type"]
    keys = _BLOCK_KEYS.get(kind)
    if keys is None:
        raise BadRequest(
            f"{at}.type {kind[:64]!r} is not supported by shieldgate's Messages API",
            param=f"{at}.type",
            code="unsupported_value",
        )
    if allowed is not None and kind not in allowed:
        raise BadRequest(
            f"{at}: a {kind} block is not allowed in a {role} message", param=f"{at}.type"
        )
    _closed(block, keys, at, null_only=_NULL_ONLY.get(kind, frozenset()))
    control = block.get("cache_control")
    if control is not None and not isinstance(control, dict):
        raise BadRequest(f"{at}.cache_control must be an object", param=f"{at}.cache_control")
    return kind


def _closed(
    obj: dict[str, Any], keys: frozenset[str], at: str, *, null_only: frozenset[str] = frozenset()
) -> None:
    for key, value in obj.items():
        if key not in keys and (key not in null_only or value is not None):
            shown = key if len(key) <= 64 else key[:64] + "..."
            raise BadRequest(f"Unknown parameter: '{at}.{shown}'.", param=f"{at}.{shown}")


def _text(block: dict[str, Any], at: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise BadRequest(f"{at}.text must be a string", param=f"{at}.text")
    citations = block.get("citations")
    if citations is not None and not isinstance(citations, list):
        raise BadRequest(f"{at}.citations must be a list", param=f"{at}.citations")
    return text


def _image(block: dict[str, Any], at: str) -> dict[str, Any]:
    """An image as the chat API's ``image_url`` part: base64 data as a ``data:`` URL, a URL
    source as that URL (text the shields read: a secret in its query string would reach the
    backend and whatever host it fetches from)."""
    source = block.get("source")
    where = f"{at}.source"
    if not isinstance(source, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    kind = source.get("type")
    if kind == "base64":
        _closed(source, frozenset({"type", "media_type", "data"}), where)
        media_type, data = source.get("media_type"), source.get("data")
        if not isinstance(media_type, str) or media_type not in _IMAGE_TYPES:
            raise BadRequest(
                f"{where}.media_type must be one of {', '.join(sorted(_IMAGE_TYPES))}",
                param=f"{where}.media_type",
            )
        if not isinstance(data, str) or not data:
            raise BadRequest(f"{where}.data must be a base64 string", param=f"{where}.data")
        url = f"data:{media_type};base64,{data}"
    elif kind == "url":
        _closed(source, frozenset({"type", "url"}), where)
        given = source.get("url")
        if not isinstance(given, str) or not given:
            raise BadRequest(f"{where}.url must be a string", param=f"{where}.url")
        url = given
    else:
        raise BadRequest(
            f"{where}.type must be base64 or url (file sources are not supported)",
            param=f"{where}.type",
            code="unsupported_value",
        )
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_use(block: dict[str, Any], at: str) -> dict[str, Any]:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{at}.id must be a non-empty string", param=f"{at}.id")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{at}.name must be a non-empty string", param=f"{at}.name")
    if not isinstance(arguments, dict):
        raise BadRequest(f"{at}.input must be an object", param=f"{at}.input")
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": serialize_arguments(arguments)},
    }


def _tool_result(block: dict[str, Any], at: str) -> dict[str, Any]:
    """A tool result as a ``tool`` message. ``is_error`` is accepted and not forwarded: a chat
    tool message has no such flag (the error is in the result's text)."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{at}.tool_use_id must be a non-empty string", param=f"{at}.tool_use_id")
    if not isinstance(block.get("is_error"), bool | None):
        raise BadRequest(f"{at}.is_error must be a boolean", param=f"{at}.is_error")
    content = block.get("content")
    if content is None:
        content = ""
    elif isinstance(content, list):
        texts = []
        for j, inner in enumerate(content):
            where = f"{at}.content[{j}]"
            kind = _block_type(inner, where)
            if kind != "text":
                # A chat tool message carries text: an image the backend would not see (or
                # would reject) is refused rather than dropped.
                raise BadRequest(
                    f"{where}: only text blocks are supported in a tool result",
                    param=f"{where}.type",
                    code="unsupported_value",
                )
            texts.append(_text(inner, where))
        content = "\n".join(texts)
    elif not isinstance(content, str):
        raise BadRequest(
            f"{at}.content must be a string or a list of text blocks", param=f"{at}.content"
        )
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# ---- tools and options -----------------------------------------------------------------------


def _tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest("'tools' must be a list", param="tools")
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, tool in enumerate(value):
        at = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise BadRequest(f"{at} must be an object", param=at)
        kind = tool.get("type")
        if kind is not None and kind != "custom":
            shown = kind[:64] if isinstance(kind, str) else kind
            raise BadRequest(
                f"Tool type {shown!r} ({at}) is not supported: shieldgate serves the Messages "
                "API over a chat-completions backend, which runs no server tools",
                param=f"{at}.type",
                code="unsupported_tool",
            )
        _closed(tool, _TOOL_KEYS, at)
        name, description = tool.get("name"), tool.get("description")
        schema = tool.get("input_schema")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"{at}.name must be a non-empty string", param=f"{at}.name")
        if name in names:
            raise BadRequest(f"{at}.name {name!r} is used by two tools", param=f"{at}.name")
        names.add(name)
        if description is not None and not isinstance(description, str):
            raise BadRequest(f"{at}.description must be a string", param=f"{at}.description")
        if not isinstance(schema, dict):
            raise BadRequest(f"{at}.input_schema must be an object", param=f"{at}.input_schema")
        if not isinstance(tool.get("strict"), bool | None):
            raise BadRequest(f"{at}.strict must be a boolean", param=f"{at}.strict")
        if not isinstance(tool.get("cache_control"), dict | None):
            raise BadRequest(f"{at}.cache_control must be an object", param=f"{at}.cache_control")
        function: dict[str, Any] = {"name": name}
        if description is not None:
            function["description"] = description
        function["parameters"] = schema
        tools.append({"type": "function", "function": function})
    return tools


def _tool_choice(value: Any, tools: list[dict[str, Any]], chat: dict[str, Any]) -> None:
    """Sets the chat request's ``tools``, ``tool_choice`` and ``parallel_tool_calls``."""
    if tools:
        chat["tools"] = tools
    if value is None:
        return
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise BadRequest("'tool_choice' must be an object with a 'type'", param="tool_choice")
    _closed(value, _TOOL_CHOICE_KEYS, "tool_choice")
    kind = value["type"]
    names = {tool["function"]["name"] for tool in tools}
    if kind == "tool":
        name = value.get("name")
        if not isinstance(name, str) or name not in names:
            raise BadRequest(
                f"tool_choice names the tool {name!r}, which is not among the tools",
                param="tool_choice.name",
            )
        chat["tool_choice"] = {"type": "function", "function": {"name": name}}
    elif kind in ("auto", "any", "none"):
        if "name" in value:
            raise BadRequest(
                f"tool_choice of type {kind} takes no 'name'", param="tool_choice.name"
            )
        if kind == "any" and not tools:
            raise BadRequest("tool_choice 'any' needs at least one tool", param="tool_choice")
        if tools:
            chat["tool_choice"] = "required" if kind == "any" else kind
    else:
        raise BadRequest(
            "tool_choice.type must be auto, any, tool or none", param="tool_choice.type"
        )
    disable = value.get("disable_parallel_tool_use")
    if not isinstance(disable, bool | None):
        raise BadRequest(
            "tool_choice.disable_parallel_tool_use must be a boolean",
            param="tool_choice.disable_parallel_tool_use",
        )
    if disable and tools:
        # Sent only with tools: OpenAI's chat API rejects it on a request without any.
        chat["parallel_tool_calls"] = False


def _stop_sequences(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise BadRequest(
            "'stop_sequences' must be a list of non-empty strings", param="stop_sequences"
        )
    return list(value)
