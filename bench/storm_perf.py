"""storm-perf's topologies in-process, with 0 and 1 ackers, beside plain Python loops doing the same work.

    python bench/storm_perf.py [--secs 8] [--warmup 2] [--json results.jsonl]

Topologies (Storm's examples/storm-perf): ConstSpout -> NullBolt, ConstSpout -> IdBolt -> NullBolt, and a word
count (sentence spout -> split -> fields-grouped running count).  Each runs alone in a LocalCluster with one
worker (one core); the spout executor's acked count and complete latencies are read after a warm-up.
Reported: acked tuples/s (sentences/s for word count), complete latency mean and p99 (ms).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from peers.common import SENTENCES  # the same sentences as the word-count peers

from storm_py import BasicBolt, Bolt, LocalCluster, Spout, TopologyBuilder


class ConstSpout(Spout):
    """Emits the same value again and again, each with a message id (Storm's ConstSpout)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def open(self, conf, context, collector):
        self.collector = collector
        self.seq = 0

    def next_tuple(self):
        self.seq += 1
        self.collector.emit([self.value], self.seq)

    def declare_output_fields(self, declarer):
        declarer.declare(["str"])


class IdBolt(Bolt):
    """Re-emits its input anchored and acks it (Storm's IdBolt)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit(tup.values, tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["str"])


class NullBolt(Bolt):
    """Acks and drops (Storm's DevNullBolt)."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.ack(tup)


class SentenceSpout(Spout):
    def open(self, conf, context, collector):
        self.collector = collector
        self.seq = 0

    def next_tuple(self):
        self.seq += 1
        self.collector.emit([SENTENCES[self.seq % 5]], self.seq)

    def declare_output_fields(self, declarer):
        declarer.declare(["sentence"])


class Split(BasicBolt):
    def execute(self, tup, collector):
        for w in tup.values[0].split():
            collector.emit([w])

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class Count(BasicBolt):
    def prepare(self, conf, context):
        self.counts = {}

    def execute(self, tup, collector):
        w = tup.values[0]
        c = self.counts.get(w, 0) + 1
        self.counts[w] = c
        collector.emit([w, c])

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


def const_null():
    b = TopologyBuilder()
    b.set_spout("spout", ConstSpout("some data"))
    b.set_bolt("null", NullBolt()).shuffle_grouping("spout")
    return b.create_topology()


def const_id_null():
    b = TopologyBuilder()
    b.set_spout("spout", ConstSpout("some data"))
    b.set_bolt("id", IdBolt()).shuffle_grouping("spout")
    b.set_bolt("null", NullBolt()).shuffle_grouping("id")
    return b.create_topology()


def word_count():
    b = TopologyBuilder()
    b.set_spout("spout", SentenceSpout())
    b.set_bolt("split", Split()).shuffle_grouping("spout")
    b.set_bolt("count", Count()).fields_grouping("split", ["word"])
    return b.create_topology()


def measure(build, ackers: int, secs: float, warmup: float, gc_threshold0: int | None = None) -> dict[str, Any]:
    conf = {"topology.acker.executors": ackers, "topology.max.spout.pending": 2000, "topology.workers": 1}
    daemon_conf = {} if gc_threshold0 is None else {"worker.gc.threshold0": gc_threshold0}
    with LocalCluster(supervisors=1, ports_per_supervisor=1, daemon_conf=daemon_conf) as cluster:
        tid = cluster.submit_topology("perf", conf, build())
        (worker,) = cluster.workers(tid)
        spout = next(ex for ex in worker.runtime.executors if ex.is_spout)
        time.sleep(warmup)
        a0, t0 = spout.stats.acked, time.perf_counter()
        n0 = spout.stats.lat_count
        time.sleep(secs)
        a1, t1 = spout.stats.acked, time.perf_counter()
        lat = list(spout.stats.lat_samples) if spout.stats.lat_count > n0 else []
        cluster.kill_topology("perf", 0)
    row: dict[str, Any] = {"acked_per_s": round((a1 - a0) / (t1 - t0))}
    if ackers and lat:
        lat.sort()
        row["latency_mean_ms"] = round(statistics.fmean(lat), 3)
        row["latency_p99_ms"] = round(lat[int(len(lat) * 0.99) - 1], 3)
    return row


#: items a plain loop handles between two looks at the clock
PLAIN_BATCH = 10000


def _per_second(secs: float, run_batch: Callable[[], None]) -> float:
    """Items per second of ``run_batch`` (which handles PLAIN_BATCH items), run for ``secs``."""
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < secs:
        run_batch()
        n += PLAIN_BATCH
    return n / (time.perf_counter() - t0)


def plain_const_null(secs: float) -> float:
    value = ["some data"]
    sink: list[list[str]] = []

    def run_batch() -> None:
        for _ in range(PLAIN_BATCH):
            v = list(value)
            sink.append(v)
            sink.pop()

    return _per_second(secs, run_batch)


def plain_const_id_null(secs: float) -> float:
    value = ["some data"]
    sink: list[list[str]] = []

    def run_batch() -> None:
        for _ in range(PLAIN_BATCH):
            v = list(value)
            v2 = list(v)
            sink.append(v2)
            sink.pop()

    return _per_second(secs, run_batch)


def plain_word_count(secs: float) -> float:
    counts: dict[str, int] = {}
    out: list[tuple[str, int]] = []

    def run_batch() -> None:
        for i in range(PLAIN_BATCH):
            for w in SENTENCES[i % 5].split():
                c = counts.get(w, 0) + 1
                counts[w] = c
                out.append((w, c))
            out.clear()

    return _per_second(secs, run_batch)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--secs", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--json", type=Path, default=None, help="append result rows to this JSONL file")
    ap.add_argument("--gc-threshold0", type=int, default=None,
                    help="give the LocalCluster worker.gc.threshold0 (default: leave the collector at CPython's)")
    ap.add_argument("--cases", default="const_null,const_id_null,word_count")
    args = ap.parse_args()
    cases = [
        ("ConstSpout -> NullBolt", const_null, plain_const_null),
        ("ConstSpout -> IdBolt -> NullBolt", const_id_null, plain_const_id_null),
        ("word count (8-word sentences, running counts)", word_count, plain_word_count),
    ]
    rows = []
    chosen = args.cases.split(",")
    from storm_py import build as storm_build

    for name, build, plain in cases:
        if build.__name__ not in chosen:
            continue
        baseline = plain(min(args.secs, 3.0))
        for ackers in (0, 1):
            row = {"topology": name, "ackers": ackers,
                   **measure(build, ackers, args.secs, args.warmup, args.gc_threshold0),
                   "plain_loop_per_s": round(baseline), "python": platform.python_version(),
                   "gc_threshold0": args.gc_threshold0 or gc.get_threshold()[0], "build": storm_build.describe(),
                   "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        with args.json.open("a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
