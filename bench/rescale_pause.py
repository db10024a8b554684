"""The pause of a task rescale: a keyed stateful count holding N keys is rescaled from 4 to 8 tasks while its spout
keeps emitting, and the time until the new tasks count again is split into its parts.

    python bench/rescale_pause.py [--keys 100000,1000000] [--provider memory|redis] [--json out.jsonl]

Each run: a LocalCluster (one worker) runs spout -> count (fields grouping, ``exactly_once``, checkpoints every
second); the spout emits each of N distinct keys once, then a trickle of known keys.  Once all N are committed,
``rebalance(tasks={"count": 8}, wait_secs=0)``.  Reported, from the rebalance call:

- checkpoint: the one taken at the call (the spout held, the checkpoint spout asked for one at once): until nimbus
  saw its commit and went on with the rescale; ``txid_before`` is the last committed at the call, ``restored_txid``
  the one the new tasks restored (newer: taken at the call); the age of the last one at the call is kept too;
- worker start: from the rescale going on until the last new count task is prepared (the old worker stopped, the
  new one built);
- moves: the longest time a new task spent taking its key groups from the old tasks' states, and their sum;
  ``move_cpu_sum_s`` is the CPU time the moves' thread spent in them (what a loaded machine does not inflate);
- restore: from a task's move done to its ``init_state`` (the state handed over), longest;
- pause: until a new count task executes its first tuple, and until every new task has its share (all restored:
  the tasks of one worker take their shares one after the other, on the worker's loop thread).

``moved_entries`` counts the keys of the checkpoint taken at the call: every key (nothing is replayed).

``--provider redis`` keeps the state in a Redis server started for the run (``storm-py``'s dev Redis) rather than
in memory: the moves then read and write through Redis.
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
from storm_py.nimbus.core import Nimbus
from storm_py.stateful.state.key_group_move import KeyGroupMove
from storm_py.stateful.state.key_value import KeyValueState

MARKS: dict[str, Any] = {}
LOCK = threading.Lock()


def _mark(kind: str, task: int) -> None:
    now = time.monotonic()
    with LOCK:
        MARKS.setdefault(kind, {}).setdefault(task, now)


class Count(BaseStatefulBolt):
    """The count of each key; marks (by task index) its prepare, ``init_state``, first tuple and new keys."""

    def prepare(self, conf, context, collector):
        self.index = context.this_task_index
        self.generation = len(context.get_component_tasks("count"))
        self.new_keys = 0
        _mark(f"prepared-{self.generation}", self.index)

    def init_state(self, state):
        self.state = state
        _mark(f"init-{self.generation}", self.index)
        with LOCK:
            MARKS.setdefault(f"restored-{self.generation}", {}).setdefault(self.index, state.committed_txid())

    def execute(self, tup):
        if self.generation == 8:
            _mark("first-8", self.index)
        old = self.state.get(tup[0])
        if old is None:
            self.new_keys += 1
            with LOCK:
                MARKS.setdefault("keys", {})[(self.generation, self.index)] = self.new_keys
        self.state.put(tup[0], (old or 0) + 1)

    def pre_commit(self, txid):
        with LOCK:
            MARKS["commit"] = time.monotonic()

    def declare_output_fields(self, declarer):
        pass


def _timed_settle() -> None:
    """Record each move's start and end (the bench's own instrument around the rescale's move)."""
    settle = KeyGroupMove.settle

    def timed(self: KeyGroupMove, state: KeyValueState, committed: int) -> int:
        start, cpu = time.monotonic(), time.thread_time()
        moved = settle(self, state, committed)
        if moved or self.generation:
            with LOCK:
                MARKS.setdefault("moves", []).append((self.index, start, time.monotonic(), moved,
                                                      time.thread_time() - cpu))
        return moved

    KeyGroupMove.settle = timed  # type: ignore[method-assign]
    rebalance = Nimbus._do_rebalance

    def timed_rebalance(self: Nimbus, *args: Any) -> None:
        with LOCK:
            MARKS["rebalanced"] = time.monotonic()  # nimbus goes on with the rescale (the checkpoint committed)
        rebalance(self, *args)

    Nimbus._do_rebalance = timed_rebalance  # type: ignore[method-assign]


