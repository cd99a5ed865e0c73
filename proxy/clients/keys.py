"""Client keys of the proxy: the key format, the keys file, and ``shieldgate keys new``.

A client key is ``sg-<id>-<secret>``: a 12-character hex ``id`` that names the key's entry in
the keys file (so a lookup is one dictionary access, never a scan over all entries) and a
64-character hex ``secret`` (256 random bits). The keys file never holds a key, only

    keys:
      - id: 3f9a1c2b7d4e           # the id part of the key
        tenant: team-a             # metrics label and audit field for its requests
        policy: strict             # optional: the policy its requests run under
        salt: 8d0c...              # 16 random bytes, hex
        sha256: 5be4...            # SHA-256(salt || secret), hex

A presented key is hashed with its entry's salt and compared with ``hmac.compare_digest`` (in
constant time); an unknown id is hashed and compared against a dummy entry, so the answer takes
the same time either way.

Why one salted SHA-256 and not scrypt/PBKDF2: a slow KDF makes guessing a low-entropy password
expensive. These secrets are 256 random bits: a stolen keys file cannot be brute-forced at any
hashing speed, so a slow KDF would add no protection, only milliseconds of CPU to every request
— CPU an unauthenticated client could make the proxy burn. The salt (per key) still rules out
precomputed tables and makes equal secrets hash differently.

This module does not import aiohttp: ``shieldgate keys new`` stays fast.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import yaml
from pydantic import Field, ValidationError

from shields.policy import PolicyError, Problem, locate, yaml_problem
from shields.routing import PolicySet
from shields.spec import StrictModel

__all__ = [
    "KEY_PREFIX",
    "ClientKey",
    "KeyRing",
    "KeySource",
    "KeysFileError",
    "hash_secret",
    "keys_file_problem",
    "load_keys",
    "new_key",
    "new_key_command",
    "parse_keys",
]

KEY_PREFIX = "sg"
_ID_BYTES = 6  # 12 hex characters: a name, not a secret
_SECRET_BYTES = 32  # 256 bits
_SALT_BYTES = 16
_MAX_KEY_LENGTH = 256  # longer presented keys are refused before any hashing

_ID = r"^[A-Za-z0-9]{4,64}$"
TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"


class KeyEntry(StrictModel):
    """One entry of the keys file."""

    id: str = Field(pattern=_ID)
    # A metrics label: short and plain, from the operator's file only (bounded cardinality).
    tenant: str = Field(pattern=TENANT_PATTERN)
    policy: str | None = Field(default=None, min_length=1)
    salt: str = Field(pattern=r"^(?:[0-9a-fA-F]{2}){8,64}$")
    sha256: str = Field(pattern=r"^[0-9a-fA-F]{64}$")


class KeysFile(StrictModel):
    keys: list[KeyEntry]


@dataclass(frozen=True, slots=True)
class ClientKey:
    """A loaded key entry (what a request authenticated as)."""

    id: str
    tenant: str
    policy: str | None
    salt: bytes
    digest: bytes = field(repr=False)


def hash_secret(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8", "surrogatepass")).digest()


# Compared against when the presented id is unknown: the same work, and never a match.
_DUMMY = ClientKey("-", "-", None, secrets.token_bytes(_SALT_BYTES), secrets.token_bytes(32))


def _split(presented: str) -> tuple[str, str] | None:
    if len(presented) > _MAX_KEY_LENGTH:
        return None
    prefix, _, rest = presented.partition("-")
    key_id, _, secret = rest.partition("-")
    if prefix != KEY_PREFIX or not key_id or not secret:
        return None
    return key_id, secret


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The keys in force: id -> entry."""

    keys: Mapping[str, ClientKey]
    source: str = "<keys>"

    def authenticate(self, presented: str | None) -> ClientKey | None:
        """The entry of a valid key; None for a missing, malformed or wrong one."""
        parts = _split(presented) if presented else None
        if parts is None:
            return None
        key_id, secret = parts
        entry = self.keys.get(key_id)
        candidate = entry if entry is not None else _DUMMY
        matches = hmac.compare_digest(hash_secret(candidate.salt, secret), candidate.digest)
        return entry if matches and entry is not None else None


