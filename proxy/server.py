"""Running the app on a socket: used by the CLI and by the end-to-end tests alike."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from proxy.app import create_app
from proxy.settings import Settings
from shields.policy import CompiledPolicy
from shields.routing import PolicySet

__all__ = ["RunningServer", "start_server"]


@dataclass(slots=True)
class RunningServer:
    runner: web.AppRunner
    app: web.Application
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def close(self) -> None:
        await self.runner.cleanup()


async def start_server(settings: Settings, policy: CompiledPolicy | PolicySet) -> RunningServer:
    app = create_app(settings, policy)
    # handler_cancellation: when a client disconnects, its handler is cancelled, which closes
    # the upstream response even while the proxy is waiting for the upstream's next bytes.
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    port = settings.port
    for address in runner.addresses:
        if isinstance(address, tuple):
            port = address[1]
            break
    return RunningServer(runner=runner, app=app, host=settings.host, port=port)
