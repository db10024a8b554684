"""This module owns the autoscaler's reading of a topology's metrics: executor reports in, one period's sample out.

Workers' heartbeats carry each executor's counters since it started (:mod:`storm_py.metrics.reports`);
:class:`PeriodSampler` keeps the counters it saw last per executor and turns the difference into a
:class:`~storm_py.nimbus.autoscale_policy.TopologySample`: per bolt the tuples executed per second, the
executor-seconds spent executing per second and the busiest executor's capacity; for the spouts the records
emitted per second, the share of the time they were held back (backpressure, ``topology.max.spout.pending``) and
their Kafka lag.  No sample is given until every executor the topology should have has reported twice (after a
start or a rebalance).  Pure: fed reports and times, it reads nothing itself.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from storm_py.metrics.reports import Report, is_system
from storm_py.metrics.stats import ExecutorFigures
from storm_py.nimbus.autoscale_policy import BoltSample, TopologySample


@dataclass(frozen=True)
class _Seen:
    time: float
    uptime: float
    counters: Mapping[str, float]


def _delta(now: Report, before: _Seen) -> ExecutorFigures | None:
    """An executor's figures between two of its reports (None when it restarted or nothing passed)."""
    span = now.time_secs - before.time
    if span <= 0 or now.uptime < before.uptime:
        return None
    diff = {k: v - before.counters.get(k, 0.0) for k, v in now.counters.items()}
    if any(v < 0 for v in diff.values()):
        return None  # counters went back: a restarted executor
    return ExecutorFigures.of(diff, span)


class PeriodSampler:
    """One topology's period samples (see the module docstring)."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def reset(self) -> None:
        """Forget every executor: the next sample needs two fresh reports of each."""
        self._seen.clear()

    def sample(self, found: Iterable[Report], executors: Mapping[str, int], spouts: Collection[str],
               wall: float) -> TopologySample | None:
        """The sample of the reports ``found`` now, against the ones seen at the last call.

        Args:
            found: the topology's executor reports (from its workers' heartbeats).
            executors: how many executors each component should have (its storm base).
            spouts: the spouts' ids.
            wall: the wall time of the sample (epoch seconds).
        """
        current = {r.book_key: r for r in found if not is_system(r.component)}
        deltas: dict[str, list[tuple[Report, ExecutorFigures]]] = {}
        for key, report in current.items():
            before = self._seen.get(key)
            figures = _delta(report, before) if before is not None else None
            if figures is not None:
                deltas.setdefault(report.component, []).append((report, figures))
        self._seen = {k: self._seen[k] if _same(self._seen.get(k), r) else _Seen(r.time_secs, r.uptime,
                                                                                 dict(r.counters))
                      for k, r in current.items()}
        wanted = {c: n for c, n in executors.items() if not is_system(c)}
        if any(len(deltas.get(c, [])) != n for c, n in wanted.items()):
            return None
        bolts = {c: _bolt(rows) for c, rows in deltas.items() if c not in spouts}
        spout_rows = [row for c, rows in deltas.items() if c in spouts for row in rows]
        rate = sum(sum(v for s, v in f.emitted.items() if not s.startswith("__")) / f.span_secs
                   for _, f in spout_rows)
        held = len(spout_rows) * 1000.0
        lags = [r.lag for r, _ in spout_rows if r.lag is not None]
        return TopologySample(
            time=wall,
            bolts=bolts,
            spout_rate=rate,
            lag=sum(p.lag for lag in lags for p in lag.partitions) if lags else None,
            backpressure=sum(f.skipped_backpressure_ms / f.span_secs for _, f in spout_rows) / held if held else 0.0,
            pending_full=sum(f.skipped_max_spout_ms / f.span_secs for _, f in spout_rows) / held if held else 0.0,
        )


def _same(seen: _Seen | None, report: Report) -> bool:
    """Whether ``report`` is the one seen already (its worker has not heartbeaten since)."""
    return seen is not None and seen.time == report.time_secs


def _bolt(rows: list[tuple[Report, ExecutorFigures]]) -> BoltSample:
    executed = sum(f.total_executed / f.span_secs for _, f in rows)
    busy = [min(1.0, f.total_execute_ms / 1000.0 / f.span_secs) for _, f in rows]
    ms = sum(f.total_execute_ms for _, f in rows)
    count = sum(f.total_executed for _, f in rows)
    return BoltSample(
        executors=len(rows),
        executed_per_sec=executed,
        busy=sum(busy),
        capacity=max(busy, default=0.0),
        execute_latency_ms=ms / count if count else 0.0,
    )
