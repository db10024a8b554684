"""KafkaSpout -> NullBolt with acking on a dev cluster (two workers), beside the raw consumer, in one run.

    python bench/kafka_cluster.py [--records 4000000] [--runs 2] [--secs 8] [--warmup 6] [--per-tree 1]
                                  [--grouping shuffle|local_or_shuffle] [--json results.jsonl]

Starts the dev broker (tansu, memory storage) on loopback and fills a 4-partition topic with ``--records``
records of 100-byte values; starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors); then, each
``--runs`` times: the raw confluent-kafka consumer reads the whole topic (as in ``bench/kafka_perf.py``), and
``cluster_topologies:kafka_null`` (one KafkaSpout and one NullBolt executor per worker, one acker per worker,
``topology.max.spout.pending`` 2000) reads it from offset 0 under a new group. The topology's rate is the spouts'
acked count (tuples, also in trees of ``--per-tree`` records) per second between two heartbeats, after
``--warmup`` seconds, over ``--secs`` seconds; the acked count is also sampled every second, so a spout that stops
and starts shows. Enough records must be produced for the window: each partition takes over 100,000 records (the
spout's ``max_uncommitted_offsets``) so the window covers the spout at its uncommitted limit, as any long-running
spout is; a run whose records were all acked before the window ended reads low and is marked ``"ran_out": true``
(with a line on stderr).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build there wins
sys.path.append(str(HERE))  # the other bench scripts (``python -P`` leaves the script's directory out)

import cluster_perf as cp  # noqa: E402  (bench/ is the script's own directory)
import kafka_perf as kp  # noqa: E402

from storm_py.dev.kafka import KafkaBrokerProcess  # noqa: E402
from storm_py.kafka.client import KafkaAdmin  # noqa: E402


def run_topology(conf_path: Path, bootstrap: str, topic: str, secs: float, warmup: float, pending: int,
                 session: int, name: str, per_tree: int = 1, grouping: str = "shuffle") -> dict[str, Any]:
    """``cluster_topologies:kafka_null`` on two workers, one acker each, measured as ``bench/cluster_perf.py``
    measures its topologies, plus the acked count every second."""
    samples: list[int] = []
    row = cp.run_case(conf_path, "cluster_topologies:kafka_null", 2, 1, secs, warmup, pending, session, name=name,
                      extra_conf=(f"bench.kafka.bootstrap={bootstrap}", f"bench.kafka.topic={topic}",
                                  f"bench.kafka.group=bench-{uuid.uuid4().hex[:8]}",
                                  f"bench.kafka.per_tree={per_tree}", f"bench.kafka.grouping={grouping}"),
                      samples=samples)
    return {**row, "acked_each_second": samples}


def main() -> None:
    options: list[tuple[str, Any, Any, str]] = [
        ("--records", int, 4_000_000, "records produced to the topic (enough for the warm-up and the window)"),
        ("--runs", int, 2, "raw consumer and topology runs"),
        ("--secs", float, 8.0, "the measured window (seconds)"),
        ("--warmup", float, 6.0, "seconds before the window"),
        ("--pending", int, 2000, "topology.max.spout.pending"),
        ("--per-tree", int, 1, "the spout's records_per_tree"),
        ("--grouping", str, "shuffle", "the bolt's grouping: shuffle or local_or_shuffle"),
        ("--json", Path, None, "append each run as a JSON line to this file"),
    ]
    args = cp.parse_options(__doc__, options)
    args.workers, args.ackers = 2, 1
    print(json.dumps({"settings": cp.settings(args)}), flush=True)
    broker = KafkaBrokerProcess(die_with_parent=True)
    broker.start()
    bs = broker.bootstrap_servers
    rows: list[dict[str, Any]] = []
    try:
        topic = f"bench-{uuid.uuid4().hex[:6]}"
        KafkaAdmin(bs).create_topic(topic, kp.PARTITIONS)
        print(json.dumps({"raw_produce_per_s": round(kp.timed(lambda: kp.raw_produce_confluent(bs, topic,
                                                                                              args.records)))}))
        with tempfile.TemporaryDirectory(prefix="storm-py-bench-") as tmp:
            proc = cp.start_cluster(Path(tmp))
            try:
                for run in range(args.runs):
                    raw = kp.timed(lambda: kp.raw_consume_confluent(bs, topic, args.records))
                    row = {"run": run + 1, "raw_consume_per_s": round(raw),
                           **run_topology(Path(tmp) / "storm.yaml", bs, topic, args.secs, args.warmup, args.pending,
                                          os.getsid(proc.pid), f"kafka-null-{run}", args.per_tree,
                                          args.grouping)}
                    row["spout_over_raw"] = round(row["acked_per_s"] / raw, 3)
                    acked = row["acked_each_second"]
                    row["ran_out"] = bool(acked) and acked[-1] >= args.records
                    if row["ran_out"]:  # the window's idle tail counts: the rate reads low
                        print(f"kafka_cluster: every one of the {args.records:,} records was acked before the "
                              "window ended, so acked_per_s reads low; produce more (--records)", file=sys.stderr)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            finally:
                cp.stop_cluster(proc)
    finally:
        broker.stop()
    print(json.dumps({"median_acked_per_s": statistics.median(r["acked_per_s"] for r in rows),
                      "median_raw_consume_per_s": statistics.median(r["raw_consume_per_s"] for r in rows)}))
    if args.json:
        cp.append_rows(args.json, rows)


if __name__ == "__main__":
    main()
