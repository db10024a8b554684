"""Trident word count against the same count written as a transactional topology: words/s, one worker.

    python bench/trident_word_count.py [--batch 1000] [--secs 5] [--warmup 1] [--rounds 2] [--pending 1]
    python bench/trident_word_count.py --instructions [--variant trident] [--batch 1000]   # needs valgrind

Both count the words of the same cycling sentences (10 words each, 1,000 distinct words) exactly once into an
opaque map state in memory (``OpaqueValue`` per word, the same ``OpaqueMap`` over a ``MemoryBackingMap``):

* ``trident``: ``FixedBatchSpout`` (``--batch`` sentences per batch) -> ``each(Split)`` ->
  ``group_by(word).persistent_aggregate(MemoryMapState.factory("opaque"), Count())``, parallelism 1 everywhere
  (the planner's two bolts: split + partial counts; counts + state).
* ``transactional``: a ``MemoryTransactionalSpout`` of the same sentences (``--batch`` per batch) -> a batch
  bolt splitting and counting the batch's words -> (fields grouping on the word) a committer applying the
  partial counts to the opaque map.

Each run is a fresh LocalCluster (one worker, real time); after a warm-up, committed transactions are read from
the coordinator's ``currtx`` over ``--secs`` seconds; ``words_per_cpu_s`` divides by the process's CPU seconds
and ``words_per_worker_cpu_s`` by the CPU seconds of the busiest thread (the worker's loop, which runs every
executor): on a loaded machine wall-clock rates measure the machine, these the code.  The variants alternate
for ``--rounds``; one JSON line per run, then the ratios of the medians (wall clock, worker CPU).

``--delegates N`` runs no cluster: it feeds one variant's two bolts (the delegates their coordinated bolts run,
prepared with a stand-in collector and context) ``N`` batches in this thread, the first bolt's output to the
second, and finishes each batch in both: the per-batch work of the bolts alone, for instruction counts.
``--instructions`` runs ``--delegates 2`` and ``--delegates 22`` under ``valgrind --tool=cachegrind`` and reports
the instructions per batch and per sentence from the difference of the two runs.
``--batches N`` runs one variant in a LocalCluster until ``N`` batches are committed, then stops: the same
difference of two runs counts the whole pipeline's instructions per batch (spout, coordination, acker, both
bolts, the worker's executors).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins
sys.path.append(str(Path(__file__).resolve().parent))  # the other bench scripts (``python -P`` leaves them out)

from thread_cpu import busiest_thread_cpu  # bench/ is the script's own directory
from transactional_bench import EndlessRows
from two_workers import cachegrind

from storm_py import LocalCluster
from storm_py.api.tuple import Fields, Tuple
from storm_py.build import compiled_modules, describe
from storm_py.clock import wait_until
from storm_py.transactional import (
    BaseTransactionalBolt,
    Committer,
    MemoryBackingMap,
    MemoryTransactionalSpout,
    OpaqueMap,
    TransactionalTopologyBuilder,
)
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchBoltExecutor
from storm_py.trident import BaseFunction, Count, FixedBatchSpout, MemoryMapState, TridentTopology
from storm_py.trident.planner import plan

WORDS_PER_SENTENCE = 10
DISTINCT = 1000
SENTENCES = [
    [" ".join(f"w{(i * WORDS_PER_SENTENCE + j) % DISTINCT}" for j in range(WORDS_PER_SENTENCE))]
    for i in range(DISTINCT)
]


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.get_value(0).split(" "):
            collector.emit([word])


def trident(batch: int) -> tuple[Any, str]:
    return trident_topology(batch).build(), "bench-trident"


def trident_topology(batch: int) -> TridentTopology:
    spout = FixedBatchSpout(["sentence"], batch, *SENTENCES)
    spout.set_cycle(True)
    topology = TridentTopology()
    (
        topology.new_stream("bench-trident", spout)
        .each(["sentence"], Split(), ["word"])
        .group_by(["word"])
        .persistent_aggregate(MemoryMapState.factory("opaque"), Count(), ["count"])
    )
    return topology


class SplitCount(BaseTransactionalBolt):
    """Splits the batch's sentences and counts its words; emits ``[tx, word, count]`` at the end."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, id: Any) -> None:
        self.collector = collector
        self.id = id
        self.counts: dict[str, int] = {}

    def execute(self, tup: Tuple) -> None:
        counts = self.counts
        for word in tup.values[1].split(" "):
            counts[word] = counts.get(word, 0) + 1

    def finish_batch(self) -> None:
        for word, n in self.counts.items():
            self.collector.emit([self.id, word, n])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["tx", "word", "count"])


