"""Transactional and opaque Kafka spouts in LocalCluster: exact per-key counts in SQLite under injected batch
failures; the opaque spout goes on when a partition cannot be read."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from tests.kafka.conftest import Broker

APP = Path(__file__).parent / "apps" / "kafkatx"


def load_app() -> ModuleType:
    sys.path.insert(0, str(APP))
    try:
        from kafkatx import topology
    finally:
        sys.path.remove(str(APP))
    return topology


app = load_app()
WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]


def produce_words(broker: Broker, topic: str, n: int, partitions: int) -> Counter[str]:
    truth: Counter[str] = Counter()
    items = []
    for i in range(n):
        word = WORDS[(i * 7 + i // 3) % len(WORDS)]
        truth[word] += 1
        items.append((i % partitions, None, word.encode()))
    broker.produce(topic, items)
    return truth


def run(broker: Broker, tmp_path: Path, opaque: bool, fault_rate: float, n: int = 3000) -> None:
    topic = broker.topic(4)
    truth = produce_words(broker, topic, n, 4)
    db = str(tmp_path / "counts.db")
    app.create_db(db)
    conf: dict[str, Any] = {"kafkatx.bootstrap": broker.bootstrap, "kafkatx.topic": topic, "kafkatx.db": db,
                            "kafkatx.tx.id": f"tx-{topic}", "kafkatx.fault.rate": fault_rate, "kafkatx.seed": 3,
                            "kafkatx.opaque": opaque, "kafkatx.batch": 100, "topology.max.spout.pending": 3,
                            "topology.message.timeout.secs": 10}
    with LocalCluster() as cluster:
        cluster.submit_topology("kafkatx", conf, app.build(conf))
        wait_until(lambda: sum(app.read_counts(db).values()) >= n, 180, interval=0.5,
                   what=f"{n} words counted (have {sum(app.read_counts(db).values())})")
        cluster.kill_topology("kafkatx", wait_secs=0)
    assert app.read_counts(db) == dict(truth), "exact counts"
    txids = app.applied_txids(db)
    assert len(txids) == len(set(txids))


def test_transactional_kafka_spout_exact_counts_under_batch_failures(broker: Broker, tmp_path: Path) -> None:
    run(broker, tmp_path, opaque=False, fault_rate=0.15)


def test_opaque_kafka_spout_exact_counts_under_batch_failures(broker: Broker, tmp_path: Path) -> None:
    run(broker, tmp_path, opaque=True, fault_rate=0.15)


@pytest.mark.parametrize("opaque", [False, True])
def test_replayed_txid_carries_the_same_records(broker: Broker, opaque: bool) -> None:
    """The transactional emitter reads exactly [first_offset, next_offset) again; the opaque one continues."""
    from storm_py.kafka import KafkaSpoutConfig, OpaqueKafkaSpout, TransactionalKafkaSpout
    from storm_py.transactional import TransactionAttempt

    topic = broker.topic(1)
    broker.produce(topic, [(0, None, b"v%d" % i) for i in range(50)])
    config = KafkaSpoutConfig(broker.bootstrap, [topic], max_poll_records=20, poll_timeout_ms=2000)
    spout = OpaqueKafkaSpout(config) if opaque else TransactionalKafkaSpout(config)

    class Ctx:
        topology_name = "replay"

    class Out:
        def __init__(self) -> None:
            self.rows: list[list[Any]] = []

        def emit(self, values: list[Any], stream: str = "default") -> list[int]:
            self.rows.append(values)
            return []

        def report_error(self, exc: BaseException) -> None:
            raise AssertionError(exc)

    emitter: Any = spout.get_emitter({}, Ctx())  # type: ignore[arg-type]
    try:
        first = Out()
        tx = TransactionAttempt(1, 1)
        if opaque:
            meta = emitter.emit_partition_batch(tx, first, 0, None)
        else:
            meta = emitter.emit_partition_batch_new(tx, first, 0, None)
        assert meta["first_offset"] == 0 and meta["next_offset"] == len(first.rows) > 0
        assert [r[3] for r in first.rows] == list(range(meta["next_offset"]))
        if not opaque:
            again = Out()
            emitter.emit_partition_batch(TransactionAttempt(1, 2), again, 0, meta)
            assert [r[1:] for r in again.rows] == [r[1:] for r in first.rows]
        nxt = Out()
        meta2 = (emitter.emit_partition_batch(TransactionAttempt(2, 3), nxt, 0, meta) if opaque
                 else emitter.emit_partition_batch_new(TransactionAttempt(2, 3), nxt, 0, meta))
        assert meta2["first_offset"] == meta["next_offset"]
        assert nxt.rows and nxt.rows[0][3] == meta["next_offset"]
    finally:
        emitter.close()


def test_opaque_spout_tolerates_an_unreadable_partition(broker: Broker) -> None:
    from storm_py.kafka import KafkaSpoutConfig, OpaqueKafkaSpout
    from storm_py.transactional import TransactionAttempt

    topic = broker.topic(1)
    broker.produce(topic, [(0, None, b"x")])
    spout = OpaqueKafkaSpout(KafkaSpoutConfig(broker.bootstrap, [topic], poll_timeout_ms=500))

    class Ctx:
        topology_name = "unreadable"

    class Out:
        errors: list[BaseException] = []

        def emit(self, values: list[Any], stream: str = "default") -> list[int]:
            raise AssertionError("nothing can be emitted from a deleted topic")

        def report_error(self, exc: BaseException) -> None:
            self.errors.append(exc)

    emitter: Any = spout.get_emitter({}, Ctx())  # type: ignore[arg-type]
    try:
        broker.admin.delete_topic(topic)
        last = {"topic": topic, "partition": 0, "first_offset": 0, "next_offset": 1}
        out = Out()
        meta = emitter.emit_partition_batch(TransactionAttempt(2, 1), out, 0, last)
        # nothing emitted, no failure: the transaction goes on and the partition continues where it was
        assert meta["next_offset"] == last["next_offset"]
    finally:
        emitter.close()
