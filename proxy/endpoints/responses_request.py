"""Translating a ``POST /v1/responses`` request into the chat-completions request sent upstream.

Requests are hostile input, and the Responses API is larger than what a chat-completions backend
can do: every parameter is either translated, accepted as a hint that changes nothing the model
sees (``include``, ``truncation``, ``service_tier``...), or refused with a 400 that names it —
never silently dropped. ``function`` tools go to the model; ``mcp`` tools (remote MCP servers)
are read here (``proxy.mcp.tools``) and run by the proxy itself (``proxy.mcp.loop``); the other
built-in tools (web search, file search, computer use...) are run by OpenAI's servers, not by a
chat model, and are refused.

The translation of input items is also used for a response's own output, so that a stored
response continues a conversation as the chat messages a client would have sent itself.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from proxy.endpoints.chat_request import request_object
from proxy.errors import BadRequest
from proxy.mcp.tools import McpServerSpec, parse_mcp_tool
from shields.openai.fields import serialize_arguments

__all__ = [
    "ApprovalResponse",
    "ResponsesRequest",
    "items_to_messages",
    "mcp_model_text",
    "new_id",
    "parse_responses_request",
    "upstream_body",
]

# Parameters that change nothing a chat-completions backend could be asked to do differently:
# accepted and not forwarded (documented in the README).
_IGNORED = frozenset(
    {
        "include",
        "truncation",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
        "safety_identifier",
        "stream_options",
        "top_logprobs",
    }
)
# Parameters that ask for something only OpenAI's own servers do; refused unless null/false.
_UNSUPPORTED = frozenset(
    {
        "background",
        "background_options",
        "conversation",
        "prompt",
        "context_management",
        "moderation",
        "image",
        "access_programs",
    }
)
_TRANSLATED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "max_output_tokens",
        "text",
        "parallel_tool_calls",
        "metadata",
        "stream",
        "store",
        "previous_response_id",
        "reasoning",
        "user",
        "max_tool_calls",
    }
)
_MESSAGE_ROLES = frozenset({"user", "system", "developer", "assistant"})
_TOOL_CHOICE_MODES = frozenset({"none", "auto", "required"})
_MAX_METADATA_KEYS = 16


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class ApprovalResponse:
    """An ``mcp_approval_response`` input item: the client's answer to an approval request of
    the previous response."""

    request_id: str
    approve: bool
    at: str


@dataclass(slots=True)
class ResponsesRequest:
    """A validated Responses request: what goes upstream and what the response echoes."""

    model: str
    stream: bool
    store: bool
    previous_response_id: str | None
    instructions: str | None
    input_messages: list[dict[str, Any]]  # this turn's input, as chat messages
    chat_params: dict[str, Any]  # the rest of the chat-completions request
    echo: dict[str, Any] = field(default_factory=dict)  # request fields the Response repeats
    # The remote MCP servers of ``type: mcp`` tools, and the request's ``tool_choice`` as it
    # came (which may name them); ``max_tool_calls``: MCP calls at most, if the client said.
    mcp_servers: list[McpServerSpec] = field(default_factory=list)
    tool_choice: Any = None
    max_tool_calls: int | None = None
    approvals: list[ApprovalResponse] = field(default_factory=list)
    parallel_tool_calls: bool | None = None  # as the client gave it

    @property
    def system_count(self) -> int:
        """How many messages the instructions add in front of the conversation."""
        return 1 if self.instructions is not None else 0

    def chat_body(self, prior: list[dict[str, Any]]) -> dict[str, Any]:
        """The upstream request: always a stream with usage, whatever the client asked for."""
        messages: list[dict[str, Any]] = []
        if self.instructions is not None:
            # OpenAI inserts them as a developer message; ``upstream_body`` sends `system`.
            messages.append({"role": "developer", "content": self.instructions})
        messages += prior
        messages += self.input_messages
        return {
            "model": self.model,
            "messages": messages,
            **self.chat_params,
            "stream": True,
            "stream_options": {"include_usage": True},
        }


def echo_checked(parsed: ResponsesRequest, checked: dict[str, Any], *, blocked: bool) -> None:
    """Makes what the Response repeats of the request (``parsed.echo``, which the translator
    and the store read) what the input stage let through: the instructions, tool definitions
    and ``text.format`` as redacted in ``checked`` (the chat body the input stage rewrote in
    place); of a blocked input, none of them (``instructions: null``, no tools, a plain text
    format)."""
    echo = parsed.echo
    if blocked:
        echo["instructions"] = None
        echo["tools"] = []
        echo["text"] = {**echo["text"], "format": {"type": "text"}}
        return
    if "response_format" in checked:
        echo["text"] = {**echo["text"], "format": _checked_format(checked["response_format"])}
    if parsed.instructions is not None:
        echo["instructions"] = checked["messages"][0]["content"]
    # By name: tool_choice's allowed_tools sends upstream (and checks) only some of them.
    checked_tools = {
        tool["function"]["name"]: tool["function"] for tool in checked.get("tools") or []
    }
    for echoed in echo["tools"]:
        if echoed["type"] != "function":
            continue  # an MCP server: nothing of it is prompt text
        function = checked_tools.get(echoed["name"])
        if function is not None:
            echoed["description"] = function.get("description")
            echoed["parameters"] = function.get("parameters")


def _checked_format(response_format: Any) -> dict[str, Any]:
    """``text.format`` back from the checked chat ``response_format`` (what ``_text`` made of
    it). A redaction that broke the schema's JSON leaves a string: then no format is shown
    rather than the unredacted one."""
    if not isinstance(response_format, dict):
        return {"type": "text"}
    json_schema = response_format.get("json_schema")
    if response_format.get("type") != "json_schema" or not isinstance(json_schema, dict):
        return {"type": response_format.get("type", "text")}
    return {"type": "json_schema", **json_schema}


def upstream_body(chat_body: dict[str, Any]) -> dict[str, Any]:
    """The checked chat request as it goes upstream: `developer` messages (and the
    instructions) become `system`, which every chat backend and template knows. The shields
    saw them with the role the client wrote."""
    messages = [
        {**message, "role": "system"} if message.get("role") == "developer" else message
        for message in chat_body["messages"]
    ]
    return {**chat_body, "messages": messages}


def parse_responses_request(raw: bytes) -> ResponsesRequest:
    # NaN and Infinity are read, then refused naming their parameter (``_finite``).
    body = request_object(raw, allow_nan=True)
    for key, value in body.items():
        if key in _UNSUPPORTED:
            # Identity, not equality: 0 == False, yet 0 asks for something all the same.
            if value is not None and value is not False:
                raise BadRequest(
                    f"'{key}' is not supported by shieldgate's Responses API "
                    "(it serves responses over a chat-completions backend)",
                    param=key,
                    code="unsupported_parameter",
                )
        elif key not in _TRANSLATED and key not in _IGNORED:
            raise BadRequest(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")

    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("Missing required parameter: 'model' (a string)", param="model")
    stream = _optional(body, "stream", bool, False)
    store = _optional(body, "store", bool, True)
    previous = _optional(body, "previous_response_id", str, None)
    instructions = _optional(body, "instructions", str, None)
    if "input" not in body or body["input"] is None:
        raise BadRequest("Missing required parameter: 'input'", param="input")
    raw_input = body["input"]
    approvals: list[ApprovalResponse] = []
    if isinstance(raw_input, str):
        input_messages: list[dict[str, Any]] = [{"role": "user", "content": raw_input}]
    elif isinstance(raw_input, list):
        input_messages = items_to_messages(raw_input, where="input", approvals=approvals)
    else:
        raise BadRequest("'input' must be a string or a list of input items", param="input")
    if not input_messages and not approvals and previous is None:
        raise BadRequest("'input' must not be empty", param="input")
    if approvals and previous is None:
        raise BadRequest(
            f"{approvals[0].at}: an mcp_approval_response answers a request of the previous "
            "response: give previous_response_id",
            param="previous_response_id",
        )

    chat: dict[str, Any] = {}
    echo: dict[str, Any] = {
        "instructions": instructions,
        "previous_response_id": previous,
        "store": store,
        "truncation": _truncation(body.get("truncation")),
        "background": False,
    }
    tools, chat_tools, mcp_servers = _tools(body.get("tools"))
    echo["tools"] = tools
    tool_choice = body.get("tool_choice")
    echo["tool_choice"] = "auto" if tool_choice is None else tool_choice
    if tool_choice is not None:
        chat_tools = _tool_choice(tool_choice, chat_tools, chat, mcp=bool(mcp_servers))
    if chat_tools:
        chat["tools"] = chat_tools
    parallel = _optional(body, "parallel_tool_calls", bool, None)
    echo["parallel_tool_calls"] = True if parallel is None else parallel
    if parallel is not None and chat_tools:
        # Sent only with tools: OpenAI's chat API rejects it on a request without any.
        chat["parallel_tool_calls"] = parallel
    for key in ("temperature", "top_p"):
        value = _optional(body, key, float, None)
        echo[key] = value
        if value is not None:
            chat[key] = value
    max_tokens = body.get("max_output_tokens")
    if max_tokens is not None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise BadRequest(
                "'max_output_tokens' must be a positive integer", param="max_output_tokens"
            )
        # max_tokens rather than max_completion_tokens: vLLM, llama.cpp and Ollama all read it.
        chat["max_tokens"] = max_tokens
    echo["max_output_tokens"] = max_tokens
    echo["text"] = _text(body.get("text"), chat)
    echo["reasoning"] = _reasoning(body.get("reasoning"), chat)
    echo["metadata"] = _metadata(body.get("metadata"))
    user = _optional(body, "user", str, None)
    echo["user"] = user
    if user is not None:
        chat["user"] = user
    max_tool_calls = body.get("max_tool_calls")
    if max_tool_calls is not None and (
        not isinstance(max_tool_calls, int)
        or isinstance(max_tool_calls, bool)
        or max_tool_calls < 1
    ):
        raise BadRequest("'max_tool_calls' must be a positive integer", param="max_tool_calls")
    echo["max_tool_calls"] = max_tool_calls
    return ResponsesRequest(
        model=model,
        stream=stream,
        store=store,
        previous_response_id=previous,
        instructions=instructions,
        input_messages=input_messages,
        chat_params=chat,
        echo=echo,
        mcp_servers=mcp_servers,
        tool_choice=tool_choice,
        max_tool_calls=max_tool_calls,
        approvals=approvals,
        parallel_tool_calls=parallel,
    )


def _truncation(value: Any) -> str:
    if value is None:
        return "disabled"
    if not isinstance(value, str) or value not in ("auto", "disabled"):
        raise BadRequest("'truncation' must be auto or disabled", param="truncation")
    # Accepted, not applied: the backend's context limit decides, as it would for chat.
    return str(value)


def _optional(body: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    value = body.get(key)
    if value is None:
        return default
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and not _finite(value):
            # NaN, Infinity and 1e999 parse (Python's json reads them) but are no number a
            # backend can use: JSON has no way to write them (they would go upstream as null).
            raise BadRequest(f"'{key}' must be a finite number", param=key)
    else:
        ok = isinstance(value, kind)
    if not ok:
        names = {bool: "a boolean", str: "a string", float: "a number"}
        raise BadRequest(f"'{key}' must be {names[kind]}", param=key)
    return value


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


def _all_finite(value: Any, param: str) -> None:
    """A JSON value forwarded as it is (a schema) holds no NaN or infinity, which would reach
    the upstream as null. Iterative: the value may be nested as deeply as the parser allows."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise BadRequest(f"'{param}' holds a number that is not finite", param=param)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


