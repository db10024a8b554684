"""This module owns the supervisor process: its identity, the loop driving :class:`Supervisor`, code cleanup.

The supervisor keeps its id in ``<storm.local.dir>/supervisor/id`` (so a restarted supervisor is the same
node), writes the configuration its workers start with, and runs :meth:`Supervisor.sync` every
``supervisor.monitor.frequency.secs`` and whenever the assignments change.  Workers are processes
(:class:`~storm_py.supervisor.launcher.ProcessLauncher`); a worker whose supervisor dies exits on its own.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from storm_py.client import NimbusClient
from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.storage import StateStorage, Watch
from storm_py.config.keys import setting
from storm_py.deps.venv import EnvCache
from storm_py.errors import StormPyError
from storm_py.node.local_state import read_json, supervisor_dir, worker_artifacts_dir, workers_artifacts_root
from storm_py.node.loop import DaemonLoop
from storm_py.node.session import local_hostname, open_storage
from storm_py.node.token_file import with_token, write_owner_only
from storm_py.packaging.package import UnpackLimits
from storm_py.supervisor import artifacts
from storm_py.supervisor.cgroups import ENABLE_KEY, CgroupManager
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.healthcheck import run_health_checks
from storm_py.supervisor.launcher import ProcessLauncher
from storm_py.supervisor.localizer import BlobLocalizer
from storm_py.supervisor.log_access import LogViewerGate
from storm_py.supervisor.logviewer import LogViewer
from storm_py.supervisor.profiler import Profiler
from storm_py.supervisor.stormdist import StormDist

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def supervisor_id(conf: Mapping[str, Any], hostname: str) -> str:
    """This supervisor's id, created once and kept in its local directory."""
    path = supervisor_dir(conf) / "id"
    try:
        existing = path.read_text(encoding="utf-8").strip()
    except OSError:
        existing = ""
    if existing:
        return existing
    sid = f"{_UNSAFE.sub('_', hostname)}-{uuid.uuid4().hex[:8]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sid + "\n", encoding="utf-8")
    return sid


def write_worker_conf(path: Path, conf: Mapping[str, Any]) -> None:
    """Write the configuration workers start with to ``path``, mode 0600 from the start (it holds
    ``nimbus.auth.token``).  Workers get the topology's own ZooKeeper identity at launch
    (:func:`storm_py.cluster_state.acl.worker_auth`), never the cluster's payload."""
    path.parent.mkdir(parents=True, exist_ok=True)
    worker_conf = {k: v for k, v in conf.items() if k != "storm.zookeeper.auth.payload"}
    write_owner_only(path, yaml.safe_dump(worker_conf, sort_keys=True))