_STORES: dict[str, MemoryBackingMap[Any, Any]] = {}


class ApplyCounts(BaseTransactionalBolt, Committer):
    """Adds the batch's partial counts to the opaque map, once per txid."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, id: Any) -> None:
        self.id = id
        self.counts: dict[str, int] = {}

    def execute(self, tup: Tuple) -> None:
        word, n = tup.values[1], tup.values[2]
        self.counts[word] = self.counts.get(word, 0) + n

    def finish_batch(self) -> None:
        state = OpaqueMap(_STORES.setdefault("transactional", MemoryBackingMap()))
        txid = self.id.transaction_id
        state.begin_commit(txid)
        keys = list(self.counts)
        state.multi_update(keys, [_adder(self.counts[k]) for k in keys])
        state.commit(txid)

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def _adder(n: int) -> Any:
    return lambda curr: (curr or 0) + n


def transactional(batch: int) -> tuple[Any, str]:
    spout = MemoryTransactionalSpout({0: EndlessRows(SENTENCES)}, ["sentence"], batch)
    builder = TransactionalTopologyBuilder("bench-transactional", "spout", spout, 1)
    builder.set_bolt("split-count", SplitCount(), 1).shuffle_grouping("spout")
    builder.set_bolt("apply", ApplyCounts(), 1).fields_grouping("split-count", ["word"])
    return builder.build_topology(), "bench-transactional"




def run(variant: str, batch: int, pending: int, secs: float, warmup: float) -> dict[str, Any]:
    _STORES.clear()  # every run starts at txid 1 on an empty map
    topology, tx_id = (trident if variant == "trident" else transactional)(batch)
    with LocalCluster() as cluster:

        def committed() -> int:
            return int(cluster.state.transactional_get(tx_id, "coordinator", "currtx") or 1) - 1

        cluster.submit_topology(variant, {"topology.max.spout.pending": pending}, topology)
        wait_until(lambda: committed() >= 1, 60, what="the first commit")
        time.sleep(warmup)
        t1, c1, cpu1, threads1 = time.perf_counter(), committed(), time.process_time(), busiest_thread_cpu()
        time.sleep(secs)
        t2, c2, cpu2, threads2 = time.perf_counter(), committed(), time.process_time(), busiest_thread_cpu()
        cluster.kill_topology(variant, 0)
    elapsed = t2 - t1
    batches = c2 - c1
    busy_name, busy = max(((n, threads2[n] - threads1.get(n, 0.0)) for n in threads2), key=lambda p: p[1])
    return {
        "bench": "trident_word_count",
        "variant": variant,
        "batch_sentences": batch,
        "max_spout_pending": pending,
        "batches_per_s": round(batches / elapsed, 1),
        "words_per_s": round(batches * batch * WORDS_PER_SENTENCE / elapsed),
        "words_per_cpu_s": round(batches * batch * WORDS_PER_SENTENCE / max(1e-9, cpu2 - cpu1)),
        "words_per_worker_cpu_s": round(batches * batch * WORDS_PER_SENTENCE / max(1e-9, busy)),
        "worker_thread": busy_name,
        "worker_cpu_share": round(busy / elapsed, 2),
        "measured_secs": round(elapsed, 2),
        "compiled": bool(compiled_modules()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


class _Wire:
    """A stand-in output collector: what a bolt emits becomes the next bolt's input tuples."""

    def __init__(self, component: str) -> None:
        self.component = component
        self.out: list[Tuple] = []
        self.fields = Fields(["tx", "word", "count"])

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.out.append(Tuple(list(values), self.fields, self.component, stream, 1, None))
        return [2]

    def ack(self, tup: Tuple) -> None:
        pass

    def fail(self, tup: Tuple) -> None:
        raise RuntimeError(f"failed {tup!r}")

    def report_error(self, exc: BaseException) -> None:
        raise exc


class _Context:
    """A stand-in topology context: one task per component."""

    def __init__(self, component: str) -> None:
        self.this_component_id = component
        self.this_task_id = 1
        self.this_task_index = 0

    def get_component_tasks(self, component_id: str) -> list[int]:
        return [1]


