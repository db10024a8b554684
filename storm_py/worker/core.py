"""This module owns the worker's core: one slot of one topology, its executors, transfer and heartbeats.

The same class runs inside a worker process (driven by ``storm-py worker``) and inside LocalCluster (launched
on a thread); what differs is handed in: the state store, the code store, the transport and the clock.
"""

from __future__ import annotations

import logging
import sys
import threading
import traceback
from collections.abc import Iterable, Mapping
from types import FrameType
from typing import Any, Protocol

from storm_py.clock import Clock
from storm_py.cluster_state.checkpoint_request import pending_request
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import Assignment, StormBase, WorkerHeartbeat, spouts_active
from storm_py.config import merge_component_conf
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.packaging.code_store import CodeStore
from storm_py.runtime.credentials import CredentialsWatch
from storm_py.runtime.executor import Executor
from storm_py.runtime.system_topology import layout_from_counts, system_topology
from storm_py.runtime.transfer import Entries, TransferHost
from storm_py.runtime.worker_runtime import WorkerLoop, WorkerRuntime
from storm_py.transactional.state import TRANSACTIONAL_STATE_RESOURCE
from storm_py.worker.activation import LAYOUT_STAT, ActivationGate, beat_of, stale_slots
from storm_py.worker.log_levels import LogLevels
from storm_py.worker.log_levels import apply as apply_log_levels
from storm_py.worker.metrics import WorkerMetrics

log = logging.getLogger(__name__)


class WorkerTransport(Protocol):
    """How a worker receives batches and sends them to peer workers (keyed ``node:port``)."""

    def bind(self, worker_key: str, runtime: TransferHost) -> None: ...

    def send(self, worker_key: str, entries: Entries) -> None: ...

    def unbind(self, worker_key: str) -> None: ...

    def metrics(self) -> dict[str, int]:
        """The transfer's counters for the worker's heartbeat (``{}``: it keeps none)."""
        ...


def worker_key(node: str, port: int) -> str:
    """How workers name each other: ``node:port``."""
    return f"{node}:{port}"


def stack_owners(executors: Iterable[Executor]) -> dict[int, str]:
    """The component id of each executor and of each task's component object, by the object's ``id`` (what a
    stuck loop's stack frames are matched against)."""
    owners: dict[int, str] = {}
    for ex in executors:
        owners[id(ex)] = ex.component_id
        for obj in ex.components().values():
            owners[id(obj)] = ex.component_id
    return owners


class WorkerStartError(StormPyError):
    """The worker could not start (its topology, assignment or code is missing or broken)."""

    code = "worker_start_failed"


