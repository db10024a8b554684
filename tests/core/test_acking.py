"""Acking, timeouts and reset-timeout through LocalCluster (ports of Storm's TopologyIntegrationTest)."""

from __future__ import annotations

from storm_py import Fields, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.testing import AckFailMapTracker, FeederSpout, TrackedTopology, tracked_wait
from tests.core.helpers import (
    AckBolt,
    AckEveryOtherBolt,
    AckTrackingFeeder,
    AggBolt,
    BranchingBolt,
    CountingSpout,
    IdentityBolt,
    feeder_topology,
)


def assert_acked(tracker: AckFailMapTracker, *ids: int) -> None:
    for i in ids:
        wait_until(lambda i=i: tracker.is_acked(i), 10, what=f"ack of {i}")


def assert_failed(tracker: AckFailMapTracker, *ids: int) -> None:
    for i in ids:
        wait_until(lambda i=i: tracker.is_failed(i), 10, what=f"fail of {i}")


def test_acking():
    """Ports TopologyIntegrationTest.testAcking: trees complete only when every branch and aggregate is acked."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        feeder1, feeder2, feeder3 = AckTrackingFeeder("num"), AckTrackingFeeder("num"), AckTrackingFeeder("num")
        builder = TopologyBuilder()
        builder.set_spout("1", feeder1.spout)
        builder.set_spout("2", feeder2.spout)
        builder.set_spout("3", feeder3.spout)
        builder.set_bolt("4", BranchingBolt(2)).shuffle_grouping("1")
        builder.set_bolt("5", BranchingBolt(4)).shuffle_grouping("2")
        builder.set_bolt("6", BranchingBolt(1)).shuffle_grouping("3")
        builder.set_bolt("7", AggBolt(3)).shuffle_grouping("4").shuffle_grouping("5").shuffle_grouping("6")
        builder.set_bolt("8", BranchingBolt(2)).shuffle_grouping("7")
        builder.set_bolt("9", AckBolt()).shuffle_grouping("8")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("acking-test1", {}, tracked)
        cluster.advance_cluster_time(11)
        feeder1.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(0)
        feeder2.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder1.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(0)
        feeder1.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(1)
        feeder3.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(0)
        feeder3.assert_num_acks(0)
        feeder2.feed([1])
        tracked_wait(tracked, 1)
        feeder1.assert_num_acks(1)
        feeder2.assert_num_acks(1)
        feeder3.assert_num_acks(1)


def test_ack_branching():
    """Ports TopologyIntegrationTest.testAckBranching: a tuple sent to two bolts joined by an aggregate."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        feeder = AckTrackingFeeder("num")
        builder = TopologyBuilder()
        builder.set_spout("1", feeder.spout)
        builder.set_bolt("2", IdentityBolt()).shuffle_grouping("1")
        builder.set_bolt("3", IdentityBolt()).shuffle_grouping("1")
        builder.set_bolt("4", AggBolt(4)).shuffle_grouping("2").shuffle_grouping("3")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("test-acking2", {}, tracked)
        cluster.advance_cluster_time(11)
        feeder.feed([1])
        tracked_wait(tracked, 1)
        feeder.assert_num_acks(0)
        feeder.feed([1])
        tracked_wait(tracked, 1)
        feeder.assert_num_acks(2)


class DupAnchorBolt(IdentityBolt):
    def execute(self, tup):
        self.collector.emit([1], [tup, tup])
        self.collector.ack(tup)


