"""examples/kafka_exactly_once_counts.py against the dev broker and a real Redis: the committed counts equal the
words written, and a second run over more sentences goes on from the first run's counts and offsets."""

from __future__ import annotations

from collections import Counter

from examples import kafka_exactly_once_counts as example
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.dev.redis import RedisServerProcess
from tests.kafka.conftest import Broker


def test_kafka_exactly_once_counts_example(broker: Broker, redis_server: RedisServerProcess) -> None:
    topic = broker.topic(2, "sentences")
    conf = example.topology_conf(broker.bootstrap, topic, redis_server.host, redis_server.port)
    conf["topology.state.checkpoint.interval.ms"] = 100
    expected: Counter[str] = Counter()
    for rounds in (3, 2):  # the second run reads only what was written after the first
        expected.update(example.produce_sentences(broker.bootstrap, topic, rounds))
        with LocalCluster() as cluster:
            cluster.submit_topology("kafka-eo-example", conf, example.build(conf))
            wait_until(lambda: example.committed_counts(conf) == expected, 90, interval=0.2,
                       what=f"the counts after {sum(expected.values())} words")
            cluster.kill_topology("kafka-eo-example", wait_secs=0)
