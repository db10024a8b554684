"""This module owns how a supervisor starts workers: the :class:`Launcher` seam and its two implementations.

:class:`ThreadLauncher` runs each worker on a thread of this process (LocalCluster).  :class:`ProcessLauncher`
is the launcher of a real cluster: it makes sure the topology's code is downloaded
(:class:`~storm_py.supervisor.stormdist.StormDist`), then starts ``python -m storm_py worker ...`` with its
stdout and stderr kept in ``<storm.log.dir>/workers-artifacts/<topology-id>/<port>/``.  A
:class:`ProcessWorker` reports the process alive until it exits, and silent when its local heartbeat file goes
stale (``supervisor.worker.timeout.secs``) or never appears (``supervisor.worker.start.timeout.secs``); every
exit is appended to ``exit-codes``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.cluster_state.acl import WORKER_AUTH_ENV, worker_auth
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.config.keys import setting
from storm_py.deps.venv import PYCACHE, EnvBuilding, EnvCache
from storm_py.errors import DependencyError, StormPyError
from storm_py.node.local_state import read_json, worker_artifacts_dir, worker_heartbeat_path, write_json
from storm_py.packaging.code_store import CODE, CodeStore
from storm_py.supervisor import run_as
from storm_py.supervisor.cgroups import CgroupError, CgroupManager, WorkerCgroup
from storm_py.supervisor.slots import kernel_memory_error
from storm_py.supervisor.stormdist import StormDist

if TYPE_CHECKING:  # a supervisor process never builds a worker itself: keep the runtime out of it
    from storm_py.worker.core import Worker, WorkerTransport

log = logging.getLogger(__name__)

#: Reports a topology's failed environment build: (topology id, port, executors, error text).
EnvErrorReport = Callable[[str, int, list[tuple[int, int]], str], None]
#: A live topology's conf by id (None when it is gone).
TopologyConfOf = Callable[[str], Mapping[str, Any] | None]


class WorkerHandle(Protocol):
    """A launched worker as its supervisor sees it."""

    topology_id: str
    executors: list[tuple[int, int]]

    @property
    def alive(self) -> bool: ...

    def refresh(self) -> bool: ...

    def stop(self) -> None: ...

    def silent_secs(self) -> float: ...


class Launcher(Protocol):
    """Starts a worker for (topology, port) on this supervisor."""

    def launch(self, supervisor_id: str, topology_id: str, port: int, executors: list[tuple[int, int]]) -> WorkerHandle:
        ...

    def resident_mb(self, worker: WorkerHandle) -> float | None:
        """The resident memory of a worker it launched, in MiB (None when it has no process of its own)."""
        ...


class WorkerIsolation(Protocol):
    """What isolates a launcher's workers (their cgroups), told when a worker is stopped or found dead."""

    def ended(self, worker: WorkerHandle) -> str | None:
        """Release the isolation of ``worker`` (stopped); the error naming its memory limit when the kernel killed
        it for its memory, else None."""
        ...


class ThreadLauncher:
    """Runs each worker in this process on its own loop thread."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        state: ClusterState,
        code_store: CodeStore,
        transport: WorkerTransport,
        clock: Clock,
    ) -> None:
        self.conf = dict(conf)
        self.state = state
        self.code_store = code_store
        self.transport = transport
        self.clock = clock
        self.launched: list[Worker] = []

    def launch(self, supervisor_id: str, topology_id: str, port: int, executors: list[tuple[int, int]]) -> Worker:
        """Build the worker of ``port`` and start its loop thread."""
        from storm_py.worker.core import Worker

        worker = Worker(
            conf=self.conf,
            state=self.state,
            code_store=self.code_store,
            transport=self.transport,
            clock=self.clock,
            topology_id=topology_id,
            supervisor_id=supervisor_id,
            port=port,
        )
        worker.start()
        self.launched.append(worker)
        return worker

    def resident_mb(self, worker: WorkerHandle) -> float | None:
        """None: a worker thread shares this process's memory."""
        return None