def run(keys: int, provider: str, redis_port: int | None) -> dict[str, Any]:
    MARKS.clear()
    builder = TopologyBuilder()
    builder.set_spout("keys", KeysSpout(keys))
    builder.set_bolt("count", Count(), 4).fields_grouping("keys", ["key"])
    conf: dict[str, Any] = {"topology.state.guarantee": "exactly_once", "topology.state.checkpoint.interval.ms": 1000,
                            "topology.state.provider": provider}
    if provider == "redis":
        conf["topology.state.provider.config"] = {"port": redis_port, "key_prefix": f"bench{keys}:"}
    with LocalCluster() as cluster:
        cluster.submit_topology("pause", conf, builder.create_topology())
        tid = cluster.get_topology_id("pause")
        assert tid is not None

        def counted_keys() -> int:
            with LOCK:
                return sum(n for (gen, _), n in MARKS.get("keys", {}).items() if gen == 4)

        wait_until(lambda: counted_keys() >= keys, 900, interval=0.5, what=f"{keys} keys counted")
        done = time.monotonic()
        wait_until(lambda: MARKS.get("commit", 0.0) > done, 60, interval=0.01, what="a commit covering every key")
        last = cluster.get_topology_summary("pause")["lastCheckpoint"]
        t0 = time.monotonic()
        last_commit = MARKS["commit"]
        cluster.rebalance("pause", wait_secs=0, tasks={"count": 8})
        wait_until(lambda: len(MARKS.get("first-8", {})) >= 1, 600, interval=0.01, what="a new task counting")
        wait_until(lambda: len(MARKS.get("init-8", {})) >= 8, 600, interval=0.01, what="every new task restored")
        moves = [m for m in MARKS.get("moves", []) if m[1] >= t0]
        ends = {i: end for i, _, end, _, _ in moves}
        prepared = sorted(MARKS["prepared-8"].values())
        rebalanced = MARKS["rebalanced"]
        result = {
            "keys": keys, "provider": provider,
            "checkpoint_s": round(rebalanced - t0, 3),
            "txid_before": None if last is None else last["txid"],
            "restored_txid": min(MARKS["restored-8"].values()),
            "checkpoint_age_s": round(t0 - last_commit, 3),
            "worker_start_s": round(prepared[-1] - rebalanced, 3),
            "move_longest_s": round(max(end - start for _, start, end, _, _ in moves), 3),
            "move_sum_s": round(sum(end - start for _, start, end, _, _ in moves), 3),
            "move_cpu_sum_s": round(sum(m[4] for m in moves), 3),
            "moved_entries": sum(m[3] for m in moves),
            "restore_longest_s": round(max(t - ends.get(i, t) for i, t in MARKS["init-8"].items()), 3),
            "pause_s": round(min(MARKS["first-8"].values()) - t0, 3),
            "all_restored_s": round(max(MARKS["init-8"].values()) - t0, 3),
        }
        cluster.kill_topology("pause", wait_secs=0)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="100000,1000000")
    parser.add_argument("--provider", choices=("memory", "redis"), default="memory")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    _timed_settle()
    redis = None
    port = None
    scratch = tempfile.TemporaryDirectory(prefix="rescale-bench-")
    if args.provider == "redis":
        from storm_py.dev.redis import RedisServerProcess

        redis = RedisServerProcess(Path(scratch.name))
        redis.start()
        port = redis.port
    try:
        for n in (int(k) for k in args.keys.split(",")):
            result = run(n, args.provider, port)
            print(json.dumps(result))
            if args.json:
                with open(args.json, "a", encoding="utf-8") as out:
                    out.write(json.dumps(result) + "\n")
    finally:
        if redis is not None:
            redis.stop()
        scratch.cleanup()


if __name__ == "__main__":
    main()
