"""This module owns the supervisor's side of profiling its workers: which tool runs an action, running it, and the
log viewer's profiling routes.

:func:`plan` is the pure core: for an action (``stack``, ``cpu``, ``memory``), its seconds, the py-spy
executable (None: none usable) and the worker's pid it decides the result file's name and either the py-spy
command (``py-spy dump`` for stacks, ``py-spy record --format flamegraph`` for a CPU flame graph SVG) or that the
worker runs the action itself (:mod:`storm_py.worker.profiling`: a memory snapshot always, stacks and CPU
profiles when py-spy is missing or the kernel refuses it ptrace, in which case the action is handed to the worker).
:class:`Profiler` drives it: a bounded number of jobs at a time, each on its own thread, results written whole
into the worker's directory, where the log viewer lists and serves them:

* ``POST /api/v1/profiling/{action}/{topology_id}/{port}[?seconds=N]`` -> ``{"file", "action", "tool",
  "seconds", "status": "started"}`` (``file``: ``<topology-id>/<port>/<name>``, downloadable once written);
* ``GET /api/v1/profiling/dumps/{topology_id}/{port}`` -> ``{"dumps": [{"file", "name", "action", "time",
  "size"}]}``, newest first (``time``: when the action started, epoch seconds).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from storm_py.clock import Clock
from storm_py.config.keys import setting
from storm_py.node.http_api import BadRequestError, NotFoundError, Request, Route
from storm_py.node.local_state import write_json
from storm_py.worker.profiling import ACTIONS, MAX_SECS, REQUESTS_DIR, Action, dump_info, dump_name, write_result
from storm_py.worker.profiling import Request as WorkerRequest

log = logging.getLogger(__name__)

#: Jobs one supervisor runs at a time (py-spy processes and the requests it handed to workers).
MAX_JOBS: Final = 4
#: Seconds a py-spy run may take beyond the profile's own length.
PYSPY_GRACE_SECS: Final = 30.0

#: Finds the pid of a live worker of (topology id, port) on this supervisor; None when there is none.
WorkerPid = Callable[[str, int], int | None]


@dataclass(frozen=True)
class Job:
    """What one profiling action does: py-spy's ``argv`` (writing ``file``), or None: the worker does it."""

    action: Action
    seconds: int
    epoch_ms: int
    file: str
    argv: tuple[str, ...] | None

    @property
    def tool(self) -> str:
        """``py-spy`` or ``in-process``."""
        return "py-spy" if self.argv is not None else "in-process"


def plan(action: Action, seconds: int, py_spy: str | None, pid: int, epoch_ms: int, output: Path) -> Job:
    """The job of ``action`` on worker ``pid``; ``output``: the worker's directory."""
    if action == "memory" or py_spy is None:
        ext = "json" if action == "cpu" else "txt"
        return Job(action, seconds, epoch_ms, dump_name(action, epoch_ms, ext), None)
    if action == "stack":
        return Job(action, seconds, epoch_ms, dump_name(action, epoch_ms, "txt"),
                   (py_spy, "dump", "--pid", str(pid)))
    name = dump_name(action, epoch_ms, "svg")
    argv = (py_spy, "record", "--pid", str(pid), "--duration", str(seconds), "--rate", "100", "--nonblocking",
            "--format", "flamegraph", "--output", str(output / f".{name}.part"))
    return Job(action, seconds, epoch_ms, name, argv)


def find_py_spy(command: str | None) -> str | None:
    """The py-spy executable named by ``worker.profiler.command``: on the PATH or beside this Python; None when
    unset or not found."""
    if not command:
        return None
    found = shutil.which(command) or shutil.which(command, path=str(Path(sys.executable).parent))
    return found


