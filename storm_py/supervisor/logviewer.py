"""This module owns the supervisor's log viewer: its workers' log files served over HTTP (Storm's logviewer).

Every supervisor keeps its workers' files under ``<storm.log.dir>/workers-artifacts/<topology-id>/<port>/``;
the log viewer serves them read-only, so ``storm-py logs`` and the UI's worker links reach the logs of any host:

* ``GET /api/v1/logs/{topology_id}`` -> ``{"topology": id, "files": [{"file": "<id>/<port>/<name>", "size": n}]}``
* ``GET /api/v1/log?file=<id>/<port>/<name>&start=N&length=M`` -> ``{"file", "start", "next", "size", "data"}``:
  at most ``length`` bytes from offset ``start`` (``next`` is where the following read starts; ``data`` is text).
* ``GET /log?file=<id>/<port>/<name>[&start=N&length=M]`` -> the same bytes as plain text, for people (the UI's
  worker links): without ``start``, the file's last ``length`` bytes (at most 1 MiB).

* ``GET /api/v1/search?file=<id>/<port>/<name>&search-string=S[&num-matches=N&start-byte-offset=B&is-daemon=yes]``
  -> Storm's search reply ``{"searchString", "startByteOffset", "matches": [{"byteOffset", "beforeString",
  "matchString", "afterString", "logviewerURL"}], "nextByteOffset"?}`` (``is-daemon=yes``: ``file`` names a daemon log).
* ``GET /api/v1/deepSearch/{topology_id}?search-string=S[&num-matches=N&port=P|*&start-byte-offset=B]`` -> the
  matches in the ``worker.log`` of each of the topology's workers on this host: ``{"matches": [{"fileName",
  "port", "host", "matches": [...]}]}``.
* ``GET /api/v1/download?file=...`` and ``GET /api/v1/daemondownload?file=<name>.log`` -> a whole file as an attachment.
* ``POST /api/v1/profiling/{action}/{topology_id}/{port}`` and ``GET /api/v1/profiling/dumps/{topology_id}/{port}``:
  profiling a worker and the results it left (:mod:`storm_py.supervisor.profiler`); a result
  (``profile-<action>-<epoch ms>.<txt|svg|json>``) is read and downloaded as a worker file.
* ``GET /api/v1/daemonlog?file=<name>.log&start=N&length=M`` -> a page of a daemon's log (``<storm.log.dir>/*.log``),
  as ``/api/v1/log``; ``GET /api/v1/daemonlogs`` lists them.

A search reply carries at most ``logviewer.max.search.reply.bytes`` of matches, all files together: the file
where it ran out says ``nextByteOffset``, and a deep search that left ports unsearched says ``"truncated": true``.

Every route needs a token (``Authorization: Bearer``): the cluster's, or, with a
:class:`~storm_py.supervisor.log_access.LogViewerGate`, a user's, who reads the logs of the topologies nimbus lets it
read (401 without a known token, 403 outside its rights; see that module).
Only files inside the workers-artifacts directory are served: a path that leaves it, a name that is not one
of a worker's files, or a path with a symbolic link anywhere in it (checked on the real path, and the file
opened without following links) is refused with an error naming it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.node.http_api import BadRequestError, Gate, JsonApiServer, NotFoundError, Reply, Request, Route
from storm_py.node.http_guard import allowed_hosts
from storm_py.node.tls import server_context
from storm_py.node.token_file import ensure_token
from storm_py.supervisor.logsearch import MAX_MATCHES, MAX_SEARCH_BYTES, ReplyBudget, search_file
from storm_py.supervisor.profiler import Profiler, profiling_routes
from storm_py.worker.profiling import is_dump

log = logging.getLogger(__name__)

#: The files a worker leaves in its directory, in the order ``logs`` shows them.
WORKER_FILES = ("worker.log", "worker.log.out", "worker.log.err", "events.log")
#: Largest read one request returns.
MAX_READ_BYTES = 1 << 20
#: Largest file one download returns (bigger ones are read in pages).
MAX_DOWNLOAD_BYTES = 64 << 20


class LogFiles:
    """Read access to one supervisor's ``workers-artifacts`` directory (no HTTP: plain calls)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def files(self, topology_id: str) -> list[dict[str, Any]]:
        """``[{"file": "<id>/<port>/<name>", "size": n}]``: a topology's worker files here, by port then file."""
        self._check_part(topology_id, "topology id")
        base = self.root / topology_id
        out: list[dict[str, Any]] = []
        if not base.is_dir():
            return out
        if not self._real(base):
            return out
        for port_dir in sorted((d for d in base.iterdir() if d.is_dir() and not d.is_symlink()), key=lambda d: d.name):
            for name in WORKER_FILES:
                path = port_dir / name
                if path.is_file() and not path.is_symlink():
                    out.append({"file": f"{topology_id}/{port_dir.name}/{name}", "size": path.stat().st_size})
        return out

    def read(self, rel: str, start: int = 0, length: int = MAX_READ_BYTES) -> dict[str, Any]:
        """Up to ``length`` bytes of ``rel`` (``<topology-id>/<port>/<file>``) from ``start``, as
        ``{"file", "start", "next", "size", "data"}`` (``next``: where the following read starts)."""
        if start < 0 or length < 0:
            raise BadRequestError(f"start and length must not be negative (got {start}, {length})", file=rel)
        return read_range(self.path_of(rel), rel, start, length)

    def path_of(self, rel: str) -> Path:
        """The path of worker file ``rel`` (``<topology-id>/<port>/<file>``), refused unless it is one."""
        parts = rel.split("/")
        if len(parts) != 3 or (parts[2] not in WORKER_FILES and not is_dump(parts[2])):
            raise BadRequestError(
                f"log file {rel!r} is not <topology-id>/<port>/<file> with file one of {', '.join(WORKER_FILES)} "
                "or a profiling result (profile-<action>-<epoch ms>.<txt|svg|json>)",
                file=rel,
            )
        for part in parts[:2]:
            self._check_part(part, "log file part")
        path = self.root.joinpath(*parts)
        if path.exists() and not self._real(path):
            raise BadRequestError(f"log file {rel!r} is a link or lies outside workers-artifacts", file=rel)
        return path

    def ports(self, topology_id: str) -> list[str]:
        """The ports of this host that ran workers of ``topology_id``."""
        return sorted({f["file"].split("/")[1] for f in self.files(topology_id)}, key=lambda p: (len(p), p))

    def _real(self, path: Path) -> bool:
        """Whether ``path`` is what it says: no link in it, and its real path inside the root."""
        return _is_real(path, self.root)

    @staticmethod
    def _check_part(part: str, what: str) -> None:
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise BadRequestError(f"bad {what} {part!r}", part=part)


