"""Storm's ready-made ``CombinerAggregator``\\ s (``operations.aggregators``): :class:`Count` and :class:`LongSum`."""

from __future__ import annotations

from typing import Any

from storm_py.streams.operations import CombinerAggregator


class Count(CombinerAggregator):
    """The number of values."""

    def init(self) -> int:
        return 0

    def apply(self, accumulator: Any, value: Any) -> Any:
        return accumulator + 1

    def merge(self, acc1: Any, acc2: Any) -> Any:
        return acc1 + acc2


class LongSum(CombinerAggregator):
    """The sum of numbers (an ``int`` sum stays an ``int``)."""

    def init(self) -> Any:
        return 0

    def apply(self, accumulator: Any, value: Any) -> Any:
        return accumulator + value

    def merge(self, acc1: Any, acc2: Any) -> Any:
        return acc1 + acc2


__all__ = ["Count", "LongSum"]
