"""Transactional global count (storm-starter's TransactionalGlobalCount) in-process: batches/s and tuples/s.

    python bench/transactional_bench.py [--batch-sizes 100,1000,10000] [--pending 1] [--secs 5] [--warmup 1]

The topology is ``examples/transactional_global_count.py`` unchanged: a memory spout (2 partitions, 2 emitter
tasks, each batch takes ``batch_size / 2`` tuples of each partition) -> ``partial-count`` (5 batch-bolt tasks,
none grouping) -> ``sum`` (the committer: one SQLite transaction per batch, WAL journal, into a temporary
file).  The spout's data never runs out.  Each batch size runs alone in a fresh LocalCluster (one worker, real
time); after a warm-up, committed transactions are read from the coordinator's persisted ``currtx`` over
``--secs`` seconds.  Prints one JSON line per batch size; ``exact`` says the database holds exactly
``committed batches x batch size``; ``db_commit_ms`` is the mean cost of one committer write measured alone
on the same disk (part of every batch's time when one batch is in flight).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from examples import transactional_global_count as global_count
from storm_py import LocalCluster
from storm_py.clock import wait_until

TX_ID = "bench-global-count"
PARTITIONS = 2


class EndlessRows(Sequence[list[Any]]):
    """A partition that never runs out: ``rows`` cycled, ``10**12`` rows long (nothing is materialized)."""

    def __init__(self, rows: list[list[Any]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return 10**12

    @overload
    def __getitem__(self, index: int) -> list[Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[list[Any]]: ...

    def __getitem__(self, index: int | slice) -> list[Any] | list[list[Any]]:
        rows = self.rows
        if isinstance(index, slice):
            indices = range(*index.indices(len(self)))
            if len(rows) == 1:
                return rows * len(indices)
            return [rows[i % len(rows)] for i in indices]
        return rows[index % len(rows)]


def db_commit_ms(samples: int = 200) -> float:
    """Mean milliseconds of one committer write (an SQLite transaction) on this disk, for reference."""
    with tempfile.TemporaryDirectory() as tmp:
        db = global_count.GlobalCountDB(os.path.join(tmp, "probe.db"))
        start = time.perf_counter()
        for txid in range(1, samples + 1):
            global_count.GlobalCountDB(db.path, create=False).apply(txid, 1)
        return (time.perf_counter() - start) / samples * 1000.0


def run(batch_size: int, pending: int, secs: float, warmup: float, workers: int) -> dict[str, Any]:
    """One measurement: steady-state committed batches per second for ``batch_size``."""
    take = batch_size // PARTITIONS
    data: dict[int, Any] = {p: EndlessRows([["word"]]) for p in range(PARTITIONS)}
    with tempfile.TemporaryDirectory() as tmp:
        db = global_count.GlobalCountDB(os.path.join(tmp, "count.db"))
        topology = global_count.build_topology(db.path, data, take, tx_id=TX_ID, spout_parallelism=PARTITIONS)
        conf = {"topology.max.spout.pending": pending, "topology.workers": workers}
        with LocalCluster() as cluster:

            def committed() -> int:
                return int(cluster.state.transactional_get(TX_ID, "coordinator", "currtx") or 1) - 1

            cluster.submit_topology("transactional-bench", conf, topology)
            wait_until(lambda: committed() >= 1, 60, what="the first commit")
            time.sleep(warmup)
            t1, c1 = time.perf_counter(), committed()
            time.sleep(secs)
            t2, c2 = time.perf_counter(), committed()
            cluster.deactivate("transactional-bench")
            cluster.kill_topology("transactional-bench", 0)
        stored = db.read()
    elapsed = t2 - t1
    batches = c2 - c1
    return {
        "bench": "transactional_global_count",
        "batch_size": batch_size,
        "max_spout_pending": pending,
        "workers": workers,
        "batches_per_s": round(batches / elapsed, 1),
        "tuples_per_s": round(batches * batch_size / elapsed),
        "batches": batches,
        "measured_secs": round(elapsed, 2),
        "exact": stored is not None and stored[0] == stored[1] * batch_size,
        "db_commit_ms": round(db_commit_ms(), 2),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-sizes", default="100,1000,10000", help="comma-separated tuples per batch")
    parser.add_argument("--pending", type=int, default=1, help="topology.max.spout.pending (batches in flight)")
    parser.add_argument("--secs", type=float, default=5.0, help="measured seconds per batch size")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds before measuring")
    parser.add_argument("--workers", type=int, default=1, help="topology.workers")
    args = parser.parse_args()
    for size in (int(s) for s in args.batch_sizes.split(",")):
        if size < PARTITIONS or size % PARTITIONS:
            parser.error(f"batch sizes must be multiples of {PARTITIONS}, got {size}")
        print(json.dumps(run(size, args.pending, args.secs, args.warmup, args.workers)), flush=True)


if __name__ == "__main__":
    main()
