"""A Trident bolt run in-process: a function's emits counted by a grouped Count, batches interleaved."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py.api.tuple import Fields, Tuple
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.trident import BaseFunction, Count, FixedBatchSpout, TridentTopology
from storm_py.trident.planner import plan


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split():
            collector.emit([word])


class SplitWithLength(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split():
            collector.emit([len(word), word])


class Wire:
    def __init__(self) -> None:
        self.out: list[tuple[str, list[Any]]] = []
        self.acked = 0

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.out.append((stream, list(values)))
        return [2]

    def ack(self, tup: Tuple) -> None:
        self.acked += 1

    def fail(self, tup: Tuple) -> None:
        raise AssertionError(f"failed {tup!r}")

    def report_error(self, exc: BaseException) -> None:
        raise exc


class Context:
    this_component_id = "b"
    this_task_id = 1
    this_task_index = 0

    def get_component_tasks(self, component_id: str) -> list[int]:
        return [1]


def first_bolt(topology: TridentTopology) -> tuple[Any, str, str, Wire]:
    """The executor of the topology's first bolt, prepared with a recording wire, and its input."""
    bolt = plan(topology).bolts[0]
    executor = bolt.executor
    assert executor is not None
    ((source, stream),) = bolt.inputs
    wire = Wire()
    executor.prepare({}, Context(), wire)  # type: ignore[arg-type]
    return executor, source, stream, wire


@pytest.mark.parametrize(("function", "fields"), [(Split(), ["word"]), (SplitWithLength(), ["n", "word"])])
def test_grouped_count_of_emits_keeps_interleaved_batches_apart(function: BaseFunction, fields: list[str]) -> None:
    """Two batches open at once in one task: each batch's counts are its own words', whichever way the
    function's emits reach the count (one emitted field, or the group field among several)."""
    topology = TridentTopology()
    spout = FixedBatchSpout(["sentence"], 2, ["a b a"], ["c"])
    counts = topology.new_stream("s", spout).each(["sentence"], function, fields).group_by(["word"])
    counts.partition_aggregate(Count(), ["count"]).shuffle().each(["word"], Split(), ["again"])
    executor, source, stream, wire = first_bolt(topology)
    sentences = {1: ["a b a", "c a", "b"], 2: ["c c", "a"]}
    attempts = {txid: TransactionAttempt(txid, 5) for txid in sentences}
    for i in range(3):  # interleaved: tx 1, tx 2, tx 1, tx 2, tx 1
        for txid, batch in sentences.items():
            if i < len(batch):
                values = [attempts[txid], batch[i]]
                executor.execute(Tuple(values, Fields(["$tx", "sentence"]), source, stream, 1, None))
    assert wire.acked == 5
    assert not wire.out  # nothing leaves the bolt before its batch is complete
    for txid, batch in sentences.items():
        executor.finished_id(attempts[txid])
        counted = {v[1]: v[2] for _, v in wire.out if v[0] == attempts[txid]}
        assert counted == Counter(w for sentence in batch for w in sentence.split())


def test_tuples_find_their_batch_by_value_whatever_attempt_object_they_carry() -> None:
    """Equal attempt objects share a batch, another attempt of the same txid is a batch of its own, and a tuple
    arriving after its batch finished opens it again (nothing is counted into a finished batch)."""
    topology = TridentTopology()
    spout = FixedBatchSpout(["sentence"], 2, ["a b"])
    topology.new_stream("s", spout).each(["sentence"], Split(), ["word"]).group_by(["word"]).partition_aggregate(
        Count(), ["count"]
    ).shuffle().each(["word"], Split(), ["again"])
    executor, source, stream, wire = first_bolt(topology)

    def send(attempt: TransactionAttempt, sentence: str) -> None:
        executor.execute(Tuple([attempt, sentence], Fields(["$tx", "sentence"]), source, stream, 1, None))

    def finish(attempt: TransactionAttempt) -> dict[str, int]:
        wire.out.clear()
        executor.finished_id(attempt)
        return {v[1]: v[2] for _, v in wire.out}

    first, same, replay = TransactionAttempt(1, 5), TransactionAttempt(1, 5), TransactionAttempt(1, 6)
    send(first, "a b")
    send(same, "a")
    send(replay, "b")
    send(first, "b")
    assert finish(TransactionAttempt(1, 5)) == {"a": 2, "b": 2}
    assert finish(replay) == {"b": 1}
    send(first, "c")  # a straggler of the finished batch
    assert finish(same) == {"c": 1}
