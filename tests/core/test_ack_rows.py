"""A bolt executor's ack rows: consecutive acks of one tree merge into one row, XORs kept exact."""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt, Spout, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.acker import ACK
from storm_py.runtime.bolt_executor import BoltExecutor
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime


class IdleSpout(Spout):
    def next_tuple(self) -> None:
        return

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        return


def bolt_executor() -> BoltExecutor:
    conf = defaults()
    conf["topology.acker.executors"] = 1
    b = TopologyBuilder()
    b.set_spout("spout", IdleSpout())
    b.set_bolt("bolt", Sink()).shuffle_grouping("spout")
    topology = system_topology(b.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    rt = WorkerRuntime(
        topology_id="t", topology_name="t", topology=topology, conf=conf, layout=layout, executors=executors,
        task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)}, worker_id="w",
        clock=SimulatedClock(),
    )
    rt.prepare()
    (ex,) = [e for e in rt.executors if isinstance(e, BoltExecutor) and e.component_id == "bolt"]
    return ex


def rows(ex: BoltExecutor) -> list[tuple[Any, ...]]:
    return [row for batch in ex.outbuf.values() for row in batch]


def test_consecutive_acks_of_one_root_are_one_row_and_equal_roots_merge_like_identical_ones() -> None:
    ex = bolt_executor()
    a, b = 2**61 + 12345, 2**60 + 777
    same_a = int(str(a))  # equal, another object: a root decoded from a frame
    assert same_a is not a
    ex.ack_root(a, 0b0001)
    ex.ack_root(same_a, 0b0010)
    ex.ack_root(a, 0b0100)
    assert rows(ex) == []  # nothing sent while the run goes on
    ex.ack_root(b, 0b1000)
    assert rows(ex) == [(ACK, a, 0b0111)]
    ex.ack_root(a, 0b10000)  # the same tree again after another: a row of its own (its XOR still adds up)
    ex.step(0.0)  # the step's end sends what is left
    assert rows(ex) == [(ACK, a, 0b0111), (ACK, b, 0b1000), (ACK, a, 0b10000)]
    assert ex.last_root is None
