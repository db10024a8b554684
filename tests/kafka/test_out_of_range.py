"""A committed offset the broker no longer has (the topic was recreated, or retention removed the log): the broker
answers the spout's fetch with OFFSET_OUT_OF_RANGE, the client resets the partition to its earliest offset, and the
spout starts the partition over from there.  Nothing is skipped, and the reset is counted in the ``kafkaOffset``
metric.  This runs against :mod:`tests.kafka.strict_broker`, which answers such a fetch as Kafka does."""

from __future__ import annotations

import threading
from typing import Any

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from tests.kafka.conftest import Broker
from tests.kafka.helpers import SEEN, RecordingBolt, reset, wait_seen

POINTS: list[dict[str, Any]] = []
_LOCK = threading.Lock()


class OffsetPoints:
    """A metrics consumer keeping every value of the ``kafkaOffset`` metric."""

    def prepare(self, conf: Any, argument: Any, context: Any) -> None:
        pass

    def handle_data_points(self, task_info: Any, data_points: Any) -> None:
        with _LOCK:
            POINTS.extend(p.value for p in data_points if getattr(p, "name", None) == "kafkaOffset")

    def cleanup(self) -> None:
        pass


def test_a_commit_past_the_log_end_restarts_the_partition_at_its_earliest_offset_and_is_counted(
        strict_broker: Broker) -> None:
    topic = strict_broker.topic(1, prefix="oor")
    reset(topic)
    values = [b"r%02d" % i for i in range(10)]
    strict_broker.produce(topic, [(0, None, v) for v in values])
    group = f"g-{topic}"
    strict_broker.commit(group, topic, {0: 100})  # beyond the log end (10): what a recreated topic leaves
    POINTS.clear()
    conf = KafkaSpoutConfig(strict_broker.bootstrap, [topic], group_id=group, offset_commit_period_ms=200,
                            metrics_time_bucket_secs=1)
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(conf))
    tb.set_bolt("check", RecordingBolt(topic), 1).shuffle_grouping("kafka")
    storm_conf = {"topology.metrics.consumer.register": [
        {"class": "tests.kafka.test_out_of_range:OffsetPoints", "parallelism.hint": 1}]}
    with LocalCluster() as cluster:
        cluster.submit_topology("out-of-range", storm_conf, tb.create_topology())
        wait_seen(topic, set(values), 60)  # the spout resumed below its old commit instead of waiting at 100
        wait_until(lambda: strict_broker.committed(group, topic, 1) == {0: 10}, 60, interval=0.2,
                   what="the commit at the log end")

        def counted() -> bool:
            with _LOCK:
                return any(p.get("offset_resets", 0) >= 1 for p in POINTS)

        wait_until(counted, 60, interval=0.2, what="a kafkaOffset data point counting the reset")
        cluster.kill_topology("out-of-range", wait_secs=0)
    assert SEEN[topic] == {v: 1 for v in values}, "each record once: nothing skipped, nothing twice"
    with _LOCK:
        assert all(p.get(f"{topic}/partition_0/lostOffsets", 0) == 0 for p in POINTS), "nothing was in flight"