class DaemonLogFiles:
    """Read access to the daemons' own logs: the ``*.log`` files directly in ``storm.log.dir``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def names(self) -> list[str]:
        """The daemon log files here, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.name.endswith(".log") and p.is_file()
                      and not p.is_symlink())

    def path_of(self, name: str) -> Path:
        """The path of daemon log ``name``, refused unless it is one."""
        if not name.endswith(".log") or "/" in name or "\\" in name or "\0" in name or name.startswith("."):
            raise BadRequestError(f"daemon log {name!r} is not a <name>.log file of the log directory", file=name)
        path = self.root / name
        if path.exists() and not _is_real(path, self.root):
            raise BadRequestError(f"daemon log {name!r} is a link", file=name)
        return path


def _is_real(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == path and real.is_relative_to(root)


def read_range(path: Path, rel: str, start: int, length: int) -> dict[str, Any]:
    """Up to ``length`` bytes of ``path`` from ``start`` as ``{"file", "start", "next", "size", "data"}``."""
    if start < 0 or length < 0:
        raise BadRequestError(f"start and length must not be negative (got {start}, {length})", file=rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            size = f.seek(0, 2)
            begin = f.seek(min(start, size))
            data = f.read(min(length, MAX_READ_BYTES))
    except FileNotFoundError:
        raise NotFoundError(f"no log file {rel!r} on this host", file=rel) from None
    except OSError as err:
        raise NotFoundError(f"cannot read log file {rel!r}: {err.strerror}", file=rel) from err
    return {"file": rel, "start": begin, "next": begin + len(data), "size": size,
            "data": data.decode("utf-8", "replace")}


def _int_param(req: Request, name: str, default: int) -> int:
    raw = req.query.get(name, [str(default)])[0]
    try:
        return int(raw)
    except ValueError:
        raise BadRequestError(f"parameter {name!r} must be an integer, got {raw!r}", parameter=name) from None


def _required(req: Request, name: str) -> str:
    value = req.query.get(name, [""])[0]
    if not value:
        raise BadRequestError(f"parameter {name!r} is missing", parameter=name)
    return value


def _needle(req: Request) -> bytes:
    needle = _required(req, "search-string").encode("utf-8")
    if len(needle) > MAX_SEARCH_BYTES:
        raise BadRequestError(f"parameter 'search-string' is over {MAX_SEARCH_BYTES} bytes", parameter="search-string")
    return needle


def _bounded(req: Request, name: str, default: int, low: int, high: int) -> int:
    value = _int_param(req, name, default)
    if not low <= value <= high:
        raise BadRequestError(f"parameter {name!r} must be between {low} and {high}, got {value}", parameter=name)
    return value


def _attachment(path: Path, rel: str) -> Reply:
    chunk_size = read_range(path, rel, 0, 0)["size"]
    if chunk_size > MAX_DOWNLOAD_BYTES:
        raise BadRequestError(f"{rel!r} is {chunk_size} bytes, over the {MAX_DOWNLOAD_BYTES} a download may be "
                              "(read it in pages with start and length)", file=rel)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    name = rel.replace("/", "-")
    return Reply(200, data, "application/octet-stream",
                 {"Content-Disposition": f'attachment; filename="{name}"', "X-Content-Type-Options": "nosniff"})


def search_routes(files: LogFiles, daemons: DaemonLogFiles, host: str, reply_bytes: int) -> list[Route]:
    """Storm's ``search``, ``deepSearch``, downloads and daemon-log routes over ``files`` and ``daemons``; a search
    reply carries at most ``reply_bytes`` of matches."""

    def search(req: Request) -> Any:
        rel = _required(req, "file")
        daemon = req.query.get("is-daemon", ["no"])[0] == "yes"
        path = daemons.path_of(rel) if daemon else files.path_of(rel)
        start = _bounded(req, "start-byte-offset", 0, 0, 1 << 62)
        found, following = _search(path, rel, _needle(req), start, _bounded(req, "num-matches", 10, 1, MAX_MATCHES),
                                   ReplyBudget(reply_bytes))
        reply: dict[str, Any] = {"isDaemon": "yes" if daemon else "no", "searchString": _required(req, "search-string"),
                                 "startByteOffset": start, "matches": found}
        if following is not None:
            reply["nextByteOffset"] = following
        return reply

    def deep_search(req: Request) -> Any:
        tid = req.params["topology_id"]
        needle = _needle(req)
        limit = _bounded(req, "num-matches", 1, 1, MAX_MATCHES)
        start = _bounded(req, "start-byte-offset", 0, 0, 1 << 62)
        port = req.query.get("port", ["*"])[0]
        ports = files.ports(tid)
        if port != "*":
            if not port.isdigit():
                raise BadRequestError(f"parameter 'port' must be a port or '*', got {port!r}", parameter="port")
            ports = [p for p in ports if p == port]
        out = []
        budget = ReplyBudget(reply_bytes)
        searched = 0
        for p in ports:
            if budget.exhausted():
                break
            rel = f"{tid}/{p}/worker.log"
            found, following = _search(files.path_of(rel), rel, needle, start, limit, budget)
            if budget.exhausted() and not found:
                break  # its first match did not fit: this port is left for the next request
            searched += 1
            if found:
                out.append({"fileName": rel, "port": int(p), "host": host, "matches": found,
                            **({"nextByteOffset": following} if following is not None else {})})
        reply: dict[str, Any] = {"topologyId": tid, "searchString": needle.decode("utf-8"), "matches": out}
        if searched < len(ports):
            reply["truncated"] = True
        return reply

    def daemon_log(req: Request) -> Any:
        name = _required(req, "file")
        return read_range(daemons.path_of(name), name, _int_param(req, "start", 0),
                          _int_param(req, "length", MAX_READ_BYTES))

    return [
        Route("GET", "/api/v1/search", search, protected=True),
        Route("GET", "/api/v1/deepSearch/{topology_id}", deep_search, protected=True),
        Route("GET", "/api/v1/download", lambda req: _attachment(files.path_of(_required(req, "file")),
                                                                 _required(req, "file")), protected=True),
        Route("GET", "/api/v1/daemondownload", lambda req: _attachment(daemons.path_of(_required(req, "file")),
                                                                       _required(req, "file")), protected=True),
        Route("GET", "/api/v1/daemonlog", daemon_log, protected=True),
        Route("GET", "/api/v1/daemonlogs", lambda req: {"files": daemons.names()}, protected=True),
    ]


def _search(
    path: Path, rel: str, needle: bytes, start: int, limit: int, budget: ReplyBudget,
) -> tuple[list[dict[str, Any]], int | None]:
    def link(offset: int) -> str:
        return f"/log?file={quote(rel, safe='/')}&start={offset}"

    try:
        return search_file(path, needle, start, limit, budget, link)
    except FileNotFoundError:
        raise NotFoundError(f"no log file {rel!r} on this host", file=rel) from None
    except OSError as err:
        raise NotFoundError(f"cannot read log file {rel!r}: {err.strerror}", file=rel) from err


def logviewer_routes(files: LogFiles) -> list[Route]:
    """The log viewer's routes over ``files`` (the ``/api/v1`` ones need the token when the server has one)."""

    def list_logs(req: Request) -> Any:
        return {"topology": req.params["topology_id"], "files": files.files(req.params["topology_id"])}

    def read_log(req: Request) -> Any:
        rel = req.query.get("file", [""])[0]
        if not rel:
            raise BadRequestError("parameter 'file' is missing", parameter="file")
        return files.read(rel, _int_param(req, "start", 0), _int_param(req, "length", MAX_READ_BYTES))

    def show_log(req: Request) -> Reply:
        rel = req.query.get("file", [""])[0]
        if not rel:
            raise BadRequestError("parameter 'file' is missing", parameter="file")
        length = _int_param(req, "length", MAX_READ_BYTES)
        if "start" in req.query:
            chunk = files.read(rel, _int_param(req, "start", 0), length)
        else:  # the tail, as a person opening a log wants it
            size = files.read(rel, 0, 0)["size"]
            chunk = files.read(rel, max(0, size - min(length, MAX_READ_BYTES)), length)
        # plain text that no browser may take for HTML (a log line is whatever a component wrote)
        return Reply(200, chunk["data"].encode("utf-8"), "text/plain; charset=utf-8",
                     {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"})

    return [
        Route("GET", "/api/v1/logs/{topology_id}", list_logs, protected=True),
        Route("GET", "/api/v1/log", read_log, protected=True),
        Route("GET", "/log", show_log),
    ]


class LogViewer:
    """The HTTP server of one supervisor's log viewer on ``logviewer.host`` (default: the supervisor's host) and
    ``logviewer.port`` (0 picks a free port); ``gate``: the cluster's users (their tokens are accepted, within
    their rights)."""

    def __init__(
        self, conf: Mapping[str, Any], root: Path, host: str, profiler: Profiler | None = None,
        gate: Gate | None = None,
    ) -> None:
        port = int(setting(conf, "logviewer.port"))
        bind = str(conf.get("logviewer.host") or host)
        files = LogFiles(root)
        reply_bytes = int(setting(conf, "logviewer.max.search.reply.bytes"))
        routes = logviewer_routes(files) + search_routes(files, DaemonLogFiles(root.parent), host, reply_bytes)
        if profiler is not None:
            routes += profiling_routes(profiler)
        try:
            self.server = JsonApiServer(
                bind, port, routes, token=ensure_token(conf, None)[0], name="logviewer",
                hosts=allowed_hosts(conf, bind, host), tls=server_context(conf), gate=gate,
            )
        except OSError as err:
            raise StormPyError(
                f"the log viewer cannot listen on {bind}:{port} (logviewer.port): {err.strerror}", port=port
            ) from err

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self.server.port

    def start(self) -> None:
        """Serve from a background thread."""
        self.server.start()
        log.info("log viewer on port %d", self.port)

    def stop(self) -> None:
        """Stop serving."""
        self.server.stop()
