"""``/v1/responses``: the OpenAI Responses API, served over the upstream's chat completions.

A request is translated into a chat-completions request (``proxy.endpoints.responses_request``),
checked
by the same input stage as ``/v1/chat/completions``, and always sent upstream as a stream, also
when the client did not ask for one. The upstream's events go through the same ``StreamGuard``,
and only what it releases is translated into Responses events
(``proxy.endpoints.responses_stream``). So
there is one guarded path: a non-stream response is exactly the object ``response.completed``
carries, a block closes the upstream at once (the upstream stops generating), and the zero-leak
guarantee of the stream guard covers every delta event. An upstream that ignores ``"stream":
true`` and answers with one JSON ``chat.completion`` has it checked whole by the output stage,
as ``/v1/chat/completions`` checks a non-stream reply, before any of it is translated.

Errors before the first byte are HTTP errors in OpenAI's shape, as for chat completions: bad
requests 400, an unreachable upstream 502, a non-stream request past ``request_timeout`` 504,
upstream error statuses relayed with their message checked by the output shields. Once a stream
has started, a block is the Responses refusal form and an upstream failure is
``response.failed``. An upstream's own error text never reaches the client unchecked: a failure
carries the proxy's own message.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from aiohttp import web

from proxy.endpoints.chat_request import ChatRequest, parse_chat_request
from proxy.endpoints.responses_request import (
    ResponsesRequest,
    echo_checked,
    items_to_messages,
    new_id,
    parse_responses_request,
    upstream_body,
)
from proxy.endpoints.responses_stream import (
    STREAM_FAILED,
    GuardedResponseStream,
    ResponseTranslator,
    refusal_events,
)
from proxy.errors import (
    BadRequest,
    McpUnavailable,
    NotFound,
    ProxyError,
    StoreUnavailable,
    UpstreamError,
    json_response,
    send_event_stream,
    start_response,
)
from proxy.exchange.lifecycle import CheckedReply, Exchange, UpstreamCall
from proxy.exchange.refusal import content_filter_error
from proxy.mcp import client as mcp_client
from proxy.mcp.checks import (
    MCP_ARGUMENTS,
    MCP_RESULT,
    MCP_TOOLS,
    check_arguments,
    name_arguments_hop,
)
from proxy.mcp.loop import DECLINED, Emit, McpRun, Step
from proxy.mcp.servers import allow_list
from proxy.mcp.tools import McpTool
from proxy.serving.off_loop import off_loop_if_large, off_loop_unless, parse_on_loop
from proxy.state import BLOCKED_HEADER, RESPONSE_STORE, SETTINGS, UPSTREAM, read_body
from proxy.store.responses import StoredResponse
from proxy.stream.chat_deltas import encode_named_events
from proxy.stream.translated import UPSTREAM_REPORTED, Event, MalformedChunk
from proxy.upstream.http1 import UpstreamReply
from shields import json_codec
from shields.base import Stage
from shields.verdict import StageOutcome

__all__ = [
    "ResponsesDialect",
    "create_response",
    "delete_response",
    "retrieve_response",
]

log = logging.getLogger("shieldgate.proxy")

_NOT_FORWARDED = frozenset({"content-type", "accept"})


def _owner(request: web.Request) -> str:
    """Whose response it is: a digest of the credential (never the credential itself)."""
    credential = request.headers.get("Authorization", "")
    return hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()


async def create_response(request: web.Request) -> web.StreamResponse:
    raw = await read_body(request)
    parsed = await off_loop_if_large(len(raw), parse_responses_request, raw)
    return await Exchange(request, ResponsesDialect(request, parsed), len(raw)).run()


class ResponsesDialect:
    """One Responses request over the upstream's chat completions, and storing its outcome.

    With ``type: mcp`` tools a response may take several inference turns: the MCP side
    (listing, calls, approvals, limits) is ``proxy.mcp.loop.McpRun``; this class runs the turns
    (``_turns``), each one upstream stream through its own guard, translated into one response.
    """

    route = "responses"

    def __init__(self, request: web.Request, parsed: ResponsesRequest) -> None:
        self.request = request
        self.parsed = parsed
        self.model = parsed.model
        self.stream = parsed.stream
        self.translator = ResponseTranslator(
            response_id=new_id("resp"), model=parsed.model, echo=parsed.echo, streamed=parsed.stream
        )
        self._chat: ChatRequest | None = None
        self._saved = False
        self._mcp: McpRun | None = None
        # The messages of the latest upstream request, when they are not the checked request's
        # own (MCP: approved calls, earlier turns); the response continues them when stored.
        self._messages: list[dict[str, Any]] | None = None
        self._opened = False
        self._prelude: list[Event] = []  # MCP items made before the first turn
        # An inference turn's output was blocked (any turn's: x-shieldgate-blocked).
        self._output_blocked = False

    @property
    def chat(self) -> ChatRequest:
        assert self._chat is not None, "prepare() first"
        return self._chat

    async def prepare(self, exchange: Exchange) -> None:
        parsed = self.parsed
        self._check_mcp_servers()
        prior: list[dict[str, Any]] = []
        record: StoredResponse | None = None
        if parsed.previous_response_id is not None:
            record = await _load(self.request, parsed.previous_response_id)
            if record is None or record.owner != _owner(self.request):
                raise BadRequest(
                    f"Previous response with id '{parsed.previous_response_id}' not found.",
                    param="previous_response_id",
                    code="previous_response_not_found",
                )
            prior = record.conversation
        if parsed.mcp_servers:
            self._mcp = McpRun(parsed, self.request.app[SETTINGS], record)
        # The translated request takes the chat-completions parser and input stage as it is,
        # so input shields, redaction and blocks behave exactly as for /v1/chat/completions.
        body = json_codec.dumps(parsed.chat_body(prior))
        # A long stored conversation is quick to read (few objects): no thread hop for it.
        self._chat = await off_loop_unless(parse_on_loop(body), parse_chat_request, body)

    def _check_mcp_servers(self) -> None:
        """Every MCP server of the request must be one the operator allows (``mcp_servers``):
        the proxy calls it from inside the operator's network."""
        servers = self.parsed.mcp_servers
        if not servers:
            if self.parsed.approvals:
                raise BadRequest(
                    f"{self.parsed.approvals[0].at}: an mcp_approval_response needs the MCP "
                    "tool it approves a call of in 'tools'",
                    param="tools",
                )
            return
        allowed = allow_list(self.request.app[SETTINGS].mcp_servers)
        for server in servers:
            if allowed.check(server.url) is None:
                raise BadRequest(
                    f"The MCP server of {server.at} (server_label {server.label!r}) is not "
                    "allowed: this proxy calls only the MCP servers its configuration lists "
                    "(setting mcp_servers)",
                    param=f"{server.at}.server_url",
                    code="mcp_server_not_allowed",
                )
        if not mcp_client.available():
            raise McpUnavailable(
                "MCP tools need the MCP SDK, which this proxy does not have installed "
                "(pip install 'shieldgate[mcp]')"
            )

    def input_checked(self, outcome: StageOutcome) -> None:
        # What the response repeats of the request is what the input stage let through (and is
        # stored so): redacted instructions and tool definitions, nothing of a blocked input.
        echo_checked(self.parsed, self.chat.body, blocked=outcome.blocked)

    async def before_upstream(self, exchange: Exchange) -> web.StreamResponse | None:
        """MCP tools: their servers listed and their definitions checked, the calls the
        client approved run, all before the model is asked (``BeforeUpstream``)."""
        mcp = self._mcp
        if mcp is None:
            return None
        translator = self.translator
        self._prelude = self._open()  # the MCP items come after response.created
        functions = self.chat.tool_names or frozenset()
        listing = await mcp.list_tools(exchange, functions)
        if listing.blocked:
            return await self._refuse_hop(exchange, MCP_TOOLS)
        self.chat.tool_names = functions | mcp.tools.names
        translator.mcp = mcp.tools
        for label, tools in listing.fresh:
            self._prelude += translator.list_tools(label, tools, listing.notices.get(label))
        messages = list(self.chat.body["messages"])
        at = len(messages) - len(self.parsed.input_messages)
        approved: list[dict[str, Any]] = []
        for approval in self.parsed.approvals:
            tool, arguments = mcp.approval_request(approval)
            if not approval.approve:
                approved += _declined(tool, arguments, approval.request_id)
                continue
            outcome, arguments = await check_arguments(exchange, tool.name, arguments)
            if outcome.blocked:
                return await self._refuse_hop(exchange, MCP_ARGUMENTS)
            item_id, events = translator.approved_call(tool, arguments, approval.request_id)
            self._prelude += events
            end = await mcp.call(exchange, item_id, tool.name, arguments)
            if end.blocked:
                return await self._refuse_hop(exchange, MCP_RESULT)
            self._prelude += translator.mcp_call_done(item_id, output=end.output, error=end.error)
            item = translator.turn_output()[-1]
            approved += items_to_messages([item], where="output")
        self._messages = _continued(messages[:at], approved) + messages[at:]
        mcp.turns = 1
        translator.start_turn()
        return None

    def _open(self) -> list[Event]:
        """The response's first events (``response.created``...), then any MCP items made
        before the first turn: each once."""
        events: list[Event] = []
        if not self._opened:
            self._opened = True
            events = self.translator.start()
        events += self._prelude
        self._prelude = []
        return events

    def upstream_call(self, exchange: Exchange, redacted: bool) -> UpstreamCall:
        headers = {
            name: value
            for name, value in exchange.app[UPSTREAM].headers(self.request.headers).items()
            if name.lower() not in _NOT_FORWARDED
        }
        headers["Content-Type"] = "application/json"
        headers["Accept"] = "text/event-stream"
        body = self.chat.body if self._mcp is None else self._turn_body(self._mcp)
        return UpstreamCall(json_codec.dumps(upstream_body(body)), headers)

    def _turn_body(self, mcp: McpRun) -> dict[str, Any]:
        """The chat request of the next inference turn: the conversation so far, the function
        tools and the MCP tools (as checked), and the turn's tool choice."""
        body = dict(self.chat.body)
        assert self._messages is not None
        body["messages"] = self._messages
        tools = list(body.get("tools") or []) + mcp.definitions
        if tools:
            body["tools"] = tools
        choice = mcp.tool_choice(self.parsed.tool_choice, self.chat.body.get("tool_choice"))
        body.pop("tool_choice", None)
        if choice is not None and tools:
            body["tool_choice"] = choice
        if self.parsed.parallel_tool_calls is not None and tools:
            body["parallel_tool_calls"] = self.parsed.parallel_tool_calls
        return body

    async def refuse(self, exchange: Exchange, stage: Stage) -> web.StreamResponse:
        """A block before anything was sent: a blocked input, or a whole upstream reply."""
        refusal = exchange.policy.spec.refusal
        headers = {BLOCKED_HEADER: stage.value}
        if refusal.style == "error":
            return json_response(content_filter_error(refusal.message), status=400, headers=headers)
        events = self._open() + self.translator.refuse(refusal.message)
        # A blocked input is not stored: continuing the conversation must not replay it.
        await self._save(include_input=stage is not Stage.INPUT)
        return await self._answer(events, headers)

    async def _refuse_hop(self, exchange: Exchange, hop: str) -> web.StreamResponse:
        """An MCP hop blocked before the first inference turn (a listing's tool definitions,
        an approved call's arguments or result): the refusal, nothing sent upstream."""
        refusal = exchange.policy.spec.refusal
        headers = {BLOCKED_HEADER: hop}
        if refusal.style == "error":
            return json_response(content_filter_error(refusal.message), status=400, headers=headers)
        events = self._open() + self.translator.refuse(refusal.message)
        await self._save()
        return await self._answer(events, headers)

    async def answer_reply(
        self, exchange: Exchange, checked: CheckedReply, body: bytes, reply: UpstreamReply
    ) -> web.StreamResponse:
        """A whole ``chat.completion`` answering the streaming request, which the output stage
        passed (redactions are in it): translated now (and, with MCP tools, the turns that
        follow it run before anything is sent)."""
        translator = self.translator
        events = self._open()
        try:
            events += translator.reply(checked.completion, turn=self._mcp is not None)
        except MalformedChunk as exc:
            raise UpstreamError(
                f"The upstream sent a reply that cannot be checked: {exc}"
            ) from None

        async def collect(more: list[Event]) -> bool:
            events.extend(more)
            return True

        if self._mcp is not None and not translator.ended:
            await self._more_turns(exchange, self._mcp, collect)
        final = translator.final
        if final is None or final["status"] == "failed":
            # Only the proxy's own words (see ResponseTranslator.complete); nothing sent yet.
            error = (final or {}).get("error") or {}
            raise UpstreamError(error.get("message") or STREAM_FAILED)
        await self._save()
        blocked = self._mcp.blocked_hop if self._mcp is not None else None
        return await self._answer(events, {BLOCKED_HEADER: blocked} if blocked else None)

    async def relay_stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        if self.parsed.stream:
            return await self._stream(exchange, reply)
        return await self._collect(exchange, reply)

    async def _pump(self, exchange: Exchange, reply: UpstreamReply, emit: Emit) -> bool:
        """One inference turn's upstream stream through its own guard."""
        guard = exchange.stream_guard()
        mcp = self._mcp
        if mcp is not None:
            name_arguments_hop(exchange, guard, mcp.tools.names)
        stream = GuardedResponseStream(
            guard, self.translator, exchange.policy.spec.refusal, turn=mcp is not None
        )
        try:
            return await exchange.pump(reply, stream, emit)
        finally:
            self._output_blocked |= stream.blocked

    async def _turns(self, exchange: Exchange, reply: UpstreamReply, emit: Emit) -> bool:
        """The first turn from ``reply``, then (MCP tools) the turns that follow; False when
        the client left."""
        if not await self._pump(exchange, reply, emit):
            return False
        mcp = self._mcp
        return mcp is None or await self._more_turns(exchange, mcp, emit)

    async def _more_turns(self, exchange: Exchange, mcp: McpRun, emit: Emit) -> bool:
        """After a turn: its MCP calls run, then the next turn, until the response ends.
        False when the client left."""
        translator = self.translator
        while not translator.ended:
            step = await mcp.after_turn(exchange, translator, emit)
            if step is Step.GONE:
                return False
            if step is Step.DONE:
                break
            assert self._messages is not None
            self._messages = self._messages + items_to_messages(
                translator.turn_output(), where="output"
            )
            mcp.turns += 1
            translator.start_turn()
            if not await self._next_turn(exchange, emit):
                return False
        return True

    async def _next_turn(self, exchange: Exchange, emit: Emit) -> bool:
        """One more inference turn upstream, through its own guard into the same response.
        Failures end the response (``response.failed``, the proxy's words)."""
        translator = self.translator
        call = self.upstream_call(exchange, redacted=True)
        metrics = exchange.metrics
        started = time.perf_counter()
        try:
            async with exchange.app[UPSTREAM].request(
                "POST",
                call.path,
                headers=call.headers,
                body=call.body,
                endpoint=exchange.endpoint,
            ) as reply:
                metrics.child(metrics.upstream_ttfb, exchange.endpoint).observe(
                    time.perf_counter() - started
                )
                try:
                    return await self._turn_reply(exchange, reply, emit)
                finally:
                    metrics.child(metrics.upstream_seconds, exchange.endpoint).observe(
                        time.perf_counter() - started
                    )
        except ProxyError as exc:
            # Before the turn's first byte (refused, unreachable, timed out): the proxy's words.
            return await emit(translator.fail(exc.message))

    async def _turn_reply(self, exchange: Exchange, reply: UpstreamReply, emit: Emit) -> bool:
        translator = self.translator
        if reply.status >= 300:
            await exchange.read_upstream_body(reply)
            return await emit(translator.fail(f"The upstream answered HTTP {reply.status}"))
        if reply.content_type == "text/event-stream":
            return await self._pump(exchange, reply, emit)
        body = await exchange.read_upstream_body(reply)
        checked = await exchange.check_json_reply(body, reply.status)
        if checked.error is not None:
            return await emit(translator.fail(UPSTREAM_REPORTED))
        if checked.outcome.blocked:
            self._output_blocked = True
            return await emit(refusal_events(translator, exchange.policy.spec.refusal))
        try:
            events = translator.reply(checked.completion, turn=True)
        except MalformedChunk as exc:
            events = translator.fail(f"The upstream sent an invalid reply: {exc}")
        return await emit(events)

    async def _answer(
        self, events: list[Event], headers: dict[str, str] | None = None
    ) -> web.StreamResponse:
        """A response whose events are all known before the first byte: as a stream, or as
        the object its last event carries."""
        if not self.parsed.stream:
            return json_response(self.translator.final, headers=headers)
        return await send_event_stream(self.request, encode_named_events(events), headers=headers)

    async def _stream(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Cache-Control": "no-cache"})
        response.content_type = "text/event-stream"
        # Remembered as started: an error from here on aborts the connection rather than
        # writing a second response into this one's body.
        await start_response(self.request, response)

        async def emit(events: list[Event]) -> bool:
            if not events:
                return True
            # Stored before the client hears the end: a follow-up request may come at once.
            await self._save()
            try:
                await response.write(encode_named_events(events))
            except ConnectionResetError:
                log.info("client disconnected mid-stream")
                return False
            return True

        if await emit(self._open()) and await self._turns(exchange, reply, emit):
            await response.write_eof()
        return response

    async def _collect(self, exchange: Exchange, reply: UpstreamReply) -> web.StreamResponse:
        async def discard(events: list[Event]) -> bool:
            return True

        self._open()
        await self._turns(exchange, reply, discard)
        final = self.translator.final
        blocked = "output" if self._output_blocked else None
        if self._mcp is not None and self._mcp.blocked_hop is not None:
            blocked = self._mcp.blocked_hop
        if blocked is not None:
            headers = {BLOCKED_HEADER: blocked or "output"}
            refusal = exchange.policy.spec.refusal
            if refusal.style == "error" or final is None:
                error = content_filter_error(refusal.message)
                return json_response(error, status=400, headers=headers)
            await self._save()
            return json_response(final, headers=headers)
        if final is None or final["status"] == "failed":
            # The failure's message is the proxy's own (GuardedResponseStream never puts
            # upstream text there), so it can be the error's.
            error = (final or {}).get("error") or {}
            raise UpstreamError(error.get("message") or STREAM_FAILED)
        await self._save()
        return json_response(final)

    async def _save(self, *, include_input: bool = True) -> None:
        final = self.translator.final
        if not self.parsed.store or final is None or self._saved:
            return
        self._saved = True
        # After the input stage (redactions applied), without the instructions.
        sent = self._messages if self._messages is not None else self.chat.body["messages"]
        conversation = sent[self.parsed.system_count :]
        if not include_input:
            conversation = conversation[: len(conversation) - len(self.parsed.input_messages)]
        if final["status"] != "failed":
            output = self.translator.conversation_output()
            conversation = conversation + items_to_messages(output, where="output")
        record = StoredResponse(
            id=final["id"],
            owner=_owner(self.request),
            response=final,
            conversation=conversation,
        )
        try:
            await self.request.app[RESPONSE_STORE].put(record)
        except Exception:
            # The answer stands; only a later previous_response_id or GET will miss it.
            log.exception("could not store response %s", final["id"])


def _declined(tool: McpTool, arguments: str, request_id: str) -> list[dict[str, Any]]:
    """A call the client declined, as the model reads it: the call, and that it did not run."""
    call = {
        "id": request_id,
        "type": "function",
        "function": {"name": tool.name, "arguments": arguments},
    }
    return [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": request_id, "content": DECLINED},
    ]


def _continued(messages: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` followed by ``calls`` (assistant tool calls and their tool messages), the
    first calls joined to a last assistant message without calls: two assistant messages in a
    row break strict chat templates."""
    if not calls:
        return messages
    last = messages[-1] if messages else None
    first = calls[0]
    if last is not None and last.get("role") == "assistant" and not last.get("tool_calls"):
        joined = {**last, "tool_calls": first["tool_calls"]}
        return [*messages[:-1], joined, *calls[1:]]
    return messages + calls


async def retrieve_response(request: web.Request) -> web.StreamResponse:
    if request.query.get("stream", "false").lower() not in ("false", "0"):
        raise BadRequest("Streaming a stored response again is not supported", param="stream")
    return json_response((await _stored(request)).response)


async def delete_response(request: web.Request) -> web.StreamResponse:
    record = await _stored(request)
    try:
        await request.app[RESPONSE_STORE].delete(record.id)
    except Exception:
        log.exception("the response store failed")
        raise StoreUnavailable("The response store is unavailable") from None
    return json_response({"id": record.id, "object": "response", "deleted": True})


async def _load(request: web.Request, response_id: str) -> StoredResponse | None:
    try:
        return await request.app[RESPONSE_STORE].get(response_id)
    except Exception:
        log.exception("the response store failed")
        raise StoreUnavailable("The response store is unavailable") from None


async def _stored(request: web.Request) -> StoredResponse:
    response_id = request.match_info["response_id"]
    record = await _load(request, response_id)
    if record is None or record.owner != _owner(request):
        # Someone else's response is as absent as a missing one: ids are not to be probed.
        raise NotFound(f"Response with id '{response_id}' not found.")
    return record
