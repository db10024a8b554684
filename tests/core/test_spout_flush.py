"""A spout's emits leave its step within ``topology.batch.flush.interval.millis``; latency counts from the emit."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.spout_executor import SPOUT_CALLS_PER_PASS, SpoutExecutor
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.testing.registry import Shared


class Calls(Shared):
    def __init__(self) -> None:
        self.next_tuple = 0
        self.executed = 0


class WaitingSpout(Spout):
    """Waits ``wait`` seconds of the (simulated) clock for a record in every call, then emits it."""

    def __init__(self, clock: SimulatedClock, calls: Calls, wait: float) -> None:
        self.clock = clock
        self.calls = calls
        self.wait = wait

    def __deepcopy__(self, memo: dict[int, Any]) -> WaitingSpout:
        return self  # shares the clock and the counters with the test

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        self.calls.next_tuple += 1
        self.clock.advance(self.wait)
        self.collector.emit([self.calls.next_tuple], self.calls.next_tuple)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class CountingBolt(BasicBolt):
    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def execute(self, tup: Any, collector: Any) -> None:
        self.calls.executed += 1


def runtime(flush_ms: float, wait: float) -> tuple[WorkerRuntime, SimulatedClock, Calls]:
    clock = SimulatedClock()
    calls = Calls()
    conf = defaults()
    conf.update({"topology.batch.flush.interval.millis": flush_ms, "topology.acker.executors": 1})
    b = TopologyBuilder()
    b.set_spout("spout", WaitingSpout(clock, calls, wait))
    b.set_bolt("bolt", CountingBolt(calls)).shuffle_grouping("spout")
    topology = system_topology(b.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    rt = WorkerRuntime(
        topology_id="t", topology_name="t", topology=topology, conf=conf, layout=layout, executors=executors,
        task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)}, worker_id="w", clock=clock,
    )
    rt.prepare()
    rt.set_active(True)
    return rt, clock, calls


def test_a_waiting_spout_gets_one_call_per_pass_and_its_tuple_is_processed_in_that_pass() -> None:
    rt, clock, calls = runtime(flush_ms=1, wait=0.010)
    rt.run_once(clock.now())
    assert calls.next_tuple == 1  # the step ended once the flush interval had passed
    assert calls.executed == 1  # and the tuple went on down the topology in the same pass


def test_without_a_flush_interval_a_step_makes_its_full_number_of_calls() -> None:
    rt, clock, calls = runtime(flush_ms=0, wait=0.010)
    rt.run_once(clock.now())
    assert calls.next_tuple == SPOUT_CALLS_PER_PASS


def test_a_fast_spout_is_not_cut_short() -> None:
    rt, clock, calls = runtime(flush_ms=1, wait=0.0)
    rt.run_once(clock.now())
    assert calls.next_tuple == SPOUT_CALLS_PER_PASS


def test_complete_latency_counts_from_the_emit_not_from_the_start_of_the_step() -> None:
    rt, clock, _ = runtime(flush_ms=1, wait=0.010)
    rt.run_once(clock.now())  # emit at 10 ms (after the wait); bolt and acker done in this pass
    rt.set_active(False)
    rt.run_once(clock.now())  # the spout takes the acker's answer
    (spout,) = [ex for ex in rt.executors if isinstance(ex, SpoutExecutor)]
    assert spout.stats.acked == 1
    assert spout.stats.lat_samples == [0.0]  # no time passed between the emit and the ack


class EmitOnAckSpout(WaitingSpout):
    """Emits one tuple per call and one more from ``ack`` of the first (a spout may emit from its callbacks)."""

    def ack(self, msg_id: Any) -> None:
        if msg_id == 1:
            self.collector.emit([-1], -1)


def emit_on_ack_runtime() -> tuple[WorkerRuntime, SimulatedClock, SpoutExecutor]:
    """A runtime whose spout waits 10 ms per call and emits from ``ack`` too (flush interval 1 ms)."""
    rt, clock, calls = runtime(flush_ms=1, wait=0.010)
    (spout,) = [ex for ex in rt.executors if isinstance(ex, SpoutExecutor)]
    spout.spouts = {t: EmitOnAckSpout(clock, calls, 0.010) for t in spout.spouts}
    for t, s in spout.spouts.items():
        s.open({}, None, spout.collectors[t])
    return rt, clock, spout


def test_emits_from_ack_and_from_next_tuple_count_latency_from_their_own_time() -> None:
    rt, clock, spout = emit_on_ack_runtime()
    clock.advance(1000.0)  # a stamp left at zero would read as 1,000 s of latency
    rt.run_once(clock.now())  # emit 1 at 1,000.01 s; bolt and acker done in this pass
    rt.set_active(False)
    rt.run_once(clock.now())  # ack 1: the spout emits -1 from ack; bolt and acker done in this pass
    clock.advance(0.5)
    rt.run_once(clock.now())  # ack -1, half a second after its emit
    assert spout.stats.acked == 2
    assert spout.stats.lat_samples == [0.0, 500.0]


def test_an_emit_from_ack_keeps_its_time_when_next_tuple_emits_later_in_the_same_step() -> None:
    rt, clock, spout = emit_on_ack_runtime()
    clock.advance(1000.0)
    rt.run_once(clock.now())  # emit 1 at 1,000.01 s; bolt and acker done in this pass
    rt.run_once(clock.now())  # ack 1 emits -1 at 1,000.01 s, then next_tuple waits and emits 2 at 1,000.02 s
    rt.set_active(False)
    rt.run_once(clock.now())  # acks of -1 and 2 at 1,000.02 s
    assert spout.stats.acked == 3
    assert sorted(spout.stats.lat_samples) == pytest.approx([0.0, 0.0, 10.0])
