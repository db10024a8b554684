"""This module owns Storm's metric types (metrics v1): objects with ``get_value_and_reset()``.

A task registers them with ``TopologyContext.register_metric(name, metric, bucket_secs)``; every
``bucket_secs`` the executor reads each one with :meth:`get_value_and_reset` and hands the values to the
topology's metrics consumers.  The types are plain Python objects: updating one is an attribute increment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

A = TypeVar("A")


@runtime_checkable
class IMetric(Protocol):
    """Anything a task can register: its value for the bucket that ends now, and a fresh start."""

    def get_value_and_reset(self) -> Any:
        """The value of the bucket that ends now; the metric starts a new bucket."""


class CountMetric:
    """A count of events in the bucket (Storm's ``CountMetric``)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def incr(self, n: int = 1) -> None:
        """Count ``n`` more events (Storm's ``incr`` and ``incrBy``)."""
        self.value += n

    incr_by = incr

    def get_value_and_reset(self) -> int:
        value, self.value = self.value, 0
        return value


class MultiCountMetric:
    """Counts per key (Storm's ``MultiCountMetric``): ``scope(key).incr()``; the value is ``{key: count}``."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[str, CountMetric] = {}

    def scope(self, key: str) -> CountMetric:
        """The counter of ``key`` (created on first use)."""
        metric = self._counts.get(key)
        if metric is None:
            metric = self._counts[key] = CountMetric()
        return metric

    def get_value_and_reset(self) -> dict[str, int]:
        return {key: metric.get_value_and_reset() for key, metric in self._counts.items()}


class Reducer(Protocol[A]):
    """Folds values into an accumulator (Storm's ``IReducer``)."""

    def init(self) -> A:
        """A fresh accumulator."""

    def reduce(self, accumulator: A, value: Any) -> A:
        """The accumulator with ``value`` folded in."""

    def extract_result(self, accumulator: A) -> Any:
        """The bucket's value from its accumulator."""


class MeanReducer:
    """The mean of the values (``None`` for a bucket without values, as Storm's ``MeanReducer``)."""

    def init(self) -> list[float]:
        return [0.0, 0]

    def reduce(self, accumulator: list[float], value: Any) -> list[float]:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"MeanReducer takes numbers, got {type(value).__name__} {value!r}")
        accumulator[0] += value
        accumulator[1] += 1
        return accumulator

    def extract_result(self, accumulator: list[float]) -> float | None:
        total, count = accumulator
        return total / count if count else None


class ReducedMetric(Generic[A]):
    """Values folded by a :class:`Reducer` over the bucket (Storm's ``ReducedMetric``)."""

    __slots__ = ("_acc", "_reducer")

    def __init__(self, reducer: Reducer[A]) -> None:
        self._reducer = reducer
        self._acc = reducer.init()

    def update(self, value: Any) -> None:
        """Fold one value into the bucket."""
        self._acc = self._reducer.reduce(self._acc, value)

    def get_value_and_reset(self) -> Any:
        result = self._reducer.extract_result(self._acc)
        self._acc = self._reducer.init()
        return result


class MultiReducedMetric(Generic[A]):
    """A :class:`ReducedMetric` per key (Storm's ``MultiReducedMetric``); the value is ``{key: result}``."""

    __slots__ = ("_metrics", "_reducer")

    def __init__(self, reducer: Reducer[A]) -> None:
        self._reducer = reducer
        self._metrics: dict[str, ReducedMetric[A]] = {}

    def scope(self, key: str) -> ReducedMetric[A]:
        """The reduced metric of ``key`` (created on first use)."""
        metric = self._metrics.get(key)
        if metric is None:
            metric = self._metrics[key] = ReducedMetric(self._reducer)
        return metric

    def get_value_and_reset(self) -> dict[str, Any]:
        out = {}
        for key, metric in self._metrics.items():
            value = metric.get_value_and_reset()
            if value is not None:
                out[key] = value
        return out


class Combiner(Protocol[A]):
    """An associative combination with an identity (Storm's ``ICombiner``)."""

    def identity(self) -> A:
        """The value of an empty bucket."""

    def combine(self, a: A, b: A) -> A:
        """``a`` and ``b`` combined."""


class CombinedMetric(Generic[A]):
    """Values combined by a :class:`Combiner` over the bucket (Storm's ``CombinedMetric``)."""

    __slots__ = ("_combiner", "_value")

    def __init__(self, combiner: Combiner[A]) -> None:
        self._combiner = combiner
        self._value = combiner.identity()

    def update(self, value: A) -> None:
        """Combine one value into the bucket."""
        self._value = self._combiner.combine(self._value, value)

    def get_value_and_reset(self) -> A:
        value, self._value = self._value, self._combiner.identity()
        return value


class GaugeMetric:
    """A value read when the bucket ends (``fn()``), never reset: queue populations, lag."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn

    def get_value_and_reset(self) -> Any:
        return self._fn()
