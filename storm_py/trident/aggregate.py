"""The aggregation processors: ``partition_aggregate`` of any aggregator kind, grouped or not.

:class:`AggregateProcessor` runs reducers and aggregators (and any combiner) through one adapter;
:class:`CombinerProcessor` runs combiners, with entry points of their own for the built-in ``Count`` and
``Sum`` over one group field; :class:`CombineValues` is the second phase of a two-phase combiner.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, cast

from storm_py.trident.builtin import Count, Sum
from storm_py.trident.operation import BaseAggregator, CombinerAggregator, ReducerAggregator
from storm_py.trident.processors import OperationCollector, ProjectingProcessor
from storm_py.trident.task import BatchRun
from storm_py.trident.tuple import Schema, TridentTuple


class _AggregatorAdapter:
    """One interface over the three aggregator kinds: ``init``, ``aggregate -> state``, ``complete``."""

    def __init__(self, agg: Any) -> None:
        self.agg = agg
        if isinstance(agg, CombinerAggregator) or callable(getattr(agg, "combine", None)):
            self.kind = "combiner"
        elif isinstance(agg, ReducerAggregator) or callable(getattr(agg, "reduce", None)):
            self.kind = "reducer"
        elif isinstance(agg, BaseAggregator) or callable(getattr(agg, "complete", None)):
            self.kind = "aggregator"
        else:
            raise TypeError(f"{type(agg).__name__} is no CombinerAggregator, ReducerAggregator or Aggregator")

    def init(self, attempt: Any, collector: OperationCollector) -> Any:
        if self.kind == "combiner":
            return self.agg.zero()
        if self.kind == "reducer":
            return self.agg.init()
        return self.agg.init(attempt, collector)

    def aggregate(self, state: Any, tup: TridentTuple, collector: OperationCollector) -> Any:
        if self.kind == "combiner":
            return self.agg.combine(state, self.agg.init(tup))
        if self.kind == "reducer":
            return self.agg.reduce(state, tup)
        self.agg.aggregate(state, tup, collector)
        return state

    def complete(self, state: Any, collector: OperationCollector) -> None:
        if self.kind == "aggregator":
            self.agg.complete(state, collector)
        else:
            collector.emit([state])


class AggregateProcessor(ProjectingProcessor):
    """``partition_aggregate`` (grouped or not) in one task: per batch one state (per group), completed when
    the batch is; an ungrouped empty batch still yields the ``zero()`` / ``init()`` result."""

    kind = "aggregate"

    def __init__(
        self, schema: Schema, in_schema: Schema, in_positions: list[int], agg: Any, group: list[int] | None
    ) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.adapter = _AggregatorAdapter(agg)
        self.group = group
        self.key_of = _key_getter(group or [])

    def operations(self) -> list[Any]:
        return [self.adapter.agg]

    def start(self, run: BatchRun) -> Any:
        if self.group is not None:
            return {}
        self.collector.run = run
        self.collector.prefix = []
        return [self.adapter.init(run.attempt, self.collector)]

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        collector = self.collector
        collector.run = run
        adapter = self.adapter
        if self.group is None:
            holder = run.states[self.slot]
            collector.prefix = []
            holder[0] = adapter.aggregate(holder[0], self.project(values), collector)
            return
        groups: dict[tuple[Any, ...], list[Any]] = run.states[self.slot]
        key = self.key_of(values)
        collector.prefix = list(key)
        holder = groups.get(key)
        if holder is None:
            holder = groups[key] = [adapter.init(run.attempt, collector)]
        holder[0] = adapter.aggregate(holder[0], self.project(values), collector)

    def finish(self, run: BatchRun) -> None:
        collector = self.collector
        collector.run = run
        if self.group is None:
            collector.prefix = []
            self.adapter.complete(run.states[self.slot][0], collector)
            return
        for key, holder in run.states[self.slot].items():
            collector.prefix = list(key)
            self.adapter.complete(holder[0], collector)


def _key_getter(positions: list[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """A function taking a group's key (a tuple) out of a tuple's values."""
    if len(positions) == 1:
        (only,) = positions
        return lambda values: (values[only],)
    return cast("Callable[[list[Any]], tuple[Any, ...]]", itemgetter(*positions)) if positions else lambda v: ()


class CombineValues(CombinerAggregator):
    """The second phase of a two-phase combiner: combines the partial results (the input's one field)."""

    def __init__(self, agg: Any) -> None:
        self.agg = agg

    def init(self, tuple: Any) -> Any:
        return tuple.get_value(0)

    def combine(self, a: Any, b: Any) -> Any:
        return self.agg.combine(a, b)

    def zero(self) -> Any:
        return self.agg.zero()


#: how a combiner's per-tuple value is taken: ``init(tuple)``, the constant 1 (Count) or one field (Sum and the
#: second phase of a two-phase combiner)
GENERAL, ONE, FIELD = 0, 1, 2
_MISSING = object()


class CombinerProcessor(ProjectingProcessor):
    """``partition_aggregate`` of a :class:`CombinerAggregator` (grouped or not): per batch ``zero()`` (per
    group: the first tuple's ``init``) combined with every tuple's ``init``.

    The built-in ``Count`` and ``Sum`` (and the combine phase over their partial results) take the tuple's
    value without building a Trident tuple and add with ``+``, the same results with fewer calls.
    """

    kind = "aggregate"

    def __init__(
        self, schema: Schema, in_schema: Schema, in_positions: list[int], agg: Any, group: list[int] | None
    ) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.agg = agg
        self.group = group
        self.single = group[0] if group is not None and len(group) == 1 else None
        self.key_of = _key_getter(group or [])
        inner = agg.agg if isinstance(agg, CombineValues) else agg
        self.additive = type(inner) in (Count, Sum)
        if isinstance(agg, CombineValues) or type(agg) is Sum:
            self.mode = FIELD
        elif type(agg) is Count:
            self.mode = ONE
        else:
            self.mode = GENERAL
        self.position = in_positions[0] if in_positions else 0

    def operations(self) -> list[Any]:
        return [self.agg]

    def entry(self) -> Callable[[BatchRun, int, list[Any]], None]:
        return self._grouped(0) or self.execute

    def wire_entry(self, parent: int) -> Callable[[BatchRun, int, list[Any]], None] | None:
        return self._grouped(1)  # a wire tuple: the batch id first

    def _grouped(self, offset: int) -> Callable[[BatchRun, int, list[Any]], None] | None:
        """``Count`` and ``Sum`` by one group field, straight into the batch's groups (the fields ``offset`` into
        the values); None for any other aggregation."""
        if self.single is None or not self.additive or self.mode == GENERAL:
            return None
        slot, key_at, value_at = self.slot, self.single + offset, self.position + offset
        if self.mode == ONE:

            def count(run: BatchRun, parent: int, values: list[Any]) -> None:
                groups = run.states[slot]
                key = values[key_at]
                groups[key] = groups.get(key, 0) + 1

            return count

        def add(run: BatchRun, parent: int, values: list[Any]) -> None:
            groups = run.states[slot]
            key = values[key_at]
            old = groups.get(key, _MISSING)
            groups[key] = values[value_at] if old is _MISSING else old + values[value_at]

        return add

    def count_sink(self, width: int) -> tuple[int, Callable[[Any], Any]] | None:
        """Let a function count straight from its emits when the group field is among the emitted values:
        ``(slot, key getter)``, the emits of one input tuple then go through C's ``Counter`` loop into
        ``run.states[slot]`` with ``key getter`` (see :class:`~storm_py.trident.processors.EachProcessor`)."""
        if self.single is None or self.mode != ONE or self.single < width:
            return None
        return self.slot, itemgetter(self.single - width)

    def start(self, run: BatchRun) -> Any:
        return {} if self.group is not None else [self.agg.zero()]

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        mode = self.mode
        if mode == ONE:
            value: Any = 1
        elif mode == FIELD:
            value = values[self.position]
        else:
            value = self.agg.init(self.project(values))
        if self.group is None:
            holder = run.states[self.slot]
            holder[0] = holder[0] + value if self.additive else self.agg.combine(holder[0], value)
            return
        groups: dict[Any, Any] = run.states[self.slot]
        key = values[self.single] if self.single is not None else self.key_of(values)
        old = groups.get(key, _MISSING)
        if old is _MISSING:
            groups[key] = value
        else:
            groups[key] = old + value if self.additive else self.agg.combine(old, value)

    def finish(self, run: BatchRun) -> None:
        state = run.states[self.slot]
        if self.group is None:
            self.emit(run, [state[0]])
        elif self.single is not None:
            if not self.children:  # only other bolts read it: straight onto the wire
                attempt, emit = run.attempt, run.task.collector.emit
                for stream in self.streams:
                    for key, value in state.items():
                        emit([attempt, key, value], None, stream)
                return
            self.emit_all(run, [[key, value] for key, value in state.items()])
        else:
            self.emit_all(run, [[*key, value] for key, value in state.items()])
