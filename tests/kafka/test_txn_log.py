"""The read_committed view of tests/kafka/txn_log.py against the dev broker: committed transactions and plain
records are visible, aborted ones are not, and a transaction left open by a producer that a new incarnation of
its transactional id fenced is not either."""

from __future__ import annotations

from confluent_kafka import Producer

from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)
from tests.kafka.txn_log import read_partition


def transactional(broker: Broker, tid: str) -> Producer:  # noqa: F811
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(30)
    return p


def test_the_read_committed_view_keeps_committed_and_plain_records_only(broker: Broker) -> None:  # noqa: F811
    topic = broker.topic(1)
    broker.produce(topic, [(0, None, b"plain-1")])
    first = transactional(broker, f"{topic}-a")
    first.begin_transaction()
    first.produce(topic, value=b"committed-1", partition=0)
    first.produce(topic, value=b"committed-2", partition=0)
    first.commit_transaction(30)
    first.begin_transaction()
    first.produce(topic, value=b"aborted-1", partition=0)
    first.flush(30)
    first.abort_transaction(30)
    first.begin_transaction()
    first.produce(topic, value=b"left-open", partition=0)
    first.flush(30)  # in the log, never committed: its producer is replaced, as a killed worker's is
    second = transactional(broker, f"{topic}-a")
    second.begin_transaction()
    second.produce(topic, value=b"committed-3", partition=0)
    second.commit_transaction(30)
    broker.produce(topic, [(0, None, b"plain-2")])
    log = read_partition(broker.bootstrap, topic, 0)
    assert [v for _, v in log.committed] == [b"plain-1", b"committed-1", b"committed-2", b"committed-3", b"plain-2"]
    assert log.aborted + log.fenced == 2 and log.open == 0
    assert log.commits == 2 and log.aborts >= 1
