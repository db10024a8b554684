"""Every Trident stream operation in LocalCluster, checked against Storm's Trident semantics (Storm's
integration tests are the guide: each, filters, projections, merge, join, FirstN, aggregators per batch)."""

from __future__ import annotations

from typing import Any

from storm_py.testing import multiset_eq
from storm_py.trident import (
    BaseAggregator,
    BaseFilter,
    BaseFunction,
    Count,
    Debug,
    FilterNull,
    FirstN,
    FixedBatchSpout,
    ReducerAggregator,
    Sum,
    TridentTopology,
)
from tests.trident.helpers import record, running, wait


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split():
            collector.emit([word])


class LongWords(BaseFilter):
    def is_keep(self, tuple: Any) -> bool:
        return len(tuple["word"]) > 3


class Peeked:
    """A peek consumer with ``accept``, collecting what it saw."""

    def __init__(self) -> None:
        self.seen: list[list[Any]] = []

    def accept(self, tuple: Any) -> None:
        self.seen.append(list(tuple.values))


class MaxReducer(ReducerAggregator):
    def init(self) -> Any:
        return None

    def reduce(self, curr: Any, tuple: Any) -> Any:
        return tuple[0] if curr is None else max(curr, tuple[0])


class SumAndCount(BaseAggregator):
    """An aggregator emitting two fields at the end of the batch (partition)."""

    def init(self, batch_id: Any, collector: Any) -> Any:
        return [0, 0]

    def aggregate(self, state: Any, tuple: Any, collector: Any) -> None:
        state[0] += tuple[0]
        state[1] += 1

    def complete(self, state: Any, collector: Any) -> None:
        collector.emit(state)


def test_each_filter_map_flat_map_peek_project() -> None:
    """each appends the function's fields; filter keeps; map replaces (fields kept unless given); flat_map
    emits any number; peek sees and passes; project keeps the named fields in order."""
    spout = FixedBatchSpout(["sentence", "n"], 2, ["the quick fox", 1], ["jumps over", 2], ["lazy dogs", 3])
    topology = TridentTopology()
    stream = topology.new_stream("ops", spout)
    words = stream.each(["sentence"], Split(), ["word"])
    each = record(words)
    filtered = record(words.each(["word"], LongWords()))
    filtered_too = record(words.filter(["word"], LongWords()))
    mapped = record(words.map(lambda t: [t["word"].upper(), t["n"] * 10, t["sentence"]]))
    renamed = record(words.map(lambda t: [t["word"], len(t["word"])], ["w", "length"]).project(["length", "w"]))
    flat = record(stream.flat_map(lambda t: [[t["n"]]] * t["n"], ["n"]))
    peeked = Peeked()
    peek = record(stream.peek(lambda t: None).peek(peeked).project(["n"]))
    no_nulls = record(stream.map(lambda t: [t["sentence"], t["n"] if t["n"] != 2 else None])
                      .each(["n"], FilterNull()).project(["n"]))
    debug = record(stream.each(["n"], Debug("ops")).project(["n"]))
    with running(topology):
        wait(lambda: each.has(1, 2) and debug.has(2) and no_nulls.has(2), "two batches")
    assert multiset_eq(each.rows(1), [
        ["the quick fox", 1, "the"], ["the quick fox", 1, "quick"], ["the quick fox", 1, "fox"],
        ["jumps over", 2, "jumps"], ["jumps over", 2, "over"],
    ])
    assert multiset_eq(each.rows(2), [["lazy dogs", 3, "lazy"], ["lazy dogs", 3, "dogs"]])
    assert multiset_eq(filtered.rows(1), [["the quick fox", 1, "quick"], ["jumps over", 2, "jumps"],
                                          ["jumps over", 2, "over"]])
    assert multiset_eq(filtered_too.rows(1), filtered.rows(1))
    assert multiset_eq(mapped.rows(2), [["LAZY", 30, "lazy dogs"], ["DOGS", 30, "lazy dogs"]])
    assert multiset_eq(renamed.rows(2), [[4, "lazy"], [4, "dogs"]])
    assert multiset_eq(flat.rows(1), [[1], [2], [2]])
    assert multiset_eq(flat.rows(2), [[3], [3], [3]])
    assert multiset_eq(peek.rows(1), [[1], [2]])
    assert multiset_eq(no_nulls.rows(1), [[1]])
    assert multiset_eq(debug.rows(2), [[3]])


