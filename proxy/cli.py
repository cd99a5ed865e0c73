"""The ``shieldgate`` command line."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from proxy.clients.keys import keys_file_problem, new_key_command
from proxy.ops.audit import audit_log_problem
from proxy.settings import Settings, read_config_file, upstream_loop_problem
from shields.base import Stage
from shields.commands import check_policies, run_policy_tests, scan_lines
from shields.pipeline import BlockingRemote
from shields.policy import CompiledPolicy, PolicyError, load_policy, parse_policy
from shields.routing import PolicySet, load_policy_set
from shields.rule_catalog import RULE_TYPES, rule_lines

__all__ = ["default_policy", "load_policies", "main"]

EXIT_USAGE = 2
# A command whose reader went away (`shieldgate test | head`): what a shell reports for a
# program killed by SIGPIPE, so the usual `[ $? -eq 141 ]` in pipelines keeps working.
EXIT_BROKEN_PIPE = 128 + 13


def default_policy() -> CompiledPolicy:
    source = resources.files("policies").joinpath("default.yaml")
    return parse_policy(source.read_bytes(), source="policies/default.yaml")


def load_policies(settings: Settings) -> PolicySet:
    """The policies ``settings.policy`` names, else the packaged default. Raises PolicyError."""
    if settings.policy:
        return load_policy_set(settings.policy)
    return PolicySet.single(default_policy())


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
    serve.add_argument(
        "--config",
        help="YAML file of settings (any setting by name; flags and SHIELDGATE_* variables "
        "win; default: $SHIELDGATE_CONFIG)",
    )
    serve.add_argument("--host", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default: 8080; 0 = any)")
    serve.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="processes sharing the port with SO_REUSEPORT (default: $SHIELDGATE_WORKERS, 1)",
    )
    serve.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="default: $SHIELDGATE_LOG_LEVEL, info",
    )

    check = commands.add_parser(
        "check", help="validate policy files (exit 1 and file:line:column lines on problems)"
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="policy files or directories")
    check.add_argument(
        "--explain",
        action="store_true",
        help="also say how much of a stream each output shield holds back",
    )

    test = commands.add_parser("test", help="run the policies' cases (like `opa test`)")
    test.add_argument("paths", nargs="+", metavar="PATH", help="policy files or directories")
    test.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    test.add_argument("--allow-empty", action="store_true", help="succeed when no case ran")
    test.add_argument("--explain", action="store_true", help="show what fired for every case")
    test.add_argument(
        "--remote",
        action="store_true",
        help="call awaited shields (llm_judge, moderation, webhook, and local classifiers); "
        "without it, cases naming one are skipped",
    )

    scan = commands.add_parser(
        "scan", help="run a policy over JSON Lines from stdin: {id, text} or {id, messages}"
    )
    scan.add_argument("--policy", help="policy YAML file (default: the packaged default policy)")
    scan.add_argument("--stage", choices=["input", "output"], default="input")
    scan.add_argument(
        "--remote",
        action="store_true",
        help="call awaited shields: remote judges and local classifiers (default: listed as "
        "skipped)",
    )
    scan.add_argument(
        "--explain", action="store_true", help="add each finding's action and matched text"
    )
    rules = commands.add_parser(
        "rules", help="list the rule ids a shield type's `rules:` option takes (secrets, ...)"
    )
    rules.add_argument(
        "shield_type", nargs="?", metavar="TYPE", help="secrets, injection or pii (default: list)"
    )
    keys = commands.add_parser("keys", help="client keys of the proxy (keys files)")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    new = keys_commands.add_parser(
        "new", help="make a client key: its keys-file entry on stdout, the key on stderr"
    )
    new.add_argument("--tenant", required=True, help="tenant name (metrics label, audit field)")
    new.add_argument("--policy", help="the policy its requests run under (default: routes)")
    mcp = commands.add_parser("mcp", help="pin MCP servers' tools (the pins file)")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True, metavar="COMMAND")
    pin = mcp_commands.add_parser(
        "pin", help="list an MCP server's tools and print their pins (YAML) for the pins file"
    )
    pin.add_argument("url", metavar="URL", help="the server's MCP endpoint (streamable HTTP)")
    pin.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header to send with the listing (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    pin.add_argument("--config", help="YAML file of settings (the mcp_* timeouts and limits)")
    forget = mcp_commands.add_parser(
        "forget",
        help="delete a server's first-use record from the store (its next listing is trusted)",
    )
    forget.add_argument("url", metavar="URL", help="the server's MCP endpoint")
    forget.add_argument("--config", help="YAML file of settings (responses_db)")
    demo = commands.add_parser(
        "demo",
        help="start a real model (SmolLM2 on llama.cpp) with shieldgate in front and show a tour",
    )
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on")
    demo.add_argument("--port", type=int, default=8080, help="shieldgate's port (0 = any)")
    demo.add_argument("--no-tour", action="store_true", help="just serve, without the tour")
    return parser


def _fail(message: str) -> int:
    print(f"shieldgate: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve_command(args)
    if args.command == "demo":
        # Imported here: the demo's modules (aiohttp, openai) stay out of the offline commands.
        from proxy.demo.command import run_demo

        return run_demo(host=args.host, port=args.port, tour=not args.no_tour)
    try:
        code = _offline_command(args)
        # Written out now, while a closed pipe can still be handled here: not at exit.
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    return code


def _discard_stdout() -> None:
    """Whoever read stdout is gone: what is still buffered goes nowhere, quietly (Python's
    recipe; otherwise the flush at exit raises again and prints a traceback)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _offline_command(args: argparse.Namespace) -> int:
    if args.command == "check":
        return check_policies(args.paths, sys.stdout, explain=args.explain)
    if args.command == "test":
        with _remote(args.remote) as remote:
            return run_policy_tests(
                args.paths,
                sys.stdout,
                junit=args.junit,
                allow_empty=args.allow_empty,
                explain=args.explain,
                remote=remote,
            )
    if args.command == "scan":
        return _scan(args)
    if args.command == "rules":
        return _rules(args.shield_type)
    if args.command == "mcp":
        return _mcp(args)
    return new_key_command(args.tenant, args.policy, sys.stdout, sys.stderr)


