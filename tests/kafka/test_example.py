"""examples/kafka_word_count.py against the dev broker: the last count per word in the output topic is exact
(no failures are injected, so at-least-once delivers each sentence once)."""

from __future__ import annotations

from collections import Counter

from examples import kafka_word_count as example
from storm_py import LocalCluster
from storm_py.clock import wait_until
from tests.kafka.conftest import Broker


def test_kafka_word_count_example(broker: Broker) -> None:
    source, sink = broker.topic(2, "sentences"), broker.topic(1, "counts")
    rounds = 4
    example.produce_sentences(broker.bootstrap, source, rounds)
    truth = Counter(w for s in example.SENTENCES for w in s.split())
    expected = {w.encode(): str(n * rounds).encode() for w, n in truth.items()}
    total_updates = sum(truth.values()) * rounds
    conf = {"kafka.bootstrap": broker.bootstrap, "kafka.input.topic": source, "kafka.output.topic": sink}
    with LocalCluster() as cluster:
        cluster.submit_topology("kafka-wc", conf, example.build(conf))
        rows = []

        def done() -> bool:
            rows[:] = broker.read_all(sink, 1, total_updates, timeout=1.0)
            return len(rows) >= total_updates

        wait_until(done, 90, interval=0.5, what=f"{total_updates} count updates in the output topic")
        cluster.kill_topology("kafka-wc", wait_secs=0)
    last: dict[bytes | None, bytes] = {}
    for key, value in rows:
        if key is not None and (key not in last or int(value) > int(last[key])):
            last[key] = value
    assert last == expected
