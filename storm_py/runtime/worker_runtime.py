"""WorkerRuntime: one worker's executors, routing and transfer, driven by a single-threaded loop.

It knows nothing of ZooKeeper, processes or sockets: the worker daemon (or LocalCluster) hands it the topology,
its executors, where every other task lives, and a ``send_remote`` callable.  :class:`WorkerLoop` is the thin
driver thread: it calls :meth:`WorkerRuntime.run_once` and waits when a pass found nothing to do.
"""

from __future__ import annotations

import copy
import functools
import logging
import random
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

from storm_py.api.components import CustomStreamGrouping
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Fields, Tuple, tuple_roots
from storm_py.clock import Clock
from storm_py.config import merge_component_conf
from storm_py.config.keys import setting
from storm_py.protocol import registration
from storm_py.runtime.acker import FAIL, AckerExecutor
from storm_py.runtime.async_executor import AsyncBoltExecutor, is_async_component
from storm_py.runtime.bolt_executor import BoltExecutor
from storm_py.runtime.credentials import CredentialsInbox
from storm_py.runtime.executor import Executor, error_text
from storm_py.runtime.groupers import LoadAwareShuffle, make_grouper
from storm_py.runtime.hooks import shutdown_worker_hooks, start_worker_hooks
from storm_py.runtime.ids import ID_BITS, acker_chooser, worker_id_source
from storm_py.runtime.key_groups import keyed_groups
from storm_py.runtime.loads import WorkerLoads, locality_bounds
from storm_py.runtime.routing import StreamRoute
from storm_py.runtime.serialize_check import encodable
from storm_py.runtime.spout_executor import SpoutExecutor
from storm_py.runtime.system_topology import ACKER_COMPONENT, SYSTEM_COMPONENT, TaskLayout, num_ackers
from storm_py.runtime.taps import apply_debug, debug_pct
from storm_py.runtime.transfer import Entries, SendRemote
from storm_py.tracing.tracer import Tracer, open_tracer
from storm_py.vector.routing import ColumnarRoute

log = logging.getLogger(__name__)

ErrorSink = Callable[[str, int, str], None]

#: resource key of the worker loop's wake-up event: a component fed from a thread of its own (the DRPC spout)
#: sets it so its next step runs at once instead of after the idle back-off
WAKE_RESOURCE: Final = "storm_py.worker.wake"