def delegates(variant: str, batch: int, batches: int) -> None:
    """Run ``batches`` batches through the two bolts of ``variant`` in this thread (see the module's doc)."""
    _STORES.clear()
    if variant == "trident":
        planned = plan(trident_topology(batch))
        first, second = (b.executor for b in planned.bolts)
        ((source, stream),) = planned.bolts[0].inputs
        first_id, second_id = planned.bolts[0].id, planned.bolts[1].id
    else:
        first, second = BatchBoltExecutor(SplitCount()), BatchBoltExecutor(ApplyCounts())
        source, stream, first_id, second_id = "spout", "default", "split-count", "apply"
    wire1, wire2 = _Wire(first_id), _Wire(second_id)
    first.prepare({}, _Context(first_id), wire1)  # type: ignore[arg-type]
    second.prepare({}, _Context(second_id), wire2)  # type: ignore[arg-type]
    fields = Fields(["tx", "sentence"])
    for txid in range(1, batches + 1):
        attempt = TransactionAttempt(txid, 7)
        start = (txid - 1) * batch % DISTINCT
        for (sentence,) in SENTENCES[start:start + batch]:
            first.execute(Tuple([attempt, sentence], fields, source, stream, 1, None))
        first.finished_id(attempt)
        for tup in wire1.out:
            second.execute(tup)
        wire1.out.clear()
        second.finished_id(attempt)
    print(f"acked {batches * batch}")  # the sentences run (read by --instructions)


def committed(variant: str, batch: int, pending: int, batches: int) -> None:
    """One LocalCluster run of ``variant`` until ``batches`` batches are committed (see the module's doc)."""
    _STORES.clear()
    topology, tx_id = (trident if variant == "trident" else transactional)(batch)
    with LocalCluster() as cluster:

        def done() -> int:
            return int(cluster.state.transactional_get(tx_id, "coordinator", "currtx") or 1) - 1

        cluster.submit_topology(variant, {"topology.max.spout.pending": pending}, topology)
        wait_until(lambda: done() >= batches, 600 + 60 * batches, what=f"{batches} commits", interval=0.02)
        cluster.kill_topology(variant, 0)
        print(json.dumps({"bench": "trident_word_count", "variant": variant, "committed": done()}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=1000, help="sentences per batch (a divisor of 1000)")
    parser.add_argument("--pending", type=int, default=1, help="topology.max.spout.pending (batches in flight)")
    parser.add_argument("--secs", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each variant, alternating")
    parser.add_argument("--delegates", type=int, default=0,
                        help="no cluster: run this many batches through the bolts of --variant in one thread")
    parser.add_argument("--batches", type=int, default=0,
                        help="one LocalCluster run of --variant until this many batches are committed, no timing")
    parser.add_argument("--variant", choices=["trident", "transactional"], default="trident")
    parser.add_argument("--instructions", action="store_true",
                        help="instructions per batch of the --delegates run, with valgrind")
    args = parser.parse_args()
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        common = ("--variant", args.variant, "--batch", str(args.batch))
        s1, i1 = cachegrind(__file__, *common, "--delegates", "2")
        s2, i2 = cachegrind(__file__, *common, "--delegates", "22")
        print(json.dumps({"bench": "trident_word_count", "variant": args.variant, "batch": args.batch,
                          "build": describe(), "instructions_per_batch": round((i2 - i1) / 20),
                          "instructions_per_sentence": round((i2 - i1) / (s2 - s1))}), flush=True)
        return
    if args.delegates:
        delegates(args.variant, args.batch, args.delegates)
        return
    if args.batches:
        committed(args.variant, args.batch, args.pending, args.batches)
        return
    if args.batch < 1 or DISTINCT % args.batch:
        parser.error(f"--batch must divide {DISTINCT}")
    results: dict[str, list[float]] = {"trident": [], "transactional": []}
    per_cpu: dict[str, list[float]] = {"trident": [], "transactional": []}
    for _ in range(args.rounds):
        for variant in ("transactional", "trident"):
            row = run(variant, args.batch, args.pending, args.secs, args.warmup)
            results[variant].append(row["words_per_s"])
            per_cpu[variant].append(row["words_per_worker_cpu_s"])
            print(json.dumps(row), flush=True)
    ratio = statistics.median(results["trident"]) / max(1.0, statistics.median(results["transactional"]))
    cpu_ratio = statistics.median(per_cpu["trident"]) / max(1.0, statistics.median(per_cpu["transactional"]))
    print(json.dumps({
        "bench": "trident_word_count",
        "trident_over_transactional": round(ratio, 3),
        "per_worker_cpu_second": round(cpu_ratio, 3),
    }), flush=True)


if __name__ == "__main__":
    main()
