"""Storm's test components: word spout, word counter, global count, aggregates counter, fixed-tuple spout,
the capture bolt, and ``test_tuple``."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from storm_py.api.components import (
    BasicBolt,
    BasicOutputCollector,
    Bolt,
    CustomStreamGrouping,
    OutputCollector,
    OutputFieldsDeclarer,
    Spout,
    SpoutOutputCollector,
)
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Fields, Tuple
from storm_py.clock import Clock
from storm_py.testing.registry import Shared

WORDS = ("nathan", "mike", "jackson", "golda", "bertels")


class TestWordSpout(Spout):
    """Emits a random word from a fixed list every 100 ms of cluster time (unanchored), like Storm's."""

    __test__ = False  # not a pytest test class

    def __init__(self, is_distributed: bool = True) -> None:
        self._distributed = is_distributed
        self._collector: SpoutOutputCollector | None = None
        self._clock: Clock | None = None
        self._next = 0.0
        self._rng = random.Random()

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._collector = collector
        self._clock = context.clock
        self._next = self._clock.now()
        self._rng = random.Random()  # each task its own draws (a copied generator would repeat its twin's words)

    def next_tuple(self) -> None:
        assert self._clock is not None and self._collector is not None
        now = self._clock.now()
        if now < self._next:
            return
        self._next = now + 0.1
        self._collector.emit([self._rng.choice(WORDS)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word"])

    def get_component_configuration(self) -> dict[str, Any] | None:
        return None if self._distributed else {"topology.max.task.parallelism": 1}


class TestWordCounter(BasicBolt):
    """Counts words; emits ``[word, count]`` after each."""

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.counts: dict[Any, int] = {}

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        word = tup.get_value(0)
        c = self.counts.get(word, 0) + 1
        self.counts[word] = c
        collector.emit([word, c])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word", "count"])


class NGrouping(CustomStreamGrouping):
    """Storm's ``NGrouping``: every tuple goes to the ``n`` lowest target tasks."""

    def __init__(self, n: int) -> None:
        self._n = n
        self._targets: list[int] = []

    def prepare(self, context: TopologyContext, stream: Any, target_tasks: list[int]) -> None:
        self._targets = sorted(target_tasks)[: self._n]

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return list(self._targets)


class TestGlobalCount(Bolt):
    """Counts every tuple it sees; emits ``[count]`` anchored to each and acks it."""

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._collector = collector
        self.count = 0

    def execute(self, tup: Tuple) -> None:
        self.count += 1
        self._collector.emit([self.count], tup)
        self._collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["count"])


class TestAggregatesCounter(Bolt):
    """Keeps the latest count per word from ``[word, count]`` inputs; emits ``[sum]`` of all of them."""

    __test__ = False

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._collector = collector
        self.counts: dict[Any, int] = {}

    def execute(self, tup: Tuple) -> None:
        self.counts[tup.get_value(0)] = int(tup.get_value(1))
        self._collector.emit([sum(self.counts.values())], tup)
        self._collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["agg-global"])


class _FixedState(Shared):
    def __init__(self, total: int) -> None:
        self.lock = threading.Lock()
        self.total = total
        self.acked = 0
        self.failed = 0

    def reset(self, total: int) -> None:
        with self.lock:
            self.total = total
            self.acked = 0
            self.failed = 0

    def exhausted(self) -> bool:
        with self.lock:
            return self.acked + self.failed >= self.total


class FixedTupleSpout(Spout):
    """Emits a fixed list of tuples (dealt round-robin over its tasks), each tracked; ``is_exhausted()`` once
    every one of them was acked or failed."""

    def __init__(self, tuples: Sequence[Any], fields: Fields | Sequence[str] | None = None) -> None:
        self.tuples: list[tuple[str, list[Any]]] = [_as_fixed(t) for t in tuples]
        self._fields = None if fields is None else (fields if isinstance(fields, Fields) else Fields(list(fields)))
        self._state = _FixedState(len(self.tuples))
        self._mine: list[tuple[str, list[Any]]] = []
        self._pos = 0
        self._collector: SpoutOutputCollector | None = None

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._collector = collector
        n = len(context.get_component_tasks(context.this_component_id)) or 1
        idx = context.this_task_index
        self._mine = [t for i, t in enumerate(self.tuples) if i % n == idx]
        self._pos = 0

    def next_tuple(self) -> None:
        if self._pos >= len(self._mine):
            return
        stream, values = self._mine[self._pos]
        self._pos += 1
        assert self._collector is not None
        self._collector.emit(values, uuid.uuid4().hex, stream)

    def ack(self, msg_id: Any) -> None:
        with self._state.lock:
            self._state.acked += 1

    def fail(self, msg_id: Any) -> None:
        with self._state.lock:
            self._state.failed += 1

    def is_exhausted(self) -> bool:
        """Every tuple was acked or failed."""
        return self._state.exhausted()

    def get_completed(self) -> int:
        """Tuples acked or failed so far (all tasks)."""
        with self._state.lock:
            return self._state.acked + self._state.failed

    def clean(self) -> None:
        """Drop the tuples and the counts shared by this spout's tasks (``complete_topology``'s cleanup)."""
        self.tuples = []
        self._mine = []
        self._state.reset(0)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        if self._fields is not None:
            declarer.declare(self._fields)


def _as_fixed(t: Any) -> tuple[str, list[Any]]:
    if isinstance(t, dict) and "values" in t:
        return str(t.get("stream", DEFAULT_STREAM)), list(t["values"])
    return DEFAULT_STREAM, list(t)


class CaptureStore(Shared):
    """Where the capture bolt puts what it sees: ``component -> [(stream, values)]``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.results: dict[str, list[tuple[str, list[Any]]]] = {}

    def add(self, component: str, stream: str, values: list[Any]) -> None:
        with self.lock:
            self.results.setdefault(component, []).append((stream, list(values)))

    def snapshot(self) -> dict[str, list[tuple[str, list[Any]]]]:
        with self.lock:
            return {k: list(v) for k, v in self.results.items()}

    def take(self) -> dict[str, list[tuple[str, list[Any]]]]:
        """The results so far, leaving the store empty."""
        with self.lock:
            out, self.results = self.results, {}
            return out


class CaptureBolt(Bolt):
    """Records every tuple it receives (and acks it)."""

    def __init__(self, store: CaptureStore) -> None:
        self.store = store
        self._collector: OutputCollector | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._collector = collector

    def execute(self, tup: Tuple) -> None:
        self.store.add(tup.source_component, tup.source_stream, tup.values)
        assert self._collector is not None
        self._collector.ack(tup)


def test_tuple(
    values: Sequence[Any],
    component: str = "component",
    stream: str = DEFAULT_STREAM,
    fields: Sequence[str] | None = None,
    task: int = 1,
) -> Tuple:
    """A :class:`Tuple` for unit-testing a bolt; fields default to ``field1..fieldN``."""
    names = list(fields) if fields is not None else [f"field{i}" for i in range(1, len(values) + 1)]
    return Tuple(list(values), Fields(names), component, stream, task, None)


test_tuple.__test__ = False  # type: ignore[attr-defined]


def multiset_eq(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether ``a`` and ``b`` hold the same elements the same number of times, in any order."""
    rest = [_freeze(x) for x in b]
    for x in a:
        fx = _freeze(x)
        try:
            rest.remove(fx)
        except ValueError:
            return False
    return not rest


def _freeze(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    return x
