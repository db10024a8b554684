"""Partitioned and opaque-partitioned emitters: identical replays, skipped stale txids, committed metadata."""

from __future__ import annotations

from storm_py.transactional import MemoryTransactionalSpout, OpaqueMemoryTransactionalSpout, TransactionAttempt
from storm_py.transactional.batch import BatchCollector
from storm_py.transactional.partitioned import (
    OpaquePartitionedTransactionalSpoutExecutor,
    PartitionedTransactionalSpoutExecutor,
    owned_partitions,
)
from storm_py.transactional.spouts import OpaquePartitionedTransactionalSpout
from tests.transactional.helpers import BoltCapture, make_context, memory_state


def emitted(capture: BoltCapture) -> list[list]:
    return [[v[0].transaction_id, *v[1:]] for v in capture.take().get("default", [])]


def partitioned(data, state, task_index=0, num_tasks=1, take=2):
    spout = PartitionedTransactionalSpoutExecutor(MemoryTransactionalSpout(data, ["w"], take), "pt")
    tasks = list(range(1, num_tasks + 1))
    ctx = make_context(state, "spout", tasks[task_index], {"spout": tasks})
    return spout.get_emitter({}, ctx)


def test_replays_emit_the_same_batch_even_after_a_restart():
    data = {0: [["a"], ["b"], ["c"]], 1: [["d"]]}
    state = memory_state()
    emitter = partitioned(data, state)
    cap = BoltCapture()
    out = BatchCollector(cap)
    emitter.emit_batch(TransactionAttempt(1, 1), 2, out)
    first = emitted(cap)
    assert first == [[1, "a"], [1, "b"], [1, "d"]]
    data[0].insert(0, ["x"])  # the source changes under us: replays still follow the stored metadata
    emitter.emit_batch(TransactionAttempt(1, 2), 2, out)
    assert emitted(cap) == [[1, "x"], [1, "a"], [1, "d"]]  # same positions (index 0, 2 tuples)
    restarted = partitioned(data, state)
    restarted.emit_batch(TransactionAttempt(1, 3), 2, out)
    assert emitted(cap) == [[1, "x"], [1, "a"], [1, "d"]]
    assert state.transactional_get("pt", "user", "0", "1") == {"index": 0, "amt": 2}
    restarted.emit_batch(TransactionAttempt(2, 1), 2, out)
    assert emitted(cap) == [[2, "b"], [2, "c"]]
    restarted.cleanup_before(2)
    assert state.transactional_children("pt", "user", "0") == ["2"]


def test_a_txid_seen_after_a_later_one_emits_nothing():
    data = {0: [["a"], ["b"], ["c"]]}
    emitter = partitioned(data, memory_state(), take=1)
    cap = BoltCapture()
    out = BatchCollector(cap)
    emitter.emit_batch(TransactionAttempt(1, 1), 1, out)
    emitter.emit_batch(TransactionAttempt(3, 1), 1, out)
    emitter.emit_batch(TransactionAttempt(2, 1), 1, out)
    assert emitted(cap) == [[1, "a"], [3, "b"]]


def test_partitions_are_dealt_over_emitter_tasks():
    assert list(owned_partitions(1, 3, 8)) == [1, 4, 7]
    data = {p: [[f"p{p}"]] for p in range(5)}
    state = memory_state()
    cap = BoltCapture()
    for index in range(2):
        partitioned(data, state, index, 2).emit_batch(TransactionAttempt(1, 1), 5, BatchCollector(cap))
    assert emitted(cap) == [[1, "p0"], [1, "p2"], [1, "p4"], [1, "p1"], [1, "p3"]]


def opaque(spout, state):
    ex = OpaquePartitionedTransactionalSpoutExecutor(spout, "op")
    return ex.get_emitter({}, make_context(state, "spout", 1, {"spout": [1]}))


