"""Load-aware shuffle against round robin: one slow bolt task of four (5 ms per tuple), in-process.

    python bench/load_aware.py [--secs 10] [--warmup 3] [--rounds 2]

Runs :func:`slow_task_topology` in a ``LocalCluster`` (one worker) with load-aware messaging on and off
(``topology.disable.loadaware.messaging``), alternately in the same minutes, and prints per run the tuples per
second the bolt executed and what each of its four tasks received over the window after the warm-up.
"""

from __future__ import annotations

import argparse
import collections
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder

COUNTS: collections.Counter[int] = collections.Counter()
LOCK = threading.Lock()


class Numbers(Spout):
    """Emits 0, 1, 2 ... untracked, as fast as the worker takes them."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Work(Bolt):
    """Counts what each task receives; the task of index 0 sleeps ``slow.sleep.ms`` per tuple."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.task = context.get_this_task_id()
        self.sleep = float(conf.get("slow.sleep.ms", 5)) / 1000.0 if context.get_this_task_index() == 0 else 0.0
        self.pending = 0

    def execute(self, tup: Any) -> None:
        if self.sleep:
            time.sleep(self.sleep)
        self.pending += 1
        if self.pending >= 50 or self.sleep:
            with LOCK:
                COUNTS[self.task] += self.pending
            self.pending = 0

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def slow_task_topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), 1)
    builder.set_bolt("work", Work(), 4).shuffle_grouping("numbers")
    return builder.create_topology()


def conf(load_aware: bool) -> dict[str, Any]:
    return {"topology.workers": 1, "topology.acker.executors": 0, "topology.executor.receive.buffer.size": 1000,
            "slow.sleep.ms": 5, "topology.disable.loadaware.messaging": not load_aware}


def snapshot() -> dict[int, int]:
    with LOCK:
        return dict(COUNTS)


def run(cluster: LocalCluster, load_aware: bool, secs: float, warmup: float) -> dict[str, Any]:
    name = "load-aware" if load_aware else "round-robin"
    cluster.submit_topology(name, conf(load_aware), slow_task_topology())
    time.sleep(warmup)
    before, t0 = snapshot(), time.monotonic()
    time.sleep(secs)
    after, t1 = snapshot(), time.monotonic()
    cluster.kill_topology(name, 0)
    got = {t: after.get(t, 0) - before.get(t, 0) for t in after}
    return {"mode": name, "tuples_per_sec": round(sum(got.values()) / (t1 - t0)),
            "per_task": dict(sorted(got.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secs", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with LocalCluster() as cluster:
        rows = []
        for _ in range(args.rounds):
            for load_aware in (False, True):
                COUNTS.clear()
                row = run(cluster, load_aware, args.secs, args.warmup)
                rows.append(row)
                print(row, flush=True)
    rr = [r["tuples_per_sec"] for r in rows if r["mode"] == "round-robin"]
    la = [r["tuples_per_sec"] for r in rows if r["mode"] == "load-aware"]
    print(f"round robin {sum(rr) / len(rr):.0f}/s, load-aware {sum(la) / len(la):.0f}/s: "
          f"{sum(la) / max(1, sum(rr)):.2f}x")


if __name__ == "__main__":
    main()
