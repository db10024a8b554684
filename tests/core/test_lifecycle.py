"""Tick tuples, activate/deactivate, kill and rebalance with Storm's waits, max spout pending, bolt errors."""

from __future__ import annotations

import threading

import pytest

from storm_py import (
    AlreadyAliveException,
    BasicBolt,
    Bolt,
    FailedException,
    InvalidTopologyException,
    LocalCluster,
    NotAliveException,
    ReportedFailedException,
    Spout,
    TopologyBuilder,
)
from storm_py.clock import wait_until
from storm_py.testing import AckFailMapTracker, FeederSpout, TrackedTopology, tracked_wait
from storm_py.testing.registry import Shared
from tests.core.helpers import AckBolt, feeder_topology


class Log(Shared):
    """A thread-safe event list shared by every copy of a component."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list = []

    def add(self, item) -> None:
        with self.lock:
            self.items.append(item)

    def snapshot(self) -> list:
        with self.lock:
            return list(self.items)


class TickBolt(Bolt):
    def __init__(self, log: Log, freq=None) -> None:
        self.log = log
        self.freq = freq

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.clock = context.clock

    def execute(self, tup):
        if tup.is_tick():
            self.log.add((self.clock.now(), tup.source_component, tup.source_stream, tup.source_task, tup.values))
        else:
            self.collector.ack(tup)

    def get_component_configuration(self):
        return {"topology.tick.tuple.freq.secs": self.freq} if self.freq else None


def test_tick_tuples():
    """Ports Storm's tick-tuple test: ticks come from __system, task -1, stream __tick, every freq seconds."""
    log = Log()
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", FeederSpout(["x"]))
        builder.set_bolt("ticker", TickBolt(log, freq=3)).shuffle_grouping("1")
        cluster.submit_topology("ticks", {}, builder.create_topology())
        cluster.advance_cluster_time(10)
        ticks = log.snapshot()
    assert [t[0] for t in ticks] == [3, 6, 9]
    assert all(t[1:] == ("__system", "__tick", -1, [3.0]) for t in ticks)


def test_topology_level_tick_freq_applies_to_bolts():
    log = Log()
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", FeederSpout(["x"]))
        builder.set_bolt("ticker", TickBolt(log), 2).shuffle_grouping("1")
        cluster.submit_topology("ticks", {"topology.tick.tuple.freq.secs": 5}, builder.create_topology())
        cluster.advance_cluster_time(11)
        assert len(log.snapshot()) == 4  # two tasks, ticks at 5 and 10


class LifecycleSpout(Spout):
    def __init__(self, log: Log) -> None:
        self.log = log

    def open(self, conf, context, collector):
        self.log.add("open")
        self.collector = collector

    def activate(self):
        self.log.add("activate")

    def deactivate(self):
        self.log.add("deactivate")

    def next_tuple(self):
        self.log.add("next")

    def close(self):
        self.log.add("close")

    def declare_output_fields(self, declarer):
        declarer.declare(["x"])


def _counts(log: Log) -> int:
    return log.snapshot().count("next")


def test_submit_inactive_then_activate_deactivate():
    """Ports TopologyIntegrationTest.testSubmitInactiveTopology and activate/deactivate: an inactive topology
    does not open its spouts; no next_tuple while inactive."""
    log = Log()
    tracker = AckFailMapTracker()
    feeder, builder = feeder_topology(["field1"], tracker)
    with LocalCluster(simulated_time=True) as cluster:
        builder.set_spout("2", LifecycleSpout(log))
        builder.set_bolt("3", AckBolt()).global_grouping("1")
        cluster.submit_topology("test", {"topology.message.timeout.secs": 10}, builder.create_topology(), inactive=True)
        cluster.advance_cluster_time(11)
        feeder.feed(["a"], 1)
        cluster.advance_cluster_time(9)
        assert log.snapshot() == []
        assert not tracker.is_acked(1)
        cluster.activate("test")
        cluster.advance_cluster_time(12)
        wait_until(lambda: tracker.is_acked(1), 10, what="ack after activation")
        assert log.snapshot()[:2] == ["open", "activate"]
        wait_until(lambda: _counts(log) > 0, 10, what="next_tuple after activation")
        cluster.deactivate("test")
        wait_until(lambda: "deactivate" in log.snapshot(), 10, what="deactivate")
        cluster.wait_idle()
        before = _counts(log)
        cluster.advance_cluster_time(5)
        assert _counts(log) == before
        cluster.activate("test")
        wait_until(lambda: _counts(log) > before, 10, what="next_tuple after re-activation")


def test_kill_waits_then_removes():
    """Storm's kill: status KILLED and spouts deactivated at once; the topology goes after the wait."""
    log = Log()
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", LifecycleSpout(log))
        cluster.submit_topology("doomed", {"topology.message.timeout.secs": 10}, builder.create_topology())
        with pytest.raises(AlreadyAliveException):
            cluster.submit_topology("doomed", {}, builder.create_topology())
        cluster.kill_topology("doomed", wait_secs=5)
        assert cluster.get_topology_summary("doomed")["status"] == "KILLED"
        wait_until(lambda: "deactivate" in log.snapshot(), 10, what="deactivation on kill")
        cluster.advance_cluster_time(3)
        assert cluster.get_topology_id("doomed") is not None
        cluster.advance_cluster_time(3)
        wait_until(lambda: cluster.get_topology_id("doomed") is None, 10, what="removal")
        wait_until(lambda: not cluster.workers(), 10, what="workers gone")
        assert "close" in log.snapshot()
        with pytest.raises(NotAliveException):
            cluster.kill_topology("doomed")
        with pytest.raises(NotAliveException):
            cluster.activate("nope")


