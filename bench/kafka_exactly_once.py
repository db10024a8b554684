"""Kafka -> stateful count under ``topology.state.guarantee: exactly_once``, beside the raw consumer, same run.

    python bench/kafka_exactly_once.py [--records 200000] [--runs 2] [--json results.jsonl]

Starts the dev broker (tansu, memory storage) on a free loopback port, fills a 4-partition topic with
``--records`` records of 100-byte values, then, each ``--runs`` times:

* raw consume: one confluent-kafka consumer assigned to every partition from offset 0 until all are read
  (``bench/kafka_perf.py``'s baseline: the spout's consumer settings, each record's topic, partition, offset, key
  and value read);
* exactly_once: a LocalCluster with one worker, KafkaSpout (1 task, EARLIEST) -> a ``BaseStatefulBolt`` counting
  records per partition in its ``KeyValueState`` (fields grouping on the partition), with
  ``topology.state.guarantee: exactly_once`` and a checkpoint every second (in-memory provider): records carry no
  tuple tree, the spout's offsets are saved with each checkpoint, barriers are aligned at the bolt.

Each rate is records per wall second and per CPU second of the process (``time.process_time``: every thread,
librdkafka's included, in both rows), for the topology counted from 5 % to 95 % of the records by the bolt
(start-up and the tail left out).  The acceptance ratio is the exactly_once rate over the raw consumer's, per CPU
second and per wall second.  ``--only raw|exactly_once`` produces the records and reads them once that way; run under
``valgrind --tool=callgrind --callgrind-out-file=/dev/null`` with two ``--records`` counts, the difference of the
instructions collected over the difference of the counts is the cost per record (producing it included).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from kafka_perf import PARTITIONS, raw_consume_confluent, raw_produce_confluent

from storm_py import BaseStatefulBolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.dev.kafka import KafkaBrokerProcess
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig
from storm_py.kafka.client import KafkaAdmin

COUNTED = {"n": 0}


class PartitionCount(BaseStatefulBolt):
    """Counts records per partition in its managed state (one task: the module counter has one writer)."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        partition = tup.values[1]
        self.counts.put(partition, self.counts.get(partition, 0) + 1)
        self.collector.ack(tup)
        COUNTED["n"] += 1


def cpu_rate(fn: Any) -> tuple[float, float]:
    """Run ``fn`` (returns records read): records per wall second and per CPU second of the process."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = fn()
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def exactly_once(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    """KafkaSpout -> PartitionCount under exactly_once: records per wall and per CPU second, 5 % to 95 %."""
    COUNTED["n"] = 0
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(KafkaSpoutConfig(bootstrap, [topic], group_id=f"eo-{uuid.uuid4().hex}",
                                                      first_poll_offset_strategy="EARLIEST")))
    tb.set_bolt("count", PartitionCount()).fields_grouping("kafka", ["partition"])
    conf = {"topology.workers": 1, "topology.state.guarantee": "exactly_once",
            "topology.state.checkpoint.interval.ms": 1000}
    lo, hi = n // 20, n - n // 20
    with LocalCluster(supervisors=1, ports_per_supervisor=1) as cluster:
        cluster.submit_topology("kafka-eo", conf, tb.create_topology())
        wait_until(lambda: COUNTED["n"] >= lo, 600, interval=0.005, what="5 % counted")
        t0, c0, at0 = time.perf_counter(), time.process_time(), COUNTED["n"]
        wait_until(lambda: COUNTED["n"] >= hi, 600, interval=0.005, what="95 % counted")
        t1, c1, at1 = time.perf_counter(), time.process_time(), COUNTED["n"]
        wait_until(lambda: COUNTED["n"] >= n, 600, interval=0.02, what="every record counted")
        cluster.kill_topology("kafka-eo", wait_secs=0)
    if COUNTED["n"] != n:
        raise SystemExit(f"exactly_once counted {COUNTED['n']} records of {n}")
    return (at1 - at0) / (t1 - t0), (at1 - at0) / (c1 - c0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--gc-threshold0", type=int, default=100_000,
                        help="CPython's generation-0 threshold for the whole bench (default: worker.gc.threshold0)")
    parser.add_argument("--only", choices=["raw", "exactly_once"], default=None,
                        help="only produce the records, then read them once this way (for valgrind --tool=callgrind)")
    args = parser.parse_args()
    n = args.records
    gc.set_threshold(args.gc_threshold0, *gc.get_threshold()[1:])
    broker = KafkaBrokerProcess(die_with_parent=True)
    broker.start()
    bs = broker.bootstrap_servers
    rows: dict[str, list[tuple[float, float]]] = {}
    try:
        topic = f"eo-{uuid.uuid4().hex[:6]}"
        KafkaAdmin(bs).create_topic(topic, PARTITIONS)
        raw_produce_confluent(bs, topic, n)
        for run in range(1 if args.only else args.runs):
            if args.only in (None, "raw"):
                rows.setdefault("raw", []).append(cpu_rate(lambda: raw_consume_confluent(bs, topic, n)))
            if args.only in (None, "exactly_once"):
                rows.setdefault("exactly_once", []).append(exactly_once(bs, topic, n))
            print(json.dumps({"run": run + 1, **{k: [round(x) for x in v[-1]] for k, v in rows.items()}}),
                  flush=True)
    finally:
        broker.stop()
    median = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
    out: dict[str, Any] = {"bench": "kafka exactly_once -> stateful count vs raw consumer", "records": n,
                           **{f"{k}_per_s": round(w) for k, (w, _) in median.items()},
                           **{f"{k}_per_cpu_s": round(c) for k, (_, c) in median.items()}}
    if "raw" in median and "exactly_once" in median:
        out["share_wall"] = round(median["exactly_once"][0] / median["raw"][0], 3)
        out["share_cpu"] = round(median["exactly_once"][1] / median["raw"][1], 3)
    out.update({"python": platform.python_version(), "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]})
    print(json.dumps(out), flush=True)
    if args.json:
        with args.json.open("a", encoding="utf-8") as f:
            f.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