def test_opaque_attempts_continue_from_committed_metadata():
    data = {0: [["a"], ["b"], ["c"], ["d"], ["e"]]}
    state = memory_state()
    spout = OpaqueMemoryTransactionalSpout(data, ["w"], 2)
    emitter = opaque(spout, state)
    cap = BoltCapture()
    out = BatchCollector(cap)
    t1, t2 = TransactionAttempt(1, 1), TransactionAttempt(2, 1)
    emitter.emit_batch(t1, None, out)
    emitter.emit_batch(t2, None, out)  # pipelined: follows txid 1's in-flight metadata
    assert emitted(cap) == [[1, "a"], [1, "b"], [2, "c"], [2, "d"]]
    assert state.transactional_children("op", "user", "0") == []  # nothing persisted before a commit
    emitter.commit(t1)
    assert state.transactional_get("op", "user", "0", "1") == {"index": 0, "amt": 2}

    spout.set_disabled(0, True)  # the replay of txid 2 differs: the partition emits nothing
    emitter.emit_batch(TransactionAttempt(2, 2), None, out)
    assert emitted(cap) == []
    spout.set_disabled(0, False)
    emitter.emit_batch(TransactionAttempt(2, 3), None, out)
    assert emitted(cap) == [[2, "c"], [2, "d"]]
    emitter.commit(TransactionAttempt(2, 3))

    restarted = opaque(spout, state)  # a new emitter continues from the last committed metadata
    restarted.emit_batch(TransactionAttempt(3, 1), None, out)
    assert emitted(cap) == [[3, "e"]]
    restarted.cleanup_before(2)  # txid 2 is the last committed one: its metadata stays
    assert state.transactional_children("op", "user", "0") == ["2"]


class _GrowingSource(OpaquePartitionedTransactionalSpout):
    """One partition; a new batch takes every record there is now, so a replay from the same place differs
    once more records arrived; ``reemit_partition_batch`` repeats a batch that still follows the last one."""

    def __init__(self, records: list[str]) -> None:
        self.records = records

    def num_partitions(self) -> int:
        return 1

    def emit_partition_batch(self, tx, collector, partition, last_meta):
        first = last_meta["next"] if last_meta else 0
        return self._emit(tx, collector, first, len(self.records))

    def reemit_partition_batch(self, tx, collector, partition, last_meta, meta):
        if meta["first"] != (last_meta["next"] if last_meta else 0):
            return self.emit_partition_batch(tx, collector, partition, last_meta)
        return self._emit(tx, collector, meta["first"], meta["next"])

    def _emit(self, tx, collector, first, nxt):
        for word in self.records[first:nxt]:
            collector.emit([tx, word])
        return {"first": first, "next": nxt}

    def declare_output_fields(self, declarer) -> None:
        declarer.declare(["tx", "w"])


def test_an_opaque_replay_of_a_partly_committed_txid_emits_the_batch_the_state_may_hold():
    records = ["a", "b"]
    state = memory_state()
    source = _GrowingSource(records)
    emitter = opaque(source, state)
    cap = BoltCapture()
    out = BatchCollector(cap)
    emitter.emit_batch(TransactionAttempt(1, 1), None, out)
    emitter.emit_batch(TransactionAttempt(2, 1), None, out)
    assert emitted(cap) == [[1, "a"], [1, "b"]]
    emitter.commit(TransactionAttempt(1, 1))  # this task (and maybe a state) commits; another task fails it
    records.append("c")
    emitter.emit_batch(TransactionAttempt(1, 2), None, out)  # the replay is the batch txid 1 committed
    emitter.emit_batch(TransactionAttempt(2, 2), None, out)  # txid 2's first attempt (empty) follows it still
    assert emitted(cap) == [[1, "a"], [1, "b"]]

    restarted = opaque(source, state)  # after a restart the persisted batch of txid 1 is the replay
    records.append("d")
    restarted.emit_batch(TransactionAttempt(1, 3), None, out)
    restarted.emit_batch(TransactionAttempt(2, 3), None, out)
    assert emitted(cap) == [[1, "a"], [1, "b"], [2, "c"], [2, "d"]]
    restarted.commit(TransactionAttempt(1, 3))
    restarted.emit_batch(TransactionAttempt(2, 4), None, out)  # txid 2 was never committed: it repeats too
    assert emitted(cap) == [[2, "c"], [2, "d"]]
    assert state.transactional_get("op", "user", "0", "1") == {"first": 0, "next": 2}


def test_an_opaque_replay_that_no_longer_follows_the_previous_batch_emits_a_new_one():
    records = ["a", "b", "c"]
    state = memory_state()
    source = _GrowingSource(records)
    emitter = opaque(source, state)
    cap = BoltCapture()
    out = BatchCollector(cap)
    emitter.emit_batch(TransactionAttempt(1, 1), None, out)
    emitter.commit(TransactionAttempt(1, 1))
    emitter.emit_batch(TransactionAttempt(2, 1), None, out)
    emitted(cap)
    emitter.cached[1] = {0: {"first": 0, "next": 1}}  # txid 1's batch as a replay re-emitted it differently
    emitter.emit_batch(TransactionAttempt(2, 2), None, out)
    assert emitted(cap) == [[2, "b"], [2, "c"]]
