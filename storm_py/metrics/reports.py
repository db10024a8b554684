"""This module owns the executor reports of a topology's heartbeats and their statistics over Storm's windows.

Heartbeats come from the cluster state and are not trusted: :func:`reports` reads each executor report (see
:mod:`storm_py.metrics.stats`) into a validated :class:`Report`, a malformed one skipped.  :func:`observe` feeds
them into a :class:`~storm_py.metrics.windows.StatsBook`'s rolling windows; :func:`figures` and
:func:`by_component` give an executor's and each component's figures over a window, :func:`prometheus_series`
the per-component series of ``/metrics``.  A :class:`TopologyReading` is what nimbus read of one live topology,
for the pages the UI shapes from it.  Pure functions; nothing here shapes JSON.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.cluster_state.models import Assignment, ErrorInfo, StormBase, WorkerHeartbeat
from storm_py.metrics import stats
from storm_py.metrics.prometheus import ComponentSeries
from storm_py.metrics.stats import ComponentFigures, ExecutorFigures
from storm_py.metrics.windows import ALL_TIME, StatsBook

NodePort = tuple[str, int]
Beats = Mapping[NodePort, WorkerHeartbeat]


#: counters read of one executor report at most (streams x inputs of one executor; a bound on what a hostile
#: heartbeat can make nimbus keep)
MAX_COUNTERS = 4096
MAX_OFFSET = 2**63 - 1


def _numbers(raw: Any) -> dict[str, float] | None:
    if not isinstance(raw, Mapping):
        return None
    out: dict[str, float] = {}
    for k, v in raw.items():
        if isinstance(k, str) and len(k) <= 512 and isinstance(v, (int, float)) and not isinstance(v, bool):
            out[k] = float(v)
            if len(out) >= MAX_COUNTERS:
                break
    return out


@dataclass(frozen=True)
class PartitionLag:
    """One partition a spout reads: its committed offset and its log end (the next offset to be written)."""

    topic: str
    partition: int
    committed: int
    head: int

    @property
    def lag(self) -> int:
        return max(0, self.head - self.committed)


@dataclass
class SpoutLag:
    """An executor's lag report as read from a heartbeat (validated)."""

    spout_type: str
    partitions: list[PartitionLag]
    records_per_sec: float


