"""A stateful windowed sum in LocalCluster (simulated time, in-memory provider) that survives its bolt raising:
the state is restored to the last checkpoint, the windows evaluated before it are not evaluated again, every
window after it is right and the sum counts every number once; with the window's marks (message id field) and
with a persisted window."""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from storm_py import BaseStatefulWindowedBolt, Count, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until


@dataclass
class SumRun:
    go_until: int = 0  # the spout emits ids up to this one
    acked: set[int] = field(default_factory=set)
    failed: int = 0
    raise_on: int | None = None
    windows: list[list[int]] = field(default_factory=list)
    hooks: list[tuple[str, Any]] = field(default_factory=list)
    state: Any = None
    lock: threading.Lock = field(default_factory=threading.Lock)


RUNS: dict[str, SumRun] = {}


class NumberSpout(Spout):
    """Emits ``[id, id]`` for ids 1.. with the id as message id; failed ids first, smallest first."""

    def __init__(self, run: str) -> None:
        self.run = run

    def open(self, conf, context, collector):
        self.collector = collector
        self.next_id = 1
        self.replay: list[int] = []

    def next_tuple(self):
        run = RUNS[self.run]
        if self.replay and run.go_until:
            i = heapq.heappop(self.replay)
        elif self.next_id <= run.go_until:
            i, self.next_id = self.next_id, self.next_id + 1
        else:
            return
        self.collector.emit([i, i], msg_id=i)

    def ack(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.acked.add(msg_id)

    def fail(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.failed += 1
        heapq.heappush(self.replay, msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["id", "value"])


class WindowSum(BaseStatefulWindowedBolt):
    """Adds the new values of each window to ``total``; raises once on the window holding ``raise_on``."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector

    def init_state(self, state):
        self.state = state
        run = RUNS[self.run]
        with run.lock:
            run.state = state
            run.hooks.append(("init_state", state.get("total", 0)))

    def execute(self, window):
        run = RUNS[self.run]
        ids = [t.values[0] for t in window.get()]
        with run.lock:
            run.windows.append(ids)
            boom = run.raise_on in ids
            if boom:
                run.raise_on = None
        if boom:
            raise RuntimeError(f"window sum broke on {ids}")
        self.state.put("total", self.state.get("total", 0) + sum(t.values[1] for t in window.get_new()))
        self.collector.emit([sum(ids)])

    def pre_commit(self, txid):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_commit", self.state.get("total", 0)))

    def pre_rollback(self):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_rollback", None))

    def declare_output_fields(self, declarer):
        declarer.declare(["sum"])


def ticking(cluster: LocalCluster, predicate, what: str) -> None:
    """Wait for ``predicate`` while the simulated clock moves (checkpoints follow it)."""

    def step() -> bool:
        if predicate():
            return True
        cluster.advance_cluster_time(0.5)
        return predicate()

    wait_until(step, 60, interval=0.02, what=what)


def after_rollback(run: SumRun) -> list[tuple[str, Any]]:
    """The ``init_state`` calls after the last rollback."""
    with run.lock:
        hooks = list(run.hooks)
    if ("pre_rollback", None) not in hooks:
        return []
    last = len(hooks) - 1 - hooks[::-1].index(("pre_rollback", None))
    return [h for h in hooks[last:] if h[0] == "init_state"]


@pytest.mark.parametrize("persistent", [False, True], ids=["marks", "persisted"])
def test_a_stateful_windowed_sum_survives_its_bolt_raising(persistent: bool):
    name = f"winsum-{'p' if persistent else 'm'}"
    RUNS[name] = run = SumRun()
    bolt = WindowSum(name).with_tumbling_window(Count.of(10))
    bolt = bolt.with_persistence().with_max_events_in_memory(4) if persistent else bolt.with_message_id_field("id")
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(name))
    builder.set_bolt("sum", bolt).shuffle_grouping("numbers")
    conf = {"topology.state.checkpoint.interval.ms": 1000, "topology.message.timeout.secs": 600}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology(name, conf, builder.create_topology())
        run.go_until = 100
        ticking(cluster, lambda: len(run.acked) == 90 + 10 * persistent, "the first 100 numbers checkpointed")
        with run.lock:
            committed = run.hooks[-1][1] if run.hooks[-1][0] == "pre_commit" else None
            evaluated = len(run.windows)
        assert committed == sum(range(1, 101))
        assert evaluated == 10
        # the window holding 155 raises: the next checkpoint fails, everything since the last commit is replayed
        run.raise_on = 155
        run.go_until = 200
        wait_until(lambda: len(run.windows) == 20, 30, what="the windows up to 200 evaluated")
        with run.lock:
            run.go_until = 0  # hold the replay until every failure has come back (it then goes in order)
        expected_failed = 100 if persistent else 110  # the window's marks: 91..100 expired after the commit
        ticking(cluster, lambda: run.failed == expected_failed and after_rollback(run), "the rollback's failures")
        with run.lock:
            before_replay = len(run.windows)
            run.go_until = 200
        assert after_rollback(run) == [("init_state", sum(range(1, 101)))]  # the state restored to the last commit
        # the last window's tuples are acked when they expire (marks) or at the next commit (persisted)
        ticking(cluster, lambda: len(run.acked) == 190 + 10 * persistent, "every expired number acked")
        ticking(cluster, lambda: run.state.get("total") == sum(range(1, 201))
                and run.hooks[-1] == ("pre_commit", sum(range(1, 201))), "the sum committed")
        with run.lock:
            replayed = run.windows[before_replay:]
        # [91..100] was evaluated in the committed state: not again; every later window once, right
        assert replayed == [list(range(s, s + 10)) for s in range(101, 201, 10)]
        cluster.kill_topology(name, wait_secs=0)
