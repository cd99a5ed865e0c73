"""shieldgate under gunicorn's aiohttp worker::

    gunicorn -c python:proxy.serving.gunicorn_conf 'proxy.serving.gunicorn_app:app' \\
        --bind 0.0.0.0:8080 --workers 4

``proxy.serving.gunicorn_conf`` sets the worker class (``aiohttp.GunicornWebWorker``) and the
graceful
timeout, and makes ``/metrics`` add up every worker (prometheus-client's multiprocess mode, in
a directory per run); without it, pass ``--worker-class aiohttp.GunicornWebWorker
--graceful-timeout 35``, and each worker's ``/metrics`` shows that worker only.

``app`` is an async factory: gunicorn's worker awaits it once per worker process. Settings come
from the environment only (``SHIELDGATE_*``, as for ``shieldgate serve`` without flags; host,
port and workers are gunicorn's ``--bind`` and ``--workers`` instead), the policy from
``SHIELDGATE_POLICY`` or the packaged default. An invalid setting or policy fails the worker's
boot, and gunicorn stops.

The factory returns a ready-made ``AppRunner`` (aiohttp's worker accepts one) rather than the
bare application, so that the runner is configured exactly as under ``shieldgate serve``:
handler cancellation on client disconnect, and ``SHIELDGATE_SHUTDOWN_GRACE`` as the time
requests in flight get on SIGTERM — keep gunicorn's ``--graceful-timeout`` above it, or the
arbiter kills the worker first. gunicorn's ``--access-logfile`` does not apply (shieldgate logs
requests itself). SIGHUP goes to gunicorn's arbiter, which replaces the workers (each loads the
policy anew); the policy file is also polled as usual.

gunicorn itself is not a dependency of shieldgate: install it next to it to use this.
"""

from __future__ import annotations

from aiohttp import web

from proxy.app import create_app
from proxy.cli import load_policies
from proxy.ops.logs import configure_logging
from proxy.serving.server import make_runner
from proxy.settings import Settings

__all__ = ["app"]


async def app() -> web.AppRunner:
    settings = Settings.from_sources({})
    configure_logging(settings.log_level, json_format=settings.log_format == "json")
    return make_runner(create_app(settings, load_policies(settings)), settings)
