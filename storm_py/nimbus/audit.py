"""This module owns the audit log (nimbus's and the log viewers'): one JSON line per request that changes something
or is refused.

Each line of ``<storm.log.dir>/audit.log`` is an object ``{"time", "user", "action", "target", "method", "path",
"status", "result"}``: ``time`` wall-clock epoch seconds, ``user`` the caller (``"-"`` when no token named one),
``result`` ``"ok"``, ``"unauthorized"`` (401), ``"forbidden"`` (403), ``"refused"`` (another refusal, e.g. 429)
or ``"failed"``.  A token never appears: only the path (no query string) is written.  JSON escapes whatever a
hostile path holds, so one request is always one line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from storm_py.nimbus.users import Target, classify

#: The audit log's file name under ``storm.log.dir``.
AUDIT_FILE = "audit.log"


def result_of(status: int) -> str:
    """The audit result of a reply's status."""
    if 200 <= status < 400:
        return "ok"
    return {401: "unauthorized", 403: "forbidden"}.get(status, "refused" if status == 429 else "failed")


def audited(method: str, status: int) -> bool:
    """Whether a request is audited: it may change something (not a read), or it was refused."""
    return method not in ("GET", "HEAD") or status in (401, 403, 429)


def audit_line(now: float, user: str | None, method: str, path: str, status: int, target: Target | None = None) -> str:
    """The audit line of one request (no newline); ``target``: what it asked for (default: as nimbus classifies
    ``method path``).  The query string is never written."""
    path = urlsplit(path).path
    target = target if target is not None else classify(method, path)
    entry: dict[str, Any] = {
        "time": round(now, 3), "user": user or "-", "action": target.action, "target": target.topology or "",
        "method": method, "path": path, "status": status, "result": result_of(status),
    }
    return json.dumps(entry, ensure_ascii=True, sort_keys=False)


class AuditLog:
    """Appends audit lines to ``<log_dir>/audit.log`` (created mode 0600)."""

    def __init__(self, log_dir: str | Path) -> None:
        self.path = Path(log_dir) / AUDIT_FILE
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        """Append one line."""
        data = (line.replace("\n", " ") + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
