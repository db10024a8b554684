"""Kafka to Parquet, columnar: a columnar transactional Kafka spout and ParquetBatchSink beside a bare consumer.

    python bench/kafka_parquet_columnar.py [--records 400000] [--runs 3] [--poll 10000] [--json results.jsonl]

Starts the dev broker (tansu, memory storage) on a free loopback port and fills a 4-partition topic with
``--records`` JSON records (``{"user", "amount", "kind", "seq"}``, about 70 bytes).  Then, each ``--runs`` times,
alternately (median reported):

* storm_py: LocalCluster, ``TransactionalKafkaSpout(columnar=True, batch_translator="json")`` (2 emitter tasks,
  ``max_poll_records=--poll``, one new transaction every 5 ms, ``topology.max.spout.pending`` 3) ->
  ``ParquetBatchSink`` (1 task, zstd, fsync) taking each partition's batch whole, each txid committed atomically;
* baseline: one confluent-kafka consumer assigned to every partition from offset 0, gathering ``--poll`` records
  per partition (what one txid of the spout holds), building the same record columns, reading the values with
  ``pyarrow.json`` into the same schema, and writing them as one zstd Parquet file with an fsync of the file and
  of its directory (what makes the sink's commit durable) -- the same work with nothing around it: no
  transactions, no manifests, no replay.

Both are timed in steady state: from the moment the first rows landed (the first txid committed, the first file
written) until every record has, over the records landed in between.  Rates are records/s of wall time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: a compiled build there wins

from storm_py import LocalCluster
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.kafka import KafkaBrokerProcess
from storm_py.kafka import KafkaSpoutConfig, TransactionalKafkaSpout
from storm_py.kafka.client import KafkaAdmin
from storm_py.kafka.columnar import RECORD_SCHEMA
from storm_py.spark import ParquetBatchSink
from storm_py.spark.layout import DatasetLayout
from storm_py.transactional import TransactionalTopologyBuilder

PARTITIONS = 4
KINDS = ["view", "click", "purchase"]
BATCH_SCHEMA = pa.schema([("user", pa.string()), ("amount", pa.float64()), ("kind", pa.string()),
                          ("seq", pa.int64()), ("partition", pa.int32()), ("offset", pa.int64()),
                          ("timestamp", pa.timestamp("ms", tz="UTC"))])
SINK_SCHEMA = {"user": "string", "amount": "float64", "kind": "string", "seq": "int64", "partition": "int64",
               "offset": "int64", "timestamp": "timestamp"}


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000})
    for i in range(n):
        value = json.dumps({"user": f"user-{i % 997}", "amount": (i % 10_000) / 100.0, "kind": KINDS[i % 3],
                            "seq": i}).encode()
        while True:
            try:
                p.produce(topic, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


class Progress:
    """Rows landed over time in a dataset, read from the last committed manifest's offset ranges."""

    def __init__(self, root: str, n: int) -> None:
        self.layout = DatasetLayout(root)
        self.n = n
        self.first: tuple[float, int] | None = None

    def landed(self) -> int:
        latest = self.layout.latest() if self.layout.commits.exists() else 0
        if latest == 0:
            return 0
        rows = sum(m.rows for m in self.layout.committed_manifests(latest))
        if self.first is None:
            self.first = (SYSTEM_CLOCK.now(), rows)
        return rows


