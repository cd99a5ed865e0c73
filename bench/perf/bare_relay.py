"""The floor of an aiohttp proxy: relays ``POST /v1/chat/completions`` and nothing else.

An aiohttp server and one ``aiohttp.ClientSession``, as shieldgate has, with none of its
work: no request parsing or validation, no policy, no SSE framing, no metrics. A JSON reply is
read whole and returned; a streamed reply is written on as each read arrives. The benchmarks
run it beside shieldgate so that its cost per request and per streamed MB shows what any proxy
built on aiohttp pays on this machine before it does anything: the part of shieldgate's cost
that is not shieldgate's.

Not a proxy to use: it forwards no headers but the content type, checks nothing, handles no
errors. Run from the repository root: ``python -m bench.perf.bare_relay --upstream URL [--loop
uvloop]``; prints ``bare relay listening on URL`` once ready; stops on SIGTERM or when its
standard input (a pipe from the benchmark) closes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import stat
import sys
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

_SESSION = web.AppKey("session", aiohttp.ClientSession)
_UPSTREAM = web.AppKey("upstream", str)


async def relay(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    session = request.app[_SESSION]
    async with session.post(
        request.app[_UPSTREAM] + "/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    ) as reply:
        if reply.content_type != "text/event-stream":
            return web.Response(
                body=await reply.read(), status=reply.status, content_type=reply.content_type
            )
        response = web.StreamResponse(
            status=reply.status, headers={"Content-Type": "text/event-stream"}
        )
        await response.prepare(request)
        async for data in reply.content.iter_any():
            await response.write(data)
        await response.write_eof()
        return response


async def serve(upstream: str) -> None:
    app = web.Application()
    app[_UPSTREAM] = upstream.rstrip("/")
    app.router.add_post("/v1/chat/completions", relay)

    async def session(app: web.Application) -> AsyncIterator[None]:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as client:
            app[_SESSION] = client
            yield

    app.cleanup_ctx.append(session)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=2048)
    await site.start()
    host, port = runner.addresses[0][:2]
    print(f"bare relay listening on http://{host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if stat.S_ISFIFO(os.fstat(0).st_mode):
        # The benchmark that started us holds the other end: its exit closes the pipe.
        loop.add_reader(0, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--upstream", required=True, help="base URL including /v1")
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    args = parser.parse_args()
    if args.loop in ("auto", "uvloop"):
        with contextlib.suppress(ImportError):
            import uvloop

            uvloop.run(serve(args.upstream))
            return 0
        if args.loop == "uvloop":
            parser.error("uvloop is not installed")
    asyncio.run(serve(args.upstream))
    return 0


if __name__ == "__main__":
    sys.exit(main())
