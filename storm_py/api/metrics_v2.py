"""This module owns Storm's metrics v2 types a task registers through its context: counters, gauges, histograms
and meters (``TopologyContext.register_counter`` and its siblings).

Unlike ``register_metric``'s metrics they are never reset: the worker reads their current values into every
heartbeat, and nimbus exports them on ``/metrics`` with topology, component and task labels.  Each type has a
``values()`` giving the numbers exported, by suffix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock


class Counter:
    """A count that goes up (and down)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def inc(self, n: int = 1) -> None:
        """Add ``n``."""
        with self._lock:
            self._count += n

    def dec(self, n: int = 1) -> None:
        """Subtract ``n``."""
        with self._lock:
            self._count -= n

    def get_count(self) -> int:
        """The count."""
        return self._count

    def values(self) -> dict[str, float]:
        """``{"_total": count}``."""
        return {"_total": float(self._count)}


class Gauge:
    """A value read when the metrics are read: wraps a callable returning a number."""

    def __init__(self, read: Callable[[], Any]) -> None:
        self._read = read

    def get_value(self) -> Any:
        """The current value."""
        return self._read()

    def values(self) -> dict[str, float]:
        """``{"": value}`` (nothing when the value is not a number)."""
        value = self._read()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return {}
        return {"": float(value)}


class Histogram:
    """Values recorded one by one: their count, sum, minimum and maximum."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.sum = 0.0
        self.min = float("inf")
        self.max = float("-inf")

    def update(self, value: float) -> None:
        """Record one value."""
        with self._lock:
            self.count += 1
            self.sum += value
            self.min = min(self.min, value)
            self.max = max(self.max, value)

    def get_count(self) -> int:
        """Values recorded."""
        return self.count

    def values(self) -> dict[str, float]:
        """``_count`` and ``_sum`` (Prometheus' summary without quantiles), ``_min`` and ``_max`` once recorded."""
        out = {"_count": float(self.count), "_sum": self.sum}
        if self.count:
            out["_min"], out["_max"] = self.min, self.max
        return out


class Meter:
    """Events marked over time: their count and mean rate per second since the meter was made."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SYSTEM_CLOCK
        self._start = self._clock.now()
        self._count = 0
        self._lock = threading.Lock()

    def mark(self, n: int = 1) -> None:
        """Mark ``n`` events."""
        with self._lock:
            self._count += n

    def get_count(self) -> int:
        """Events marked."""
        return self._count

    def get_mean_rate(self) -> float:
        """Events per second since the meter was made."""
        secs = self._clock.now() - self._start
        return self._count / secs if secs > 0 else 0.0

    def values(self) -> dict[str, float]:
        """``_total`` and ``_mean_rate``."""
        return {"_total": float(self._count), "_mean_rate": self.get_mean_rate()}
