"""A bolt executor's ack rows: consecutive acks of one tree merge into one row, XORs kept exact; a holding
collector's acks go out per tree when released."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from storm_py import BasicBolt, FailedException, Spout, TopologyBuilder, build
from storm_py.api.hooks import BaseTaskHook, BoltAckInfo
from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.acker import ACK, FAIL
from storm_py.runtime.bolt_collectors import HeldAcks, HoldingCollector
from storm_py.runtime.bolt_executor import RELEASED_ROWS_PER_STEP, BoltExecutor
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

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


def bolt_executor(ackers: int = 1) -> BoltExecutor:
    conf = defaults()
    conf["topology.acker.executors"] = ackers
    b = TopologyBuilder()
    b.set_spout("spout", IdleSpout())
    b.set_bolt("bolt", Sink()).shuffle_grouping("spout")
    b.set_bolt("sink", Sink()).shuffle_grouping("bolt")
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


def ack_rows(ex: BoltExecutor) -> list[tuple[Any, ...]]:
    return [row for row in rows(ex) if type(row) is tuple and row[0] == ACK]


def test_consecutive_acks_of_one_root_are_one_row_and_equal_roots_merge_like_identical_ones() -> None:
    ex = bolt_executor()
    a, b = 2**61 + 12345, 2**60 + 777
    same_a = int(str(a))  # equal, another object: a root decoded from a frame
    assert same_a is not a
    ex.acks.add(a, 0b0001)
    ex.acks.add(same_a, 0b0010)
    ex.acks.add(a, 0b0100)
    assert rows(ex) == []  # nothing sent while the run goes on
    ex.acks.add(b, 0b1000)
    assert rows(ex) == [(ACK, a, 0b0111)]
    ex.acks.add(a, 0b10000)  # the same tree again after another: a row of its own (its XOR still adds up)
    ex.step(0.0)  # the step's end sends what is left
    assert rows(ex) == [(ACK, a, 0b0111), (ACK, b, 0b1000), (ACK, a, 0b10000)]
    assert ex.acks.run_root is None


def test_a_holding_collector_sends_nothing_until_release_then_a_row_per_run_of_a_tree() -> None:
    ex = bolt_executor()
    task = next(iter(ex.collectors))
    plain, holding = ex.collectors[task], HoldingCollector(ex.collectors[task])
    r1, r2 = 2**62 + 5, 7
    inputs = [Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, edge)
              for root, edge in ((r1, 0b1), (r2, 0b10), (r1, 0b100), (r1, 0b1000))]
    holding.emit(["x"], inputs[0])  # an anchored emit XORs a fresh edge into the input's ack value
    for tup in inputs:
        holding.ack(tup)
    ex.step(0.0)
    assert ack_rows(ex) == [] and ex.stats.acked == 0  # held: nothing to the ackers, nothing counted
    held = holding.take_held()
    assert len(held) == 4 and len(holding.take_held()) == 0
    holding.release(held)
    ex.step(0.0)
    assert [row[1] for row in ack_rows(ex)] == [r1, r2, r1] and ex.stats.acked == 4  # the last two: one row
    sent: dict[int, int] = {}
    for _, root, val in ack_rows(ex):
        sent[root] = sent.get(root, 0) ^ val
    ex.outbuf.clear()
    for tup in inputs:  # what acking each input at once sends, merged per tree
        plain.ack(tup)
    ex.step(0.0)
    once: dict[int, int] = {}
    for _, root, val in ack_rows(ex):
        once[root] = once.get(root, 0) ^ val
    assert sent == once


def test_a_holding_collector_fails_held_trees_and_refuses_unanchored_emits() -> None:
    ex = bolt_executor()
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    root = 2**61 + 3
    holding.ack(Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, 0b1))
    holding.fail_held(holding.take_held())
    ex.step(0.0)
    assert rows(ex) == [(FAIL, root)] and ex.stats.failed == 1
    with pytest.raises(ValueError, match="stateful bolt 'bolt' emitted to stream 'default' without anchors"):
        holding.emit(["x"])


def test_held_acks_merge_keeps_every_row_and_count() -> None:
    ex = bolt_executor()
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    r1, r2 = 11, 2**61 + 1
    holding.ack(Tuple(["a"], Fields(["n"]), "spout", "default", 1, None, r1, 0b1))
    first = holding.take_held()
    holding.ack(Tuple(["b"], Fields(["n"]), "spout", "default", 1, None, r1, 0b10))
    holding.ack(Tuple(["c"], Fields(["n"]), "spout", "default", 1, None, r2, 0b100))
    first.merge(holding.take_held())
    assert len(first) == 3
    holding.release(first)
    ex.step(0.0)
    assert ack_rows(ex) == [(ACK, r1, 0b11), (ACK, r2, 0b100)] and ex.stats.acked == 3


def test_a_large_release_goes_out_a_bounded_number_of_rows_a_step_until_every_row_is_sent() -> None:
    """A commit releases a checkpoint interval of held acks: their rows leave over several steps, each step
    sending at most ``RELEASED_ROWS_PER_STEP`` of them, and the steps report work until the last one is out."""
    ex = bolt_executor()
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    trees = 2 * RELEASED_ROWS_PER_STEP + 5
    for root in range(1000, 1000 + trees):
        holding.ack(Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, root * 3))
    first = holding.take_held()
    holding.ack(Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, 7, 0b1))  # a second release behind it
    holding.release(first)
    holding.release(holding.take_held())
    assert ex.stats.acked == trees + 1  # counted when released
    sent: list[tuple[Any, ...]] = []
    steps = 0
    while True:
        did = ex.step(0.0)
        batch = ack_rows(ex)
        ex.outbuf.clear()
        if not batch:
            assert not did  # nothing left: the step reports no work
            break
        assert did and len(batch) <= RELEASED_ROWS_PER_STEP
        sent.extend(batch)
        steps += 1
    assert steps == 3
    assert sent == [(ACK, root, root * 3) for root in range(1000, 1000 + trees)] + [(ACK, 7, 0b1)]


def test_released_rows_follow_the_steps_open_run_and_go_to_each_roots_acker() -> None:
    """Released rows go straight into the out-buffer of their root's acker, after the run of acks the step had
    open (a row per held run, never merged with that run)."""
    ex = bolt_executor(ackers=2)
    ackers = ex.acker_tasks
    assert len(ackers) == 2
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    held_roots = [2**61 + 1, 2**61 + 2, 2**61 + 3]
    for i, root in enumerate(held_roots):
        holding.ack(Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, 1 << i))
    holding.release(holding.take_held())
    ex.acks.add(held_roots[0], 0b1000)  # the step's own open run, of a tree a released row also belongs to
    ex.step(0.0)
    for task in ackers:
        expected = [(ACK, held_roots[0], 0b1000)] if task == ackers[held_roots[0] % 2] else []
        expected += [(ACK, root, 1 << i) for i, root in enumerate(held_roots) if ackers[root % 2] == task]
        assert ex.outbuf[task] == expected


def test_only_a_holding_collector_refuses_an_unanchored_emit() -> None:
    ex = bolt_executor()
    plain = next(iter(ex.collectors.values()))
    holding = HoldingCollector(plain)
    assert plain.emit(["x"]) != []  # the plain collector: an unanchored emit goes out
    with pytest.raises(ValueError, match="without anchors"):
        holding.emit(["x"])
    anchor = Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, 2**61 + 9, 0b1)
    assert holding.emit(["x"], anchor) == plain.emit(["y"], anchor)  # anchored: the same targets


def test_a_run_of_held_acks_keeps_each_inputs_edge_and_ack_value() -> None:
    ex = bolt_executor()
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    root = 2**61 + 5
    first = Tuple(["a"], Fields(["n"]), "spout", "default", 1, None, root, 0b1)
    second = Tuple(["b"], Fields(["n"]), "spout", "default", 1, None, root, 0b10)
    holding.emit(["x"], second)  # the second input of the run: its ack value is the edge of what it emitted
    emitted_edge = second._ack_val
    assert emitted_edge != 0
    holding.ack(first)
    holding.ack(second)
    holding.release(holding.take_held())
    ex.step(0.0)
    assert ack_rows(ex) == [(ACK, root, 0b1 ^ 0b10 ^ emitted_edge)]


def test_merging_into_held_acks_without_rows_takes_the_rows_over_uncopied() -> None:
    """A stateful bolt's prepared acks take a checkpoint interval of rows at a PREPARE: the lists themselves,
    not a copy; the acks merged from keep none of them."""
    ex = bolt_executor()
    holding = HoldingCollector(next(iter(ex.collectors.values())))
    r1, r2 = 2**61 + 11, 2**61 + 12
    holding.ack(Tuple(["a"], Fields(["n"]), "spout", "default", 1, None, r1, 0b1))
    holding.ack(Tuple(["b"], Fields(["n"]), "spout", "default", 1, None, r2, 0b10))
    taken = holding.take_held()
    roots, vals = taken.roots, taken.vals
    prepared = HeldAcks()
    prepared.merge(taken)
    assert prepared.roots is roots and prepared.vals is vals  # taken over
    assert prepared.roots == [r1, r2] and prepared.vals == [0b1, 0b10] and len(prepared) == 2
    assert taken.roots == [] and taken.vals == [] and taken.roots is not roots
    holding.ack(Tuple(["c"], Fields(["n"]), "spout", "default", 1, None, r2, 0b100))
    prepared.merge(holding.take_held())  # rows already: appended
    holding.release(prepared)
    ex.step(0.0)
    assert ack_rows(ex) == [(ACK, r1, 0b1), (ACK, r2, 0b10), (ACK, r2, 0b100)] and ex.stats.acked == 3


def inputs_of(*trees: tuple[int, int]) -> list[Tuple]:
    return [Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, edge) for root, edge in trees]


def test_acks_sent_at_once_and_acks_held_then_released_make_the_same_rows() -> None:
    """The executor's acks and a holding collector's held acks are one ack-run type: the same inputs acked
    through either (an input of two trees among them) give the same rows in the same order."""
    trees = ((2**61 + 1, 0b1), (2**61 + 1, 0b10), (5, 0b100), (2**61 + 1, 0b1000), (5, 0b10000))
    multi = Tuple(["m"], Fields(["n"]), "spout", "default", 1, {5: 0b100000, 2**61 + 1: 0b1000000})
    at_once = bolt_executor()
    plain = next(iter(at_once.collectors.values()))
    for tup in [*inputs_of(*trees), multi, *inputs_of((5, 0b10000000))]:
        plain.ack(tup)
    at_once.step(0.0)
    held_ex = bolt_executor()
    holding = HoldingCollector(next(iter(held_ex.collectors.values())))
    for tup in [*inputs_of(*trees), multi, *inputs_of((5, 0b10000000))]:
        holding.ack(tup)
    holding.release(holding.take_held())
    held_ex.step(0.0)
    expected = [(ACK, 2**61 + 1, 0b11), (ACK, 5, 0b100), (ACK, 2**61 + 1, 0b1000), (ACK, 5, 0b10000 ^ 0b100000),
                (ACK, 2**61 + 1, 0b1000000), (ACK, 5, 0b10000000)]
    assert ack_rows(at_once) == expected
    assert ack_rows(held_ex) == expected
    assert at_once.stats.acked == held_ex.stats.acked == 7


def test_a_basic_bolts_acks_go_through_its_collectors_ack() -> None:
    """The basic runner acks each input through the task's collector (the one ack path): counts, the process
    sample an ack takes out, and rows as a rich bolt's acks, consecutive inputs of one tree merged into one row."""
    ex = bolt_executor()
    collector = next(iter(ex.collectors.values()))
    run = ex._basic_runner(Sink(), collector)
    batch = inputs_of((2**61 + 1, 0b1), (2**61 + 1, 0b10), (9, 0b100))
    ex.process_samples[id(batch[1])] = ex.clock.now()
    run(batch)
    ex.step(0.0)
    assert ex.process_samples == {} and ex.stats.process_count == 1 and ex.stats.acked == 3
    assert ack_rows(ex) == [(ACK, 2**61 + 1, 0b11), (ACK, 9, 0b100)]


