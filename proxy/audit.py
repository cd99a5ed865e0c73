"""The audit trail: one JSON line per decision that blocked, redacted, or would have (monitor).

A record says who (request id, tenant), under which rules (policy name and hash), what (stage,
shield, type, label, action, span) — and instead of the matched text, a keyed hash of it, so that
the same leaked value can be recognised across records without the trail holding it. The raw
match is written only with the explicit ``audit_include_text`` debug setting.

Writing goes through a queue to a background thread (the event loop never waits on the disk)
and a WatchedFileHandler, which reopens the file when logrotate moves it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import logging.handlers
import os
import queue
import time
from dataclasses import dataclass
from typing import Any

from shields.base import Finding, Stage

__all__ = ["AuditContext", "AuditTrail"]


@dataclass(frozen=True, slots=True)
class AuditContext:
    request_id: str
    tenant: str
    policy: str
    policy_hash: str


class AuditTrail:
    def __init__(
        self, path: str | None, *, key: bytes | None = None, include_text: bool = False
    ) -> None:
        # Without a configured key the hash is keyed per process: records of one process can
        # be correlated, and a short value (a card number) cannot be brute-forced from them.
        self._key = key or os.urandom(32)
        self._include_text = include_text
        self._listener: logging.handlers.QueueListener | None = None
        self._logger = logging.getLogger(f"shieldgate.audit.{id(self)}")
        self._logger.propagate = False
        self._logger.setLevel(logging.INFO)
        self.enabled = path is not None
        if path is None:
            return
        handler = logging.handlers.WatchedFileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._logger.addHandler(logging.handlers.QueueHandler(records))
        self._listener = logging.handlers.QueueListener(records, handler)
        self._listener.start()

    def fingerprint(self, text: str) -> str:
        if self._include_text:
            return text  # the explicit debug setting: the raw match goes into the trail
        digest = hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return digest.hexdigest()[:32]

    def record(self, context: AuditContext, stage: Stage, finding: Finding, monitor: bool) -> None:
        if not self.enabled:
            return
        entry: dict[str, Any] = {
            "time": time.time(),
            "request_id": context.request_id,
            "tenant": context.tenant,
            "policy": context.policy,
            "policy_hash": context.policy_hash,
            "stage": stage.value,
            "shield": finding.shield_id,
            "type": finding.shield_type,
            "label": finding.label,
            "action": finding.action.value,
            "mode": "monitor" if monitor else "enforce",
            "start": finding.start,
            "end": finding.end,
        }
        entry["match" if self._include_text else "match_hash"] = finding.digest
        self._logger.info(json.dumps(entry))

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
            for handler in self._logger.handlers:
                handler.close()
            self._logger.handlers.clear()
