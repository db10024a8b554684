"""The Stream API word count against the same count written as spouts and bolts: words/s, one worker.

    python bench/streams_word_count.py [--secs 5] [--warmup 2] [--rounds 3] [--pending 1000] [--parallelism 2]

Both count the words of the same cycling sentences (10 words each, 1,000 distinct words), each sentence emitted
with a message id (acked when its words are counted), at most ``--pending`` in flight:

* ``streams``: ``examples/streams_word_count.py``'s pipeline, ``new_stream(spout).repartition(p)
  .flat_map(split).map_to_pair((word, 1)).count_by_key()``: the planner's two bolts (split and pair, shuffle-
  grouped; the count per word, fields-grouped on the word), ``p`` tasks each.
* ``bolts``: storm-starter's shape by hand: ``SplitSentence`` (``p`` tasks, shuffle) -> a counting bolt (``p``
  tasks, fields grouping on the word) that keeps the running count per word and, like ``count_by_key`` with no
  consumer, emits nothing.

Each run is a fresh LocalCluster (one worker, real time); after a warm-up the spout's acks are read over
``--secs`` seconds; ``words_per_cpu_s`` divides by the process's CPU seconds and ``words_per_worker_cpu_s`` by
the CPU seconds of the busiest thread (the worker's loop): on a loaded machine wall-clock rates measure the
machine, these the code.  The variants alternate for ``--rounds``; one JSON line per run, then the ratios of the
medians (streams / bolts).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins
sys.path.append(str(Path(__file__).resolve().parent))  # the other bench scripts (``python -P`` leaves them out)

from thread_cpu import busiest_thread_cpu

from examples.streams_word_count import word_count
from examples.word_count import SplitSentence
from storm_py import BasicBolt, LocalCluster, Spout, TopologyBuilder
from storm_py.api.topology import StormTopology
from storm_py.build import compiled_modules
from storm_py.clock import wait_until
from storm_py.streams import StreamBuilder
from storm_py.testing.registry import Shared

WORDS_PER_SENTENCE = 10
VOCABULARY = [f"w{i:03d}" for i in range(1000)]
SENTENCES = [" ".join(VOCABULARY[(s * 7 + k * 101) % 1000] for k in range(WORDS_PER_SENTENCE)) for s in range(1000)]


class Acks(Shared):
    """The spout's acks, read by the bench (one object in every copy of the spout)."""

    def __init__(self) -> None:
        self.n = 0


class SentenceSpout(Spout):
    """Cycles through the sentences, each with a message id."""

    def __init__(self, acks: Acks) -> None:
        self.acks = acks

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.seq = 0

    def next_tuple(self) -> None:
        self.seq += 1
        self.collector.emit([SENTENCES[self.seq % len(SENTENCES)]], self.seq)

    def ack(self, msg_id: Any) -> None:
        self.acks.n += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class CountWords(BasicBolt):
    """The running count per word (emits nothing)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1


def streams(acks: Acks, parallelism: int) -> StormTopology:
    builder = StreamBuilder()
    word_count(builder, SentenceSpout(acks), None, parallelism)
    return builder.build()


def bolts(acks: Acks, parallelism: int) -> StormTopology:
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceSpout(acks), 1)
    builder.set_bolt("split", SplitSentence(), parallelism).shuffle_grouping("spout")
    builder.set_bolt("count", CountWords(), parallelism).fields_grouping("split", ["word"])
    return builder.create_topology()




def run(variant: str, parallelism: int, pending: int, secs: float, warmup: float) -> dict[str, Any]:
    acks = Acks()
    topology = (streams if variant == "streams" else bolts)(acks, parallelism)
    with LocalCluster() as cluster:
        cluster.submit_topology(variant, {"topology.max.spout.pending": pending, "topology.workers": 1}, topology)
        wait_until(lambda: acks.n > 0, 60, what="the first ack")
        time.sleep(warmup)
        t1, a1, cpu1, threads1 = time.perf_counter(), acks.n, time.process_time(), busiest_thread_cpu()
        time.sleep(secs)
        t2, a2, cpu2, threads2 = time.perf_counter(), acks.n, time.process_time(), busiest_thread_cpu()
        cluster.kill_topology(variant, 0)
    elapsed = t2 - t1
    words = (a2 - a1) * WORDS_PER_SENTENCE
    busy_name, busy = max(((n, threads2[n] - threads1.get(n, 0.0)) for n in threads2), key=lambda p: p[1])
    return {
        "bench": "streams_word_count",
        "variant": variant,
        "parallelism": parallelism,
        "max_spout_pending": pending,
        "words_per_s": round(words / elapsed),
        "words_per_cpu_s": round(words / max(1e-9, cpu2 - cpu1)),
        "words_per_worker_cpu_s": round(words / max(1e-9, busy)),
        "worker_thread": busy_name,
        "measured_secs": round(elapsed, 2),
        "compiled": bool(compiled_modules()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--secs", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=2)
    args = parser.parse_args()
    results: dict[str, list[dict[str, Any]]] = {"streams": [], "bolts": []}
    for _ in range(args.rounds):
        for variant in ("streams", "bolts"):
            row = run(variant, args.parallelism, args.pending, args.secs, args.warmup)
            results[variant].append(row)
            print(json.dumps(row), flush=True)
    summary: dict[str, Any] = {"bench": "streams_word_count", "summary": True, "rounds": args.rounds}
    for key in ("words_per_s", "words_per_cpu_s", "words_per_worker_cpu_s"):
        medians = {v: statistics.median(r[key] for r in rows) for v, rows in results.items()}
        summary[f"{key}_median"] = medians
        summary[f"{key}_ratio"] = round(medians["streams"] / max(1e-9, medians["bolts"]), 3)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
