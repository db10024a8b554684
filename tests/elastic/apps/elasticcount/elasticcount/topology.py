"""KafkaSpout (two tasks on one executor) -> a bolt turning each record's value into a word (four tasks on two
executors) -> a stateful count (fields grouping on the word, four tasks on two executors), under the topology's
``topology.state.guarantee`` and state provider."""

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
    spout_conf = KafkaSpoutConfig(str(conf["elastic.bootstrap"]), [str(conf["elastic.topic"])],
                                  group_id=str(conf["elastic.group"]), first_poll_offset_strategy="EARLIEST")
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaSpout(spout_conf), 1).set_num_tasks(2)
    builder.set_bolt("words", ValueWord(), 2).set_num_tasks(4).shuffle_grouping("records")
    builder.set_bolt("count", Count(), 2).set_num_tasks(4).fields_grouping("words", ["word"])
    return builder.create_topology()