def through_storm(bootstrap: str, topic: str, n: int, poll: int) -> float:
    root = tempfile.mkdtemp(prefix="colpq-")
    try:
        config = KafkaSpoutConfig(bootstrap, [topic], columnar=True, batch_translator="json",
                                  batch_schema=BATCH_SCHEMA, max_poll_records=poll,
                                  group_id=f"bench-{uuid.uuid4().hex[:6]}")
        builder = TransactionalTopologyBuilder(f"colpq-{uuid.uuid4().hex[:6]}", "kafka",
                                               TransactionalKafkaSpout(config, batch_interval_ms=5), 2)
        builder.set_committer_bolt("sink", ParquetBatchSink(root, SINK_SCHEMA), 1).global_grouping("kafka")
        progress = Progress(root, n)
        with LocalCluster() as cluster:
            cluster.submit_topology("colpq", {"topology.max.spout.pending": 3,
                                              "topology.message.timeout.secs": 60}, builder.build_topology())
            wait_until(lambda: progress.landed() >= n, 600, interval=0.02, what="every record landed")
            end = SYSTEM_CLOCK.now()
            cluster.kill_topology("colpq", wait_secs=0)
        assert progress.first is not None
        start, rows = progress.first
        return (n - rows) / (end - start)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def baseline(bootstrap: str, topic: str, n: int, poll: int) -> float:
    root = Path(tempfile.mkdtemp(prefix="rawpq-"))
    json_schema = pa.schema([f for f in BATCH_SCHEMA if f.name not in ("partition", "offset", "timestamp")])
    parse = pa_json.ParseOptions(explicit_schema=json_schema, unexpected_field_behavior="ignore")
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100, "fetch.queue.backoff.ms": 10})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    dir_fd = os.open(root, os.O_RDONLY)
    done = 0
    first: tuple[float, int] | None = None
    seq = 0
    buffered: list[Any] = []
    try:
        while done < n:
            buffered.extend(m for m in c.consume(poll * PARTITIONS, 0.1) if m.error() is None)
            if len(buffered) < poll * PARTITIONS and done + len(buffered) < n:
                continue
            rows = [(m.partition(), m.offset(), m.value(), m.timestamp()[1], m.headers()) for m in buffered]
            buffered = []
            partitions, offsets, values, stamps, _headers = zip(*rows, strict=True)
            parsed = pa_json.read_json(io.BytesIO(b"\n".join(values)), parse_options=parse)
            table = pa.table({
                "user": parsed.column("user"), "amount": parsed.column("amount"),
                "kind": parsed.column("kind"), "seq": parsed.column("seq"),
                "partition": pa.array(partitions, pa.int64()), "offset": pa.array(offsets, pa.int64()),
                "timestamp": pa.array(stamps, pa.int64()).cast(RECORD_SCHEMA.field("timestamp").type)
                .cast(pa.timestamp("us", tz="UTC")),
            })
            path = root / f"part-{seq:06d}.parquet"
            seq += 1
            with open(path, "wb") as fh:
                pq.write_table(table, fh, compression="zstd")
                fh.flush()
                os.fsync(fh.fileno())
            os.fsync(dir_fd)
            done += len(rows)
            if first is None:
                first = (SYSTEM_CLOCK.now(), done)
        end = SYSTEM_CLOCK.now()
    finally:
        os.close(dir_fd)
        c.close()
        shutil.rmtree(root, ignore_errors=True)
    assert first is not None
    return (n - first[1]) / (end - first[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--poll", type=int, default=10_000, help="records per partition per batch")
    parser.add_argument("--json", help="append the results as one JSON line to this file")
    args = parser.parse_args()
    broker = KafkaBrokerProcess(die_with_parent=True)
    broker.start()
    results: dict[str, list[float]] = {"storm_py": [], "baseline": []}
    try:
        bootstrap = broker.bootstrap_servers
        topic = f"colpq-{uuid.uuid4().hex[:6]}"
        KafkaAdmin(bootstrap).create_topic(topic, PARTITIONS)
        produce(bootstrap, topic, args.records)
        for run in range(args.runs):
            for name, fn in (("baseline", baseline), ("storm_py", through_storm)):
                rate = fn(bootstrap, topic, args.records, args.poll)
                results[name].append(rate)
                print(f"run {run + 1}: {name:9s} {rate:12,.0f} records/s", flush=True)
    finally:
        broker.stop()
    ratios = [s / b for s, b in zip(results["storm_py"], results["baseline"], strict=True)]
    summary = {name: statistics.median(rates) for name, rates in results.items()}
    print(f"median: storm_py {summary['storm_py']:,.0f}, baseline {summary['baseline']:,.0f} records/s, "
          f"ratio {statistics.median(ratios):.2f} (runs: {', '.join(f'{r:.2f}' for r in ratios)})")
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"bench": "kafka_parquet_columnar", "records": args.records, "poll": args.poll,
                                 "results": results, "ratios": ratios}) + "\n")


if __name__ == "__main__":
    main()
