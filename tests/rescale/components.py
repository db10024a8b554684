"""Components of the rescale tests: a gated position spout (StatefulSpout) and a keyed word counter that records
what each of its tasks was prepared with and what it saw first; what they see is kept in :data:`RUNS`."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from storm_py import BaseStatefulBolt, Bolt, StatefulSpout, TopologyBuilder


@dataclass
class Run:
    """What one test's components saw."""

    go_until: int = 0  # the spout emits up to this position
    emitted: int = 0
    held_at: int | None = None  # what the spout had emitted when it was first deactivated (held)
    spout_restored: list[int] = field(default_factory=list)  # per ``init_state`` of the spout: its position
    #: per prepare of a counter task: (task id, index, the component's tasks listed by its context)
    prepared: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    #: per counter task id, what happened first after its last prepare ("init" or "execute")
    first: dict[int, str] = field(default_factory=dict)
    topology_id: str = ""
    #: per (the component's task count, task index): the committed txid of the state its ``init_state`` got
    restored: dict[tuple[int, int], int] = field(default_factory=dict)
    #: cleared: a counter task's ``execute`` waits until it is set again (a stalled topology)
    flowing: threading.Event = field(default_factory=threading.Event)
    stalled: bool = False  # a counter task waited for ``flowing``
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.flowing.set()


RUNS: dict[str, Run] = {}


def new_run(name: str) -> Run:
    RUNS[name] = run = Run()
    return run


class GatedPositionSpout(StatefulSpout):
    """Emits ``words`` in order from a position kept in its state, up to the run's ``go_until``."""

    def __init__(self, run: str, words: list[str]) -> None:
        self.run = run
        self.words = words

    def open(self, conf, context, collector):
        self.collector = collector
        self.pos = 0

    def init_state(self, state):
        self.state = state
        self.pos = state.get("pos", 0)
        RUNS[self.run].spout_restored.append(self.pos)

    def pre_prepare(self, txid):
        self.state.put("pos", self.pos)

    def next_tuple(self):
        run = RUNS[self.run]
        if self.pos < min(len(self.words), run.go_until):
            self.collector.emit([self.words[self.pos]])
            self.pos += 1
            run.emitted += 1

    def deactivate(self):
        run = RUNS[self.run]
        if run.held_at is None:
            run.held_at = run.emitted

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class PassBolt(Bolt):
    """Passes each word on, anchored."""

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.collector.emit([tup.values[0]], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


class KeyedCount(BaseStatefulBolt):
    """The count of each word in the state (keyed by the grouping value)."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        self.index = context.this_task_index
        self.tasks = len(context.get_component_tasks("count"))
        run = RUNS[self.run]
        with run.lock:
            run.topology_id = context.topology_id
            run.prepared.append((self.task, context.this_task_index, tuple(context.get_component_tasks("count"))))
            run.first.pop(self.task, None)

    def init_state(self, state):
        self.state = state
        run = RUNS[self.run]
        with run.lock:
            run.first.setdefault(self.task, "init")
            run.restored.setdefault((self.tasks, self.index), state.committed_txid())

    def execute(self, tup):
        run = RUNS[self.run]
        if not run.flowing.is_set():
            run.stalled = True
            run.flowing.wait(120)
        with run.lock:
            run.first.setdefault(self.task, "execute")
        word = tup.values[0]
        self.state.put(word, self.state.get(word, 0) + 1)
        self.collector.emit([word], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["word"])


def keyed_count_topology(run: str, words: list[str], counters: int) -> Any:
    """words (stateful spout) -> split (shuffle) -> count (fields on word, keyed state) -> sink."""
    builder = TopologyBuilder()
    builder.set_spout("words", GatedPositionSpout(run, words))
    builder.set_bolt("split", PassBolt(), 2).shuffle_grouping("words")
    builder.set_bolt("count", KeyedCount(run), counters).fields_grouping("split", ["word"])
    builder.set_bolt("sink", PassBolt()).shuffle_grouping("count")
    return builder.create_topology()


def words(distinct: int, total: int) -> list[str]:
    return [f"w{(i * 7919) % distinct}" for i in range(total)]


def truth(ws: list[str]) -> Counter[str]:
    return Counter(ws)
