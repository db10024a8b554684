"""The events pipeline in a LocalCluster with seeded failures in both phases: the Spark report equals Python's."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from examples import events_pipeline as pipeline
from examples.daily_report import expected_report, purchases, report, report_rows
from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.spark import committed_txids, read_committed, read_committed_table, read_output, run_step
from storm_py.spark.jobs import JobOutput
from tests.kafka.conftest import kafka_broker  # noqa: F401 (the Kafka tests' broker fixture)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CONF = {"events.seed": 11, "events.partitions": 2, "events.take": 15, "events.batches": 8}


def test_events_pipeline_with_failures_in_both_phases_lands_exactly_once(tmp_path, spark):
    root = str(tmp_path)
    conf = {**CONF, "events.root": root}
    forced = [("enrich.execute", 2), ("sink.execute", 3), ("sink.before-publish", 4), ("sink.before-latest", 5),
              ("sink.after-commit", 6)]  # besides the seeded ones, so that every point fails at least once
    faults = pipeline.SeededFaults(seed=3, rate=0.1, force=forced)
    topology = pipeline.build_topology(root, pipeline.spout_from_conf(conf), faults, sink_parallelism=2,
                                       attached_job="examples.daily_report:purchases")
    total = len(pipeline.source_rows(conf))
    with LocalCluster() as cluster:
        cluster.submit_topology("events", {"topology.max.spout.pending": 3, "topology.workers": 2,
                                           "topology.message.timeout.secs": 5}, topology)
        wait_until(lambda: pipeline.complete(root, total), 180, interval=0.1, what="every event committed")
        # the job attached to the sink runs in the background as txids commit, and catches up with all of them
        attached = JobOutput(f"{root}/attached")
        wait_until(lambda: attached.done_through() == committed_txids(f"{root}/events")[-1], 120, interval=0.2,
                   what="the attached job to catch up")
    assert not [t for t in threading.enumerate() if t.name.startswith("spark-job")], "stopped with the cluster"

    assert {p for p, _ in faults.fired} >= {p for p, _ in forced}, "failures in both phases, at every point"

    good, bad = pipeline.truth(conf)
    events = f"{root}/events"
    df = read_committed(spark, events)
    assert df.count() == len(good)
    keys = [(r.partition, r.offset) for r in df.select("partition", "offset").collect()]
    assert len(set(keys)) == len(keys), "an event landed twice"

    run_step(spark, report, events, f"{root}/report")
    assert report_rows(read_output(spark, f"{root}/report")) == expected_report(good)

    errors = read_committed_table(f"{root}/errors").to_pylist()
    assert sorted((e["partition"], e["offset"]) for e in errors) == sorted((r[0], r[1]) for r in bad)
    assert all(e["reason"] for e in errors)
    assert {json.dumps(r, default=str) for r in bad} == {e["values"] for e in errors}
    reasons = " / ".join(e["reason"] for e in errors)
    assert "expected float64, got str" in reasons and "null in a non-null string field" in reasons

    manifests = [json.loads(Path(f"{events}/_commits/{t:020d}.json").read_text()) for t in committed_txids(events)]
    covered = {int(p): [lo, hi] for m in manifests for p, (lo, hi) in m["source"].items()}
    assert covered, "the manifests carry the source offsets"
    offsets = sorted(o for m in manifests for p, (lo, hi) in m["source"].items() for o in range(lo, hi + 1)
                     if p == "0")
    assert offsets == list(range(CONF["events.take"] * CONF["events.batches"])), "each offset in one txid"

    rollups = read_committed(spark, f"{root}/rollups")
    assert sum(r.events for r in rollups.collect()) == len(good)

    run_step(spark, purchases, events, f"{root}/purchases")
    assert read_output(spark, f"{root}/purchases").count() == sum(1 for g in good if g["kind"] == "purchase")

    assert sorted(map(tuple, read_output(spark, f"{root}/attached").collect())) == \
        sorted(map(tuple, read_output(spark, f"{root}/purchases").collect()))


def test_kafka_topic_to_spark_report(tmp_path, spark, request):
    """The example's path: events produced to a Kafka topic, read by TransactionalKafkaSpout, reported by Spark."""
    broker = request.getfixturevalue("kafka_broker")
    root = str(tmp_path)
    conf = {**CONF, "events.root": root, "events.batches": 4}
    topic = broker.topic(2, prefix="events")
    payloads = [payload for _, _, payload in pipeline.source_payloads(conf)]
    pipeline.produce(broker.bootstrap, topic, payloads)
    good, bad = pipeline.split([pipeline.enrich(0, i, p) for i, p in enumerate(payloads)])
    with LocalCluster() as cluster:
        cluster.submit_topology("events-kafka", {"topology.max.spout.pending": 3},
                                pipeline.build_topology(root, pipeline.kafka_spout(broker.bootstrap, topic)))
        wait_until(lambda: pipeline.complete(root, len(payloads)), 180, interval=0.1, what="every event committed")
    run_step(spark, report, f"{root}/events", f"{root}/report")
    assert report_rows(read_output(spark, f"{root}/report")) == expected_report(good)
    assert read_committed_table(f"{root}/errors").num_rows == len(bad) > 0
    manifests = [json.loads(Path(f"{root}/events/_commits/{t:020d}.json").read_text())
                 for t in committed_txids(f"{root}/events")]
    ranges = [r for m in manifests for r in m["source"].values()]
    assert sum(hi - lo + 1 for lo, hi in ranges) == len(payloads), "the manifests' Kafka offsets cover every record"