def process_rss_mb(pid: int) -> float | None:
    """The resident memory of process ``pid`` in MiB (None when it cannot be read: gone, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) / 1024.0  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


class WorkerLaunchError(StormPyError):
    """A worker process could not be started."""

    code = "worker_launch_failed"


class LaunchPending(StormPyError):
    """A worker cannot start yet (its topology's environment is being built); the supervisor tries again."""

    code = "launch_pending"


class ProcessWorker:
    """One launched worker process (a :class:`WorkerHandle`)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        worker_id: str,
        topology_id: str,
        port: int,
        executors: list[tuple[int, int]],
        heartbeat_path: Path,
        artifacts: Path,
        start_timeout: float,
        shutdown_secs: float,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.proc = proc
        self.clock = clock  # heartbeat files hold wall times
        self.pid = proc.pid
        self.worker_id = worker_id
        self.topology_id = topology_id
        self.port = port
        self.executors = executors
        self.heartbeat_path = heartbeat_path
        self.artifacts = artifacts
        self.start_timeout = start_timeout
        self.shutdown_secs = shutdown_secs
        self.launched = clock.wall()
        self.last_heartbeat: float | None = None
        self.exit_code: int | None = None
        #: its cgroup (storm.resource.isolation.plugin.enable), until it is removed
        self.cgroup: WorkerCgroup | None = None

    @property
    def alive(self) -> bool:
        """Whether the process runs (its exit is recorded the first time it is found gone)."""
        if self.exit_code is not None:
            return False
        code = self.proc.poll()
        if code is None:
            return True
        self._exited(code)
        return False

    def _exited(self, code: int) -> None:
        if self.exit_code is not None:
            return
        self.exit_code = code
        how = f"signal {-code}" if code < 0 else f"code {code}"
        level = logging.INFO if code == 0 else logging.WARNING
        log.log(level, "worker %s of %s on port %d (pid %d) exited with %s",
                self.worker_id, self.topology_id, self.port, self.pid, how)
        try:
            with (self.artifacts / "exit-codes").open("a", encoding="utf-8") as f:
                f.write(f"{self.clock.wall():.3f} pid={self.pid} worker={self.worker_id} exit={code}\n")
        except OSError as err:
            log.warning("cannot record the exit code of worker %s: %s", self.worker_id, err)
        self.heartbeat_path.unlink(missing_ok=True)

    def refresh(self) -> bool:
        """Read the worker's local heartbeat; False once the process is gone."""
        if not self.alive:
            return False
        beat = read_json(self.heartbeat_path)
        if isinstance(beat, Mapping) and isinstance(beat.get("time"), (int, float)):
            self.last_heartbeat = float(beat["time"])
        return True

    def silent_secs(self) -> float:
        """Seconds since the last heartbeat; before the first, 0 until the start timeout, then infinite."""
        now = self.clock.wall()
        if self.last_heartbeat is None:
            return 0.0 if now - self.launched <= self.start_timeout else math.inf
        return max(0.0, now - self.last_heartbeat)

    def terminate(self) -> None:
        """Ask the worker to exit (SIGTERM) without waiting."""
        if self.alive:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """Ask the worker to exit, kill it if it lingers, and record its exit."""
        self.terminate()
        try:
            code = self.proc.wait(self.shutdown_secs)
        except subprocess.TimeoutExpired:
            log.warning("worker %s (pid %d) did not exit within %.0fs; killing it",
                        self.worker_id, self.pid, self.shutdown_secs)
            self.proc.kill()
            code = self.proc.wait()
        self._exited(code)


class ProcessLauncher:
    """Starts worker processes for one supervisor (see the module docstring).

    Args:
        conf: the supervisor's configuration.
        dist: where topology code is downloaded to.
        conf_path: the configuration file workers start with.
        python: the interpreter workers run on (unless the topology brings a wheelhouse; default:
            ``supervisor.worker.python``, else this process's).
        envs: the environment cache building the virtualenvs of topologies with a wheelhouse.
        report_env_error: where a failed environment build is reported (on the topology's errors).
        topology_conf: a topology's conf by id (its submitter, for ``supervisor.run.worker.as.user``).
        cgroups: the cgroups each worker is put in right after it is spawned (None: no isolation).
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        dist: StormDist,
        conf_path: Path,
        python: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        envs: EnvCache | None = None,
        report_env_error: EnvErrorReport | None = None,
        topology_conf: TopologyConfOf | None = None,
        cgroups: CgroupManager | None = None,
    ) -> None:
        self.conf = dict(conf)
        self.cgroups = cgroups
        self.topology_conf = topology_conf
        if setting(self.conf, run_as.RUN_AS_KEY):
            run_as.check_root(os.geteuid())
        self.clock = clock
        self.dist = dist
        self.conf_path = conf_path
        configured = setting(self.conf, "supervisor.worker.python")
        self.python = python or (str(configured) if configured else sys.executable)
        self.envs = envs
        self.report_env_error = report_env_error
        self.launched: list[ProcessWorker] = []

    def launch(
        self, supervisor_id: str, topology_id: str, port: int, executors: list[tuple[int, int]]
    ) -> ProcessWorker:
        """Download the topology's code (and build its environment) if needed and start its worker for ``port``."""
        code_dir = self.dist.ensure(topology_id) / CODE
        python, env_vars = self._interpreter(topology_id, port, executors, code_dir)
        worker_id = uuid.uuid4().hex
        artifacts = worker_artifacts_dir(self.conf, topology_id, port)
        heartbeat = worker_heartbeat_path(self.conf, worker_id)
        user = self._os_user(topology_id)
        conf_path = self.conf_path
        if user is not None:
            conf_path = run_as.prepare(user, self.conf, self.conf_path.parent / "worker-confs" / user.name,
                                       topology_id, [artifacts, heartbeat.parent], [code_dir.parent])
            env_vars = {**env_vars, "HOME": user.home, "USER": user.name, "LOGNAME": user.name}
        cmd = [
            python, "-m", "storm_py", "worker", topology_id, supervisor_id, str(port),
            "--worker-id", worker_id,
            "--supervisor-pid", str(os.getpid()),
            "--log-file", str(artifacts / "worker.log"),
            "--config", str(conf_path),
        ]
        cgroup = self.cgroups.create(topology_id, worker_id, executors) if self.cgroups is not None else None
        try:
            artifacts.mkdir(parents=True, exist_ok=True)
            heartbeat.parent.mkdir(parents=True, exist_ok=True)
            with (artifacts / "worker.log.out").open("ab") as out, (artifacts / "worker.log.err").open("ab") as err:
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=artifacts, close_fds=True,
                    env={**os.environ, **env_vars, "PYTHONUNBUFFERED": "1",  # user prints reach worker.log.out at once
                         # the topology's ZooKeeper identity; the worker's config holds none of the cluster's
                         WORKER_AUTH_ENV: json.dumps(worker_auth(self.conf, topology_id))},
                    user=user.uid if user is not None else None, group=user.gid if user is not None else None,
                    extra_groups=[] if user is not None else None,
                )
        except OSError as err:
            if self.cgroups is not None and cgroup is not None:
                self.cgroups.remove(cgroup)
            raise WorkerLaunchError(
                f"cannot start a worker for {topology_id} on port {port}: {err}", topology=topology_id, port=port
            ) from err
        if self.cgroups is not None and cgroup is not None:  # before the worker imports the topology's code
            self._join(self.cgroups, cgroup, proc, port)
        write_json(
            artifacts / "worker.yaml",
            {"worker-id": worker_id, "topology-id": topology_id, "port": port, "pid": proc.pid,
             "supervisor-id": supervisor_id, "executors": [list(e) for e in executors], "launched": self.clock.wall()},
        )
        log.info("launched worker %s of %s on port %d (pid %d%s)", worker_id, topology_id, port, proc.pid,
                 f", as OS user {user.name}" if user is not None else "")
        worker = ProcessWorker(
            proc,
            worker_id=worker_id,
            topology_id=topology_id,
            port=port,
            executors=list(executors),
            heartbeat_path=heartbeat,
            artifacts=artifacts,
            start_timeout=float(setting(self.conf, "supervisor.worker.start.timeout.secs")),
            shutdown_secs=float(setting(self.conf, "supervisor.worker.shutdown.sleep.secs")),
            clock=self.clock,
        )
        worker.cgroup = cgroup
        self.launched = [w for w in self.launched if w.alive]
        self.launched.append(worker)
        return worker

    @staticmethod
    def _join(cgroups: CgroupManager, cgroup: WorkerCgroup, proc: subprocess.Popen[bytes], port: int) -> None:
        """Put a just spawned worker in its cgroup; one that cannot join is killed and its launch fails."""
        try:
            cgroups.join(cgroup, proc.pid)
        except CgroupError as err:
            proc.kill()
            proc.wait()
            cgroups.remove(cgroup)
            raise WorkerLaunchError(f"cannot start a worker on port {port}: {err.message}", port=port) from err

    def ended(self, worker: WorkerHandle) -> str | None:
        """Remove the cgroup of a stopped worker; the error naming its memory limit when the kernel killed it for
        its memory (a :class:`WorkerIsolation`)."""
        if self.cgroups is None or not isinstance(worker, ProcessWorker) or worker.cgroup is None:
            return None
        cgroup, worker.cgroup = worker.cgroup, None
        killed = self.cgroups.memory_killed(cgroup, worker.exit_code)
        self.cgroups.remove(cgroup)
        limit = cgroup.limits.memory_mb
        if not killed or limit is None:
            return None
        return kernel_memory_error(worker.port, limit, cgroup.limits.memory_source)

    def _os_user(self, topology_id: str) -> run_as.OsAccount | None:
        """The account the topology's workers run as (None: this process's)."""
        if not setting(self.conf, run_as.RUN_AS_KEY):
            return None
        topology_conf = self.topology_conf(topology_id) if self.topology_conf is not None else None
        name = run_as.worker_user(self.conf, topology_conf or {})
        return run_as.account(name) if name is not None else None

    def _interpreter(self, topology_id: str, port: int, executors: list[tuple[int, int]],
                     code_dir: Path) -> tuple[str, dict[str, str]]:
        """The worker's interpreter and extra environment variables: the topology's virtualenv when it has one."""
        if self.envs is None:
            return self.python, {}
        try:
            env_python = self.envs.python_for(topology_id, code_dir)
        except EnvBuilding as err:
            raise LaunchPending(err.message, topology=topology_id, port=port) from err
        except DependencyError as err:
            record = self.envs.builds.get(str(err.fields.get("env", "")))
            text = record.to_report(topology_id) if record is not None else None
            if text is not None and self.report_env_error is not None:
                self.report_env_error(topology_id, port, list(executors), text)
            raise
        if env_python is None:
            return self.python, {}
        bin_dir = str(env_python.parent)
        # bytecode goes to a folder of the topology's own, never into the shared (checked) environment
        return str(env_python), {"VIRTUAL_ENV": str(env_python.parent.parent),
                                 "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
                                 "PYTHONPYCACHEPREFIX": str(code_dir.parent / PYCACHE)}

    def resident_mb(self, worker: WorkerHandle) -> float | None:
        """The worker process's resident memory (``VmRSS`` of ``/proc/<pid>/status``), in MiB."""
        if not isinstance(worker, ProcessWorker) or not worker.alive:
            return None
        return process_rss_mb(worker.pid)

    def terminate_all(self) -> None:
        """Ask every worker still running to exit (they are then stopped one by one)."""
        for worker in self.launched:
            worker.terminate()