def test_kill_default_wait_is_message_timeout():
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", FeederSpout(["x"]))
        cluster.submit_topology("t", {"topology.message.timeout.secs": 7}, builder.create_topology())
        cluster.kill_topology("t")
        cluster.advance_cluster_time(6)
        assert cluster.get_topology_id("t") is not None
        cluster.advance_cluster_time(2)
        assert cluster.get_topology_id("t") is None


def test_rebalance_changes_workers_and_executors():
    """Storm's rebalance: REBALANCING (inactive) for the wait, then new worker/executor counts, old status back."""
    with LocalCluster(simulated_time=True, supervisors=2, ports_per_supervisor=3) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", FeederSpout(["x"]))
        builder.set_bolt("2", AckBolt(), 2).set_num_tasks(6).shuffle_grouping("1")
        tid = cluster.submit_topology("rb", {"topology.workers": 1}, builder.create_topology())
        assert len(cluster.workers(tid)) == 1
        with pytest.raises(InvalidTopologyException, match="unknown component"):
            cluster.rebalance("rb", executors={"nope": 2})
        with pytest.raises(InvalidTopologyException, match="between 1 and its 6"):
            cluster.rebalance("rb", executors={"2": 7})
        cluster.rebalance("rb", wait_secs=4, num_workers=3, executors={"2": 6})
        assert cluster.get_topology_summary("rb")["status"] == "REBALANCING"
        cluster.advance_cluster_time(5)
        summary = cluster.get_topology_summary("rb")
        assert summary["status"] == "ACTIVE"
        assert summary["workersTotal"] == 3
        bolt = next(b for b in summary["bolts"] if b["boltId"] == "2")
        assert bolt["executors"] == 6 and bolt["tasks"] == 6
        wait_until(lambda: len(cluster.workers(tid)) == 3, 10, what="three workers")


class PendingSpout(Spout):
    def __init__(self, log: Log) -> None:
        self.log = log

    def open(self, conf, context, collector):
        self.collector = collector
        self.i = 0

    def next_tuple(self):
        self.i += 1
        self.collector.emit([self.i], self.i)
        self.log.add(("emit", self.i, self.collector.get_pending_count()))

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


class HoldBolt(Bolt):
    """Never acks: holds everything."""

    def prepare(self, conf, context, collector):
        self.held = []

    def execute(self, tup):
        self.held.append(tup)


def test_max_spout_pending_throttles_per_task():
    """topology.max.spout.pending caps un-acked tuples per spout task (2 tasks x 5 = 10 here)."""
    log = Log()
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("1", PendingSpout(log), 1).set_num_tasks(2).set_max_spout_pending(5)
        builder.set_bolt("2", HoldBolt()).shuffle_grouping("1")
        cluster.submit_topology("msp", {"topology.message.timeout.secs": 100}, builder.create_topology())
        wait_until(lambda: len(log.snapshot()) >= 10, 10, what="ten emits")
        cluster.wait_idle()
        assert len(log.snapshot()) == 10
        assert max(p for _, _, p in log.snapshot()) == 10


class RaisingBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        if tup.values[0] % 2:
            raise RuntimeError(f"odd input {tup.values[0]}")
        self.collector.ack(tup)


def test_bolt_that_raises_fails_tree_records_error_and_goes_on():
    tracker = AckFailMapTracker()
    feeder, builder = feeder_topology(["n"], tracker)
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        builder.set_bolt("boom", RaisingBolt()).shuffle_grouping("1")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("raises", {}, tracked)
        for i in range(4):
            feeder.feed([i], i)
        tracked_wait(tracked, 4)
        assert [tracker.is_acked(i) for i in range(4)] == [True, False, True, False]
        assert [tracker.is_failed(i) for i in range(4)] == [False, True, False, True]
        summary = cluster.get_topology_summary("raises")
        bolt = next(b for b in summary["bolts"] if b["boltId"] == "boom")
        assert "RuntimeError: odd input" in bolt["lastError"]
        assert "Traceback" in bolt["lastError"]
        assert bolt["failed"] == 2


class BasicFailing(BasicBolt):
    def execute(self, tup, collector):
        n = tup.values[0]
        if n == 1:
            raise FailedException("fail one")
        if n == 2:
            raise ReportedFailedException("report two")
        collector.emit([n])

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


def test_basic_bolt_failed_and_reported_exceptions():
    """BaseBasicBolt: FailedException fails the input; ReportedFailedException fails it and reports."""
    tracker = AckFailMapTracker()
    feeder, builder = feeder_topology(["n"], tracker)
    with LocalCluster(simulated_time=True, tracked=True) as cluster:
        builder.set_bolt("basic", BasicFailing()).shuffle_grouping("1")
        builder.set_bolt("ack", AckBolt()).shuffle_grouping("basic")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("basic", {}, tracked)
        for i in range(3):
            feeder.feed([i], i)
        tracked_wait(tracked, 3)
        assert tracker.is_acked(0) and tracker.is_failed(1) and tracker.is_failed(2)
        bolt = next(b for b in cluster.get_topology_summary("basic")["bolts"] if b["boltId"] == "basic")
        assert "report two" in bolt["lastError"] and "fail one" not in bolt["lastError"]
