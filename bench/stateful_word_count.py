"""The cost of managed state: storm-perf's word count with acking, plain beside stateful (the running count in a
``KeyValueState``, Storm's checkpoints every second, in-memory provider; acks held until the checkpoint commits).

    python bench/stateful_word_count.py [--secs 8] [--warmup 3] [--rounds 2] [--pending 50000] [--json out.jsonl]

Each topology runs alone in a LocalCluster with one worker and one acker; the rounds alternate plain and stateful.
Reported: acked sentences per wall second and per CPU second of the process (``time.process_time``, which tells
the rate apart from other load on a shared machine) of each, and the stateful one's share of the plain one's.
The bench process runs with a worker's collector threshold (``--gc-threshold0``, ``worker.gc.threshold0``).
Under at_least_once a sentence's tree completes only when the checkpoint after it commits, so
``topology.max.spout.pending`` must hold about a checkpoint interval of sentences (``--pending``), or the spout
waits for every commit.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from storm_perf import SentenceSpout, Split, word_count  # the plain word count

from storm_py import BaseStatefulBolt, LocalCluster, TopologyBuilder


class StatefulCount(BaseStatefulBolt):
    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.counts = state

    def execute(self, tup):
        w = tup.values[0]
        c = self.counts.get(w, 0) + 1
        self.counts.put(w, c)
        self.collector.emit([w, c], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


def stateful_word_count():
    b = TopologyBuilder()
    b.set_spout("spout", SentenceSpout())
    b.set_bolt("split", Split()).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount()).fields_grouping("split", ["word"])
    return b.create_topology()


def measure(build, secs: float, warmup: float, pending: int) -> tuple[float, float]:
    conf = {"topology.acker.executors": 1, "topology.max.spout.pending": pending, "topology.workers": 1,
            "topology.state.checkpoint.interval.ms": 1000}
    with LocalCluster(supervisors=1, ports_per_supervisor=1) as cluster:
        tid = cluster.submit_topology("perf", conf, build())
        (worker,) = cluster.workers(tid)
        spout = next(ex for ex in worker.runtime.executors if ex.is_spout and ex.component_id == "spout")
        time.sleep(warmup)
        a0, t0, c0 = spout.stats.acked, time.perf_counter(), time.process_time()
        time.sleep(secs)
        a1, t1, c1 = spout.stats.acked, time.perf_counter(), time.process_time()
        cluster.kill_topology("perf", 0)
    return (a1 - a0) / (t1 - t0), (a1 - a0) / (c1 - c0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secs", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pending", type=int, default=50000)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--gc-threshold0", type=int, default=100_000,
                        help="CPython's generation-0 threshold of the bench process (default: worker.gc.threshold0)")
    args = parser.parse_args()
    gc.set_threshold(args.gc_threshold0, *gc.get_threshold()[1:])
    rows: list[dict[str, Any]] = []
    for r in range(args.rounds):
        plain, plain_cpu = measure(word_count, args.secs, args.warmup, args.pending)
        stateful, stateful_cpu = measure(stateful_word_count, args.secs, args.warmup, args.pending)
        row = {"round": r + 1, "plain_per_s": round(plain), "stateful_per_s": round(stateful),
               "share": round(stateful / plain, 3) if plain else None,
               "plain_per_cpu_s": round(plain_cpu), "stateful_per_cpu_s": round(stateful_cpu),
               "share_cpu": round(stateful_cpu / plain_cpu, 3) if plain_cpu else None, "pending": args.pending,
               "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with args.json.open("a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
