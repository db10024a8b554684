"""This module owns Storm's statistics windows: rolling sums of counters over 10 min, 3 h, 1 day and all time.

Pure cores fed with ``now``.  A :class:`RollingWindow` keeps a window's sums in a fixed number of buckets (Storm's
20 per window), so its memory is buckets x counter names whatever the tuple rate.  An :class:`ExecutorRollup`
turns an executor's cumulative counters, as its worker reports them with each heartbeat, into per-window sums;
a :class:`StatsBook` holds one rollup per live executor and forgets executors and topologies that are gone.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: Storm's windows in seconds, then the all-time window's id.
WINDOW_SECS: tuple[int, ...] = (600, 10800, 86400)
ALL_TIME = ":all-time"
WINDOWS: tuple[str, ...] = ("600", "10800", "86400", ALL_TIME)
#: buckets per rolling window (Storm's default)
BUCKETS = 20
#: an executor first reported within this many seconds of its start is counted from zero
FRESH_SECS = 60.0

Counters = Mapping[str, float]


def pretty_duration(secs: float) -> str:
    """Storm's duration format: ``"42s"``, ``"5m 58s"``, ``"2h 0m 3s"``, ``"1d 0h 0m 0s"``."""
    total = max(0, int(secs))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {seconds}s"
    if hours:
        return f"{hours}h {minutes}m {seconds}s"
    if minutes:
        return f"{minutes}m {seconds}s"
    return f"{seconds}s"


def window_pretty(window: str) -> str:
    """Storm's label of a window: ``"10m 0s"``, ``"3h 0m 0s"``, ``"1d 0h 0m 0s"``, ``"All time"``."""
    if window == ALL_TIME:
        return "All time"
    if window == "600":
        return "10m 0s"
    return pretty_duration(int(window))


def parse_window(raw: str | None) -> str:
    """The window id of a ``?window=`` parameter (absent: all time); ``ValueError`` names the bad value."""
    if raw is None or raw == "" or raw in (ALL_TIME, "all-time"):
        return ALL_TIME
    if raw in WINDOWS:
        return raw
    raise ValueError(f"unknown window {raw!r}: expected one of {', '.join(WINDOWS)}")


