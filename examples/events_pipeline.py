"""An events pipeline: partitioned events -> parse -> enrich -> Parquet (exactly once) -> a Spark daily report.

The transactional topology reads JSON events from a Kafka topic (or, for the cluster tests, a deterministic
partitioned source emitting the same ``[topic, partition, offset, key, value]`` records), parses and enriches
them (day, epoch millis, USD amount, region), and commits each batch through three
:class:`~storm_py.spark.ParquetBatchSink`\\ s:

* ``events`` — the enriched events (``EVENT_SCHEMA``; the source offsets go into each txid's manifest);
  events that do not fit the schema (broken JSON, a missing user, an amount that is not a number) go to the
  sink's ``errors`` stream with the reason;
* ``errors`` — those rejected events with their reasons (``ERROR_SCHEMA``), exactly once as well;
* ``rollups`` — per batch, per day and region: events and revenue, from the ``aggregate`` batch bolt.

Then the Spark job :func:`examples.daily_report.report` computes the daily report from the committed events,
and :func:`main` checks it against the same report computed in Python from the source.

Run it all locally and print the report (a development Kafka broker from ``storm-py dev-kafka`` gets the events,
a LocalCluster runs the topology on :class:`~storm_py.kafka.TransactionalKafkaSpout`, then a local Spark runs
the report)::

    python -m examples.events_pipeline [ROOT] [--no-kafka]

Conf (``build(conf)``, for ``storm-py submit``/``local``): ``events.root`` (required: the datasets go to
``<root>/events``, ``<root>/errors``, ``<root>/rollups``), ``events.seed``, ``events.partitions``,
``events.take`` (events per partition per batch), ``events.batches``, ``events.interval`` (seconds between new
transactions), ``events.fault.rate`` and ``events.fault.log`` (seeded failures in both phases, for tests).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any

from storm_py import BasicBolt, LocalCluster
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.clock import wait_until
from storm_py.errors import FailedException
from storm_py.spark import ParquetBatchSink
from storm_py.spark.layout import DatasetLayout
from storm_py.spark.schema import Schema
from storm_py.transactional import (
    BaseTransactionalBolt,
    SequencePartitionedSpout,
    TransactionalTopologyBuilder,
)
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector

EVENT_SCHEMA = {
    "partition": "int64", "offset": "int64", "day": "string", "ts_ms": "int64", "user": "string", "kind": "string",
    "amount": "float64", "currency": "string", "amount_usd": "float64", "region": "string",
}
ERROR_SCHEMA = {"partition": "int64?", "offset": "int64?", "values": "string", "reason": "string"}
ROLLUP_SCHEMA = {"day": "string", "region": "string", "events": "int64", "revenue_usd": "float64"}

USD_RATES = {"USD": 1.0, "EUR": 1.1, "GBP": 1.25}
REGIONS = {"US": "americas", "BR": "americas", "DE": "emea", "FR": "emea", "GB": "emea", "JP": "apac", "IN": "apac"}
KINDS = ("view", "view", "click", "purchase")
TOPIC = "events"
RECORD_FIELDS = ["topic", "partition", "offset", "key", "value"]
DEFAULTS: dict[str, Any] = {
    "events.seed": 7, "events.partitions": 2, "events.take": 25, "events.batches": 12, "events.interval": 0.0,
    "events.fault.rate": 0.0, "events.fault.log": None,
}


def setting(conf: dict[str, Any] | None, key: str) -> Any:
    value = (conf or {}).get(key)
    return DEFAULTS[key] if value is None else value


class EventSource:
    """``values(partition, offset)``: a Kafka-like record holding a seeded JSON event (about 4 % are bad)."""

    def __init__(self, seed: int = 7, days: int = 3) -> None:
        self.seed = seed
        self.days = days

    def payload(self, partition: int, offset: int) -> str:
        digest = hashlib.blake2b(f"{self.seed}/{partition}/{offset}".encode(), digest_size=8).digest()
        rnd = random.Random(int.from_bytes(digest, "big"))
        start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        ts = start + dt.timedelta(seconds=rnd.randrange(self.days * 86400))
        event: dict[str, Any] = {
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ"), "user": f"u{rnd.randrange(40)}", "kind": rnd.choice(KINDS),
            "amount": round(rnd.uniform(1, 200), 2), "currency": rnd.choice(sorted(USD_RATES)),
            "country": rnd.choice(sorted(REGIONS)),
        }
        flaw = rnd.random()
        if flaw < 0.015:
            return "{" + json.dumps(event)[1:30]  # cut short: not JSON
        if flaw < 0.03:
            del event["user"]
        elif flaw < 0.04:
            event["amount"] = "n/a"
        return json.dumps(event)

    def __call__(self, partition: int, offset: int) -> list[Any]:
        """A record as the Kafka spouts emit it: ``[topic, partition, offset, key, value]``."""
        return [TOPIC, partition, offset, None, self.payload(partition, offset).encode()]


def enrich(partition: int, offset: int, payload: str) -> list[Any]:
    """The event's row in ``EVENT_SCHEMA`` order; what an event lacks is ``None`` (and the sink rejects it).

    Rows keep the schema's width so that they travel between workers as tuples of the declared fields.
    """
    missing = [partition, offset] + [None] * (len(EVENT_SCHEMA) - 2)
    try:
        event = json.loads(payload)
    except ValueError:
        return missing
    ts = str(event.get("ts", ""))
    try:
        when = dt.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return missing
    amount, currency = event.get("amount"), event.get("currency")
    rate = USD_RATES.get(str(currency))
    usd = round(amount * rate, 2) if isinstance(amount, int | float) and rate is not None else amount
    return [partition, offset, ts[:10], int(when.timestamp() * 1000), event.get("user"), event.get("kind"),
            amount, currency, usd, REGIONS.get(str(event.get("country")), "other")]


class SeededFaults:
    """Fails a seeded ``rate`` of the attempts at each point (drawn per point, txid and attempt id), and, for each
    ``(point, txid)`` of ``force``, the first attempt at that point of that txid or a later one (a batch may bring
    no tuple to a point: its next one fails instead).

    Usable in any worker process: the draw depends only on its inputs.  Fired failures are appended to
    ``log_path`` (one line each: point, txid, pid) when given, and kept in ``fired`` in-process.
    """

    def __init__(self, seed: int, rate: float, log_path: str | None = None,
                 force: Iterable[tuple[str, int]] = ()) -> None:
        self.seed = seed
        self.rate = rate
        self.log_path = log_path
        #: point -> the txid from which its first attempt this process sees fails (the lowest one given)
        self.force: dict[str, int] = {}
        for point, txid in force:
            self.force[point] = min(txid, self.force.get(point, txid))
        self.fired: list[tuple[str, int]] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> SeededFaults:
        return self

    def __call__(self, point: str, attempt: TransactionAttempt) -> None:
        start = self.force.get(point)
        forced = start is not None and attempt.transaction_id >= start
        if forced:
            del self.force[point]
        draw = random.Random(f"{self.seed}/{point}/{attempt.transaction_id}/{attempt.attempt_id}").random()
        if not forced and draw >= self.rate:
            return
        self.fired.append((point, attempt.transaction_id))
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(f"{point} {attempt.transaction_id} {os.getpid()}\n")
        raise FailedException(f"injected failure at {point} of {attempt!r}")


def read_fault_log(path: str) -> list[tuple[str, int]]:
    """The ``(point, txid)`` of every failure :class:`SeededFaults` logged to ``path``."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [(p, int(t)) for p, t, _ in (line.split() for line in fh if line.strip())]


