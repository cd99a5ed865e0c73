"""Fakes of the outside world for remote shields: a guard model, a moderation endpoint, a webhook.

One real aiohttp server on 127.0.0.1, port 0, serving ``POST /v1/chat/completions`` (a
Llama-Guard-style judge), ``POST /v1/moderations`` and ``POST /hook``. Each route answers
through a script: a function from the parsed request body to a :class:`Answer` (a text or JSON
body, a status, a delay, or ``hang`` to never answer). Every call is recorded with what it
asked, when, and whether the client hung up before the answer (``cancelled``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

__all__ = ["Answer", "Call", "FakeJudges", "judge_says", "moderation_scores"]

_CREATED = 1_700_000_000


@dataclass
class Answer:
    text: str | None = None  # judge: the assistant message's content
    json: Any = None  # moderation / webhook: the JSON body
    status: int = 200
    delay: float = 0.0
    hang: bool = False  # never answer (until the client gives up)
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # a body sent as it is (not JSON)


@dataclass
class Call:
    route: str
    body: Any
    headers: dict[str, str]
    started: float
    cancelled: bool = False
    finished: float | None = None


Script = Callable[[Any], Answer]


def judge_says(text: str, **kwargs: Any) -> Script:
    return lambda body: Answer(text=text, **kwargs)


def moderation_scores(scores: dict[str, float], **kwargs: Any) -> Script:
    flags = {name: score >= 0.5 for name, score in scores.items()}
    body = {
        "id": "modr-1",
        "model": "omni-moderation-latest",
        "results": [
            {"flagged": any(flags.values()), "categories": flags, "category_scores": scores}
        ],
    }
    return lambda request: Answer(json=body, **kwargs)


class FakeJudges:
    def __init__(self) -> None:
        self.judge: Script = judge_says("safe")
        self.moderation: Script = moderation_scores({"violence": 0.0})
        self.webhook: Script = lambda body: Answer(json={"action": "allow"})
        self.calls: list[Call] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def calls_to(self, route: str) -> list[Call]:
        return [c for c in self.calls if c.route == route]

    async def __aenter__(self) -> FakeJudges:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/moderations", self._moderations)
        app.router.add_post("/hook", self._hook)
        # Cancelled handlers are how the fake sees a client hang up mid-answer.
        self._runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _answer(self, request: web.Request, route: str, script: Script) -> web.Response:
        body = await request.json()
        call = Call(route, body, dict(request.headers), time.monotonic())
        self.calls.append(call)
        answer = script(body)
        try:
            if answer.hang:
                await asyncio.sleep(3600)
            if answer.delay:
                await asyncio.sleep(answer.delay)
        except asyncio.CancelledError:
            call.cancelled = True
            raise
        call.finished = time.monotonic()
        if answer.raw is not None:
            return web.Response(body=answer.raw, status=answer.status, headers=answer.headers)
        if route == "judge" and answer.status == 200:
            payload: Any = {
                "id": "chatcmpl-judge",
                "object": "chat.completion",
                "created": _CREATED,
                "model": body.get("model", "guard"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer.text},
                        "finish_reason": "stop",
                    }
                ],
            }
        else:
            payload = answer.json if answer.json is not None else {"error": {"message": "x"}}
        return web.Response(
            body=json.dumps(payload),
            status=answer.status,
            headers=answer.headers,
            content_type="application/json",
        )

    async def _chat(self, request: web.Request) -> web.Response:
        return await self._answer(request, "judge", self.judge)

    async def _moderations(self, request: web.Request) -> web.Response:
        return await self._answer(request, "moderation", self.moderation)

    async def _hook(self, request: web.Request) -> web.Response:
        return await self._answer(request, "webhook", self.webhook)
