"""The stateful word count the elastic tests rebalance: a spout (a position in state under exactly_once, replaying
failed words under at_least_once) that emits up to a limit the test raises, a split bolt and a counting bolt with
more tasks than executors; and readers of what each provider committed."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from storm_py import BaseStatefulWindowedBolt, Count, TopologyBuilder
from storm_py.config import defaults
from storm_py.config.keys import setting
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.providers import checkpoint_dir_settings, provider_config
from storm_py.stateful.state.redis_state import RedisKeyValueState
from tests.stateful.components import RUNS, CountBolt, PositionSpout, ReplayingWordSpout, SinkBolt, SplitBolt

#: how many of its words each run's spout may emit so far
LIMITS: dict[str, int] = {}


class LimitedPositionSpout(PositionSpout):
    def next_tuple(self):
        if self.pos < LIMITS.get(self.run, len(self.words)):
            super().next_tuple()


class LimitedReplayingSpout(ReplayingWordSpout):
    """Resumes after the words acked so far when it opens again (a restart, a rebalance), as a Kafka spout from
    its committed offsets: what was in flight is emitted again."""

    def open(self, conf, context, collector):
        super().open(conf, context, collector)
        run = RUNS[self.run]
        with run.lock:
            self.todo = [i for i in self.todo if i not in run.acked]

    def next_tuple(self):
        if self.todo and self.todo[-1] < LIMITS.get(self.run, len(self.words)) and RUNS[self.run].go:
            super().next_tuple()


def elastic_word_count(run: str, words: list[str], exactly_once: bool, tasks: int = 4, executors: int = 2):
    """words -> split (shuffle) -> count (fields on word, stateful, ``tasks`` tasks on ``executors``) -> sink."""
    builder = TopologyBuilder()
    spout = LimitedPositionSpout(run, words) if exactly_once else LimitedReplayingSpout(run, words)
    builder.set_spout("words", spout)
    builder.set_bolt("split", SplitBolt(run), executors).set_num_tasks(tasks).shuffle_grouping("words")
    builder.set_bolt("count", CountBolt(run), executors).set_num_tasks(tasks).fields_grouping("split", ["word"])
    builder.set_bolt("sink", SinkBolt(run)).shuffle_grouping("count")
    return builder.create_topology()


class WindowedCount(BaseStatefulWindowedBolt):
    """Counts each word of every window's new tuples in the state (a keyed, windowed, stateful bolt)."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id

    def init_state(self, state):
        self.state = state
        run = RUNS[self.run]
        with run.lock:
            run.states[self.task] = state

    def execute(self, window):
        for t in window.get_new():
            word = t.values[0]
            self.state.put(word, self.state.get(word, 0) + 1)

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


def windowed_word_count(run: str, words: list[str], exactly_once: bool, tasks: int = 4, executors: int = 2):
    """words -> count (fields on word, a stateful sliding window of the last 5 tuples, sliding by one, whose tuples
    persist with the state; ``tasks`` tasks on ``executors``)."""
    builder = TopologyBuilder()
    spout = LimitedPositionSpout(run, words) if exactly_once else LimitedReplayingSpout(run, words)
    builder.set_spout("words", spout)
    bolt = WindowedCount(run).with_window(Count.of(5), Count.of(1)).with_persistence()
    builder.set_bolt("count", bolt, executors).set_num_tasks(tasks).fields_grouping("words", ["word"])
    return builder.create_topology()


def committed_states(cluster_conf: dict[str, Any], conf: dict[str, Any], name: str, topology_id: str,
                     component: str) -> dict[int, dict[Any, Any]]:
    """What the topology's provider committed for each task of ``component``."""
    merged = {**defaults(), **{k: v for k, v in cluster_conf.items() if k.startswith("topology.")}, **conf}
    provider = setting(merged, "topology.state.provider")
    if provider == "checkpoint_dir":
        return CheckpointDirState.committed_of(checkpoint_dir_settings(merged), name, component)
    if provider == "redis":
        return RedisKeyValueState.committed_of(component, provider_config(merged))
    assert provider == "memory", provider
    out: dict[int, dict[Any, Any]] = {}
    for task in range(1, 64):
        store = MEMORY_STORES.store(topology_id, f"{component}-{task}")
        if store.committed:
            out[task] = dict(store.committed)
    return out


def committed_counts(states: dict[int, dict[Any, Any]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for state in states.values():
        out.update(state)
    return out


class PacedProducer:
    """Produces ``count`` words to a topic in batches of ``batch``, ``pause`` seconds apart, on a thread; ``truth``
    counts what went in."""

    def __init__(self, broker: Any, topic: str, count: int, partitions: int, batch: int = 250,
                 pause: float = 0.1) -> None:
        self.broker, self.topic, self.count, self.partitions = broker, topic, count, partitions
        self.batch, self.pause = batch, pause
        self.truth: Counter[str] = Counter()
        self.produced = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)

    def start(self) -> PacedProducer:
        self._thread.start()
        return self

    def prime(self, n: int) -> PacedProducer:
        """Produce the first ``n`` words at once (the thread, started later, goes on after them)."""
        self._produce(0, n)
        return self

    def _produce(self, start: int, end: int) -> None:
        items = []
        for j in range(start, end):
            word = f"k{(j * 7 + j // 3) % 53}"
            self.truth[word] += 1
            items.append((j % self.partitions, None, word.encode()))
        self.broker.produce(self.topic, items)
        self.produced = end

    def _run(self) -> None:
        try:
            while self.produced < self.count and not self._stop.is_set():
                self._produce(self.produced, min(self.produced + self.batch, self.count))
                self._stop.wait(self.pause)
        except BaseException as exc:
            self.error = exc

    def join(self, timeout: float) -> Counter[str]:
        """Wait until every word is produced; the truth."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the producer did not finish"
        assert self.error is None, self.error
        return self.truth

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
