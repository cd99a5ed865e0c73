"""Runtime settings of the service: one typed model, fed by flags and ``SHIELDGATE_*`` variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator
from yarl import URL

from proxy.mcp.servers import allowed_server

__all__ = [
    "DEFAULT_UPSTREAM",
    "POSTGRES_SCHEMES",
    "Settings",
    "default_responses_db",
    "read_config_file",
]

DEFAULT_UPSTREAM = "http://127.0.0.1:8000/v1"
# The URL schemes libpq reads as a PostgreSQL connection.
POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def default_responses_db() -> str:
    """Where stored responses live unless ``responses_db`` says otherwise: the XDG state
    directory (``$XDG_STATE_HOME``, else ``~/.local/state``), never the working directory —
    a server started from a checkout must not leave a database in it."""
    state = os.environ.get("XDG_STATE_HOME", "")
    # The XDG spec: a relative path there is invalid and is ignored.
    if not os.path.isabs(state):
        try:
            state = str(Path.home() / ".local" / "state")
        except RuntimeError:  # no home directory to be found: kept for the process's life
            return ":memory:"
    return os.path.join(state, "shieldgate", "responses.sqlite3")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    upstream: str = DEFAULT_UPSTREAM
    policy: str | None = None  # a YAML file; None means the packaged default policy
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    # Replaces the client's Authorization header towards the upstream when set.
    upstream_api_key: str | None = Field(default=None, repr=False)
    # The OpenAI-Organization and OpenAI-Project headers sent with the proxy's own key: with
    # upstream_api_key set, the client's are never forwarded (the operator's key, the
    # operator's billing); unset, none is sent.
    upstream_organization: str | None = None
    upstream_project: str | None = None
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    max_upstream_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    # A client's time for a request's headers: from the connection's start for its first
    # request, from the first byte of each later one. Past it the connection is closed.
    client_header_timeout: float = Field(default=60.0, gt=0)
    # Longest silence between two reads of a request's body; past it a 408 and a close.
    client_body_timeout: float = Field(default=60.0, gt=0)
    # Connections one client address may hold at once, per process (0: no limit). Behind a
    # load balancer every connection comes from its address: keep 0 there.
    max_connections_per_client: int = Field(default=0, ge=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    # Longest silence between two reads from the upstream (time to first token included).
    read_timeout: float = Field(default=600.0, gt=0)
    # A non-stream request's whole time upstream, retries included (0: no limit).
    request_timeout: float = Field(default=900.0, ge=0)
    retry_attempts: int = Field(default=3, ge=1, le=10)
    retry_backoff: float = Field(default=0.25, ge=0)
    retry_after_cap: float = Field(default=10.0, ge=0)
    # How often the policy file is checked for changes, in seconds (0: only on SIGHUP).
    policy_reload_interval: float = Field(default=0.5, ge=0)
    # Where /v1/responses keeps stored responses: a SQLite file (created on first use),
    # ":memory:" (lost at exit, not shared between processes), or a PostgreSQL URL
    # (postgresql://user:password@host:port/db, shared by every replica; may hold a password,
    # hence never shown). By default a SQLite file in the user's state directory (see
    # default_responses_db), which is created if need be.
    responses_db: str = Field(default_factory=default_responses_db, min_length=1, repr=False)
    # Stored responses older than this many days are not found and are deleted (0: kept until
    # deleted). OpenAI keeps stored responses 30 days.
    responses_retention_days: float = Field(default=30.0, ge=0)
    # Connections to PostgreSQL each process keeps at most (one is kept open).
    responses_db_pool_size: int = Field(default=4, ge=1, le=100)
    # What the input shields found in each text of a request, remembered (per process) so
    # that a conversation resent with every turn is scanned once: about this many bytes, the
    # least recently used forgotten first (0: every text scanned every time).
    input_cache_bytes: int = Field(default=64 * 1024 * 1024, ge=0)
    # Streams relayed at once; beyond it new requests get 503 + Retry-After (0: no limit).
    max_concurrent_streams: int = Field(default=0, ge=0)
    # Connections to the upstream at once (the pool of proxy/upstream/http1.py; 0: no
    # limit). Requests beyond it wait for a free connection, within connect_timeout — so a
    # limit below the streams in flight fails the others (1,000 slow streams: 700 timed out
    # at 100). Unlimited by default; bound streams with max_concurrent_streams instead.
    upstream_pool_size: int = Field(default=0, ge=0)
    # /readyz checks that the upstream accepts connections, caching the answer this many
    # seconds (0: readiness does not depend on the upstream).
    readyz_upstream_ttl: float = Field(default=5.0, ge=0)
    log_format: Literal["json", "text"] = "json"
    # One info line per request (method, path, status, duration, policy, verdict, stream).
    access_log: bool = True
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # On SIGTERM the listening socket closes at once; requests in flight (streams included)
    # get this many seconds to finish, then they are cancelled.
    shutdown_grace: float = Field(default=30.0, ge=0)
    # Processes of `shieldgate serve` sharing the port with SO_REUSEPORT (1: just this one).
    workers: int = Field(default=1, ge=1, le=256)
    # JSON Lines audit trail of every block/redaction (and monitor finding); None: off.
    audit_log: str | None = None
    # Key of the audit trail's hash of matched text (default: random per process).
    audit_hash_key: str | None = Field(default=None, repr=False)
    # Debug only: write the matched text itself into the audit trail instead of its hash.
    audit_include_text: bool = False
    # Client keys of the proxy (YAML, salted hashes; see proxy/clients/keys.py). Set: every request
    # but
    # /healthz, /readyz, /metrics needs `Authorization: Bearer sg-...` or gets 401. None: open.
    keys_file: str | None = None
    # Model names allowed as a metrics label (others count as "other"), comma-separated.
    metrics_models: tuple[str, ...] = ()
    # MCP servers the Responses API may call for a client (``type: mcp`` tools): URL
    # prefixes, comma-separated (``proxy.mcp.servers``). Empty: none (deny by default).
    mcp_servers: tuple[str, ...] = ()
    # One MCP hop (a listing or a call): connecting, the longest silence between two reads,
    # the whole hop (connection and session set-up included), and the largest body of any
    # one HTTP response of the server (and of a result's text, in bytes).
    mcp_connect_timeout: float = Field(default=5.0, gt=0)
    mcp_read_timeout: float = Field(default=30.0, gt=0)
    mcp_call_timeout: float = Field(default=60.0, gt=0)
    mcp_max_result_bytes: int = Field(default=1024 * 1024, ge=1024)
    # The MCP loop of one response: inference turns at most, and MCP calls at most (the
    # request's ``max_tool_calls`` may lower it).
    mcp_max_turns: int = Field(default=8, ge=1, le=64)
    mcp_max_calls: int = Field(default=16, ge=1, le=256)
    # Tool pinning (``proxy.mcp.pinning``): the pins file (YAML, kept in git; written by
    # ``shieldgate mcp pin``) whose fingerprints win over first-use records, and what a tool
    # whose fingerprint changed gets: withheld from the model (refuse_tool), the request
    # refused (refuse_server), or let through and recorded (monitor).
    mcp_pins_file: str | None = None
    mcp_tool_changes: Literal["refuse_tool", "refuse_server", "monitor"] = "refuse_tool"

    @field_validator("metrics_models", "mcp_servers", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _mcp_prefixes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            try:
                allowed_server(prefix)
            except ValueError as exc:
                raise ValueError(f"mcp_servers: {prefix!r} {exc}") from None
        return value

    @field_validator("upstream_organization", "upstream_project")
    @classmethod
    def _header_value(cls, value: str | None) -> str | None:
        # A header value: a line break in it would be a second header, or a refused request.
        if value is not None and (not value.strip() or not value.isprintable()):
            raise ValueError("must be a non-empty header value without control characters")
        return value

    @field_validator("policy", "host", "keys_file", "mcp_pins_file")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("responses_db")
    @classmethod
    def _store_location(cls, value: str) -> str:
        if "://" not in value:
            return value
        scheme = value.partition("://")[0]
        # Any other URL would be opened as a file name. The value is not repeated: a URL may
        # hold a password.
        if scheme.lower() not in POSTGRES_SCHEMES:
            raise ValueError(
                f"responses_db must be a SQLite file, ':memory:' or a postgresql:// URL, "
                f"not a {scheme}:// URL"
            )
        # Checked when the store connects at start (libpq's reading of it: several hosts,
        # query parameters), where a URL it cannot read stops the server with the reason.
        return value

    @property
    def responses_db_is_postgres(self) -> bool:
        return self.responses_db.partition("://")[0].lower() in POSTGRES_SCHEMES

    @field_validator("upstream")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or len(value) < 10:
            raise ValueError(f"upstream must be an http:// or https:// URL, got {value!r}")
        # Parsed here as the upstream client will parse it: a broken URL (an unclosed IPv6
        # bracket, a port that is not a number) is a message and exit status 2, not a
        # traceback when the server starts.
        try:
            host = URL(value).host
        except ValueError as exc:
            raise ValueError(f"upstream is not a valid URL ({exc}), got {value!r}") from None
        if not host or any(c.isspace() or not c.isprintable() for c in value):
            raise ValueError(f"upstream is not a valid URL, got {value!r}")
        return value.rstrip("/")

    @classmethod
    def from_sources(
        cls,
        flags: Mapping[str, Any],
        environ: Mapping[str, str] | None = None,
        *,
        config: Mapping[str, Any] | None = None,
    ) -> Settings:
        """Flags win over ``SHIELDGATE_*`` variables, which win over the config file's
        values, which win over ``OPENAI_BASE_URL`` (for ``upstream``), which wins over the
        defaults."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        # The OpenAI SDKs' own variable, so an existing setup needs no new configuration; the
        # weakest source, since clients may have it pointing at the proxy itself.
        if env.get("OPENAI_BASE_URL"):
            values["upstream"] = env["OPENAI_BASE_URL"]
        values.update(config or {})
        for name in cls.model_fields:
            value = env.get(f"SHIELDGATE_{name.upper()}")
            if value:  # set and not empty; pydantic converts "2.5" to a float and so on
                values[name] = value
        values.update({k: v for k, v in flags.items() if v is not None})
        return cls.model_validate(values)


