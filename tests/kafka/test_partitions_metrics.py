"""Partitions added while running (a regex picking up a new topic) and the ``kafkaOffset`` metric (lag,
records/s).  (The dev broker answers a fetch past the log end with no records instead of OFFSET_OUT_OF_RANGE,
so the reset path runs against a second broker in ``test_out_of_range.py``.)"""

from __future__ import annotations

import re
import threading
from typing import Any

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from tests.kafka.conftest import Broker
from tests.kafka.helpers import RecordingBolt, reset, wait_seen

POINTS: list[tuple[str, Any]] = []
_LOCK = threading.Lock()


class CollectingConsumer:
    """A metrics consumer keeping every data point of the ``kafkaOffset`` metric."""

    def prepare(self, conf: Any, argument: Any, context: Any) -> None:
        pass

    def handle_data_points(self, task_info: Any, data_points: Any) -> None:
        with _LOCK:
            for p in data_points:
                name = getattr(p, "name", None)
                if name is None and isinstance(p, (tuple, list)):
                    name, value = p[0], p[1]
                else:
                    value = getattr(p, "value", None)
                if name == "kafkaOffset":
                    POINTS.append((name, value))

    def cleanup(self) -> None:
        pass


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
    POINTS.clear()
    conf = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", offset_commit_period_ms=200,
                            metrics_time_bucket_secs=1)
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(conf))
    tb.set_bolt("check", RecordingBolt(topic), 1).shuffle_grouping("kafka")
    storm_conf = {"topology.metrics.consumer.register": [
        {"class": "tests.kafka.test_partitions_metrics:CollectingConsumer", "parallelism.hint": 1}]}
    with LocalCluster() as cluster:
        cluster.submit_topology("metrics", storm_conf, tb.create_topology())
        wait_seen(topic, set(vals), 60)

        def settled() -> bool:
            with _LOCK:
                values = [v for _, v in POINTS]
            return any(v.get("totalSpoutLag") == 0 and f"{topic}/partition_0/latestCompletedOffset" in v
                       and v[f"{topic}/partition_0/latestCompletedOffset"] == 50 for v in values)

        wait_until(settled, 60, interval=0.3, what="a kafkaOffset data point with lag 0 at the log end")
        cluster.kill_topology("metrics", wait_secs=0)
    with _LOCK:
        values = [v for _, v in POINTS]
    assert any(v["recordsPerSec"] > 0 for v in values)
    assert all(f"{topic}/partition_1/spoutLag" in v for v in values if "totalSpoutLag" in v and
               f"{topic}/partition_1/latestCompletedOffset" in v)
