"""exactly_once's per-tuple paths in one worker driven on a simulated clock: a basic bolt run by the bolt
executor's basic runner through the aligned executor, a rich stateful bolt with the compiled fail-watching
collector, and a stateful spout behind its poll gate emitting untracked; counts stay exact when a basic bolt
raises and when a stateful bolt fails a tuple; and the poll gate's own decisions."""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt, StatefulSpout, TopologyBuilder
from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.runtime.acker import ACK
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.stateful.exactly_once.aligned_bolt import AlignedBasicBolt
from storm_py.stateful.exactly_once.spout_path import PollGate, UntrackedSpoutCollector
from storm_py.stateful.exactly_once.tuple_path import FailWatchingCollector
from tests.core.test_ack_rows import ack_rows, bolt_executor
from tests.stateful.components import RUNS, CountBolt, committed_counts, new_run, truth

SENTENCES = ["apple pear fig", "kiwi plum", "lime apple pear fig kiwi", "plum"] * 25
WORDS = [w for s in SENTENCES for w in s.split()]


class SentenceSpout(StatefulSpout):
    """Emits ``sentences`` in order from a position in its state, each with its index as message id (which the
    exactly_once collector drops), three per 10 ms (so checkpoints fall between them)."""

    def __init__(self, run: str, sentences: list[str]) -> None:
        self.run = run
        self.sentences = sentences

    def open(self, conf, context, collector):
        self.collector = collector
        self.clock = context.clock
        self.pos = 0
        RUNS[self.run].hooks.append(("spout_collector", collector))

    def init_state(self, state):
        self.state = state
        self.pos = state.get("pos", 0)
        RUNS[self.run].hooks.append(("spout_init", self.pos))

    def pre_prepare(self, txid):
        self.state.put("pos", self.pos)

    def next_tuple(self):
        if self.pos < min(len(self.sentences), 3 * (1 + int(self.clock.now() * 100))):
            self.collector.emit([self.sentences[self.pos]], self.pos)
            self.pos += 1

    def ack(self, msg_id):
        RUNS[self.run].acked.add(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["sentence"])


class Split(BasicBolt):
    """Splits a sentence into words; raises on the first sentence holding ``raise_on``."""

    def __init__(self, run: str, raise_on: str | None = None) -> None:
        self.run = run
        self.raise_on = raise_on

    def execute(self, tup, collector):
        words = tup.values[0].split()
        run = RUNS[self.run]
        if self.raise_on in words and "split_raised" not in run.raised:
            run.raised.add("split_raised")
            raise RuntimeError("split boom")
        for w in words:
            collector.emit([w])

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class FailingCount(CountBolt):
    """The stateful count; fails (instead of counting) the first tuple of ``fail_on``."""

    def __init__(self, run: str, fail_on: str | None = None) -> None:
        super().__init__(run)
        self.fail_on = fail_on

    def prepare(self, conf, context, collector):
        super().prepare(conf, context, collector)
        RUNS[self.run].hooks.append(("count_collector", collector))

    def execute(self, tup):
        run = RUNS[self.run]
        if tup.values[0] == self.fail_on and "count_failed" not in run.raised:
            run.raised.add("count_failed")
            self.collector.fail(tup)
            return
        super().execute(tup)


class Sink(BasicBolt):
    """Records whether what the count emitted carries a tuple tree."""

    def __init__(self, run: str) -> None:
        self.run = run

    def execute(self, tup, collector):
        RUNS[self.run].hooks.append(("sink", "tree" if tup._root is not None or tup._ids else "no tree"))


def worker(name: str, split: Split, count: FailingCount, spouts: int = 1) -> tuple[WorkerRuntime, SimulatedClock]:
    """One worker of spout -> split (basic) -> count (stateful) -> sink under exactly_once, prepared."""
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(name, SENTENCES), spouts)
    builder.set_bolt("split", split).shuffle_grouping("sentences")
    builder.set_bolt("count", count, 2).fields_grouping("split", ["word"])
    builder.set_bolt("sink", Sink(name)).shuffle_grouping("count")
    conf = defaults()
    conf.update({"topology.acker.executors": 1, "topology.workers": 1, "topology.state.checkpoint.interval.ms": 100,
                 "topology.state.guarantee": "exactly_once"})
    topology = system_topology(builder.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    clock = SimulatedClock()
    rt = WorkerRuntime(topology_id=name, topology_name=name, topology=topology, conf=conf, layout=layout,
                       executors=executors,
                       task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)},
                       worker_id="w", clock=clock)
    rt.prepare()
    rt.set_active(True)
    return rt, clock


def run_until_exact(rt: WorkerRuntime, clock: SimulatedClock, name: str, spouts: int = 1, passes: int = 2000) -> int:
    """Drive the worker until the committed counts equal the truth (every spout task emits every sentence); the
    passes it took."""
    want = truth(WORDS * spouts)
    for n in range(passes):
        rt.run_once(clock.now())
        clock.advance(0.01)
        if n % 10 == 0 and committed_counts(RUNS[name]) == want:
            return n
    raise AssertionError(f"counts not exact after {passes} passes: {committed_counts(RUNS[name])} != {want}")


def executor(rt: WorkerRuntime, component: str) -> Any:
    return next(ex for ex in rt.executors if ex.component_id == component)


