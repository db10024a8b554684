"""The streams users chain operations on: :class:`Stream`, :class:`PairStream` and :class:`StreamState`.

Each operation checks its arguments (errors name the operation), adds one node to the builder's graph and returns
the stream of that node; nothing runs until the builder's topology is submitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from storm_py.api.components import BasicBolt, Bolt
from storm_py.streams import nodes as n
from storm_py.streams.aggregators import Count as CountAggregator
from storm_py.streams.nodes import Graph, Node
from storm_py.streams.operations import (
    Aggregator,
    CombinerAggregator,
    PairValueJoiner,
    PrintConsumer,
    StateUpdater,
    Updater,
    as_aggregator,
    as_function,
    as_updater,
)
from storm_py.streams.windows import Window
from storm_py.windowing.bolt import BaseWindowedBolt

S = TypeVar("S", bound="Stream")

#: an argument not given
UNSET: Any = object()


def check_parallelism(value: object, operation: str) -> int:
    """``value`` as a parallelism (an int of at least 1), else ``ValueError`` naming ``operation``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{operation}: the parallelism must be an int of at least 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{operation}: the parallelism must be at least 1, got {value}")
    return value


class Stream:
    """A stream of values (Storm's ``Stream``); every operation returns a new stream, the graph grows."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self._graph = graph
        self._node = node

    # ---------------------------------------------------------------------------------------------- plumbing

    def _derive(self, kind: str, operation: str, fn: Any = None, *, pair: bool, arg: Any = None,
                parallelism: int | None = None, keeps_key: bool = False, parents: list[Node] | None = None) -> Node:
        me = self._node
        node = Node(kind, operation, parents or [me], parallelism or me.parallelism, pair, me.window,
                    me.window_node, fn, arg, keeps_key)
        return self._graph.add(node)

    def _same(self: S, node: Node) -> S:
        return type(self)(self._graph, node)

    def _stream(self, node: Node) -> Stream:
        return Stream(self._graph, node)

    def _pairs(self, node: Node) -> PairStream:
        return PairStream(self._graph, node)

    # -------------------------------------------------------------------------------------------- stateless

    def filter(self: S, predicate: Any) -> S:
        """The values for which ``predicate(value)`` is truthy."""
        fn = as_function(predicate, "test", "filter", "predicate")
        return self._same(self._derive(n.FILTER, "filter", fn, pair=self._node.pair))

    def map(self, function: Any) -> Stream:
        """``function(value)`` for each value."""
        fn = as_function(function, "apply", "map", "function")
        return self._stream(self._derive(n.MAP, "map", fn, pair=False))

    def map_to_pair(self, function: Any) -> PairStream:
        """``function(value)``, a ``(key, value)`` pair, for each value."""
        fn = as_function(function, "apply", "map_to_pair", "function")
        return self._pairs(self._derive(n.MAP, "map_to_pair", fn, pair=True))

    def flat_map(self, function: Any) -> Stream:
        """Every item of the iterable ``function(value)``, in order."""
        fn = as_function(function, "apply", "flat_map", "function")
        return self._stream(self._derive(n.FLAT_MAP, "flat_map", fn, pair=False))

    def flat_map_to_pair(self, function: Any) -> PairStream:
        """Every pair of the iterable ``function(value)``."""
        fn = as_function(function, "apply", "flat_map_to_pair", "function")
        return self._pairs(self._derive(n.FLAT_MAP, "flat_map_to_pair", fn, pair=True))

    def peek(self: S, consumer: Any) -> S:
        """Calls ``consumer(value)`` and passes the value on unchanged."""
        fn = as_function(consumer, "accept", "peek", "consumer")
        return self._same(self._derive(n.PEEK, "peek", fn, pair=self._node.pair))

    def for_each(self, consumer: Any) -> None:
        """Terminal: ``consumer(value)`` for every value."""
        fn = as_function(consumer, "accept", "for_each", "consumer")
        self._derive(n.FOR_EACH, "for_each", fn, pair=False)

    def print(self) -> None:
        """Terminal: ``print(value)`` for every value (Storm's ``PrintConsumer``)."""
        self._derive(n.FOR_EACH, "print", as_function(PrintConsumer(), "accept", "print", "consumer"), pair=False)

    def to(self, bolt: Bolt | BasicBolt, parallelism: int = 1) -> None:
        """Terminal: ``bolt`` as a sink with ``parallelism`` tasks, shuffle-grouped on this stream."""
        if not isinstance(bolt, (Bolt, BasicBolt, BaseWindowedBolt)):
            raise TypeError(f"to: expected a Bolt or a BasicBolt, got {bolt!r}")
        par = check_parallelism(parallelism, "to")
        self._derive(n.SINK, "to", bolt, pair=False, parallelism=par)

    def branch(self: S, *predicates: Any) -> list[S]:
        """One stream per predicate; a value goes to the first predicate it satisfies, else nowhere."""
        if not predicates:
            return []
        fns = [as_function(p, "test", "branch", "predicate") for p in predicates]
        node = self._derive(n.BRANCH, "branch", fns, pair=self._node.pair)
        return [self._same(self._graph.add(Node(n.PORT, "branch", [node], node.parallelism, node.pair,
                                                node.window, node.window_node, arg=i)))
                for i in range(len(fns))]

    def repartition(self: S, parallelism: int) -> S:
        """The same values spread by shuffle grouping over ``parallelism`` tasks."""
        par = check_parallelism(parallelism, "repartition")
        if par == self._node.parallelism:
            return self
        return self._same(self._derive(n.REPARTITION, "repartition", pair=self._node.pair, parallelism=par))

    def window(self: S, window: Window) -> S:
        """The values in windows: every operation downstream is windowed."""
        if not isinstance(window, Window):
            raise TypeError(f"window: expected a TumblingWindows or a SlidingWindows, got {window!r}")
        node = self._derive(n.WINDOW, "window", pair=self._node.pair, arg=window)
        node.window, node.window_node = window, node
        return self._same(node)

    # ------------------------------------------------------------------------------------------ aggregations

    def aggregate(self, aggregator: Any = UNSET, accumulator: Any = None, combiner: Any = None, *,
                  initial_value: Any = UNSET) -> Stream:
        """Global aggregation: ``aggregate(CombinerAggregator)`` or ``aggregate(initial_value, accumulator,
        combiner)``."""
        agg = _aggregator(aggregator, initial_value, accumulator, combiner, "aggregate")
        return self._stream(self._derive(n.COMBINE, "aggregate", agg, pair=False, parallelism=1))

    def reduce(self, reducer: Any) -> Stream:
        """Global reduction: ``reducer(a, b)`` folded over the values."""
        agg = ReduceAggregator(as_function(reducer, "apply", "reduce", "reducer"))
        return self._stream(self._derive(n.COMBINE, "reduce", agg, pair=False, parallelism=1))

    def count(self) -> Stream:
        """The number of values (``aggregate(aggregators.Count())``)."""
        return self._stream(self._derive(n.COMBINE, "count", CountAggregator(), pair=False, parallelism=1))

    def state_query(self, stream_state: StreamState) -> PairStream:
        """``(q, state of q)`` for each value ``q`` with a state kept by ``stream_state``'s ``update_state_by_key``."""
        if not isinstance(stream_state, StreamState):
            raise TypeError(f"state_query: expected the StreamState of update_state_by_key, got {stream_state!r}")
        target = stream_state._node
        node = self._derive(n.STATE_QUERY, "state_query", pair=True, arg=target, parallelism=target.parallelism)
        return self._pairs(node)


class ReduceAggregator(CombinerAggregator):
    """A reducer as an aggregator: the first value starts, ``reducer(a, b)`` folds and merges."""

    EMPTY: Any = object()

    def __init__(self, reducer: Callable[[Any, Any], Any]) -> None:
        self.reducer = reducer

    def init(self) -> Any:
        return ReduceAggregator.EMPTY

    def apply(self, accumulator: Any, value: Any) -> Any:
        return value if accumulator is ReduceAggregator.EMPTY else self.reducer(accumulator, value)

    def merge(self, acc1: Any, acc2: Any) -> Any:
        return self.apply(acc1, acc2)

    def __deepcopy__(self, memo: dict[int, Any]) -> ReduceAggregator:
        return ReduceAggregator(self.reducer)  # EMPTY stays the one sentinel


class ListAggregator(CombinerAggregator):
    """``group_by_key``: the values of a key as a list, in arrival order."""

    def init(self) -> list[Any]:
        return []

    def apply(self, accumulator: Any, value: Any) -> Any:
        accumulator.append(value)
        return accumulator

    def merge(self, acc1: Any, acc2: Any) -> Any:
        return list(acc1) + list(acc2)

    def result(self, accumulator: Any) -> Any:
        return list(accumulator)


def _aggregator(aggregator: Any, initial_value: Any, accumulator: Any, combiner: Any, operation: str) -> Aggregator:
    if initial_value is not UNSET:  # given by keyword
        if aggregator is not UNSET:
            raise TypeError(f"{operation}: give an aggregator or an initial value, not both")
        aggregator = initial_value
    elif aggregator is UNSET:
        raise TypeError(f"{operation}: give an aggregator, or an initial value, an accumulator and a combiner")
    if accumulator is None and combiner is None:
        return as_aggregator(aggregator, operation)
    if accumulator is None or combiner is None:
        raise TypeError(f"{operation}: give an aggregator, or an initial value, an accumulator and a combiner")
    return as_aggregator(CombinerAggregator.of(
        aggregator, as_function(accumulator, "apply", operation, "accumulator"),
        as_function(combiner, "apply", operation, "combiner")), operation)


class PairStream(Stream):
    """A stream of ``(key, value)`` pairs (Storm's ``PairStream``)."""

    def map_values(self, function: Any) -> PairStream:
        """``(k, function(v))``."""
        fn = as_function(function, "apply", "map_values", "function")
        return self._pairs(self._derive(n.MAP, "map_values", _on_value(fn), pair=True, keeps_key=True))

    def flat_map_values(self, function: Any) -> PairStream:
        """``(k, r)`` for every ``r`` of the iterable ``function(v)``."""
        fn = as_function(function, "apply", "flat_map_values", "function")
        return self._pairs(self._derive(n.FLAT_MAP, "flat_map_values", _each_value(fn), pair=True, keeps_key=True))

    def aggregate_by_key(self, aggregator: Any = UNSET, accumulator: Any = None, combiner: Any = None, *,
                         initial_value: Any = UNSET) -> PairStream:
        """Per key: ``(k, aggregator.result(acc))``; or ``aggregate_by_key(initial_value, accumulator, combiner)``."""
        agg = _aggregator(aggregator, initial_value, accumulator, combiner, "aggregate_by_key")
        return self._pairs(self._derive(n.COMBINE_BY_KEY, "aggregate_by_key", agg, pair=True))

    def reduce_by_key(self, reducer: Any) -> PairStream:
        """Per key: ``(k, reduction of its values)``."""
        agg = ReduceAggregator(as_function(reducer, "apply", "reduce_by_key", "reducer"))
        return self._pairs(self._derive(n.COMBINE_BY_KEY, "reduce_by_key", agg, pair=True))

    def count_by_key(self) -> PairStream:
        """Per key: ``(k, number of values)``."""
        return self._pairs(self._derive(n.COMBINE_BY_KEY, "count_by_key", CountAggregator(), pair=True))

    def group_by_key(self) -> PairStream:
        """Per key: ``(k, list of its values)``."""
        return self._pairs(self._derive(n.COMBINE_BY_KEY, "group_by_key", ListAggregator(), pair=True))

    def group_by_key_and_window(self, window: Window) -> PairStream:
        """Windowed ``group_by_key``: repartition by key, window, group."""
        return self.window(window).group_by_key()

    def reduce_by_key_and_window(self, reducer: Any, window: Window) -> PairStream:
        """Windowed ``reduce_by_key``: repartition by key, window, reduce."""
        as_function(reducer, "apply", "reduce_by_key_and_window", "reducer")
        return self.window(window).reduce_by_key(reducer)

    def _join(self, other: Any, value_joiner: Any, kind: str, operation: str) -> PairStream:
        if not isinstance(other, PairStream):
            raise TypeError(f"{operation}: the other stream must be a PairStream, got {other!r}")
        if other._graph is not self._graph:
            raise ValueError(f"{operation}: the other stream belongs to another StreamBuilder")
        joiner = as_function(PairValueJoiner() if value_joiner is None else value_joiner, "apply", operation,
                             "value joiner")
        left, right = self._node, other._node
        if left.window is None and right.window is None:
            raise ValueError(f"{operation}: neither stream is windowed; window one of them (window(...)) so the "
                             "join knows which values to combine")
        if left.window is not None and right.window is not None and left.window.key() != right.window.key():
            raise ValueError(f"{operation}: the two streams are windowed differently ({left.window!r} and "
                             f"{right.window!r}); two different windows cannot meet in one bolt")
        window, window_node = (left.window, left.window_node) if left.window is not None else (
            right.window, right.window_node)
        node = Node(n.JOIN, operation, [left, right], left.parallelism, True, window, window_node, joiner, kind)
        return self._pairs(self._graph.add(node))

    def join(self, other: PairStream, value_joiner: Any = None) -> PairStream:
        """Inner join within a window: ``(k, value_joiner(v, v1))``, by default ``(k, (v, v1))``."""
        return self._join(other, value_joiner, n.INNER, "join")

    def left_outer_join(self, other: PairStream, value_joiner: Any = None) -> PairStream:
        """As ``join``, keeping this stream's keys: ``(k, (v, None))`` when ``other`` lacks ``k``."""
        return self._join(other, value_joiner, n.LEFT, "left_outer_join")

    def right_outer_join(self, other: PairStream, value_joiner: Any = None) -> PairStream:
        """As ``join``, keeping ``other``'s keys: ``(k, (None, v1))`` when this stream lacks ``k``."""
        return self._join(other, value_joiner, n.RIGHT, "right_outer_join")

    def full_outer_join(self, other: PairStream, value_joiner: Any = None) -> PairStream:
        """As ``join``, keeping the keys of both streams."""
        return self._join(other, value_joiner, n.FULL, "full_outer_join")

    def co_group_by_key(self, other: PairStream) -> PairStream:
        """Within a window: ``(k, (values of k here, values of k in other))``."""
        return self._join(other, _co_group, n.CO_GROUP, "co_group_by_key")

    def update_state_by_key(self, initial_value: Any = UNSET, function: Any = None, *,
                            state_updater: Any = UNSET) -> StreamState:
        """Per key, the state becomes ``function(state, v)`` (or ``state_updater.apply``), is stored and emitted:
        ``update_state_by_key(initial_value, function)`` or ``update_state_by_key(state_updater)``."""
        if state_updater is not UNSET or function is None:
            if state_updater is not UNSET and (initial_value is not UNSET or function is not None):
                raise TypeError("update_state_by_key: give a state updater, or an initial value and a function")
            given = state_updater if state_updater is not UNSET else initial_value
            if given is UNSET:
                raise TypeError("update_state_by_key: give a state updater, or an initial value and a function")
            updater = as_updater(given, "update_state_by_key")
        else:
            as_function(function, "apply", "update_state_by_key", "function")
            updater = StateUpdater.of(initial_value, function)
        node = self._derive(n.UPDATE_STATE, "update_state_by_key", updater, pair=True)
        return StreamState(self._graph, node)


def _co_group(left: Any, right: Any) -> Any:
    return (left, right)


def _on_value(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def map_value(pair: Any) -> Any:
        return (pair[0], fn(pair[1]))

    return map_value


def _each_value(fn: Callable[[Any], Iterable[Any]]) -> Callable[[Any], Any]:
    def each_value(pair: Any) -> Any:
        key = pair[0]
        return [(key, r) for r in fn(pair[1])]

    return each_value


class StreamState:
    """What ``update_state_by_key`` returns: the argument of ``state_query`` and the stream of updates."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self._graph = graph
        self._node = node

    def to_pair_stream(self) -> PairStream:
        """The ``(k, new state)`` pairs emitted after every update."""
        return PairStream(self._graph, self._node)


__all__ = ["PairStream", "Stream", "StreamState", "Updater", "check_parallelism"]
