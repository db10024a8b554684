"""This module owns the UI's time series: a topology's or component's rates and latency per bucket of 10 minutes.

Pure: read from the buckets the :class:`~storm_py.metrics.windows.StatsBook` keeps for the 10-minute window (20
buckets of 30 s), summed over the executors chosen.  Each point is a bucket: emitted, acked, failed and timed-out
tuples per second (acks, fails and timeouts of spouts: a topology's come from its spouts, as in its stats),
the complete latency (spouts) and the execute latency (bolts) in ms, ``None`` where no tuple was acked or
executed.  The newest bucket is still filling and the oldest may begin before the executors did: their rates are over
the seconds they cover.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from storm_py.metrics import stats
from storm_py.metrics.reports import Report, is_system
from storm_py.metrics.windows import BUCKETS, StatsBook

#: the window the series come from
SERIES_WINDOW = "600"
#: the newest bucket's rates are over at least this many seconds (a bucket just begun is not a spike)
MIN_SPAN_SECS = 1.0

RATES = ("emitted", "acked", "failed", "timedOut", "executed")


def _sum(total: dict[str, float], name: str, value: float) -> None:
    total[name] = total.get(name, 0.0) + value


def _add(total: dict[str, float], counters: dict[str, float], is_spout: bool) -> None:
    for key, value in counters.items():
        if key.startswith("emitted:"):
            _sum(total, "emitted", value)
        elif key.startswith("executed:"):
            _sum(total, "executed", value)
        elif key.startswith("execute_ms:"):
            _sum(total, "execute_ms", value)
    if is_spout:
        for key, name in ((stats.ACKED, "acked"), (stats.FAILED, "failed"), (stats.TIMED_OUT, "timedOut"),
                          (stats.COMPLETE_MS, "complete_ms")):
            _sum(total, name, counters.get(key, 0.0))


def series(book: StatsBook, topology_id: str, found: Iterable[Report], now: float,
           component: str | None = None) -> dict[str, Any]:
    """The points of ``component`` (all user components when None) over the last 10 minutes, oldest first."""
    mine = [r for r in found if (r.component == component if component is not None else not is_system(r.component))]
    buckets: dict[int, dict[str, float]] = {}
    bucket_secs = 600.0 / BUCKETS
    first = now
    for r in mine:
        got = book.series(topology_id, r.book_key, SERIES_WINDOW, now)
        if got is None:
            continue
        seen, bucket_secs, rows = got
        first = min(first, seen)
        for index, sums in rows:
            _add(buckets.setdefault(index, {}), sums, r.is_spout)
    end = int(now // bucket_secs)
    start = max(end - BUCKETS + 1, int(first // bucket_secs))
    points = []
    for index in range(start, end + 1):
        sums = buckets.get(index, {})
        begin = index * bucket_secs
        # the oldest bucket counts from the first report, the newest up to now
        span = max(MIN_SPAN_SECS, min(begin + bucket_secs, now) - max(begin, first))
        point: dict[str, Any] = {"time": begin}
        for name in RATES:
            point[name] = round(sums.get(name, 0.0) / span, 3)
        acked, executed = sums.get("acked", 0.0), sums.get("executed", 0.0)
        point["completeLatency"] = round(sums.get("complete_ms", 0.0) / acked, 3) if acked else None
        point["executeLatency"] = round(sums.get("execute_ms", 0.0) / executed, 3) if executed else None
        points.append(point)
    return {"window": SERIES_WINDOW, "bucketSecs": bucket_secs, "now": now, "component": component,
            "points": points}
