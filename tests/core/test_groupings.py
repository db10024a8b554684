"""Groupings by Storm's rules (ports of Storm's grouping tests) and the stable fields hash."""

from __future__ import annotations

import collections
import os
import subprocess
import sys

import pytest

from storm_py import Bolt, CustomStreamGrouping, LocalCluster, TopologyBuilder
from storm_py.api.topology import Grouping
from storm_py.api.tuple import Fields
from storm_py.runtime.groupers import Shuffle, make_grouper, values_hash
from storm_py.testing import TestWordSpout, complete_topology, multiset_eq, read_tuples


class TaskEcho(Bolt):
    """Emits ``[task_id, *values]`` for each input."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id

    def execute(self, tup):
        self.collector.emit([self.task, *tup.values], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["task", "word"])


def run(grouping_call, words, parallelism=4):
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("words", TestWordSpout(), 1)
        grouping_call(builder.set_bolt("echo", TaskEcho(), parallelism))
        results = complete_topology(cluster, builder.create_topology(), mocked_sources={"words": [[w] for w in words]},
                                    storm_conf={"topology.workers": 2})
    return read_tuples(results, "echo")


def test_shuffle_grouping_spreads_evenly():
    """Ports Storm's test-shuffle: each of n tasks gets 1/n of the tuples (round robin over shuffled targets)."""
    rows = run(lambda d: d.shuffle_grouping("words"), [f"w{i}" for i in range(400)])
    per_task = collections.Counter(task for task, _ in rows)
    assert len(per_task) == 4 and set(per_task.values()) == {100}


def test_fields_grouping_same_key_same_task():
    """Ports Storm's test-field: equal values go to one task."""
    words = [f"k{i % 20}" for i in range(400)]
    rows = run(lambda d: d.fields_grouping("words", ["word"]), words)
    tasks_of = collections.defaultdict(set)
    for task, word in rows:
        tasks_of[word].add(task)
    assert all(len(t) == 1 for t in tasks_of.values())
    assert len({next(iter(t)) for t in tasks_of.values()}) > 1


class TaskIds(Bolt):
    """Emits ``[task_id, *component_task_ids]`` of the echo component once, from every task, at prepare."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        self.echo_tasks = context.get_component_tasks("echo")

    def execute(self, tup):
        self.collector.emit([self.task, self.echo_tasks], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["task", "echo_tasks"])


def test_global_grouping_lowest_task():
    """Ports Storm's global grouping: every tuple goes to the lowest task id of the target component."""
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("words", TestWordSpout(), 1)
        builder.set_bolt("echo", TaskEcho(), 4).global_grouping("words")
        builder.set_bolt("tasks", TaskIds(), 1).shuffle_grouping("words")
        results = complete_topology(cluster, builder.create_topology(),
                                    mocked_sources={"words": [[w] for w in "abcd"]},
                                    storm_conf={"topology.workers": 2})
    echo_tasks = read_tuples(results, "tasks")[0][1]
    assert len(echo_tasks) == 4
    rows = read_tuples(results, "echo")
    assert sorted(w for _, w in rows) == ["a", "b", "c", "d"]
    assert {task for task, _ in rows} == {min(echo_tasks)}


def test_all_grouping_every_task():
    """Ports Storm's all grouping: every task gets a copy."""
    rows = run(lambda d: d.all_grouping("words"), ["a", "b"])
    assert multiset_eq([w for _, w in rows], ["a"] * 4 + ["b"] * 4)
    assert len({t for t, _ in rows}) == 4


def test_none_and_local_or_shuffle_deliver_each_once():
    for call in (lambda d: d.none_grouping("words"), lambda d: d.local_or_shuffle_grouping("words")):
        rows = run(call, [f"w{i}" for i in range(50)])
        assert sorted(w for _, w in rows) == sorted(f"w{i}" for i in range(50))


def test_partial_key_grouping_uses_two_tasks_per_key():
    """Ports Storm's PartialKeyGroupingTest: a key alternates between at most two tasks."""
    rows = run(lambda d: d.partial_key_grouping("words", ["word"]), ["hot"] * 100 + ["cold"] * 10)
    hot = collections.Counter(task for task, w in rows if w == "hot")
    assert 1 <= len(hot) <= 2
    assert sum(hot.values()) == 100


