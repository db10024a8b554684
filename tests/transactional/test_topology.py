"""Transactional topologies in LocalCluster: ports of Storm's topology, restart and opaque tests."""

from __future__ import annotations

import threading
from typing import Any

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.errors import FailedException
from storm_py.testing import TrackedTopology, complete_topology, multiset_eq, read_tuples, tracked_wait
from storm_py.testing.complete import capture_topology
from storm_py.testing.registry import Shared
from storm_py.transactional import (
    BaseBatchBolt,
    Committer,
    MemoryTransactionalSpout,
    OpaqueMemoryTransactionalSpout,
    TransactionalTopologyBuilder,
)
from storm_py.transactional.streams import COORD_STREAM
from tests.transactional.components import (
    ControllerBolt,
    Controls,
    CountingBatchBolt,
    CountingCommitBolt,
    IdentityBolt,
    KeyedCountingBatchBolt,
    KeyedCountingCommitterBolt,
    KeyedSummingBatchBolt,
    control,
)


def add_data(data: dict[int, list[Any]], more: dict[int, list[Any]]) -> None:
    for partition, rows in more.items():
        data.setdefault(partition, []).extend(rows)


def normalize(values: list[Any]) -> list[Any]:
    return [values[0].transaction_id, *values[1:]]


class Verifier:
    """Compares what components emitted on their default streams since the last check (as multisets)."""

    def __init__(self, store) -> None:
        self.store = store

    def __call__(self, expected: dict[str, list[list[Any]]]) -> None:
        results = self.store.snapshot()
        with self.store.lock:
            self.store.results.clear()
        for component, tuples in expected.items():
            emitted = [normalize(v) for v in read_tuples(results, component)]
            assert multiset_eq(tuples, emitted), f"{component}: expected {tuples}, got {emitted}"


def test_transactional_topology():
    """Ports transactional_test.clj test-transactional-topology: batches, ordered commits, a failed commit
    replayed with identical batches, empty batches finishing on every task."""
    with LocalCluster(simulated_time=True) as cluster:
        controls = Controls()
        data: dict[int, list[Any]] = {}
        builder = TransactionalTopologyBuilder("id", "spout", MemoryTransactionalSpout(data, ["word", "amt"], 2), 2)
        builder.set_bolt("id1", IdentityBolt(["tx", "word", "amt"]), 3).shuffle_grouping("spout")
        builder.set_bolt("id2", IdentityBolt(["tx", "word", "amt"]), 3).shuffle_grouping("spout")
        builder.set_bolt("global", CountingBatchBolt(), 1).global_grouping("spout")
        builder.set_bolt("gcommit", CountingCommitBolt(), 1).global_grouping("spout")
        builder.set_bolt("sum", KeyedSummingBatchBolt(), 2).fields_grouping("id1", ["word"])
        builder.set_committer_bolt("count", KeyedCountingBatchBolt(), 2).fields_grouping("id2", ["word"])
        (
            builder.set_bolt("count2", KeyedCountingCommitterBolt(), 3)
            .fields_grouping("sum", ["key"])
            .fields_grouping("count", ["key"])
        )
        topology_builder = builder.build_topology_builder()
        (
            topology_builder.set_bolt("controller", ControllerBolt(controls), 1)
            .all_grouping("count2", COORD_STREAM)
            .all_grouping("sum", COORD_STREAM)
        )
        add_data(data, {
            0: [["dog", 3], ["cat", 4], ["apple", 1], ["dog", 3]],
            1: [["cat", 1], ["mango", 4]],
            2: [["happy", 11], ["mango", 2], ["zebra", 1]],
        })
        captured, store = capture_topology(topology_builder.create_topology())
        tracked = TrackedTopology(captured, cluster)
        cluster.submit_topology("transactional-test", {"topology.max.spout.pending": 2}, tracked)
        cluster.advance_cluster_time(11)
        verify = Verifier(store)

        def ack_tx(*txids: int) -> None:
            control(cluster, controls, *(("ack", t) for t in txids))

        def fail_tx(*txids: int) -> None:
            control(cluster, controls, *(("fail", t) for t in txids))

        tracked_wait(tracked, 2)
        verify({
            "sum": [[1, "dog", 3], [1, "cat", 5], [1, "mango", 6], [1, "happy", 11],
                    [2, "apple", 1], [2, "dog", 3], [2, "zebra", 1]],
            "count": [], "count2": [], "global": [[1, 6], [2, 3]], "gcommit": [],
        })
        ack_tx(1)
        tracked_wait(tracked, 1)
        verify({
            "sum": [],
            "count": [[1, "dog", 1], [1, "cat", 2], [1, "mango", 2], [1, "happy", 1]],
            "count2": [[1, "dog", 2], [1, "cat", 2], [1, "mango", 2], [1, "happy", 2]],
            "global": [], "gcommit": [[1, 6]],
        })

        add_data(data, {
            0: [["a", 1], ["b", 2], ["c", 3]],
            1: [["d", 4], ["c", 1]],
            2: [["a", 2], ["e", 7], ["c", 11]],
            3: [["a", 2]],
        })
        ack_tx(1)
        tracked_wait(tracked, 1)
        verify({
            "sum": [[3, "a", 5], [3, "b", 2], [3, "d", 4], [3, "c", 1], [3, "e", 7]],
            "count": [], "count2": [], "global": [[3, 7]], "gcommit": [],
        })
        ack_tx(3, 2)
        tracked_wait(tracked, 1)
        verify({
            "sum": [],
            "count": [[2, "apple", 1], [2, "dog", 1], [2, "zebra", 1]],
            "count2": [[2, "apple", 2], [2, "dog", 2], [2, "zebra", 2]],
            "global": [], "gcommit": [[2, 3]],
        })

        fail_tx(2)  # the commit of txid 2 fails: 2 and 3 are replayed, with identical batches
        tracked_wait(tracked, 2)
        verify({
            "sum": [[2, "apple", 1], [2, "dog", 3], [2, "zebra", 1],
                    [3, "a", 5], [3, "b", 2], [3, "d", 4], [3, "c", 1], [3, "e", 7]],
            "count": [], "count2": [], "global": [[2, 3], [3, 7]], "gcommit": [],
        })
        ack_tx(2)
        tracked_wait(tracked, 1)
        verify({
            "sum": [],
            "count": [[2, "apple", 1], [2, "dog", 1], [2, "zebra", 1]],
            "count2": [[2, "apple", 2], [2, "dog", 2], [2, "zebra", 2]],
            "global": [], "gcommit": [[2, 3]],
        })

        ack_tx(2, 3)
        tracked_wait(tracked, 2)
        verify({
            "sum": [[4, "c", 14]],
            "count": [[3, "a", 3], [3, "b", 1], [3, "d", 1], [3, "c", 1], [3, "e", 1]],
            "count2": [[3, "a", 2], [3, "b", 2], [3, "d", 2], [3, "c", 2], [3, "e", 2]],
            "global": [[4, 2]], "gcommit": [[3, 7]],
        })

        ack_tx(4, 3)
        tracked_wait(tracked, 2)
        verify({
            "sum": [], "count": [[4, "c", 2]], "count2": [[4, "c", 2]], "global": [[5, 0]], "gcommit": [[4, 2]],
        })

        ack_tx(5, 4)
        tracked_wait(tracked, 2)
        verify({"sum": [], "count": [], "count2": [], "global": [[6, 0]], "gcommit": [[5, 0]]})


