"""Word count from Kafka back to Kafka: sentences from a topic -> split -> fields-grouped counts -> KafkaBolt.

Each count update is written to the output topic as key ``word``, value ``count`` (UTF-8), so the topic's last
value per key is the word's count.  The spout is at-least-once: a sentence whose tree fails (or times out) is
read again, so a count can run ahead after a failure; for exact counts use the transactional Kafka spout.

Run it against the development broker (see docs/guide/kafka.md):

    storm-py dev-kafka --port 9092 --topic word-count-sentences:2 --topic word-counts:1 &
    python examples/kafka_word_count.py --bootstrap 127.0.0.1:9092 --produce 5 --ttl 10

After ``--ttl`` seconds it reads the output topic back and prints each word's count; ``--read`` only reads and
prints it.  The reader assigns itself every partition from offset 0 (:func:`read_counts`): no consumer group
is joined, so nothing is committed and any number of readers may look.

or through ``storm-py local examples.kafka_word_count:build --ttl 10 -c kafka.bootstrap=127.0.0.1:9092``
(conf keys: ``kafka.bootstrap``, ``kafka.input.topic`` (word-count-sentences), ``kafka.output.topic``
(word-counts)).  Every example reading Kafka has topics of its own, so examples run one after the other against
the same broker do not read each other's records.

A broker that cannot be reached or lacks a topic is a one-line error and a non-zero exit.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # run as a script: the examples package

from examples.word_count import SENTENCES, SplitSentence
from storm_py import BasicBolt, Config, LocalCluster, TopologyBuilder
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError
from storm_py.kafka import KafkaBolt, KafkaRecord, KafkaSpout, KafkaSpoutConfig

log = logging.getLogger(__name__)

#: the topic of sentences this example counts
INPUT_TOPIC = "word-count-sentences"
#: the topic the running counts go to (key: the word, value: its count)
OUTPUT_TOPIC = "word-counts"


def sentence(record: KafkaRecord) -> list[Any] | None:
    """The record's value as a sentence (empty records are skipped, and so acked at once)."""
    text = (record.value or b"").decode("utf-8").strip()
    return [text] if text else None


class WordCount(BasicBolt):
    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        word = tup[0]
        self.counts[word] += 1
        collector.emit([word, self.counts[word]])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["key", "value"])


def build(conf: dict[str, Any] | None = None) -> Any:
    """The topology; ``conf`` names the broker and the topics."""
    conf = conf or {}
    bootstrap = str(conf.get("kafka.bootstrap", "127.0.0.1:9092"))
    spout_config = KafkaSpoutConfig(bootstrap, [str(conf.get("kafka.input.topic", INPUT_TOPIC))],
                                    translator=sentence, translator_fields=["sentence"])
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaSpout(spout_config), 2)
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 2).fields_grouping("split", ["word"])
    builder.set_bolt("out", KafkaBolt(bootstrap, str(conf.get("kafka.output.topic", OUTPUT_TOPIC)))).shuffle_grouping(
        "count")
    return builder.create_topology()


def quiet_client_logs() -> None:
    """Keep librdkafka's reconnect lines (one every few milliseconds while a broker is down) off the terminal: a
    call that fails raises, and the example says so in one line."""
    logging.getLogger("storm_py.kafka.librdkafka").setLevel(logging.CRITICAL)


def require_topic(bootstrap: str, topic: str, timeout: float = 5.0) -> list[int]:
    """The partitions of ``topic``; :class:`StormPyError` naming the topic and how to create it when it does not
    exist (and :class:`~storm_py.kafka.client.KafkaClientError` when the broker does not answer)."""
    from storm_py.kafka.client import KafkaConsumerClient

    consumer = KafkaConsumerClient(bootstrap, "examples-topic-check")
    try:
        partitions = consumer.topic_partitions(timeout, topic).get(topic, [])
    finally:
        consumer.close()
    if not partitions:
        raise StormPyError(f"topic {topic!r} does not exist on {bootstrap}: create it, e.g. "
                         f"storm-py dev-kafka --topic {topic}:2")
    return [p.partition for p in partitions]


