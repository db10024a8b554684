"""A sliding-window sum over event time in one worker: 60 s windows sliding every 10 s.

    python bench/window_sum.py [--secs 8] [--warmup 2] [--ackers 0,1] [--json results.jsonl]
    python bench/window_sum.py --executor 300000   # the window path alone, for instruction counts

EventSpout emits ``[value, ts]`` with event time running 1 ms per tuple (so a window holds 60,000 tuples and
slides every 10,000) -> ``SlidingWindowSum`` (``BaseWindowedBolt`` with ``with_window(Duration.seconds(60),
Duration.seconds(10))``, ``with_timestamp_field("ts")``, a running sum from each window's new and expired
tuples, as storm-starter's SlidingWindowSumBolt) -> a bolt that acks the sums.  One LocalCluster worker (one
thread on one core).  Reported: tuples/s the windowed bolt executes after a warm-up (per wall second and per
CPU second of the process, which tells the rate apart from other load on the machine), windows evaluated, and
sums that differ from the input's (``wrong_sums``, 0).  With one acker, every tuple's tree stays open until its
window expires it (``topology.max.spout.pending`` 100,000, message timeout 120 s).  Beside it, the same sliding
sum as a plain Python loop (a deque of (ts, value), the sum updated per slide), measured in the same run.

``--executor N`` runs only the window path (the window executor's ``execute``, the timestamp field, the
watermark table, the window manager's ``add`` and the evaluations) on N tuples built beforehand, a watermark
tick every 100,000 tuples, no cluster and no other thread: instructions per tuple are
``valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/window_sum.py --executor 400000`` minus
the same with 200,000, divided by 200,000.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from storm_py import BaseWindowedBolt, Bolt, Duration, LocalCluster, Spout, TopologyBuilder

LENGTH_MS = 60_000
SLIDING_MS = 10_000


def window_sum(end: int) -> int:
    """The sum of ``ts % 1000`` over ``end - 60 s < ts <= end`` (ts from 1 on)."""
    return prefix_sum(end) - prefix_sum(max(0, end - LENGTH_MS))


def prefix_sum(n: int) -> int:
    """The sum of ``ts % 1000`` for ts in 1..n."""
    full, rest = divmod(n, 1000)
    return full * (999 * 1000 // 2) + rest * (rest + 1) // 2


class EventSpout(Spout):
    """Emits ``[value, ts]``: ts is the sequence number in ms (event time 1 ms per tuple)."""

    def __init__(self, acked: bool) -> None:
        self.acked = acked

    def open(self, conf, context, collector):
        self.collector = collector
        self.seq = 0

    def next_tuple(self):
        emit = self.collector.emit
        for _ in range(100):
            seq = self.seq = self.seq + 1
            emit([seq % 1000, seq], seq if self.acked else None)

    def declare_output_fields(self, declarer):
        declarer.declare(["value", "ts"])


class SlidingWindowSum(BaseWindowedBolt):
    """A running sum: add each window's new tuples, subtract its expired ones; emit ``[end, sum]``."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.total = 0

    def execute(self, window):
        self.total += sum(t.values[0] for t in window.get_new())
        self.total -= sum(t.values[0] for t in window.get_expired())
        self.collector.emit([window.get_end_timestamp(), self.total])

    def declare_output_fields(self, declarer):
        declarer.declare(["end", "sum"])