def test_transactional_topology_restart():
    """Ports transactional_test.clj test-transactional-topology-restart: a resubmitted topology continues
    at the next txid (state in the cluster's store), replaying what was not committed."""
    with LocalCluster(simulated_time=True) as cluster:
        data: dict[int, list[Any]] = {}
        builder = TransactionalTopologyBuilder("id", "spout", MemoryTransactionalSpout(data, ["word"], 3), 2)
        builder.set_bolt("count", CountingCommitBolt(), 2).global_grouping("spout")
        add_data(data, {0: [["a"], ["b"], ["c"], ["d"]], 1: [["d"], ["c"]]})
        conf = {"topology.debug": True, "topology.message.timeout.secs": 300}

        results = complete_topology(cluster, builder.build_topology(), storm_conf=conf, cleanup_state=False)
        counts = [v[1:] for v in read_tuples(results, "count")[:4]]
        assert multiset_eq(counts, [[5], [0], [1], [0]])

        add_data(data, {0: [["a"], ["b"]]})
        results = complete_topology(cluster, builder.build_topology(), storm_conf=conf)
        counts = [v[1:] for v in read_tuples(results, "count")[:4]]
        assert multiset_eq(counts, [[0], [0], [2], [0]])
        first_txid = read_tuples(results, "count")[0][0].transaction_id
        assert first_txid > 2, "the resubmitted topology continues after the committed transactions"


def test_opaque_transactional_topology():
    """Ports transactional_test.clj test-opaque-transactional-topology: an opaque spout commits its
    partition metadata with the transaction."""
    with LocalCluster(simulated_time=True) as cluster:
        controls = Controls()
        data: dict[int, list[Any]] = {}
        spout = OpaqueMemoryTransactionalSpout(data, ["word"], 2)
        builder = TransactionalTopologyBuilder("id", "spout", spout, 2)
        builder.set_committer_bolt("count", KeyedCountingBatchBolt(), 2).fields_grouping("spout", ["word"])
        topology_builder = builder.build_topology_builder()
        (
            topology_builder.set_bolt("controller", ControllerBolt(controls), 1)
            .all_grouping("spout", COORD_STREAM)
            .all_grouping("count", COORD_STREAM)
        )
        add_data(data, {0: [["dog"], ["cat"], ["apple"], ["dog"]]})
        captured, store = capture_topology(topology_builder.create_topology())
        tracked = TrackedTopology(captured, cluster)
        cluster.submit_topology("transactional-test", {"topology.max.spout.pending": 2}, tracked)
        cluster.advance_cluster_time(11)
        verify = Verifier(store)

        tracked_wait(tracked, 2)
        verify({"count": []})
        control(cluster, controls, ("ack", 1))
        tracked_wait(tracked, 1)
        verify({"count": [[1, "dog", 1], [1, "cat", 1]]})
        control(cluster, controls, ("ack", 2), ("ack", 1))
        tracked_wait(tracked, 2)
        verify({"count": [[2, "apple", 1], [2, "dog", 1]]})
        assert cluster.state.transactional_children("id", "user") == ["0"]


