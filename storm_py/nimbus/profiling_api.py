"""This module owns nimbus's profiling routes (Storm UI's): a worker's stacks, CPU profile or memory snapshot taken
by its supervisor, and the list of results.

* ``POST /api/v1/topology/{id}/profiling/dumpjstack/{host-port}`` -> a stack dump of every thread of that worker;
* ``POST /api/v1/topology/{id}/profiling/start/{host-port}/{timeout}[?seconds=N]`` -> a CPU profile for
  ``timeout`` minutes (1 to 60), or ``N`` seconds (1 to 3600) when ``seconds`` is given;
* ``POST /api/v1/topology/{id}/profiling/dumpheap/{host-port}`` -> a memory snapshot;
* ``GET /api/v1/topology/{id}/profiling/dumps/{host-port}`` -> ``{"topologyId", "hostPort", "dumps": [{"file",
  "name", "action", "time", "size", "url", "relay"}]}``, newest first;
* ``GET /api/v1/topology/{id}/profiling/download/{host-port}/{name}`` -> the result file ``name`` itself, read by
  nimbus from the worker's log viewer with the cluster's token (``relay`` above: this route's path), so a browser,
  which holds its token for nimbus's origin only, downloads it with that token in a header.

An action answers at once with ``{"status": "ok", "id": host-port, "topologyId", "action", "tool", "seconds",
"file", "dumplink"}``; the result appears in the list when it is written (a CPU profile after its time) and is
downloaded through the log viewer (``dumplink``: its download URL, which needs the token).  ``host-port`` is
``host:port`` (or ``supervisor-id:port``) of a worker of the topology's current assignment: nimbus contacts no
address taken from the request, only the log viewer that supervisor registered.  A malformed ``host-port`` or
``timeout`` is 400 naming it, an unknown worker 404, an unreachable log viewer 502.  The actions need the token
and the right to change the topology, as every topology action does; the list and the relay the right to read it.
The relay takes only a result's own name (``profile-<action>-<epoch ms>.<ext>``:
nothing else of the worker's directory, no path), reads at most :data:`MAX_RELAY_BYTES`, and answers it as an
attachment no browser runs scripts of (:func:`relay_reply`).
"""

from __future__ import annotations

import re
import urllib.error
from collections.abc import Callable
from typing import Any, Final, Protocol
from urllib.parse import quote

from storm_py.client import LogViewerClient, LogViewerError
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase
from storm_py.node import tls
from storm_py.node.http_api import BadRequestError, NotFoundError, Reply, Request, Route
from storm_py.worker.profiling import MAX_SECS, dump_info

API: Final = "/api/v1"
#: Seconds nimbus waits for a log viewer.
LOGVIEWER_TIMEOUT_SECS: Final = 10.0
#: Longest CPU profile in minutes (Storm's ``timeout``).
MAX_MINUTES: Final = MAX_SECS // 60
#: Largest result the relay reads from a log viewer (a bigger one: ``storm-py profile --download``).
MAX_RELAY_BYTES: Final = 32 << 20
#: The media type of each kind of result the relay answers.
RESULT_TYPES: Final = {"svg": "image/svg+xml", "json": "application/json", "txt": "text/plain; charset=utf-8"}
_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._\-]")
_HOST_PORT = re.compile(r"([A-Za-z0-9._\-\[\]]{1,253}):(\d{1,5})")


class ProfilingNode(Protocol):
    """What the profiling routes need of the nimbus daemon."""

    conf: dict[str, Any]
    state: ClusterState


def host_port(raw: str) -> tuple[str, int]:
    """``(host, port)`` of a ``host-port`` path parameter; 400 naming it when malformed."""
    found = _HOST_PORT.fullmatch(raw)
    if found is None or not 1 <= int(found.group(2)) <= 65535:
        raise BadRequestError(f"host-port must be host:port with a port from 1 to 65535, got {raw[:80]!r}",
                              parameter="host-port")
    return found.group(1), int(found.group(2))


def cpu_seconds(timeout: str, query: dict[str, list[str]]) -> int:
    """A CPU profile's length: ``?seconds=N`` when given, else ``timeout`` minutes; 400 naming the bad one."""
    given = query.get("seconds")
    if given is not None:
        raw = given[0]
        if len(given) != 1 or not raw.isdigit() or len(raw) > 6 or not 1 <= int(raw) <= MAX_SECS:
            raise BadRequestError(f"seconds must be an integer from 1 to {MAX_SECS}, got {raw[:40]!r}",
                                  parameter="seconds")
        return int(raw)
    if not timeout.isdigit() or len(timeout) > 4 or not 1 <= int(timeout) <= MAX_MINUTES:
        raise BadRequestError(f"timeout must be whole minutes from 1 to {MAX_MINUTES}, got {timeout[:40]!r}",
                              parameter="timeout")
    return int(timeout) * 60


def viewer_status(err: LogViewerError) -> int | None:
    """The HTTP status a log viewer refused a request with; None when it was not reached."""
    cause = err.__cause__
    return cause.code if isinstance(cause, urllib.error.HTTPError) else None