def test_merge_takes_the_first_streams_fields() -> None:
    """merge: every tuple of every stream, named by the first stream's fields."""
    topology = TridentTopology()
    a = topology.new_stream("a", FixedBatchSpout(["x"], 2, [1], [2], [3]))
    b = topology.new_stream("b", FixedBatchSpout(["y"], 1, [10], [20]))
    merged = topology.merge(a, b.map(lambda t: [t["y"] * 2]))
    assert list(merged.get_output_fields()) == ["x"]
    rows = record(merged.each(["x"], Debug()).map(lambda t: [t["x"]]))
    with running(topology):
        wait(lambda: rows.has(1, 2), "two batches")
    assert multiset_eq(rows.rows(1), [[1], [2], [20]])
    assert multiset_eq(rows.rows(2), [[3], [40]])


def test_join_is_an_inner_join_within_each_batch() -> None:
    """join: join fields, then the first stream's other fields, then the second's; only within a batch."""
    topology = TridentTopology()
    people = topology.new_stream("people", FixedBatchSpout(["id", "name"], 3, [1, "ann"], [2, "bob"], [3, "cy"],
                                                           [4, "dee"]))
    cities = topology.new_stream("cities", FixedBatchSpout(["pid", "city", "zip"], 3, [1, "rome", 100],
                                                           [1, "oslo", 200], [5, "lima", 300], [4, "kiev", 400]))
    joined = topology.join(people, ["id"], cities, ["pid"], ["id", "name", "city", "zip"])
    rows = record(joined)
    with running(topology):
        wait(lambda: rows.has(1, 2), "two batches")
    assert multiset_eq(rows.rows(1), [[1, "ann", "rome", 100], [1, "ann", "oslo", 200]])
    assert multiset_eq(rows.rows(2), [[4, "dee", "kiev", 400]])


def test_first_n() -> None:
    """FirstN: n tuples of each batch; sorted ascending by a field, or descending with reverse."""
    values = [[5, "e"], [1, "a"], [4, "d"], [2, "b"], [3, "c"]]
    topology = TridentTopology()
    stream = topology.new_stream("firstn", FixedBatchSpout(["n", "s"], 5, *values)).shuffle().parallelism_hint(2)
    some = record(stream.apply_assembly(FirstN(2)))
    smallest = record(stream.apply_assembly(FirstN(2, "n")))
    largest = record(stream.apply_assembly(FirstN(3, "n", reverse=True)))
    with running(topology):
        wait(lambda: some.has(1) and smallest.has(1) and largest.has(1), "a batch")
    assert len(some.rows(1)) == 2 and all(r in values for r in some.rows(1))
    assert smallest.rows(1) == [[1, "a"], [2, "b"]]
    assert largest.rows(1) == [[5, "e"], [4, "d"], [3, "c"]]


def test_every_aggregator_kind() -> None:
    """Combiner, reducer and aggregator: global and per group, over every partition of the batch."""
    values = [["a", 1], ["b", 5], ["a", 3], ["c", 2], ["b", 1], ["a", 7]]
    topology = TridentTopology()
    stream = topology.new_stream("aggs", FixedBatchSpout(["k", "v"], 6, *values)).shuffle().parallelism_hint(3)
    count = record(stream.aggregate(Count(), ["count"]))
    total = record(stream.aggregate(["v"], Sum(), ["sum"]))
    biggest = record(stream.aggregate(["v"], MaxReducer(), ["max"]))
    both = record(stream.aggregate(["v"], SumAndCount(), ["sum", "count"]))
    grouped_sum = record(stream.group_by(["k"]).aggregate(["v"], Sum(), ["sum"]))
    grouped_max = record(stream.group_by(["k"]).aggregate(["v"], MaxReducer(), ["max"]))
    grouped_both = record(stream.group_by(["k"]).aggregate(["v"], SumAndCount(), ["sum", "count"]))
    partitions = record(stream.partition_aggregate(Count(), ["count"]))
    with running(topology):
        wait(lambda: all(r.has(1) for r in (count, total, biggest, both, grouped_sum, grouped_max, grouped_both,
                                            partitions)), "the first batch")
    assert count.rows(1) == [[6]]
    assert total.rows(1) == [[19]]
    assert biggest.rows(1) == [[7]]
    assert both.rows(1) == [[19, 6]]
    assert multiset_eq(grouped_sum.rows(1), [["a", 11], ["b", 6], ["c", 2]])
    assert multiset_eq(grouped_max.rows(1), [["a", 7], ["b", 5], ["c", 2]])
    assert multiset_eq(grouped_both.rows(1), [["a", 11, 3], ["b", 6, 2], ["c", 2, 1]])
    per_partition = partitions.rows(1)
    assert len(per_partition) == 3 and sum(r[0] for r in per_partition) == 6