class SumCheck(Bolt):
    """Acks the sums and checks each against the sum of the values with end - 60 s < ts <= end."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.windows = 0
        self.wrong = 0

    def execute(self, tup):
        end, total = tup.values
        if total != window_sum(end):
            self.wrong += 1
        self.windows += 1
        self.collector.ack(tup)


def topology(acked: bool) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("events", EventSpout(acked))
    window = SlidingWindowSum().with_window(Duration(LENGTH_MS), Duration(SLIDING_MS)).with_timestamp_field("ts")
    builder.set_bolt("sum", window).shuffle_grouping("events")
    builder.set_bolt("check", SumCheck()).shuffle_grouping("sum")
    return builder.create_topology()


def measure(ackers: int, secs: float, warmup: float) -> dict[str, Any]:
    conf = {"topology.acker.executors": ackers, "topology.workers": 1, "topology.max.spout.pending": 100_000,
            "topology.message.timeout.secs": 120}
    with LocalCluster(supervisors=1, ports_per_supervisor=1) as cluster:
        tid = cluster.submit_topology("window-sum", conf, topology(bool(ackers)))
        (worker,) = cluster.workers(tid)
        window = next(ex for ex in worker.runtime.executors if ex.component_id == "sum")
        check = next(ex for ex in worker.runtime.executors if ex.component_id == "check")
        time.sleep(warmup)
        n0, t0, c0 = window.stats.executed, time.perf_counter(), time.process_time()
        time.sleep(secs)
        n1, t1, c1 = window.stats.executed, time.perf_counter(), time.process_time()
        checker = next(iter(check.bolts.values()))
        windows, wrong = checker.windows, checker.wrong
        cluster.kill_topology("window-sum", 0)
    return {"tuples_per_s": round((n1 - n0) / (t1 - t0)), "tuples_per_cpu_s": round((n1 - n0) / (c1 - c0)),
            "windows": windows, "wrong_sums": wrong}


def plain_loop(secs: float) -> float:
    """The same sliding sum in plain Python: a deque of (ts, value), the running sum updated at each slide
    (tuples per CPU second)."""
    window: collections.deque[tuple[int, int]] = collections.deque()
    total = 0
    seq = 0
    next_end = SLIDING_MS
    sums = []
    t0 = time.process_time()
    while time.process_time() - t0 < secs:
        for _ in range(10_000):
            seq += 1
            window.append((seq, seq % 1000))
            total += seq % 1000
            if seq == next_end:
                while window and window[0][0] <= next_end - LENGTH_MS:
                    total -= window.popleft()[1]
                sums.append(total)
                next_end += SLIDING_MS
    assert sums[-1] == window_sum(next_end - SLIDING_MS)
    return seq / (time.process_time() - t0)


class NullCollector:
    """The window executor's output collector in ``--executor`` mode: counts emits and acks."""

    def __init__(self) -> None:
        self.emitted = 0
        self.acked = 0

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.emitted += 1
        return []

    def ack(self, tup: Any) -> None:
        self.acked += 1

    def report_error(self, exc: BaseException) -> None:
        raise exc


def executor_only(n: int) -> dict[str, Any]:
    """The window path alone on ``n`` tuples (see the module docstring); returns rates per CPU second."""
    from storm_py.api.context import TopologyContext
    from storm_py.api.tuple import Fields, Tuple, make_tick_tuple
    from storm_py.clock import SimulatedClock

    clock = SimulatedClock()
    bolt = SlidingWindowSum().with_window(Duration(LENGTH_MS), Duration(SLIDING_MS)).with_timestamp_field("ts")
    executor = bolt.topology_bolt()
    context = TopologyContext(
        topology_id="t-1", topology_name="t", task_id=1, component_id="sum",
        task_to_component={1: "sum", 2: "events"}, component_tasks={"sum": [1], "events": [2]},
        component_streams={"sum": {}}, worker_tasks=[1, 2], clock=clock, sources={("events", "default"): None},
    )
    collector = NullCollector()
    conf = {"topology.message.timeout.secs": 120, **(executor.get_component_configuration() or {})}
    executor.prepare(conf, context, collector)  # type: ignore[arg-type]
    fields = Fields("value", "ts")
    tuples = [Tuple([seq % 1000, seq], fields, "events", "default", 2, None) for seq in range(1, n + 1)]
    tick = make_tick_tuple(0.1)
    execute = executor.execute
    t0 = time.process_time()
    for i in range(0, n, 100_000):
        for tup in tuples[i:i + 100_000]:
            execute(tup)
        clock.advance(1.0)
        execute(tick)
    secs = time.process_time() - t0
    return {"bench": "window path alone (executor driven by hand)", "tuples": n,
            "tuples_per_cpu_s": round(n / secs), "windows": collector.emitted, "acked": collector.acked,
            "total": bolt.total}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--secs", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--ackers", default="0,1")
    ap.add_argument("--json", type=Path, default=None, help="append result rows to this JSONL file")
    ap.add_argument("--executor", type=int, default=0, help="run only the window path on this many tuples")
    ap.add_argument("--gc-threshold0", type=int, default=100_000,
                    help="CPython's generation-0 collection threshold of the bench process (default: what a worker"
                         " process runs with, worker.gc.threshold0; 700 is CPython's own)")
    args = ap.parse_args()
    gc.set_threshold(args.gc_threshold0, *gc.get_threshold()[1:])
    if args.executor:
        print(json.dumps(executor_only(args.executor)), flush=True)
        return
    from storm_py import build as storm_build

    baseline = plain_loop(min(args.secs, 3.0))
    rows = []
    for ackers in (int(a) for a in args.ackers.split(",")):
        row = {"bench": "sliding window sum 60 s / 10 s, event time", "ackers": ackers,
               **measure(ackers, args.secs, args.warmup), "plain_loop_per_s": round(baseline),
               "python": platform.python_version(), "build": storm_build.describe(),
               "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with args.json.open("a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
