"""storm_py.testing against Storm's Testing / testing4j behaviour, through LocalCluster."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from storm_py import Bolt, LocalCluster, TopologyBuilder
from storm_py.errors import ConfigError
from storm_py.testing import (
    AckTracker,
    FeederSpout,
    FixedTupleSpout,
    TestGlobalCount,
    TrackedTopology,
    complete_topology,
    read_tuples,
    tracked_wait,
)
from storm_py.testing.registry import Shared
from tests.core.helpers import ConfBolt, feeder_topology


class RecordingDelegate(Shared):
    """Records the message ids acked and failed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: list[Any] = []
        self.failed: list[Any] = []

    def ack(self, msg_id: Any) -> None:
        with self.lock:
            self.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self.lock:
            self.failed.append(msg_id)


class FailBolt(Bolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.fail(tup)

    def declare_output_fields(self, declarer):
        pass


def _feeder_topology(bolt: Bolt) -> tuple[FeederSpout, RecordingDelegate, TopologyBuilder]:
    delegate = RecordingDelegate()
    feeder, builder = feeder_topology(["n"], delegate, "feeder")
    builder.set_bolt("bolt", bolt).shuffle_grouping("feeder")
    return feeder, delegate, builder


def test_feed_without_message_id_is_tracked_under_a_fresh_random_id():
    """Storm's FeederSpout.feed(tuple) = feed(tuple, UUID.randomUUID()): acks reach the delegate."""
    with LocalCluster(simulated_time=True) as cluster:
        feeder, delegate, builder = _feeder_topology(TestGlobalCount())
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("feed-tracked", {}, tracked)
        feeder.feed([1])
        feeder.feed([2])
        feeder.feed([3], "mine")
        tracked_wait(tracked, 3)
        assert len(delegate.acked) == 3
        assert "mine" in delegate.acked
        random_ids = [i for i in delegate.acked if i != "mine"]
        assert len(set(random_ids)) == 2
        assert all(isinstance(i, str) and len(i) >= 32 for i in random_ids)


def test_feed_no_ack_is_untracked():
    """feed_no_ack emits without a message id: a failing bolt fails nothing back to the spout."""
    with LocalCluster(simulated_time=True) as cluster:
        feeder, delegate, builder = _feeder_topology(FailBolt())
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("feed-untracked", {}, tracked)
        feeder.feed_no_ack([1])
        feeder.feed([2])
        tracked_wait(tracked, 2)
        assert delegate.acked == []
        assert len(delegate.failed) == 1  # only the tracked one


def test_ack_tracker_counts_acks_of_fed_tuples():
    with LocalCluster(simulated_time=True) as cluster:
        tracker = AckTracker()
        feeder, builder = feeder_topology(["n"], tracker, "feeder")
        builder.set_bolt("count", TestGlobalCount()).shuffle_grouping("feeder")
        tracked = TrackedTopology(builder.create_topology(), cluster)
        cluster.submit_topology("ack-tracker", {}, tracked)
        for i in range(4):
            feeder.feed([i])
        tracked_wait(tracked, 4)
        assert tracker.get_num_acks() == 4
        tracker.reset_num_acks()
        assert tracker.get_num_acks() == 0


class _Calls(Shared):
    def __init__(self) -> None:
        self.calls: list[str] = []


class CompletableSpout(FixedTupleSpout):
    """A user's completable spout recording Storm's CompletableSpout calls."""

    def __init__(self, tuples, calls: _Calls) -> None:
        super().__init__(tuples, ["n"])
        self.calls = calls

    def startup(self) -> None:
        self.calls.calls.append("startup")

    def clean(self) -> None:
        self.calls.calls.append("clean")
        super().clean()


def _completable(calls: _Calls) -> TopologyBuilder:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CompletableSpout([[1], [2], [3]], calls))
    builder.set_bolt("count", TestGlobalCount()).shuffle_grouping("numbers")
    return builder


@pytest.mark.parametrize("cleanup", [True, False])
def test_complete_topology_removes_the_topology_and_honours_cleanup_state(cleanup):
    with LocalCluster(simulated_time=True) as cluster:
        calls = _Calls()
        results = complete_topology(
            cluster, _completable(calls).create_topology(), cleanup_state=cleanup, topology_name="done"
        )
        assert sorted(read_tuples(results, "count")) == [[1], [2], [3]]
        # the killed topology is gone from the cluster when complete_topology returns
        assert cluster.get_topology_id("done") is None
        assert cluster.get_cluster_summary() == []
        assert calls.calls == (["startup", "clean"] if cleanup else ["startup"])
        # ...so the same name can run again at once
        again = complete_topology(cluster, _completable(_Calls()).create_topology(), topology_name="done")
        assert sorted(read_tuples(again, "numbers")) == [[1], [2], [3]]


class Point:
    pass


class Line:
    pass


class Shape:
    pass


class PointSer:
    """A serializer named in the conf (built without arguments)."""

    def to_bytes(self, obj: Point) -> bytes:
        return b""

    def from_bytes(self, data: bytes) -> Point:
        return Point()


class ComponentSer(PointSer):
    pass


class TopologySer(PointSer):
    pass


def test_component_registrations_merge_into_the_topology_conf_topology_wins():
    """Storm's normalizeConf: components' topology.kryo.register first, the topology's last (wins)."""
    from storm_py.protocol.codec import unregister_ext
    from storm_py.protocol.registration import FIRST_CODE

    register = "topology.kryo.register"
    here = __name__
    builder = TopologyBuilder()
    builder.set_spout("keys", FixedTupleSpout([], ["key"]))
    builder.set_bolt("conf", ConfBolt({register: [{f"{here}:Point": f"{here}:ComponentSer"}, f"{here}:Shape"]})
                     ).shuffle_grouping("keys")
    conf = {register: [{f"{here}:Point": f"{here}:TopologySer"}, f"{here}:Line"]}
    try:
        with LocalCluster(simulated_time=True) as cluster:
            results = complete_topology(cluster, builder.create_topology(), mocked_sources={"keys": [[register]]},
                                        storm_conf=conf)
    finally:
        for code in range(FIRST_CODE, FIRST_CODE + 3):
            unregister_ext(code)
    assert read_tuples(results, "conf") == [
        [register, [{f"{here}:Point": f"{here}:TopologySer"}, f"{here}:Shape", f"{here}:Line"]]]


def test_submit_refuses_a_bad_topology_conf_naming_the_key():
    builder = TopologyBuilder()
    builder.set_spout("numbers", FixedTupleSpout([[1]], ["n"]))
    with LocalCluster(simulated_time=True) as cluster, pytest.raises(ConfigError, match=r"'topology\.workers'"):
        cluster.submit_topology("bad", {"topology.workers": 0}, builder.create_topology())
