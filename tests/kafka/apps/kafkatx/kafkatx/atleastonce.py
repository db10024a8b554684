"""At-least-once from Kafka to Kafka across worker processes: KafkaSpout -> a bolt failing a seeded 5 % of
tuples once -> KafkaBolt copying each record's value to an output topic (acked only once the broker has it).

Conf: ``kafkatx.bootstrap``, ``kafkatx.topic``, ``kafkatx.out``, ``kafkatx.group``, ``kafkatx.fail.rate``,
``kafkatx.seed``, ``kafkatx.spouts`` (spout tasks).
"""

from __future__ import annotations

import hashlib
from typing import Any

from storm_py import Bolt, TopologyBuilder
from storm_py.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig


class FailOnce(Bolt):
    """Fails a seeded share of the records once (per process), passes the others on anchored."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.rate = float(conf.get("kafkatx.fail.rate") or 0)
        self.seed = str(conf.get("kafkatx.seed", 0))
        self.failed: set[tuple[int, int]] = set()

    def execute(self, tup: Any) -> None:
        key = (int(tup.values[1]), int(tup.values[2]))
        digest = hashlib.blake2b(f"{self.seed}/{key}".encode(), digest_size=8).digest()
        if key not in self.failed and int.from_bytes(digest, "big") / 2**64 < self.rate:
            self.failed.add(key)
            self.collector.fail(tup)
            return
        self.collector.emit([tup.values[3], tup.values[4]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])


def build(conf: dict[str, Any]) -> Any:
    bootstrap = str(conf["kafkatx.bootstrap"])
    spout_conf = KafkaSpoutConfig(bootstrap, [str(conf["kafkatx.topic"])], group_id=str(conf["kafkatx.group"]),
                                  offset_commit_period_ms=500, retry_max_delay_ms=500,
                                  records_per_tree=int(conf.get("kafkatx.per_tree", 1)))
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(spout_conf), int(conf.get("kafkatx.spouts", 2)))
    tb.set_bolt("fail", FailOnce(), 2).shuffle_grouping("kafka")
    tb.set_bolt("out", KafkaBolt(bootstrap, str(conf["kafkatx.out"])), 2).shuffle_grouping("fail")
    return tb.create_topology()