# ---- input items -----------------------------------------------------------------------------


def items_to_messages(
    items: list[Any], *, where: str, approvals: list[ApprovalResponse] | None = None
) -> list[dict[str, Any]]:
    """Responses input (or output) items as chat messages.

    Consecutive ``function_call`` and ``mcp_call`` items become one assistant message with
    several ``tool_calls`` (attached to the assistant message right before them, if any): chat
    backends expect a turn's parallel calls together, followed by one ``tool`` message per call;
    an ``mcp_call``'s tool message (what the model read of its result: ``mcp_model_text``)
    follows the calls it came with. Reasoning items are dropped — a chat-completions request has
    no place for them — and so are ``mcp_list_tools`` and ``mcp_approval_request`` items, which
    the model never reads. ``mcp_approval_response`` items go to ``approvals`` (input only).
    """
    messages: list[dict[str, Any]] = []
    # Tool messages of the mcp_call items of the current run of calls.
    replies: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{at} must be an object", param=at)
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"
        if kind in ("function_call", "mcp_call"):
            if kind == "function_call":
                call = _function_call(item, at)
            else:
                call, reply = _mcp_call(item, at)
                replies.append(reply)
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                # "" rather than null: llama.cpp's server rejects a null content (a 500), and
                # vLLM, Ollama and OpenAI all take "" beside tool_calls.
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            continue
        messages += replies
        replies = []
        if kind == "message":
            messages.append(_message(item, at))
        elif kind == "function_call_output":
            messages.append(_function_call_output(item, at))
        elif kind in ("reasoning", "mcp_list_tools", "mcp_approval_request"):
            continue
        elif kind == "mcp_approval_response" and approvals is not None:
            approvals.append(_approval_response(item, at))
        elif isinstance(kind, str):
            raise BadRequest(
                f"{at}.type {kind!r} is not supported by shieldgate's Responses API; supported "
                "input items are message, function_call, function_call_output, reasoning, "
                "mcp_call, mcp_list_tools, mcp_approval_request and mcp_approval_response",
                param=f"{at}.type",
                code="unsupported_value",
            )
        else:
            raise BadRequest(f"{at} must have a 'type' or a 'role'", param=at)
    return messages + replies


