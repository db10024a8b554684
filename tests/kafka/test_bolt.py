"""KafkaBolt against a real broker: records land in the topic (named or selected per tuple), each input is
acked only after the broker confirmed it, and failed when delivery fails."""

from __future__ import annotations

import pytest

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaBolt
from storm_py.testing import AckFailMapTracker, FeederSpout
from tests.kafka.conftest import Broker
from tests.kafka.helpers import bolt_error


def test_kafka_bolt_writes_and_acks_after_delivery(broker: Broker) -> None:
    even, odd = broker.topic(1, "even"), broker.topic(1, "odd")
    spout = FeederSpout(["key", "value", "n"])
    tracker = AckFailMapTracker()
    spout.set_ack_fail_delegate(tracker)
    tb = TopologyBuilder()
    tb.set_spout("feed", spout)
    tb.set_bolt("out", KafkaBolt(broker.bootstrap, lambda t: even if t["n"] % 2 == 0 else odd)).shuffle_grouping(
        "feed")
    with LocalCluster() as cluster:
        cluster.submit_topology("bolt", {}, tb.create_topology())
        for n in range(100):
            spout.feed([f"k{n}", f"value {n}", n], msg_id=n)
        wait_until(lambda: all(tracker.is_acked(n) for n in range(100)), 60, interval=0.1, what="all acked")
        cluster.kill_topology("bolt", wait_secs=0)
    got_even = broker.read_all(even, 1, 50)
    got_odd = broker.read_all(odd, 1, 50)
    assert sorted(got_even) == sorted((f"k{n}".encode(), f"value {n}".encode()) for n in range(0, 100, 2))
    assert len(got_odd) == 50


@pytest.mark.slow
def test_kafka_bolt_fails_inputs_when_delivery_fails(broker: Broker) -> None:
    topic = broker.topic(1)
    spout = FeederSpout(["key", "value"])
    tracker = AckFailMapTracker()
    spout.set_ack_fail_delegate(tracker)
    tb = TopologyBuilder()
    tb.set_spout("feed", spout)
    tb.set_bolt("out", KafkaBolt(broker.bootstrap, topic, message_timeout_ms=1500)).shuffle_grouping("feed")
    with LocalCluster() as cluster:
        cluster.submit_topology("bolt-fail", {"topology.message.timeout.secs": 60}, tb.create_topology())
        spout.feed(["k", "before"], msg_id="before")
        wait_until(lambda: tracker.is_acked("before"), 30, interval=0.1, what="the first record acked")
        broker.process.pause()
        try:
            spout.feed(["k", "lost"], msg_id="lost")
            wait_until(lambda: tracker.is_failed("lost"), 30, interval=0.1, what="the input failed")
            wait_until(lambda: "delivery" in bolt_error(cluster, "bolt-fail", "out"), 30, interval=0.2,
                       what="the delivery error in the summary")
            assert topic in bolt_error(cluster, "bolt-fail", "out")
        finally:
            broker.process.resume()
        cluster.kill_topology("bolt-fail", wait_secs=0)
