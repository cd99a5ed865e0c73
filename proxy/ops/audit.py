"""The audit trail: one JSON line per decision that blocked, redacted, or would have (monitor).

A record says who (request id, tenant), under which rules (policy name and hash), what (stage,
shield, type, label, action, span) — and instead of the matched text, a keyed hash of it, so that
the same leaked value can be recognised across records without the trail holding it. The raw
match is written only with the explicit ``audit_include_text`` debug setting.

Writing goes through a queue to a background thread (the event loop never waits on the disk)
and a WatchedFileHandler, which reopens the file when logrotate moves it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import logging.handlers
import os
import queue
import sys
import time
from dataclasses import dataclass
from typing import Any

from shields.base import Finding, Stage

__all__ = ["AuditContext", "AuditTrail", "audit_log_problem"]

log = logging.getLogger("shieldgate.audit")


@dataclass(frozen=True, slots=True)
class AuditContext:
    request_id: str
    tenant: str
    policy: str
    policy_hash: str


def audit_log_problem(path: str) -> str | None:
    """For ``shieldgate serve``: why the audit trail file cannot be opened for appending, or
    None. Checked before the server starts, so that a missing directory or a denied
    permission is one message and exit status 2, not a failure to listen."""
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"cannot open audit log {path}: {exc.strerror or type(exc).__name__}"
    return None


class _AuditFileHandler(logging.handlers.WatchedFileHandler):
    """A write that fails (disk full, the file or its directory gone or made unwritable)
    loses that record, and only that record:

    - the stdlib handler reopens a moved file outside its own error handling, so a reopen
      that failed killed the queue's thread, and every later record was queued for ever
      (memory) and never written, even once the directory was back;
    - logging's own ``handleError`` prints a traceback and the whole record (with
      ``audit_include_text``, the matched text) on stderr, outside the JSON logs.

    Here the failure is one log line, once, and one more when writing works again, with the
    number of records lost in between; the file is reopened for the next record."""

    def __init__(self, path: str) -> None:
        super().__init__(path, encoding="utf-8")
        self.lost = 0

    def emit(self, record: logging.LogRecord) -> None:
        lost = self.lost
        try:
            super().emit(record)  # reopens a moved file, writes, flushes
        except Exception:
            self.handleError(record)
        if lost and self.lost == lost:  # this one was written: the failure is over
            log.warning("audit log %s written again; %d records were lost", self.baseFilename, lost)
            self.lost = 0

    def handleError(self, record: logging.LogRecord) -> None:
        if self.lost == 0:
            error = sys.exc_info()[1]
            reason = getattr(error, "strerror", None) or type(error).__name__
            log.error(
                "audit log %s: cannot write (%s); records are lost", self.baseFilename, reason
            )
        self.lost += 1
        # Whatever the failed write left buffered would go out in front of the next record:
        # dropped with the stream, which the next record opens anew.
        stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()


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
        handler = _AuditFileHandler(path)
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

    def record(
        self,
        context: AuditContext,
        stage: Stage,
        finding: Finding,
        monitor: bool,
        *,
        hop: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        """``hop``: the MCP hop the finding is on, if any (``proxy.mcp.checks``); ``endpoint``:
        the surface the request came in on (``chat``, ``messages``...)."""
        if not self.enabled:
            return
        entry: dict[str, Any] = {
            "time": time.time(),
            "request_id": context.request_id,
            "tenant": context.tenant,
            "policy": context.policy,
            "policy_hash": context.policy_hash,
            "stage": stage.value,
            "endpoint": endpoint,
            "shield": finding.shield_id,
            "type": finding.shield_type,
            "label": finding.label,
            "action": finding.action.value,
            "mode": "monitor" if monitor else "enforce",
            "start": finding.start,
            "end": finding.end,
        }
        if hop is not None:
            entry["hop"] = hop
        entry["match" if self._include_text else "match_hash"] = finding.digest
        self._logger.info(json.dumps(entry))

    def record_tool_change(
        self, context: AuditContext, details: dict[str, Any], *, endpoint: str
    ) -> None:
        """An MCP tool whose fingerprint changed (``proxy.mcp.pinning``): ``details`` names
        the server, the tool, the fields that changed and the old and new digests — never
        the descriptions themselves, nor a header."""
        if not self.enabled:
            return
        entry: dict[str, Any] = {
            "time": time.time(),
            "event": "mcp_tool_change",
            "request_id": context.request_id,
            "tenant": context.tenant,
            "policy": context.policy,
            "policy_hash": context.policy_hash,
            "endpoint": endpoint,
            "hop": "mcp_tools",
            **details,
        }
        self._logger.info(json.dumps(entry))

    def close(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
            for handler in self._logger.handlers:
                handler.close()
            self._logger.handlers.clear()
