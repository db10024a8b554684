"""A worker's spouts wait after an assignment change until no slot runs the previous layout (the pure gate), and a
spout task's inbox row it cannot read is dropped, counted and logged instead of crashing its executor."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.acker import ACKED
from storm_py.runtime.spout_executor import SpoutExecutor
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.worker.activation import ActivationGate, Beat, beat_of, stale_slots

A, B, C = ("n1", 6700), ("n1", 6701), ("n2", 6700)
SLOTS = {A: [(1, 2)], B: [(3, 4)], C: [(5, 6)]}
COUNTS = {"count": 4, "words": 1}


def test_a_slot_is_stale_while_its_heartbeat_shows_other_executors_or_other_task_counts() -> None:
    beats = {B: Beat(((3, 3),), COUNTS), C: Beat(((5, 6),), {"count": 2, "words": 1})}
    assert stale_slots(SLOTS, COUNTS, beats, own=A) == [B, C]
    beats = {A: Beat((), None), B: Beat(((3, 4),), COUNTS), C: Beat(((5, 6),), dict(COUNTS))}
    assert stale_slots(SLOTS, COUNTS, beats, own=A) == []  # its own slot is never waited for


def test_a_slot_without_a_heartbeat_is_not_waited_for() -> None:
    assert stale_slots(SLOTS, COUNTS, {}, own=A) == []  # nothing runs there: what is sent waits for its bind


def test_a_heartbeat_is_read_with_its_layout() -> None:
    assert beat_of([[5, 6], [3, 4]], {"layout": {"count": 4}}) == Beat(((3, 4), (5, 6)), {"count": 4})
    assert beat_of([[1, 1]], {}) == Beat(((1, 1),), None)
    assert beat_of([[1, 1]], {"layout": {"count": "many"}}) == Beat(((1, 1),), None)  # waited for, no crash
    assert beat_of([[1, 1]], {"layout": {"count": [4]}}) == Beat(((1, 1),), None)


def test_the_gate_opens_once_no_slot_is_stale_and_stays_open_for_that_assignment() -> None:
    gate = ActivationGate(max_wait=30.0)
    assert not gate.decide("v1", [B], now=100.0).open
    assert not gate.is_open("v1")
    assert gate.decide("v1", [], now=101.0).open
    assert gate.is_open("v1")
    assert gate.decide("v1", [B], now=102.0).open  # latched: a peer restarting later does not pause the spouts
    assert not gate.decide("v2", [C], now=103.0).open  # a new assignment closes it again
    assert not gate.is_open("v2")


def test_the_gate_opens_after_its_longest_wait_although_a_slot_stays_stale() -> None:
    gate = ActivationGate(max_wait=30.0)
    assert not gate.decide("v1", [B], now=10.0).open
    assert not gate.decide("v1", [B], now=39.9).open
    decision = gate.decide("v1", [B], now=40.0)
    assert decision.open and decision.timed_out


class Spouting(Spout):
    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.acked: list[Any] = []
        self.sent = 0

    def next_tuple(self) -> None:
        if self.sent < 1:
            self.sent += 1
            self.collector.emit(["x"], "m1")

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["w"])


class Quiet(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass


def test_a_row_a_spout_cannot_read_is_dropped_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = SimulatedClock()
    conf = defaults()
    conf.update({"topology.acker.executors": 1})
    b = TopologyBuilder()
    b.set_spout("spout", Spouting())
    b.set_bolt("bolt", Quiet()).shuffle_grouping("spout")
    topology = system_topology(b.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    rt = WorkerRuntime(
        topology_id="t", topology_name="t", topology=topology, conf=conf, layout=layout, executors=executors,
        task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)}, worker_id="w", clock=clock,
    )
    rt.prepare()
    rt.set_active(True)
    rt.run_once(clock.now())
    ex = next(e for e in rt.executors if isinstance(e, SpoutExecutor))
    task = ex.task_ids[0]
    root = next(iter(ex.pending.buckets()[0]), None) or next(iter(ex.pending.buckets()[1]))
    bad = [(1, 2, 3, 4), ("not a row",), 7]
    with caplog.at_level(logging.WARNING, logger="storm_py.runtime.spout_executor"):
        rt.deliver([(task, [*bad, (ACKED, root, 0)])])
        rt.run_once(clock.now())
    assert ex.bad_rows == len(bad)
    assert sum(f"task {task} dropped a row" in r.getMessage() for r in caplog.records) == len(bad)
    assert ex.spouts[task].acked == ["m1"]  # the readable row after them still completes its tree