def test_acking_self_anchor():
    """Ports TopologyIntegrationTest.testAckingSelfAnchor: anchoring twice to the same input still balances."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        feeder = AckTrackingFeeder("num")
        builder = TopologyBuilder()
        builder.set_spout("1", feeder.spout)
        builder.set_bolt("2", DupAnchorBolt()).shuffle_grouping("1")
        builder.set_bolt("3", AckBolt()).shuffle_grouping("2")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("test", {}, tracked)
        cluster.advance_cluster_time(11)
        feeder.feed([1])
        tracked_wait(tracked, 1)
        feeder.assert_num_acks(1)
        feeder.feed([1])
        feeder.feed([1])
        feeder.feed([1])
        tracked_wait(tracked, 3)
        feeder.assert_num_acks(3)


def test_timeout():
    """Ports TopologyIntegrationTest.testTimeout: an un-acked tuple fails between T and 2T."""
    with LocalCluster(simulated_time=True, daemon_conf={"topology.enable.message.timeouts": True}) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["field1"], tracker)
        builder.set_bolt("2", AckEveryOtherBolt()).global_grouping("1")
        cluster.submit_topology("timeout-tester", {"topology.message.timeout.secs": 10}, builder.create_topology())
        cluster.advance_cluster_time(11)
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        feeder.feed(["c"], 3)
        cluster.advance_cluster_time(9)
        assert_acked(tracker, 1, 3)
        assert not tracker.is_failed(2)
        cluster.advance_cluster_time(12)
        assert_failed(tracker, 2)


class ResetTimeoutBolt(AckBolt):
    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        self.counter = 1
        self.first = None

    def execute(self, tup):
        if self.counter == 1:
            self.first = tup
        elif self.counter == 2:
            self.collector.reset_timeout(self.first)
        elif self.counter == 5:
            self.collector.ack(self.first)
            self.collector.ack(tup)
        else:
            self.collector.reset_timeout(self.first)
            self.collector.ack(tup)
        self.counter += 1


def test_reset_timeout():
    """Ports TopologyIntegrationTest.testResetTimeout: reset_timeout keeps a tuple alive past 2T."""
    with LocalCluster(simulated_time=True, daemon_conf={"topology.enable.message.timeouts": True}) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["field1"], tracker)
        builder.set_bolt("2", ResetTimeoutBolt()).global_grouping("1")
        cluster.submit_topology("reset-timeout-tester", {"topology.message.timeout.secs": 10},
                                builder.create_topology())
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        cluster.advance_cluster_time(9)
        feeder.feed(["c"], 3)
        assert_acked(tracker, 3)
        cluster.advance_cluster_time(9)
        feeder.feed(["d"], 4)
        assert_acked(tracker, 4)
        cluster.advance_cluster_time(2)
        assert_failed(tracker, 2)
        feeder.feed(["e"], 5)
        assert_acked(tracker, 5)
        assert not tracker.is_failed(1)
        assert_acked(tracker, 1)


def test_message_timeouts_disabled_never_fail():
    """topology.enable.message.timeouts=false: an un-acked tuple never times out."""
    with LocalCluster(simulated_time=True) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["field1"], tracker)
        builder.set_bolt("2", AckEveryOtherBolt()).global_grouping("1")
        cluster.submit_topology(
            "no-timeouts", {"topology.message.timeout.secs": 10, "topology.enable.message.timeouts": False},
            builder.create_topology(),
        )
        cluster.advance_cluster_time(11)
        feeder.feed(["a"], 1)
        feeder.feed(["b"], 2)
        assert_acked(tracker, 1)
        cluster.advance_cluster_time(60)
        assert not tracker.is_failed(2)
        assert not tracker.is_acked(2)


class LateAckBolt(AckBolt):
    """Holds its first input; acks it when the third arrives (after the first timed out)."""

    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        self.held = []

    def execute(self, tup):
        self.held.append(tup)
        if len(self.held) == 3:
            for t in self.held:
                self.collector.ack(t)


def test_late_ack_after_timeout_is_ignored():
    """A tuple that timed out is failed once; its late ack does not reach the spout."""
    with LocalCluster(simulated_time=True) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["field1"], tracker)
        builder.set_bolt("2", LateAckBolt()).global_grouping("1")
        cluster.submit_topology("late-ack", {"topology.message.timeout.secs": 10}, builder.create_topology())
        feeder.feed(["a"], 1)
        cluster.advance_cluster_time(25)
        assert_failed(tracker, 1)
        feeder.feed(["b"], 2)
        feeder.feed(["c"], 3)
        assert_acked(tracker, 2, 3)
        cluster.wait_idle()
        assert not tracker.is_acked(1)


class MultiRootBolt(AckBolt):
    """Joins two inputs (from different spout tuples) into one child anchored to both."""

    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        self.pending = []

    def execute(self, tup):
        self.pending.append(tup)
        if len(self.pending) == 2:
            self.collector.emit([1], self.pending)
            for t in self.pending:
                self.collector.ack(t)
            self.pending = []

    def declare_output_fields(self, declarer):
        declarer.declare(["num"])


class FailBolt(AckBolt):
    def execute(self, tup):
        self.collector.fail(tup)


def test_multi_root_anchoring_fails_every_root():
    """A child anchored to two spout tuples: failing it fails both roots; acking it acks both."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["num"], tracker)
        builder.set_bolt("join", MultiRootBolt()).global_grouping("1")
        builder.set_bolt("ack", AckBolt()).shuffle_grouping("join")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("multi-root", {}, tracked)
        feeder.feed([1], "a")
        feeder.feed([2], "b")
        tracked_wait(tracked, 2)
        assert tracker.is_acked("a") and tracker.is_acked("b")

    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["num"], tracker)
        builder.set_bolt("join", MultiRootBolt()).global_grouping("1")
        builder.set_bolt("fail", FailBolt()).shuffle_grouping("join")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("multi-root-fail", {}, tracked)
        feeder.feed([1], "a")
        feeder.feed([2], "b")
        tracked_wait(tracked, 2)
        assert tracker.is_failed("a") and tracker.is_failed("b")
        assert not tracker.is_acked("a") and not tracker.is_acked("b")


