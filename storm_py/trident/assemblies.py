"""Trident's built-in assemblies (``FirstN``): chains of stream operations applied with
``Stream.apply_assembly``, and the aggregators they run."""

from __future__ import annotations

from typing import Any

from storm_py.trident.operation import BaseAggregator, TridentCollector
from storm_py.trident.stream import Assembly, Stream
from storm_py.trident.tuple import TridentTuple


class _FirstNAgg(BaseAggregator):
    """The first ``n`` tuples of a partition's batch."""

    def __init__(self, n: int) -> None:
        self.n = n

    def init(self, batch_id: Any, collector: TridentCollector) -> Any:
        return [0]

    def aggregate(self, state: Any, tuple: TridentTuple, collector: TridentCollector) -> None:
        if state[0] < self.n:
            collector.emit(tuple.values)
            state[0] += 1

    def complete(self, state: Any, collector: TridentCollector) -> None:
        pass


class _FirstNSortedAgg(BaseAggregator):
    """The ``n`` tuples of a partition's batch with the smallest (``reverse``: largest) ``sort_field``."""

    def __init__(self, n: int, sort_field: str, reverse: bool) -> None:
        self.n = n
        self.sort_field = sort_field
        self.reverse = reverse

    def init(self, batch_id: Any, collector: TridentCollector) -> Any:
        return []

    def aggregate(self, state: Any, tuple: TridentTuple, collector: TridentCollector) -> None:
        state.append(tuple)

    def complete(self, state: Any, collector: TridentCollector) -> None:
        ordered = sorted(state, key=lambda t: t.get_value_by_field(self.sort_field), reverse=self.reverse)
        for t in ordered[: self.n]:
            collector.emit(t.values)


class FirstN(Assembly):
    """Storm's ``FirstN``: the first ``n`` tuples of each batch, or the ``n`` smallest by ``sort_field``
    (largest with ``reverse``); a partition aggregate, then a global one."""

    def __init__(self, n: int, sort_field: str | None = None, reverse: bool = False) -> None:
        if n < 0:
            raise ValueError(f"FirstN: n must be >= 0, got {n}")
        self.agg: BaseAggregator = _FirstNAgg(n) if sort_field is None else _FirstNSortedAgg(n, sort_field, reverse)

    def apply(self, input: Stream) -> Stream:
        fields = input.get_output_fields()
        partial = input.partition_aggregate(fields, self.agg, fields)
        return partial.global_().partition_aggregate(fields, self.agg, fields)