def test_global_aggregate_is_one_tuple_per_batch_whatever_the_parallelism() -> None:
    """A global aggregate (and batch_global) yields one tuple per batch even when its bolt has 3 tasks."""
    topology = TridentTopology()
    stream = topology.new_stream("global", FixedBatchSpout(["v"], 2, [1], [2], [3], [4]))
    counted = stream.shuffle().parallelism_hint(3).aggregate(Count(), ["count"]).parallelism_hint(3)
    count = record(counted)
    by_batch = record(stream.batch_global().partition_aggregate(["v"], Sum(), ["sum"]).parallelism_hint(3))
    with running(topology):
        wait(lambda: count.has(1, 2, 3) and by_batch.has(1, 2, 3), "three batches")
    assert [count.rows(t) for t in (1, 2, 3)] == [[[2]], [[2]], [[0]]]
    assert [by_batch.rows(t) for t in (1, 2, 3)] == [[[3]], [[7]], [[0]]]
    assert count.tasks_completed(1) == 1 and by_batch.tasks_completed(2) == 1


def test_broadcast_sends_every_tuple_to_every_partition() -> None:
    """broadcast: every task of the next bolt gets the whole batch; shuffle: each tuple goes to one task."""
    topology = TridentTopology()
    stream = topology.new_stream("broadcast", FixedBatchSpout(["v"], 3, [1], [2], [3]))
    counts = record(stream.broadcast().partition_aggregate(Count(), ["count"]).parallelism_hint(3))
    shuffled = record(stream.shuffle().partition_aggregate(Count(), ["count"]).parallelism_hint(3))
    with running(topology):
        wait(lambda: counts.has(1) and shuffled.has(1), "a batch")
    assert counts.rows(1) == [[3], [3], [3]]
    assert len(shuffled.rows(1)) == 3 and sum(r[0] for r in shuffled.rows(1)) == 3  # each tuple to one task


def test_empty_batches_yield_zero_and_init_results() -> None:
    """Once the spout is exhausted its batches are empty: a combiner gives zero(), a reducer init(), an
    aggregator its init state; grouped aggregates give nothing."""
    topology = TridentTopology()
    stream = topology.new_stream("empty", FixedBatchSpout(["k", "v"], 5, ["a", 1]))
    count = record(stream.aggregate(Count(), ["count"]))
    reduced = record(stream.aggregate(["v"], MaxReducer(), ["max"]))
    both = record(stream.aggregate(["v"], SumAndCount(), ["sum", "count"]))
    grouped = record(stream.group_by(["k"]).aggregate(Count(), ["count"]))
    with running(topology):
        wait(lambda: all(r.has(1, 2, 3) for r in (count, reduced, both, grouped)), "three batches")
    assert count.rows(1) == [[1]] and count.rows(2) == [[0]] and count.rows(3) == [[0]]
    assert reduced.rows(1) == [[1]] and reduced.rows(2) == [[None]]
    assert both.rows(1) == [[1, 1]] and both.rows(2) == [[0, 0]]
    assert grouped.rows(1) == [["a", 1]] and grouped.rows(2) == []


def test_cycling_spout_starts_again() -> None:
    """FixedBatchSpout.set_cycle(True): after the last value the next batch starts from the first."""
    spout = FixedBatchSpout(["v"], 2, [1], [2], [3])
    spout.set_cycle(True)
    topology = TridentTopology()
    rows = record(topology.new_stream("cycle", spout))
    with running(topology):
        wait(lambda: rows.has(1, 2, 3, 4), "four batches")
    assert [rows.rows(t) for t in (1, 2, 3, 4)] == [[[1], [2]], [[3]], [[1], [2]], [[3]]]
