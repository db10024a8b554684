"""A stateful async bolt (``class B(AsyncBolt, BaseStatefulBolt)``) in LocalCluster: under exactly_once counts are
exact after an execution raised (every component rolled back, the executions in flight cancelled), because each
checkpoint drains the executions in flight before the state is prepared; under at_least_once every word is
acked after a commit and counted at least once."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from storm_py import AsyncBolt, BaseStatefulBolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from tests.stateful.components import (
    RUNS,
    PositionSpout,
    ReplayingWordSpout,
    SinkBolt,
    SplitBolt,
    committed_counts,
    counts,
    new_run,
    truth,
)

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 400
#: the execution that raises (counted over both tasks), after a few checkpoints committed with executions in flight
RAISE_AT = 1200
EXACTLY_ONCE = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": "exactly_once",
                "topology.async.max.in.flight": 10,
                "topology.state.provider": "memory"}  # committed_counts reads the in-memory stores


class PacedPositionSpout(PositionSpout):
    """The position spout at ``RATE`` words a second, so that checkpoints come between the words, not after them
    all."""

    def open(self, conf, context, collector):
        super().open(conf, context, collector)
        self.started = time.monotonic()
        self.sent = 0

    def next_tuple(self):
        if self.sent < (time.monotonic() - self.started) * RATE:
            self.sent += 1
            super().next_tuple()

    def init_state(self, state):
        super().init_state(state)
        self.started = time.monotonic()
        self.sent = 0


#: words a second (the two count tasks take about 450: ten in flight each, 10 to 30 ms per word)
RATE = 400

#: executions started per run, over every task
EXECUTIONS: Counter[str] = Counter()


class AsyncCountBolt(AsyncBolt, BaseStatefulBolt):
    """The stateful word count, each input awaiting 10 to 30 ms before it counts (so every checkpoint finds
    executions in flight); the ``RAISE_AT``-th execution raises."""

    def __init__(self, run: str) -> None:
        self.run = run

    async def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        self.loop = asyncio.get_running_loop()
        self.active = 0  # executions running now
        RUNS[self.run].topology_id = context.topology_id

    def init_state(self, state):
        self.state = state
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("init_state", self.task))
            run.states[self.task] = state

    async def execute(self, tup):
        assert asyncio.get_running_loop() is self.loop
        word = tup.values[0]
        self.active += 1
        try:
            await asyncio.sleep(0.01 * (1 + len(word) % 3))
        finally:
            self.active -= 1
        run = RUNS[self.run]
        with run.lock:
            EXECUTIONS[self.run] += 1
            boom = EXECUTIONS[self.run] == RAISE_AT
            if boom:
                run.raised.add(word)
        if boom:
            raise RuntimeError(f"boom on {word}")
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self.collector.emit([word, count])

    def pre_prepare(self, txid):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_prepare", self.active))  # the checkpoint drained: nothing runs

    def pre_rollback(self):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_rollback", None))

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


def test_async_counts_are_exact_through_a_rollback_under_exactly_once():
    run = new_run("async-eo")
    EXECUTIONS["async-eo"] = 0
    builder = TopologyBuilder()
    builder.set_spout("words", PacedPositionSpout("async-eo", WORDS))
    builder.set_bolt("split", SplitBolt("async-eo"), 2).shuffle_grouping("words")
    builder.set_bolt("count", AsyncCountBolt("async-eo"), 2).fields_grouping("split", ["word"])
    builder.set_bolt("sink", SinkBolt("async-eo")).shuffle_grouping("count")
    with LocalCluster() as cluster:
        cluster.submit_topology("async-eo", EXACTLY_ONCE, builder.create_topology())
        wait_until(lambda: run.raised, 90, what="the raising execution")
        wait_until(lambda: committed_counts(run) == truth(WORDS), 120, what="the exact counts committed")
        assert "pre_rollback" in run.hook_names()  # the failure rolled the bolt back
        assert run.hook_names().count("spout_init") >= 2  # and the spout replayed from its restored position
        assert counts(run) == truth(WORDS)
        running = [active for hook, active in run.hooks if hook == "pre_prepare"]
        assert len(running) >= 5 and set(running) == {0}
        cluster.kill_topology("async-eo", wait_secs=0)


def test_async_counts_cover_every_word_under_at_least_once():
    run = new_run("async-alo")
    EXECUTIONS["async-alo"] = 0
    words = WORDS[:1200]
    builder = TopologyBuilder()
    builder.set_spout("words", ReplayingWordSpout("async-alo", words))
    builder.set_bolt("split", SplitBolt("async-alo"), 2).shuffle_grouping("words")
    builder.set_bolt("count", AsyncCountBolt("async-alo"), 2).fields_grouping("split", ["word"])
    builder.set_bolt("sink", SinkBolt("async-alo")).shuffle_grouping("count")
    conf = {"topology.state.checkpoint.interval.ms": 100, "topology.async.max.in.flight": 10,
            "topology.state.provider": "memory"}
    with LocalCluster() as cluster:
        cluster.submit_topology("async-alo", conf, builder.create_topology())
        wait_until(lambda: len(run.acked) == len(words), 120, what="every word acked (after a commit)")
        assert run.failed >= 1  # the raising execution failed its word, which was replayed
        committed = committed_counts(run)
        assert all(committed[w] >= n for w, n in truth(words).items())
        assert "pre_rollback" not in run.hook_names()
        running = [active for hook, active in run.hooks if hook == "pre_prepare"]
        assert len(running) >= 5 and set(running) == {0}
        cluster.kill_topology("async-alo", wait_secs=0)