def read_yaml_file(path: str | Path, kind: str) -> Any:
    """The YAML document in an operator's file (``kind``: "config file", "pins file"...);
    raises ValueError naming the file and what is wrong, on one line."""
    try:
        with open(path, "rb") as file:
            return yaml.safe_load(file)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read {kind}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}".splitlines()[0]) from None


def read_config_file(path: str) -> dict[str, Any]:
    """A YAML mapping of setting names to values; raises ValueError saying what is wrong."""
    document = read_yaml_file(path, "config file")
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a config file must be a mapping of setting names to values")
    unknown = sorted(str(key) for key in document if key not in Settings.model_fields)
    if unknown:
        raise ValueError(f"{path}: unknown settings: {', '.join(unknown)}")
    return {str(key): value for key, value in document.items()}


def upstream_loop_problem(settings: Settings) -> str | None:
    """Why ``shieldgate serve`` must not start with this upstream: it is the proxy's own
    address, so every request would come back to it until the connections run out (a
    client's OPENAI_BASE_URL pointing at the proxy is the usual way to get here). Only the
    CLI knows the address it listens on; under gunicorn, ``--bind`` decides."""
    url = URL(settings.upstream)
    local = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", settings.host.strip("[]").lower()}
    if settings.port and url.port == settings.port and (url.host or "").lower() in local:
        return (
            f"upstream {settings.upstream} is this proxy's own address "
            f"({settings.host}:{settings.port}): requests would come back to it; set the "
            "model server's URL"
        )
    return None