def _mcp(args: argparse.Namespace) -> int:
    from proxy.mcp.cli import forget_command, pin_command, settings_for

    config_path = args.config or os.environ.get("SHIELDGATE_CONFIG")
    try:
        settings = settings_for(read_config_file(config_path) if config_path else None)
    except (ValueError, ValidationError) as exc:
        return _fail(f"invalid setting: {str(exc).splitlines()[0]}")
    if args.mcp_command == "pin":
        return pin_command(args.url, args.header, settings, sys.stdout, sys.stderr)
    return forget_command(args.url, settings, sys.stdout, sys.stderr)


def _rules(shield_type: str | None) -> int:
    if shield_type is None:
        print("\n".join(RULE_TYPES))
        return 0
    lines = rule_lines(shield_type)
    if lines is None:
        return _fail(
            f"no rule list for type {shield_type!r}; types with rules: {', '.join(RULE_TYPES)}"
        )
    print("\n".join(lines))
    return 0


def _scan(args: argparse.Namespace) -> int:
    try:
        policy = load_policy(Path(args.policy)) if args.policy else default_policy()
    except PolicyError as exc:
        return _fail(f"invalid policy:\n{exc}")
    # Bytes, not text: a line that is not UTF-8 must become an error line, not end the run.
    stdin = getattr(sys.stdin, "buffer", sys.stdin)
    with _remote(args.remote) as remote:
        return scan_lines(
            policy, Stage(args.stage), stdin, sys.stdout, explain=args.explain, remote=remote
        )


@contextlib.contextmanager
def _remote(enabled: bool) -> Iterator[BlockingRemote | None]:
    """The network for remote shields, only when asked for: offline tools stay offline (and
    do not import the HTTP stack)."""
    if not enabled:
        yield None
        return
    from proxy.upstream.remote_backends import HttpBackends

    backends = HttpBackends()
    remote = BlockingRemote(backends)
    try:
        yield remote
    finally:
        remote.close(backends.close)


def _serve_command(args: argparse.Namespace) -> int:
    flags = {
        "upstream": args.upstream,
        "policy": args.policy,
        "host": args.host,
        "port": args.port,
        "workers": args.workers,
        "log_level": args.log_level,
    }
    config_path = args.config or os.environ.get("SHIELDGATE_CONFIG")
    try:
        config = read_config_file(config_path) if config_path else None
    except ValueError as exc:
        return _fail(str(exc))
    try:
        settings = Settings.from_sources(flags, config=config)
    except ValidationError as exc:
        problems = "; ".join(
            ".".join(map(str, e["loc"]))
            + ": " * bool(e["loc"])
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors(include_url=False)
        )
        return _fail(f"invalid setting: {problems}")
    if problem := upstream_loop_problem(settings):
        return _fail(f"invalid setting: {problem}")
    try:
        # Checked here even with --workers, which load it again: a bad policy is one message
        # and exit status 2 before any process starts.
        policies = load_policies(settings)
    except PolicyError as exc:
        return _fail(f"invalid policy:\n{exc}")
    if settings.keys_file and (problem := keys_file_problem(settings.keys_file, policies)):
        return _fail(problem)  # checked here too, before any worker starts: exit status 2
    if settings.audit_log and (problem := audit_log_problem(settings.audit_log)):
        return _fail(problem)  # not "cannot listen": the socket is not what failed
    if settings.mcp_pins_file:
        from proxy.mcp.pins import pins_file_problem

        if problem := pins_file_problem(settings.mcp_pins_file):
            return _fail(problem)
    # Imported here: it loads aiohttp, which the offline commands (check, test, scan) never
    # need, so a pre-commit hook does not pay for it.
    from proxy.ops.logs import configure_logging

    configure_logging(settings.log_level, json_format=settings.log_format == "json")
    if settings.workers > 1:
        from proxy.serving.workers import serve_workers

        return serve_workers(settings)
    from proxy.serving.server import (
        run,  # uvloop when installed (bench/perf/overhead_bench.py: ~10% CPU)
    )
    from proxy.store.responses import StoreStartupError

    try:
        run(_serve(settings, policies))
    except StoreStartupError as exc:
        return _fail(str(exc))  # a database that cannot be used: the operator's to fix
    except OSError as exc:
        print(
            f"shieldgate: cannot listen on {settings.host}:{settings.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def announce(url: str) -> None:
    """The one line on stdout: whoever waits for it may send requests, or signals, at once."""
    print(f"shieldgate listening on {url}", flush=True)


async def _serve(settings: Settings, policies: PolicySet) -> None:
    # Imported here: aiohttp and the service cost half a second that `check`, `test` and
    # `scan` (pre-commit hooks, CI) should not pay.
    from proxy.serving.server import serve

    await serve(settings, policies, announce)


if __name__ == "__main__":
    sys.exit(main())
