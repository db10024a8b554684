"""The columnar KafkaSpout stays a StatefulSpout under ``exactly_once``: its batches' rows, read by per-tuple bolts,
are counted exactly once by a stateful bolt through a bolt raising, a failed prepare and a worker dying."""

from __future__ import annotations

from collections import Counter

import pytest

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from tests.kafka.conftest import Broker
from tests.kafka.test_exactly_once_state import VOCABULARY, ValueWord
from tests.stateful.components import CountBolt, committed_counts, new_run

pytestmark = pytest.mark.slow

RECORDS = 3000


def test_columnar_kafka_records_counted_exactly_once_through_failures(broker: Broker) -> None:
    topic = broker.topic(2, "coleo")
    words = [VOCABULARY[i % len(VOCABULARY)] for i in range(RECORDS)]
    broker.produce(topic, ((i % 2, None, w.encode()) for i, w in enumerate(words)))
    run = new_run("kafka-col-eo")
    builder = TopologyBuilder()
    config = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=f"g-{topic}", first_poll_offset_strategy="EARLIEST",
                              columnar=True, max_poll_records=100)
    builder.set_spout("records", KafkaSpout(config), 2)
    builder.set_bolt("word", ValueWord(), 2).shuffle_grouping("records")
    builder.set_bolt("count", CountBolt("kafka-col-eo", raise_on=("fig",), fail_prepare=3), 2).fields_grouping(
        "word", ["word"])
    conf = {"topology.state.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 100,
            "topology.workers": 3, "topology.message.timeout.secs": 10}
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-col-eo", conf, builder.create_topology())
        tid = cluster.get_topology_id("kafka-col-eo")
        wait_until(lambda: sum(committed_counts(run).values()) >= 500, 60, what="a checkpoint with records")
        victim = next(w for w in cluster.workers(tid) if any(ex.component_id == "records"
                                                              for ex in w.runtime.executors))
        victim.stop()
        wait_until(lambda: "failed_prepare" in run.hook_names(), 60, what="the failed prepare")
        wait_until(lambda: committed_counts(run) == Counter(words), 120, interval=0.2,
                   what=f"every record counted exactly once (have {sum(committed_counts(run).values())})")
        cluster.kill_topology("kafka-col-eo", wait_secs=0)
