"""This module owns nimbus's worker-log route: a page of one worker's log, read from its supervisor's log viewer.

A browser cannot send the cluster's token with a navigation to a log viewer on another origin, so the UI's worker
links open ``log.html`` on nimbus, which reads the log through this route with the token in its header:

* ``GET /api/v1/topology/{id}/workerlog?host=H&port=P[&file=F&start=N&length=M]`` (or ``supervisor=SID`` in
  place of ``host``) -> ``{"topologyId", "supervisorId", "host", "port", "file", "start", "next", "size",
  "data"}``: at most ``length`` bytes (default 64 KiB, at most 1 MiB) of the worker's ``F`` (``worker.log``
  unless named) from ``start``; without ``start``, the file's last ``length`` bytes.

Nimbus contacts no address taken from the request: the host (or supervisor id) and port must be a slot of the
topology's current assignment, and the log viewer is the one that supervisor registered in the cluster state.
An unknown topology or worker is 404, a malformed parameter 400, an unreachable log viewer 502.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from storm_py.client import LogViewerClient, LogViewerError
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase
from storm_py.node import tls
from storm_py.node.http_api import BadRequestError, NotFoundError, Request, Route

API = "/api/v1"
#: The files of a worker's directory that may be read (the log viewer serves these and no others).
WORKER_FILES = ("worker.log", "worker.log.out", "worker.log.err", "events.log")
#: Bytes of a page unless ``length`` says otherwise, and the most one page may hold.
DEFAULT_PAGE_BYTES = 64 * 1024
MAX_PAGE_BYTES = 1 << 20
#: Seconds nimbus waits for a log viewer.
LOGVIEWER_TIMEOUT_SECS = 10.0
_NAME = re.compile(r"[A-Za-z0-9._:\-\[\]]{1,253}")


class WorkerLogNode(Protocol):
    """What the worker-log route needs of the nimbus daemon."""

    conf: dict[str, Any]
    state: ClusterState


def _one(req: Request, name: str) -> str | None:
    values = req.query.get(name)
    if values is None:
        return None
    if len(values) != 1:
        raise BadRequestError(f"parameter {name!r} is given {len(values)} times", parameter=name)
    return values[0]


def _name(req: Request, name: str) -> str | None:
    value = _one(req, name)
    if value is not None and not _NAME.fullmatch(value):
        raise BadRequestError(f"parameter {name!r} is not a host name or id: {value[:80]!r}", parameter=name)
    return value


def _int(req: Request, name: str, low: int, high: int) -> int | None:
    raw = _one(req, name)
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 10 or not low <= int(raw) <= high:
        raise BadRequestError(f"parameter {name!r} must be an integer from {low} to {high}, got {raw[:40]!r}",
                              parameter=name)
    return int(raw)


def worker_log_routes(node: WorkerLogNode, base_of: Callable[[str], tuple[str, StormBase]]) -> list[Route]:
    """The worker-log route of ``node``; ``base_of`` finds a live topology by id (404 otherwise)."""

    def worker_log(req: Request) -> Any:
        tid, _ = base_of(req.params["id"])
        host, supervisor = _name(req, "host"), _name(req, "supervisor")
        if (host is None) == (supervisor is None):
            raise BadRequestError("name the worker's host or its supervisor (one of the two)", parameter="host")
        port = _int(req, "port", 1, 65535)
        if port is None:
            raise BadRequestError("parameter 'port' is missing", parameter="port")
        file = _one(req, "file") or "worker.log"
        if file not in WORKER_FILES:
            raise BadRequestError(f"file must be one of {', '.join(WORKER_FILES)}, got {file[:80]!r}", parameter="file")
        start = _int(req, "start", 0, 2**53)
        length = _int(req, "length", 1, MAX_PAGE_BYTES) or DEFAULT_PAGE_BYTES

        assignment = node.state.assignment(tid)
        hosts = assignment.node_host if assignment is not None else {}
        slots = sorted(assignment.slots()) if assignment is not None else []
        found = [n for n, p in slots if p == port and (n == supervisor if supervisor else hosts.get(n, n) == host)]
        where = f"{supervisor or host}:{port}"
        if not found:
            raise NotFoundError(f"topology {tid} has no worker at {where}", topology=tid, worker=where)
        sid = found[0]
        info = node.state.supervisors().get(sid)
        if info is None or not info.logviewer_port:
            raise NotFoundError(f"supervisor {sid} of worker {where} serves no log viewer", supervisor=sid)
        viewer = LogViewerClient(f"{tls.scheme(node.conf)}://{info.hostname}:{info.logviewer_port}",
                                 LOGVIEWER_TIMEOUT_SECS, node.conf)
        rel = f"{tid}/{port}/{file}"
        try:
            if start is None:  # the tail, as a person opening a log wants it
                start = max(0, int(viewer.read(rel, 0, 0)["size"]) - length)
            page = viewer.read(rel, start, length)
        except LogViewerError as err:
            if getattr(err.__cause__, "code", None) == 404:
                raise NotFoundError(f"worker {where} of topology {tid} has no {file} yet", file=file) from None
            raise
        return {"topologyId": tid, "supervisorId": sid, "host": hosts.get(sid, sid), "port": port, "file": file,
                **{k: page[k] for k in ("start", "next", "size", "data")}}

    return [Route("GET", API + "/topology/{id}/workerlog", worker_log)]
