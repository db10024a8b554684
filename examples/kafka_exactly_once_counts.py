"""Kafka -> stateful word count, exactly once: every word of its topic is counted once in Redis,
whatever fails meanwhile (a worker dies, a bolt raises, Redis goes away for a while).

``topology.state.guarantee: exactly_once``: the Kafka spout's offsets are saved with each checkpoint beside the
counts, checkpoint barriers are aligned at every bolt, and any failure restarts every component from the last
checkpoint, the spout from its saved offsets.  Records need no tuple tree.

Run it against the development broker and Redis (see docs/guide/managed-state.md):

    storm-py dev-kafka --port 9092 --topic exactly-once-sentences:2 &
    storm-py dev-redis --port 6379 &
    python examples/kafka_exactly_once_counts.py --bootstrap 127.0.0.1:9092 --redis 127.0.0.1:6379 --produce 20

It waits until the counts in Redis are the counts before the run plus the words it wrote (``--timeout``, 60 s),
prints them and exits.  The topic is this example's own (``exactly-once-sentences``): every record of it is
counted, so a sentence written there by another program makes the counts differ from what this run expects,
and the run ends with a one-line message saying so (as for an unreachable broker or Redis) and exit status 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # run as a script: the examples package

from examples.kafka_word_count import produce_sentences, quiet_client_logs, require_topic, sentence
from examples.stateful_word_count import committed_counts
from examples.word_count import SplitSentence
from storm_py import BaseStatefulBolt, Config, KeyValueState, LocalCluster, TopologyBuilder
from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.errors import StormPyError, WaitTimeoutError
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig

log = logging.getLogger(__name__)

#: the topic of sentences this example counts
TOPIC = "exactly-once-sentences"


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
                                    [str(conf.get("kafka.input.topic", TOPIC))],
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


def settled(got: Counter[str], expected: Counter[str]) -> bool:
    """Whether the counts can no longer change to the expected ones: they are them, or a word went past."""
    return got == expected or any(n > expected[w] for w, n in got.items())


def mismatch(got: Counter[str], expected: Counter[str], topic: str, waited: float) -> str:
    """Why the counts in Redis are not the expected ones after ``waited`` seconds, in one line."""
    have, want = sum(got.values()), sum(expected.values())
    if any(n > expected[w] for w, n in got.items()):
        return (f"Redis holds {have} counted words after {waited:.0f}s, {want} expected (the counts before this run "
                f"plus the words it wrote): topic {topic!r} holds sentences this run did not write; give this "
                f"example a topic of its own (--topic)")
    return (f"Redis holds {have} counted words after {waited:.0f}s, {want} expected: not every sentence of topic "
            f"{topic!r} was counted in time (raise --timeout, or see the errors above)")


def main() -> None:
    """Run the example; an error it expects (no broker, no topic, no Redis, counts that do not add up) is one
    line on stderr and exit status 1."""
    try:
        run()
    except StormPyError as err:
        raise SystemExit(f"kafka_exactly_once_counts: {err.message}") from None


def run() -> None:
    parser = argparse.ArgumentParser(description="Kafka -> stateful word count, exactly once, in a LocalCluster")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default=TOPIC)
    parser.add_argument("--redis", default="127.0.0.1:6379", help="host:port of the Redis server")
    parser.add_argument("--produce", type=int, default=0, help="write the sample sentences this many times first")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the counts")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    quiet_client_logs()
    host, port = args.redis.rsplit(":", 1)
    conf = topology_conf(args.bootstrap, args.topic, host, int(port))
    expected = committed_counts(conf)
    if args.produce:
        expected.update(produce_sentences(args.bootstrap, args.topic, args.produce))
    else:
        require_topic(args.bootstrap, args.topic)
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-exactly-once-counts", conf, build(conf))
        start = SYSTEM_CLOCK.now()
        try:  # counts only grow: a word counted more often than written ends the wait at once
            wait_until(lambda: settled(committed_counts(conf), expected), args.timeout, interval=0.5,
                       what="the counts of every sentence written")
        except WaitTimeoutError:
            pass
        finally:
            cluster.kill_topology("kafka-exactly-once-counts", wait_secs=0)
    got = committed_counts(conf)
    if got != expected:
        why = mismatch(got, expected, args.topic, SYSTEM_CLOCK.now() - start)
        raise SystemExit(f"kafka_exactly_once_counts: {why}")
    for word, count in sorted(got.items()):
        print(f"{word}\t{count}")


if __name__ == "__main__":
    main()
