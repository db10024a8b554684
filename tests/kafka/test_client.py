"""The Kafka client wrapper against the dev broker: a synchronous commit is bounded when the broker is frozen,
and records fetched while it waited are handed out by the next poll."""

from __future__ import annotations

import pytest

from storm_py.clock import SYSTEM_CLOCK
from storm_py.kafka.client import COMMIT_TIMEOUT, KafkaClientError, KafkaConsumerClient
from tests.kafka.conftest import Broker


def test_sync_commit_is_bounded_when_the_broker_is_frozen(broker: Broker) -> None:
    topic = broker.topic(1)
    broker.produce(topic, [(0, None, b"x")])
    client = KafkaConsumerClient(broker.bootstrap, f"g-{topic}")
    try:
        client.assign({(topic, 0): 0})
        client.commit({(topic, 0): 0}, "{}", sync=True)
        broker.process.pause()
        try:
            start = SYSTEM_CLOCK.now()
            with pytest.raises(KafkaClientError, match=f"{topic}/0@1"):
                client.commit({(topic, 0): 1}, "{}", sync=True)
            assert SYSTEM_CLOCK.now() - start < COMMIT_TIMEOUT + 2
        finally:
            broker.process.resume()
    finally:
        client.close()


def test_records_fetched_during_a_sync_commit_are_not_lost(broker: Broker) -> None:
    topic = broker.topic(1)
    broker.produce(topic, [(0, None, b"v%d" % i) for i in range(50)])
    client = KafkaConsumerClient(broker.bootstrap, f"g-{topic}")
    try:
        client.assign({(topic, 0): 0})
        client.commit({(topic, 0): 0}, "{}", sync=True)  # its wait may fetch records
        got: list[int] = []
        deadline = SYSTEM_CLOCK.now() + 30
        while len(got) < 50 and SYSTEM_CLOCK.now() < deadline:
            raw, _ = client.poll_raw(100, 0.2)
            got.extend(r[2] for r in raw)
        assert got == list(range(50))
    finally:
        client.close()
