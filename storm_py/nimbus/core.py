"""This module owns nimbus's core: topologies in, assignments out, timed transitions and reassignments.

It accepts topologies, schedules their executors onto supervisors' slots, runs timed transitions (kill,
rebalance) and reassigns the executors of dead workers and supervisors; which slots are dead and where executors
go is decided by the pure :mod:`storm_py.nimbus.monitor`.  A rescale of the tasks of a topology with managed state
asks for a checkpoint first and waits for its commit, as :mod:`storm_py.nimbus.rescale_checkpoint` decides.

The class holds no thread: :meth:`Nimbus.step` does one round of timers and monitoring with the given clock;
the nimbus daemon calls it from its loop, LocalCluster calls it directly.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.api.topology import StormTopology
from storm_py.clock import Clock
from storm_py.cluster_state.checkpoint_request import OPTIONS_KEY as CHECKPOINT_KEY
from storm_py.cluster_state.checkpoint_request import CheckpointRequest
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import ACTIVE, INACTIVE, KILLED, StormBase
from storm_py.config import merge_registrations
from storm_py.config import validate as validate_conf
from storm_py.config.keys import setting
from storm_py.errors import (
    AlreadyAliveException,
    ConfigError,
    InvalidTopologyException,
    NotAliveException,
    StormPyError,
)
from storm_py.metrics.reports import TopologyReading, observe, reports
from storm_py.metrics.windows import StatsBook
from storm_py.nimbus import ras
from storm_py.nimbus import topology_status as ts
from storm_py.nimbus.component_settings import component_settings
from storm_py.nimbus.monitor import SlotMonitor, Timeouts, assignment_of, plan_assignment
from storm_py.nimbus.rescale import checked_tasks, rescaled_counts, resubmitted_history
from storm_py.nimbus.rescale_checkpoint import CheckpointDecision, CheckpointReading, decide, new_request, reading_of
from storm_py.nimbus.validation import checked_conf_overrides, checked_system_topology
from storm_py.packaging.code_store import CodeStore
from storm_py.runtime.system_topology import SYSTEM_IDS, num_ackers
from storm_py.scheduler.resource_aware import schedule_resource_aware, unplaceable, user_pools
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID
from storm_py.stateful.state.task_names import RESCALES

log = logging.getLogger(__name__)

#: Longest wait of a kill or rebalance (a week): anything longer, or not a finite number, is refused.
MAX_WAIT_SECS = 7 * 24 * 3600

_NAME_RE = re.compile(r"^[^/.:\\]+$")

TopologyLoader = Callable[[Any, dict[str, Any]], StormTopology]


def _load_object(code: Any, conf: dict[str, Any]) -> StormTopology:
    if not isinstance(code, StormTopology):
        raise InvalidTopologyException(f"expected a StormTopology, got {type(code).__name__}")
    return code


class Nimbus:
    """The master's logic over a :class:`ClusterState`."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        state: ClusterState,
        code_store: CodeStore,
        clock: Clock,
        loader: TopologyLoader = _load_object,
    ) -> None:
        self.conf = dict(conf)
        self.state = state
        self.code_store = code_store
        self.clock = clock
        self.loader = loader
        self._lock = threading.RLock()
        self._counter = 0
        # watching from construction; reset on leadership and reconnection
        self.monitor = SlotMonitor(Timeouts.from_conf(conf), clock.wall())
        self._unplaced: set[str] = set()
        #: storm.scheduler: the resource aware scheduler (else the even one), the users' pools, and why each
        #: topology it could not place waits
        self._resource_aware = ras.is_resource_aware(self.conf)
        self._pools = user_pools(self.conf)
        self._waiting: dict[str, str] = {}
        #: rolling statistics windows of every live executor (bounded per executor), fed from heartbeats
        self.stats_book = StatsBook()
        self.is_leader: Callable[[], bool] = lambda: True

    # -------------------------------------------------------------------------------------------------- lookups

    def topology_id(self, name: str) -> str | None:
        """The id of the live topology called ``name``."""
        for tid, base in self.state.storm_bases().items():
            if base.name == name:
                return tid
        return None

    def _require(self, name: str) -> tuple[str, StormBase]:
        tid = self.topology_id(name)
        base = self.state.storm_base(tid) if tid else None
        if tid is None or base is None:
            raise NotAliveException(f"topology {name!r} is not alive", topology=name)
        return tid, base

    # --------------------------------------------------------------------------------------------------- submit

    def submit_topology(self, name: str, conf: Mapping[str, Any] | None, code: Any, inactive: bool = False) -> str:
        """Validate, store and schedule a topology; return its id."""
        with self._lock:
            if not isinstance(name, str) or not _NAME_RE.match(name):
                raise InvalidTopologyException(f"topology name {name!r} is invalid (no '/', '.', ':' or '\\')")
            if self.topology_id(name) is not None:
                raise AlreadyAliveException(f"topology {name!r} is already alive", topology=name)
            topo_conf = self._normalize_conf(name, conf or {})
            workers = int(setting(topo_conf, "topology.workers"))
            self._check_caps(name, workers, int(topo_conf["topology.acker.executors"]))
            topology = self.loader(code, topo_conf)
            topo_conf = merge_registrations(topo_conf, (c.conf for c in topology.components().values()))
            system, counts = checked_system_topology(topology, topo_conf)
            self._check_caps(name, 1, sum(e for _, e in counts.values()))
            resources = ras.component_resources(system, topo_conf)
            kept = self.state.rescales(name)
            history = resubmitted_history(kept, {c: t for c, (t, _) in counts.items()})
            if history is not None:
                topo_conf[RESCALES] = history
            self._counter += 1
            tid = f"{name}-{self._counter}-{int(self.clock.wall())}"
            self.code_store.put(tid, code)
            base = StormBase(
                name=name,
                status=INACTIVE if inactive else ACTIVE,
                launch_time=self.clock.wall(),
                num_workers=int(setting(topo_conf, "topology.workers")),
                component_executors={c: e for c, (_, e) in counts.items()},
                component_tasks={c: t for c, (t, _) in counts.items()},
                spout_ids=sorted(system.spouts),
                component_inputs={
                    cid: [[src, stream, g.kind] for (src, stream), g in sorted(spec.inputs.items())]
                    for cid, spec in system.components().items()
                },
                topology_conf=topo_conf,
                component_settings=component_settings(system, topo_conf),
                component_resources=resources,
            )
            self._check_fits(name, tid, base)
            if history is not None and history != kept:
                self.state.set_rescales(name, history)
            self.state.set_storm_base(tid, base)
            self._schedule(tid, base, fresh=True)
            log.info("submitted topology %s as %s", name, tid)
            return tid

    def _check_caps(self, name: str, workers: int, executors: int) -> None:
        """Refuse more workers or executors than ``nimbus.slots.perTopology`` / ``nimbus.executors.perTopology``
        allow, before anything is built or written (an absurd count would outgrow ZooKeeper's node limit)."""
        max_slots = self.conf.get("nimbus.slots.perTopology")
        max_execs = self.conf.get("nimbus.executors.perTopology")
        if max_slots is not None and workers > int(max_slots):
            raise InvalidTopologyException(
                f"{name!r} asks for {workers} workers; nimbus.slots.perTopology allows {max_slots}", topology=name
            )
        if max_execs is not None and executors > int(max_execs):
            raise InvalidTopologyException(
                f"{name!r} needs {executors} executors; nimbus.executors.perTopology allows {max_execs}",
                topology=name,
            )

    def _check_fits(self, name: str, tid: str, base: StormBase) -> None:
        """With the resource aware scheduler, refuse a topology with a component no live supervisor could ever
        run (more than any one offers); the error names the component."""
        if not self._resource_aware:
            return
        slots, _ = self.monitor.alive_slots(self.state.supervisors(), self.clock.wall())
        why = unplaceable(ras.demand_of(tid, base), ras.nodes_of(self.state.supervisors(), slots))
        if why:
            raise InvalidTopologyException(f"{name!r} cannot be scheduled: {why}", topology=name)

    def _normalize_conf(self, name: str, conf: Mapping[str, Any]) -> dict[str, Any]:
        merged = {k: v for k, v in self.conf.items() if k.startswith("topology.")}
        merged.update(conf)
        merged["topology.name"] = name
        try:
            json.dumps(merged)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"topology conf of {name!r} is not JSON-serializable: {err}", topology=name) from err
        validate_conf(merged, f"topology conf of {name!r}:")
        merged["topology.acker.executors"] = num_ackers(merged)
        return merged

    # ---------------------------------------------------------------------------------------------- scheduling

    def _schedule(
        self, tid: str, base: StormBase, fresh: bool = False, dead: frozenset[tuple[str, int]] = frozenset()
    ) -> None:
        if self._resource_aware:
            self._schedule_resources(tid, fresh, dead)
            return
        wall = self.clock.wall()
        slots, hosts = self.monitor.alive_slots(self.state.supervisors(), wall)
        used: set[tuple[str, int]] = set()
        for other, assignment in self.state.assignments().items():
            if other != tid:
                used.update(assignment.executor_node_port.values())
        current = self.state.assignment(tid)
        planned = plan_assignment(base, current, slots, hosts, used, wall, fresh=fresh, dead=dead)
        if planned is None:
            # No slot at all: keep what is assigned (nothing may run, but nothing is torn down) and retry.
            if tid not in self._unplaced:
                log.warning("no free slot for %s: waiting for supervisors", tid)
                self._unplaced.add(tid)
            return
        self._unplaced.discard(tid)
        if current is None or current.executor_node_port != planned.executor_node_port:
            self.state.set_assignment(tid, planned)
            log.info("assigned %s to %d slot(s)", tid, len(set(planned.executor_node_port.values())))

    def _schedule_resources(self, tid: str, fresh: bool, dead: frozenset[tuple[str, int]]) -> None:
        """The resource aware scheduler over the whole cluster: ``tid`` moves off ``dead`` slots (or starts
        afresh); topologies that do not fit, or are evicted for more important ones, lose their assignment and
        wait with the reason shown in their ``schedulerInfo``."""
        wall = self.clock.wall()
        supervisors = self.state.supervisors()
        slots, hosts = self.monitor.alive_slots(supervisors, wall)
        nodes = ras.nodes_of(supervisors, [s for s in slots if s not in dead])
        if not nodes:  # no supervisor at all: keep what is assigned (nothing is torn down) and retry
            return
        bases = {t: b for t, b in self.state.storm_bases().items() if b.status != KILLED or self.state.assignment(t)}
        assignments = {t: self.state.assignment(t) for t in bases}
        current = {t: ras.placement_of(bases[t], a.executor_node_port) for t, a in assignments.items()
                   if a is not None and not (fresh and t == tid)}
        plan = schedule_resource_aware(
            [ras.demand_of(t, b) for t, b in bases.items()], nodes, current, self._pools,
            [t for t, b in bases.items() if ras.is_constrained(b)],
        )
        for t in bases:
            assignment = assignments[t]
            placed = plan.placements.get(t)
            planned = assignment_of(placed, assignment, hosts, wall, fresh and t == tid) if placed else None
            if planned is None:
                if assignment is not None:
                    self.state.remove_assignment(t)
                if self._waiting.get(t) != plan.waiting.get(t):
                    log.warning("%s waits: %s", t, plan.waiting.get(t, "no live supervisor"))
            elif assignment is None or assignment.executor_node_port != planned.executor_node_port:
                self.state.set_assignment(t, planned)
                log.info("assigned %s to %d slot(s)", t, len(set(planned.executor_node_port.values())))
        self._waiting = {t: plan.waiting.get(t, "not running: no live supervisor") for t in bases
                         if t not in plan.placements}

    # ----------------------------------------------------------------------------------------------- actions

    def activate(self, name: str) -> None:
        """Status active: spouts run."""
        self._transition(name, "activate")

    def deactivate(self, name: str) -> None:
        """Status inactive: spouts stop calling ``next_tuple``."""
        self._transition(name, "deactivate")

    def _transition(self, name: str, action: str) -> None:
        with self._lock:
            tid, base = self._require(name)
            status = ts.apply(base.status, action, name)
            if status != base.status:
                self.state.set_storm_base(tid, _replace(base, status=status))

    def debug(self, name: str, component: str | None, enable: bool, sampling_pct: float) -> None:
        """Storm's ``debug``: sample ``sampling_pct`` % of the emits of ``component`` (of every component when
        ``None``) to the event logger, or stop; kept in the storm base's ``component_debug``, which workers follow."""
        if isinstance(sampling_pct, bool) or not isinstance(sampling_pct, (int, float)) or not (
                0 <= sampling_pct <= 100):
            raise InvalidTopologyException(f"sampling percentage must be between 0 and 100, got {sampling_pct!r}")
        with self._lock:
            tid, base = self._require(name)
            if component is not None and (component not in base.component_executors or component.startswith("__")):
                raise InvalidTopologyException(f"topology {name!r} has no component {component!r}",
                                               component=component)
            debug = dict(base.component_debug)
            debug[component or tid] = {"enable": bool(enable), "samplingpct": float(sampling_pct)}
            self.state.set_storm_base(tid, _replace(base, component_debug=debug))
            log.info("debug of %s%s %s at %s%%", tid, f" component {component}" if component else "",
                     "enabled" if enable else "disabled", sampling_pct)

    def kill_topology(self, name: str, wait_secs: float | None = None) -> None:
        """Deactivate now; remove the topology after ``wait_secs`` (default: its message timeout)."""
        with self._lock:
            tid, base = self._require(name)
            wait = self._wait(base, wait_secs)
            options = {"action": "kill", "delay_secs": wait, "at": self.clock.wall() + wait}
            self.state.set_storm_base(
                tid, _replace(base, status=KILLED, prev_status=base.status, topology_action_options=options)
            )
            log.info("killing %s in %ss", tid, wait)
        self.step()

    def rebalance(
        self,
        name: str,
        wait_secs: float | None = None,
        num_workers: int | None = None,
        executors: Mapping[str, int] | None = None,
        conf_overrides: Mapping[str, Any] | None = None,
        resources: Mapping[str, Any] | None = None,
        tasks: Mapping[str, int] | None = None,
    ) -> None:
        """Deactivate for ``wait_secs`` (default: message timeout), then reschedule with new counts; the topology
        conf gains ``conf_overrides`` (Storm's ``rebalance -t``), which workers started from then on run with;
        ``resources`` changes components' resources (Storm's ``rebalance -r``:
        ``{"component": {"onheap.memory.mb": 512}}``); ``tasks`` changes components' task counts (keyed state
        moves by key group: :mod:`storm_py.nimbus.rescale`)."""
        with self._lock:
            tid, base = self._require(name)
            new_tasks = checked_tasks(name, base, tasks) if tasks is not None else {}
            overrides = checked_conf_overrides(name, base.topology_conf, conf_overrides or {})
            ras.check_constraints({**base.topology_conf, **overrides}, base.component_executors)
            if resources and not self._resource_aware:
                raise InvalidTopologyException(
                    "rebalance -r changes component resources, which only storm.scheduler: resource_aware places by",
                    topology=name)
            new_resources = ras.rebalanced_resources(base, resources) if resources else None
            if num_workers is not None and (not isinstance(num_workers, int) or num_workers < 1):
                raise InvalidTopologyException(f"number of workers must be a positive integer, got {num_workers!r}")
            if num_workers is not None:
                self._check_caps(name, num_workers, 0)
            for cid, n in (executors or {}).items():
                if cid not in base.component_executors or cid in SYSTEM_IDS:
                    raise InvalidTopologyException(
                        f"cannot rebalance unknown component {cid!r} of {name!r}", component=cid
                    )
                tasks_now = new_tasks.get(cid, base.component_tasks.get(cid, 0))
                if not isinstance(n, int) or n <= 0 or n > tasks_now:
                    raise InvalidTopologyException(
                        f"executors of {cid!r} must be between 1 and its {tasks_now} task(s), got {n!r}",
                        component=cid
                    )
            if new_tasks:
                _, execs, _ = rescaled_counts(base, new_tasks, executors or {})
                self._check_caps(name, 1, sum(execs.values()))
            status = ts.apply(base.status, "rebalance", name)
            wait = self._wait(base, wait_secs)
            ask = new_tasks and CHECKPOINT_COMPONENT_ID in base.component_executors
            timeout = float(setting(base.topology_conf, "topology.message.timeout.secs"))
            request = new_request(self._checkpoint_reading(tid), wait, timeout, self.clock.wall()) if ask else None
            options = {
                "action": "rebalance",
                "delay_secs": wait,
                "at": self.clock.wall() + wait,
                "num_workers": num_workers,
                "num_executors": dict(executors or {}),
                "topology_conf": overrides,
                **({"num_tasks": new_tasks} if new_tasks else {}),
                **({"component_resources": new_resources} if new_resources is not None else {}),
                **({CHECKPOINT_KEY: request.to_json()} if request is not None else {}),
            }
            self.state.set_storm_base(
                tid, _replace(base, status=status, prev_status=base.status, topology_action_options=options)
            )
            if request is not None:
                log.info("rescaling the tasks of %s: checkpoint asked for (request %d, last committed txid %d)",
                         tid, request.id, request.txid)
        self.step()

    def _wait(self, base: StormBase, wait_secs: float | None) -> float:
        if wait_secs is None:
            return float(setting(base.topology_conf, "topology.message.timeout.secs"))
        if (
            isinstance(wait_secs, bool)
            or not isinstance(wait_secs, (int, float))
            or not math.isfinite(wait_secs)
            or not 0 <= wait_secs <= MAX_WAIT_SECS
        ):
            raise InvalidTopologyException(
                f"wait must be a number of seconds from 0 to {MAX_WAIT_SECS}, got {wait_secs!r}", wait=str(wait_secs)
            )
        return float(wait_secs)

    # ------------------------------------------------------------------------------------------------- timers

    def reset_heartbeat_tracking(self) -> None:
        """Forget when heartbeats were last seen changing: every worker gets a full timeout from now on.

        Called when this nimbus gains leadership or its state store reconnects, so that time spent not
        watching is not held against the workers.
        """
        with self._lock:
            self.monitor.reset(self.clock.wall())

    def next_action_secs(self) -> float | None:
        """Seconds until the earliest pending kill or rebalance is due (None when there is none)."""
        now = self.clock.wall()
        due = []
        for tid, base in self.state.storm_bases().items():
            opts = base.topology_action_options
            if not opts:
                continue
            asked = self._checkpoint_decision(tid, opts, now)
            due.append(float(opts.get("at", now)) - now if asked is None else asked[1].recheck_secs)
        return max(0.0, min(due)) if due else None

    def step(self) -> None:
        """Fire due kill/rebalance transitions and reassign executors of dead workers or supervisors."""
        with self._lock:
            now = self.clock.wall()
            bases = self.state.storm_bases()
            self.stats_book.retain(bases)
            for tid, base in bases.items():
                opts = base.topology_action_options
                if opts and now >= float(opts.get("at", 0)):
                    if opts.get("action") == "kill":
                        self._remove(tid)
                        continue
                    if opts.get("action") == "rebalance" and self._checkpoint_done(tid, opts, now):
                        self._do_rebalance(tid, base, opts)
                        continue
                if base.status != KILLED:
                    self._monitor(tid, base)

    def _remove(self, tid: str) -> None:
        log.info("removing topology %s", tid)
        self.state.remove_assignment(tid)
        self.state.remove_storm_base(tid)
        self.state.remove_worker_heartbeats(tid)
        self.state.remove_errors(tid)
        self.code_store.delete(tid)
        self.monitor.forget(tid)
        self._waiting.pop(tid, None)

    def _checkpoint_reading(self, tid: str) -> CheckpointReading:
        """What the checkpoint spout's last heartbeat says of its commits."""
        try:
            found = reports(self.state.worker_heartbeats(tid))
        except StormPyError as err:
            log.warning("cannot read the heartbeats of %s: %s", tid, err.message)
            return CheckpointReading()
        return reading_of(r.gauges for r in found if r.component == CHECKPOINT_COMPONENT_ID)

    def _checkpoint_decision(self, tid: str, opts: Mapping[str, Any], now: float
                             ) -> tuple[CheckpointRequest, CheckpointDecision] | None:
        """The decision on the checkpoint a rebalance asked for (``None``: it asked for none, or its record is
        unreadable: the rebalance goes on at its time)."""
        if opts.get("action") != "rebalance" or CHECKPOINT_KEY not in opts:
            return None
        try:
            request = CheckpointRequest.from_json(opts[CHECKPOINT_KEY])
        except ValueError as err:
            log.warning("the checkpoint request of %s's rebalance is ignored: %s", tid, err)
            return None
        return request, decide(request, float(opts.get("at", 0)), self._checkpoint_reading(tid), now)

    def _checkpoint_done(self, tid: str, opts: Mapping[str, Any], now: float) -> bool:
        """Whether a due rebalance goes on now: it asked for no checkpoint, or that checkpoint committed, or the
        wait for it ran out (said in the log and in the checkpoint spout's errors)."""
        asked = self._checkpoint_decision(tid, opts, now)
        if asked is None:
            return True
        request, decision = asked
        if not decision.proceed:
            return False
        text = decision.describe(request)
        if decision.taken:
            log.info("rescaling %s: %s", tid, text)
        else:
            log.warning("rescaling %s: %s", tid, text)
            self.state.report_error(tid, CHECKPOINT_COMPONENT_ID, text, str(setting(self.conf, "nimbus.host")),
                                    int(setting(self.conf, "nimbus.thrift.port")), now)
        return True

    def _do_rebalance(self, tid: str, base: StormBase, opts: Mapping[str, Any]) -> None:
        execs = dict(base.component_executors)
        execs.update(opts.get("num_executors") or {})
        component_tasks, conf = base.component_tasks, {**base.topology_conf, **(opts.get("topology_conf") or {})}
        if opts.get("num_tasks"):
            asked = opts.get("num_executors") or {}
            component_tasks, rescaled, history = rescaled_counts(base, opts["num_tasks"], asked)
            execs = {**rescaled, **asked}
            conf.update(history)
            self.state.set_rescales(base.name, history[RESCALES])
        workers = opts.get("num_workers") or base.num_workers
        restored = base.prev_status if base.prev_status in (ACTIVE, INACTIVE) else ACTIVE
        new = _replace(
            base,
            status=restored,
            prev_status=None,
            topology_action_options=None,
            num_workers=int(workers),
            component_executors=execs,
            component_tasks=component_tasks,
            topology_conf=conf,
            component_resources=opts.get("component_resources") or base.component_resources,
        )
        self.state.set_storm_base(tid, new)
        self._schedule(tid, new, fresh=True)
        log.info("rebalanced %s: %d worker(s), executors %s, tasks %s", tid, new.num_workers, execs,
                 new.component_tasks)

    def _monitor(self, tid: str, base: StormBase) -> None:
        assignment = self.state.assignment(tid)
        if assignment is None or not assignment.executor_node_port:
            self._schedule(tid, base)
            return
        wall = self.clock.wall()
        alive, _ = self.monitor.alive_slots(self.state.supervisors(), wall)
        beats = self.state.worker_heartbeats(tid)
        observe(self.stats_book, tid, beats)  # keeps the statistics windows fed between page reads
        dead = self.monitor.dead_slots(tid, assignment, beats, set(alive), wall, self.clock.now())
        if dead:
            log.warning("executors of %s on dead slot(s) %s: reassigning", tid, sorted(dead))
            self._schedule(tid, base, dead=frozenset(dead))

    # ---------------------------------------------------------------------------------------------- summaries

    def _scheduling(self, tid: str, base: StormBase, workers: int) -> tuple[int, str]:
        """The workers the scheduler would give with slots to spare, and why fewer run ("" when none are
        missing); with the resource aware scheduler the workers it gave and why the topology waits."""
        if not self._resource_aware:
            return _even_scheduling(base, workers)
        return workers, self._waiting.get(tid, "") if not workers else ""

    def topology_reading(self, name: str) -> TopologyReading:
        """What nimbus knows of the live topology ``name`` now (the UI shapes its page from it)."""
        tid, base = self._require(name)
        return self.reading(tid, base)

    def reading(self, tid: str, base: StormBase | None = None) -> TopologyReading:
        """The records, errors and executor reports of a topology id, its reports fed into the statistics
        windows (``stats_book``)."""
        base = base or self.state.storm_base(tid)
        if base is None:
            raise NotAliveException(f"topology {tid!r} is not alive", topology=tid)
        assignment = self.state.assignment(tid)
        found = observe(self.stats_book, tid, self.state.worker_heartbeats(tid))
        workers = len(set(assignment.executor_node_port.values())) if assignment else 0
        return TopologyReading(
            tid, base, assignment, self.state.topology_errors(tid), found, self.stats_book, self.clock.wall(),
            *self._scheduling(tid, base, workers),
        )

    def cluster_summary(self) -> list[dict[str, Any]]:
        """One row per live topology (the columns of ``storm list``)."""
        rows = []
        for tid, base in sorted(self.state.storm_bases().items()):
            assignment = self.state.assignment(tid)
            workers = len(set(assignment.executor_node_port.values())) if assignment else 0
            wanted, info = self._scheduling(tid, base, workers)
            rows.append(
                {
                    "id": tid,
                    "name": base.name,
                    "status": base.status.upper(),
                    "tasksTotal": sum(base.component_tasks.values()),
                    "workersTotal": workers,
                    "requestedWorkers": wanted,
                    "schedulerInfo": info,
                    **(ras.resource_summary(base, workers > 0) if self._resource_aware else {}),
                    "executorsTotal": sum(base.component_executors.values()),
                    "uptimeSeconds": int(max(0.0, self.clock.wall() - base.launch_time)),
                }
            )
        return rows


def _even_scheduling(base: StormBase, workers: int) -> tuple[int, str]:
    """The workers the even scheduler would give with slots to spare, and why fewer run ("" when none are
    missing)."""
    wanted = ts.wanted_workers(base.num_workers, sum(base.component_executors.values()))
    return wanted, ts.scheduler_info(workers, wanted)


def _replace(base: StormBase, **changes: Any) -> StormBase:
    from dataclasses import replace

    return replace(base, **changes)
