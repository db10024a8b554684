"""Load-aware shuffle in LocalCluster: a slow task of four gets a small share, and none when it is switched off."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until

COUNTS: collections.Counter[int] = collections.Counter()
LOCK = threading.Lock()


class Numbers(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Work(Bolt):
    """Counts what its task receives; the task of index 0 sleeps 5 ms per tuple."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.task = context.get_this_task_id()
        self.slow = context.get_this_task_index() == 0

    def execute(self, tup: Any) -> None:
        if self.slow:
            time.sleep(0.005)
        with LOCK:
            COUNTS[self.task] += 1

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def received(load_aware: bool, grouping: str, enough: int = 3000) -> tuple[int, int]:
    """What the slow task and the least served fast task received until one of them got ``enough`` more."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), 1)
    getattr(builder.set_bolt("work", Work(), 4), grouping)("numbers")
    conf = {"topology.workers": 1, "topology.acker.executors": 0, "topology.executor.receive.buffer.size": 1000,
            "topology.disable.loadaware.messaging": not load_aware}
    with LocalCluster() as cluster:
        cluster.submit_topology("slow-task", conf, builder.create_topology())
        wait_until(lambda: len(COUNTS) == 4, 30, interval=0.05, what="every task to receive tuples")
        wait_until(lambda: sorted(COUNTS.values())[1] >= 200, 60, interval=0.05, what="a warm-up")
        with LOCK:
            before = dict(COUNTS)
        slow = min(before)  # the task of index 0 has the lowest id

        def fast_got() -> int:
            with LOCK:
                return min(COUNTS[t] - before[t] for t in before if t != slow)

        wait_until(lambda: fast_got() >= enough or COUNTS[slow] - before[slow] >= enough, 90, interval=0.05,
                   what=f"{enough} tuples more")
        with LOCK:
            got = {t: COUNTS[t] - before[t] for t in before}
        cluster.kill_topology("slow-task", 0)
    COUNTS.clear()
    return got[slow], min(v for t, v in got.items() if t != slow)


def test_a_slow_task_gets_at_most_half_of_a_fast_tasks_share() -> None:
    slow, fast = received(True, "shuffle_grouping")
    assert slow <= fast / 2, (slow, fast)


def test_local_or_shuffle_is_load_aware_too() -> None:
    slow, fast = received(True, "local_or_shuffle_grouping")
    assert slow <= fast / 2, (slow, fast)


def test_switched_off_it_is_round_robin() -> None:
    slow, fast = received(False, "shuffle_grouping", enough=400)
    assert abs(slow - fast) <= 50, (slow, fast)