class Profiler:
    """Runs profiling actions on this supervisor's workers (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], root: Path, worker_pid: WorkerPid, clock: Clock) -> None:
        self.root = root
        self.worker_pid = worker_pid
        self.clock = clock
        self.py_spy = find_py_spy(setting(conf, "worker.profiler.command"))
        self.memory_secs = int(setting(conf, "worker.profiler.memory.trace.secs"))
        self._slots = threading.BoundedSemaphore(MAX_JOBS)

    def worker_dir(self, topology_id: str, port: int) -> Path:
        """The directory of the worker's files."""
        return self.root / topology_id / str(port)

    def start(self, topology_id: str, port: int, action: str, seconds: int) -> dict[str, Any]:
        """Start ``action`` on the worker of ``topology_id`` at ``port``; what was started."""
        if action not in ACTIONS:
            raise BadRequestError(f"profiling action must be one of {', '.join(ACTIONS)}, got {action[:40]!r}",
                                  parameter="action")
        if not 1 <= seconds <= MAX_SECS:
            raise BadRequestError(f"seconds must be from 1 to {MAX_SECS}, got {seconds}", parameter="seconds")
        pid = self.worker_pid(topology_id, port)
        if pid is None:
            raise NotFoundError(f"no worker of {topology_id} runs on port {port} here", topology=topology_id,
                                port=port)
        act: Action = "stack" if action == "stack" else "cpu" if action == "cpu" else "memory"
        secs = self.memory_secs if act == "memory" else seconds
        directory = self.worker_dir(topology_id, port)
        job = plan(act, secs, self.py_spy, pid, int(self.clock.wall() * 1000), directory)
        if not self._slots.acquire(blocking=False):
            raise BadRequestError(f"{MAX_JOBS} profiling actions are running on this supervisor; try again when "
                                  "one has finished", parameter="action")
        threading.Thread(target=self._run, args=(job, pid, directory), name=f"profile-{act}", daemon=True).start()
        return {"file": f"{topology_id}/{port}/{job.file}", "action": act, "tool": job.tool, "seconds": secs,
                "status": "started"}

    def _run(self, job: Job, pid: int, directory: Path) -> None:
        try:
            if job.argv is not None and self._py_spy(job, directory):
                return
            fallback = plan(job.action, job.seconds, None, pid, job.epoch_ms, directory)
            self._hand_to_worker(fallback, directory)
        except Exception:  # a failed profile must never take the supervisor's log viewer down
            log.exception("profiling %s of pid %d failed", job.action, pid)
        finally:
            self._slots.release()

    def _py_spy(self, job: Job, directory: Path) -> bool:
        """Run py-spy; whether it wrote the result (False: it could not, say ptrace was refused)."""
        assert job.argv is not None
        try:
            done = subprocess.run(job.argv, capture_output=True, timeout=job.seconds + PYSPY_GRACE_SECS, check=False,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as err:
            log.warning("py-spy failed (%s); the worker profiles itself", err)
            return False
        if done.returncode != 0:
            log.warning("py-spy exited with %d (%s); the worker profiles itself", done.returncode,
                        done.stderr.decode("utf-8", "replace").strip()[-300:])
            (directory / f".{job.file}.part").unlink(missing_ok=True)
            return False
        if job.action == "stack":
            write_result(directory, job.file, done.stdout)
        else:
            (directory / f".{job.file}.part").replace(directory / job.file)
        log.info("profiling: py-spy wrote %s", directory / job.file)
        return True

    def _hand_to_worker(self, job: Job, directory: Path) -> None:
        request = WorkerRequest(job.action, float(job.seconds), job.file)
        write_json(directory / REQUESTS_DIR / f"{job.file}.json", request.to_json())

    def dumps(self, topology_id: str, port: int) -> list[dict[str, Any]]:
        """The results in a worker's directory, newest first."""
        directory = self.worker_dir(topology_id, port)
        out: list[dict[str, Any]] = []
        try:
            entries = [p for p in directory.iterdir() if p.is_file() and not p.is_symlink()]
        except OSError:
            return out
        for path in entries:
            info = dump_info(path.name)
            if info is not None:
                out.append({"file": f"{topology_id}/{port}/{path.name}", "name": path.name, "action": info[0],
                            "time": info[1] / 1000, "size": path.stat().st_size})
        return sorted(out, key=lambda d: (-d["time"], d["name"]))


def _part(value: str, what: str) -> str:
    if not value or value in (".", "..") or "/" in value or "\\" in value or "\0" in value:
        raise BadRequestError(f"bad {what} {value[:80]!r}", parameter=what)
    return value


def _port(value: str) -> int:
    if not value.isdigit() or len(value) > 5 or not 1 <= int(value) <= 65535:
        raise BadRequestError(f"port must be an integer from 1 to 65535, got {value[:40]!r}", parameter="port")
    return int(value)


def _seconds(req: Request) -> int:
    values = req.query.get("seconds", ["10"])
    raw = values[0]
    if len(values) != 1 or not raw.isdigit() or len(raw) > 6:
        raise BadRequestError(f"seconds must be an integer from 1 to {MAX_SECS}, got {raw[:40]!r}",
                              parameter="seconds")
    return int(raw)


def profiling_routes(profiler: Profiler) -> list[Route]:
    """The log viewer's profiling routes over ``profiler`` (both need the token)."""

    def start(req: Request) -> Any:
        tid = _part(req.params["topology_id"], "topology id")
        return profiler.start(tid, _port(req.params["port"]), req.params["action"], _seconds(req))

    def dumps(req: Request) -> Any:
        tid = _part(req.params["topology_id"], "topology id")
        return {"dumps": profiler.dumps(tid, _port(req.params["port"]))}

    return [
        Route("POST", "/api/v1/profiling/{action}/{topology_id}/{port}", start, protected=True),
        Route("GET", "/api/v1/profiling/dumps/{topology_id}/{port}", dumps, protected=True),
    ]