class KeysFileError(PolicyError):
    """A keys file that cannot be used; each problem is located (``file:line:column``)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems)
        self.args = ("\n".join(p.located() for p in self.problems),)

    def __str__(self) -> str:
        return str(self.args[0])


def parse_keys(
    raw: bytes, *, source: str = "<keys>", policies: Collection[str] | None = None
) -> KeyRing:
    """Parses a keys file; with ``policies``, every key's policy must be one of them.

    Raises KeysFileError naming the file, line and column of each problem.
    """
    try:
        tree = yaml.compose(raw, Loader=yaml.SafeLoader)
        document = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise KeysFileError([yaml_problem(source, exc, raw)]) from None
    try:
        spec = KeysFile.model_validate({} if document is None else document)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(x) if isinstance(x, str) else f"[{x}]" for x in error["loc"])
            where = where.replace(".[", "[")
            kind = error["type"]
            if kind == "extra_forbidden":
                message = "unknown key"
            elif kind == "string_pattern_mismatch" and error["loc"][-1] == "tenant":
                message = "a tenant is 1-64 letters, digits and _ . : - (a metrics label)"
            elif kind == "missing" and error["loc"] == ("keys",):
                message = "a keys file is a mapping with a `keys:` list (may be `keys: []`)"
            else:
                message = error["msg"]
            problems.append(locate(Problem(source, message, where), tree))
        raise KeysFileError(problems) from None
    problems = []
    keys: dict[str, ClientKey] = {}
    known = ", ".join(sorted(policies)) if policies is not None else ""
    for i, entry in enumerate(spec.keys):
        if entry.id in keys:
            message = f"duplicate key id {entry.id!r}"
            problems.append(locate(Problem(source, message, f"keys[{i}].id"), tree))
            continue
        if policies is not None and entry.policy is not None and entry.policy not in policies:
            message = f"no policy is named {entry.policy!r} (policies: {known or 'none'})"
            problems.append(locate(Problem(source, message, f"keys[{i}].policy"), tree))
        keys[entry.id] = ClientKey(
            entry.id,
            entry.tenant,
            entry.policy,
            bytes.fromhex(entry.salt),
            bytes.fromhex(entry.sha256),
        )
    if problems:
        raise KeysFileError(problems)
    return KeyRing(keys, source)


def load_keys(path: str | Path, policies: Collection[str] | None = None) -> KeyRing:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise KeysFileError([Problem(str(path), f"cannot read keys file: {reason}")]) from None
    return parse_keys(raw, source=str(path), policies=policies)


class KeySource:
    """The keys in force and their file. Reloaded together with the policies (see
    ``proxy.ops.policy_source.PolicySource``): a new keys file is checked against the new
    policies and both are swapped in at once, or neither is."""

    def __init__(self, path: str | Path, policies: PolicySet) -> None:
        self.path = Path(path)
        self.ring = load_keys(self.path, policies.policies)

    def prepare(self, policies: PolicySet) -> Callable[[], None]:
        """Loads and checks the file against ``policies`` (raises KeysFileError); the
        returned function puts the new keys in force."""
        ring = load_keys(self.path, policies.policies)

        def commit() -> None:
            self.ring = ring

        return commit


def keys_file_problem(path: str, policies: PolicySet) -> str | None:
    """For ``shieldgate serve``: why the keys file cannot serve with these policies, or None."""
    try:
        load_keys(path, policies.policies)
    except KeysFileError as exc:
        return f"invalid keys file:\n{exc}"
    return None


def new_key(tenant: str, policy: str | None = None) -> tuple[str, dict[str, str]]:
    """A new client key and its keys-file entry. The key is not stored anywhere."""
    if not re.fullmatch(TENANT_PATTERN, tenant):
        raise ValueError(f"invalid tenant {tenant!r}: 1-64 letters, digits and _ . : -")
    key_id = secrets.token_hex(_ID_BYTES)
    secret = secrets.token_hex(_SECRET_BYTES)
    salt = secrets.token_bytes(_SALT_BYTES)
    entry = {"id": key_id, "tenant": tenant}
    if policy is not None:
        entry["policy"] = policy
    entry["salt"] = salt.hex()
    entry["sha256"] = hash_secret(salt, secret).hex()
    return f"{KEY_PREFIX}-{key_id}-{secret}", entry


def new_key_command(tenant: str, policy: str | None, out: TextIO, err: TextIO) -> int:
    """``shieldgate keys new``: the keys-file entry on ``out`` (so ``>> keys.yaml`` appends it
    under ``keys:``), the key itself on ``err`` (so it never lands in the keys file)."""
    try:
        key, entry = new_key(tenant, policy)
    except ValueError as exc:
        print(f"shieldgate: {exc}", file=err)
        return 2
    text = yaml.safe_dump([entry], sort_keys=False, default_flow_style=False)
    out.write("".join(f"  {line}\n" for line in text.splitlines()))
    out.flush()
    print(
        f"# New client key for tenant {tenant!r}. It is shown only now (the keys file stores "
        "a salted hash); give it to the client as its API key:",
        file=err,
    )
    print(key, file=err, flush=True)
    return 0
