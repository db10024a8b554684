"""Kafka to Parquet, columnar end to end: a columnar transactional Kafka spout translating JSON values into Arrow
batches, a ParquetBatchSink taking the batches whole, the committed rows read in Spark: exact rows, exactly once,
with failing batches replayed in both phases."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from examples.events_pipeline import SeededFaults
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.kafka import KafkaSpoutConfig, OpaqueKafkaSpout, TransactionalKafkaSpout
from storm_py.spark import ParquetBatchSink, committed_txids, read_committed, read_committed_table
from storm_py.transactional import TransactionalTopologyBuilder
from tests.kafka.conftest import Broker

pytestmark = [pytest.mark.spark, pytest.mark.slow]

BATCH_SCHEMA = pa.schema([("user", pa.string()), ("amount", pa.float64()), ("partition", pa.int32()),
                          ("offset", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC"))])
SINK_SCHEMA = {"user": "string", "amount": "float64", "partition": "int64", "offset": "int64",
               "timestamp": "timestamp"}
PARTITIONS = 3


def produce(broker: Broker, topic: str, n: int) -> list[tuple[int, str, float]]:
    """``n`` JSON records over the partitions; each partition's records in order: ``(partition, user, amount)``."""
    items = []
    for i in range(n):
        items.append((i % PARTITIONS, None, json.dumps({"user": f"u{i}", "amount": i * 0.5, "note": "x"}).encode()))
    broker.produce(topic, items)
    return [(p, json.loads(v)["user"], json.loads(v)["amount"]) for p, _, v in items]


def landed(root: str) -> int:
    if not committed_txids(root):
        return 0
    return int(read_committed_table(root).num_rows)


@pytest.mark.parametrize("opaque", [False, True], ids=["transactional", "opaque"])
def test_kafka_json_lands_in_parquet_exactly_once_through_batches(broker, spark, tmp_path, opaque: bool):
    n = 1500
    topic = broker.topic(PARTITIONS, prefix="colpq")
    truth = produce(broker, topic, n)
    root = str(tmp_path / "events")
    config = KafkaSpoutConfig(broker.bootstrap, [topic], columnar=True, batch_translator="json",
                              batch_schema=BATCH_SCHEMA, max_poll_records=100)
    spout: Any = OpaqueKafkaSpout(config) if opaque else TransactionalKafkaSpout(config)
    faults = SeededFaults(seed=5, rate=0.1, force=[("sink.execute", 2), ("sink.before-latest", 4),
                                                   ("sink.after-commit", 5)])
    builder = TransactionalTopologyBuilder(f"colpq-{topic}", "kafka", spout, 2)
    builder.set_committer_bolt("sink", ParquetBatchSink(root, SINK_SCHEMA, source_fields=("partition", "offset"),
                                                        fault_hook=faults), 1).global_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("colpq", {"topology.max.spout.pending": 3, "topology.message.timeout.secs": 10},
                                builder.build_topology())
        wait_until(lambda: landed(root) >= n, 180, interval=0.3, what=f"{n} rows committed (have {landed(root)})")
        cluster.kill_topology("colpq", wait_secs=0)
    assert {p for p, _ in faults.fired} >= {"sink.execute", "sink.before-latest", "sink.after-commit"}

    rows = read_committed(spark, root).collect()
    assert len(rows) == n
    got = sorted((r.partition, r.offset, r.user, r.amount) for r in rows)
    want = sorted((p, i, user, amount) for p in range(PARTITIONS)
                  for i, (user, amount) in enumerate((u, a) for q, u, a in truth if q == p))
    assert got == want, "exact rows, each exactly once, offsets from the records"
    assert all(r.timestamp is not None for r in rows)


def test_kafka_lands_in_parquet_exactly_once_when_the_sinks_worker_is_killed(broker, spark, tmp_path):
    n = 3000
    topic = broker.topic(PARTITIONS, prefix="colkill")
    truth = produce(broker, topic, n)
    root = str(tmp_path / "events")
    config = KafkaSpoutConfig(broker.bootstrap, [topic], columnar=True, batch_translator="json",
                              batch_schema=BATCH_SCHEMA, max_poll_records=50)
    builder = TransactionalTopologyBuilder(f"colkill-{topic}", "kafka", TransactionalKafkaSpout(config), 2)
    builder.set_committer_bolt("sink", ParquetBatchSink(root, SINK_SCHEMA), 1).global_grouping("kafka")
    with LocalCluster() as cluster:
        cluster.submit_topology("colkill", {"topology.max.spout.pending": 3, "topology.message.timeout.secs": 10,
                                            "topology.workers": 2}, builder.build_topology())
        tid = cluster.get_topology_id("colkill")
        wait_until(lambda: landed(root) >= 300, 120, interval=0.1, what="a few txids committed")
        victim = next(w for w in cluster.workers(tid) if any(ex.component_id == "sink"
                                                              for ex in w.runtime.executors))
        victim.stop()
        assert landed(root) < n, "the worker died before everything landed"
        wait_until(lambda: landed(root) >= n, 180, interval=0.3, what=f"{n} rows committed (have {landed(root)})")
        cluster.kill_topology("colkill", wait_secs=0)
    rows = read_committed(spark, root).collect()
    got = sorted((r.partition, r.offset, r.user) for r in rows)
    want = sorted((p, i, user) for p in range(PARTITIONS)
                  for i, user in enumerate(u for q, u, _ in truth if q == p))
    assert got == want, "exact rows, each exactly once"
