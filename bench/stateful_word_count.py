"""The cost of managed state: storm-perf's word count with acking, plain beside stateful (the running count in a
``KeyValueState``, Storm's checkpoints every second, in-memory provider; acks held until the checkpoint commits).

    python bench/stateful_word_count.py [--secs 8] [--warmup 3] [--rounds 2] [--pending 150000] [--json out.jsonl]
    python bench/stateful_word_count.py --instructions      # needs valgrind
    python bench/stateful_word_count.py --cache [--ll-mib 32]   # needs valgrind and the compiled build
    python bench/stateful_word_count.py --guarantee exactly_once [--instructions | --cache]

Each topology runs alone in a LocalCluster with one worker and one acker; the rounds alternate plain and stateful.
Reported: acked sentences per wall second and per CPU second of the process (``time.process_time``, which tells
the rate apart from other load on a shared machine) of each, and the stateful one's share of the plain one's.
The bench process runs with a worker's collector threshold (``--gc-threshold0``, ``worker.gc.threshold0``).
Under at_least_once a sentence's tree completes only when the checkpoint after it commits, so
``topology.max.spout.pending`` must hold more than a checkpoint interval of sentences (``--pending``; the
default, 150,000, is two intervals at the plain count's rate), or the spout waits for every commit and the rate
measured is ``pending`` per interval.  ``--interval-ms`` sets the checkpoint interval (default: every second).

``--guarantee exactly_once`` runs the stateful count under ``topology.state.guarantee: exactly_once``: its spout
is a :class:`~storm_py.stateful.api.spout.StatefulSpout` emitting storm-perf's sentences from a position
kept in its state (:class:`StatefulSentenceSpout`), its tuples carry no tree (the checkpoint decides what is
replayed: barriers aligned at every bolt, no acks held), so nothing is acked and its rate is the words the count
bolt executed over the words of a sentence (8 in each of the five).  The plain count runs as always (acked).

``--instructions`` runs no cluster: one :class:`~storm_py.runtime.worker_runtime.WorkerRuntime` of each topology
is driven in one thread on a simulated clock that moves 10 ms a pass (a checkpoint every 100 passes), a fixed
number of passes, twice under ``valgrind --tool=callgrind``; it reports the instructions per acked sentence of
each topology from the difference of the two runs, and their ratio (plain over stateful: the share of the plain
count's throughput the stateful one reaches on one core).

``--cache`` counts what instructions do not: the misses of a last-level cache (callgrind's cache simulation;
``--ll-mib``, default 32, this machine's L3; 1 for its L2) per acked sentence, in the worker's passes only
(``--toggle-collect`` on the compiled ``WorkerRuntime.run_once``), at the volume of a real run (a pass of 1.5 ms:
about 75,000 sentences per checkpoint, 1,500 passes; about ten minutes a topology).  With checkpoints every second,
a checkpoint interval of open tuple trees is far larger than the processor's caches, and every object a tree keeps
until the commit spreads the short-lived objects of later tuples over cold memory; instruction counts are then
equal where wall clock is not.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from peers.common import SENTENCES, WORDS_PER_SENTENCE
from storm_perf import SentenceSpout, Split, word_count  # the plain word count

from storm_py import BaseStatefulBolt, LocalCluster, StatefulSpout, TopologyBuilder, build
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime

PASS_SECS = 0.01  # simulated time per pass of --passes
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE = "exactly_once"
# under exactly_once the rate is the count bolt's words over the words of a sentence: every sentence has as many
assert all(len(s.split()) == WORDS_PER_SENTENCE for s in SENTENCES)


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


class StatefulSentenceSpout(SentenceSpout, StatefulSpout):
    """storm-perf's SentenceSpout with its position in its state (a spout exactly_once accepts); the message id it
    gives is dropped under exactly_once."""

    def init_state(self, state):
        self.state = state
        self.seq = state.get("seq", 0)

    def pre_prepare(self, txid):
        self.state.put("seq", self.seq)


def stateful_word_count(guarantee: str = AT_LEAST_ONCE):
    b = TopologyBuilder()
    b.set_spout("spout", StatefulSentenceSpout() if guarantee == EXACTLY_ONCE else SentenceSpout())
    b.set_bolt("split", Split()).shuffle_grouping("spout")
    b.set_bolt("count", StatefulCount()).fields_grouping("split", ["word"])
    return b.create_topology()


def sentences_done(executors: Any, guarantee: str) -> int:
    """The sentences the word count got through: acked at the spout, or under exactly_once (nothing acked) the
    words the count bolt executed over the words of a sentence."""
    if guarantee == EXACTLY_ONCE:
        return sum(ex.stats.executed for ex in executors if ex.component_id == "count") // WORDS_PER_SENTENCE
    return sum(ex.stats.acked for ex in executors if ex.is_spout and ex.component_id == "spout")


def measure(build, secs: float, warmup: float, pending: int, interval_ms: int = 1000,
            guarantee: str = AT_LEAST_ONCE) -> tuple[float, float]:
    conf = conf_of(pending, interval_ms, guarantee)
    with LocalCluster(supervisors=1, ports_per_supervisor=1) as cluster:
        tid = cluster.submit_topology("perf", conf, build())
        (worker,) = cluster.workers(tid)
        executors = worker.runtime.executors
        time.sleep(warmup)
        a0, t0, c0 = sentences_done(executors, guarantee), time.perf_counter(), time.process_time()
        time.sleep(secs)
        a1, t1, c1 = sentences_done(executors, guarantee), time.perf_counter(), time.process_time()
        cluster.kill_topology("perf", 0)
    return (a1 - a0) / (t1 - t0), (a1 - a0) / (c1 - c0)


def conf_of(pending: int, interval_ms: int = 1000, guarantee: str = AT_LEAST_ONCE) -> dict[str, Any]:
    return {"topology.acker.executors": 1, "topology.max.spout.pending": pending, "topology.workers": 1,
            "topology.state.checkpoint.interval.ms": interval_ms, "topology.state.guarantee": guarantee}


def run_passes(build_topology: Any, pending: int, passes: int, pass_secs: float = PASS_SECS,
               guarantee: str = AT_LEAST_ONCE) -> int:
    """One worker of ``build_topology`` driven ``passes`` times in this thread, ``pass_secs`` of simulated time
    each; the sentences it got through (:func:`sentences_done`)."""
    conf = defaults()
    conf.update(conf_of(pending, guarantee=guarantee))
    topology = system_topology(build_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    clock = SimulatedClock()
    rt = WorkerRuntime(topology_id="bench", topology_name="bench", topology=topology, conf=conf, layout=layout,
                       executors=executors, task_to_worker={t: "w" for _, (s, e) in executors
                                                            for t in range(s, e + 1)},
                       worker_id="w", clock=clock)
    rt.prepare()
    rt.set_active(True)
    for _ in range(passes):
        rt.run_once(clock.now())
        clock.advance(pass_secs)
    return sentences_done(rt.executors, guarantee)


def cache_misses(case: str, pending: int, gc_threshold0: int, ll_mib: int, passes: int = 1500,
                 guarantee: str = AT_LEAST_ONCE) -> dict[str, int]:
    """Last-level misses (``ll_mib``) and instructions of the worker's passes of a run of ``case``, under callgrind."""
    acked, got = callgrind(
        "--case", case, "--pending", str(pending), "--gc-threshold0", str(gc_threshold0), "--passes", str(passes),
        "--pass-ms", "1.5", "--guarantee", guarantee,
        options=("--cache-sim=yes", f"--LL={ll_mib << 20},16,64",
                 "--toggle-collect=CPyDef_worker_runtime___WorkerRuntime___run_once"))
    return {"sentences": acked, "instructions": got["Ir"], "ll_misses": got["DLmr"] + got["DLmw"] + got["ILmr"]}


