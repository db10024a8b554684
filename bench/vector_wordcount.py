"""Columnar word count with acking on two worker processes, beside the per-tuple word count in the same run.

    python bench/vector_wordcount.py [--secs 15] [--warmup 8] [--batch 1000] [--pending 8] [--rounds 1]

Starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors) and submits, in turn, with one acker per
worker and two workers: the columnar word count (a ``VectorSpout`` of batches of ``--batch`` storm-perf
sentences, one tuple tree each; a vectorized split with ``pyarrow.compute`` kept in the worker by
local-or-shuffle; a fields grouping by word across the workers, split per row by the vectorized hash; a
vectorized running count emitting ``word, count`` batches), and storm-perf's per-tuple word count
(``bench/cluster_topologies.py``).  Each is measured as ``bench/cluster_perf.py`` measures: the spouts' acked
count read at heartbeats after ``--warmup``, over ``--secs``, with the workers' CPU seconds per sentence.

Where the time goes: the same split and count run in this process on one batch, without the runtime, give the
Arrow compute's CPU per sentence; the rest of the workers' CPU per sentence is the framework's share (emits,
the fields split, Arrow IPC between the workers, acking, the worker loop).
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
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build put there comes first

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
from peers.common import SENTENCES, WORDS_PER_SENTENCE  # noqa: E402

from storm_py import TopologyBuilder, VectorBolt, VectorSpout  # noqa: E402

STORM = [sys.executable, "-m", "storm_py"]
SENTENCE_SCHEMA = pa.schema([("sentence", pa.string())])


def sentence_batch(size: int) -> pa.RecordBatch:
    """``size`` storm-perf sentences, in their order."""
    return pa.record_batch([pa.array([SENTENCES[i % len(SENTENCES)] for i in range(size)])], schema=SENTENCE_SCHEMA)


class BatchSpout(VectorSpout):
    """One batch of ``bench.vector.batch`` sentences per call, each a tracked tuple tree (the same batch object
    every time: an emitted batch is never modified)."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.batch = sentence_batch(int(conf.get("bench.vector.batch", 1000)))
        self.seq = 0

    def next_batch(self) -> None:
        self.seq += 1
        self.collector.emit(self.batch, msg_id=self.seq)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SENTENCE_SCHEMA)


