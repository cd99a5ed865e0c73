"""A recording relay between shieldgate and the demo's model: what did the model receive?

The tour's claim "the secret was redacted before the model saw it" is only worth printing if it
is checked, so the demo's shieldgate talks to the model through this relay, which forwards
every request unchanged (method, path, body, content type, authorization), streams the answer
back as it comes, and keeps the request bodies it forwarded. It adds one loopback hop, which
counts against shieldgate in the tour's time-to-first-token figure, never for it.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

__all__ = ["RecordingTap"]

_FORWARDED_HEADERS = ("Content-Type", "Authorization", "Accept")


class RecordingTap:
    """``await tap.start()`` -> base URL ending in ``/v1``; ``tap.bodies`` holds what passed."""

    def __init__(self, model_base_url: str) -> None:
        self._model_root = model_base_url.removesuffix("/v1")
        self.bodies: list[bytes] = []
        # Only the tour reads ``bodies``; once it is over the demo may serve for hours, so the
        # relay stops keeping them (``stop_recording``) rather than hold every request.
        self._recording = True
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/v1"

    def stop_recording(self) -> None:
        self._recording = False
        self.bodies.clear()

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        if body and self._recording:
            self.bodies.append(body)
        headers = {
            name: request.headers[name] for name in _FORWARDED_HEADERS if name in request.headers
        }
        url = self._model_root + request.rel_url.path_qs
        async with self._session.request(request.method, url, data=body, headers=headers) as reply:
            response = web.StreamResponse(status=reply.status)
            if "Content-Type" in reply.headers:
                response.content_type = reply.content_type
                if reply.charset:
                    response.charset = reply.charset
            await response.prepare(request)
            try:
                async for data in reply.content.iter_any():
                    await response.write(data)
                await response.write_eof()
            except ConnectionResetError:
                pass  # shieldgate hung up mid-stream (it does after an output block)
            return response
