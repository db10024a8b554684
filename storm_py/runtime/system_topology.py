"""The system-topology rewrite: puts in place of each bolt that stands for another
(:class:`~storm_py.runtime.contracts.ResolvesToBolt`) the bolt the conf chooses, adds ``__acker`` with Storm's ack
streams, the ``__eventlogger`` bolts of ``topology.eventlogger.executors`` fed by every component's ``__eventlog``
stream, the metrics consumers of ``topology.metrics.consumer.register`` as ``__metrics_<class>`` bolts fed by every
component's ``__metrics`` stream, and lays out task ids and executors.

Pure: takes a user :class:`StormTopology` plus the topology conf and returns the topology that actually runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storm_py.api.topology import DIRECT, FIELDS, SHUFFLE, ComponentSpec, Grouping, StormTopology
from storm_py.api.tuple import Fields
from storm_py.config import merge_component_conf
from storm_py.config.keys import setting
from storm_py.metrics.consumer import MetricsConsumerBolt, registrations
from storm_py.runtime.contracts import ResolvesToBolt
from storm_py.runtime.eventlogger import EVENTLOG_FIELDS, EVENTLOG_STREAM, EVENTLOGGER_COMPONENT, EventLoggerBolt

ACKER_COMPONENT = "__acker"
SYSTEM_COMPONENT = "__system"
ACK_INIT = "__ack_init"
ACK_ACK = "__ack_ack"
ACK_FAIL = "__ack_fail"
ACK_RESET_TIMEOUT = "__ack_reset_timeout"
SYSTEM_STREAM = "__system"
METRICS_STREAM = "__metrics"
SYSTEM_IDS = frozenset({ACKER_COMPONENT, SYSTEM_COMPONENT, EVENTLOGGER_COMPONENT})

Executor = tuple[int, int]


def num_ackers(conf: dict[str, Any]) -> int:
    """``topology.acker.executors``, or workers x ``topology.ras.acker.executors.per.worker`` when unset."""
    n = conf.get("topology.acker.executors")
    if n is None:
        return int(setting(conf, "topology.workers")) * int(setting(conf, "topology.ras.acker.executors.per.worker"))
    return int(n)


def system_topology(topology: StormTopology, conf: dict[str, Any]) -> StormTopology:
    """A copy of ``topology`` with each bolt that stands for another resolved, the acker (when ackers > 0) and
    every system stream wired in."""
    from storm_py.runtime.acker import AckerBolt

    topo = StormTopology(
        {k: _shallow(v) for k, v in topology.spouts.items()}, {k: _shallow(v) for k, v in topology.bolts.items()},
        list(topology.worker_hooks),
    )
    for spec in topo.bolts.values():
        if isinstance(spec.obj, ResolvesToBolt):
            spec.obj = spec.obj.resolve_bolt(merge_component_conf(conf, spec.conf))
    for spec in topo.components().values():
        spec.streams[SYSTEM_STREAM] = (Fields("event"), False)
    _with_event_loggers(topo, conf)
    n = num_ackers(conf)
    timeout = setting(conf, "topology.message.timeout.secs")
    if n <= 0:
        return _with_metrics_consumers(topo, conf)
    for spec in topo.components().values():
        if spec.is_spout:
            spec.streams[ACK_INIT] = (Fields("id", "init-val", "spout-task"), False)
        else:
            spec.streams[ACK_ACK] = (Fields("id", "ack-val"), False)
            spec.streams[ACK_FAIL] = (Fields("id"), False)
            spec.streams[ACK_RESET_TIMEOUT] = (Fields("id"), False)
    acker = ComponentSpec(ACKER_COMPONENT, AckerBolt(), n, False)
    # with message timeouts disabled the acker never rotates, so a slow tree can still complete (Storm)
    timeouts = setting(conf, "topology.enable.message.timeouts")
    acker.conf = {"topology.tasks": n, "topology.tick.tuple.freq.secs": timeout if timeouts else None}
    acker.streams = {
        ACK_ACK: (Fields("id", "time-delta-ms"), True),
        ACK_FAIL: (Fields("id", "time-delta-ms"), True),
        ACK_RESET_TIMEOUT: (Fields("id", "time-delta-ms"), True),
    }
    by_id = Fields("id")
    for cid, spec in topo.components().items():
        if spec.is_spout:
            acker.inputs[(cid, ACK_INIT)] = Grouping(FIELDS, by_id)
            for stream in (ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT):
                spec.inputs[(ACKER_COMPONENT, stream)] = Grouping(DIRECT)
        else:
            for stream in (ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT):
                acker.inputs[(cid, stream)] = Grouping(FIELDS, by_id)
    acker.streams[SYSTEM_STREAM] = (Fields("event"), False)
    topo.bolts[ACKER_COMPONENT] = acker
    return _with_metrics_consumers(topo, conf)


def _with_event_loggers(topo: StormTopology, conf: dict[str, Any]) -> None:
    """Add ``topology.eventlogger.executors`` ``__eventlogger`` tasks fed by every component's ``__eventlog``
    stream, grouped by component (Storm's wiring); with none, nothing is added and debug sampling has no target."""
    n = int(setting(conf, "topology.eventlogger.executors"))
    if n <= 0:
        return
    sources = list(topo.components())
    for spec in topo.components().values():
        spec.streams[EVENTLOG_STREAM] = (Fields(*EVENTLOG_FIELDS), False)
    bolt = ComponentSpec(EVENTLOGGER_COMPONENT, EventLoggerBolt(), n, False)
    bolt.conf = {"topology.tasks": n}
    bolt.inputs = {(cid, EVENTLOG_STREAM): Grouping(FIELDS, Fields("component-id")) for cid in sources}
    bolt.streams = {SYSTEM_STREAM: (Fields("event"), False)}
    topo.bolts[EVENTLOGGER_COMPONENT] = bolt


def _with_metrics_consumers(topo: StormTopology, conf: dict[str, Any]) -> StormTopology:
    """Add a ``__metrics_<class>`` bolt per registered consumer, fed (shuffled) by every component's
    ``__metrics`` stream; without consumers nothing is added."""
    regs = registrations(conf)
    if not regs:
        return topo
    sources = list(topo.components())
    for spec in topo.components().values():
        spec.streams[METRICS_STREAM] = (Fields("task-info", "data-points"), False)
    for reg in regs:
        bolt = ComponentSpec(reg.component_id, MetricsConsumerBolt(reg), reg.parallelism, False)
        bolt.conf = {"topology.tasks": reg.parallelism}
        bolt.inputs = {(cid, METRICS_STREAM): Grouping(SHUFFLE) for cid in sources}
        bolt.streams = {SYSTEM_STREAM: (Fields("event"), False)}
        topo.bolts[reg.component_id] = bolt
    return topo


def _shallow(spec: ComponentSpec) -> ComponentSpec:
    """A copy whose inputs, conf and streams can be extended without touching the user's topology."""
    return ComponentSpec(
        spec.id, spec.obj, spec.parallelism, spec.is_spout, dict(spec.inputs), dict(spec.conf), dict(spec.streams),
        dict(spec.columnar),
    )


@dataclass
class TaskLayout:
    """Task ids per component and executors (contiguous task ranges) per component."""

    component_tasks: dict[str, list[int]]
    component_executors: dict[str, list[Executor]]

    def task_to_component(self) -> dict[int, str]:
        """Reverse map of task id to component id."""
        return {t: c for c, ts in self.component_tasks.items() for t in ts}

    def all_executors(self) -> list[tuple[str, Executor]]:
        """Every (component, executor) in component-id order."""
        return [(c, e) for c in sorted(self.component_executors) for e in self.component_executors[c]]


def split_tasks(tasks: list[int], executors: int) -> list[Executor]:
    """Split sorted task ids into ``executors`` contiguous ranges as evenly as possible (Storm's partitioning)."""
    if not tasks:
        return []
    executors = max(1, min(executors, len(tasks)))
    base, extra = divmod(len(tasks), executors)
    out: list[Executor] = []
    i = 0
    for k in range(executors):
        size = base + (1 if k < extra else 0)
        out.append((tasks[i], tasks[i + size - 1]))
        i += size
    return out


def component_counts(topology: StormTopology, conf: dict[str, Any] | None = None) -> dict[str, tuple[int, int]]:
    """``{component: (tasks, executors)}``; a topology-level ``topology.max.task.parallelism`` caps both."""
    cap = (conf or {}).get("topology.max.task.parallelism")
    out: dict[str, tuple[int, int]] = {}
    for cid, spec in topology.components().items():
        tasks, execs = spec.num_tasks(), spec.num_executors()
        if cap is not None and cid not in SYSTEM_IDS:
            tasks, execs = min(tasks, int(cap)), min(execs, int(cap))
        out[cid] = (tasks, execs)
    return out


def layout_tasks(
    topology: StormTopology,
    executor_counts: dict[str, int] | None = None,
    conf: dict[str, Any] | None = None,
) -> TaskLayout:
    """Assign task ids 1.. in sorted component-id order and split them over executors.

    ``executor_counts`` overrides the parallelism of some components (rebalance); tasks never change.
    """
    return layout_from_counts(component_counts(topology, conf), executor_counts)


def layout_from_counts(
    counts: dict[str, tuple[int, int]], executor_counts: dict[str, int] | None = None
) -> TaskLayout:
    """The layout of :func:`layout_tasks` from ``{component: (tasks, executors)}`` alone."""
    tasks: dict[str, list[int]] = {}
    nxt = 1
    for cid in sorted(counts):
        n = counts[cid][0]
        tasks[cid] = list(range(nxt, nxt + n))
        nxt += n
    execs: dict[str, list[Executor]] = {}
    for cid in sorted(counts):
        count = (executor_counts or {}).get(cid, counts[cid][1])
        execs[cid] = split_tasks(tasks[cid], count)
    return TaskLayout(tasks, execs)