class WorkerRuntime:
    """Executors of one worker plus the transfer between them and to other workers."""

    def __init__(
        self,
        *,
        topology_id: str,
        topology_name: str,
        topology: StormTopology,
        conf: Mapping[str, Any],
        layout: TaskLayout,
        executors: list[tuple[str, tuple[int, int]]],
        task_to_worker: Mapping[int, str],
        worker_id: str,
        clock: Clock,
        send_remote: SendRemote | None = None,
        error_sink: ErrorSink | None = None,
        worker_port: int | None = None,
        seed: int | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> None:
        self.topology_id = topology_id
        self.topology_name = topology_name
        self.topology = topology
        self.conf = dict(conf)
        self.layout = layout
        self.worker_id = worker_id
        self.worker_port = worker_port
        self.clock = clock
        self.task_to_worker = dict(task_to_worker)
        #: how batches reach peer workers; the transport bound to this worker sets it (see storm_py.runtime.transfer)
        self.send_remote = send_remote
        self._error_sink = error_sink
        self.rng = random.Random(seed)
        self.task_to_component = layout.task_to_component()
        self.component_streams: dict[str, dict[str, Fields]] = {
            cid: {s: f for s, (f, _) in spec.streams.items()} for cid, spec in topology.components().items()
        }
        #: the columnar streams, ``(component, stream)``: their tuples carry one batch each
        self.columnar_streams = frozenset(
            (cid, s) for cid, spec in topology.components().items() for s in spec.columnar)
        registration.apply(self.conf)  # topology.kryo.register: the same extension codes in every worker
        #: what the worker shares with its tasks (``context.get_resource``), e.g. the transactional-state store
        self.resources: dict[str, Any] = dict(resources or {})
        self.worker_hooks: list[Any] = []  # started in prepare
        self.tracer: Tracer | None = None  # opened in prepare when topology.tracing.otlp.endpoint is set
        self.num_ackers = num_ackers(self.conf) if ACKER_COMPONENT in topology.bolts else 0
        self.acker_tasks = ackers = tuple(sorted(layout.component_tasks.get(ACKER_COMPONENT, [])))
        self.acker_for = acker_chooser(list(ackers))
        self.ids = worker_id_source(self.rng.getrandbits(ID_BITS), ackers,
                              set(t for _, (s, e) in executors for t in range(s, e + 1)))
        self.backlog = 0
        self.backlog_limit = int(setting(self.conf, "topology.executor.receive.buffer.size"))
        #: ``topology.testing.always.try.serialize`` also checks tuples between this worker's own tasks (Storm)
        self.check_local = bool(self.conf.get("topology.testing.always.try.serialize"))
        self.dropped = 0
        #: load-aware shuffling (on unless ``topology.disable.loadaware.messaging``): its locality bounds, the
        #: choosers to refresh, when next, and the tuples queued for a peer worker (set by the transport)
        self._load_bounds = locality_bounds(self.conf)
        self.loads = WorkerLoads(self.backlog_limit)
        self.peer_backlog: Callable[[str], int] | None = None
        self.inbound: deque[Entries] = deque()
        self._unsent_roots: list[int] = []  # trees of tuples the transport could not send, failed next pass
        self._remote: dict[str, Entries] = {}  # batches for peer workers, sent at the end of each pass
        self.inbound_count = 0
        self._desired_active: tuple[bool, int | None] = (False, None)
        self._applied_active: tuple[bool, int | None] = (False, None)
        self._debug_seen: dict[str, Any] = {}  # the component_debug last handed in (set_debug)
        self._debug_wanted: dict[str, Any] | None = None
        self.credentials = CredentialsInbox()  # set_credentials' news, delivered by the loop thread
        self.worker_tasks = sorted(t for _, (s, e) in executors for t in range(s, e + 1))
        self._worker_task_set = set(self.worker_tasks)
        self._routes: dict[int, dict[str, StreamRoute]] = {}
        self.executors: list[Executor] = []
        for cid, (start, end) in executors:
            tasks = list(range(start, end + 1))
            spec = topology.components()[cid]
            cls: type[Executor]
            if cid == ACKER_COMPONENT:
                cls = AckerExecutor
            elif spec.is_spout:
                cls = SpoutExecutor
            elif is_async_component(spec.obj):
                cls = AsyncBoltExecutor
            else:
                cls = BoltExecutor
            self.executors.append(cls(self, cid, tasks))
        # spouts first, then bolts, ackers last: one pass carries a batch all the way down the topology
        self.executors.sort(key=lambda e: 0 if e.is_spout else (2 if e.is_acker else 1))
        self.local_executor: dict[int, Executor] = {t: ex for ex in self.executors for t in ex.task_ids}
        self.wake = threading.Event()
        self.resources[WAKE_RESOURCE] = self.wake  # a component fed by a thread of its own sets it
        #: a periodic duty run on the loop thread before the executors' steps (the metrics buckets): called at
        #: ``timer_at`` with ``now``, it may put tuples into executors' out-buffers and returns its next time
        self.timer: Callable[[float], float] | None = None
        self.timer_at = float("inf")

    # ------------------------------------------------------------------------------------------ construction help

    def component_conf(self, component_id: str) -> dict[str, Any]:
        """Topology conf merged with the component's own (whitelisted) keys."""
        return merge_component_conf(self.conf, self.topology.components()[component_id].conf)

    def instantiate(self, component_id: str, task: int) -> Any:
        """A private copy of the component object for one task."""
        return copy.deepcopy(self.topology.components()[component_id].obj)

    def make_context(self, task: int, component_id: str) -> TopologyContext:
        """The :class:`TopologyContext` of one task (a system component, the acker's, has no inputs of its own)."""
        spec = self.topology.components().get(component_id)
        return TopologyContext(
            topology_id=self.topology_id,
            topology_name=self.topology_name,
            task_id=task,
            component_id=component_id,
            task_to_component=self.task_to_component,
            component_tasks=self.layout.component_tasks,
            component_streams=self.component_streams,
            worker_tasks=self.worker_tasks,
            worker_port=self.worker_port,
            resources=self.resources,
            conf=self.conf,
            clock=self.clock,
            sources=spec.inputs if spec is not None else None,
            topology=self.topology,
        )

    def routes_for(self, task: int) -> dict[str, StreamRoute]:
        """Routing of every output stream of ``task`` (built once per task)."""
        routes = self._routes.get(task)
        if routes is not None:
            return routes
        comp = self.task_to_component[task]
        comps = self.topology.components()
        spec = comps[comp]
        routes = {}
        for stream, (fields, direct) in spec.streams.items():
            choosers = []
            direct_targets: set[int] = set()
            for sub_id in sorted(comps):
                grouping = comps[sub_id].inputs.get((comp, stream))
                if grouping is None:
                    continue
                targets = self.layout.component_tasks.get(sub_id, [])
                if grouping.kind == "custom" and grouping.custom is not None:
                    grouping = copy.copy(grouping)
                    grouping.custom = copy.deepcopy(grouping.custom)
                chooser = make_grouper(
                    grouping, targets, fields, self._worker_task_set, self.rng,
                    functools.partial(self._prepare_custom, task, comp, stream), self._load_bounds,
                    keyed_groups(comps[sub_id].conf, self.conf),
                )
                if isinstance(chooser, LoadAwareShuffle):
                    self.loads.add(chooser, self.clock.now())
                if chooser is None:
                    direct_targets.update(targets)
                else:
                    choosers.append(chooser)
            columnar = (ColumnarRoute(comp, stream, fields.to_list(), spec.columnar[stream], choosers)
                        if stream in spec.columnar else None)
            routes[stream] = StreamRoute(stream, fields, direct, choosers, direct_targets, columnar)
        self._routes[task] = routes
        return routes

    def built_routes(self, task: int) -> dict[str, StreamRoute]:
        """The routes of ``task`` if its collector built them already (safe to call from any thread), else none."""
        return self._routes.get(task) or {}

    def _prepare_custom(
        self, task: int, comp: str, stream: str, grouping: CustomStreamGrouping, targets: list[int]
    ) -> None:
        grouping.prepare(self.make_context(task, comp), (comp, stream), list(targets))

    # --------------------------------------------------------------------------------------------------- running

    def prepare(self) -> None:
        """Create every task's component object and prepare bolts (spouts open at their first activation)."""
        context = self.make_context(-1, SYSTEM_COMPONENT)  # the worker's own: resources set there reach every task
        self.worker_hooks = start_worker_hooks(self.topology.worker_hooks, self.conf, context)
        self.tracer = open_tracer(self.conf, self.topology_name, f"{self.worker_id}:{self.worker_port}", self.clock,
                                  self.task_to_component)
        for ex in self.executors:
            ex.prepare()

    def set_active(self, active: bool, hold: int | None = None) -> None:
        """Ask for the topology's spouts to be (de)activated, or held for the checkpoint asked for under ``hold``
        (see :meth:`SpoutExecutor.set_active`); applied by the loop thread."""
        self._desired_active = (active, hold)
        self.wake.set()

    def set_debug(self, component_debug: Mapping[str, Any]) -> None:
        """Follow the storm base's ``component_debug`` (debug sampling); applied by the loop thread."""
        if dict(component_debug) != self._debug_seen:
            self._debug_seen = self._debug_wanted = dict(component_debug)
            self.wake.set()

    def report_error(self, component_id: str, task: int, exc: BaseException) -> None:
        """Record an error of a task (with traceback) through the error sink."""
        text = error_text(exc)
        if self._error_sink is not None:
            try:
                self._error_sink(component_id, task, text)
            except Exception:
                log.exception("could not record an error of %s task %d", component_id, task)

    def deliver(self, entries: Entries) -> None:
        """Hand in a batch from another worker (thread-safe)."""
        self.inbound.append(entries)
        self.wake.set()

    def run_once(self, now: float) -> bool:
        """One pass over every executor; return whether any work was done."""
        did = False
        if self._desired_active != self._applied_active:
            self._applied_active = self._desired_active
            for ex in self.executors:
                if isinstance(ex, SpoutExecutor):
                    ex.set_active(*self._applied_active)
            did = True
        if self.inbound:
            did = True
            self._drain_inbound()
        if self._debug_wanted is not None:
            wanted, self._debug_wanted = self._debug_wanted, None
            apply_debug(self.executors, self.topology_id, wanted)
            if self.tracer is not None:
                self.tracer.debug_sampling(debug_pct(wanted.get(self.topology_id) or {}))
        self.credentials.deliver(self.executors, self.report_error)
        if self._unsent_roots:
            did = True
            self._fail_roots()
        if now >= self.timer_at and self.timer is not None:
            self.timer_at = self.timer(now)
        if now >= self.loads.at:
            self.loads.refresh(now, self.executors, self.task_to_worker, self.peer_backlog)
        clock_now = self.clock.now
        inbound = self.inbound
        for ex in self.executors:
            if inbound:  # what arrived while a spout waited in next_tuple goes on in this pass, not the next
                self._drain_inbound()
            if ex.step(clock_now()):
                did = True
            if ex.outbuf:
                self._flush(ex.outbuf)
        if self._remote:
            # one frame per peer worker per pass, whatever number of executors sent to it
            remote = self._remote
            self._remote = {}
            send = self.send_remote
            assert send is not None
            for worker, entries in remote.items():
                send(worker, entries)
        return did

    def fail_unsent(self, items: list[Any]) -> None:
        """Fail the tuple trees of tuples the transport could not send (their values cannot be encoded).

        Called by the transport on this worker's loop thread while it sends; the fail rows go to the ackers in
        the next pass, so the spout hears of it at once instead of at the message timeout.
        """
        for item in items:
            if type(item) is Tuple and self.num_ackers:
                self._unsent_roots.extend(tuple_roots(item))

    def _fail_roots(self) -> None:
        acker_for = self.acker_for
        rows: dict[int, list[Any]] = {}
        for root in self._unsent_roots:
            rows.setdefault(acker_for(root), []).append((FAIL, root))
        self._unsent_roots = []
        self._flush(rows)

    def _drain_inbound(self) -> None:
        local = self.local_executor
        inbound = self.inbound
        n = 0
        while inbound:
            for task, items in inbound.popleft():
                ex = local.get(task)
                if ex is None:
                    self.dropped += len(items)
                    log.warning("dropped %d tuples for task %d, which is not in this worker", len(items), task)
                    continue
                ex.inbox.append((task, items))
                n += len(items)
        self.backlog += n
        self.inbound_count += n

    def _flush(self, outbuf: dict[int, list[Any]]) -> None:
        local = self.local_executor
        remote = self._remote
        n = 0
        check = self.check_local
        for task, items in outbuf.items():
            ex = local.get(task)
            if ex is not None:
                if check:  # per batch: without the key the per-tuple path has no extra step
                    items = encodable(self, items)
                ex.inbox.append((task, items))
                n += len(items)
                continue
            worker = self.task_to_worker.get(task)
            if worker is None or self.send_remote is None:
                self.dropped += len(items)
                log.warning("dropped %d tuples for task %d: no worker runs it", len(items), task)
                continue
            batches = remote.get(worker)
            if batches is None:
                remote[worker] = [(task, items)]
            else:
                batches.append((task, items))
        outbuf.clear()
        self.backlog += n

    def shutdown(self) -> None:
        """Deactivate and close spouts, clean up bolts."""
        for ex in self.executors:
            try:
                ex.shutdown()
            except Exception:
                log.exception("shutdown of %s failed", ex.component_id)
        shutdown_worker_hooks(self.worker_hooks)
        if self.tracer is not None:
            self.tracer.close()

    # -------------------------------------------------------------------------------------------------- reading

    def stats(self) -> dict[str, Any]:
        """Per-executor counters, keyed ``component:[start-end]``."""
        out: dict[str, Any] = {}
        for ex in self.executors:
            d = ex.stats.as_dict()
            d["component"] = ex.component_id
            d["tasks"] = ex.task_ids
            d["is_spout"] = ex.is_spout
            if isinstance(ex, SpoutExecutor):
                d["pending"] = ex.pending_count()
                samples = ex.stats.lat_samples
                d["latency_samples"] = [round(x, 3) for x in samples[:: max(1, len(samples) // 500)]]
            out[f"{ex.component_id}:[{ex.task_ids[0]}-{ex.task_ids[-1]}]"] = d
        return out

    @property
    def spout_emitted(self) -> int:
        """Tuples this worker's spouts emitted so far."""
        return sum(ex.stats.emitted for ex in self.executors if ex.is_spout)

    def is_idle(self) -> bool:
        """No queued tuples in any executor and nothing inbound."""
        return not self.inbound and not self._unsent_roots and all(not ex.inbox for ex in self.executors)


class WorkerLoop:
    """The thread that drives a :class:`WorkerRuntime`: run passes, wait briefly when idle, stop on request."""

    def __init__(self, rt: WorkerRuntime, name: str = "worker") -> None:
        self.rt = rt
        self.clock = rt.clock
        self.idle = False
        self.passes = 0
        self.work_passes = 0
        self._stop = threading.Event()
        self._loop_thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._listener = rt.wake.set
        self.clock.add_listener(self._on_clock)
        self.failure: BaseException | None = None

    def _on_clock(self) -> None:
        self.idle = False
        self.rt.wake.set()

    def start(self) -> None:
        """Prepare the runtime's tasks, then start the loop thread."""
        self._loop_thread.start()

    def _run(self) -> None:
        rt = self.rt
        wake = rt.wake
        clock = self.clock
        idle_wait = 0.0
        try:
            rt.prepare()
            while not self._stop.is_set():
                wake.clear()
                inbound_before = rt.inbound_count
                did = rt.run_once(clock.now())
                self.passes += 1
                if did:
                    self.work_passes += 1
                    self.idle = False
                    idle_wait = 0.0
                    continue
                if rt.inbound_count == inbound_before and not rt.inbound:
                    self.idle = True
                wake.wait(idle_wait)
                idle_wait = min(idle_wait * 2 or 0.0002, 0.005)
        except BaseException as exc:  # keep the failure for whoever joins the loop
            self.failure = exc
            log.exception("worker loop of %s crashed", rt.worker_id)
        finally:
            self.idle = True
            rt.shutdown()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and wait for its thread (which shuts the runtime down)."""
        self._stop.set()
        self.rt.wake.set()
        self.clock.remove_listener(self._on_clock)
        if self._loop_thread.is_alive() and threading.current_thread() is not self._loop_thread:
            self._loop_thread.join(timeout)

    @property
    def alive(self) -> bool:
        """Whether the loop thread runs."""
        return self._loop_thread.is_alive()
