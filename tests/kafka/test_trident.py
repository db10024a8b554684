"""storm-kafka-client's Trident spouts in LocalCluster: Kafka -> Trident counts, exact under replays."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py.kafka import KafkaSpoutConfig, KafkaTridentSpoutOpaque, KafkaTridentSpoutTransactional
from storm_py.local import LocalCluster
from storm_py.trident import BaseFunction, Count, MemoryMapState, TridentTopology
from tests.kafka.conftest import Broker
from tests.trident.helpers import FailOnce, Seen, wait

WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]


class Decode(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.get_value(0).decode()])


@pytest.mark.parametrize("spout_class", [KafkaTridentSpoutOpaque, KafkaTridentSpoutTransactional])
def test_kafka_trident_spouts_count_exactly_once(broker: Broker, spout_class: Any) -> None:
    topic = broker.topic(4)
    truth: Counter[str] = Counter()
    items = []
    for i in range(1200):
        word = WORDS[(i * 7 + i // 3) % len(WORDS)]
        truth[word] += 1
        items.append((i % 4, None, word.encode()))
    broker.produce(topic, items)
    config = KafkaSpoutConfig(broker.bootstrap, [topic], max_poll_records=50, first_poll_offset_strategy="EARLIEST")
    topology = TridentTopology()
    stream = topology.new_stream(f"kafka-{topic}", spout_class(config)).parallelism_hint(2)
    assert list(stream.get_output_fields()) == ["topic", "partition", "offset", "key", "value"]
    factory = MemoryMapState.factory("opaque")
    state = (
        stream.each(["value"], Decode(), ["word"])
        .each(["offset"], FailOnce({7, 30}, Seen()), [])
        .group_by(["word"])
        .persistent_aggregate(factory, Count(), ["count"])
    )
    state.new_values_stream().each(["word"], FailOnce({"fig"}, Seen()), [])
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-trident", {"topology.max.spout.pending": 3}, topology.build())
        wait(lambda: sum(factory.values().values()) >= sum(truth.values()), "every record counted", timeout=120)
        cluster.kill_topology("kafka-trident", wait_secs=0)
    assert {k[0]: v for k, v in factory.values().items()} == dict(truth)
