"""The complete latency of a spout that waits for records (sleeps 10 ms in every ``next_tuple``), on a dev cluster.

    python bench/slow_spout.py [--secs 20] [--warmup 5] [--sleep-ms 10] [--workers 2]

Starts ``storm-py dev-cluster`` (as ``bench/cluster_perf.py`` does), submits ``slow_topology`` below -- a spout
that sleeps, then emits one tracked tuple, a relay bolt shuffle-grouped across the workers and a sink -- and
reports the median and 99th percentile of the time from each emit to its ``ack`` call, measured by the spout
itself (the latency its user sees).  A spout's emits used to leave its worker only after 128 ``next_tuple``
calls or at the end of a pass, which put seconds between a slow spout's emit and its tuple's completion.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from storm_py import BasicBolt, Spout, TopologyBuilder  # noqa: E402


class SleepySpout(Spout):
    """Sleeps ``slow.sleep.ms`` in every ``next_tuple``, then emits one tracked tuple; records emit-to-ack times."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.sleep = float(conf.get("slow.sleep.ms", 10)) / 1000.0
        self.out = Path(str(conf["slow.out"])) / f"task-{context.get_this_task_id()}.jsonl"
        self.sent: dict[int, float] = {}
        self.latencies: list[float] = []
        self.n = 0
        self.last_write = time.monotonic()

    def next_tuple(self) -> None:
        time.sleep(self.sleep)  # waiting for a record
        self.n += 1
        self.sent[self.n] = time.monotonic()
        self.collector.emit([self.n], self.n)
        if time.monotonic() - self.last_write > 1.0:
            self._write()

    def ack(self, msg_id: Any) -> None:
        emitted = self.sent.pop(msg_id, None)
        if emitted is not None:
            self.latencies.append((time.monotonic() - emitted) * 1000.0)

    def fail(self, msg_id: Any) -> None:
        self.sent.pop(msg_id, None)

    def _write(self) -> None:
        self.last_write = time.monotonic()
        with self.out.open("a") as f:
            f.write(json.dumps({"t": time.time(), "latencies_ms": self.latencies}) + "\n")
        self.latencies = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Relay(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit(tup.values)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass


def slow_topology(conf: dict[str, Any] | None = None) -> Any:
    """SleepySpout -> Relay (one executor per worker, shuffle) -> Sink (fields grouping)."""
    n = int((conf or {}).get("topology.workers", 2))
    b = TopologyBuilder()
    b.set_spout("slow", SleepySpout(), 1)
    b.set_bolt("relay", Relay(), n).shuffle_grouping("slow")
    b.set_bolt("sink", Sink(), n).fields_grouping("relay", ["n"])
    return b.create_topology()


def read_latencies(out: Path, since: float) -> list[float]:
    lat: list[float] = []
    for path in out.glob("task-*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["t"] >= since:
                lat.extend(row["latencies_ms"])
    return lat


def main() -> None:
    from cluster_perf import STORM, start_cluster, stop_cluster

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--secs", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--sleep-ms", type=float, default=10.0)
    ap.add_argument("-c", action="append", default=[], help="extra topology conf KEY=VALUE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="storm-py-slow-") as tmp:
        out = Path(tmp) / "latencies"
        out.mkdir()
        proc = start_cluster(Path(tmp))
        try:
            conf = Path(tmp) / "storm.yaml"
            extra = [x for kv in args.c for x in ("-c", kv)]
            subprocess.run(
                [*STORM, "submit", str(HERE), "slow_spout:slow_topology", "--name", "slow", "--config", str(conf),
                 "-c", f"topology.workers={args.workers}", "-c", f"slow.sleep.ms={args.sleep_ms}",
                 "-c", f"slow.out={out}", *extra],
                check=True, capture_output=True, text=True,
            )
            time.sleep(args.warmup)
            since = time.time()
            time.sleep(args.secs)
            lat = read_latencies(out, since)
            subprocess.run([*STORM, "kill", "slow", "-w", "0", "--config", str(conf)], check=True,
                           capture_output=True)
        finally:
            stop_cluster(proc)
    lat.sort()
    row = {
        "sleep_ms": args.sleep_ms, "workers": args.workers, "acked": len(lat),
        "acked_per_s": round(len(lat) / args.secs, 1),
        "latency_median_ms": round(statistics.median(lat), 2) if lat else None,
        "latency_p99_ms": round(lat[max(0, int(len(lat) * 0.99) - 1)], 2) if lat else None,
        "storm_py": os.path.dirname(__import__("storm_py").__file__),
    }
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
