"""Bytewax running word count: sentences -> flat_map(split) -> key_on(word) -> stateful_map (one running count
per word, Storm's semantics) -> a sink, with no acking.  Runs with the peers' own interpreter
(``bench/peers/run_all.py --setup`` makes it: Bytewax 0.21.1 in build/peers-venv).

    build/peers-venv/bin/python bench/peers/bytewax_wc.py [--processes 1|2] [--n 1000000]

Each process's source generates its share in batches of 1000 sentences; each sink keeps the highest count seen
per word and writes it with its last write time.  sentences/s = N / (last sink write - first source batch),
system-wide monotonic clock.  The counts are checked.  One ``RESULT`` line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SENTENCES, environment, expected_counts, result

BATCH = 1000


def flow() -> Any:
    """The dataflow, configured by BW_N (sentences in all) and BW_OUT (directory for each sink's JSON)."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import DynamicSource, StatelessSourcePartition
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    n, out = int(os.environ["BW_N"]), Path(os.environ["BW_OUT"])

    class Part(StatelessSourcePartition):  # type: ignore[misc]
        def __init__(self, lo: int, hi: int, worker: int) -> None:
            self.i, self.hi, self.worker, self.started = lo, hi, worker, False

        def next_batch(self) -> list[str]:
            if not self.started:
                self.started = True
                (out / f"start-{self.worker}.json").write_text(json.dumps(time.monotonic()))
            if self.i >= self.hi:
                raise StopIteration
            stop = min(self.hi, self.i + BATCH)
            batch = [SENTENCES[j % 5] for j in range(self.i, stop)]
            self.i = stop
            return batch

    class Source(DynamicSource):  # type: ignore[misc]
        def build(self, step_id: str, worker_index: int, worker_count: int) -> Part:
            share = n // worker_count
            lo = worker_index * share
            hi = n if worker_index == worker_count - 1 else lo + share
            return Part(lo, hi, worker_index)

    class SinkPart(StatelessSinkPartition):  # type: ignore[misc]
        def __init__(self, worker: int) -> None:
            self.worker, self.counts, self.end = worker, {}, 0.0

        def write_batch(self, items: list[tuple[str, tuple[str, int]]]) -> None:
            counts = self.counts
            for _key, (w, c) in items:
                if c > counts.get(w, 0):
                    counts[w] = c
            self.end = time.monotonic()

        def close(self) -> None:
            (out / f"sink-{self.worker}.json").write_text(json.dumps({"end": self.end, "counts": self.counts}))

    class Sink(DynamicSink):  # type: ignore[misc]
        def build(self, step_id: str, worker_index: int, worker_count: int) -> SinkPart:
            return SinkPart(worker_index)

    def running(state: int | None, word: str) -> tuple[int, tuple[str, int]]:
        c = (state or 0) + 1
        return c, (word, c)

    df = Dataflow("word_count")
    sentences = op.input("in", df, Source())
    words = op.flat_map("split", sentences, str.split)
    keyed = op.key_on("key", words, lambda w: w)
    counts = op.stateful_map("count", keyed, running)
    op.output("out", counts, Sink())
    return df


def _free_ports(k: int) -> list[int]:
    socks = [socket.socket() for _ in range(k)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run(processes: int, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bytewax-wc-") as tmp:
        env = {**os.environ, "BW_N": str(n), "BW_OUT": tmp, "PYTHONPATH": str(Path(__file__).resolve().parent)}
        cpu0 = os.times()
        if processes == 1:
            cmds = [[sys.executable, "-m", "bytewax.run", "bytewax_wc:flow()"]]
        else:
            addrs = ";".join(f"127.0.0.1:{p}" for p in _free_ports(processes))
            cmds = [[sys.executable, "-m", "bytewax.run", "bytewax_wc:flow()", "-i", str(i), "-a", addrs]
                    for i in range(processes)]
        procs = [subprocess.Popen(c, env=env) for c in cmds]
        for p in procs:
            if p.wait(600) != 0:
                raise SystemExit(f"bytewax process exited with {p.returncode}")
        cpu1 = os.times()
        starts = [json.loads(f.read_text()) for f in Path(tmp).glob("start-*.json")]
        sinks = [json.loads(f.read_text()) for f in Path(tmp).glob("sink-*.json")]
    counts: dict[str, int] = {}
    for s in sinks:
        for w, c in s["counts"].items():
            counts[w] = max(counts.get(w, 0), c)
    elapsed = max(s["end"] for s in sinks) - min(starts)
    cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    return {"sentences_per_s": round(n / elapsed), "elapsed_s": round(elapsed, 3),
            "ok": counts == expected_counts(n), "cpu_us_per_sentence": round(cpu / n * 1e6, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args()
    from importlib.metadata import version

    import bytewax  # noqa: F401  (fails clearly when run with an interpreter that lacks it)

    env = environment()
    row = run(args.processes, args.n)
    result(f"bytewax_running_count_{args.processes}p", **row, n=args.n, processes=args.processes,
           bytewax=version("bytewax"), **env)
    if not row["ok"]:
        sys.exit("bytewax_wc: wrong counts")


if __name__ == "__main__":
    main()
