"""This module owns the bucket timing of registered metrics: which tasks' metrics are read at ``now``.

Pure: an executor adds each task's ``register_metric`` entries to a :class:`MetricsSchedule` and asks it, with
``now``, for the buckets that ended; the schedule reads those metrics (``get_value_and_reset``) and returns data
points to send.  :func:`builtin_points` turns an executor's counters into Storm's built-in metrics
(``__emit-count``, ``__ack-count``, ``__execute-latency`` ...), reported every
``topology.builtin.metrics.bucket.size.secs``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.metrics import stats

log = logging.getLogger(__name__)


@dataclass
class _Bucket:
    secs: float
    next_at: float
    metrics: dict[int, dict[str, Any]] = field(default_factory=dict)  # task -> name -> metric


@dataclass
class Due:
    """The data points of one task for a bucket that ended."""

    task: int
    bucket_secs: float
    points: list[tuple[str, Any]]


def check_registration(name: Any, metric: Any, bucket_secs: Any) -> float:
    """The bucket length of a valid registration; ``ValueError``/``TypeError`` name what is wrong."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a metric name must be a non-empty string, got {name!r}")
    if not callable(getattr(metric, "get_value_and_reset", None)):
        raise TypeError(f"metric {name!r} has no get_value_and_reset(): {type(metric).__name__}")
    if isinstance(bucket_secs, bool) or not isinstance(bucket_secs, (int, float)) or not bucket_secs > 0:
        raise ValueError(f"metric {name!r} needs a positive bucket_secs, got {bucket_secs!r}")
    return float(bucket_secs)


class MetricsSchedule:
    """The registered metrics of an executor's tasks, grouped by bucket length."""

    def __init__(self, now: float) -> None:
        self.start = now
        self._buckets: dict[float, _Bucket] = {}

    def add(self, task: int, name: str, metric: Any, bucket_secs: float) -> None:
        """Report ``metric`` of ``task`` every ``bucket_secs`` from the schedule's start."""
        secs = check_registration(name, metric, bucket_secs)
        bucket = self._buckets.get(secs)
        if bucket is None:
            bucket = self._buckets[secs] = _Bucket(secs, self.start + secs)
        bucket.metrics.setdefault(task, {})[name] = metric

    def __bool__(self) -> bool:
        return bool(self._buckets)

    @property
    def next_at(self) -> float:
        """When the next bucket ends (infinity when nothing is registered)."""
        return min((b.next_at for b in self._buckets.values()), default=float("inf"))

    def due(self, now: float) -> list[Due]:
        """Read the metrics of every bucket that ended by ``now`` (a late call reads once, then re-aligns)."""
        out: list[Due] = []
        for bucket in self._buckets.values():
            if now < bucket.next_at:
                continue
            while bucket.next_at <= now:
                bucket.next_at += bucket.secs
            for task, metrics in bucket.metrics.items():
                points = []
                for name, metric in metrics.items():
                    try:
                        value = metric.get_value_and_reset()
                    except Exception:
                        log.exception("metric %s of task %d failed to report", name, task)
                        continue
                    if value is not None:
                        points.append((name, value))
                out.append(Due(task, bucket.secs, points))
        return out


def _delta(prev: Mapping[str, float], cur: Mapping[str, float], key: str) -> float:
    d = cur.get(key, 0.0) - prev.get(key, 0.0)
    return d if d >= 0 else cur.get(key, 0.0)


def builtin_points(
    prev: Mapping[str, float], cur: Mapping[str, float], gauges: Mapping[str, float], is_spout: bool
) -> list[tuple[str, Any]]:
    """Storm's built-in metrics of the bucket between two cumulative counter snapshots of an executor."""
    deltas = {k: _delta(prev, cur, k) for k in cur}
    f = stats.ExecutorFigures.of(deltas, 0.0)
    points: list[tuple[str, Any]] = [
        ("__emit-count", {k: int(v) for k, v in f.emitted.items()}),
        ("__transfer-count", {k: int(v) for k, v in f.transferred.items()}),
        ("__ack-count", int(f.acked)),
        ("__fail-count", int(f.failed)),
        ("__timeout-count", int(f.timed_out)),
        ("__reported-error-count", int(f.reported_errors)),
    ]
    if is_spout:
        points += [
            ("__complete-latency", round(f.complete_latency_ms, 3)),
            ("__skipped-max-spout-ms", int(f.skipped_max_spout_ms)),
            ("__skipped-backpressure-ms", int(f.skipped_backpressure_ms)),
        ]
    else:
        points += [
            ("__execute-count", {k: int(v) for k, v in f.executed.items()}),
            ("__execute-latency", {k: round(f.execute_ms.get(k, 0.0) / v, 3) for k, v in f.executed.items() if v}),
            ("__process-latency", round(f.process_latency_ms, 3)),
        ]
    points.append(("receive_queue", {"population": int(gauges.get(stats.QUEUE_POPULATION, 0))}))
    return points