def result_name(raw: str) -> str:
    """A result's file name from a request (``profile-<action>-<epoch ms>.<txt|svg|json>``); 400 naming it for
    anything else (another file of the worker, a path, ``..``)."""
    if dump_info(raw) is None:
        raise BadRequestError(f"name must be a profiling result's file name (profile-<action>-<epoch ms>.<txt|svg|"
                              f"json>), got {raw[:80]!r}", parameter="name")
    return raw


def relay_reply(topology_id: str, port: int, name: str, data: bytes) -> Reply:
    """The relay's reply of result ``name`` (already checked by :func:`result_name`): its media type, as an
    attachment, and under a policy that lets no script in it run (a worker writes into the directory its results
    come from, so a result is as hostile as any input)."""
    media = RESULT_TYPES[name.rsplit(".", 1)[1]]
    saved = _UNSAFE_IN_NAME.sub("_", f"{topology_id}-{port}-{name}")  # a topology's name may hold quotes, newlines
    headers = {"Content-Disposition": f'attachment; filename="{saved}"',
               "Content-Security-Policy": "sandbox; default-src 'none'; style-src 'unsafe-inline'",
               "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    return Reply(200, data, media, headers)


def profiling_routes(node: ProfilingNode, base_of: Callable[[str], tuple[str, StormBase]]) -> list[Route]:
    """The profiling routes of ``node``; ``base_of`` finds a live topology by id (404 otherwise)."""

    def worker(req: Request) -> tuple[str, str, str, int, LogViewerClient]:
        """``(topology id, host-port, supervisor id, port, log viewer)`` of the request's worker."""
        tid, _ = base_of(req.params["id"])
        raw = req.params["hostport"]
        host, port = host_port(raw)
        assignment = node.state.assignment(tid)
        hosts = assignment.node_host if assignment is not None else {}
        slots = sorted(assignment.slots()) if assignment is not None else []
        found = [n for n, p in slots if p == port and host in (n, hosts.get(n, n))]
        if not found:
            raise NotFoundError(f"topology {tid} has no worker at host-port {raw!r}", topology=tid, worker=raw)
        sid = found[0]
        info = node.state.supervisors().get(sid)
        if info is None or not info.logviewer_port:
            raise NotFoundError(f"supervisor {sid} of worker {raw} serves no log viewer", supervisor=sid)
        url = f"{tls.scheme(node.conf)}://{info.hostname}:{info.logviewer_port}"
        return tid, f"{hosts.get(sid, sid)}:{port}", sid, port, LogViewerClient(url, LOGVIEWER_TIMEOUT_SECS, node.conf)

    def run(req: Request, action: str, seconds: int) -> dict[str, Any]:
        tid, where, _, port, viewer = worker(req)
        try:
            started = viewer.profile(tid, port, action, seconds)
        except LogViewerError as err:
            if viewer_status(err) == 404:
                raise NotFoundError(f"worker {where} of topology {tid} is not running", worker=where) from None
            raise
        link = f"{viewer.base_url}{API}/download?file={quote(str(started.get('file', '')), safe='/')}"
        return {"status": "ok", "id": where, "topologyId": tid, "action": started.get("action"),
                "tool": started.get("tool"), "seconds": started.get("seconds"), "file": started.get("file"),
                "dumplink": link}

    def dumpjstack(req: Request) -> Any:
        return run(req, "stack", 1)

    def start(req: Request) -> Any:
        seconds = cpu_seconds(req.params["timeout"], req.query)
        return {**run(req, "cpu", seconds), "timeout": req.params["timeout"]}

    def dumpheap(req: Request) -> Any:
        return run(req, "memory", 1)

    def dumps(req: Request) -> Any:
        tid, where, _, port, viewer = worker(req)
        rows = viewer.profiling_dumps(tid, port)
        relay = f"{API}/topology/{quote(tid, safe='')}/profiling/download/{quote(where, safe=':')}/"
        for row in rows:
            row["url"] = f"{viewer.base_url}{API}/download?file={quote(str(row.get('file', '')), safe='/')}"
            row["relay"] = relay + quote(str(row.get("name", "")), safe="")
        return {"topologyId": tid, "hostPort": where, "dumps": rows}

    def download(req: Request) -> Any:
        name = result_name(req.params["name"])
        tid, where, _, port, viewer = worker(req)
        try:
            data = viewer.download(f"{tid}/{port}/{name}", MAX_RELAY_BYTES)
        except LogViewerError as err:
            if viewer_status(err) == 404:
                raise NotFoundError(f"worker {where} of topology {tid} has no result {name}", worker=where,
                                    name=name) from None
            raise
        return relay_reply(tid, port, name, data)

    prefix = API + "/topology/{id}/profiling"
    return [
        Route("POST", prefix + "/dumpjstack/{hostport}", dumpjstack, protected=True),
        Route("POST", prefix + "/start/{hostport}/{timeout}", start, protected=True),
        Route("POST", prefix + "/dumpheap/{hostport}", dumpheap, protected=True),
        Route("GET", prefix + "/dumps/{hostport}", dumps),
        Route("GET", prefix + "/download/{hostport}/{name}", download),
    ]
