"""A bolt executor's step runs its inbox for at most ``STEP_SECS`` (checked between batches): a slow bolt with a
long inbox hands the loop back, so the worker's other executors and the pass count its liveness is judged by go
on, and the rest of the inbox runs in the next passes."""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.bolt_executor import STEP_SECS, BoltExecutor
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.testing.registry import Shared

#: the (simulated) seconds the slow bolt takes a tuple
TUPLE_SECS = 0.02


class Executed(Shared):
    def __init__(self) -> None:
        self.n = 0


class IdleSpout(Spout):
    def next_tuple(self) -> None:
        return

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class SlowBolt(BasicBolt):
    """Takes ``secs`` of the simulated clock for every tuple."""

    def __init__(self, clock: SimulatedClock, executed: Executed, secs: float) -> None:
        self.clock = clock
        self.executed = executed
        self.secs = secs

    def __deepcopy__(self, memo: dict[int, Any]) -> SlowBolt:
        return self  # shares the clock and the count with the test

    def execute(self, tup: Any, collector: Any) -> None:
        self.clock.advance(self.secs)
        self.executed.n += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


def bolt_taking(secs: float) -> tuple[BoltExecutor, SimulatedClock, Executed]:
    clock = SimulatedClock()
    executed = Executed()
    conf = defaults()
    conf["topology.acker.executors"] = 0
    b = TopologyBuilder()
    b.set_spout("spout", IdleSpout())
    b.set_bolt("bolt", SlowBolt(clock, executed, secs)).shuffle_grouping("spout")
    topology = system_topology(b.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    rt = WorkerRuntime(
        topology_id="t", topology_name="t", topology=topology, conf=conf, layout=layout, executors=executors,
        task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)}, worker_id="w", clock=clock,
    )
    rt.prepare()
    (ex,) = [e for e in rt.executors if isinstance(e, BoltExecutor) and e.component_id == "bolt"]
    return ex, clock, executed


def batch(size: int) -> list[Tuple]:
    return [Tuple([i], Fields(["n"]), "spout", "default", 1, None) for i in range(size)]


def test_a_step_leaves_the_inbox_after_its_time_and_the_next_steps_run_the_rest() -> None:
    ex, clock, executed = bolt_taking(TUPLE_SECS)
    (task,) = ex.task_ids
    per_batch = 2  # 0.04 s a batch: the step's time is over after the third
    batches = 10
    for _ in range(batches):
        ex.inbox.append((task, batch(per_batch)))
    ex.rt.backlog += batches * per_batch
    assert ex.step(clock.now())
    ran = executed.n
    assert ran == per_batch * (int(STEP_SECS / (per_batch * TUPLE_SECS)) + 1)
    assert len(ex.inbox) == batches - ran // per_batch  # the rest waits, in order
    assert ex.inbox[0][1][0].values == [0]
    passes = 1
    while ex.inbox:
        assert ex.step(clock.now())
        passes += 1
    assert executed.n == batches * per_batch  # nothing lost
    assert passes == -(-batches * per_batch // ran)
    assert ex.stats.executed == batches * per_batch
    assert ex.rt.backlog == 0


def test_a_fast_bolt_runs_its_whole_inbox_in_one_step() -> None:
    ex, clock, executed = bolt_taking(STEP_SECS / 1000)
    (task,) = ex.task_ids
    for _ in range(50):
        ex.inbox.append((task, batch(2)))
    ex.rt.backlog += 100
    assert ex.step(clock.now())
    assert executed.n == 100
    assert not ex.inbox
