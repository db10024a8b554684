"""Trident's built-in operations (``Count``, ``Sum``, ``FilterNull``, ``Debug``, ``MapGet``) and the state
updaters ``persistent_aggregate`` plans with."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from storm_py.trident.operation import BaseFilter, CombinerAggregator
from storm_py.trident.state import BaseQueryFunction, BaseStateUpdater
from storm_py.trident.tuple import Schema, TridentTuple

if TYPE_CHECKING:
    from storm_py.trident.operation import TridentCollector

log = logging.getLogger(__name__)


class Count(CombinerAggregator):
    """The number of tuples."""

    def init(self, tuple: TridentTuple) -> int:
        return 1

    def combine(self, a: int, b: int) -> int:
        return a + b

    def zero(self) -> int:
        return 0


class Sum(CombinerAggregator):
    """The sum of the first input field."""

    def init(self, tuple: TridentTuple) -> Any:
        return tuple.get_value(0)

    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    def zero(self) -> int:
        return 0


class FilterNull(BaseFilter):
    """Keeps tuples none of whose input fields is None."""

    def is_keep(self, tuple: TridentTuple) -> bool:
        return all(v is not None for v in tuple.values)


class Debug(BaseFilter):
    """Keeps every tuple and prints it (Storm's ``Debug``), prefixed with ``name`` when given."""

    def __init__(self, name: str | None = None) -> None:
        self.prefix = f"DEBUG({name}): " if name else "DEBUG: "

    def is_keep(self, tuple: TridentTuple) -> bool:
        print(f"{self.prefix}{tuple.values!r}", flush=True)
        return True


class MapGet(BaseQueryFunction):
    """Looks each tuple's values up as a key of a map state; emits the stored value (None when missing)."""

    def batch_retrieve(self, state: Any, tuples: list[Any]) -> list[Any]:
        return list(state.multi_get([tuple(t.values) for t in tuples]))

    def execute(self, tuple: Any, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


# ---------------------------------------------------------------------------------- persistent_aggregate


class CombinerAggStateUpdater(BaseStateUpdater):
    """Ungrouped combiner: combines the batch's aggregate into the global value; emits the new value."""

    def __init__(self, agg: Any) -> None:
        self.agg = agg

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        batch = self.agg.zero()
        for t in tuples:
            batch = self.agg.combine(batch, t.get_value(0))
        new = state.update(lambda curr: batch if curr is None else self.agg.combine(curr, batch))
        collector.emit([new])


class ReducerAggStateUpdater(BaseStateUpdater):
    """Ungrouped reducer: reduces the batch's tuples into the global value; emits the new value."""

    def __init__(self, agg: Any) -> None:
        self.agg = agg

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        def reduce(curr: Any) -> Any:
            value = self.agg.init() if curr is None else curr
            for t in tuples:
                value = self.agg.reduce(value, t)
            return value

        collector.emit([state.update(reduce)])


class MapCombinerAggStateUpdater(BaseStateUpdater):
    """Grouped combiner: each tuple is ``group values + the batch's aggregate``; combined into the stored
    value of its group; emits ``group values + new value``."""

    def __init__(self, agg: Any, num_keys: int) -> None:
        self.agg = agg
        self.num_keys = num_keys

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        self.update_rows(state, [t.values for t in tuples], collector)

    def update_rows(self, state: Any, rows: list[list[Any]], collector: Any) -> None:
        """``update_state`` of the tuples' value lists (the persisting processor hands those over)."""
        n, agg = self.num_keys, self.agg
        keys = [(row[0],) for row in rows] if n == 1 else [tuple(row[:n]) for row in rows]
        combine = _add if type(agg) in (Count, Sum) else _combine_with(agg)
        updaters = [combine(row[n]) for row in rows]
        news = state.multi_update(keys, updaters)
        if getattr(collector, "discards", False):
            return
        for key, new in zip(keys, news, strict=True):
            collector.emit([*key, new])


class MapReducerAggStateUpdater(BaseStateUpdater):
    """Grouped reducer: each group's tuples are reduced into its stored value; emits ``group + new value``.

    The tuples carry the whole stream; ``keys`` and ``inputs`` are the positions of the group and of the
    reducer's input fields (``in_schema``).
    """

    def __init__(self, agg: Any, keys: list[int], inputs: list[int], in_schema: Schema) -> None:
        self.agg = agg
        self.keys = keys
        self.inputs = inputs
        self.in_schema = in_schema

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        groups: dict[tuple[Any, ...], list[TridentTuple]] = {}
        for t in tuples:
            values = t.values
            key = tuple(values[i] for i in self.keys)
            groups.setdefault(key, []).append(self.in_schema.make([values[i] for i in self.inputs]))
        keys = list(groups)
        updaters = [_reduce_with(self.agg, groups[k]) for k in keys]
        for key, new in zip(keys, state.multi_update(keys, updaters), strict=True):
            collector.emit([*key, new])


def _combine_with(agg: Any) -> Any:
    """Makes, per batch value, the update combining it into a stored value (the value itself when none)."""

    def updater(value: Any) -> Any:
        return lambda curr: value if curr is None else agg.combine(curr, value)

    return updater


def _add(value: Any) -> Any:
    """``_combine_with`` for the built-in Count and Sum, whose combine is ``+``."""
    return lambda curr: value if curr is None else curr + value


def _reduce_with(agg: Any, tuples: list[Any]) -> Any:
    def reduce(curr: Any) -> Any:
        value = agg.init() if curr is None else curr
        for t in tuples:
            value = agg.reduce(value, t)
        return value

    return reduce
