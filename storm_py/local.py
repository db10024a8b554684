"""LocalCluster: nimbus, supervisors and workers in this process, with swapped parts.

The daemon classes are the real ones; only the parts differ: the in-memory state store instead of ZooKeeper,
in-process transfer instead of ZeroMQ, workers on threads instead of processes, and (optionally) a simulated
clock that only :meth:`LocalCluster.advance_cluster_time` moves.
"""

from __future__ import annotations

import gc
import logging
import shutil
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from storm_py.api.topology import StormTopology
from storm_py.clock import SYSTEM_CLOCK, Clock, SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import Credentials
from storm_py.config import defaults, merge_registrations
from storm_py.errors import NotAliveException, WaitTimeoutError
from storm_py.nimbus.core import Nimbus
from storm_py.nimbus.credentials_api import parse_credentials
from storm_py.packaging.code_store import MemoryCodeStore
from storm_py.protocol import registration
from storm_py.runtime.transfer.in_process import InProcessTransfer
from storm_py.supervisor.core import Supervisor
from storm_py.supervisor.launcher import ThreadLauncher
from storm_py.ui import api_views
from storm_py.worker.core import Worker

log = logging.getLogger(__name__)

#: real seconds between background rounds of nimbus and supervisors
BACKGROUND_PERIOD = 0.05