def test_a_bolt_fed_by_both_phases_finishes_in_the_commit_phase():
    """A non-committer reading a processing-phase bolt and a committer must not hold the batch tree open
    while it waits for the committer (that would deadlock); it finishes in the commit phase."""
    with LocalCluster(simulated_time=True) as cluster:
        data: dict[int, list[Any]] = {0: [["a"], ["b"], ["c"]], 1: [["d"]]}
        builder = TransactionalTopologyBuilder("mixed", "spout", MemoryTransactionalSpout(data, ["word"], 2), 2)
        builder.set_bolt("early", CountingBatchBolt(), 2).shuffle_grouping("spout")
        builder.set_bolt("late", CountingCommitBolt(), 1).global_grouping("spout")
        builder.set_bolt("both", KeyedCountingBatchBolt(), 2).shuffle_grouping("early").shuffle_grouping("late")
        results = complete_topology(
            cluster, builder.build_topology(), storm_conf={"topology.max.spout.pending": 2}, timeout_secs=30
        )
        per_txid: dict[int, int] = {}
        for values in read_tuples(results, "both"):
            per_txid[values[0].transaction_id] = per_txid.get(values[0].transaction_id, 0) + values[2]
        assert per_txid and all(n == 3 for n in per_txid.values()), per_txid  # 2 "early" tasks + 1 "late"
        late = {v[0].transaction_id: v[1] for v in read_tuples(results, "late")}
        assert late[1] == 3 and late[2] == 1


class CommitLog(Shared):
    """What a :class:`RecordingCommitter` saw: the sorted words of every commit attempt, per txid."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: dict[int, list[list[str]]] = {}
        self.blocked: set[int] = set()

    def record(self, txid: int, words: list[str]) -> bool:
        with self.lock:
            self.attempts.setdefault(txid, []).append(sorted(words))
            return txid in self.blocked


class RecordingCommitter(BaseBatchBolt, Committer):
    """Records each commit's batch; fails the commits of blocked txids."""

    def __init__(self, log: CommitLog) -> None:
        self.log = log

    def prepare(self, conf, context, collector, id):
        self.id = id
        self.words: list[str] = []

    def execute(self, tup):
        self.words.append(tup.get_value(1))

    def finish_batch(self):
        if self.log.record(self.id.transaction_id, self.words):
            raise FailedException(f"commit of {self.id!r} blocked")


def test_resubmitted_topology_replays_uncommitted_batches_identically():
    """Killed while txid 3 cannot commit, the resubmitted topology replays txids 3 and 4 exactly as decided
    before (the coordinator's metadata says 2 partitions, though a third exists by then), then moves on."""
    with LocalCluster(simulated_time=True) as cluster:
        data: dict[int, list[Any]] = {0: [[f"a{i}"] for i in range(10)], 1: [[f"b{i}"] for i in range(10)]}
        log = CommitLog()
        log.blocked.add(3)
        builder = TransactionalTopologyBuilder("resume", "spout", MemoryTransactionalSpout(data, ["word"], 2), 2)
        builder.set_bolt("commit", RecordingCommitter(log), 1).global_grouping("spout")

        def currtx() -> int:
            return int(cluster.state.transactional_get("resume", "coordinator", "currtx") or 1)

        first = cluster.submit_topology("first-run", {"topology.max.spout.pending": 2}, builder.build_topology())
        wait_until(lambda: currtx() == 3 and len(log.attempts.get(3, [])) >= 3, 30, what="txid 3 failing")
        cluster.kill_topology("first-run", 0)
        wait_until(lambda: not cluster.workers(first), 30, what="the first run to stop")
        blocked_batch = log.attempts[3][0]
        assert all(attempt == blocked_batch for attempt in log.attempts[3])
        assert blocked_batch == ["a4", "a5", "b4", "b5"]

        data[2] = [[f"c{i}"] for i in range(10)]
        log.blocked.clear()
        cluster.submit_topology("second-run", {"topology.max.spout.pending": 2}, builder.build_topology())
        wait_until(lambda: currtx() > 5, 30, what="commits after the restart")
        assert log.attempts[3][-1] == blocked_batch
        assert log.attempts[4][-1] == ["a6", "a7", "b6", "b7"]  # also in flight (and decided) before the kill
        assert log.attempts[5][-1] == ["a8", "a9", "b8", "b9", "c0", "c1"]
        cluster.kill_topology("second-run", 0)