def produce_sentences(bootstrap: str, topic: str, rounds: int, timeout: float = 30.0) -> Counter[str]:
    """Write the sentences ``rounds`` times to ``topic`` (each confirmed by the broker); the words written,
    counted."""
    from storm_py.kafka.client import KafkaProducerClient

    require_topic(bootstrap, topic)
    producer = KafkaProducerClient(bootstrap)
    errors: list[str] = []
    for _ in range(rounds):
        for s in SENTENCES:
            producer.produce(topic, None, s.encode(),
                             lambda err, t, p, o: errors.append(err) if err is not None else None)
    left = producer.flush(timeout)
    if errors or left:
        reason = errors[0] if errors else f"{left} not confirmed within {timeout:g}s"
        raise StormPyError(f"producing sentences to {topic!r} on {bootstrap} failed: {reason}")
    return Counter(w for s in SENTENCES for w in s.split() for _ in range(rounds))


def read_counts(bootstrap: str, topic: str, timeout: float = 10.0, quiet_secs: float = 1.0) -> dict[str, int]:
    """Each word's last count in ``topic``: every partition read from offset 0 with ``assign()`` until no record
    came for ``quiet_secs`` (or ``timeout`` passed)."""
    from storm_py.kafka.client import KafkaConsumerClient

    partitions = require_topic(bootstrap, topic, timeout)
    consumer = KafkaConsumerClient(bootstrap, "kafka-word-count-reader")
    try:
        consumer.assign({(topic, p): 0 for p in partitions})
        counts: dict[str, int] = {}
        deadline = SYSTEM_CLOCK.now() + timeout
        quiet_until = SYSTEM_CLOCK.now() + quiet_secs
        while SYSTEM_CLOCK.now() < min(deadline, quiet_until):
            records, _ = consumer.poll(10_000, 0.2)
            for r in records:
                if r.key is not None and r.value is not None:
                    counts[r.key.decode("utf-8")] = int(r.value)  # a partition's records come in order
            if records:
                quiet_until = SYSTEM_CLOCK.now() + quiet_secs
        return counts
    finally:
        consumer.close()


def print_counts(topic: str, counts: dict[str, int]) -> None:
    """The counts as a table, highest first."""
    print(f"word counts in topic {topic!r} ({len(counts)} words, key: word, value: count):")
    for word, count in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])):
        print(f"  {word:<12} {count:>6}")


def main() -> None:
    """Run the example; an error it expects (no broker, no topic) is one line on stderr and exit status 1."""
    try:
        run()
    except StormPyError as err:
        raise SystemExit(f"kafka_word_count: {err.message}") from None


def run() -> None:
    parser = argparse.ArgumentParser(description="Kafka word count in a LocalCluster")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--input", default=INPUT_TOPIC)
    parser.add_argument("--output", default=OUTPUT_TOPIC)
    parser.add_argument("--produce", type=int, default=0, help="write the sample sentences this many times first")
    parser.add_argument("--ttl", type=float, default=10.0, help="seconds to run")
    parser.add_argument("--read", action="store_true", help="only print the counts in the output topic")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    quiet_client_logs()
    if args.read:
        print_counts(args.output, read_counts(args.bootstrap, args.output))
        return
    require_topic(args.bootstrap, args.output)
    if args.produce:
        produce_sentences(args.bootstrap, args.input, args.produce)
        print("produced", args.produce * len(SENTENCES), "sentences")
    else:
        require_topic(args.bootstrap, args.input)
    conf = Config()
    conf.update({"kafka.bootstrap": args.bootstrap, "kafka.input.topic": args.input,
                 "kafka.output.topic": args.output})
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-word-count", conf, build(conf))
        SYSTEM_CLOCK.sleep(args.ttl)
        cluster.kill_topology("kafka-word-count", wait_secs=0)
    print_counts(args.output, read_counts(args.bootstrap, args.output))


if __name__ == "__main__":
    main()
