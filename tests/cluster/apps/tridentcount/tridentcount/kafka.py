"""A Kafka -> Trident -> Redis word count for the distributed cluster: every record's value is one word.

``tridentcount.kafka.bootstrap`` and ``tridentcount.kafka.topic`` name the records (read from the earliest
offset by storm-kafka-client's opaque Trident spout); the counts go to an opaque RedisMapState
(``tridentcount.redis.port``, keys under ``tridentcount.prefix``).
"""

from __future__ import annotations

from typing import Any

from storm_py.kafka import KafkaSpoutConfig, KafkaTridentSpoutOpaque
from storm_py.trident import BaseFunction, Count, TridentTopology
from storm_py.trident.redis_state import RedisMapState


class Decode(BaseFunction):
    """The record's value as text."""

    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.get_value(0).decode()])


def build(conf: dict[str, Any]) -> Any:
    topic = str(conf["tridentcount.kafka.topic"])
    config = KafkaSpoutConfig(str(conf["tridentcount.kafka.bootstrap"]), [topic],
                              max_poll_records=int(conf.get("tridentcount.kafka.poll", 2000)),
                              first_poll_offset_strategy="EARLIEST")
    state = RedisMapState.factory("opaque", {
        "port": int(conf["tridentcount.redis.port"]), "key_prefix": str(conf["tridentcount.prefix"]),
    })
    topology = TridentTopology()
    (
        topology.new_stream(f"kafka-{topic}", KafkaTridentSpoutOpaque(config)).parallelism_hint(2)
        .each(["value"], Decode(), ["word"])
        .group_by(["word"])
        .persistent_aggregate(state, Count(), ["count"]).parallelism_hint(3)
    )
    return topology.build()
