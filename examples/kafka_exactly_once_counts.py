"""Kafka -> stateful word count, exactly once: every word of the ``sentences`` topic is counted once in Redis,
whatever fails meanwhile (a worker dies, a bolt raises, Redis goes away for a while).

``topology.state.guarantee: exactly_once``: the Kafka spout's offsets are saved with each checkpoint beside the
counts, checkpoint barriers are aligned at every bolt, and any failure restarts every component from the last
checkpoint, the spout from its saved offsets.  Records need no tuple tree.

Run it against the development broker and Redis (see README, "Managed state"):

    storm-py dev-kafka --port 9092 --topic sentences:2 &
    storm-py dev-redis --port 6379 &
    python examples/kafka_exactly_once_counts.py --bootstrap 127.0.0.1:9092 --redis 127.0.0.1:6379 --produce 20
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # run as a script: the examples package

from examples.kafka_word_count import produce_sentences, sentence
from examples.stateful_word_count import committed_counts
from examples.word_count import SplitSentence
from storm_py import BaseStatefulBolt, Config, KeyValueState, LocalCluster, TopologyBuilder
from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig

log = logging.getLogger(__name__)


class WordCount(BaseStatefulBolt):
    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state

    def execute(self, tup: Tuple) -> None:
        self.counts.put(tup[0], self.counts.get(tup[0], 0) + 1)
        self.collector.ack(tup)


def build(conf: dict[str, Any] | None = None) -> Any:
    """The topology; ``kafka.bootstrap`` and ``kafka.input.topic`` name the broker and the topic."""
    conf = conf or {}
    spout_config = KafkaSpoutConfig(str(conf.get("kafka.bootstrap", "127.0.0.1:9092")),
                                    [str(conf.get("kafka.input.topic", "sentences"))],
                                    first_poll_offset_strategy="EARLIEST", translator=sentence,
                                    translator_fields=["sentence"])
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaSpout(spout_config), 2)
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 2).fields_grouping("split", ["word"])
    return builder.create_topology()


def topology_conf(bootstrap: str, topic: str, redis_host: str, redis_port: int,
                  key_prefix: str = "kafka-exactly-once:") -> Config:
    conf = Config()
    conf.update({
        "kafka.bootstrap": bootstrap, "kafka.input.topic": topic,
        "topology.state.guarantee": "exactly_once",
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"host": redis_host, "port": redis_port, "key_prefix": key_prefix},
        "topology.state.checkpoint.interval.ms": 1000,
    })
    return conf


def main() -> None:
    parser = argparse.ArgumentParser(description="Kafka -> stateful word count, exactly once, in a LocalCluster")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="sentences")
    parser.add_argument("--redis", default="127.0.0.1:6379", help="host:port of the Redis server")
    parser.add_argument("--produce", type=int, default=0, help="write the sample sentences this many times first")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the counts")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    host, port = args.redis.rsplit(":", 1)
    conf = topology_conf(args.bootstrap, args.topic, host, int(port))
    expected = committed_counts(conf)
    if args.produce:
        expected.update(produce_sentences(args.bootstrap, args.topic, args.produce))
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-exactly-once-counts", conf, build(conf))
        wait_until(lambda: committed_counts(conf) == expected, args.timeout, interval=0.5,
                   what="the counts of every sentence written")
        cluster.kill_topology("kafka-exactly-once-counts", wait_secs=0)
    for word, count in sorted(committed_counts(conf).items()):
        print(f"{word}\t{count}")


if __name__ == "__main__":
    main()
