"""``shieldgate serve`` for the benchmarks, on an event loop chosen with ``--loop``.

The same steps as the CLI's ``serve`` with one process (settings from flags and an optional
``--config`` file, the policies, logging, :func:`proxy.serving.server.serve` announcing
``shieldgate listening on URL``), but run with :func:`proxy.serving.server.run` so that a benchmark
can
put asyncio's loop and uvloop side by side in one run. The environment's ``SHIELDGATE_*``
variables are ignored: only what the benchmark passes counts. Stops on SIGTERM, SIGINT, or the
end of its standard input when that is a pipe (the benchmark that started it is gone).

Run from the repository root: ``python -m bench.perf.proxy_main --loop uvloop --upstream URL
--policy FILE [--config FILE] [--port 0]``.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys

from proxy.cli import announce, load_policies
from proxy.ops.logs import configure_logging
from proxy.serving.server import run, serve
from proxy.settings import Settings, read_config_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--policy", required=True)
    parser.add_argument("--config")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    flags = {
        "upstream": args.upstream,
        "policy": args.policy,
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
    }
    config = read_config_file(args.config) if args.config else None
    settings = Settings.from_sources(flags, {}, config=config)
    policies = load_policies(settings)
    configure_logging(settings.log_level, json_format=settings.log_format == "json")
    parent_fd = 0 if stat.S_ISFIFO(os.fstat(0).st_mode) else None
    run(serve(settings, policies, announce, parent_fd=parent_fd), loop=args.loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