def split_words(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The words of every sentence, in order, as one column ``word``."""
    return pa.record_batch({"word": pc.list_flatten(pc.utf8_split_whitespace(batch.column(0)))})


def count_words(batch: pa.RecordBatch, counts: dict[str, int]) -> pa.RecordBatch:
    """Add the batch's words to the running ``counts``; the new totals of its words as ``word, count``."""
    encoded = pc.value_counts(batch.column(0))
    words = encoded.field("values").to_pylist()
    for w, n in zip(words, encoded.field("counts").to_pylist(), strict=True):
        counts[w] = counts.get(w, 0) + n
    return pa.record_batch({"word": words, "count": [counts[w] for w in words]})


class VectorSplit(VectorBolt):
    def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        collector.emit(split_words(batch))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"], columnar=True)


class VectorCount(VectorBolt):
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        collector.emit(count_words(batch, self.counts))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word", "count"], columnar=True)


def vector_word_count(conf: dict[str, Any] | None = None) -> Any:
    """Sentence batches -> split (in-worker) -> running counts (fields grouping across workers)."""
    n = int((conf or {}).get("topology.workers", 2))
    b = TopologyBuilder()
    b.set_spout("spout", BatchSpout(), n)
    b.set_bolt("split", VectorSplit(), n).local_or_shuffle_grouping("spout")
    b.set_bolt("count", VectorCount(), n).fields_grouping("split", ["word"])
    return b.create_topology()


def compute_us_per_sentence(size: int, rounds: int = 200) -> float:
    """CPU µs per sentence of the split and the count alone (Arrow compute, no runtime), in this process."""
    batch = sentence_batch(size)
    counts: dict[str, int] = {}
    for _ in range(10):
        count_words(split_words(batch), counts)
    start = time.process_time()
    for _ in range(rounds):
        count_words(split_words(batch), counts)
    return (time.process_time() - start) / (rounds * size) * 1e6


def measure(conf_path: Path, entry: str, name: str, args: argparse.Namespace, session: int, scale: int,
            extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Submit ``entry`` (``MODULE:FUNCTION`` of this folder), measure sentences/s and worker CPU, kill it."""
    from cluster_perf import at_heartbeat, cluster_cpu, machine_cpu

    from storm_py.client import NimbusClient
    from storm_py.config import read_storm_config

    subprocess.run(
        [*STORM, "submit", str(HERE), entry, "--name", name, "--config", str(conf_path),
         "-c", f"topology.workers={args.workers}", "-c", f"topology.acker.executors={args.workers}",
         *(arg for kv in extra for arg in ("-c", kv))],
        check=True, capture_output=True, text=True,
    )
    client = NimbusClient(read_storm_config(conf_path))
    time.sleep(args.warmup)
    (a0, *_), t0 = at_heartbeat(client, name)
    m0, c0 = machine_cpu(), cluster_cpu(session)
    time.sleep(args.secs)
    (a1, lat, p99, *_), t1 = at_heartbeat(client, name)
    m1, c1 = machine_cpu(), cluster_cpu(session)
    subprocess.run([*STORM, "kill", name, "-w", "0", "--config", str(conf_path)], check=True, capture_output=True)
    sentences = (a1 - a0) * scale
    cores = m1[1] - m0[1]
    return {
        "topology": name, "sentences_per_s": round(sentences / (t1 - t0)),
        "trees_per_s": round((a1 - a0) / (t1 - t0)), "latency_mean_ms": round(lat, 2), "latency_p99_ms": round(p99, 2),
        "worker_cpu_us_per_sentence": round((c1[1] - c0[1]) / sentences * 1e6, 3) if sentences else None,
        "machine_busy_pct": round(100 * (m1[0] - m0[0]) / cores, 1) if cores else None,
        "others_cpu_pct": round(100 * max(0.0, (m1[0] - m0[0]) - (c1[0] - c0[0])) / cores, 1) if cores else None,
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--secs", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--batch", type=int, default=1000, help="sentences per batch")
    ap.add_argument("--pending", type=int, default=8, help="max spout pending of the columnar spouts (batches)")
    ap.add_argument("--tuple-pending", type=int, default=2000, help="max spout pending of the per-tuple spouts")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    from cluster_perf import start_cluster, stop_cluster

    os.chdir(tempfile.gettempdir())  # `python -m storm_py` must not import the tree ahead of a compiled build
    compute = compute_us_per_sentence(args.batch)
    print(json.dumps({"arrow_compute_us_per_sentence": round(compute, 3), "batch": args.batch,
                      "words_per_sentence": WORDS_PER_SENTENCE}), flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="storm-py-bench-") as tmp:
        proc = start_cluster(Path(tmp) / "cluster")
        session = os.getsid(proc.pid)
        conf = Path(tmp) / "cluster" / "storm.yaml"
        try:
            for r in range(args.rounds):
                row = measure(conf, "vector_wordcount:vector_word_count", f"vector-wc-{r}", args, session, args.batch,
                              (f"bench.vector.batch={args.batch}", f"topology.max.spout.pending={args.pending}"))
                cpu = row["worker_cpu_us_per_sentence"]
                if cpu:
                    row["arrow_compute_share_pct"] = round(100 * compute / cpu, 1)
                    row["framework_share_pct"] = round(100 - 100 * compute / cpu, 1)
                rows.append(row)
                print(json.dumps(row), flush=True)
                row = measure(conf, "cluster_topologies:word_count", f"tuple-wc-{r}", args, session, 1,
                              (f"topology.max.spout.pending={args.tuple_pending}",))
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            stop_cluster(proc)
    vec = [r["sentences_per_s"] for r in rows if r["topology"].startswith("vector")]
    tup = [r["sentences_per_s"] for r in rows if r["topology"].startswith("tuple")]
    print(json.dumps({"columnar_median": statistics.median(vec), "per_tuple_median": statistics.median(tup),
                      "speedup": round(statistics.median(vec) / statistics.median(tup), 1)}), flush=True)


if __name__ == "__main__":
    main()
