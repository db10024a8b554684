"""SequencePartitionedSpout: batches from a pure function replay identically anywhere; pacing; going quiet.

The LocalCluster tests run the storm-starter global count and word counts over the spout with seeded
FailedExceptions (processing and commit phases), once straight through and once killed midway and resubmitted
under the same transactional id; SQLite must hold the exact truth and commits must come in txid order.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from typing import Any

import pytest

from examples import transactional_global_count as global_count
from examples import transactional_words as words
from storm_py import LocalCluster
from storm_py.api.topology import StormTopology
from storm_py.clock import SimulatedClock, wait_until
from storm_py.transactional import (
    SeededWords,
    SequencePartitionedSpout,
    TransactionalTopologyBuilder,
    TransactionAttempt,
)
from storm_py.transactional.batch import BatchCollector
from storm_py.transactional.partitioned import PartitionedTransactionalSpoutExecutor
from storm_py.transactional.sequence import TX_ID_KEY, batch_meta
from tests.transactional.helpers import BoltCapture, make_context, memory_state
from tests.transactional.test_chaos import VOCABULARY, FaultPlan, assert_commits_in_order

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def offsets(p: int, o: int) -> list[Any]:
    return [f"p{p}-{o}"]


def executor(spout: SequencePartitionedSpout, tx_id: str = "seq") -> PartitionedTransactionalSpoutExecutor:
    return PartitionedTransactionalSpoutExecutor(spout, tx_id)


def emitter_of(spout: SequencePartitionedSpout, state: Any, task_index: int = 0, num_tasks: int = 1) -> Any:
    tasks = list(range(1, num_tasks + 1))
    ctx = make_context(state, "spout", tasks[task_index], {"spout": tasks})
    return executor(spout).get_emitter({}, ctx)


def coordinator_of(spout: SequencePartitionedSpout, state: Any, clock: Any = None, tx_id: str = "seq") -> Any:
    ctx = make_context(state, "spout/coordinator", 1, {"spout/coordinator": [1]}, clock=clock)
    return executor(spout, tx_id).get_coordinator({TX_ID_KEY: tx_id}, ctx)


def emitted(capture: BoltCapture) -> list[list[Any]]:
    return [[v[0].transaction_id, *v[1:]] for v in capture.take().get("default", [])]


# ------------------------------------------------------------------------------------------------ the source


def test_seeded_words_are_a_pure_function_of_seed_partition_and_offset():
    vocabulary = ["apple", "banana", "cat", "dog", "egg", "fig"]
    words_of = SeededWords(vocabulary, 7)
    # pinned: the same in every process, every run and every PYTHONHASHSEED
    assert [words_of.word(0, o) for o in range(8)] == ["apple", "dog", "fig", "banana", "fig", "cat", "fig", "banana"]
    assert words_of(1, 0) == ["egg"]
    assert [SeededWords(vocabulary, 8).word(0, o) for o in range(8)] != [words_of.word(0, o) for o in range(8)]
    code = f"from storm_py.transactional import SeededWords as S; print(S({vocabulary!r}, 7).word(1, 5))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert out.stdout.strip() == words_of.word(1, 5)
    with pytest.raises(ValueError):
        SeededWords([])


def test_batch_metadata_walks_the_offsets_and_stops_at_the_end():
    assert batch_meta(None, 4, 10) == {"index": 0, "amt": 4}
    assert batch_meta({"index": 4, "amt": 4}, 4, 10) == {"index": 8, "amt": 2}
    assert batch_meta({"index": 8, "amt": 2}, 4, 10) == {"index": 10, "amt": 0}
    assert batch_meta({"index": 10, "amt": 0}, 4, 10) == {"index": 10, "amt": 0}
    assert batch_meta({"index": 400, "amt": 4}, 4, None) == {"index": 404, "amt": 4}
    for bad in ({"take_per_batch": 0}, {"partitions": 0}, {"length": -1}, {"batch_interval_secs": -1.0}):
        kw: dict[str, Any] = {"take_per_batch": 2, **bad}
        with pytest.raises(ValueError):
            SequencePartitionedSpout(offsets, ["w"], **kw)


def test_replays_emit_the_same_batch_in_a_fresh_emitter_on_the_same_state():
    spout = SequencePartitionedSpout(offsets, ["w"], take_per_batch=2, partitions=2, length=5)
    assert spout.tuples(0) == [["p0-0"], ["p0-1"], ["p0-2"], ["p0-3"], ["p0-4"]]
    state = memory_state()
    cap = BoltCapture()
    out = BatchCollector(cap)
    emitter = emitter_of(spout, state)
    emitter.emit_batch(TransactionAttempt(1, 1), 2, out)
    emitter.emit_batch(TransactionAttempt(2, 1), 2, out)
    assert emitted(cap) == [[1, "p0-0"], [1, "p0-1"], [1, "p1-0"], [1, "p1-1"],
                            [2, "p0-2"], [2, "p0-3"], [2, "p1-2"], [2, "p1-3"]]
    assert state.transactional_get("seq", "user", "1", "2") == {"index": 2, "amt": 2}

    # another process (a restarted worker, a resubmitted topology) holds nothing but the persisted metadata
    elsewhere = emitter_of(SequencePartitionedSpout(offsets, ["w"], 2, 2, 5), state)
    elsewhere.emit_batch(TransactionAttempt(2, 9), 2, out)
    assert emitted(cap) == [[2, "p0-2"], [2, "p0-3"], [2, "p1-2"], [2, "p1-3"]]
    elsewhere.emit_batch(TransactionAttempt(3, 1), 2, out)
    elsewhere.emit_batch(TransactionAttempt(4, 1), 2, out)
    assert emitted(cap) == [[3, "p0-4"], [3, "p1-4"]]  # the last batch is short, then they are empty


def test_partitions_are_dealt_over_the_emitter_tasks():
    spout = SequencePartitionedSpout(offsets, ["w"], take_per_batch=1, partitions=3, length=1)
    state = memory_state()
    cap = BoltCapture()
    for index in range(2):
        emitter_of(spout, state, index, 2).emit_batch(TransactionAttempt(1, 1), 3, BatchCollector(cap))
    assert emitted(cap) == [[1, "p0-0"], [1, "p2-0"], [1, "p1-0"]]


def test_the_coordinator_paces_new_transactions_on_the_cluster_clock():
    clock = SimulatedClock()
    spout = SequencePartitionedSpout(offsets, ["w"], take_per_batch=1, partitions=4, batch_interval_secs=2.0)
    coordinator = coordinator_of(spout, memory_state(), clock)
    assert coordinator.initialize_transaction(1, None) == 4
    assert coordinator.is_ready()
    assert not coordinator.is_ready()
    clock.advance(1.5)
    assert not coordinator.is_ready()
    clock.advance(0.5)
    assert coordinator.is_ready()
    assert not coordinator.is_ready()
    unpaced = coordinator_of(SequencePartitionedSpout(offsets, ["w"], 1), memory_state(), clock)
    assert all(unpaced.is_ready() for _ in range(5))  # unbounded and unpaced: always ready


def test_the_coordinator_starts_nothing_once_every_partition_was_emitted_to_its_end():
    clock = SimulatedClock()
    spout = SequencePartitionedSpout(offsets, ["w"], take_per_batch=2, partitions=2, length=3)
    state = memory_state()
    coordinator = coordinator_of(spout, state, clock)
    emitter = emitter_of(spout, state)
    out = BatchCollector(BoltCapture())
    assert coordinator.is_ready()
    emitter.emit_batch(TransactionAttempt(1, 1), 2, out)
    clock.advance(1)
    assert coordinator.is_ready()  # offsets 2.. are still to come
    emitter.emit_batch(TransactionAttempt(2, 1), 2, out)
    assert coordinator.is_ready()  # the partitions are read at most every END_CHECK_SECS
    clock.advance(1)
    assert not coordinator.is_ready()
    clock.advance(10)
    assert not coordinator.is_ready()
    # a coordinator opened later (a restart, a resubmit) sees the same from the persisted metadata
    assert not coordinator_of(spout, state, clock).is_ready()
    assert coordinator_of(spout, state, clock, tx_id="another").is_ready()
    empty = SequencePartitionedSpout(offsets, ["w"], take_per_batch=2, length=0)
    assert not coordinator_of(empty, memory_state(), clock).is_ready()


# ------------------------------------------------------------------------------------------- in LocalCluster

PARTITIONS = 2
TAKE = 4
BATCHES = 50
CONF = {"topology.max.spout.pending": 3, "topology.message.timeout.secs": 300, "topology.workers": 2}


def sequence_spout(seed: int, interval: float) -> SequencePartitionedSpout:
    return SequencePartitionedSpout(SeededWords(VOCABULARY, seed), ["word"], TAKE, PARTITIONS, BATCHES * TAKE,
                                    batch_interval_secs=interval)


def counting_topology(db_path: str, spout: SequencePartitionedSpout, plan: FaultPlan, tx_id: str) -> StormTopology:
    """The global count and the word counts of storm-starter on one spout, all writing ``db_path``."""
    builder = TransactionalTopologyBuilder(tx_id, "spout", spout, 2)
    builder.set_bolt("partial-count", global_count.BatchCount(plan), 3).none_grouping("spout")
    builder.set_bolt("sum", global_count.UpdateGlobalCount(db_path, plan)).global_grouping("partial-count")
    builder.set_bolt("count", words.KeyedCountUpdater(db_path, plan), 3).fields_grouping("spout", ["word"])
    builder.set_bolt("bucketize", words.Bucketize()).none_grouping("count")
    builder.set_bolt("buckets", words.BucketCountUpdater(db_path, plan), 2).fields_grouping("bucketize", ["bucket"])
    return builder.build_topology()


def truth(spout: SequencePartitionedSpout) -> collections.Counter[str]:
    return collections.Counter(values[0] for p in range(spout.partitions) for values in spout.tuples(p))


def fresh_db(path: str) -> tuple[global_count.GlobalCountDB, words.WordsDB]:
    return global_count.GlobalCountDB(path), words.WordsDB(path)


def run_until(cluster: LocalCluster, done: Any, what: str, timeout: float = 120.0) -> None:
    """Advance simulated time a second at a time until ``done()``."""

    def step() -> bool:
        if done():
            return True
        cluster.advance_cluster_time(1)
        return bool(done())

    wait_until(step, timeout, interval=0, what=what)


def assert_exact(
    counts: global_count.GlobalCountDB, per_word: words.WordsDB, expected: collections.Counter[str]
) -> None:
    total = sum(expected.values())
    count, _ = counts.read() or (0, 0)
    assert count == total
    history = counts.history()
    assert [t for t, _ in history] == list(range(1, len(history) + 1)), "every txid applied exactly once, in order"
    grew = sum(1 for (_, before), (_, after) in zip([(0, 0), *history], history, strict=False) if after != before)
    assert grew == BATCHES, "each batch carrying data was added once"
    assert per_word.word_counts() == dict(expected)
    assert per_word.bucket_counts() == words.expected_buckets(dict(expected))


def currtx(cluster: LocalCluster, tx_id: str) -> int:
    return int(cluster.state.transactional_get(tx_id, "coordinator", "currtx") or 1)


@pytest.mark.parametrize("seed", [5, 31])
def test_counts_are_exact_under_injected_failures_and_the_topology_goes_quiet(tmp_path, seed):
    spout = sequence_spout(seed, interval=1.0)
    plan = FaultPlan(seed, 0.10, processing={"partial-count.execute", "count.execute"},
                     commits={"sum", "count", "buckets"})
    counts, per_word = fresh_db(str(tmp_path / "counts.db"))
    tx_id = f"seq-chaos-{seed}"
    expected = truth(spout)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("seq-chaos", CONF, counting_topology(counts.path, spout, plan, tx_id))
        run_until(cluster, lambda: (counts.read() or (0, 0))[0] == sum(expected.values()), "every word counted")
        run_until(cluster, lambda: per_word.word_counts() == dict(expected), "every word's count")
        # no transaction starts once the source is exhausted: the committed txid stops moving
        run_until(cluster, lambda: nothing_in_flight(cluster, tx_id), "the coordinator to stop")
        settled = currtx(cluster, tx_id)
        cluster.advance_cluster_time(20)
        assert currtx(cluster, tx_id) == settled
        cluster.kill_topology("seq-chaos", 0)

    assert_exact(counts, per_word, expected)
    for point in ("sum.before-write", "count.before-write", "buckets.before-write"):
        assert_commits_in_order(plan.commit_calls, point)
    assert plan.fired_at(".execute") >= 1, "some batches failed while processing"
    assert plan.fired_at("-write") >= 1, "some commits failed"
    print(f"seed {seed}: {len(counts.history())} commits, injected failures: {sorted(plan.fired)}")


def nothing_in_flight(cluster: LocalCluster, tx_id: str) -> bool:
    """Every started transaction is committed: the coordinator keeps metadata only of the last committed one."""
    meta = cluster.state.transactional_children(tx_id, "coordinator", "meta")
    return [int(t) for t in meta] == [currtx(cluster, tx_id) - 1]


def test_a_killed_and_resubmitted_topology_continues_at_the_next_txid(tmp_path):
    seed = 77
    spout = sequence_spout(seed, interval=1.0)
    plan = FaultPlan(seed, 0.10, processing={"partial-count.execute", "count.execute"},
                     commits={"sum", "count", "buckets"})
    counts, per_word = fresh_db(str(tmp_path / "counts.db"))
    tx_id = "seq-resubmit"
    expected = truth(spout)
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("first", CONF, counting_topology(counts.path, spout, plan, tx_id))
        run_until(cluster, lambda: len(counts.history()) >= 20, "twenty commits")
        cluster.kill_topology("first", 0)
        run_until(cluster, lambda: not cluster.workers(), "the first topology's workers to stop")
        at_kill = currtx(cluster, tx_id)
        applied = counts.history()[-1][0]
        assert applied in (at_kill - 1, at_kill)  # the last commit may have been written but not acked
        assert (counts.read() or (0, 0))[0] < sum(expected.values()), "killed after the end: raise BATCHES"
        calls_before = len(plan.commit_calls)

        cluster.submit_topology("second", CONF, counting_topology(counts.path, spout, plan, tx_id))
        run_until(cluster, lambda: (counts.read() or (0, 0))[0] == sum(expected.values()), "every word counted")
        run_until(cluster, lambda: per_word.word_counts() == dict(expected), "every word's count")
        cluster.kill_topology("second", 0)

    resumed = [t for p, t in plan.commit_calls[calls_before:] if p == "sum.before-write"]
    assert resumed[0] == at_kill, "the resubmitted topology commits the next transaction first"
    assert_exact(counts, per_word, expected)
    for point in ("sum.before-write", "count.before-write", "buckets.before-write"):
        assert_commits_in_order(plan.commit_calls, point)