class EvenOnly(CustomStreamGrouping):
    def prepare(self, context, stream, target_tasks):
        self.targets = target_tasks

    def choose_tasks(self, task_id, values):
        return [self.targets[0]] if int(values[0][1:]) % 2 == 0 else list(self.targets)


def test_custom_grouping():
    """A custom grouping can pick one task or several."""
    rows = run(lambda d: d.custom_grouping("words", EvenOnly()), ["w0", "w1"], parallelism=3)
    assert multiset_eq([w for _, w in rows], ["w0", "w1", "w1", "w1"])


class DirectSpoutBolt(Bolt):
    """Emits directly to the highest task of 'sink' on its direct stream; tests the direct-stream errors."""

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.sink_tasks = context.get_component_tasks("sink")
        self.errors = []

    def execute(self, tup):
        self.errors = []
        for call in (
            lambda: self.collector.emit(["x"], tup, stream="direct"),
            lambda: self.collector.emit_direct(self.sink_tasks[0], ["x"], tup, stream="default"),
            lambda: self.collector.emit(["x"], tup, stream="nope"),
        ):
            try:
                call()
            except ValueError as err:
                self.errors.append(str(err))
        self.collector.emit_direct(self.sink_tasks[-1], [tup.values[0], len(self.errors)], tup, stream="direct")
        self.collector.emit_direct(99999, ["lost", 0], tup, stream="direct")  # not a subscriber: dropped
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "errors"])
        declarer.declare_stream("direct", ["word", "errors"], direct=True)


def test_direct_streams_and_their_errors():
    """Storm's Task.getOutgoingTasks rules: regular emit on a direct stream and emit_direct on a regular
    stream raise; emit_direct to a task that does not subscribe is dropped; direct grouping delivers."""
    with LocalCluster(simulated_time=True) as cluster:
        builder = TopologyBuilder()
        builder.set_spout("words", TestWordSpout())
        builder.set_bolt("router", DirectSpoutBolt()).shuffle_grouping("words")
        builder.set_bolt("sink", TaskEcho(), 3).direct_grouping("router", "direct")
        results = complete_topology(cluster, builder.create_topology(), mocked_sources={"words": [["a"], ["b"]]})
        sink_tasks = {t for t, _ in (r[:2] for r in read_tuples(results, "sink"))}
        assert len(sink_tasks) == 1
        assert sorted(r[1] for r in read_tuples(results, "sink")) == ["a", "b"]
        assert all(r[2] == 3 for r in read_tuples(results, "sink"))


def test_fields_hash_is_stable_across_processes():
    """The fields hash never uses Python's salted hash(): two interpreters with different seeds agree."""
    code = (
        "from storm_py.runtime.groupers import values_hash;"
        "print([values_hash([k]) % 7 for k in ['nathan', 'bob', 42, 3.5, b'x', None, ('a', 1)]])"
    )
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1
    assert outs.pop().strip() == str([values_hash([k]) % 7 for k in ["nathan", "bob", 42, 3.5, b"x", None, ("a", 1)]])


def test_grouper_units():
    import random

    rng = random.Random(1)
    shuffle = Shuffle([3, 1, 2], rng)
    assert sorted(shuffle(0, [])[0] for _ in range(3)) == [1, 2, 3]
    fields = make_grouper(Grouping("fields", Fields("a")), [5, 6, 7], Fields("a", "b"), set(), rng, lambda g, t: None)
    assert fields is not None
    assert fields(0, ["k", 1]) == fields(0, ["k", 2]) == [[5, 6, 7][values_hash(["k"]) % 3]]
    # equal to Python, not to Storm's hash: each key keeps its own target, however often it was seen
    seven = list(range(10, 17))
    by_key = make_grouper(Grouping("fields", Fields("a")), seven, Fields("a", "b"), set(), rng, lambda g, t: None)
    assert by_key is not None
    assert by_key(0, [1, 0]) != by_key(0, [True, 0])
    for key in [1, True, 1.0, "1", 1, True, "1"]:
        assert by_key(0, [key, 0]) == [seven[values_hash([key]) % 7]]
    by_two = make_grouper(
        Grouping("fields", Fields("b", "a")), [5, 6, 7], Fields("a", "b"), set(), rng, lambda g, t: None
    )
    assert by_two is not None and by_two(0, ["x", 2]) == [[5, 6, 7][values_hash([2, "x"]) % 3]]
    with pytest.raises(ValueError):
        make_grouper(Grouping("bogus"), [1], Fields("a"), set(), rng, lambda g, t: None)