def mcp_model_text(item: dict[str, Any]) -> str:
    """What the model reads of an ``mcp_call`` item: its output, or the error it ended with
    (a tool's own error text, or the proxy's words for a failed hop)."""
    output, error = item.get("output"), item.get("error")
    if isinstance(output, str) and error is None:
        return output
    if isinstance(error, dict):
        if error.get("type") == "mcp_tool_execution_error":
            content = error.get("content")
            parts = content if isinstance(content, list) else []
            texts = [
                part["text"]
                for part in parts
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            return "Error: " + "\n".join(texts)
        message = error.get("message")
        if isinstance(message, str):
            return f"Error: {message}"
    if isinstance(error, str):
        return f"Error: {error}"
    return "Error: the tool call did not complete"


def _mcp_call(item: dict[str, Any], at: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An ``mcp_call`` item (of a response's output, or sent back as input): the call as the
    model made it, and the tool message of what it read back."""
    call_id, name, arguments = item.get("id"), item.get("name"), item.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{at}.id must be a string", param=f"{at}.id")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{at}.name must be a string", param=f"{at}.name")
    if isinstance(arguments, dict):
        arguments = serialize_arguments(arguments)
    if not isinstance(arguments, str):
        raise BadRequest(f"{at}.arguments must be a JSON string", param=f"{at}.arguments")
    output, error = item.get("output"), item.get("error")
    if output is not None and not isinstance(output, str):
        raise BadRequest(f"{at}.output must be a string", param=f"{at}.output")
    if error is not None and not isinstance(error, dict | str):
        raise BadRequest(f"{at}.error must be an object", param=f"{at}.error")
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    reply = {"role": "tool", "tool_call_id": call_id, "content": mcp_model_text(item)}
    return call, reply


def _approval_response(item: dict[str, Any], at: str) -> ApprovalResponse:
    request_id, approve = item.get("approval_request_id"), item.get("approve")
    if not isinstance(request_id, str) or not request_id:
        raise BadRequest(
            f"{at}.approval_request_id must be a string", param=f"{at}.approval_request_id"
        )
    if not isinstance(approve, bool):
        raise BadRequest(f"{at}.approve must be a boolean", param=f"{at}.approve")
    reason = item.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadRequest(f"{at}.reason must be a string", param=f"{at}.reason")
    return ApprovalResponse(request_id, approve, at)


def _message(item: dict[str, Any], at: str) -> dict[str, Any]:
    role = item.get("role")
    # Type first: a list or an object cannot be looked up in a set (TypeError, a 500).
    if not isinstance(role, str) or role not in _MESSAGE_ROLES:
        got = f"; got {role!r}" if isinstance(role, str) else ""
        raise BadRequest(
            f"{at}.role must be one of user, system, developer, assistant{got}",
            param=f"{at}.role",
        )
    # Kept as the client wrote it, for the shields (a shield may be scoped to `developer`);
    # ``upstream_body`` makes it `system` on the wire.
    chat_role = role
    content = item.get("content")
    if isinstance(content, str):
        return {"role": chat_role, "content": content}
    if not isinstance(content, list):
        raise BadRequest(
            f"{at}.content must be a string or a list of content parts", param=f"{at}.content"
        )
    parts = [_part(part, f"{at}.content[{j}]", role) for j, part in enumerate(content)]
    # A string is what every backend reads; only user turns need a list (for images).
    if role == "assistant":
        return {"role": chat_role, "content": "".join(part["text"] for part in parts)}
    if role != "user":
        return {"role": chat_role, "content": "\n".join(part["text"] for part in parts)}
    if len(parts) == 1 and parts[0]["type"] == "text":
        return {"role": chat_role, "content": parts[0]["text"]}
    return {"role": chat_role, "content": parts}


def _part(part: Any, at: str, role: str) -> dict[str, Any]:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise BadRequest(f"{at} must be an object with a 'type'", param=at)
    kind = part["type"]
    text_key = {"input_text": "text", "output_text": "text", "refusal": "refusal"}.get(kind)
    if text_key is not None:
        if kind != "input_text" and role != "assistant":
            raise BadRequest(f"{at}.type {kind!r} is only valid in assistant messages", param=at)
        value = part.get(text_key)
        if not isinstance(value, str):
            raise BadRequest(f"{at}.{text_key} must be a string", param=f"{at}.{text_key}")
        return {"type": "text", "text": value}
    if kind == "input_image" and role == "user":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            raise BadRequest(
                f"{at}: only images given by 'image_url' are supported (no 'file_id')",
                param=f"{at}.image_url",
                code="unsupported_value",
            )
        image: dict[str, Any] = {"url": url}
        detail = part.get("detail")
        if isinstance(detail, str) and detail != "auto":
            image["detail"] = detail
        return {"type": "image_url", "image_url": image}
    raise BadRequest(
        f"{at}.type {kind!r} is not supported by shieldgate's Responses API",
        param=f"{at}.type",
        code="unsupported_value",
    )


def _function_call(item: dict[str, Any], at: str) -> dict[str, Any]:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{at}.call_id must be a string", param=f"{at}.call_id")
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{at}.name must be a string", param=f"{at}.name")
    if isinstance(arguments, dict):
        arguments = serialize_arguments(arguments)
    if not isinstance(arguments, str):
        raise BadRequest(f"{at}.arguments must be a JSON string", param=f"{at}.arguments")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _function_call_output(item: dict[str, Any], at: str) -> dict[str, Any]:
    call_id, output = item.get("call_id"), item.get("output")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f"{at}.call_id must be a string", param=f"{at}.call_id")
    if isinstance(output, list):
        texts = []
        for j, part in enumerate(output):
            if not isinstance(part, dict) or part.get("type") != "input_text":
                raise BadRequest(
                    f"{at}.output[{j}]: only input_text parts are supported in tool output",
                    param=f"{at}.output[{j}]",
                    code="unsupported_value",
                )
            text = part.get("text")
            if not isinstance(text, str):
                raise BadRequest(f"{at}.output[{j}].text must be a string", param=f"{at}.output")
            texts.append(text)
        output = "".join(texts)
    if not isinstance(output, str):
        raise BadRequest(f"{at}.output must be a string", param=f"{at}.output")
    return {"role": "tool", "tool_call_id": call_id, "content": output}


# ---- tools and options -----------------------------------------------------------------------


def _tools(
    value: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[McpServerSpec]]:
    """The tools as the Response echoes them, as the chat request carries them (functions),
    and the MCP servers (run by the proxy)."""
    if value is None:
        return [], [], []
    if not isinstance(value, list):
        raise BadRequest("'tools' must be a list", param="tools")
    echoed: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    servers: list[McpServerSpec] = []
    names: set[str] = set()
    for i, tool in enumerate(value):
        at = f"tools[{i}]"
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise BadRequest(f"{at} must be an object with a 'type'", param=at)
        kind = tool["type"]
        if kind == "mcp":
            server = parse_mcp_tool(tool, at)
            if any(other.label == server.label for other in servers):
                raise BadRequest(
                    f"{at}.server_label {server.label!r} is used by two MCP tools",
                    param=f"{at}.server_label",
                )
            servers.append(server)
            echoed.append(server.echo())
            continue
        if kind != "function":
            raise BadRequest(
                f"Tool type {kind!r} ({at}) is not supported: shieldgate serves the Responses "
                "API over a chat-completions backend, which can only call tools of type "
                "'function' (and runs tools of type 'mcp' itself)",
                param=f"{at}.type",
                code="unsupported_tool",
            )
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"{at}.name must be a non-empty string", param=f"{at}.name")
        if name in names:
            raise BadRequest(f"{at}.name {name!r} is used by two tools", param=f"{at}.name")
        names.add(name)
        description = tool.get("description")
        parameters = tool.get("parameters")
        strict = tool.get("strict")
        if description is not None and not isinstance(description, str):
            raise BadRequest(f"{at}.description must be a string", param=f"{at}.description")
        if parameters is not None and not isinstance(parameters, dict):
            raise BadRequest(f"{at}.parameters must be an object", param=f"{at}.parameters")
        _all_finite(parameters, f"{at}.parameters")
        if strict is not None and not isinstance(strict, bool):
            raise BadRequest(f"{at}.strict must be a boolean", param=f"{at}.strict")
        function: dict[str, Any] = {"name": name}
        if description is not None:
            function["description"] = description
        if parameters is not None:
            function["parameters"] = parameters
        if strict is not None:
            function["strict"] = strict
        chat.append({"type": "function", "function": function})
        echoed.append(
            {
                "type": "function",
                "name": name,
                "description": description,
                "parameters": parameters,
                "strict": strict,
            }
        )
    return echoed, chat, servers


def _tool_choice(
    value: Any, tools: list[dict[str, Any]], chat: dict[str, Any], *, mcp: bool = False
) -> list[dict[str, Any]]:
    """Sets the chat ``tool_choice``; returns the tools to send (``allowed_tools`` narrows them).

    With MCP tools the choice is made again once their listings are known
    (``proxy.mcp.loop``): a mode then applies to them too, ``{"type": "mcp"}`` names one.
    """
    names = {tool["function"]["name"] for tool in tools}
    if isinstance(value, str):
        if value not in _TOOL_CHOICE_MODES:
            raise BadRequest(
                "'tool_choice' must be none, auto, required or a function", param="tool_choice"
            )
        if tools:
            chat["tool_choice"] = value
        elif value == "required" and not mcp:
            raise BadRequest("tool_choice 'required' needs at least one tool", param="tool_choice")
        return tools
    if not isinstance(value, dict):
        raise BadRequest("'tool_choice' must be a string or an object", param="tool_choice")
    kind = value.get("type")
    if kind == "mcp" and mcp:
        label, name = value.get("server_label"), value.get("name")
        if not isinstance(label, str) or (name is not None and not isinstance(name, str)):
            raise BadRequest(
                "tool_choice of type mcp needs a server_label (and may name a tool)",
                param="tool_choice",
            )
        return tools
    if kind == "function":
        name = value.get("name")
        if not isinstance(name, str) or name not in names:
            raise BadRequest(
                f"tool_choice names the function {name!r}, which is not among the tools",
                param="tool_choice.name",
            )
        chat["tool_choice"] = {"type": "function", "function": {"name": name}}
        return tools
    if kind == "allowed_tools":
        mode, allowed = value.get("mode", "auto"), value.get("tools")
        valid_mode = isinstance(mode, str) and mode in ("auto", "required")
        if not valid_mode or not isinstance(allowed, list) or not allowed:
            raise BadRequest(
                "tool_choice allowed_tools needs a mode (auto or required) and a list of tools",
                param="tool_choice",
            )
        keep: set[str] = set()
        for j, entry in enumerate(allowed):
            if not isinstance(entry, dict) or entry.get("type") != "function":
                raise BadRequest(
                    f"tool_choice.tools[{j}]: only function tools are supported",
                    param=f"tool_choice.tools[{j}]",
                    code="unsupported_tool",
                )
            if not isinstance(entry.get("name"), str) or entry["name"] not in names:
                raise BadRequest(
                    f"tool_choice.tools[{j}] names a function that is not among the tools",
                    param=f"tool_choice.tools[{j}].name",
                )
            keep.add(entry["name"])
        # A chat backend has no allowed-tools list: it gets only the allowed tools.
        chat["tool_choice"] = mode
        return [tool for tool in tools if tool["function"]["name"] in keep]
    raise BadRequest(
        f"tool_choice of type {kind!r} is not supported: only none, auto, required, a function "
        "or allowed_tools of functions",
        param="tool_choice",
        code="unsupported_tool",
    )


def _text(value: Any, chat: dict[str, Any]) -> dict[str, Any]:
    if value is None:
        return {"format": {"type": "text"}}
    if not isinstance(value, dict):
        raise BadRequest("'text' must be an object", param="text")
    unknown = set(value) - {"format", "verbosity"}
    if unknown:
        raise BadRequest(f"Unknown parameter: 'text.{sorted(unknown)[0]}'.", param="text")
    text_format = value.get("format")
    if text_format is None:
        return {**value, "format": {"type": "text"}}
    if not isinstance(text_format, dict):
        raise BadRequest("'text.format' must be an object", param="text.format")
    kind = text_format.get("type")
    if kind == "json_object":
        chat["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        name, schema = text_format.get("name"), text_format.get("schema")
        if not isinstance(name, str) or not name:
            raise BadRequest("text.format.name must be a string", param="text.format.name")
        if not isinstance(schema, dict):
            raise BadRequest("text.format.schema must be an object", param="text.format.schema")
        _all_finite(schema, "text.format.schema")
        json_schema: dict[str, Any] = {"name": name, "schema": schema}
        for key, kind_ in (("description", str), ("strict", bool)):
            option = text_format.get(key)
            if option is not None:
                if not isinstance(option, kind_):
                    raise BadRequest(f"text.format.{key} has the wrong type", param="text.format")
                json_schema[key] = option
        chat["response_format"] = {"type": "json_schema", "json_schema": json_schema}
    elif kind != "text":
        raise BadRequest(
            "text.format.type must be text, json_object or json_schema", param="text.format.type"
        )
    return value


def _reasoning(value: Any, chat: dict[str, Any]) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest("'reasoning' must be an object", param="reasoning")
    effort = value.get("effort")
    if effort is not None:
        if not isinstance(effort, str):
            raise BadRequest("reasoning.effort must be a string", param="reasoning.effort")
        chat["reasoning_effort"] = effort
    summary = value.get("summary")
    return {"effort": effort, "summary": summary if isinstance(summary, str) else None}


def _metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > _MAX_METADATA_KEYS:
        raise BadRequest(
            f"'metadata' must be an object of at most {_MAX_METADATA_KEYS} string values",
            param="metadata",
        )
    for key, item in value.items():
        if len(key) > 64 or not isinstance(item, str) or len(item) > 512:
            raise BadRequest(
                "metadata keys are strings of at most 64 characters, values strings of at most 512",
                param=f"metadata.{key[:64]}",
            )
    return value