class SupervisorDaemon:
    """One supervisor process (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], storage: StateStorage | None = None) -> None:
        conf = with_token(conf)  # the log viewer never serves without one
        self.conf = dict(conf)
        self.hostname = local_hostname(conf)
        self.id = supervisor_id(conf, self.hostname)
        self.state = ClusterState(storage if storage is not None else open_storage(conf), conf)
        self.clock = Clock()
        self.client = NimbusClient(conf)
        self.dist = StormDist(supervisor_dir(conf) / "stormdist", self.state, self.client.fetch_blob,
                              self._leader, UnpackLimits.from_conf(self.conf))
        self.worker_conf = supervisor_dir(conf) / "worker-conf.yaml"
        write_worker_conf(self.worker_conf, self.conf)
        self.localizer = BlobLocalizer(self.conf, self.state, self.client.fetch_blob, self._leader)
        env_keys = ("supervisor.env.cleanup.secs", "supervisor.env.build.timeout.secs")
        cleanup, build_timeout = (float(setting(self.conf, k)) for k in env_keys)
        self.envs = EnvCache(supervisor_dir(conf) / "envs", cleanup, build_timeout, on_built=self.wake,
                             limits=UnpackLimits.from_conf(self.conf))
        try:  # enabled but unusable: the supervisor does not start
            enabled = setting(conf, ENABLE_KEY)
            self.cgroups = CgroupManager(self.conf, self.id, self.state.storm_base) if enabled else None
        except StormPyError:
            self.state.close()
            raise
        self.launcher = ProcessLauncher(self.conf, self.dist, self.worker_conf, clock=self.clock, envs=self.envs,
                                        report_env_error=self._report_worker_error,
                                        topology_conf=self._topology_conf, cgroups=self.cgroups)
        ports = [int(p) for p in setting(conf, "supervisor.slots.ports")]
        self.supervisor = Supervisor(self.conf, self.state, self.launcher, self.clock, self.id, self.hostname, ports,
                                     report_error=self._report_worker_error,
                                     isolation=self.launcher if self.cgroups is not None else None)
        self.loop = DaemonLoop("supervisor", self.clock, self.round)
        self._watches: list[Watch] = []
        try:
            profiler = Profiler(self.conf, workers_artifacts_root(conf), self._worker_pid, self.clock)
            gate = LogViewerGate(self.conf, self.state, self.clock)
            self.logviewer = LogViewer(self.conf, workers_artifacts_root(conf), self.hostname, profiler, gate)
        except StormPyError:
            self.state.close()
            raise

    def _leader(self) -> str | None:
        try:
            return self.state.nimbus_leader()
        except StormPyError:
            return None

    def _worker_pid(self, topology_id: str, port: int) -> int | None:
        """The pid of this supervisor's live worker of ``topology_id`` at ``port`` (for the profiler)."""
        worker = self.supervisor.workers.get(port)
        if worker is None or worker.topology_id != topology_id or not worker.alive:
            return None
        meta = read_json(worker_artifacts_dir(self.conf, topology_id, port) / "worker.yaml")
        pid = meta.get("pid") if isinstance(meta, dict) else None
        return pid if isinstance(pid, int) and pid > 0 else None

    def wake(self) -> None:
        """Sync now."""
        self.loop.wake()

    def start(self) -> None:
        """Serve the worker logs, register and follow the assignments."""
        self.logviewer.start()
        self.supervisor.logviewer_port = self.logviewer.port
        self.supervisor.heartbeat()
        self._watches = [self.state.watch_assignments(self.wake)]
        log.info("supervisor %s on %s with slots %s", self.id, self.hostname, self.supervisor.ports)

    def round(self) -> float:
        """One sync: heartbeat, stop and launch workers, forget code nobody needs; the wait until the next."""
        freq = float(setting(self.conf, "supervisor.monitor.frequency.secs"))
        self._check_health()
        try:
            self.localizer.sync({port: want.topology_id for port, want in self.supervisor.wanted().items()})
            self.supervisor.sync()
            assigned = set(self.state.assignment_ids())
            running = {w.topology_id for w in self.supervisor.workers.values()}
            self.dist.cleanup(assigned | running)
            self.envs.cleanup(assigned | running, self.clock.wall())
        except StormPyError as err:
            log.warning("supervisor round failed: %s", err.message)
        live = {(w.topology_id, port) for port, w in self.supervisor.workers.items()}
        try:
            artifacts.maintain(workers_artifacts_root(self.conf), self.conf, live, self.clock.wall())
        except OSError as err:
            log.warning("cannot tidy the workers' artifacts: %s", err)
        return freq

    def _topology_conf(self, topology_id: str) -> dict[str, Any] | None:
        base = self.state.storm_base(topology_id)
        return base.topology_conf if base is not None else None

    def _report_worker_error(self, topology_id: str, port: int, executors: list[tuple[int, int]], text: str) -> None:
        """Put a worker's failure (an environment build, its memory limit) on the errors of the components the
        worker runs or would have run."""
        from storm_py.ui.api_views import task_components

        base = self.state.storm_base(topology_id)
        if base is None:
            return
        tasks = task_components(base)
        components = sorted({tasks[t] for start, end in executors for t in range(start, end + 1) if t in tasks})
        for component in components or sorted(base.component_executors):
            self.state.report_error(topology_id, component, text, self.hostname, port, self.clock.wall())

    def _check_health(self) -> None:
        """Run the node health check; a failing one takes this supervisor's slots out of scheduling."""
        failures = run_health_checks(self.conf).failures
        if failures and not self.supervisor.health_failures:
            log.warning("supervisor %s failed its health check (%s): it takes no work", self.id, "; ".join(failures))
        elif not failures and self.supervisor.health_failures:
            log.info("supervisor %s passes its health check again: its slots are back", self.id)
        self.supervisor.health_failures = failures

    def run(self, stop: threading.Event | None = None) -> None:
        """Loop until ``stop`` (or :meth:`stop`) is set."""
        self.loop.run(stop)

    def interrupt(self) -> None:
        """Begin shutting down from another thread (a signal): the loop ends after its round, and that round's
        ZooKeeper calls stop waiting for a lost connection, so that :meth:`stop` follows at once."""
        self.loop.stop()
        self.state.stop_waiting()

    def stop(self) -> None:
        """Stop every worker, unregister and close the state session."""
        self.loop.stop()
        for watch in self._watches:
            watch.cancel()
        self.launcher.terminate_all()
        self.logviewer.stop()
        try:
            self.supervisor.shutdown()
        except StormPyError as err:
            log.warning("supervisor %s shut down uncleanly: %s", self.id, err.message)
        if self.cgroups is not None:
            self.cgroups.close()
        self.state.close()
