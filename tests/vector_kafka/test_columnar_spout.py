"""The columnar KafkaSpout in a LocalCluster: one batch per poll per partition with the exact schema, message ids
as offset ranges, a failed batch retried whole, a batch past max_retries dead-lettered as one batch, offsets
committed to the log end once every batch is done."""

from __future__ import annotations

import json
import threading
from typing import Any

import pyarrow as pa
import pytest

from storm_py import LocalCluster, TopologyBuilder, VectorBolt
from storm_py.clock import wait_until
from storm_py.errors import FailedException
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from storm_py.kafka.columnar import DEAD_LETTER_SCHEMA, RECORD_SCHEMA
from storm_py.testing.registry import Shared
from tests.kafka.conftest import Broker

pytestmark = pytest.mark.slow

SCHEMA = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("n", pa.int64())])


class Store(Shared):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: list[tuple[str, pa.RecordBatch]] = []
        self.failed_once: set[Any] = set()


class Take(VectorBolt):
    """Records every batch; fails a batch holding ``n == 6`` the first time, one holding ``n == 13`` always."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        with self.store.lock:
            self.store.batches.append((collector.source_stream, batch))
        if collector.source_stream != "default":
            return
        ns = _ns(batch)
        if 13 in ns:
            raise FailedException("poison")
        key = (batch.column("partition")[0].as_py(), batch.column("offset")[0].as_py())
        if 6 in ns and key not in self.store.failed_once:
            self.store.failed_once.add(key)
            raise FailedException("once")

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def produce(broker: Broker, topic: str, n: int) -> dict[int, int]:
    return broker.produce(topic, [(i % 2, None, json.dumps({"n": i}).encode()) for i in range(n)])


def run(broker: Broker, config: KafkaSpoutConfig, store: Store, name: str, done: Any) -> None:
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(config))
    builder.set_bolt("take", Take(store)).shuffle_grouping("kafka").shuffle_grouping("kafka", "dead_letter")
    with LocalCluster() as cluster:
        cluster.submit_topology(name, {"topology.message.timeout.secs": 30}, builder.create_topology())
        wait_until(done, 60, interval=0.1, what="every record done")
        cluster.kill_topology(name, wait_secs=5)


def test_batches_of_the_record_schema_retried_whole_and_dead_lettered_then_committed(broker):
    topic = broker.topic(2, prefix="colspout")
    n = 40
    ends = produce(broker, topic, n)
    store = Store()
    group = f"g-{topic}"
    config = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=group, columnar=True, max_poll_records=10,
                              max_retries=1, offset_commit_period_ms=100)

    def done() -> bool:
        return broker.committed(group, topic, 2) == ends

    run(broker, config, store, "colspout", done)
    default = [b for s, b in store.batches if s == "default"]
    dead = [b for s, b in store.batches if s == "dead_letter"]
    assert all(b.schema.equals(RECORD_SCHEMA) for b in default)
    assert all(len(set(b.column("partition").to_pylist())) == 1 and b.num_rows <= 10 for b in default)
    seen = {(b.column("partition")[i].as_py(), b.column("offset")[i].as_py()): json.loads(b.column("value")[i]
            .as_py())["n"] for b in default for i in range(b.num_rows)}
    assert sorted(seen.values()) == list(range(n)), "every record in some batch"
    # the batch with n == 6 failed once and came again whole (same rows); the poison batch came twice, then
    # went to the dead-letter stream as one batch with an error column
    with6 = [b.column("offset").to_pylist() for b in default if 6 in _ns(b)]
    assert len(with6) == 2 and with6[0] == with6[1]
    with13 = [b.column("offset").to_pylist() for b in default if 13 in _ns(b)]
    assert len(with13) == 2 and with13[0] == with13[1]
    [letter] = dead
    assert letter.schema.equals(DEAD_LETTER_SCHEMA)
    assert letter.column("offset").to_pylist() == with13[0]
    assert "2 times, max_retries=1" in letter.column("error")[0].as_py()


def test_a_json_batch_translator_emits_batch_schema_and_dead_letters_what_it_cannot_read(broker):
    topic = broker.topic(1, prefix="coljson")
    ends = broker.produce(topic, [(0, None, json.dumps({"n": i}).encode()) for i in range(5)]
                          + [(0, None, b"not json")] + [(0, None, json.dumps({"n": 100 + i}).encode())
                                                        for i in range(5)])
    store = Store()
    group = f"g-{topic}"
    config = KafkaSpoutConfig(broker.bootstrap, [topic], group_id=group, columnar=True, max_poll_records=5,
                              batch_translator="json", batch_schema=SCHEMA, max_retries=0,
                              offset_commit_period_ms=100)
    run(broker, config, store, "coljson", lambda: broker.committed(group, topic, 1) == ends)
    default = [b for s, b in store.batches if s == "default"]
    dead = [b for s, b in store.batches if s == "dead_letter"]
    assert all(b.schema.equals(SCHEMA) for b in default)
    good = sorted(n for b in default for n in _ns(b))
    bad = sorted(o for b in dead for o in b.column("offset").to_pylist())
    assert 5 in bad and "not JSON objects" in dead[0].column("error")[0].as_py()
    assert sorted(good + [json.loads(v)["n"] for b in dead for v in b.column("value").to_pylist()
                          if v != b"not json"]) == [*range(5), *range(100, 105)]


def _ns(batch: pa.RecordBatch) -> list[int]:
    if "n" in batch.schema.names:
        return list(batch.column("n").to_pylist())
    return [json.loads(v)["n"] for v in batch.column("value").to_pylist()]
