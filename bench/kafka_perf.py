"""Kafka in and out: KafkaSpout -> NullBolt with acking and KafkaBolt's produce rate, beside the raw clients.

    python bench/kafka_perf.py [--records 200000] [--runs 3] [--json results.jsonl]

Starts the dev broker (tansu, memory storage) on a free loopback port, fills a 4-partition topic with
``--records`` records of 100-byte values, then measures, each ``--runs`` times (median reported):

* raw consume: one confluent-kafka consumer assigned to every partition from offset 0, until all are read
  (reading each record's topic, partition, offset, key and value, as any consumer does);
  and the same with kafka-python (fewer records: it is ~5x slower);
* raw produce: confluent-kafka ``produce`` of the same records (explicit partitions), until flushed; and
  kafka-python;
* ConstSpout -> NullBolt with acking (no Kafka): the same topology with a spout emitting a constant, i.e. the
  in-process runtime's own ceiling for a tracked spout on this machine at that moment;
* spout: LocalCluster, KafkaSpout (1 task, AT_LEAST_ONCE) -> NullBolt acking (1 and 2 spout tasks), and 1 task
  with ``records_per_tree=500`` (up to 500 records of a partition per tuple tree);
* KafkaBolt: LocalCluster, a spout emitting ``--records`` tracked tuples -> KafkaBolt (each ack means the
  broker confirmed the record).

``--only raw|spout|trees|const|const_trees`` produces the records and reads them once that way (the raw consumer,
the Kafka spout topology, the same with trees of 500, the ConstSpout topology, or the ConstSpout emitting trees of
500); ``--only produce`` only produces them.  For instructions per tuple of the runtime alone:
``valgrind --tool=callgrind python -P bench/kafka_perf.py --records 100000 --only const_trees`` minus the same
with 50,000 records, divided by 50,000 (the ConstSpout rows run in one thread with nothing to wait for; under
valgrind, which runs one thread at a time, the Kafka rows' counts depend on how librdkafka's fetch thread is
scheduled, so they are not a measure).

``--record-path build|emit|ack`` runs only the spout's own per-record work, without broker or runtime, for
instruction counts: ``valgrind --tool=callgrind python bench/kafka_perf.py --records 20000 --record-path ack``
minus the same with ``emit`` and ``build``, divided by the records.

``--gc-threshold0`` (default 100,000, what worker processes run with: ``worker.gc.threshold0``) applies to the
whole bench process, the raw clients included; CPython's own default is 700.

Topology rates are steady-state: acks counted between 5 % and 95 % of the records (start-up left out).

Rates are records/s of wall time, on the shared machine of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.dev.kafka import KafkaBrokerProcess
from storm_py.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig
from storm_py.kafka.client import FETCH_QUEUE_BACKOFF_MS, KafkaAdmin

PARTITIONS = 4
#: records_per_tree of the trees row (the spout's max_poll_records: one tree per poll of a partition at most)
TREE = 500
TREES_ROW = f"KafkaSpout(1 task, {TREE} per tree) -> NullBolt, acked"
VALUE = b"x" * 100
ACKED = {"n": 0}


def timed(fn: Callable[[], int]) -> float:
    start = SYSTEM_CLOCK.now()
    n = fn()
    return n / (SYSTEM_CLOCK.now() - start)


def raw_produce_confluent(bootstrap: str, topic: str, n: int) -> int:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000,
                  "queue.buffering.max.messages": 1_000_000})
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=VALUE, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(120) == 0
    return n


def raw_produce_kafka_python(bootstrap: str, topic: str, n: int) -> int:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=256 * 1024)
    for i in range(n):
        p.send(topic, value=VALUE, partition=i % PARTITIONS)
    p.flush(120)
    p.close()
    return n


def raw_consume_confluent(bootstrap: str, topic: str, n: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"raw-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,  # the spout's consumer settings
                  "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = 0
    out: list[Any] = []
    while got < n:
        for m in c.consume(500, 0.2):
            if m.error() is None:  # what any consumer reads of a record
                out.append((m.topic(), m.partition(), m.offset(), m.key(), m.value()))
                got += 1
        out.clear()
    c.close()
    return got


def raw_consume_kafka_python(bootstrap: str, topic: str, n: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    got = 0
    while got < n:
        for records in c.poll(timeout_ms=200, max_records=500).values():
            got += len(records)
    c.close()
    return got


class NullBolt(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)
        ACKED["n"] += 1  # one task: no other writer


class CountingSpout(Spout):
    """Emits ``n`` tracked tuples ``[key, value]`` and counts acks."""

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.i = 0

    def next_tuple(self) -> None:
        for _ in range(100):
            if self.i >= self.n:
                return
            self.collector.emit([None, VALUE], self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        ACKED["n"] += 1  # one task: no other writer

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])


def steady_rate(n: int) -> float:
    """Acks per second between 5 % and 95 % of ``n`` (topology start-up and the tail left out)."""
    lo, hi = n // 20, n - n // 20
    wait_until(lambda: ACKED["n"] >= lo, 600, interval=0.005, what="5 % acked")
    start, at_start = SYSTEM_CLOCK.now(), ACKED["n"]
    wait_until(lambda: ACKED["n"] >= hi, 600, interval=0.005, what="95 % acked")
    rate = (ACKED["n"] - at_start) / (SYSTEM_CLOCK.now() - start)
    wait_until(lambda: ACKED["n"] >= n, 600, interval=0.02, what="every record acked")
    return rate


def steady_rate_of(name: str, tb: TopologyBuilder, n: int) -> float:
    """Run ``tb`` as ``name`` in a LocalCluster (10,000 pending per spout task) until ``n`` acks: its steady rate."""
    ACKED["n"] = 0
    with LocalCluster() as cluster:
        cluster.submit_topology(name, {"topology.max.spout.pending": 10000}, tb.create_topology())
        rate = steady_rate(n)
        cluster.kill_topology(name, wait_secs=0)
    return rate


def through_spout(bootstrap: str, topic: str, n: int, tasks: int, per_tree: int = 1) -> float:
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(bootstrap, [topic], group_id=f"b-{uuid.uuid4().hex}",
                                                      records_per_tree=per_tree)), tasks)
    tb.set_bolt("null", NullBolt(), 1).shuffle_grouping("kafka")
    return steady_rate_of("kafka-spout", tb, n)


class ConstSpout(Spout):
    """Emits ``[VALUE]`` with a message id per tuple, ``n`` in all (the runtime's ceiling for a tracked spout);
    with ``per_tree`` above 1, that many tuples per tree (``emit_batch``)."""

    def __init__(self, n: int, per_tree: int = 1) -> None:
        self.n = n
        self.per_tree = per_tree

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.i = 0

    def next_tuple(self) -> None:
        if self.per_tree > 1:
            k = min(self.per_tree, self.n - self.i)
            if k > 0:
                self.collector.emit_batch([[VALUE] for _ in range(k)], self.i)
                self.i += k
            return
        for _ in range(500):
            if self.i >= self.n:
                return
            self.collector.emit([VALUE], self.i)
            self.i += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["value"])


def const_spout(n: int, per_tree: int = 1) -> float:
    tb = TopologyBuilder()
    tb.set_spout("const", ConstSpout(n, per_tree))
    tb.set_bolt("null", NullBolt(), 1).shuffle_grouping("const")
    return steady_rate_of("const", tb, n)


def through_bolt(bootstrap: str, topic: str, n: int) -> float:
    tb = TopologyBuilder()
    tb.set_spout("gen", CountingSpout(n))
    tb.set_bolt("kafka", KafkaBolt(bootstrap, topic, key_field=None, batch_num_messages=10000)).shuffle_grouping("gen")
    return steady_rate_of("kafka-bolt", tb, n)


def record_path(n: int, phase: str) -> None:
    """The spout's per-record work without broker or runtime (for instruction counts): build ``n`` fetched
    records, then (``phase`` emit/ack) emit them through a no-op collector, then ack them."""
    from collections import deque

    from storm_py.kafka.offsets import PartitionOffsets, RetryPolicy
    from storm_py.kafka.spout_metrics import KafkaSpoutStats

    spout = KafkaSpout(KafkaSpoutConfig("127.0.0.1:1", ["t"]))
    ids: list[Any] = []

    class Collector:
        def emit(self, values: Any, msg_id: Any, stream: str) -> list[int]:
            ids.append(msg_id)
            return []

    spout.collector = Collector()  # type: ignore[assignment]
    spout.tracked, spout.stats = True, KafkaSpoutStats()
    spout.managers = {("t", 0): PartitionOffsets(0, 10**9, RetryPolicy())}
    records = [("t", 0, i, None, VALUE, 1) for i in range(n)]
    if phase in ("emit", "ack"):
        spout.waiting = deque(records)  # type: ignore[arg-type]
        spout._emit_waiting(0.0, n)
    if phase == "ack":
        for mid in ids:
            spout.ack(mid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--gc-threshold0", type=int, default=100_000,
                        help="CPython's generation-0 threshold for the whole bench, raw clients included (default: "
                             "the worker processes' worker.gc.threshold0; 700 is CPython's own)")
    parser.add_argument("--record-path", choices=["build", "emit", "ack"], default=None,
                        help="only run the spout's per-record work (for valgrind --tool=callgrind); no broker")
    parser.add_argument("--only", choices=["produce", "raw", "spout", "trees", "const", "const_trees"], default=None,
                        help="only produce the records, then read them once this way (for valgrind --tool=callgrind)")
    args = parser.parse_args()
    n = args.records
    if args.record_path:
        record_path(n, args.record_path)
        return
    gc.set_threshold(args.gc_threshold0, *gc.get_threshold()[1:])
    try:
        import kafka  # noqa: F401  (the second client the comparison needs)
    except ImportError:
        raise SystemExit("bench/kafka_perf.py compares with kafka-python, which is not installed: "
                         ".venv/bin/python -m pip install -e '.[bench]'") from None
    small = max(1000, n // 5)
    broker = KafkaBrokerProcess(die_with_parent=True)
    broker.start()
    bs = broker.bootstrap_servers
    admin = KafkaAdmin(bs)
    results: dict[str, list[float]] = {}

    def record(name: str, rate: float) -> None:
        results.setdefault(name, []).append(rate)
        print(f"  {name:36s} {rate:12,.0f} records/s", flush=True)

    try:
        source = f"bench-{uuid.uuid4().hex[:6]}"
        admin.create_topic(source, PARTITIONS)
        if args.only:
            if not args.only.startswith("const"):
                raw_produce_confluent(bs, source, n)
            if args.only == "produce":
                return
            rate = (timed(lambda: raw_consume_confluent(bs, source, n)) if args.only == "raw" else
                    const_spout(n) if args.only == "const" else
                    const_spout(n, TREE) if args.only == "const_trees" else
                    through_spout(bs, source, n, 1, per_tree=TREE if args.only == "trees" else 1))
            print(f"{args.only}: {rate:,.0f} records/s")
            return
        record("raw produce (confluent-kafka)", timed(lambda: raw_produce_confluent(bs, source, n)))
        for run in range(args.runs):
            print(f"run {run + 1}/{args.runs}", flush=True)
            record("raw consume (confluent-kafka)", timed(lambda: raw_consume_confluent(bs, source, n)))
            record("raw consume (kafka-python)", timed(lambda: raw_consume_kafka_python(bs, source, small)))
            record("KafkaSpout(1 task) -> NullBolt, acked", through_spout(bs, source, n, 1))
            record("KafkaSpout(2 tasks) -> NullBolt, acked", through_spout(bs, source, n, 2))
            record(TREES_ROW, through_spout(bs, source, n, 1, per_tree=TREE))
            record("ConstSpout -> NullBolt, acked (no Kafka)", const_spout(n))
            sink = f"sink-{uuid.uuid4().hex[:6]}"
            admin.create_topic(sink, PARTITIONS)
            record("raw produce (confluent-kafka)", timed(lambda s=sink: raw_produce_confluent(bs, s, n)))  # type: ignore[misc]
            record("raw produce (kafka-python)", timed(lambda s=sink: raw_produce_kafka_python(bs, s, small)))  # type: ignore[misc]
            record("spout -> KafkaBolt, acked on delivery", through_bolt(bs, sink, n))
    finally:
        broker.stop()
    print("\nmedian of runs (records/s):")
    summary = {name: statistics.median(rates) for name, rates in results.items()}
    for name, rate in summary.items():
        print(f"  {name:36s} {rate:12,.0f}")
    spout, raw = summary["KafkaSpout(1 task) -> NullBolt, acked"], summary["raw consume (confluent-kafka)"]
    const = summary["ConstSpout -> NullBolt, acked (no Kafka)"]
    print(f"  spout (1 task) / raw consume: {spout / raw:.0%}; / ConstSpout with acking: {spout / const:.0%}")
    print(f"  spout (1 task, trees of {TREE}) / raw consume: {summary[TREES_ROW] / raw:.0%}")
    if args.json:
        with args.json.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"bench": "kafka_perf", "records": n, "python": platform.python_version(),
                                "gc_threshold0": args.gc_threshold0,
                                "results": results, "median": summary}) + "\n")


if __name__ == "__main__":
    main()