def test_an_ack_of_one_tree_is_merged_in_the_collectors_one_call_into_its_ack_runs() -> None:
    """The per-ack cost of the pure build is its Python calls: a collector's ``ack`` of an input of one tree makes
    exactly one more, ``AckRuns.ack``, which merges it (a compiled build's native calls are not profiled)."""
    ex = bolt_executor()
    collector = next(iter(ex.collectors.values()))
    first, second = inputs_of((2**61 + 1, 0b1), (2**61 + 1, 0b10))
    collector.ack(first)  # the run is open: the second ack joins it
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        collector.ack(second)
    finally:
        sys.setprofile(None)
    compiled = "storm_py.runtime.bolt_collectors" in build.compiled_modules()
    assert calls == ([] if compiled else ["BoltCollector.ack", "AckRuns.ack"])
    ex.step(0.0)
    assert ack_rows(ex) == [(ACK, 2**61 + 1, 0b11)]


class Picky(BasicBolt):
    """Fails an input of value "bad"; records what it executed in ``log``."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def execute(self, tup: Any, collector: Any) -> None:
        self.log.append(f"execute {tup.values[0]}")
        if tup.values[0] == "bad":
            raise FailedException("bad input")

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


def test_a_basic_bolts_batch_is_acked_in_one_collector_call_after_it_runs() -> None:
    """Without hooks, the basic runner hands a batch's executed inputs to one ``ack_all``: counted once, each
    merged into its tree's run; a failed input is failed, not acked; an input of no tree is counted, no row."""
    ex = bolt_executor()
    collector = next(iter(ex.collectors.values()))
    run = ex._basic_runner(Picky([]), collector)
    r = 2**61 + 1
    batch = [*inputs_of((r, 0b1), (r, 0b10)), Tuple(["bad"], Fields(["n"]), "spout", "default", 1, None, 5, 0b100),
             Tuple(["free"], Fields(["n"]), "spout", "default", 1, None), *inputs_of((9, 0b1000))]
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_qualname.startswith("BoltCollector."):
            calls.append(frame.f_code.co_qualname)

    sys.setprofile(profile)
    try:
        run(batch)
    finally:
        sys.setprofile(None)
    if "storm_py.runtime.bolt_collectors" not in build.compiled_modules():
        assert calls == ["BoltCollector.fail", "BoltCollector.ack_all"]
    ex.step(0.0)
    assert ex.stats.acked == 4 and ex.stats.failed == 1
    assert ack_rows(ex) == [(ACK, r, 0b11), (ACK, 9, 0b1000)]
    assert [row for row in rows(ex) if type(row) is tuple and row[0] == FAIL] == [(FAIL, 5)]


class AckLog(BaseTaskHook):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def bolt_ack(self, info: BoltAckInfo) -> None:
        self.log.append(f"ack {info.tuple.values[0]}")


def test_a_basic_bolt_with_hooks_acks_each_input_before_the_next_one_runs() -> None:
    ex = bolt_executor()
    collector = next(iter(ex.collectors.values()))
    log: list[str] = []
    collector._hooks = [AckLog(log)]
    run = ex._basic_runner(Picky(log), collector)
    run([Tuple([w], Fields(["n"]), "spout", "default", 1, None, 7, 1 << i) for i, w in enumerate("ab")])
    assert log == ["execute a", "ack a", "execute b", "ack b"]
    ex.step(0.0)
    assert ex.stats.acked == 2 and ack_rows(ex) == [(ACK, 7, 0b11)]
