"""KafkaSpout (its offsets checkpointed) -> a bolt turning each record's value into a word -> a keyed stateful
count (fields grouping on the word) with ``rescalecount.counters`` tasks; the state in Redis."""

from __future__ import annotations

from typing import Any

from storm_py import BaseStatefulBolt, Bolt, TopologyBuilder
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig


class ValueWord(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.emit([tup.get_value_by_field("value").decode()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class Count(BaseStatefulBolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        self.counts.put(tup[0], self.counts.get(tup[0], 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def build(conf: dict[str, Any]) -> Any:
    spout_conf = KafkaSpoutConfig(str(conf["rescalecount.bootstrap"]), [str(conf["rescalecount.topic"])],
                                  group_id=str(conf["rescalecount.group"]), first_poll_offset_strategy="EARLIEST")
    counters = int(conf.get("rescalecount.counters", 4))
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaSpout(spout_conf), 2)
    builder.set_bolt("words", ValueWord(), 2).shuffle_grouping("records")
    builder.set_bolt("count", Count(), counters).fields_grouping("words", ["word"])
    return builder.create_topology()
