"""A real Kafka-protocol broker (tansu, memory storage) on a free loopback port for the Kafka tests, and a second
one (``strict_broker``) for the tests of a fetch past the log end.

The broker is started once per test session and stopped after.  Tests create their own topics (unique names).
:class:`Broker` helpers produce with explicit partitions and return, per partition, how many records went in:
since each test topic starts empty, that is the partition's log end.  (The broker's ListOffsets(LATEST) is wrong
after multi-record produce batches, so tests never ask it for the log end; ``produce_singly`` sends one record
per batch for the tests that need LATEST to be right.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from storm_py.dev.kafka import KafkaBrokerProcess
from storm_py.kafka.client import KafkaAdmin
from tests.kafka.strict_broker import StrictKafkaBroker


class Broker:
    """The running broker and test helpers."""

    def __init__(self, process: KafkaBrokerProcess) -> None:
        self.process = process
        self.bootstrap = process.bootstrap_servers
        self.admin = KafkaAdmin(self.bootstrap)

    def topic(self, partitions: int, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        self.admin.create_topic(name, partitions)
        return name

    def produce(self, topic: str, items: Iterable[tuple[int, bytes | None, bytes]]) -> dict[int, int]:
        """Produce ``(partition, key, value)`` items (batched); returns records per partition."""
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "batch.num.messages": 10000,
                      "queue.buffering.max.messages": 1_000_000})
        counts: dict[int, int] = {}
        errors: list[str] = []

        def done(err: object, msg: object) -> None:
            if err is not None:
                errors.append(str(err))

        for partition, key, value in items:
            while True:
                try:
                    p.produce(topic, value=value, key=key, partition=partition, on_delivery=done)
                    break
                except BufferError:
                    p.poll(0.05)
            counts[partition] = counts.get(partition, 0) + 1
        assert p.flush(60) == 0
        assert not errors, errors[:3]
        return counts

    def produce_singly(self, topic: str, items: Iterable[tuple[int, bytes | None, bytes]]) -> dict[int, int]:
        """Like :meth:`produce`, one record per produce batch (the broker's LATEST is then right)."""
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        counts: dict[int, int] = {}
        for partition, key, value in items:
            p.produce(topic, value=value, key=key, partition=partition)
            assert p.flush(10) == 0
            counts[partition] = counts.get(partition, 0) + 1
        return counts

    def commit(self, group: str, topic: str, offsets: dict[int, int]) -> None:
        """Commit ``{partition: offset}`` for ``group`` (any offset, as Kafka allows)."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
        finally:
            c.close()

    def delete_records(self, topic: str, before: dict[int, int]) -> None:
        """Delete each partition's records below an offset (the log start moves there, as retention moves it)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})  # kept until the futures complete
        futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in before.items()])
        for future in futures.values():
            future.result(timeout=10)

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, int]:
        """The group's committed offsets (partitions without a commit are left out)."""
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            res = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        finally:
            c.close()
        return {r.partition: r.offset for r in res if r.offset >= 0}

    def read_values(self, topic: str, partitions: int, want: set[bytes], timeout: float = 60.0) -> set[bytes]:
        """The distinct values of a topic, read until every one of ``want`` was seen (or ``timeout``)."""
        from storm_py.clock import SYSTEM_CLOCK

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen: set[bytes] = set()
        deadline = SYSTEM_CLOCK.now() + timeout
        try:
            while not want <= seen and SYSTEM_CLOCK.now() < deadline:
                for m in c.consume(10000, 0.2):
                    if m.error() is None and m.value() is not None:
                        seen.add(m.value())
        finally:
            c.close()
        return seen

    def read_all(self, topic: str, partitions: int, expect: int,
                 timeout: float = 30.0) -> list[tuple[bytes | None, bytes]]:
        """Every ``(key, value)`` of a topic (waits until ``expect`` records were read)."""
        from storm_py.clock import SYSTEM_CLOCK

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[bytes | None, bytes]] = []
        deadline = SYSTEM_CLOCK.now() + timeout
        try:
            while len(out) < expect and SYSTEM_CLOCK.now() < deadline:
                for m in c.consume(10000, 0.2):
                    if m.error() is None:
                        out.append((m.key(), m.value()))
        finally:
            c.close()
        return out


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A tansu broker on a free loopback port, for the whole session."""
    log_dir: Path = tmp_path_factory.mktemp("kafka")
    proc = KafkaBrokerProcess(log_path=log_dir / "broker.log", die_with_parent=True)
    proc.start()
    try:
        yield Broker(proc)
    finally:
        proc.stop()


@pytest.fixture(scope="session")
def strict_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A broker that answers a fetch past the log end with OFFSET_OUT_OF_RANGE (:mod:`tests.kafka.strict_broker`)."""
    run_dir: Path = tmp_path_factory.mktemp("strict-kafka")
    proc = StrictKafkaBroker(run_dir / "data", log_path=run_dir / "broker.log")
    proc.start()
    try:
        yield Broker(proc)
    finally:
        proc.stop()


@pytest.fixture
def broker(kafka_broker: Broker) -> Iterator[Broker]:
    """The session's broker, made sure to run unpaused for this test."""
    kafka_broker.process.resume()
    assert kafka_broker.process.running, "the Kafka broker died"
    yield kafka_broker
    kafka_broker.process.resume()
