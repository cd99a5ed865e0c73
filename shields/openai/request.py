"""Reading a ``/v1/chat/completions`` request: every place its text can hide, or a refusal.

Requests are hostile input: every shape problem is a ``RequestShapeError`` that says what is
wrong (the proxy's 400), and every place text can hide (message content, content parts,
refusals, names, assistant tool-call arguments and names) is a text the input shields read
(``input_check``). A content part whose type the reader does not know is refused rather than
forwarded unchecked.

The prompt is more than ``messages``: a chat template also renders the tool definitions, the
response schema and backend extras (vLLM's ``documents``, ``chat_template``...). Every top-level
key is therefore either a parameter that carries no prompt text (``request_keys.PARAMETERS``),
a field whose text the shields read with the role it has in the prompt (``REQUEST_TEXTS``), or
refused naming it; the same holds for the keys of a message and of the objects inside one:
content parts (per type), tool calls and ``reasoning_details`` items (``request_keys``). A
``file`` part's inline ``file_data`` is refused (the shields cannot read it); an image's URL
(not a ``data:`` URI) is text of its message.

The body is forwarded as the client sent it, and a Go server (Ollama) matches keys to fields
ignoring case, keeping the last: ``"Content"`` beside ``"content"`` is the text it uses. So at
every level where the reader reads named fields, a key that Go would fold onto one of them
(``json_codec.go_fold``) and that is not exactly that name is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shields import json_codec
from shields.base import Role
from shields.openai.channels import CallChannel, Channel, FieldChannel, channel_path
from shields.openai.errors import RequestShapeError
from shields.openai.fields import TextField, serialize_arguments
from shields.openai.request_keys import (
    AUDIO_KEYS,
    CACHE_CONTROL_KEYS,
    CALL_KEYS,
    CUSTOM_KEYS,
    DETAIL_KEYS,
    FILE_KEYS,
    FUNCTION_KEYS,
    IMAGE_KEYS,
    MESSAGE_KEYS,
    PART_KEYS,
    REQUEST_TEXTS,
    TOOL_DEFINITION_KEYS,
    TOOL_KEYS,
    TOP_LEVEL,
    Keys,
)

__all__ = [
    "PART_SEPARATOR",
    "ChatRequest",
    "MessageText",
    "parse_chat_request",
    "read_chat_request",
    "request_object",
]

_ROLES = {role.value: role for role in Role}
# A message's own string fields, in the order its text joins them.
_TEXT_KEYS = (
    "content",
    "refusal",
    "reasoning_content",
    "reasoning",
    "thinking",
    "name",
    "tool_call_id",
)
_ROLE_AND_CONTENT = frozenset({"role", "content"})
# A message with no other keys than these holds no parts' objects, calls or details.
_STRING_KEYS = frozenset({"role", *_TEXT_KEYS, "audio", "prefix", "partial"})
_new_tuple = tuple.__new__
_PART_CHANNELS = {"text": "content", "refusal": "refusal"}

# Joins the text parts of one message, so a phrase split over two parts is still one phrase.
# Chat templates differ: some join parts with a line break, some with nothing ("bo" + "mb"), so
# a message of several parts is also scanned joined as it is, for what crosses a part's end.
PART_SEPARATOR = "\n"


@dataclass(slots=True)
class MessageText:
    """One text of a message, scanned as one: the message's own text fields (its content and
    parts, refusal, reasoning, name...), its image URLs, one tool call's arguments or input,
    its calls' ids and names; or one of the request's own fields (``REQUEST_TEXTS``)."""

    role: Role
    message_index: int
    fields: list[TextField] = field(default_factory=list)
    # The text is JSON (a tool call's arguments): the shields read what its escapes stand for.
    json_text: bool = False
    # Runs of ``fields`` (start, end) that a chat template may join without a separator: the
    # content parts, the reasoning_details items. The message's other fields stay apart.
    joined: list[tuple[int, int]] = field(default_factory=list)
    # Which text of its message this is, for people reading a finding: ``content`` (the
    # message's own text fields), ``image_url``, ``tool_calls[0].function.arguments``,
    # ``tool_calls.names``...; a request field's key (``tools``).
    where: str = "content"


@dataclass(slots=True)
class ChatRequest:
    body: dict[str, Any]
    stream: bool
    model: str
    n: int
    include_usage: bool
    texts: list[MessageText]
    # The tool names the request declares (``tools``, legacy ``functions``); None: no tools.
    tool_names: frozenset[str] | None = None


def request_object(raw: bytes, *, allow_nan: bool) -> dict[str, Any]:
    """A client's request body as a JSON object, or a RequestShapeError saying why not.

    A key twice in one object is refused: the body is forwarded as it came, and a parser that
    keeps the other value than ours would act on one the shields never saw.
    """
    try:
        body = json_codec.loads(raw, unique_keys=True, allow_nan=allow_nan)
    except json_codec.DuplicateKey as exc:
        key = exc.key if len(exc.key) <= 64 else exc.key[:64] + "..."
        raise RequestShapeError(
            f"The request body is ambiguous: the key {key!r} appears twice in one object, "
            "and parsers differ on which one counts"
        ) from None
    except json_codec.InvalidJSON as exc:
        raise RequestShapeError(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestShapeError("The request body must be a JSON object")
    return body


def parse_chat_request(raw: bytes) -> ChatRequest:
    """A client's request body, read (``read_chat_request``)."""
    return read_chat_request(request_object(raw, allow_nan=False))