def test_each_tuple_takes_the_compiled_paths_and_the_counts_are_exact():
    name = "eo-paths"
    run = new_run(name)
    rt, clock = worker(name, Split(name), FailingCount(name), spouts=2)
    run_until_exact(rt, clock, name, spouts=2)
    split = executor(rt, "split")
    (task,) = split.task_ids
    assert isinstance(split.bolts[task].basic_bolt, AlignedBasicBolt)  # run by the basic runner
    assert split.stats.acked > len(SENTENCES) and split.stats.failed == 0
    collectors = [c for h, c in run.hooks if h == "count_collector"]
    assert collectors and all(type(c) is FailWatchingCollector for c in collectors)
    spout_collectors = [c for h, c in run.hooks if h == "spout_collector"]
    assert len(spout_collectors) == 2 and all(type(c) is UntrackedSpoutCollector for c in spout_collectors)
    assert run.acked == set()  # no data tuple was tracked: the spout's message ids were dropped
    assert len(executor(rt, "sentences").pending) == 0
    # the count's emits, anchored to inputs of no tree, carry none
    assert {t for h, t in run.hooks if h == "sink"} == {"no tree"}
    assert sum(ex.stats.acked for ex in rt.executors if ex.component_id == "count") >= 2 * len(WORDS)
    rt.shutdown()


def test_a_basic_bolt_that_raises_fails_its_input_and_the_checkpoint_rolls_back():
    name = "eo-basic-raises"
    run = new_run(name)
    rt, clock = worker(name, Split(name, raise_on="kiwi"), FailingCount(name))
    run_until_exact(rt, clock, name)
    assert "split_raised" in run.raised
    assert executor(rt, "split").stats.failed >= 1  # the runner failed the input the bolt raised on
    assert [h for h, _ in run.hooks].count("spout_init") >= 2  # restarted from the committed position
    rt.shutdown()


def test_a_stateful_bolt_that_fails_a_tuple_rolls_the_checkpoint_back():
    name = "eo-rich-fails"
    run = new_run(name)
    rt, clock = worker(name, Split(name), FailingCount(name, fail_on="fig"))
    run_until_exact(rt, clock, name)
    assert "count_failed" in run.raised
    assert [h for h, _ in run.hooks].count("spout_init") >= 2
    rt.shutdown()


def test_poll_gate_polls_every_interval_and_calls_the_spout_once_started():
    clock = SimulatedClock()
    polls: list[float] = []
    calls: list[int] = []
    answer = [True]

    def poll(now: float) -> bool:
        polls.append(now)
        gate.next_poll = now + 0.1
        return answer[0]

    gate = PollGate(clock.now, poll)
    gate.next_tuple()
    assert polls == [0.0] and calls == []  # not started: the spout is not called
    gate.spout_next_tuple = lambda: calls.append(1)
    gate.next_tuple()
    assert polls == [0.0] and calls == [1]  # between polls: straight to the spout
    clock.advance(0.1)
    answer[0] = False
    gate.next_tuple()
    assert polls == [0.0, 0.1] and calls == [1]  # a poll that says stop skips this call
    gate.next_tuple()
    assert calls == [1, 1]


class RecordingCollector:
    """An output collector that is not a task's own: what reaches it, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.calls.append(("emit", values, anchors, stream))
        return [4]

    def emit_direct(self, task_id: int, values: Any, anchors: Any = None, stream: str = "default") -> None:
        self.calls.append(("emit_direct", task_id, values, anchors, stream))

    def ack(self, tup: Any) -> None:
        self.calls.append(("ack", tup))

    def fail(self, tup: Any) -> None:
        self.calls.append(("fail", tup))

    def reset_timeout(self, tup: Any) -> None:
        self.calls.append(("reset_timeout", tup))

    def report_error(self, exc: BaseException) -> None:
        self.calls.append(("report_error", exc))


def test_the_fail_watching_collector_over_any_collector_passes_everything_on_and_a_fail_breaks_first():
    inner = RecordingCollector()
    broken: list[int] = []
    watching = FailWatchingCollector(inner, lambda: broken.append(len(inner.calls)))
    anchor, error = Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, 7, 0b1), ValueError("x")
    assert watching.emit(["a"], anchor, "s") == [4]
    watching.emit_direct(3, ["b"], anchor, "d")
    watching.ack(anchor)
    watching.reset_timeout(anchor)
    watching.report_error(error)
    assert broken == []
    watching.fail(anchor)
    assert broken == [5]  # the bolt broke before the fail went on
    assert inner.calls == [("emit", ["a"], anchor, "s"), ("emit_direct", 3, ["b"], anchor, "d"), ("ack", anchor),
                           ("reset_timeout", anchor), ("report_error", error), ("fail", anchor)]


def test_the_fail_watching_collector_over_a_tasks_own_collector_emits_acks_and_fails_through_it():
    ex = bolt_executor()
    own = next(iter(ex.collectors.values()))
    broken: list[bool] = []
    watching = FailWatchingCollector(own, lambda: broken.append(True))
    root = 2**61 + 7
    tup = Tuple(["w"], Fields(["n"]), "spout", "default", 1, None, root, 0b1)
    assert watching.emit(["x"], tup) != [] and tup._ack_val != 0  # anchored through the task's collector
    watching.ack(tup)
    ex.step(0.0)
    assert ack_rows(ex) == [(ACK, root, 0b1 ^ tup._ack_val)] and ex.stats.acked == 1 and broken == []
    watching.fail(tup)
    assert broken == [True] and ex.stats.failed == 1
