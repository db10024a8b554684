"""Partitions added while running (a regex picking up a new topic) and the ``kafkaOffset`` metric (lag,
records/s).  (The dev broker answers a fetch past the log end with no records instead of OFFSET_OUT_OF_RANGE,
so the reset path runs against a second broker in ``test_out_of_range.py``.)"""

from __future__ import annotations

import re

from storm_py import LocalCluster, TopologyBuilder
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from tests.kafka.conftest import Broker
from tests.kafka.helpers import SEEN, RecordingBolt, offset_points, reset, run_spout_until, wait_seen


def test_pattern_picks_up_a_topic_created_while_running(broker: Broker) -> None:
    prefix = f"grow-{broker.topic(1)[2:8]}"
    first = f"{prefix}-a"
    broker.admin.create_topic(first, 1)
    reset(prefix)
    broker.produce(first, [(0, None, b"one")])
    conf = KafkaSpoutConfig(broker.bootstrap, re.compile(re.escape(prefix) + r"-.*"), group_id=f"g-{prefix}",
                            partition_refresh_period_ms=200)
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(conf), 2)
    tb.set_bolt("check", RecordingBolt(prefix), 1).shuffle_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("grow", {}, tb.create_topology())
        wait_seen(prefix, {b"one"}, 60)
        second = f"{prefix}-b"
        broker.admin.create_topic(second, 3)
        broker.produce(second, [(p, None, b"new-%d" % p) for p in range(3)])
        wait_seen(prefix, {b"one", b"new-0", b"new-1", b"new-2"}, 60)
        cluster.kill_topology("grow", wait_secs=0)


def test_kafka_offset_metric_reports_lag_and_rate(broker: Broker) -> None:
    topic = broker.topic(2)
    reset(topic)
    vals = [b"m%03d" % i for i in range(100)]
    broker.produce_singly(topic, [(i % 2, None, v) for i, v in enumerate(vals)])

    def settled() -> bool:
        return set(vals) <= set(SEEN[topic]) and any(
            v.get("totalSpoutLag") == 0 and v.get(f"{topic}/partition_0/latestCompletedOffset") == 50
            for v in offset_points())

    run_spout_until(broker.bootstrap, topic, f"g-{topic}", settled, "metrics")
    values = offset_points()
    assert any(v["recordsPerSec"] > 0 for v in values)
    assert all(f"{topic}/partition_1/spoutLag" in v for v in values if "totalSpoutLag" in v and
               f"{topic}/partition_1/latestCompletedOffset" in v)