class Worker:
    """One worker slot of one topology."""

    def __init__(
        self,
        *,
        conf: Mapping[str, Any],
        state: ClusterState,
        code_store: CodeStore,
        transport: WorkerTransport,
        clock: Clock,
        topology_id: str,
        supervisor_id: str,
        port: int,
        host: str = "127.0.0.1",
    ) -> None:
        self.conf = dict(conf)
        self.state = state
        self.code_store = code_store
        self.transport = transport
        self.clock = clock
        self.topology_id = topology_id
        self.supervisor_id = supervisor_id
        self.port = port
        self.host = host
        self.key = worker_key(supervisor_id, port)
        self.executors: list[tuple[int, int]] = []
        self.node_host: dict[str, str] = {}
        self.runtime: WorkerRuntime | None = None
        self.loop: WorkerLoop | None = None
        self.metrics: WorkerMetrics | None = None
        self.log_levels = LogLevels()
        self._next_log_poll = 0.0
        self._credentials = CredentialsWatch()
        self._credentials_lock = threading.Lock()  # the poll (heartbeat) and LocalCluster's upload both check
        self._next_credentials_poll = 0.0
        self.started_at = clock.now()
        self._next_heartbeat = 0.0
        self._lock = threading.Lock()
        self.stopped = False
        self.task_counts: dict[str, int] = {}
        self._seen_passes = -1
        self._progress_at = clock.now()
        #: holds the spouts after an assignment change until no slot runs the previous layout (at most the
        #: message timeout: a spout's tuple lost to such a slot would be waited for as long)
        self.gate = ActivationGate(float(setting(self.conf, "topology.message.timeout.secs")))

    def start(self) -> None:
        """Load the topology, build the executors of this slot and start the loop."""
        tid = self.topology_id
        base = self.state.storm_base(tid)
        assignment = self.state.assignment(tid)
        if base is None or assignment is None:
            raise WorkerStartError(f"topology {tid} has no storm base or assignment", topology=tid)
        topo_conf = {**self.conf, **base.topology_conf}
        user_topology = self.code_store.load(tid, topo_conf)
        system = system_topology(user_topology, topo_conf)
        counts = {c: (base.component_tasks.get(c, n), n) for c, n in base.component_executors.items()}
        self.task_counts = dict(base.component_tasks)  # the layout built: a rescale of the tasks ends this worker
        layout = layout_from_counts(counts)
        task_to_comp = layout.task_to_component()
        mine = sorted(r for r, slot in assignment.executor_node_port.items() if slot == (self.supervisor_id, self.port))
        self.executors = mine
        self.node_host = dict(assignment.node_host)
        runtime = WorkerRuntime(
            topology_id=tid,
            topology_name=base.name,
            topology=system,
            conf=topo_conf,
            layout=layout,
            executors=[(task_to_comp[s], (s, e)) for s, e in mine],
            task_to_worker=self._task_to_worker(assignment.executor_node_port),
            worker_id=self.key,
            clock=self.clock,
            send_remote=self.transport.send,
            error_sink=self._record_error,
            worker_port=self.port,
            resources={TRANSACTIONAL_STATE_RESOURCE: self.state},
        )
        self.runtime = runtime
        self.metrics = WorkerMetrics(runtime, self.host, self.port, self.clock.wall)
        self.metrics.install()
        self.gate.max_wait = float(setting(topo_conf, "topology.message.timeout.secs"))
        self.transport.bind(self.key, runtime)
        runtime.set_active(spouts_active(base.status) and self._layout_ready(assignment), self._hold(base))
        runtime.set_debug(base.component_debug)
        self._poll_credentials()  # credentials stored before this worker started reach its tasks first
        self.loop = WorkerLoop(runtime, name=self._loop_name())
        self.loop.start()
        self.heartbeat()

    @staticmethod
    def _hold(base: StormBase) -> int | None:
        """The checkpoint request the topology is held for (a rescale of its tasks), if any."""
        request = pending_request(base)
        return None if request is None else request.id

    def _layout_ready(self, assignment: Assignment) -> bool:
        """Whether every slot of ``assignment`` runs this worker's layout (or the wait for them ran out)."""
        key = (tuple(sorted(assignment.executor_node_port.items())), tuple(sorted(self.task_counts.items())))
        if self.gate.is_open(key):
            return True
        try:
            beats = {slot: beat_of(hb.executors, hb.stats)
                     for slot, hb in self.state.worker_heartbeats(self.topology_id).items()}  # fmt: skip
        except StormPyError as err:
            log.warning("worker %s cannot read its peers' heartbeats: %s", self.key, err.message)
            beats = {}
        stale = stale_slots(assignment.slots(), self.task_counts, beats, (self.supervisor_id, self.port))
        decision = self.gate.decide(key, stale, self.clock.now())
        if decision.timed_out:
            log.warning("worker %s activates its spouts after %.0fs although %s still run another layout",
                        self.key, self.gate.max_wait, ", ".join(worker_key(n, p) for n, p in stale))
        elif not decision.open:
            log.info("worker %s holds its spouts: %s still run another layout", self.key,
                     ", ".join(worker_key(n, p) for n, p in stale))
        return decision.open

    def _loop_name(self) -> str:
        return f"worker-{self.key}-{self.topology_id}"

    @staticmethod
    def _task_to_worker(executor_node_port: Mapping[tuple[int, int], tuple[str, int]]) -> dict[int, str]:
        return {t: worker_key(n, p) for (s, e), (n, p) in executor_node_port.items() for t in range(s, e + 1)}

    def _record_error(self, component_id: str, task: int, text: str) -> None:
        self.state.report_error(self.topology_id, component_id, text, self.host, self.port, self.clock.wall())

    def component_conf(self, component_id: str) -> dict[str, Any]:
        """Used by tests: the conf a component of this worker sees."""
        assert self.runtime is not None
        return merge_component_conf(self.runtime.conf, self.runtime.topology.components()[component_id].conf)

    def refresh(self) -> bool:
        """Follow the topology's status and peers' moves, heartbeat when due; False when this slot is gone."""
        if self.runtime is None or self.stopped:
            return False
        base = self.state.storm_base(self.topology_id)
        assignment = self.state.assignment(self.topology_id)
        if base is None or assignment is None:
            return False
        mine = sorted(r for r, slot in assignment.executor_node_port.items() if slot == (self.supervisor_id, self.port))
        if mine != self.executors or base.component_tasks != self.task_counts:
            return False  # moved, or the tasks were rescaled: a worker of the new layout takes the slot
        hold = self._hold(base)
        self.runtime.set_active(spouts_active(base.status) and self._layout_ready(assignment), hold)
        self.runtime.set_debug(base.component_debug)
        self.node_host = dict(assignment.node_host)
        self.runtime.task_to_worker = self._task_to_worker(assignment.executor_node_port)
        now = self.clock.now()
        if now >= self._next_heartbeat or hold is not None:  # held: nimbus waits for the checkpoint's gauges
            self.heartbeat()
        return True

    def heartbeat(self) -> None:
        """Write this worker's heartbeat (executors and their counters)."""
        if self.runtime is None:
            return
        freq = float(setting(self.conf, "worker.heartbeat.frequency.secs"))
        self._next_heartbeat = self.clock.now() + freq
        hb = WorkerHeartbeat(
            topology_id=self.topology_id,
            executors=list(self.executors),
            time_secs=self.clock.wall(),
            uptime_secs=self.clock.now() - self.started_at,
            stats={
                "executors": self.metrics.reports() if self.metrics is not None else {},
                "dropped": self.runtime.dropped,
                "transfer": self._transfer_metrics(),
                LAYOUT_STAT: dict(self.task_counts),
            },
        )
        try:
            self.state.set_worker_heartbeat(self.topology_id, self.supervisor_id, self.port, hb)
        except StormPyError as err:
            log.warning("worker %s could not heartbeat: %s", self.key, err)
        self._poll_log_levels()
        self._poll_credentials()

    def _poll_log_levels(self) -> None:
        """Follow the topology's dynamic log levels (``storm-py set_log_level``) every poll period."""
        now = self.clock.now()
        if now < self._next_log_poll:
            return
        conf = self.runtime.conf if self.runtime is not None else self.conf  # the topology may set it
        self._next_log_poll = now + float(setting(conf, "worker.log.level.reset.poll.secs"))
        try:
            config = self.state.log_config(self.topology_id)
        except StormPyError as err:
            log.warning("worker %s could not read its log levels: %s", self.key, err)
            return
        for name, level in apply_log_levels(self.log_levels, config, self.clock.wall()):
            log.info("worker %s: logger %s set to %s", self.key, name, logging.getLevelName(level))

    def _poll_credentials(self) -> None:
        """Read the topology's credentials every ``task.credentials.poll.secs`` (Storm's credentials check)."""
        runtime = self.runtime
        now = self.clock.now()
        if runtime is None or now < self._next_credentials_poll:
            return
        self._next_credentials_poll = now + float(setting(runtime.conf, "task.credentials.poll.secs"))
        self.check_credentials()

    def check_credentials(self) -> None:
        """Read the topology's credentials now and hand news to the tasks' ``set_credentials`` (on the loop)."""
        runtime = self.runtime
        if runtime is None:
            return
        with self._credentials_lock:
            try:
                stored = self.state.credentials(self.topology_id)
            except StormPyError as err:
                log.warning("worker %s could not read its credentials: %s", self.key, err)
                return
            news = self._credentials.changed(stored.creds if stored is not None else None)
            if news is not None:
                runtime.credentials.offer(news)
        if news is not None:
            log.info("worker %s: new credentials (keys %s)", self.key, ", ".join(sorted(news)) or "none")
            runtime.wake.set()

    def _transfer_metrics(self) -> dict[str, int]:
        return dict(self.transport.metrics())

    def silent_secs(self) -> float:
        """How long the worker's loop has made no pass (an idle loop still passes every few milliseconds, so this
        grows only while a component is stuck in a call); 0 before the loop starts."""
        loop = self.loop
        if loop is None:
            return 0.0
        now = self.clock.now()
        with self._lock:
            if loop.passes != self._seen_passes:
                self._seen_passes, self._progress_at = loop.passes, now
            return max(0.0, now - self._progress_at)

    def report_stuck(self, silent: float) -> None:
        """Report the component the loop is stuck in, with the loop thread's stack, to the topology's errors."""
        loop = self.loop
        name = self._loop_name()
        thread = next((t for t in threading.enumerate() if loop is not None and t.name == name), None)
        frame = sys._current_frames().get(thread.ident) if thread is not None and thread.ident else None
        component = "__system"
        stack = "(no stack: the loop thread is gone)"
        if frame is not None:
            stack = "".join(traceback.format_stack(frame))
            # the innermost executor or component object on the stack is the one stuck (a compiled build's
            # executors have no Python frames, the user's components always do)
            owners = stack_owners(self.runtime.executors if self.runtime is not None else [])
            f: FrameType | None = frame
            while f is not None:
                owner = f.f_locals.get("self")
                if owner is not None and id(owner) in owners:
                    component = owners[id(owner)]
                    break
                f = f.f_back
        text = f"worker {self.key} made no progress for {silent:.0f}s: stuck in {component}\n{stack}"
        log.error("%s", text)
        try:
            self.state.report_error(self.topology_id, component, text, self.host, self.port, self.clock.wall())
        except StormPyError as err:
            log.warning("worker %s could not report being stuck: %s", self.key, err.message)

    @property
    def alive(self) -> bool:
        """Whether the worker's loop runs."""
        return self.loop is not None and self.loop.alive and not self.stopped

    def stop(self) -> None:
        """Stop the loop (closing spouts, cleaning up bolts) and leave the transport."""
        with self._lock:
            if self.stopped:
                return
            self.stopped = True
        self.transport.unbind(self.key)
        if self.loop is not None:
            self.loop.stop()
        try:
            self.state.remove_worker_heartbeat(self.topology_id, self.supervisor_id, self.port)
        except StormPyError:
            log.debug("heartbeat of %s already gone", self.key)
