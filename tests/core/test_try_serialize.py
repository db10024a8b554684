"""``topology.testing.always.try.serialize``: tuples between LocalCluster workers go through the real frames."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from storm_py import Bolt, Fields, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.local import LocalCluster
from storm_py.testing import AckFailMapTracker, FeederSpout
from storm_py.testing.registry import Shared

SERIALIZE = "topology.testing.always.try.serialize"


class Seen(Shared):
    """The values each bolt task received (shared by every task's copy of the bolt)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: list[Any] = []

    def add(self, values: list[Any]) -> None:
        with self.lock:
            self.values.append(values)


class RecordingBolt(Bolt):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.seen.add(tup.values)
        self.collector.ack(tup)


def run(conf: dict[str, Any], values: list[Any]) -> tuple[AckFailMapTracker, Seen, LocalCluster, str]:
    """A feeder on one worker, all-grouped to a bolt with a task on each of the two workers; feed one tuple."""
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("value"))
    spout.set_ack_fail_delegate(tracker)
    seen = Seen()
    builder = TopologyBuilder()
    builder.set_spout("feeder", spout)
    builder.set_bolt("record", RecordingBolt(seen), 2).all_grouping("feeder")
    cluster = LocalCluster(supervisors=1, ports_per_supervisor=2)
    cluster.submit_topology("serialize", {"topology.workers": 2, **conf}, builder.create_topology())
    tid = cluster.get_topology_id("serialize")
    assert tid is not None
    assert len(cluster.workers(tid)) == 2
    spout.feed(values, 1)
    return tracker, seen, cluster, tid


def test_a_set_sent_to_another_worker_fails_the_tuple_with_the_codecs_error() -> None:
    tracker, _, cluster, tid = run({SERIALIZE: True}, [{1, 2}])
    with cluster:
        # failed at once (the message timeout is 30 s), not dropped silently
        wait_until(lambda: tracker.is_failed(1), 10, what="the tuple to fail")
        assert not tracker.is_acked(1)
        errors = cluster.state.errors(tid, "feeder")
        assert errors, "the codec's error is reported for the emitting component"
        assert "cannot encode" in errors[0].error and "set" in errors[0].error


def test_without_the_key_objects_are_handed_over_and_a_set_goes_through() -> None:
    tracker, seen, cluster, _ = run({SERIALIZE: False}, [{1, 2}])
    with cluster:
        wait_until(lambda: tracker.is_acked(1), 10, what="the tuple to be acked")
        assert seen.values == [[{1, 2}], [{1, 2}]]


@pytest.mark.parametrize("serialize", [True, False])
def test_values_arrive_as_the_codec_delivers_them(serialize: bool) -> None:
    tracker, seen, cluster, _ = run({SERIALIZE: serialize}, [(1, "a")])
    with cluster:
        wait_until(lambda: tracker.is_acked(1), 10, what="the tuple to be acked")
        received = sorted(seen.values, key=lambda v: type(v[0]).__name__)
        # the local task gets the object; the remote one gets what the codec makes of it (a tuple becomes a list)
        assert received == ([[[1, "a"]], [(1, "a")]] if serialize else [[(1, "a")], [(1, "a")]])


def test_frames_held_for_a_worker_that_left_do_not_keep_the_cluster_busy() -> None:
    from storm_py.runtime.transfer.in_process import InProcessTransfer

    tracker, _, cluster, tid = run({SERIALIZE: True}, [1])
    with cluster:
        wait_until(lambda: tracker.is_acked(1), 10, what="the tuple to be acked")
        transfer = cluster.transfer
        assert isinstance(transfer, InProcessTransfer)
        sender, gone = cluster.workers(tid)
        gone.stop()
        assert sender.runtime is not None and sender.runtime.send_remote is not None
        for n in range(400):  # more frames than the gone worker's mailbox holds: the rest waits in overflow
            sender.runtime.send_remote(gone.key, [(0, [(2, n, 0)])])
        assert transfer.idle()


def test_a_set_fails_in_one_worker_with_the_key_on_and_goes_through_without() -> None:
    """Storm's local serialization check: the key checks tuples between the tasks of one worker too."""
    for on in (True, False):
        tracker = AckFailMapTracker()
        spout = FeederSpout(Fields("value"))
        spout.set_ack_fail_delegate(tracker)
        seen = Seen()
        builder = TopologyBuilder()
        builder.set_spout("feeder", spout)
        builder.set_bolt("record", RecordingBolt(seen)).shuffle_grouping("feeder")
        with LocalCluster() as cluster:
            cluster.submit_topology("one-worker", {"topology.workers": 1, SERIALIZE: on}, builder.create_topology())
            tid = cluster.get_topology_id("one-worker")
            assert tid is not None and len(cluster.workers(tid)) == 1
            spout.feed([{1, 2}], 1)
            spout.feed(["fine"], 2)
            wait_until(lambda: tracker.is_acked(2), 10, what="the encodable tuple to be acked")
            if on:
                wait_until(lambda: tracker.is_failed(1), 10, what="the set to fail")
                assert seen.values == [["fine"]]
                errors = cluster.state.errors(tid, "feeder")
                assert errors and "cannot encode" in errors[0].error and "set" in errors[0].error
            else:
                wait_until(lambda: tracker.is_acked(1), 10, what="the set to be acked")
                assert sorted(map(str, seen.values)) == ["['fine']", "[{1, 2}]"]