def read_chat_request(body: dict[str, Any]) -> ChatRequest:
    """The request a JSON object asks for, with every text of its prompt; RequestShapeError
    for a shape that cannot be checked. Redactions are later written into ``body``."""
    TOP_LEVEL.check(body, "", closed=True)
    messages = body.get("messages")
    if messages is None:
        raise RequestShapeError("Missing required parameter: 'messages'", param="messages")
    if not isinstance(messages, list) or not messages:
        raise RequestShapeError("'messages' must be a non-empty list of messages", param="messages")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise RequestShapeError("'stream' must be a boolean", param="stream")
    n = body.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128:
        raise RequestShapeError("'n' must be an integer between 1 and 128", param="n")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestShapeError("'model' must be a string", param="model")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise RequestShapeError("'stream_options' must be an object", param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    # The request's own texts first: templates put tool definitions before the conversation.
    texts = _request_texts(body)
    for i, message in enumerate(messages):
        texts.extend(_message_texts(message, i))
    return ChatRequest(
        body=body,
        stream=bool(stream),
        model=model or "unknown",
        n=n,
        include_usage=include_usage,
        texts=texts,
        tool_names=_declared_tools(body),
    )


def _request_texts(body: dict[str, Any]) -> list[MessageText]:
    """The fields beside ``messages`` that a template renders (``REQUEST_TEXTS``), each one
    text of its role. They are numbered below the messages (-1, -2, ...): ``conversation_of``
    shows each as a turn of its own, before the messages."""
    texts: list[MessageText] = []
    for key, role in REQUEST_TEXTS.items():
        value = body.get(key)
        if value is None:
            continue
        index = -1 - len(texts)
        if isinstance(value, str):
            channel = FieldChannel(index, key)
            field = TextField(channel, body, key, value)
            texts.append(MessageText(role, index, [field], where=key))
        else:
            text = serialize_arguments(value)
            field = TextField(FieldChannel(index, key), body, key, text, json_object=True)
            texts.append(MessageText(role, index, [field], json_text=True, where=key))
    return texts


def _declared_tools(body: dict[str, Any]) -> frozenset[str] | None:
    """The names of the request's ``tools`` and ``functions``: what a reply may call."""
    if body.get("tools") is None and body.get("functions") is None:
        return None
    names: set[str] = set()
    for key in ("tools", "functions"):
        tools = body.get(key)
        if tools is None:
            continue
        if not isinstance(tools, list):
            raise RequestShapeError(f"'{key}' must be a list", param=key)
        for j, tool in enumerate(tools):
            at = f"{key}[{j}]"
            if not isinstance(tool, dict):
                raise RequestShapeError(f"{at} must be an object", param=at)
            definitions: list[Any]
            if key == "functions":
                definitions = [tool]
            else:
                TOOL_KEYS.check(tool, at)
                definitions = [tool.get("function"), tool.get("custom")]
            for definition in definitions:
                if isinstance(definition, dict):
                    TOOL_DEFINITION_KEYS.check(definition, at)
                    name = definition.get("name")
                    if isinstance(name, str):
                        names.add(name)
    return frozenset(names)


def _message_texts(message: Any, i: int) -> list[MessageText]:
    # Runs once per message of every request (agents resend hundreds): the common shapes —
    # a role and string fields — take no step they do not need, and the message's path for
    # error messages is written only when one is raised.
    if not isinstance(message, dict):
        where = f"messages[{i}]"
        raise RequestShapeError(f"{where} must be an object", param=where)
    if not message.keys() <= MESSAGE_KEYS.known:
        MESSAGE_KEYS.check(message, f"messages[{i}]", closed=True)
    # Only a string may be looked up: a list or an object as the role is unhashable.
    value = message.get("role")
    role = _ROLES.get(value) if isinstance(value, str) else None
    if role is None:
        where = f"messages[{i}]"
        raise RequestShapeError(
            f"{where}.role must be one of {', '.join(_ROLES)}; got {message.get('role')!r}",
            param=f"{where}.role",
        )
    content = MessageText(role, i)
    if message.keys() <= _ROLE_AND_CONTENT:  # most messages: the shortest way
        value = message.get("content")
        if isinstance(value, str):
            content.fields.append(
                TextField(_field_channel(i, "content"), message, "content", value)
            )
            return [content]
        if value is None:
            return [content]
    # Image URLs, apart from the parts' text: a backend fetches them rather than showing them
    # to the model, so they are not joined to the text around them. (A text without fields,
    # when there is none, is left out: it would be skipped wherever texts are read.)
    urls = MessageText(role, i, where="image_url")
    # Reasoning sent back with an assistant turn is text too: some chat templates show it to
    # the model again, and OpenRouter asks for its reasoning_details back. So is a participant's
    # ``name``, which templates write into the prompt, and a tool result's ``tool_call_id``,
    # which some (Mistral's) write too.
    for key in _TEXT_KEYS:
        value = message.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            content.fields.append(TextField(_field_channel(i, key), message, key, value))
        elif key == "content" and isinstance(value, list):
            first = len(content.fields)
            _parts(value, f"messages[{i}]", content, urls)
            content.joined.append((first, len(content.fields)))
        else:
            where = f"messages[{i}]"
            raise RequestShapeError(
                f"{where}.{key} must be a string"
                + (", a list of content parts" if key == "content" else "")
                + " or null",
                param=f"{where}.{key}",
            )
    if message.keys() <= _STRING_KEYS:  # no reasoning details, tool calls or function call
        return [content, urls] if urls.fields else [content]
    where = f"messages[{i}]"
    details = message.get("reasoning_details")
    if details is not None:
        first = len(content.fields)
        _reasoning_details(details, f"{where}.reasoning_details", content)
        content.joined.append((first, len(content.fields)))
    texts = [content, urls] if urls.fields else [content]
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise RequestShapeError(
                f"{where}.tool_calls must be a list", param=f"{where}.tool_calls"
            )
        names = MessageText(role, i, where="tool_calls.names")
        for j, call in enumerate(tool_calls):
            at = f"{where}.tool_calls[{j}]"
            if not isinstance(call, dict):
                raise RequestShapeError(f"{at} must be an object", param=at)
            CALL_KEYS.check(call, at, closed=True)
            _identifier(call, "id", at, names, CallChannel(i, "tool_call_id", j))
            custom = call.get("custom")
            if custom is not None:
                texts.append(_custom_input(custom, at, role, i, j))
                name = CallChannel(i, "custom_tool_name", j)
                _identifier(custom, "name", f"{at}.custom", names, name)
            if "function" in call:
                function = call["function"]
                arguments = CallChannel(i, "tool_calls", j)
                texts.append(_arguments(function, f"{at}.function", role, i, arguments))
                # ``_arguments`` accepted it: an object.
                name = CallChannel(i, "tool_name", j)
                _identifier(function, "name", f"{at}.function", names, name)
        texts.append(names)
    if message.get("function_call") is not None:
        function_call = message["function_call"]
        at = f"{where}.function_call"
        texts.append(_arguments(function_call, at, role, i, FieldChannel(i, "function_call")))
        names = MessageText(role, i, where="function_call.name")
        _identifier(function_call, "name", at, names, FieldChannel(i, "function_call_name"))
        texts.append(names)
    return texts


def _field_channel(index: int, key: str) -> FieldChannel:
    """``FieldChannel(index, key)`` without the named tuple's Python-level ``__new__``: one is
    made per text field of every request."""
    channel: FieldChannel = _new_tuple(FieldChannel, (index, key))
    return channel


def _identifier(
    holder: dict[str, Any], key: str, where: str, names: MessageText, channel: Channel
) -> None:
    """A call's ``id`` or ``name`` in an assistant turn: templates print both back to the
    model (``<tool_call>{"name": ...}``), so they are text of the turn too."""
    value = holder.get(key)
    if isinstance(value, str):
        if value:
            names.fields.append(TextField(channel, holder, key, value))
    elif value is not None:
        raise RequestShapeError(f"{where}.{key} must be a string", param=f"{where}.{key}")


def _parts(parts: list[Any], where: str, content: MessageText, urls: MessageText) -> None:
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise RequestShapeError(f"{at} must be an object with a 'type'", param=at)
        kind = part["type"]
        keys = PART_KEYS.get(kind)
        if keys is None:
            # A part type we cannot read could carry text past the shields: refuse it.
            raise RequestShapeError(f"{at}.type {kind!r} is not supported by this proxy", param=at)
        keys.check(part, at, closed=True)
        control = part.get("cache_control")
        if control is not None:
            _closed_object(control, CACHE_CONTROL_KEYS, f"{at}.cache_control")
        if kind in ("text", "refusal"):
            value = part.get(kind)
            if not isinstance(value, str):
                raise RequestShapeError(f"{at}.{kind} must be a string", param=f"{at}.{kind}")
            # A part continues its message's content (or refusal), as in a reply.
            channel = FieldChannel(content.message_index, _PART_CHANNELS[kind])
            content.fields.append(TextField(channel, part, kind, value))
        elif kind == "image_url":
            _image_url(part, f"{at}.image_url", urls)
        elif kind == "input_audio":
            _closed_object(part.get(kind), AUDIO_KEYS, f"{at}.{kind}")
        else:
            _file(part.get(kind), f"{at}.{kind}", content)


def _closed_object(value: Any, keys: Keys, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RequestShapeError(f"{where} must be an object", param=where)
    keys.check(value, where, closed=True)
    return value


def _image_url(part: dict[str, Any], where: str, urls: MessageText) -> None:
    """An image's URL is text the client wrote: a secret in its query string reaches the
    backend and whatever host it fetches from, so the shields read it (a redaction rewrites
    the URL). A ``data:`` URI is the image itself, binary the shields cannot read."""
    image = _closed_object(part.get("image_url"), IMAGE_KEYS, where)
    url = image.get("url")
    if not isinstance(url, str):
        raise RequestShapeError(f"{where}.url must be a string", param=f"{where}.url")
    detail = image.get("detail")
    if detail is not None and not isinstance(detail, str):
        raise RequestShapeError(f"{where}.detail must be a string", param=f"{where}.detail")
    if url.lstrip()[:5].lower() != "data:":
        channel = FieldChannel(urls.message_index, "image_url")
        urls.fields.append(TextField(channel, image, "url", url))


def _file(value: Any, where: str, content: MessageText) -> None:
    """A file part by ``file_id`` (its name is text of the turn); inline ``file_data`` is a
    400 naming it, as an unknown key is (``FILE_KEYS``)."""
    if isinstance(value, dict) and "file_data" in value:
        raise RequestShapeError(
            f"{where}.file_data: shieldgate cannot read the text of an inline file; send the "
            "file by 'file_id'",
            param=f"{where}.file_data",
            code="unsupported_value",
        )
    file = _closed_object(value, FILE_KEYS, where)
    for key in ("file_id", "filename"):
        name = file.get(key)
        if name is not None and not isinstance(name, str):
            raise RequestShapeError(f"{where}.{key} must be a string", param=f"{where}.{key}")
    if "file_id" not in file:
        raise RequestShapeError(f"{where} needs a 'file_id'", param=f"{where}.file_id")
    filename = file.get("filename")
    if filename:
        channel = FieldChannel(content.message_index, "filename")
        content.fields.append(TextField(channel, file, "filename", filename))


def _reasoning_details(details: Any, where: str, content: MessageText) -> None:
    if not isinstance(details, list):
        raise RequestShapeError(f"{where} must be a list", param=where)
    channel = FieldChannel(content.message_index, "reasoning_details")
    for j, item in enumerate(details):
        if not isinstance(item, dict):
            raise RequestShapeError(f"{where}[{j}] must be an object", param=f"{where}[{j}]")
        DETAIL_KEYS.check(item, f"{where}[{j}]", closed=True)
        for key in ("text", "summary"):
            value = item.get(key)
            if isinstance(value, str):
                content.fields.append(TextField(channel, item, key, value))
            elif value is not None:
                raise RequestShapeError(
                    f"{where}[{j}].{key} must be a string", param=f"{where}[{j}]"
                )


def _custom_input(custom: Any, where: str, role: Role, index: int, j: int) -> MessageText:
    """A custom tool call's ``input``: free text, not JSON."""
    channel = CallChannel(index, "custom_tool_calls", j)
    text = MessageText(role, index, where=channel_path(channel))
    if not isinstance(custom, dict):
        raise RequestShapeError(f"{where}.custom must be an object", param=f"{where}.custom")
    CUSTOM_KEYS.check(custom, f"{where}.custom", closed=True)
    value = custom.get("input")
    if isinstance(value, str):
        text.fields.append(TextField(channel, custom, "input", value))
    elif value is not None:
        raise RequestShapeError(
            f"{where}.custom.input must be a string", param=f"{where}.custom.input"
        )
    return text


def _arguments(function: Any, where: str, role: Role, index: int, channel: Channel) -> MessageText:
    """A function call's ``arguments`` (a tool call's ``function``, a legacy
    ``function_call``): JSON text."""
    text = MessageText(role, index, json_text=True, where=channel_path(channel))
    if not isinstance(function, dict):
        raise RequestShapeError(f"{where} must be an object", param=where)
    FUNCTION_KEYS.check(function, where, closed=True)
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        text.fields.append(TextField(channel, function, "arguments", arguments))
    elif isinstance(arguments, dict):
        text.fields.append(
            TextField(channel, function, "arguments", serialize_arguments(arguments), True)
        )
    elif arguments is not None:
        raise RequestShapeError(f"{where}.arguments must be a string", param=f"{where}.arguments")
    return text