class RollingWindow:
    """Sums of counters over the last ``length`` seconds, kept in ``buckets`` buckets of ``length / buckets``.

    The sums cover between ``length - length / buckets`` and ``length`` seconds (the oldest bucket leaves
    whole, as in Storm).  Memory: at most ``buckets`` dicts of the counter names added.
    """

    __slots__ = ("_buckets", "_sums", "bucket_secs", "length", "slots")

    def __init__(self, length: float, buckets: int = BUCKETS) -> None:
        if length <= 0 or buckets <= 0:
            raise ValueError(f"a rolling window needs a positive length and bucket count, got {length}, {buckets}")
        self.length = float(length)
        self.slots = buckets
        self.bucket_secs = self.length / buckets
        self._buckets: deque[tuple[int, dict[str, float]]] = deque()
        self._sums: dict[str, float] = {}

    def _expire(self, index: int) -> None:
        buckets = self._buckets
        sums = self._sums
        while buckets and buckets[0][0] <= index - self.slots:
            _, old = buckets.popleft()
            for key, value in old.items():
                left = sums[key] - value
                if abs(left) < 1e-9:
                    del sums[key]
                else:
                    sums[key] = left

    def add(self, now: float, deltas: Counters) -> None:
        """Count ``deltas`` at time ``now`` (times only move forward; an older ``now`` lands in the newest bucket)."""
        if not deltas:
            return
        index = int(now // self.bucket_secs)
        buckets = self._buckets
        if buckets and index < buckets[-1][0]:
            index = buckets[-1][0]
        self._expire(index)
        if buckets and buckets[-1][0] == index:
            bucket = buckets[-1][1]
        else:
            bucket = {}
            buckets.append((index, bucket))
        sums = self._sums
        for key, value in deltas.items():
            bucket[key] = bucket.get(key, 0.0) + value
            sums[key] = sums.get(key, 0.0) + value

    def sums(self, now: float) -> dict[str, float]:
        """The sums over the window ending ``now``."""
        self._expire(int(now // self.bucket_secs))
        return dict(self._sums)

    def series(self, now: float) -> list[tuple[int, dict[str, float]]]:
        """The buckets still in the window ending ``now``, oldest first: ``(index, sums)``, a bucket covering
        ``index x bucket_secs`` to the next one (empty buckets left out)."""
        self._expire(int(now // self.bucket_secs))
        return [(index, dict(bucket)) for index, bucket in self._buckets]

    def __len__(self) -> int:
        return len(self._buckets)


@dataclass
class WindowValues:
    """An executor's counters over one window and the seconds they cover (for rates and capacity)."""

    counters: dict[str, float]
    span_secs: float


class ExecutorRollup:
    """One executor's windows, fed with its cumulative counters (as reported in heartbeats) and their times.

    The first report is the baseline: what was counted before it belongs to all time only.  A counter that goes
    down means the executor restarted; its new value is counted as the delta.
    """

    __slots__ = ("first_seen", "last", "last_seen", "windows")

    def __init__(self, now: float, counters: Counters) -> None:
        self.first_seen = now
        self.last_seen = now
        self.last: dict[str, float] = dict(counters)
        self.windows = [RollingWindow(secs) for secs in WINDOW_SECS]

    def observe(self, now: float, counters: Counters) -> None:
        """A newer cumulative report."""
        last = self.last
        deltas: dict[str, float] = {}
        for key, value in counters.items():
            delta = value - last.get(key, 0.0)
            if delta < 0:
                delta = value  # restarted
            if delta:
                deltas[key] = delta
        if deltas:
            for window in self.windows:
                window.add(now, deltas)
        self.last = dict(counters)
        self.last_seen = max(self.last_seen, now)

    def values(self, window: str, now: float, uptime_secs: float | None = None) -> WindowValues:
        """The counters over ``window`` (an id of :data:`WINDOWS`) ending ``now``."""
        if window == ALL_TIME:
            span = uptime_secs if uptime_secs is not None else now - self.first_seen
            return WindowValues(dict(self.last), max(0.0, span))
        secs = float(window)
        for rolling in self.windows:
            if rolling.length == secs:
                return WindowValues(rolling.sums(now), max(0.0, min(secs, now - self.first_seen)))
        raise ValueError(f"unknown window {window!r}")


@dataclass
class _Seen:
    report_time: float
    rollup: ExecutorRollup


@dataclass
class StatsBook:
    """Rollups of every live executor, keyed ``(topology id, executor key)``; bounded by the live executors.

    :meth:`observe` takes one topology's executor reports (executor key -> report time and cumulative counters)
    and drops the rollups of executors no longer reported; :meth:`retain` drops topologies that are gone.
    An executor first seen within :data:`FRESH_SECS` of its start (``started`` times) is counted from zero at
    its start, so a young topology's windows hold everything it did.
    """

    _topologies: dict[str, dict[str, _Seen]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(
        self, topology_id: str, reports: Mapping[str, tuple[float, Counters]],
        started: Mapping[str, float] | None = None,
    ) -> None:
        """The latest reports of a topology's executors (a report already seen is ignored); thread-safe.

        ``started`` gives, per executor key, when the executor started (same clock as the report times).
        """
        with self._lock:
            self._observe(topology_id, reports, started or {})

    def _observe(
        self, topology_id: str, reports: Mapping[str, tuple[float, Counters]], started: Mapping[str, float]
    ) -> None:
        seen = self._topologies.setdefault(topology_id, {})
        for key in [k for k in seen if k not in reports]:
            del seen[key]
        for key, (time_secs, counters) in reports.items():
            entry = seen.get(key)
            if entry is None:
                start = started.get(key)
                if start is not None and 0 <= time_secs - start <= FRESH_SECS:
                    rollup = ExecutorRollup(start, {})
                    rollup.observe(time_secs, counters)
                else:
                    rollup = ExecutorRollup(time_secs, counters)
                seen[key] = _Seen(time_secs, rollup)
            elif time_secs > entry.report_time:
                entry.report_time = time_secs
                entry.rollup.observe(time_secs, counters)

    def retain(self, topology_ids: Iterable[str]) -> None:
        """Forget every topology not in ``topology_ids``."""
        keep = set(topology_ids)
        with self._lock:
            self._retain(keep)

    def _retain(self, keep: set[str]) -> None:
        for tid in [t for t in self._topologies if t not in keep]:
            del self._topologies[tid]

    def rollup(self, topology_id: str, executor_key: str) -> ExecutorRollup | None:
        """The rollup of one executor, if it was reported."""
        entry = self._topologies.get(topology_id, {}).get(executor_key)
        return entry.rollup if entry is not None else None

    def values(self, topology_id: str, executor_key: str, window: str, now: float) -> WindowValues | None:
        """An executor's counters over a rolling window (thread-safe); None when it was never reported."""
        with self._lock:
            entry = self._topologies.get(topology_id, {}).get(executor_key)
            return entry.rollup.values(window, now) if entry is not None else None

    def series(
        self, topology_id: str, executor_key: str, window: str, now: float
    ) -> tuple[float, float, list[tuple[int, dict[str, float]]]] | None:
        """An executor's buckets in a rolling window (thread-safe): its first time seen, the bucket length and
        :meth:`RollingWindow.series`; None when it was never reported."""
        with self._lock:
            entry = self._topologies.get(topology_id, {}).get(executor_key)
            if entry is None:
                return None
            for rolling in entry.rollup.windows:
                if window != ALL_TIME and rolling.length == float(window):
                    return entry.rollup.first_seen, rolling.bucket_secs, rolling.series(now)
        raise ValueError(f"no buckets for window {window!r}")

    def executors(self, topology_id: str) -> int:
        """How many executors of the topology are followed."""
        return len(self._topologies.get(topology_id, {}))
