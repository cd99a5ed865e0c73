"""Parsing and checking a ``/v1/chat/completions`` request before anything is forwarded.

Requests are hostile input: every shape problem becomes a 400 that says what is wrong, and every
place text can hide (message content, content parts, refusals, assistant tool-call arguments) is
handed to the input shields. A content part whose type the proxy does not know is refused rather
than forwarded unchecked.

The prompt is more than ``messages``: a chat template also renders the tool definitions, the
response schema and backend extras (vLLM's ``documents``, ``chat_template``...). Every top-level
key is therefore either a parameter that carries no prompt text (``_PARAMETERS``), a field whose
text the shields read with the role it has in the prompt (``REQUEST_TEXTS``), or a 400 naming
it; the same holds for the keys of a message (``_MESSAGE_KEYS``) and of the objects inside
one: content parts (per type, ``_PART_KEYS``), tool calls and ``reasoning_details`` items. A
``file`` part's inline ``file_data`` is refused (the shields cannot read it); an image's URL
(not a ``data:`` URI) is text of its message.

The body is forwarded as the client sent it, and a Go server (Ollama) matches keys to fields
ignoring case, keeping the last: ``"Content"`` beside ``"content"`` is the text it uses. So at
every level where the proxy reads named fields, a key that Go would fold onto one of them
(``json_codec.go_fold``) and that is not exactly that name is a 400.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from proxy import json_codec
from proxy.errors import BadRequest
from proxy.openai_texts import TextField, joined_text, serialize_arguments
from shields.base import Action, Finding, Role, Shield, Stage
from shields.json_escapes import JsonEscapedScan
from shields.policy import CompiledPolicy
from shields.scan import TextScan, check_request, merge_redactions, redact, scan_whole

__all__ = [
    "PART_SEPARATOR",
    "REQUEST_TEXTS",
    "ChatRequest",
    "InputCheck",
    "check_input",
    "conversation_of",
    "parse_chat_request",
    "request_object",
]

_ROLES = {role.value: role for role in Role}

# Top-level parameters that put no text into the prompt: sampling and length settings, output
# constraints (``stop``, ``grammar``, ``guided_*``, ``json_schema``: they shape what the model
# may write, which the output shields check, and no template renders them), routing and
# bookkeeping (``user``, ``metadata``, ``store``: kept by the server, never shown to the model).
# OpenAI's, then vLLM's, llama.cpp's and llama-cpp-python's, then OpenRouter's.
_PARAMETERS = frozenset(
    {
        "model", "stream", "stream_options", "n", "temperature", "top_p", "max_tokens",
        "max_completion_tokens", "seed", "stop", "logprobs", "top_logprobs", "logit_bias",
        "presence_penalty", "frequency_penalty", "user", "metadata", "store",
        "parallel_tool_calls", "tool_choice", "function_call", "service_tier",
        "reasoning_effort", "modalities", "audio", "verbosity", "prompt_cache_key",
        "safety_identifier",
        "top_k", "min_p", "typical_p", "repetition_penalty", "length_penalty", "min_tokens",
        "ignore_eos", "stop_token_ids", "include_stop_str_in_output", "skip_special_tokens",
        "spaces_between_special_tokens", "best_of", "use_beam_search",
        "truncate_prompt_tokens", "add_generation_prompt", "continue_final_message", "echo",
        "add_special_tokens", "priority", "guided_json", "guided_regex", "guided_choice",
        "guided_grammar", "guided_decoding_backend", "guided_whitespace_pattern",
        "structured_outputs", "return_tokens_as_token_ids", "prompt_logprobs",
        "repeat_penalty", "repeat_last_n", "penalty_last_n", "mirostat", "mirostat_mode",
        "mirostat_tau", "mirostat_eta", "tfs_z", "dynatemp_range", "dynatemp_exponent",
        "xtc_probability", "xtc_threshold", "dry_multiplier", "dry_base", "dry_allowed_length",
        "dry_penalty_last_n", "top_n_sigma", "n_predict", "n_keep", "n_probs", "cache_prompt",
        "id_slot", "samplers", "grammar", "json_schema", "logit_bias_type",
        "reasoning_format", "timings_per_token", "post_sampling_probs", "return_tokens",
        "reasoning",
    }
)  # fmt: skip
# Top-level fields a chat template renders into the prompt, and the role their text has there:
# tool definitions, the response schema and the template itself (with its variables) are the
# application's instructions, as a system prompt is; vLLM's RAG ``documents`` are retrieved
# text, as a tool's result is; a ``prediction`` is text the client wrote. JSON values are
# checked as the JSON a template prints (``tools | tojson``), escapes read as what they stand
# for; a redaction in one rewrites the forwarded body.
REQUEST_TEXTS: dict[str, Role] = {
    "tools": Role.SYSTEM,
    "functions": Role.SYSTEM,
    "response_format": Role.SYSTEM,
    "chat_template": Role.SYSTEM,
    "chat_template_kwargs": Role.SYSTEM,
    "documents": Role.TOOL,
    "prediction": Role.USER,
}


class _Keys:
    """The field names the proxy reads in one kind of object, and their Go-folded forms."""

    __slots__ = ("folded", "known")

    def __init__(self, *known: str) -> None:
        self.known = frozenset(known)
        self.folded = frozenset(json_codec.go_fold(name) for name in known)

    def check(self, obj: dict[str, Any], where: str, *, closed: bool = False) -> None:
        """400 for a key that folds onto a field name without being it; with ``closed``, for
        any key that is not a field name."""
        known = self.known
        for key in obj:
            if key in known:
                continue  # nearly every key: one set lookup
            shown = key if len(key) <= 64 else key[:64] + "..."
            if json_codec.go_fold(key) in self.folded:
                raise BadRequest(
                    f"{where} has the key {shown!r}, which differs from a field name only in "
                    "letter case: servers that match keys ignoring case would read it as that "
                    "field, unchecked",
                    param=where,
                )
            if closed:
                at = f"{where}.{shown}" if where else shown
                raise BadRequest(
                    f"Unknown parameter: '{at}'. shieldgate forwards only fields it knows "
                    "carry no unchecked text",
                    param=at,
                    code="unknown_parameter",
                )


_TOP_LEVEL = _Keys("messages", *_PARAMETERS, *REQUEST_TEXTS)
_MESSAGE_KEYS = _Keys(
    "role", "content", "name", "refusal", "reasoning_content", "reasoning", "thinking",
    "reasoning_details", "tool_calls", "function_call", "tool_call_id", "audio", "prefix",
    "partial",
)  # fmt: skip
# A content part's keys, per type: its type, the key that holds its payload, and
# ``cache_control`` (Anthropic-style prompt caching, which LiteLLM clients send on parts: a
# marker no template renders).
_PART_KEYS = {
    kind: _Keys("type", kind, "cache_control")
    for kind in ("text", "refusal", "image_url", "input_audio", "file")
}
_CACHE_CONTROL_KEYS = _Keys("type", "ttl")
_IMAGE_KEYS = _Keys("url", "detail")
_AUDIO_KEYS = _Keys("data", "format")
# A file part only by reference: inline ``file_data`` (base64 of a PDF, a text file...) is
# decoded into the prompt by the backend, and the shields cannot read it.
_FILE_KEYS = _Keys("file_id", "filename")
_CALL_KEYS = _Keys("id", "type", "function", "custom", "index")
_FUNCTION_KEYS = _Keys("name", "arguments")
_CUSTOM_KEYS = _Keys("name", "input")
# ``data`` (encrypted reasoning) and ``signature`` are opaque tokens the provider verifies, not
# text a template shows; ``text`` and ``summary`` are read.
_DETAIL_KEYS = _Keys("type", "text", "summary", "data", "signature", "format", "id", "index")
_TOOL_KEYS = _Keys("type", "function", "custom")
_TOOL_DEFINITION_KEYS = _Keys("name", "description", "parameters", "strict", "format")
# Joins the text parts of one message, so a phrase split over two parts is still one phrase.
# Chat templates differ: some join parts with a line break, some with nothing ("bo" + "mb"), so
# a message of several parts is also scanned joined as it is, for what crosses a part's end.
PART_SEPARATOR = "\n"


@dataclass(slots=True)
class MessageText:
    """The text of one message (its parts, in order) or of one tool call's arguments."""

    role: Role
    message_index: int
    fields: list[TextField] = field(default_factory=list)
    # The text is JSON (a tool call's arguments): the shields read what its escapes stand for.
    json_text: bool = False
    # Runs of ``fields`` (start, end) that a chat template may join without a separator: the
    # content parts, the reasoning_details items. The message's other fields stay apart.
    joined: list[tuple[int, int]] = field(default_factory=list)


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
    """A client's request body as a JSON object, or a BadRequest saying why not.

    A key twice in one object is refused: the body is forwarded as it came, and a parser that
    keeps the other value than ours would act on one the shields never saw.
    """
    try:
        body = json_codec.loads(raw, unique_keys=True, allow_nan=allow_nan)
    except json_codec.DuplicateKey as exc:
        key = exc.key if len(exc.key) <= 64 else exc.key[:64] + "..."
        raise BadRequest(
            f"The request body is ambiguous: the key {key!r} appears twice in one object, "
            "and parsers differ on which one counts"
        ) from None
    except json_codec.InvalidJSON as exc:
        raise BadRequest(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object")
    return body


def parse_chat_request(raw: bytes) -> ChatRequest:
    body = request_object(raw, allow_nan=False)
    _TOP_LEVEL.check(body, "", closed=True)
    messages = body.get("messages")
    if messages is None:
        raise BadRequest("Missing required parameter: 'messages'", param="messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list of messages", param="messages")
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("'stream' must be a boolean", param="stream")
    n = body.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128:
        raise BadRequest("'n' must be an integer between 1 and 128", param="n")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest("'model' must be a string", param="model")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("'stream_options' must be an object", param="stream_options")
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
            texts.append(MessageText(role, index, [TextField((key,), body, key, value)]))
        else:
            text = serialize_arguments(value)
            field = TextField((key,), body, key, text, json_object=True)
            texts.append(MessageText(role, index, [field], json_text=True))
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
            raise BadRequest(f"'{key}' must be a list", param=key)
        for j, tool in enumerate(tools):
            at = f"{key}[{j}]"
            if not isinstance(tool, dict):
                raise BadRequest(f"{at} must be an object", param=at)
            definitions: list[Any]
            if key == "functions":
                definitions = [tool]
            else:
                _TOOL_KEYS.check(tool, at)
                definitions = [tool.get("function"), tool.get("custom")]
            for definition in definitions:
                if isinstance(definition, dict):
                    _TOOL_DEFINITION_KEYS.check(definition, at)
                    name = definition.get("name")
                    if isinstance(name, str):
                        names.add(name)
    return frozenset(names)


def _message_texts(message: Any, i: int) -> list[MessageText]:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    _MESSAGE_KEYS.check(message, where, closed=True)
    # Only a string may be looked up: a list or an object as the role is unhashable.
    value = message.get("role")
    role = _ROLES.get(value) if isinstance(value, str) else None
    if role is None:
        raise BadRequest(
            f"{where}.role must be one of {', '.join(_ROLES)}; got {message.get('role')!r}",
            param=f"{where}.role",
        )
    content = MessageText(role, i)
    # Image URLs, apart from the parts' text: a backend fetches them rather than showing them
    # to the model, so they are not joined to the text around them.
    urls = MessageText(role, i)
    # Reasoning sent back with an assistant turn is text too: some chat templates show it to
    # the model again, and OpenRouter asks for its reasoning_details back. So is a participant's
    # ``name``, which templates write into the prompt, and a tool result's ``tool_call_id``,
    # which some (Mistral's) write too.
    for key in (
        "content", "refusal", "reasoning_content", "reasoning", "thinking", "name", "tool_call_id"
    ):  # fmt: skip
        value = message.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            content.fields.append(TextField((i, key), message, key, value))
        elif key == "content" and isinstance(value, list):
            first = len(content.fields)
            _parts(value, where, content, urls)
            content.joined.append((first, len(content.fields)))
        else:
            raise BadRequest(
                f"{where}.{key} must be a string"
                + (", a list of content parts" if key == "content" else "")
                + " or null",
                param=f"{where}.{key}",
            )
    details = message.get("reasoning_details")
    if details is not None:
        first = len(content.fields)
        _reasoning_details(details, f"{where}.reasoning_details", content)
        content.joined.append((first, len(content.fields)))
    texts = [content, urls]
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise BadRequest(f"{where}.tool_calls must be a list", param=f"{where}.tool_calls")
        names = MessageText(role, i)
        for j, call in enumerate(tool_calls):
            at = f"{where}.tool_calls[{j}]"
            if not isinstance(call, dict):
                raise BadRequest(f"{at} must be an object", param=at)
            _CALL_KEYS.check(call, at, closed=True)
            _identifier(call, "id", at, names)
            custom = call.get("custom")
            if custom is not None:
                texts.append(_custom_input(custom, at, role, i, j))
                _identifier(custom, "name", f"{at}.custom", names)
            if "function" in call:
                function = call["function"]
                texts.append(_arguments(function, f"{at}.function", role, i, (i, "tool", j)))
                # ``_arguments`` accepted it: an object.
                _identifier(function, "name", f"{at}.function", names)
        texts.append(names)
    if message.get("function_call") is not None:
        function_call = message["function_call"]
        at = f"{where}.function_call"
        texts.append(_arguments(function_call, at, role, i, (i,)))
        names = MessageText(role, i)
        _identifier(function_call, "name", at, names)
        texts.append(names)
    return texts


def _identifier(holder: dict[str, Any], key: str, where: str, names: MessageText) -> None:
    """A call's ``id`` or ``name`` in an assistant turn: templates print both back to the
    model (``<tool_call>{"name": ...}``), so they are text of the turn too."""
    value = holder.get(key)
    if isinstance(value, str):
        if value:
            names.fields.append(TextField((names.message_index, where, key), holder, key, value))
    elif value is not None:
        raise BadRequest(f"{where}.{key} must be a string", param=f"{where}.{key}")


def _parts(parts: list[Any], where: str, content: MessageText, urls: MessageText) -> None:
    for j, part in enumerate(parts):
        at = f"{where}.content[{j}]"
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise BadRequest(f"{at} must be an object with a 'type'", param=at)
        kind = part["type"]
        keys = _PART_KEYS.get(kind)
        if keys is None:
            # A part type we cannot read could carry text past the shields: refuse it.
            raise BadRequest(f"{at}.type {kind!r} is not supported by this proxy", param=at)
        keys.check(part, at, closed=True)
        control = part.get("cache_control")
        if control is not None:
            _closed_object(control, _CACHE_CONTROL_KEYS, f"{at}.cache_control")
        if kind in ("text", "refusal"):
            value = part.get(kind)
            if not isinstance(value, str):
                raise BadRequest(f"{at}.{kind} must be a string", param=f"{at}.{kind}")
            content.fields.append(TextField((at,), part, kind, value))
        elif kind == "image_url":
            _image_url(part, f"{at}.image_url", urls)
        elif kind == "input_audio":
            _closed_object(part.get(kind), _AUDIO_KEYS, f"{at}.{kind}")
        else:
            _file(part.get(kind), f"{at}.{kind}", content)


def _closed_object(value: Any, keys: _Keys, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    keys.check(value, where, closed=True)
    return value


def _image_url(part: dict[str, Any], where: str, urls: MessageText) -> None:
    """An image's URL is text the client wrote: a secret in its query string reaches the
    backend and whatever host it fetches from, so the shields read it (a redaction rewrites
    the URL). A ``data:`` URI is the image itself, binary the shields cannot read."""
    image = _closed_object(part.get("image_url"), _IMAGE_KEYS, where)
    url = image.get("url")
    if not isinstance(url, str):
        raise BadRequest(f"{where}.url must be a string", param=f"{where}.url")
    detail = image.get("detail")
    if detail is not None and not isinstance(detail, str):
        raise BadRequest(f"{where}.detail must be a string", param=f"{where}.detail")
    if url.lstrip()[:5].lower() != "data:":
        urls.fields.append(TextField((urls.message_index, where), image, "url", url))


def _file(value: Any, where: str, content: MessageText) -> None:
    """A file part by ``file_id`` (its name is text of the turn); inline ``file_data`` is a
    400 naming it, as an unknown key is (``_FILE_KEYS``)."""
    if isinstance(value, dict) and "file_data" in value:
        raise BadRequest(
            f"{where}.file_data: shieldgate cannot read the text of an inline file; send the "
            "file by 'file_id'",
            param=f"{where}.file_data",
            code="unsupported_value",
        )
    file = _closed_object(value, _FILE_KEYS, where)
    for key in ("file_id", "filename"):
        name = file.get(key)
        if name is not None and not isinstance(name, str):
            raise BadRequest(f"{where}.{key} must be a string", param=f"{where}.{key}")
    if "file_id" not in file:
        raise BadRequest(f"{where} needs a 'file_id'", param=f"{where}.file_id")
    filename = file.get("filename")
    if filename:
        content.fields.append(TextField((content.message_index, where), file, "filename", filename))


def _reasoning_details(details: Any, where: str, content: MessageText) -> None:
    if not isinstance(details, list):
        raise BadRequest(f"{where} must be a list", param=where)
    for j, item in enumerate(details):
        if not isinstance(item, dict):
            raise BadRequest(f"{where}[{j}] must be an object", param=f"{where}[{j}]")
        _DETAIL_KEYS.check(item, f"{where}[{j}]", closed=True)
        for key in ("text", "summary"):
            value = item.get(key)
            if isinstance(value, str):
                content.fields.append(TextField((content.message_index, where), item, key, value))
            elif value is not None:
                raise BadRequest(f"{where}[{j}].{key} must be a string", param=f"{where}[{j}]")


def _custom_input(custom: Any, where: str, role: Role, index: int, j: int) -> MessageText:
    """A custom tool call's ``input``: free text, not JSON."""
    text = MessageText(role, index)
    if not isinstance(custom, dict):
        raise BadRequest(f"{where}.custom must be an object", param=f"{where}.custom")
    _CUSTOM_KEYS.check(custom, f"{where}.custom", closed=True)
    value = custom.get("input")
    if isinstance(value, str):
        text.fields.append(TextField((index, "custom", j), custom, "input", value))
    elif value is not None:
        raise BadRequest(f"{where}.custom.input must be a string", param=f"{where}.custom.input")
    return text


def _arguments(
    function: Any, where: str, role: Role, index: int, channel: tuple[Any, ...]
) -> MessageText:
    """A function call's ``arguments`` (a tool call's ``function``, a legacy
    ``function_call``): JSON text."""
    text = MessageText(role, index, json_text=True)
    if not isinstance(function, dict):
        raise BadRequest(f"{where} must be an object", param=where)
    _FUNCTION_KEYS.check(function, where, closed=True)
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        text.fields.append(TextField(channel, function, "arguments", arguments))
    elif isinstance(arguments, dict):
        text.fields.append(
            TextField(channel, function, "arguments", serialize_arguments(arguments), True)
        )
    elif arguments is not None:
        raise BadRequest(f"{where}.arguments must be a string", param=f"{where}.arguments")
    return text


@dataclass(slots=True)
class InputCheck:
    findings: list[Finding]
    blocked: bool
    redacted: bool


def check_input(
    policy: CompiledPolicy,
    request: ChatRequest,
    *,
    fingerprint: Callable[[str], str] | None = None,
) -> InputCheck:
    """Runs the input shields over every text of the request; applies redactions in place."""
    shields = policy.shields(Stage.INPUT)
    findings: list[Finding] = []
    blocked = redacted = False
    if not shields:
        # Nothing to run: skips setting up a scan (and its normalizer) per message.
        return InputCheck(findings=findings, blocked=blocked, redacted=redacted)
    fail_closed = policy.spec.on_error == "block"
    enforcing = policy.enforcing
    for message in request.texts:
        if not message.fields:
            continue
        scanned = _scan_message(shields, message, PART_SEPARATOR, fail_closed, fingerprint)
        if scanned is None:
            continue
        message_findings, offsets = scanned
        for run in message.joined:
            if run[1] - run[0] > 1:
                message_findings += _across_parts(
                    shields, message, run, offsets, fail_closed, fingerprint
                )
        if not message_findings:  # the usual case: nothing to enforce
            continue
        findings += message_findings
        if not enforcing:
            continue
        enforced = [f for f in message_findings if not f.monitor]
        if any(f.action is Action.BLOCK for f in enforced):
            blocked = True
            continue
        spans = merge_redactions(enforced)
        if spans:
            redacted = True
            for offset, text_field in zip(offsets, message.fields, strict=True):
                text_field.write(redact(text_field.text, offset, spans))
    request_findings = check_request(shields, conversation_of(request), fail_closed=fail_closed)
    if request_findings:
        findings += request_findings
        if enforcing and any(f.action is Action.BLOCK and not f.monitor for f in request_findings):
            blocked = True
    return InputCheck(findings=findings, blocked=blocked, redacted=redacted)


def _scan_message(
    shields: Sequence[Shield],
    message: MessageText,
    separator: str,
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> tuple[list[Finding], list[int]] | None:
    """The findings in a message's fields joined by ``separator``, and where each field
    starts; None when no shield applies to the message's role."""
    text_scan = TextScan(
        shields, fail_closed=fail_closed, role=message.role, fingerprint=fingerprint
    )
    if not text_scan.active:
        return None
    scan = JsonEscapedScan(text_scan) if message.json_text else text_scan
    # One scan of the joined text: a scan per part costs ~10 µs each, and a request may hold
    # a hundred thousand tiny parts.
    text, offsets = joined_text(message.fields, separator)
    return scan_whole(scan, text), offsets


def _across_parts(
    shields: Sequence[Shield],
    message: MessageText,
    run: tuple[int, int],
    offsets: list[int],
    fail_closed: bool,
    fingerprint: Callable[[str], str] | None,
) -> list[Finding]:
    """What a run of a message's fields (its content parts, say) holds joined without a
    separator and not one by one: the findings that cross a field's end, in the offsets of
    the message's fields joined by PART_SEPARATOR (``offsets``: where each starts there)."""
    first, end = run
    parts = MessageText(message.role, message.message_index, message.fields[first:end])
    scanned = _scan_message(shields, parts, "", fail_closed, fingerprint)
    if scanned is None:
        return []
    findings, joined = scanned
    crossing = []
    for finding in findings:
        start_part = bisect_right(joined, finding.start) - 1
        end_part = bisect_right(joined, max(finding.end - 1, finding.start)) - 1
        if start_part != end_part:
            start = offsets[first + start_part] + finding.start - joined[start_part]
            stop = offsets[first + end_part] + finding.end - joined[end_part]
            crossing.append(replace(finding, start=start, end=stop))
    return crossing


def conversation_of(request: ChatRequest) -> list[tuple[Role, str]]:
    """Each message's role and whole text (its parts and tool-call arguments joined), in order:
    for request-wide checks and as the conversation remote shields are shown."""
    per_message: dict[int, tuple[Role, list[str]]] = {}
    for text in request.texts:
        _, pieces = per_message.setdefault(text.message_index, (text.role, []))
        pieces.extend(f.text for f in text.fields)
    return [(role, PART_SEPARATOR.join(pieces)) for role, pieces in per_message.values()]