class LocalCluster:
    """An in-process Storm cluster (Storm's ``LocalCluster``); a context manager.

    ``tracked`` is accepted as Storm's tracked cluster is asked for, and changes nothing: every LocalCluster can
    run a :class:`~storm_py.testing.TrackedTopology`.
    """

    def __init__(
        self,
        supervisors: int = 4,
        ports_per_supervisor: int = 3,
        daemon_conf: Mapping[str, Any] | None = None,
        simulated_time: bool = False,
        tracked: bool = False,
    ) -> None:
        del tracked  # see the class docstring
        self.conf = defaults()
        self.conf.update(daemon_conf or {})
        # managed state is durable by default (the checkpoint_dir provider, in a directory of this cluster's),
        # unless the cluster's conf names a provider; a topology's own conf may still name another
        self._state_dir: str | None = None
        if "topology.state.provider" not in (daemon_conf or {}):
            self.conf["topology.state.provider"] = "checkpoint_dir"
            if not self.conf.get("topology.state.checkpoint.dir"):
                self._state_dir = tempfile.mkdtemp(prefix="storm-py-local-state-")
                self.conf["topology.state.checkpoint.dir"] = self._state_dir
        # the workers' collector threshold, in this process only when asked for: it is the user's process
        self._gc_before: tuple[int, int, int] | None = None
        if "worker.gc.threshold0" in (daemon_conf or {}):
            self._gc_before = gc.get_threshold()
            gc.set_threshold(int(self.conf["worker.gc.threshold0"]), *self._gc_before[1:])
        self.simulated = simulated_time
        self.clock: Clock = SimulatedClock() if simulated_time else Clock()
        self._store = MemoryStore()
        self.state = ClusterState(MemoryStorage(self._store), self.conf)
        self.code_store = MemoryCodeStore()
        self.transfer = InProcessTransfer()
        self.nimbus = Nimbus(self.conf, self.state, self.code_store, self.clock)
        self.supervisors: list[Supervisor] = []
        base_port = 1024
        for i in range(supervisors):
            sup_state = ClusterState(MemoryStorage(self._store), self.conf)
            launcher = ThreadLauncher(self.conf, sup_state, self.code_store, self.transfer, self.clock)
            ports = [base_port + i * ports_per_supervisor + p for p in range(ports_per_supervisor)]
            self.supervisors.append(
                Supervisor(self.conf, sup_state, launcher, self.clock, f"supervisor-{i + 1}", "localhost", ports)
            )
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._shut = False
        self._sync()
        self._thread = threading.Thread(target=self._background, name="local-cluster", daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------------------------------------- plumbing

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def _sync(self) -> None:
        with self._lock:
            if self._shut:
                return
            self.nimbus.step()
            for sup in self.supervisors:
                sup.sync()

    def _background(self) -> None:
        while not self._stop.wait(BACKGROUND_PERIOD):
            try:
                self._sync()
            except Exception:  # keep the cluster's background round alive whatever a topology does
                log.exception("local cluster round failed")

    def workers(self, topology_id: str | None = None) -> list[Worker]:
        """The running workers (of one topology when given)."""
        out: list[Worker] = []
        for sup in self.supervisors:
            for w in sup.workers.values():
                if isinstance(w, Worker) and (topology_id is None or w.topology_id == topology_id):
                    out.append(w)
        return out

    def _wait_started(self, topology_id: str, timeout: float = 30.0) -> None:
        deadline = SYSTEM_CLOCK.now() + timeout
        while SYSTEM_CLOCK.now() < deadline:
            self._sync()
            assignment = self.state.assignment(topology_id)
            workers = self.workers(topology_id)
            if (
                assignment is not None
                and workers
                and len(workers) == len(assignment.slots())
                and all(w.loop is not None and w.loop.passes > 0 for w in workers)
            ):
                return
            SYSTEM_CLOCK.sleep(0.002)
        raise WaitTimeoutError(f"workers of {topology_id} did not start within {timeout}s", topology=topology_id)

    def wait_idle(self, timeout: float = 30.0) -> None:
        """Wait (real time) until every worker is idle: no queued tuples and nothing done in a pass."""
        deadline = SYSTEM_CLOCK.now() + timeout
        last: tuple[int, ...] | None = None
        while SYSTEM_CLOCK.now() < deadline:
            workers = self.workers()
            idle = all(
                w.loop is not None and (w.loop.idle or not w.loop.alive) and w.runtime is not None
                and w.runtime.is_idle()
                for w in workers
            ) and self.transfer.idle()
            snap = tuple(w.loop.work_passes for w in workers if w.loop is not None)
            if idle and snap == last:
                return
            last = snap if idle else None
            SYSTEM_CLOCK.sleep(0.002)
        raise WaitTimeoutError(f"cluster did not become idle within {timeout}s")

    # ----------------------------------------------------------------------------------------------- the API

    def submit_topology(
        self, name: str, conf: Mapping[str, Any] | None, topology: Any, inactive: bool = False
    ) -> str:
        """Submit a topology (or a ``TrackedTopology``); returns once its workers run."""
        from storm_py.testing.tracked import TrackedTopology

        tracked = topology if isinstance(topology, TrackedTopology) else None
        topo: StormTopology = tracked.topology if tracked is not None else topology
        if tracked is not None:  # as Storm's test kit: tuples between workers go through the codec and frames
            conf = {"topology.testing.always.try.serialize": True, **dict(conf or {})}
        # what a cluster's submit-time check refuses (an unknown class to register...) is refused here too, under
        # the cluster's topology keys as nimbus merges them (topology.skip.missing.kryo.registrations...)
        registration.registrations(merge_registrations({**self.conf, **dict(conf or {})},
                                                       [s.conf for s in topo.components().values()]))
        with self._lock:
            tid = self.nimbus.submit_topology(name, dict(conf or {}), topo, inactive)
        if tracked is not None:
            tracked.topology_id = tid
        self._wait_started(tid)
        return tid

    def kill_topology(self, name: str, wait_secs: float | None = None) -> None:
        """Kill ``name`` after ``wait_secs`` (default: its message timeout)."""
        with self._lock:
            self.nimbus.kill_topology(name, wait_secs)
            self._sync()

    def activate(self, name: str) -> None:
        """Activate ``name``."""
        with self._lock:
            self.nimbus.activate(name)
            self._sync()

    def deactivate(self, name: str) -> None:
        """Deactivate ``name``."""
        with self._lock:
            self.nimbus.deactivate(name)
            self._sync()

    def debug(self, name: str, component: str | None, enable: bool, sampling_pct: float) -> None:
        """Storm's ``debug``: sample ``sampling_pct`` % of a component's (or every component's) emits to the
        event logger (``topology.eventlogger.executors`` > 0), or stop."""
        with self._lock:
            self.nimbus.debug(name, component, enable, sampling_pct)
            self._sync()

    def rebalance(
        self,
        name: str,
        wait_secs: float | None = None,
        num_workers: int | None = None,
        executors: Mapping[str, int] | None = None,
        tasks: Mapping[str, int] | None = None,
    ) -> None:
        """Rebalance ``name`` to ``num_workers`` workers, ``executors`` and ``tasks`` per component after
        ``wait_secs`` (a task count change moves keyed state by key group)."""
        with self._lock:
            self.nimbus.rebalance(name, wait_secs, num_workers, executors, tasks=tasks)
            self._sync()

    def upload_credentials(self, name: str, creds: Mapping[str, str]) -> None:
        """Storm's ``uploadNewCredentials``: replace ``name``'s credentials with ``creds``; every task of it that
        defines ``set_credentials`` is handed them (here at once, on a cluster within ``task.credentials.poll.secs``).
        """
        checked = parse_credentials({"credentials": dict(creds)})
        tid = self.nimbus.topology_id(name)
        if tid is None:
            raise NotAliveException(f"topology {name!r} is not alive", topology=name)
        self.state.set_credentials(tid, Credentials(checked))
        for w in self.workers(tid):
            w.check_credentials()

    def get_topology_summary(self, name: str) -> dict[str, Any]:
        """Storm UI's topology page of ``name`` (with fresh counters)."""
        tid = self.nimbus.topology_id(name)
        for w in self.workers(tid):
            w.heartbeat()
        return api_views.topology_summary(self.nimbus.topology_reading(name))

    def get_cluster_summary(self) -> list[dict[str, Any]]:
        """One row per live topology."""
        return self.nimbus.cluster_summary()

    def get_topology_id(self, name: str) -> str | None:
        """The id of live topology ``name``."""
        return self.nimbus.topology_id(name)

    def advance_cluster_time(self, secs: float, step: float = 1.0) -> None:
        """Move simulated time forward ``secs`` in ``step``-second increments, letting the cluster settle each time."""
        if not isinstance(self.clock, SimulatedClock):
            raise RuntimeError("advance_cluster_time needs LocalCluster(simulated_time=True)")
        remaining = float(secs)
        while remaining > 1e-9:
            inc = min(step, remaining)
            self.clock.advance(inc)
            remaining -= inc
            self._sync()
            self.wait_idle()

    def shutdown(self) -> None:
        """Stop every worker and daemon of this cluster."""
        with self._lock:
            if self._shut:
                return
            self._shut = True
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(5)
        for sup in self.supervisors:
            sup.shutdown()
        self.transfer.close()
        if self._state_dir is not None:
            shutil.rmtree(self._state_dir, ignore_errors=True)
        if self._gc_before is not None:
            gc.set_threshold(*self._gc_before)