FaultHook = Callable[[str, TransactionAttempt], None]


class Enrich(BasicBolt):
    """``[tx, topic, partition, offset, key, value]`` -> ``[tx, *row]`` (parse and enrich in one step)."""

    def __init__(self, fault_hook: FaultHook | None = None) -> None:
        self.fault_hook = fault_hook

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        attempt, _topic, partition, offset, _key, value = tup.values[:6]
        if self.fault_hook is not None:
            self.fault_hook("enrich.execute", attempt)
        payload = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        collector.emit([attempt, *enrich(int(partition), int(offset), payload)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["tx", *EVENT_SCHEMA])


class Aggregate(BaseTransactionalBolt):
    """Per batch: events and purchase revenue (USD) per day and region, over the events that fit the schema."""

    def __init__(self) -> None:
        self.schema = Schema.from_dict(EVENT_SCHEMA)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector,
                id: Any) -> None:
        self.collector = collector
        self.attempt = id
        self.sums: dict[tuple[str, str], list[Any]] = {}

    def execute(self, tup: Tuple) -> None:
        row = tup.values[1:]
        if self.schema.row_problem(row) is not None:
            return
        fields = dict(zip(EVENT_SCHEMA, row, strict=True))
        acc = self.sums.setdefault((fields["day"], fields["region"]), [0, 0.0])
        acc[0] += 1
        if fields["kind"] == "purchase":
            acc[1] += fields["amount_usd"]

    def finish_batch(self) -> None:
        for (day, region), (events, revenue) in sorted(self.sums.items()):
            self.collector.emit([self.attempt, day, region, events, round(revenue, 2)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["tx", "day", "region", "events", "revenue_usd"])


class FormatError(BasicBolt):
    """``[attempt, values, reason]`` from a sink's errors stream -> a row of ``ERROR_SCHEMA``."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        attempt, values, reason = tup.values[0], list(tup.values[1]), str(tup.values[2])
        p = values[0] if values and isinstance(values[0], int) else None
        o = values[1] if len(values) > 1 and isinstance(values[1], int) else None
        collector.emit([attempt, p, o, json.dumps(values, default=str), reason])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["tx", *ERROR_SCHEMA])


def spout_from_conf(conf: dict[str, Any] | None) -> SequencePartitionedSpout:
    take = int(setting(conf, "events.take"))
    return SequencePartitionedSpout(
        EventSource(int(setting(conf, "events.seed"))), RECORD_FIELDS, take,
        partitions=int(setting(conf, "events.partitions")), length=take * int(setting(conf, "events.batches")),
        batch_interval_secs=float(setting(conf, "events.interval")))


def build_topology(root: str, spout: Any, fault_hook: FaultHook | None = None, tx_id: str = "events",
                   sink_parallelism: int = 1, attached_job: str | None = None) -> StormTopology:
    """spout -> enrich -> {events sink -> format -> errors sink, aggregate -> rollups sink}.

    ``attached_job`` (``MODULE:FUNCTION``) runs on the events dataset every 3 committed txids or 2 seconds,
    into ``<root>/attached``.
    """
    builder = TransactionalTopologyBuilder(tx_id, "spout", spout)
    builder.set_bolt("enrich", Enrich(fault_hook), 2).shuffle_grouping("spout")
    job: dict[str, Any] = {}
    if attached_job is not None:
        job = {"job": attached_job, "job_output": os.path.join(root, "attached"), "job_every_txids": 3,
               "job_every_secs": 2.0}
    builder.set_committer_bolt(
        "events", ParquetBatchSink(os.path.join(root, "events"), EVENT_SCHEMA, ["day"],
                                   source_fields=("partition", "offset"), fault_hook=fault_hook, **job),
        sink_parallelism).shuffle_grouping("enrich")
    builder.set_bolt("format", FormatError()).shuffle_grouping("events", "errors")
    builder.set_committer_bolt("errors", ParquetBatchSink(os.path.join(root, "errors"), ERROR_SCHEMA)) \
        .global_grouping("format")
    builder.set_bolt("aggregate", Aggregate()).global_grouping("enrich")
    builder.set_committer_bolt("rollups", ParquetBatchSink(os.path.join(root, "rollups"), ROLLUP_SCHEMA, ["day"])) \
        .global_grouping("aggregate")
    return builder.build_topology()


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """For ``storm-py submit``/``local``: the topology the conf describes (``events.root`` required)."""
    root = (conf or {}).get("events.root")
    if not root:
        raise ValueError("events_pipeline needs -c events.root=DIR (where the datasets go)")
    rate = float(setting(conf, "events.fault.rate"))
    faults = SeededFaults(int(setting(conf, "events.seed")), rate, setting(conf, "events.fault.log")) if rate else None
    return build_topology(str(root), spout_from_conf(conf), faults)


def source_payloads(conf: dict[str, Any] | None) -> list[tuple[int, int, str]]:
    """``(partition, offset, payload)`` of every event the configured source holds."""
    take = int(setting(conf, "events.take"))
    source = EventSource(int(setting(conf, "events.seed")))
    return [(p, o, source.payload(p, o)) for p in range(int(setting(conf, "events.partitions")))
            for o in range(take * int(setting(conf, "events.batches")))]


def source_rows(conf: dict[str, Any] | None) -> list[list[Any]]:
    """Every enriched row the source holds, good or bad, in (partition, offset) order."""
    return [enrich(p, o, payload) for p, o, payload in source_payloads(conf)]


def split(rows: list[list[Any]]) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """``(good events as dicts, bad rows)`` by the sink's schema."""
    schema = Schema.from_dict(EVENT_SCHEMA)
    good, bad = [], []
    for row in rows:
        (bad.append(row) if schema.row_problem(row) else good.append(dict(zip(EVENT_SCHEMA, row, strict=True))))
    return good, bad


def truth(conf: dict[str, Any] | None) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """``(good events as dicts, bad rows)`` of the configured source."""
    return split(source_rows(conf))


def kafka_spout(bootstrap: str, topic: str = TOPIC) -> Any:
    """The transactional Kafka spout over ``topic`` (records ``[topic, partition, offset, key, value]``)."""
    from storm_py.kafka import KafkaSpoutConfig, TransactionalKafkaSpout

    return TransactionalKafkaSpout(KafkaSpoutConfig(bootstrap, [topic], max_poll_records=100, poll_timeout_ms=200))


def produce(bootstrap: str, topic: str, payloads: list[str]) -> None:
    """Write ``payloads`` to ``topic`` and wait until the broker has every one."""
    from storm_py.kafka.client import KafkaProducerClient

    failed: list[str] = []
    producer = KafkaProducerClient(bootstrap)
    for payload in payloads:
        producer.produce(topic, None, payload.encode(),
                         lambda err, *_: failed.append(err) if err is not None else None)
    if producer.flush(30.0) or failed:
        raise RuntimeError(f"could not produce every event to {topic}: {failed[:3]}")


def landed(root: str) -> int:
    """Events accounted for in the committed ``events`` dataset: rows plus rejected rows."""
    layout = DatasetLayout(os.path.join(root, "events"))
    return sum(m.rows + m.errors for m in layout.committed_manifests())


def complete(root: str, total: int) -> bool:
    """Every one of ``total`` events landed, and the errors and rollups datasets caught up with the events."""
    events = DatasetLayout(os.path.join(root, "events")).committed_manifests()
    if sum(m.rows + m.errors for m in events) < total:
        return False
    errors = DatasetLayout(os.path.join(root, "errors")).committed_manifests()
    rollups = DatasetLayout(os.path.join(root, "rollups")).committed_manifests()
    return (sum(m.rows for m in errors) == sum(m.errors for m in events)
            and len(rollups) >= len(events))


class DevKafka:
    """``storm-py dev-kafka`` in a child process: a development broker with the events topic."""

    def __init__(self, topic: str = TOPIC, partitions: int = 2) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "storm_py", "dev-kafka", "--topic", f"{topic}:{partitions}"],
            stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("kafka: "):
            self.stop()
            raise RuntimeError(f"storm-py dev-kafka did not start: {line!r}")
        self.bootstrap = line.split(" ", 1)[1].strip()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)


