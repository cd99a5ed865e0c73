"""The ``shieldgate`` command line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from proxy.logs import configure_logging
from proxy.settings import Settings
from shields.base import Stage
from shields.commands import check_policies, run_policy_tests, scan_lines
from shields.policy import CompiledPolicy, PolicyError, load_policy, parse_policy
from shields.routing import PolicySet, load_policy_set

__all__ = ["default_policy", "main"]

EXIT_USAGE = 2


def default_policy() -> CompiledPolicy:
    source = resources.files("policies").joinpath("default.yaml")
    return parse_policy(source.read_bytes(), source="policies/default.yaml")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shieldgate", description="Guardrail proxy for OpenAI-compatible LLM servers."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the proxy")
    serve.add_argument(
        "--upstream",
        help="chat-completions base URL including /v1 (default: $SHIELDGATE_UPSTREAM, "
        "$OPENAI_BASE_URL, http://127.0.0.1:8000/v1)",
    )
    serve.add_argument(
        "--policy",
        help="policy YAML file, or a directory of policies with routes.yaml (default: "
        "$SHIELDGATE_POLICY, else the packaged default policy)",
    )
    serve.add_argument("--host", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: 8080; 0 = any)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    check = commands.add_parser(
        "check", help="validate policy files (exit 1 and file:line:column lines on problems)"
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="policy files or directories")

    test = commands.add_parser("test", help="run the policies' cases (like `opa test`)")
    test.add_argument("paths", nargs="+", metavar="PATH", help="policy files or directories")
    test.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    test.add_argument("--allow-empty", action="store_true", help="succeed when no case ran")
    test.add_argument("--explain", action="store_true", help="show what fired for every case")

    scan = commands.add_parser(
        "scan", help="run a policy over JSON Lines from stdin: {id, text} or {id, messages}"
    )
    scan.add_argument("--policy", help="policy YAML file (default: the packaged default policy)")
    scan.add_argument("--stage", choices=["input", "output"], default="input")
    scan.add_argument(
        "--explain", action="store_true", help="add each finding's action and matched text"
    )
    return parser


def _fail(message: str) -> int:
    print(f"shieldgate: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check_policies(args.paths, sys.stdout)
    if args.command == "test":
        return run_policy_tests(
            args.paths,
            sys.stdout,
            junit=args.junit,
            allow_empty=args.allow_empty,
            explain=args.explain,
        )
    if args.command == "scan":
        return _scan(args)
    return _serve_command(args)


def _scan(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(Path(args.policy)) if args.policy else default_policy()
    except PolicyError as exc:
        return _fail(f"invalid policy:\n{exc}")
    # Bytes, not text: a line that is not UTF-8 must become an error line, not end the run.
    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    return scan_lines(policy, Stage(args.stage), stdin, sys.stdout, explain=args.explain)


def _serve_command(args: argparse.Namespace) -> int:
    flags = {"upstream": args.upstream, "policy": args.policy, "host": args.host, "port": args.port}
    try:
        settings = Settings.from_sources(flags)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        )
        return _fail(f"invalid setting: {problems}")
    try:
        policies = (
            load_policy_set(settings.policy)
            if settings.policy
            else PolicySet.single(default_policy())
        )
    except PolicyError as exc:
        return _fail(f"invalid policy:\n{exc}")
    configure_logging(args.log_level, json_format=settings.log_format == "json")
    try:
        asyncio.run(_serve(settings, policies))
    except OSError as exc:
        print(
            f"shieldgate: cannot listen on {settings.host}:{settings.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        pass
    return 0


async def _serve(settings: Settings, policies: PolicySet) -> None:
    # Imported here: aiohttp and the service cost half a second that `check`, `test` and
    # `scan` (pre-commit hooks, CI) should not pay.
    from proxy.server import start_server
    from proxy.state import POLICY

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    server = await start_server(settings, policies)
    source = server.app[POLICY]
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(source.reload()))
    # Only now: whoever waits for this line may signal us right after reading it.
    print(f"shieldgate listening on {server.url}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.close()


if __name__ == "__main__":
    sys.exit(main())
