"""Spouts and bolts the managed-state tests share; what they see is kept in :data:`RUNS` (components run in the
test's process under LocalCluster, as private copies per task)."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from storm_py import BaseStatefulBolt, Bolt, Spout, StatefulSpout, TopologyBuilder
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.providers import checkpoint_dir_settings


@dataclass
class Run:
    """What one test's components saw."""

    acked: set[int] = field(default_factory=set)
    failed: int = 0
    hooks: list[tuple[str, Any]] = field(default_factory=list)
    states: dict[int, Any] = field(default_factory=dict)
    raised: set[str] = field(default_factory=set)
    seen_streams: set[str] = field(default_factory=set)
    go: bool = True  # the word spout emits only while it is set
    topology_id: str = ""
    topology_name: str = ""
    conf: dict[str, Any] = field(default_factory=dict)  # the counting bolt's topology conf
    emitted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def hook_names(self) -> list[str]:
        with self.lock:
            return [h for h, _ in self.hooks]


RUNS: dict[str, Run] = {}


def new_run(name: str) -> Run:
    RUNS[name] = run = Run()
    return run


class ReplayingWordSpout(Spout):
    """Emits each word once with its index as message id; a failed word is emitted again."""

    def __init__(self, run: str, words: list[str]) -> None:
        self.run = run
        self.words = words

    def open(self, conf, context, collector):
        self.collector = collector
        self.todo = list(range(len(self.words)))[::-1]

    def next_tuple(self):
        if self.todo and RUNS[self.run].go:
            i = self.todo.pop()
            self.collector.emit([self.words[i]], msg_id=i)

    def ack(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.acked.add(msg_id)

    def fail(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.failed += 1
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class SplitBolt(Bolt):
    """Passes each word on, anchored (a stateless bolt between the spout and the counter)."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        RUNS[self.run].seen_streams.add(tup.source_stream)
        self.collector.emit([tup.values[0]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class CountBolt(BaseStatefulBolt):
    """Storm's stateful word count: the count of each word in the state, emitted anchored as ``[word, count]``.

    ``raise_on`` names words whose first occurrence raises in ``execute`` (before counting); ``fail_prepare``
    makes the first ``pre_prepare`` of that txid raise.
    """

    def __init__(self, run: str, raise_on: tuple[str, ...] = (), fail_prepare: int | None = None) -> None:
        self.run = run
        self.raise_on = raise_on
        self.fail_prepare = fail_prepare

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        run = RUNS[self.run]
        run.topology_id, run.topology_name, run.conf = context.topology_id, context.topology_name, dict(conf)

    def init_state(self, state):
        self.state = state
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("init_state", self.task))
            run.states[self.task] = state

    def execute(self, tup):
        run = RUNS[self.run]
        run.seen_streams.add(tup.source_stream)
        word = tup.values[0]
        with run.lock:
            first = word in self.raise_on and word not in run.raised
            run.raised.add(word)
        if first:
            raise RuntimeError(f"boom on {word}")
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self.collector.emit([word, count], tup)
        self.collector.ack(tup)

    def pre_prepare(self, txid):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_prepare", txid))
            if txid == self.fail_prepare and ("failed_prepare", txid) not in run.hooks:
                run.hooks.append(("failed_prepare", txid))
                raise RuntimeError(f"prepare {txid} fails")

    def pre_commit(self, txid):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_commit", txid))

    def pre_rollback(self):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_rollback", None))

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


class SinkBolt(Bolt):
    """Acks everything (below the stateful bolt: checkpoints pass through it too)."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        RUNS[self.run].seen_streams.add(tup.source_stream)
        self.collector.ack(tup)


class PositionSpout(StatefulSpout):
    """Emits ``words`` in order from a position kept in its state (a StatefulSpout); tuples carry no message id."""

    def __init__(self, run: str, words: list[str]) -> None:
        self.run = run
        self.words = words

    def open(self, conf, context, collector):
        self.collector = collector
        self.pos = 0

    def init_state(self, state):
        self.state = state
        self.pos = state.get("pos", 0)
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("spout_init", self.pos))

    def pre_prepare(self, txid):
        self.state.put("pos", self.pos)

    def next_tuple(self):
        if self.pos < len(self.words) and RUNS[self.run].go:
            self.collector.emit([self.words[self.pos]], msg_id=self.pos)
            self.pos += 1
            RUNS[self.run].emitted += 1

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


def word_count_topology(run: str, words: list[str], counters: int = 2, stateful_spout: bool = False,
                        **bolt_args: Any):
    """spout -> split (shuffle) -> count (fields on word, stateful) -> sink."""
    builder = TopologyBuilder()
    spout = PositionSpout(run, words) if stateful_spout else ReplayingWordSpout(run, words)
    builder.set_spout("words", spout)
    builder.set_bolt("split", SplitBolt(run), 2).shuffle_grouping("words")
    builder.set_bolt("count", CountBolt(run, **bolt_args), counters).fields_grouping("split", ["word"])
    builder.set_bolt("sink", SinkBolt(run)).shuffle_grouping("count")
    return builder.create_topology()


def truth(words: list[str]) -> Counter[str]:
    return Counter(words)


def counts(run: Run) -> Counter[str]:
    """The current counts over every counter task's state."""
    out: Counter[str] = Counter()
    with run.lock:
        states = list(run.states.values())
    for state in states:
        for word, n in state:
            out[word] += n
    return out


def committed_counts(run: Run) -> Counter[str]:
    """The committed counts over every counter task, of the in-memory provider or the checkpoint directory."""
    out: Counter[str] = Counter()
    if run.conf.get("topology.state.provider") == "checkpoint_dir":
        settings = checkpoint_dir_settings(run.conf)
        for state in CheckpointDirState.committed_of(settings, run.topology_name, "count").values():
            out.update(state)
        return out
    with run.lock:
        tasks = list(run.states)
    for task in tasks:
        out.update(MEMORY_STORES.store(run.topology_id, f"count-{task}").committed)
    return out
