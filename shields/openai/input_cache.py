"""The input stage's outcome per text, remembered: a conversation is scanned once, not per turn.

Chat clients and agents send the whole conversation with every request, so without memory the
input stage scans each earlier turn again at every turn, and a conversation costs the square
of its length. ``InputCache`` remembers, for each text of a request (``MessageText``), what the
local input shields found in it — the findings with their spans, which decide its blocks and
redactions — and ``check_input_texts`` scans only the texts it has not seen. A remembered text
is not normalized, joined or scanned again; its findings are enforced as a fresh scan's would
be, so the blocks, the redactions written into the request and the findings logged, counted and
audited are the same (``tests/shields/test_input_cache.py`` compares cached and fresh checks).

A text's outcome is remembered under everything the local shields read of it:

- the build of the stage's shields (``StageShields.serial``: each compiled policy, and each of
  its endpoint views, is a build of its own, so a reloaded policy never sees the outcomes of
  the one it replaced) and the policy's ``on_error`` (whether a failure is a finding);
- the text's role, which decides which shields apply and how (the injection shield has one
  profile per role);
- whether it is JSON (tool-call arguments and JSON request fields are read as their escapes
  stand for);
- each of its fields' exact text, in order, and which runs of them are also scanned joined
  without a separator (content parts): together they are the whole text each scan reads,
  the cross-part scan included;
- the audit trail's keyed hash of matched text (``fingerprint``), which findings carry: a
  cache serves one fingerprint function, and starts afresh when given another;
- a ``partition`` the caller names: the proxy's is a digest of the request's credential, so
  that no caller can learn from a faster answer that another one sent a text (a remembered
  text is answered sooner than a scanned one).

Not remembered, so checked on every request: the request-wide checks (``Shield.check_request``,
the ``length`` shield's message count and request size), which read the whole conversation; a
text whose scan failed (a ``shield_error`` finding), since a failure says nothing about the
text; and every remote or classifier shield, which has a verdict cache of its own
(``shields.remote``). The local shields are assumed to be what the shield interface says they
are (``shields.base``): configured once, immutable, a fresh scanner per text, so that a text's
findings depend on the text, its role and the shields alone.

The cache is bounded by an approximate size in bytes (the texts it keys on, held as Python
strings, plus a fixed cost per entry and per finding) and forgets the least recently used
entries first. It is safe to share between threads: the proxy checks large requests on worker
threads.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shields.base import Finding, Shield, StageShields
from shields.openai.request import MessageText

__all__ = ["DEFAULT_MAX_BYTES", "CacheScope", "InputCache", "Remembered"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# What an entry costs besides its texts: the key and value tuples, the dict's slot and the
# LRU list's node (about 200 bytes on CPython 3.11), and each finding (a slotted dataclass).
_ENTRY_BYTES = 240
_FINDING_BYTES = 160
_FAILED = "shield_error"


@dataclass(frozen=True, slots=True)
class Remembered:
    """One text's outcome: the findings of a fresh scan, in its order, spans in the text's
    fields joined by ``PART_SEPARATOR``."""

    findings: tuple[Finding, ...]
    size: int


class InputCache:
    """Input-stage outcomes per text, least recently used forgotten first past ``max_bytes``."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[object, ...], Remembered] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._fingerprint: Callable[[str], str] | None = None
        # Totals since the cache was made (the proxy's metrics count per request instead).
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def bytes(self) -> int:
        """The approximate size of what is remembered."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def scope(
        self,
        shields: Sequence[Shield],
        *,
        fail_closed: bool,
        fingerprint: Callable[[str], str] | None,
        partition: object = None,
    ) -> CacheScope | None:
        """The texts checked by ``shields`` as one stage of one policy, for one ``partition``
        of the cache (the proxy's: one per caller); None when their outcomes cannot be
        remembered (shields that are no policy's stage, or no room)."""
        if not self.max_bytes or not isinstance(shields, StageShields):
            return None
        if fingerprint != self._fingerprint:
            # Findings carry the fingerprint's hash: another function, other findings.
            # (Bound methods compare equal when they are the same method of one object.)
            with self._lock:
                if fingerprint != self._fingerprint:
                    self._entries.clear()
                    self._bytes = 0
                    self._fingerprint = fingerprint
        return CacheScope(self, (shields.serial, fail_closed, partition))

    def _get_all(
        self, keys: Sequence[tuple[object, ...] | None]
    ) -> tuple[list[Remembered | None], int, int]:
        """Each key's entry, marked as just used, and how many were found and not; one lock
        for a whole request's texts."""
        found: list[Remembered | None] = []
        append = found.append
        hits = misses = 0
        with self._lock:
            entries = self._entries
            get, touch = entries.get, entries.move_to_end
            for key in keys:
                if key is None:
                    append(None)
                    continue
                remembered = get(key)
                if remembered is None:
                    misses += 1
                else:
                    touch(key)
                    hits += 1
                append(remembered)
            self.hits += hits
            self.misses += misses
        return found, hits, misses

    def _reused(self) -> None:
        with self._lock:
            self.hits += 1
            self.misses -= 1

    def _put(self, key: tuple[object, ...], remembered: Remembered) -> int:
        """Remembers an outcome; returns how many older entries it pushed out."""
        if remembered.size > self.max_bytes:
            return 0  # would push out everything else for one text
        evicted = 0
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:  # another thread scanned the same text meanwhile
                self._bytes -= previous.size
            self._entries[key] = remembered
            self._bytes += remembered.size
            while self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= dropped.size
                evicted += 1
            self.evictions += evicted
        return evicted


class CacheScope:
    """The cache as one check of one request sees it: its keys start with the stage's build.

    Counts what it answered and what it had to scan, for the request's metrics."""

    __slots__ = ("_cache", "_prefix", "evicted", "hits", "misses")

    def __init__(self, cache: InputCache, prefix: tuple[object, ...]) -> None:
        self._cache = cache
        self._prefix = prefix
        self.hits = 0
        self.misses = 0
        self.evicted = 0

    def key(self, message: MessageText) -> tuple[object, ...]:
        """What the shields read of one text: the stage's build and ``on_error``, the role,
        JSON or not, the runs of fields scanned joined, each field's text. The role goes in
        as its string value: an enum member's hash is computed in Python, a string's once."""
        fields = message.fields
        joined = tuple(message.joined) if message.joined else ()
        role = message.role._value_
        if len(fields) == 1:  # nearly every text
            return (*self._prefix, role, message.json_text, joined, fields[0].text)
        return (*self._prefix, role, message.json_text, joined, *[f.text for f in fields])

    def get_all(self, keys: Sequence[tuple[object, ...] | None]) -> list[Remembered | None]:
        """The remembered outcome of each text named (None: not remembered, or no key)."""
        found, hits, misses = self._cache._get_all(keys)
        self.hits += hits
        self.misses += misses
        return found

    def reused(self) -> None:
        """A text looked up in vain was scanned earlier in the same check: counted as
        remembered."""
        self.hits += 1
        self.misses -= 1
        self._cache._reused()

    def put(self, key: tuple[object, ...], findings: Sequence[Finding]) -> None:
        """Remembers a fresh scan's findings for the text ``key`` names, unless a shield
        failed on it."""
        if any(finding.label == _FAILED for finding in findings):
            return
        size = _ENTRY_BYTES + _FINDING_BYTES * len(findings)
        for part in key[_TEXTS:]:
            size += sys.getsizeof(part)
        self.evicted += self._cache._put(key, Remembered(tuple(findings), size))


# Where a key's texts start: after the build, on_error, partition, role, JSON flag and joined
# runs.
_TEXTS = 6