def run_pipeline(root: str, conf: dict[str, Any], kafka: bool = True) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Land the configured events under ``root`` through the topology; the source's ``(good, bad)`` rows."""
    broker = DevKafka(partitions=int(setting(conf, "events.partitions"))) if kafka else None
    try:
        if broker is not None:
            payloads = [payload for _, _, payload in source_payloads(conf)]
            produce(broker.bootstrap, TOPIC, payloads)
            spout = kafka_spout(broker.bootstrap)
            good, bad = split([enrich(0, i, payload) for i, payload in enumerate(payloads)])
        else:
            spout = spout_from_conf(conf)
            good, bad = truth(conf)
        total = len(good) + len(bad)
        with LocalCluster() as cluster:
            cluster.submit_topology("events", {"topology.max.spout.pending": 3}, build_topology(root, spout))
            wait_until(lambda: complete(root, total), 180, interval=0.1, what="every event committed")
    finally:
        if broker is not None:
            broker.stop()
    return good, bad


def main(argv: list[str] | None = None) -> None:
    """Kafka topic -> topology (LocalCluster) -> Parquet -> Spark daily report; print it and check it."""
    from examples.daily_report import expected_report, report, report_rows
    from storm_py.spark import run_step, spark_session
    from storm_py.spark.jobs import read_output

    parser = argparse.ArgumentParser(description="Run the events pipeline locally and print the daily report.")
    parser.add_argument("root", nargs="?", help="where the datasets go (default: a new temporary directory)")
    parser.add_argument("--no-kafka", action="store_true", help="read the events from an in-memory source")
    args = parser.parse_args(argv)
    root = args.root or tempfile.mkdtemp(prefix="events-pipeline-")
    conf: dict[str, Any] = {"events.root": root}
    good, bad = run_pipeline(root, conf, kafka=not args.no_kafka)
    print(f"{len(good) + len(bad)} events committed under {root}/events ({len(bad)} rejected, see {root}/errors)")
    spark = spark_session()
    run_step(spark, report, os.path.join(root, "events"), os.path.join(root, "report"))
    got = report_rows(read_output(spark, os.path.join(root, "report")))
    for row in got:
        print("  ".join(f"{k}={v}" for k, v in row.items()))
    same = got == expected_report(good)
    print("the report equals the same report computed in Python over the input events:", same)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