def _int_in(x: Any, low: int, high: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and low <= x <= high


def _lag(raw: Any) -> SpoutLag | None:
    """A lag report (``{"type", "partitions": [[topic, partition, committed, head]], "recordsPerSec"}``) with
    malformed rows left out and at most :data:`~storm_py.metrics.stats.MAX_LAG_PARTITIONS` read; ``None`` when
    it is not one."""
    if not isinstance(raw, Mapping):
        return None
    kind, rows, rate = raw.get("type"), raw.get("partitions"), raw.get("recordsPerSec", 0.0)
    if not isinstance(kind, str) or not 0 < len(kind) <= 32 or not isinstance(rows, list):
        return None
    parts = [
        PartitionLag(row[0], row[1], row[2], row[3]) for row in rows[:stats.MAX_LAG_PARTITIONS]
        if isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and 0 < len(row[0]) <= 255
        and _int_in(row[1], 0, 2**31 - 1) and _int_in(row[2], -1, MAX_OFFSET) and _int_in(row[3], 0, MAX_OFFSET)
    ]
    ok = isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 <= rate < float("inf")
    return SpoutLag(kind, parts, float(rate) if ok else 0.0)


@dataclass
class Report:
    """One executor's report as read from a heartbeat (validated)."""

    node: str
    port: int
    key: str
    component: str
    tasks: list[int]
    is_spout: bool
    uptime: float
    counters: dict[str, float]
    gauges: dict[str, float]
    time_secs: float
    latency_samples: list[float]
    lag: SpoutLag | None = None
    #: user metrics: ``(task, kind, name, value)`` (see :func:`_user_rows`)
    user: list[tuple[int, str, str, float]] = field(default_factory=list)

    @property
    def book_key(self) -> str:
        """The rollup's key: the executor in its worker slot (moving to another slot starts afresh)."""
        return f"{self.node}:{self.port}/{self.key}"

    @property
    def executor_id(self) -> str:
        """Storm's executor id ``[start-end]``."""
        return f"[{self.tasks[0]}-{self.tasks[-1]}]" if self.tasks else "[]"


def _user_rows(raw: Any) -> list[tuple[int, str, str, float]]:
    """The well-formed ``[task, kind, name, value]`` rows of a report's user metrics (a known kind, a name of at
    most 200 characters, a finite number), at most :data:`stats.MAX_USER_ROWS`."""
    if not isinstance(raw, list):
        return []
    out = []
    for row in raw[:stats.MAX_USER_ROWS]:
        if not isinstance(row, list) or len(row) != 4:
            continue
        task, kind, name, value = row
        if (type(task) is int and kind in stats.USER_KINDS and isinstance(name, str) and 0 < len(name) <= 200
                and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
            out.append((task, str(kind), name, float(value)))
    return out


def reports(beats: Beats) -> list[Report]:
    """Every well-formed executor report of the heartbeats."""
    out = []
    for (node, port), hb in sorted(beats.items()):
        executors = (hb.stats or {}).get("executors")
        if not isinstance(executors, Mapping):
            continue
        for key, raw in executors.items():
            if not isinstance(raw, Mapping) or not isinstance(raw.get("component"), str):
                continue
            counters = _numbers(raw.get("counters"))
            if counters is None:
                continue
            tasks = raw.get("tasks")
            task_list = [int(t) for t in tasks if isinstance(t, int)] if isinstance(tasks, list) else []
            uptime = raw.get("uptime", hb.uptime_secs)
            samples = raw.get("latency_samples")
            sample_list = [float(x) for x in samples[:1000] if isinstance(x, (int, float))] if isinstance(
                samples, list) else []
            out.append(Report(
                node, port, str(key), raw["component"], task_list, raw.get("type") == stats.SPOUT,
                float(uptime) if isinstance(uptime, (int, float)) else 0.0, counters,
                _numbers(raw.get("gauges")) or {}, hb.time_secs, sample_list, _lag(raw.get("lag")),
                _user_rows(raw.get("user")),
            ))
    return out


def observe(book: StatsBook, topology_id: str, beats: Beats) -> list[Report]:
    """Feed the heartbeats' reports into the book's windows; return the reports."""
    found = reports(beats)
    book.observe(topology_id, {r.book_key: (r.time_secs, r.counters) for r in found},
                 {r.book_key: r.time_secs - r.uptime for r in found})
    return found


def figures(book: StatsBook, topology_id: str, report: Report, window: str, now: float) -> ExecutorFigures:
    """An executor's figures over ``window``."""
    if window == ALL_TIME:
        return ExecutorFigures.of(report.counters, report.uptime)
    values = book.values(topology_id, report.book_key, window, now)
    if values is None:
        return ExecutorFigures()
    return ExecutorFigures.of(values.counters, values.span_secs)


def by_component(
    book: StatsBook, topology_id: str, found: Iterable[Report], window: str, now: float
) -> dict[str, list[tuple[Report, ExecutorFigures]]]:
    """Each component's executors with their figures over ``window``."""
    out: dict[str, list[tuple[Report, ExecutorFigures]]] = {}
    for r in found:
        out.setdefault(r.component, []).append((r, figures(book, topology_id, r, window, now)))
    return out


def combined(rows: Iterable[tuple[Report, ExecutorFigures]]) -> ComponentFigures:
    """The sum of executors' figures."""
    return stats.combine(f for _, f in rows)


#: the heartbeat gauges of managed state's checkpoint spout: last committed txid, when it committed (wall secs)
CHECKPOINT_TXID = "checkpoint.txid"
CHECKPOINT_COMMITTED_AT = "checkpoint.committed.wall"
CHECKPOINT_AGE = "checkpoint.age.secs"


def is_system(component: str) -> bool:
    """Storm's system components (``__acker``, ``__system``, ``__metrics_*``) and managed state's checkpoint
    spout (``$checkpointspout``)."""
    return component.startswith(("__", "$"))


@dataclass(frozen=True)
class TopologyReading:
    """What nimbus read of one live topology at ``now`` (wall secs): its records, errors and executor reports
    (already fed into ``book``), and the scheduler's view of its workers."""

    topology_id: str
    base: StormBase
    assignment: Assignment | None
    errors: Mapping[str, list[ErrorInfo]]
    reports: list[Report]
    book: StatsBook
    now: float
    #: the workers the scheduler would give with slots to spare, and why fewer run ("" when none are missing)
    requested_workers: int
    scheduler_info: str

    @property
    def workers(self) -> int:
        """The worker slots the topology's executors are assigned to."""
        return len(set(self.assignment.executor_node_port.values())) if self.assignment else 0


def prometheus_series(
    book: StatsBook, topology_id: str, base: StormBase, found: list[Report], now: float
) -> dict[str, ComponentSeries]:
    """Per component: all-time counters, the 10-minute window and summed gauges, for ``/metrics``."""
    all_time = by_component(book, topology_id, found, ALL_TIME, now)
    recent = by_component(book, topology_id, found, "600", now)
    spout_ids = set(base.spout_ids)
    out = {}
    for cid, rows in all_time.items():
        gauges: dict[str, float] = {}
        for r, _ in rows:
            for k, v in r.gauges.items():
                gauges[k] = gauges.get(k, 0.0) + v
        if CHECKPOINT_COMMITTED_AT in gauges:
            gauges[CHECKPOINT_AGE] = max(0.0, now - gauges[CHECKPOINT_COMMITTED_AT])
        lag = {(p.topic, p.partition): p.lag for r, _ in rows if r.lag is not None for p in r.lag.partitions}
        rate = sum(r.lag.records_per_sec for r, _ in rows if r.lag is not None)
        out[cid] = ComponentSeries(
            cid in spout_ids or any(r.is_spout for r, _ in rows), combined(rows), combined(recent.get(cid, [])),
            gauges, lag, rate if any(r.lag is not None for r, _ in rows) else None,
            [row for r, _ in rows for row in r.user],
        )
    return out