def test_zero_ackers_ack_inside_emit():
    """topology.acker.executors=0: emit with a message id acks it at once; no __acker runs."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        tracker = AckFailMapTracker()
        feeder, builder = feeder_topology(["num"], tracker)
        builder.set_bolt("2", FailBolt()).shuffle_grouping("1")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        tid = cluster.submit_topology("no-ackers", {"topology.acker.executors": 0}, tracked)
        feeder.feed([1], 1)
        tracked_wait(tracked, 1)
        assert tracker.is_acked(1) and not tracker.is_failed(1)
        components = {ex.component_id for w in cluster.workers(tid) for ex in w.runtime.executors}
        assert "__acker" not in components


class FailOddBolt(IdentityBolt):
    """Acks even numbers and fails odd ones."""

    def execute(self, tup):
        if tup.values[0] % 2:
            self.collector.fail(tup)
        else:
            self.collector.ack(tup)


def test_acks_of_one_batch_merge_per_tree_and_a_fail_among_them_wins():
    """A bolt's acks of one step go out as one row per tree; a sibling failed in the same step still fails it."""
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        all_acked, one_failed = AckTrackingFeeder("num"), FeederSpout(Fields("num"))
        tracker = AckFailMapTracker()
        one_failed.set_ack_fail_delegate(tracker)
        builder = TopologyBuilder()
        builder.set_spout("ok", all_acked.spout)
        builder.set_spout("bad", one_failed)
        builder.set_bolt("fan", BranchingBolt(4)).shuffle_grouping("ok")
        builder.set_bolt("fan-bad", BranchingBolt(4)).shuffle_grouping("bad")
        builder.set_bolt("sink", AckBolt()).shuffle_grouping("fan")
        builder.set_bolt("sink-bad", FailOddBolt()).shuffle_grouping("fan-bad")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("merged-acks", {}, tracked)
        cluster.advance_cluster_time(11)
        all_acked.feed([7])
        one_failed.feed([7], 1)
        tracked_wait(tracked, 2)
        all_acked.assert_num_acks(1)
        assert_failed(tracker, 1)
        assert not tracker.is_acked(1)


class _AckOfItsOwnSpout(CountingSpout):
    """Leaves ``Spout.ack`` (a no-op) to the class and sets an ``ack`` of its own on the instance in ``open``."""

    def __deepcopy__(self, memo):
        return _AckOfItsOwnSpout(self.n, self.results)

    def open(self, conf, context, collector):
        super().open(conf, context, collector)
        self.ack = lambda msg_id: self.results.setdefault("acked", []).append(msg_id)

    ack = Spout.ack


def test_an_ack_the_spout_sets_in_open_is_called_with_and_without_ackers():
    """Acks go to the spout instance's ``ack``, also one it set itself after the executor was built."""
    for ackers in (1, 0):
        results: dict[str, list[int]] = {}
        builder = TopologyBuilder()
        builder.set_spout("numbers", _AckOfItsOwnSpout(20, results))
        builder.set_bolt("ack", AckBolt()).shuffle_grouping("numbers")
        with LocalCluster() as cluster:
            cluster.submit_topology(f"own-ack-{ackers}", {"topology.acker.executors": ackers},
                                    builder.create_topology())
            wait_until(lambda: len(results.get("acked", [])) == 20, 30, what=f"20 acks with {ackers} ackers")
        assert sorted(results["acked"]) == list(range(1, 21))
