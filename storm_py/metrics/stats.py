"""This module owns the arithmetic of Storm's executor statistics: counter names, latencies, capacity, roll-ups.

Workers report each executor as an *executor report* (a JSON object, cumulative since the executor started)::

    {"component": "split", "tasks": [3, 4], "type": "bolt", "uptime": 12.5,
     "counters": {"emitted:default": 120, "executed:spout:default": 40, "execute_ms:spout:default": 8.2, ...},
     "gauges": {"receive_queue.population": 3}}

Counter names are built by the functions below (``emitted:<stream>``, ``executed:<component>:<stream>`` ...).
The functions here turn reports (and, for the rolling windows, their :class:`~storm_py.metrics.windows.ExecutorRollup`)
into Storm's REST figures: ``executeLatency = execute_ms / executed``, ``capacity = executed x executeLatency /
window time`` (the share of the window the executor spent executing), ``completeLatency = complete_ms / acked``.
All pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.metrics.windows import ALL_TIME, ExecutorRollup

ACKED = "acked"
FAILED = "failed"
TIMED_OUT = "timed_out"
COMPLETE_MS = "complete_ms"
PROCESS_MS = "process_ms"
PROCESSED = "processed"
SKIPPED_MAX_SPOUT_MS = "skipped_max_spout_ms"
SKIPPED_BACKPRESSURE_MS = "skipped_backpressure_ms"
SKIPPED_INACTIVE_MS = "skipped_inactive_ms"
REPORTED_ERRORS = "reported_errors"
#: partitions of one spout executor's lag report a worker sends, and nimbus reads, at most
MAX_LAG_PARTITIONS = 4096
#: user metric rows (``[task, kind, name, value]``) one executor report carries, and the kinds they may have
MAX_USER_ROWS = 512
USER_KINDS = frozenset({
    "metric", "counter_total", "gauge", "histogram_count", "histogram_sum", "histogram_min", "histogram_max",
    "meter_total", "meter_mean_rate",
})


def numeric_points(name: str, value: Any) -> list[tuple[str, float]]:
    """A ``register_metric`` value as numbers: a number as itself, a map's numeric entries as ``name.key``
    (one level, as Storm's consumers flatten them); anything else gives nothing."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [(name, float(value))]
    if isinstance(value, Mapping):
        return [(f"{name}.{k}", float(v)) for k, v in value.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return []
QUEUE_POPULATION = "receive_queue.population"
PENDING = "pending"

SPOUT, BOLT = "spout", "bolt"


def emitted_key(stream: str) -> str:
    """Tuples emitted on ``stream``."""
    return "emitted:" + stream


def transferred_key(stream: str) -> str:
    """Tuples sent on ``stream`` (one per target task)."""
    return "transferred:" + stream


def executed_key(component: str, stream: str) -> str:
    """Input tuples of ``component``'s ``stream`` executed."""
    return f"executed:{component}:{stream}"


def execute_ms_key(component: str, stream: str) -> str:
    """Milliseconds spent executing input tuples of ``component``'s ``stream``."""
    return f"execute_ms:{component}:{stream}"


def _split(counters: Mapping[str, float], prefix: str) -> dict[str, float]:
    n = len(prefix) + 1
    return {k[n:]: v for k, v in counters.items() if k.startswith(prefix) and k[len(prefix)] == ":"}


def _ratio(total: float, count: float) -> float:
    return total / count if count else 0.0


@dataclass
class ExecutorFigures:
    """One executor's figures over a window (numbers, not yet Storm's strings)."""

    emitted: dict[str, float] = field(default_factory=dict)
    transferred: dict[str, float] = field(default_factory=dict)
    executed: dict[str, float] = field(default_factory=dict)  # "component:stream" -> count
    execute_ms: dict[str, float] = field(default_factory=dict)
    acked: float = 0.0
    failed: float = 0.0
    timed_out: float = 0.0
    complete_ms: float = 0.0
    process_ms: float = 0.0  # sampled: inputs from their batch's start to their ack
    processed: float = 0.0
    skipped_max_spout_ms: float = 0.0
    skipped_backpressure_ms: float = 0.0
    skipped_inactive_ms: float = 0.0
    reported_errors: float = 0.0
    span_secs: float = 0.0

    @classmethod
    def of(cls, counters: Mapping[str, float], span_secs: float) -> ExecutorFigures:
        """The figures of a window's counter sums."""
        return cls(
            emitted=_split(counters, "emitted"),
            transferred=_split(counters, "transferred"),
            executed=_split(counters, "executed"),
            execute_ms=_split(counters, "execute_ms"),
            acked=counters.get(ACKED, 0.0),
            failed=counters.get(FAILED, 0.0),
            timed_out=counters.get(TIMED_OUT, 0.0),
            complete_ms=counters.get(COMPLETE_MS, 0.0),
            process_ms=counters.get(PROCESS_MS, 0.0),
            processed=counters.get(PROCESSED, 0.0),
            skipped_max_spout_ms=counters.get(SKIPPED_MAX_SPOUT_MS, 0.0),
            skipped_backpressure_ms=counters.get(SKIPPED_BACKPRESSURE_MS, 0.0),
            skipped_inactive_ms=counters.get(SKIPPED_INACTIVE_MS, 0.0),
            reported_errors=counters.get(REPORTED_ERRORS, 0.0),
            span_secs=span_secs,
        )

    @property
    def total_emitted(self) -> float:
        return sum(self.emitted.values())

    @property
    def total_transferred(self) -> float:
        return sum(self.transferred.values())

    @property
    def total_executed(self) -> float:
        return sum(self.executed.values())

    @property
    def total_execute_ms(self) -> float:
        return sum(self.execute_ms.values())

    @property
    def execute_latency_ms(self) -> float:
        """Average milliseconds per executed tuple."""
        return _ratio(self.total_execute_ms, self.total_executed)

    @property
    def process_latency_ms(self) -> float:
        """Average milliseconds from an input's arrival to its ack: sampled when the bolt acks through its
        collector, else (basic bolts, acked as ``execute`` returns) the execute latency."""
        return _ratio(self.process_ms, self.processed) if self.processed else self.execute_latency_ms

    @property
    def complete_latency_ms(self) -> float:
        """Average milliseconds from a spout emit to the tree's ack."""
        return _ratio(self.complete_ms, self.acked)

    @property
    def capacity(self) -> float:
        """Share of the window spent executing: executed x execute latency / window time (Storm's capacity)."""
        return capacity(self.total_executed, self.execute_latency_ms, self.span_secs)


def capacity(executed: float, execute_latency_ms: float, window_secs: float) -> float:
    """Storm's capacity: ``executed x execute latency (ms) / window (ms)``; 0 for an empty window."""
    if window_secs <= 0:
        return 0.0
    return executed * execute_latency_ms / (window_secs * 1000.0)


def executor_figures(
    report: Mapping[str, Any], rollup: ExecutorRollup | None, window: str, now: float
) -> ExecutorFigures:
    """An executor's figures over ``window``: all time from its report, other windows from its rollup."""
    uptime = float(report.get("uptime", 0.0))
    if window == ALL_TIME or rollup is None:
        if window != ALL_TIME:
            return ExecutorFigures()
        return ExecutorFigures.of(report.get("counters", {}), uptime)
    values = rollup.values(window, now)
    return ExecutorFigures.of(values.counters, values.span_secs)


def latency_text(ms: float) -> str:
    """Storm's latency format: a string with three decimals."""
    return f"{ms:.3f}"


def _sum_into(target: dict[str, float], source: Mapping[str, float]) -> None:
    for k, v in source.items():
        target[k] = target.get(k, 0.0) + v


@dataclass
class ComponentFigures:
    """Figures of several executors (a component, or a topology) summed; capacity is the busiest executor's."""

    figures: ExecutorFigures = field(default_factory=ExecutorFigures)
    capacity: float = 0.0
    executors: int = 0

    def add(self, fig: ExecutorFigures) -> None:
        total = self.figures
        for name in ("emitted", "transferred", "executed", "execute_ms"):
            _sum_into(getattr(total, name), getattr(fig, name))
        for name in ("acked", "failed", "timed_out", "complete_ms", "process_ms", "processed", "skipped_max_spout_ms",
                     "skipped_backpressure_ms", "skipped_inactive_ms", "reported_errors"):
            setattr(total, name, getattr(total, name) + getattr(fig, name))
        total.span_secs = max(total.span_secs, fig.span_secs)
        self.capacity = max(self.capacity, fig.capacity)
        self.executors += 1


def combine(figures: Iterable[ExecutorFigures]) -> ComponentFigures:
    """The sum of executors' figures."""
    out = ComponentFigures()
    for fig in figures:
        out.add(fig)
    return out


def _int(x: float) -> int:
    return round(x)


def spout_fields(c: ComponentFigures) -> dict[str, Any]:
    """A spout's figures under Storm's names (plus ``timedOut``)."""
    f = c.figures
    return {
        "emitted": _int(f.total_emitted),
        "transferred": _int(f.total_transferred),
        "acked": _int(f.acked),
        "failed": _int(f.failed),
        "timedOut": _int(f.timed_out),
        "completeLatency": latency_text(f.complete_latency_ms),
        "skippedMaxSpoutMs": _int(f.skipped_max_spout_ms),
        "skippedBackpressureMs": _int(f.skipped_backpressure_ms),
    }


def bolt_fields(c: ComponentFigures) -> dict[str, Any]:
    """A bolt's figures under Storm's names (``capacity`` of its busiest executor)."""
    f = c.figures
    latency = f.execute_latency_ms
    return {
        "emitted": _int(f.total_emitted),
        "transferred": _int(f.total_transferred),
        "executed": _int(f.total_executed),
        "acked": _int(f.acked),
        "failed": _int(f.failed),
        "timedOut": _int(f.timed_out),
        "executeLatency": latency_text(latency),
        "processLatency": latency_text(f.process_latency_ms),
        "capacity": f"{c.capacity:.3f}",
    }


def output_stats(c: ComponentFigures, is_spout: bool) -> list[dict[str, Any]]:
    """Storm's ``outputStats`` rows: per output stream, emitted and transferred (spouts: acks on ``default``)."""
    f = c.figures
    rows = []
    for stream in sorted(set(f.emitted) | set(f.transferred)):
        row: dict[str, Any] = {
            "stream": stream,
            "emitted": _int(f.emitted.get(stream, 0.0)),
            "transferred": _int(f.transferred.get(stream, 0.0)),
        }
        if is_spout:
            row.update({"acked": _int(f.acked), "failed": _int(f.failed), "timedOut": _int(f.timed_out),
                        "completeLatency": latency_text(f.complete_latency_ms)})
        rows.append(row)
    return rows


def input_stats(c: ComponentFigures) -> list[dict[str, Any]]:
    """Storm's ``inputStats`` rows of a bolt: per source component and stream, executed and execute latency."""
    f = c.figures
    rows = []
    for key in sorted(f.executed):
        component, _, stream = key.rpartition(":")
        executed = f.executed[key]
        latency = _ratio(f.execute_ms.get(key, 0.0), executed)
        process = _ratio(f.process_ms, f.processed) if f.processed else latency  # sampled per executor
        rows.append({
            "component": component,
            "encodedComponentId": component,
            "stream": stream,
            "executed": _int(executed),
            "executeLatency": latency_text(latency),
            "processLatency": latency_text(process),
        })
    return rows


def stream_rates(c: ComponentFigures) -> dict[str, float]:
    """Tuples per second executed from each ``component:stream`` input over the figures' span."""
    f = c.figures
    if f.span_secs <= 0:
        return {k: 0.0 for k in f.executed}
    return {k: v / f.span_secs for k, v in f.executed.items()}
