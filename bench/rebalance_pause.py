"""The pause of an executor rebalance with durable state: a stateful count holding N keys in the checkpoint
directory (four tasks on two executors) is rebalanced to four executors while its spout keeps emitting, and the time
until the count runs again is split into its parts.

    python bench/rebalance_pause.py [--keys 100000,1000000] [--json out.jsonl]

Each run: a LocalCluster (one worker) runs spout -> count (fields grouping, ``exactly_once``, ``checkpoint_dir`` in
a temporary directory, checkpoints every second); the spout emits each of N distinct keys once, then a trickle of
known keys.  Once all N are committed, ``rebalance(executors={"count": 4}, wait_secs=0)``.  Reported:

- largest checkpoint: the longest time a count task spent writing the checkpoint with the most changed keys while
  the N keys arrive (its prepare: one changes file and a manifest), and incremental checkpoint: the same for the
  last checkpoint before the rebalance (only the trickle's keys changed since the previous commit);
- worker start: from the rebalance call until the last count task is prepared again (old executors stopped, new
  ones built);
- moves: none (an executor rebalance moves tasks, not keys: each task's state stays under its own name);
- restore: the longest time a task spent reading its state's files (its manifest, base and changes);
- pause: from the rebalance call until every count task has executed a tuple again (and until the first one).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins

from keys_spout import KeysSpout  # bench/ is the script's own directory

from storm_py import BaseStatefulBolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState

LOCK = threading.Lock()
MARKS: dict[str, dict[int, float]] = {}
CHECKPOINTS: dict[int, dict[int, list[float]]] = {}  # txid -> task -> [pre_prepare, pre_commit, keys]
LOADS: list[tuple[float, float]] = []  # (start, seconds) of each state read from the directory
WRITES: dict[int, list[tuple[float, int]]] = {}  # txid -> (seconds, keys written) of each count task's prepare


def _timed_load(original: Any) -> Any:
    def load(self: CheckpointDirState) -> None:
        start = time.monotonic()
        original(self)
        with LOCK:
            LOADS.append((start, time.monotonic() - start))

    return load


def _timed_prepare(original: Any) -> Any:
    def prepare_commit(self: CheckpointDirState, txid: int) -> None:
        changed = len(self._undo)
        start = time.monotonic()
        original(self, txid)
        if "count-" in self._blobs.where:
            with LOCK:
                WRITES.setdefault(txid, []).append((time.monotonic() - start, changed))

    return prepare_commit


class Count(BaseStatefulBolt):
    """The count of each key; marks its prepare, first tuple after it, and each checkpoint's phases."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        self.first = True
        with LOCK:
            MARKS.setdefault("prepared", {})[self.task] = time.monotonic()

    def init_state(self, state):
        self.state = state

    def execute(self, tup):
        if self.first:
            self.first = False
            with LOCK:
                MARKS.setdefault("first", {})[self.task] = time.monotonic()
        key = tup[0]
        self.state.put(key, self.state.get(key, 0) + 1)

    def pre_prepare(self, txid):
        with LOCK:
            CHECKPOINTS.setdefault(txid, {})[self.task] = [time.monotonic(), 0.0, float(len(self.state))]

    def pre_commit(self, txid):
        with LOCK:
            entry = CHECKPOINTS.get(txid, {}).get(self.task)
            if entry is not None:
                entry[1] = time.monotonic()

    def declare_output_fields(self, declarer):
        pass


def _write_secs(txid: int) -> tuple[float, int]:
    """The longest prepare of ``txid`` over the count tasks, and the keys they wrote."""
    entries = WRITES.get(txid, [])
    return max(e[0] for e in entries), sum(e[1] for e in entries)


def run(keys: int, timeout: float) -> dict[str, Any]:
    MARKS.clear()
    CHECKPOINTS.clear()
    LOADS.clear()
    WRITES.clear()
    builder = TopologyBuilder()
    builder.set_spout("keys", KeysSpout(keys))
    builder.set_bolt("count", Count(), 2).set_num_tasks(4).fields_grouping("keys", ["key"])
    with tempfile.TemporaryDirectory(prefix="rebalance-pause-") as tmp:
        conf = {"topology.state.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 1000,
                "topology.workers": 1, "topology.state.provider": "checkpoint_dir",
                "topology.state.provider.config": {"url": tmp}}
        with LocalCluster(supervisors=1, ports_per_supervisor=2) as cluster:
            cluster.submit_topology("pause", conf, builder.create_topology())

            def full_txid() -> int | None:
                with LOCK:
                    done = [t for t, per in CHECKPOINTS.items()
                            if len(per) == 4 and all(e[1] for e in per.values()) and sum(e[2] for e in per.values())
                            >= keys]
                return min(done) if done else None

            wait_until(lambda: full_txid() is not None, timeout, interval=0.1, what=f"{keys} keys committed")
            full = full_txid()
            assert full is not None
            wait_until(lambda: any(t > full + 1 and len(p) == 4 and all(e[1] for e in p.values())
                                   for t, p in list(CHECKPOINTS.items())), timeout, interval=0.05,
                       what="an incremental checkpoint")
            with LOCK:
                last = max(t for t, p in CHECKPOINTS.items() if len(p) == 4 and all(e[1] for e in p.values()))
                largest = max(WRITES, key=lambda t: sum(e[1] for e in WRITES[t]))
                full_secs, full_keys = _write_secs(largest)
                incremental_secs, incremental_keys = _write_secs(last)
                MARKS.pop("first", None)
            start = time.monotonic()
            cluster.rebalance("pause", wait_secs=0, executors={"count": 4})

            def resumed() -> bool:
                with LOCK:
                    first = MARKS.get("first", {})
                    return len(first) == 4 and all(t > start for t in first.values())

            wait_until(resumed, timeout, interval=0.01, what="every count task running again")
            with LOCK:
                prepared = [t for t in MARKS["prepared"].values() if t > start]
                first = list(MARKS["first"].values())
                loads = [secs for began, secs in LOADS if began > start]
            cluster.kill_topology("pause", wait_secs=0)
    return {
        "keys": keys,
        "largest_checkpoint_secs": round(full_secs, 3),
        "largest_checkpoint_keys": full_keys,
        "incremental_checkpoint_secs": round(incremental_secs, 3),
        "incremental_checkpoint_keys": incremental_keys,
        "worker_start_secs": round(max(prepared) - start, 3),
        "moves_secs": 0.0,
        "restore_secs": round(max(loads), 3) if loads else None,
        "first_tuple_secs": round(min(first) - start, 3),
        "pause_secs": round(max(first) - start, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", default="100000,1000000")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    CheckpointDirState._load = _timed_load(CheckpointDirState._load)  # type: ignore[method-assign]
    CheckpointDirState.prepare_commit = _timed_prepare(CheckpointDirState.prepare_commit)  # type: ignore[method-assign]
    for n in (int(k) for k in args.keys.split(",")):
        result = run(n, args.timeout)
        print(json.dumps(result), flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as out:
                out.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
