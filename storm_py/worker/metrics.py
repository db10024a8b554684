"""This module owns a worker's side of the metrics: executor reports for heartbeats, metrics sent every bucket.

:class:`WorkerMetrics` reads the plain counters a worker's executors keep (see
:class:`~storm_py.runtime.executor.ExecutorStats` and the per-stream counters of the tasks' routes) into the
executor reports of :mod:`storm_py.metrics.stats`, and, when the topology registers metrics consumers, runs on
the worker loop's thread as the runtime's timer: every bucket it reads the metrics tasks registered with
``register_metric`` (and Storm's built-in metrics every ``topology.builtin.metrics.bucket.size.secs``) and emits
them on each task's ``__metrics`` stream to the ``__metrics_<class>`` consumer bolts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.api.tuple import Tuple
from storm_py.config.keys import setting
from storm_py.metrics import stats
from storm_py.metrics.consumer import METRICS_STREAM, TaskInfo, registrations
from storm_py.metrics.registry import MetricsSchedule, builtin_points
from storm_py.runtime.contracts import CheckpointGaugeSource, LagReporter, layers
from storm_py.runtime.executor import Executor
from storm_py.runtime.spout_executor import SpoutExecutor
from storm_py.runtime.worker_runtime import WorkerRuntime

log = logging.getLogger(__name__)

#: how often the timer looks for metrics registered since (spouts register theirs when they open)
SCAN_SECS = 1.0
ALL_INPUTS = "(all)"


def executor_key(ex: Executor) -> str:
    """``component:[start-end]``, an executor's key in its worker's reports."""
    return f"{ex.component_id}:[{ex.task_ids[0]}-{ex.task_ids[-1]}]"


def _plain(value: Any, depth: int = 0) -> Any:
    """A metric value as plain data that crosses workers (other objects become their text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth < 4 and isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if depth < 4 and isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return str(value)


def executor_counters(rt: WorkerRuntime, ex: Executor) -> dict[str, float]:
    """An executor's cumulative counters under :mod:`storm_py.metrics.stats`' names."""
    s = ex.stats
    out: dict[str, float] = {}
    for task in ex.task_ids:
        for stream, route in rt.built_routes(task).items():
            if route.emitted:
                key = stats.emitted_key(stream)
                out[key] = out.get(key, 0) + route.emitted
            if route.transferred:
                key = stats.transferred_key(stream)
                out[key] = out.get(key, 0) + route.transferred
    for (component, stream), (count, secs) in list(s.inputs.items()):
        out[stats.executed_key(component, stream)] = count
        out[stats.execute_ms_key(component, stream)] = secs * 1000.0
    if s.executed and not s.inputs:  # executors that do not time their inputs (ackers)
        out[stats.executed_key(ALL_INPUTS, ALL_INPUTS)] = s.executed
    for key, value in (
        (stats.ACKED, s.acked), (stats.FAILED, s.failed), (stats.TIMED_OUT, s.timed_out),
        (stats.COMPLETE_MS, s.lat_sum), (stats.PROCESS_MS, s.process_secs * 1000.0),
        (stats.PROCESSED, s.process_count), (stats.SKIPPED_MAX_SPOUT_MS, s.skipped_max_spout * 1000.0),
        (stats.SKIPPED_BACKPRESSURE_MS, s.skipped_backpressure * 1000.0),
        (stats.SKIPPED_INACTIVE_MS, s.skipped_inactive * 1000.0),
    ):
        if value:
            out[key] = value
    return out


def executor_gauges(ex: Executor) -> dict[str, float]:
    """Receive-queue population (and, for spouts, pending trees) now."""
    population = sum(len(items) for _, items in list(ex.inbox))
    gauges: dict[str, float] = {stats.QUEUE_POPULATION: population}
    if isinstance(ex, SpoutExecutor):
        gauges[stats.PENDING] = len(ex.pending)
        for spout in list(ex.spouts.values()):  # the checkpoint spout of managed state reports its last commit
            if isinstance(spout, CheckpointGaugeSource):
                try:
                    gauges.update({str(k): float(v) for k, v in spout.checkpoint_gauges().items()})
                except Exception as err:  # a spout's gauges must not stop the heartbeat
                    log.warning("the checkpoint gauges of %s are left out: %r", ex.component_id, err)
    return gauges


class WorkerMetrics:
    """The metrics of one worker runtime; :meth:`install` makes it the runtime's timer when consumers exist."""

    def __init__(self, rt: WorkerRuntime, host: str, port: int, wall: Callable[[], float]) -> None:
        self.rt = rt
        self.host = host
        self.port = port
        self.wall = wall
        self.started = rt.clock.now()
        self.consumers = bool(registrations(rt.conf))
        self.builtin_secs = float(setting(rt.conf, "topology.builtin.metrics.bucket.size.secs"))
        self.schedule = MetricsSchedule(self.started)
        self._registered: set[tuple[int, str]] = set()
        self._builtin_prev: dict[str, dict[str, float]] = {}
        self._builtin_at = self.started + self.builtin_secs
        self._scan_at = self.started
        self._emitted_at: dict[str, tuple[float, int]] = {}  # per spout executor: (when, emitted) last reported
        #: the last bucket's value of each ``register_metric`` metric, by task and name (exported on /metrics)
        self._user_last: dict[int, dict[str, Any]] = {}

    # ------------------------------------------------------------------------------------------------ heartbeats

    def reports(self) -> dict[str, Any]:
        """Every executor's report (cumulative counters, gauges), for the worker's heartbeat."""
        uptime = self.rt.clock.now() - self.started
        out: dict[str, Any] = {}
        for ex in self.rt.executors:
            report = out[executor_key(ex)] = {
                "component": ex.component_id,
                "tasks": list(ex.task_ids),
                "type": stats.SPOUT if ex.is_spout else stats.BOLT,
                "uptime": round(uptime, 3),
                "counters": executor_counters(self.rt, ex),
                "gauges": executor_gauges(ex),
            }
            user = self._user_rows(ex)
            if user:
                report["user"] = user
            if ex.is_spout:  # a bounded sample of complete latencies, for percentiles
                samples = list(ex.stats.lat_samples)
                report["latency_samples"] = [round(x, 3) for x in samples[:: max(1, len(samples) // 500)]]
                if isinstance(ex, SpoutExecutor):
                    lag = self._lag(ex)
                    if lag is not None:
                        report["lag"] = lag
        return out

    def _user_rows(self, ex: Executor) -> list[list[Any]]:
        """``[task, kind, name, value]`` of the executor's user metrics: the last bucket of each
        ``register_metric`` metric (kind ``metric``; a map value gives one row per numeric entry,
        ``name.key``) and the current values of its metrics v2 (kind ``counter_total``, ``gauge``,
        ``histogram_count`` ...), at most :data:`~storm_py.metrics.stats.MAX_USER_ROWS`."""
        rows: list[list[Any]] = []
        for task in ex.task_ids:
            for name, value in list(self._user_last.get(task, {}).items()):
                rows.extend([task, "metric", key, number] for key, number in stats.numeric_points(name, value))
            context = ex.contexts.get(task)
            for name, (kind, metric) in list(context.metrics_v2.items()) if context is not None else []:
                try:
                    values = metric.values()
                except Exception as err:  # a user's gauge must not stop the heartbeat
                    log.warning("metric %r of task %d is left out: %r", name, task, err)
                    continue
                rows.extend([task, f"{kind}{suffix}", name, number] for suffix, number in values.items())
        return rows[:stats.MAX_USER_ROWS]

    def _lag(self, ex: SpoutExecutor) -> dict[str, Any] | None:
        """The executor's spouts' ``lag_report()`` (a spout reading a log, such as the Kafka spout, defines it):
        ``{"type", "partitions": [[topic, partition, committed, log head], ...], "recordsPerSec"}``, bounded;
        records/s over the time since the last heartbeat."""
        kind = ""
        rows: list[list[Any]] = []
        emitted = 0
        for task, spout in list(ex.spouts.items()):
            # the user's spout may run inside managed state's spout executor
            reporter = next((c for c in layers(spout) if isinstance(c, LagReporter)), None)
            if reporter is None:
                continue
            try:
                got = reporter.lag_report()
                kind = str(got["type"])[:32]
                rows.extend([str(t), int(p), int(c), int(h)] for t, p, c, h in got["partitions"])
                emitted += int(got["emitted"])
            except Exception as err:  # a spout's report must not stop the heartbeat
                log.warning("task %d's lag report is left out: %r", task, err)
                return None
        if not kind:
            return None
        key = executor_key(ex)
        now = self.rt.clock.now()
        then, before = self._emitted_at.get(key, (self.started, 0))
        self._emitted_at[key] = (now, emitted)
        rate = max(0.0, (emitted - before) / (now - then)) if now > then else 0.0
        return {"type": kind, "partitions": rows[:stats.MAX_LAG_PARTITIONS], "recordsPerSec": round(rate, 3)}

    # ------------------------------------------------------------------------------------------------- buckets

    def install(self) -> None:
        """Run every bucket on the worker loop (the buckets' values go to the consumers, if any, and /metrics)."""
        self.rt.timer = self.tick
        self.rt.timer_at = self.started

    def tick(self, now: float) -> float:
        """Send what is due at ``now``; return when to be called next (the runtime's timer)."""
        if now >= self._scan_at:
            self._scan()
            self._scan_at = now + SCAN_SECS
        for due in self.schedule.due(now):
            self._user_last.setdefault(due.task, {}).update(due.points)
            self._send(due.task, due.bucket_secs, due.points)
        if now >= self._builtin_at:
            while self._builtin_at <= now:
                self._builtin_at += self.builtin_secs
            self._send_builtin()
        return min(self.schedule.next_at, self._builtin_at, self._scan_at)

    def _scan(self) -> None:
        for ex in self.rt.executors:
            for task, context in list(ex.contexts.items()):
                for name, (metric, bucket_secs) in list(context.metrics.items()):
                    if (task, name) in self._registered:
                        continue
                    self._registered.add((task, name))
                    try:
                        self.schedule.add(task, name, metric, bucket_secs)
                    except (TypeError, ValueError) as err:
                        log.error("metric %r of task %d is not reported: %s", name, task, err)

    def _send_builtin(self) -> None:
        for ex in self.rt.executors:
            key = executor_key(ex)
            counters = executor_counters(self.rt, ex)
            prev = self._builtin_prev.get(key, {})
            self._builtin_prev[key] = counters
            points = builtin_points(prev, counters, executor_gauges(ex), ex.is_spout)
            self._send(ex.task_ids[0], self.builtin_secs, points)

    def _send(self, task: int, bucket_secs: float, points: list[tuple[str, Any]]) -> None:
        ex = self.rt.local_executor.get(task)
        route = self.rt.built_routes(task).get(METRICS_STREAM)
        if ex is None or route is None or not points:
            return
        info = TaskInfo(self.host, self.port, ex.component_id, task, self.wall(), bucket_secs)
        values = [info.to_list(), [[name, _plain(value)] for name, value in points]]
        for target in route.choose(task, values):
            ex.outbuf[target].append(Tuple(values, route.fields, ex.component_id, METRICS_STREAM, task, None))
