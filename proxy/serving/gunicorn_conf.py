"""gunicorn settings for shieldgate: its worker class, and metrics that add up every worker::

    gunicorn -c python:proxy.serving.gunicorn_conf 'proxy.serving.gunicorn_app:app' \\
        --bind 0.0.0.0:8080 --workers 4

gunicorn reads this module once, in its arbiter, before it starts any worker. Loading it makes
a directory for this run's metrics (inside ``PROMETHEUS_MULTIPROC_DIR`` when that is set, else
the system's temporary directory) and sets ``PROMETHEUS_MULTIPROC_DIR`` to it, which the workers
inherit: each writes its metrics there and ``/metrics``, whichever worker answers, adds them all
up (see ``proxy.ops.metrics``). A worker's live gauges are dropped when it exits (also when gunicorn
replaces it after a SIGHUP or ``--max-requests``); the directory is deleted when the arbiter
exits. Flags given on the command line override the settings below.

Without this module each worker's ``/metrics`` shows that worker only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

__all__ = ["child_exit", "graceful_timeout", "metrics_dir", "on_exit", "worker_class"]

worker_class = "aiohttp.GunicornWebWorker"
# Above SHIELDGATE_SHUTDOWN_GRACE (30 s): streams in flight finish before the arbiter kills.
graceful_timeout = 35

_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# Before anything imports prometheus-client, in the arbiter or (after the fork) its workers: it
# chooses its mode once, at import.
metrics_dir = tempfile.mkdtemp(prefix="shieldgate-metrics-", dir=os.environ.get(_VARIABLE) or None)
os.environ[_VARIABLE] = metrics_dir


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn's hook, in the arbiter, after a worker exited."""
    from prometheus_client.multiprocess import mark_process_dead

    mark_process_dead(worker.pid, metrics_dir)  # type: ignore[no-untyped-call]


def on_exit(server: Any) -> None:
    """gunicorn's hook, in the arbiter, as it exits."""
    shutil.rmtree(metrics_dir, ignore_errors=True)
