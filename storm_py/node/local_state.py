"""This module owns the files every daemon keeps on local disk: atomic JSON records and where each one lives.

Layout under ``storm.local.dir``::

    nimbus/blobs/<key>                          nimbus's blob store
    supervisor/id                               this supervisor's id (kept across restarts)
    supervisor/worker-conf.yaml                 the configuration its workers start with
    supervisor/stormdist/<topology-id>/         downloaded package, code description, unpacked code/
    workers/<worker-id>/heartbeat               a worker's local heartbeat, read by its supervisor

and under ``storm.log.dir``: ``workers-artifacts/<topology-id>/<port>/`` with ``worker.log``,
``worker.log.out``, ``worker.log.err``, ``worker.yaml`` and ``exit-codes``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storm_py.config.keys import setting
from storm_py.errors import StormPyError


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` atomically (write a temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, sort_keys=True)
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise StormPyError(f"cannot write {path}: {err}", path=str(path)) from err


def read_json(path: Path) -> Any | None:
    """The JSON value in ``path``, or None when it is missing or unreadable (a half-written file never is)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def local_dir(conf: Mapping[str, Any]) -> Path:
    """``storm.local.dir`` as an absolute path."""
    return Path(str(setting(conf, "storm.local.dir"))).expanduser().resolve()


def log_dir(conf: Mapping[str, Any]) -> Path:
    """``storm.log.dir`` as an absolute path."""
    return Path(str(setting(conf, "storm.log.dir"))).expanduser().resolve()


def nimbus_blob_dir(conf: Mapping[str, Any]) -> Path:
    """Where nimbus keeps its blobs."""
    return local_dir(conf) / "nimbus" / "blobs"


def supervisor_dir(conf: Mapping[str, Any]) -> Path:
    """The supervisor's own directory."""
    return local_dir(conf) / "supervisor"


def stormdist_dir(conf: Mapping[str, Any], topology_id: str) -> Path:
    """Where the supervisor keeps a topology's code."""
    return supervisor_dir(conf) / "stormdist" / topology_id


def worker_heartbeat_path(conf: Mapping[str, Any], worker_id: str) -> Path:
    """A worker's local heartbeat file."""
    return local_dir(conf) / "workers" / worker_id / "heartbeat"


def workers_artifacts_root(conf: Mapping[str, Any]) -> Path:
    """``<storm.log.dir>/workers-artifacts``: where every worker of this host keeps its files."""
    return log_dir(conf) / "workers-artifacts"


def worker_artifacts_dir(conf: Mapping[str, Any], topology_id: str, port: int) -> Path:
    """``logs/workers-artifacts/<topology-id>/<port>/``."""
    return workers_artifacts_root(conf) / topology_id / str(port)
