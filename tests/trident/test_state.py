"""Trident state in LocalCluster: persistent_aggregate with every MemoryMapState kind, state_query with
MapGet, partition_persist, and exactly-once counts when batches fail and are replayed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py.testing import multiset_eq
from storm_py.trident import (
    BaseFunction,
    BaseStateUpdater,
    Count,
    FixedBatchSpout,
    MapGet,
    MemoryMapState,
    OpaqueValue,
    ReducerAggregator,
    TransactionalValue,
    TridentTopology,
)
from tests.trident.helpers import FailOnce, Seen, record, running, wait

SENTENCES = [
    ["the cow jumped over the moon"],
    ["the man went to the store and bought some candy"],
    ["four score and seven years ago"],
    ["how many apples can you eat"],
    ["to be or not to be the person"],
]
WORDS = Counter(w for (s,) in SENTENCES for w in s.split())


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split():
            collector.emit([word])


class CountReducer(ReducerAggregator):
    def init(self) -> Any:
        return 0

    def reduce(self, curr: Any, tuple: Any) -> Any:
        return curr + 1


def counts(factory: Any) -> dict[str, int]:
    return {key[0]: value for key, value in factory.values().items()}


def exhausted(rows: Any) -> bool:
    """Every sentence went through (the spout's last batch was txid 3; txid 4 is empty)."""
    return bool(rows.has(4))


@pytest.mark.parametrize("kind", ["opaque", "transactional", "non_transactional"])
def test_grouped_persistent_aggregate(kind: str) -> None:
    """group_by + persistent_aggregate counts every word over every batch, with a combiner and a reducer;
    the stored values are OpaqueValue / TransactionalValue / plain values per kind."""
    topology = TridentTopology()
    words = topology.new_stream(f"words-{kind}", FixedBatchSpout(["sentence"], 2, *SENTENCES)).each(
        ["sentence"], Split(), ["word"]
    )
    combined = MemoryMapState.factory(kind)
    reduced = MemoryMapState.factory(kind)
    new_values = record(words.group_by(["word"]).persistent_aggregate(combined, Count(), ["count"])
                        .parallelism_hint(3).new_values_stream())
    words.group_by(["word"]).persistent_aggregate(reduced, CountReducer(), ["count"]).parallelism_hint(2)
    with running(topology):
        wait(lambda: exhausted(new_values) and len(counts(reduced)) == len(WORDS), "every sentence counted")
    assert counts(combined) == dict(WORDS)
    assert counts(reduced) == dict(WORDS)
    stored = combined.stored()[("the",)]
    expected_type = {"opaque": OpaqueValue, "transactional": TransactionalValue, "non_transactional": int}[kind]
    assert isinstance(stored, expected_type)
    first = Counter(w for (s,) in SENTENCES[:2] for w in s.split())
    assert multiset_eq(new_values.rows(1), [[w, c] for w, c in first.items()])
    assert new_values.rows(4) == []


def test_ungrouped_persistent_aggregate_and_state_query() -> None:
    """persistent_aggregate without grouping keeps one global value (its new value every batch, empty
    batches included); state_query with MapGet reads a grouped state from the bolt holding it."""
    topology = TridentTopology()
    words = topology.new_stream("q-words", FixedBatchSpout(["sentence"], 2, *SENTENCES)).each(
        ["sentence"], Split(), ["word"]
    )
    total = MemoryMapState.factory("opaque")
    totals = record(words.persistent_aggregate(total, Count(), ["count"]).new_values_stream())
    word_counts = words.group_by(["word"]).persistent_aggregate(MemoryMapState.factory(), Count(), ["count"])
    queries = topology.new_stream("queries", FixedBatchSpout(["word"], 1, ["the"], ["cow"], ["nope"], ["be"]))
    answers = record(queries.group_by(["word"]).state_query(word_counts, MapGet(), ["count"]))
    lengths = record(queries.state_query(word_counts, ["word"], MapGet(), ["count"]).project(["count"]))
    with running(topology):
        wait(lambda: totals.has(1, 2, 3, 4) and answers.has(4) and lengths.has(1), "four batches")
    sizes = [sum(len(s.split()) for (s,) in SENTENCES[i:i + 2]) for i in (0, 2, 4)]
    running_totals = [sizes[0], sizes[0] + sizes[1], sum(sizes), sum(sizes)]
    assert [totals.rows(t) for t in (1, 2, 3, 4)] == [[[n]] for n in running_totals]
    assert list(total.values().values()) == [sum(sizes)]
    first = Counter(w for (s,) in SENTENCES[:2] for w in s.split())
    assert answers.rows(1) == [["the", first["the"]]]
    assert lengths.rows(1) == [[first["the"]]]
    assert answers.rows(3) == [["nope", None]]
    later = Counter(w for (s,) in SENTENCES for w in s.split())
    assert answers.rows(4) == [["be", later["be"]]]


class Collect(BaseStateUpdater):
    """Appends a batch's rows to a state holding a list; emits how many rows it got."""

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        state.update(lambda rows: (rows or []) + [t.values for t in tuples])
        collector.emit([len(tuples)])


def test_partition_persist_with_a_user_updater() -> None:
    """partition_persist hands a batch's tuples (projected) to the updater with the state; its emits are the
    new-values stream."""
    topology = TridentTopology()
    stream = topology.new_stream("pp", FixedBatchSpout(["a", "b"], 2, [1, "x"], [2, "y"], [3, "z"]))
    factory = MemoryMapState.factory("transactional")
    sizes = record(stream.global_().partition_persist(factory, ["b"], Collect(), ["n"]).new_values_stream())
    with running(topology):
        wait(lambda: sizes.has(1, 2, 3), "three batches")
    assert [sizes.rows(t) for t in (1, 2, 3)] == [[[2]], [[1]], [[0]]]
    assert list(factory.values().values()) == [[["x"], ["y"], ["z"]]]


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_replayed_batches_count_exactly_once(kind: str) -> None:
    """A function failing some batches the first time (before the state) and a new-values function failing
    after the state applied a batch: Trident replays them and every count is exact."""
    topology = TridentTopology()
    sentences = topology.new_stream(f"exact-{kind}", FixedBatchSpout(["sentence"], 1, *SENTENCES))
    before, after = Seen(), Seen()
    words = (
        sentences.each(["sentence"], FailOnce({SENTENCES[1][0], SENTENCES[3][0]}, before), [])
        .each(["sentence"], Split(), ["word"])
    )
    factory = MemoryMapState.factory(kind)
    total = MemoryMapState.factory(kind)
    state = words.group_by(["word"]).persistent_aggregate(factory, Count(), ["count"]).parallelism_hint(2)
    state.new_values_stream().each(["word"], FailOnce({"moon", "apples", "person"}, after), [])
    words.persistent_aggregate(total, Count(), ["n"])
    done = record(sentences)
    with running(topology, {"topology.message.timeout.secs": 10}):
        wait(lambda: done.has(len(SENTENCES) + 1) and counts(factory) == dict(WORDS), "every sentence counted")
    assert before.failures == 2 and after.failures == 3
    assert counts(factory) == dict(WORDS)
    assert list(total.values().values()) == [sum(WORDS.values())]


def test_non_transactional_state_double_counts_a_replayed_batch() -> None:
    """The contrast: a batch failed after a non-transactional state applied it is applied again."""
    topology = TridentTopology()
    sentences = topology.new_stream("at-least-once", FixedBatchSpout(["sentence"], 1, *SENTENCES[:2]))
    factory = MemoryMapState.factory("non_transactional")
    state = sentences.each(["sentence"], Split(), ["word"]).group_by(["word"]).persistent_aggregate(
        factory, Count(), ["count"]
    )
    state.new_values_stream().each(["word"], FailOnce({"moon"}, Seen()), [])
    done = record(sentences)
    with running(topology):
        wait(lambda: done.has(3) and counts(factory).get("candy") == 1, "both sentences counted")
    assert counts(factory)["moon"] == 2
    assert counts(factory)["cow"] == 2