def cache(args: argparse.Namespace) -> None:
    if "storm_py.runtime.worker_runtime" not in build.compiled_modules():
        sys.exit("--cache needs the compiled build (PYTHONPATH=$(./scripts/compiled-build.sh)): it counts inside "
                 "the compiled WorkerRuntime.run_once")
    out: dict[str, Any] = {"build": build.describe(), "pending": args.pending, "gc_threshold0": args.gc_threshold0,
                           "ll_mib": args.ll_mib, "guarantee": args.guarantee}
    for case in ("plain", "stateful"):
        got = cache_misses(case, args.pending, args.gc_threshold0, args.ll_mib, guarantee=args.guarantee)
        out[f"{case}_sentences"] = got["sentences"]
        out[f"{case}_instructions_per_sentence"] = round(got["instructions"] / got["sentences"])
        out[f"{case}_ll_misses_per_sentence"] = round(got["ll_misses"] / got["sentences"], 1)
    print(json.dumps(out), flush=True)


def callgrind(*script_args: str, options: tuple[str, ...] = ()) -> tuple[int, dict[str, int]]:
    """Run this script under valgrind's callgrind (with ``options``): the sentences (``acked N``) it prints and
    the events collected, by name (``Ir``: instructions)."""
    cmd = ["valgrind", "--tool=callgrind", *options, "--callgrind-out-file=/dev/null", sys.executable,
           str(Path(__file__).resolve()), *script_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    acked = int(re.search(r"^acked (\d+)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    events = re.search(r"Events\s*:\s*(.+)$", proc.stderr, re.M).group(1).split()  # type: ignore[union-attr]
    counts = re.search(r"Collected\s*:\s*(.+)$", proc.stderr, re.M).group(1).split()  # type: ignore[union-attr]
    return acked, dict(zip(events, map(int, counts), strict=True))


def instructions(args: argparse.Namespace) -> None:
    out: dict[str, Any] = {"build": build.describe(), "pending": args.pending, "guarantee": args.guarantee}
    for case in ("plain", "stateful"):
        common = ["--case", case, "--pending", str(args.pending), "--gc-threshold0", str(args.gc_threshold0),
                  "--guarantee", args.guarantee]
        a1, e1 = callgrind(*common, "--passes", str(args.short))
        a2, e2 = callgrind(*common, "--passes", str(args.long))
        out[f"{case}_instructions_per_sentence"] = round((e2["Ir"] - e1["Ir"]) / (a2 - a1))
        out[f"{case}_sentences"] = a2 - a1
    out["share"] = round(out["plain_instructions_per_sentence"] / out["stateful_instructions_per_sentence"], 3)
    print(json.dumps(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secs", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pending", type=int, default=150000)
    parser.add_argument("--interval-ms", type=int, default=1000, help="topology.state.checkpoint.interval.ms")
    parser.add_argument("--guarantee", choices=[AT_LEAST_ONCE, EXACTLY_ONCE], default=AT_LEAST_ONCE,
                        help="topology.state.guarantee of the stateful count (the plain one is acked either way)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--gc-threshold0", type=int, default=100_000,
                        help="CPython's generation-0 threshold of the bench process (default: worker.gc.threshold0)")
    parser.add_argument("--instructions", action="store_true", help="instructions per sentence, with valgrind")
    parser.add_argument("--short", type=int, default=100, help="passes of the shorter --instructions run")
    parser.add_argument("--long", type=int, default=300, help="passes of the longer --instructions run")
    parser.add_argument("--case", choices=["plain", "stateful"], default="plain", help=argparse.SUPPRESS)
    parser.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)  # one fixed run (for valgrind)
    parser.add_argument("--pass-ms", type=float, default=PASS_SECS * 1000, help=argparse.SUPPRESS)  # of --passes
    parser.add_argument("--cache", action="store_true", help="last-level cache misses per sentence, with valgrind")
    parser.add_argument("--ll-mib", type=int, default=32, help="the simulated last-level cache of --cache, MiB")
    args = parser.parse_args()
    gc.set_threshold(args.gc_threshold0, *gc.get_threshold()[1:])
    if args.passes:
        if args.case == "plain":
            done = run_passes(word_count, args.pending, args.passes, args.pass_ms / 1000)
        else:
            done = run_passes(lambda: stateful_word_count(args.guarantee), args.pending, args.passes,
                              args.pass_ms / 1000, args.guarantee)
        print(f"acked {done}")
        return
    if args.cache:
        if shutil.which("valgrind") is None:
            sys.exit("--cache needs valgrind (apt-get install valgrind)")
        cache(args)
        return
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        instructions(args)
        return
    rows: list[dict[str, Any]] = []
    for r in range(args.rounds):
        plain, plain_cpu = measure(word_count, args.secs, args.warmup, args.pending)
        stateful, stateful_cpu = measure(lambda: stateful_word_count(args.guarantee), args.secs, args.warmup,
                                         args.pending, args.interval_ms, args.guarantee)
        row = {"round": r + 1, "plain_per_s": round(plain), "stateful_per_s": round(stateful),
               "share": round(stateful / plain, 3) if plain else None,
               "plain_per_cpu_s": round(plain_cpu), "stateful_per_cpu_s": round(stateful_cpu),
               "share_cpu": round(stateful_cpu / plain_cpu, 3) if plain_cpu else None, "pending": args.pending,
               "interval_ms": args.interval_ms, "guarantee": args.guarantee,
               "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with args.json.open("a", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
