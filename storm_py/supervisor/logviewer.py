"""This module owns the supervisor's log viewer: its workers' log files served over HTTP (Storm's logviewer).

Every supervisor keeps its workers' files under ``<storm.log.dir>/workers-artifacts/<topology-id>/<port>/``;
the log viewer serves them read-only, so ``storm-py logs`` and the UI's worker links reach the logs of any host:

* ``GET /api/v1/logs/{topology_id}`` -> ``{"topology": id, "files": [{"file": "<id>/<port>/<name>", "size": n}]}``
* ``GET /api/v1/log?file=<id>/<port>/<name>&start=N&length=M`` -> ``{"file", "start", "next", "size", "data"}``:
  at most ``length`` bytes from offset ``start`` (``next`` is where the following read starts; ``data`` is text).
* ``GET /log?file=<id>/<port>/<name>[&start=N&length=M]`` -> the same bytes as plain text, for people (the UI's
  worker links): without ``start``, the file's last ``length`` bytes (at most 1 MiB).

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

from storm_py.errors import StormPyError
from storm_py.node.http_api import BadRequestError, JsonApiServer, NotFoundError, Reply, Request, Route

log = logging.getLogger(__name__)

#: The files a worker leaves in its directory, in the order ``logs`` shows them.
WORKER_FILES = ("worker.log", "worker.log.out", "worker.log.err", "events.log")
#: Largest read one request returns.
MAX_READ_BYTES = 1 << 20


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
        parts = rel.split("/")
        if len(parts) != 3 or parts[2] not in WORKER_FILES:
            raise BadRequestError(
                f"log file {rel!r} is not <topology-id>/<port>/<file> with file one of {', '.join(WORKER_FILES)}",
                file=rel,
            )
        for part in parts[:2]:
            self._check_part(part, "log file part")
        if start < 0 or length < 0:
            raise BadRequestError(f"start and length must not be negative (got {start}, {length})", file=rel)
        path = self.root.joinpath(*parts)
        if path.exists() and not self._real(path):
            raise BadRequestError(f"log file {rel!r} is a link or lies outside workers-artifacts", file=rel)
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

    def _real(self, path: Path) -> bool:
        """Whether ``path`` is what it says: no link in it, and its real path inside the root."""
        real = Path(os.path.realpath(path))
        return real == path and real.is_relative_to(self.root)

    @staticmethod
    def _check_part(part: str, what: str) -> None:
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise BadRequestError(f"bad {what} {part!r}", part=part)


def _int_param(req: Request, name: str, default: int) -> int:
    raw = req.query.get(name, [str(default)])[0]
    try:
        return int(raw)
    except ValueError:
        raise BadRequestError(f"parameter {name!r} must be an integer, got {raw!r}", parameter=name) from None


def logviewer_routes(files: LogFiles) -> list[Route]:
    """The log viewer's routes over ``files``."""

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
        Route("GET", "/api/v1/logs/{topology_id}", list_logs),
        Route("GET", "/api/v1/log", read_log),
        Route("GET", "/log", show_log),
    ]


class LogViewer:
    """The HTTP server of one supervisor's log viewer on ``logviewer.host`` (default: the supervisor's host) and
    ``logviewer.port`` (0 picks a free port)."""

    def __init__(self, conf: Mapping[str, Any], root: Path, host: str) -> None:
        port = int(conf.get("logviewer.port", 8000) or 0)
        bind = str(conf.get("logviewer.host") or host)
        try:
            self.server = JsonApiServer(bind, port, logviewer_routes(LogFiles(root)), name="logviewer")
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
