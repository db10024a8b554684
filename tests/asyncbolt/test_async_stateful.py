"""A stateful async bolt (``class B(AsyncBolt, BaseStatefulBolt)``) under exactly_once in LocalCluster: counts are
exact after an execution raised (every component rolled back, the executions in flight cancelled), because each
checkpoint drains the executions in flight before the state is prepared."""

from __future__ import annotations

import asyncio

from storm_py import AsyncBolt, BaseStatefulBolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from tests.stateful.components import (
    RUNS,
    PositionSpout,
    SinkBolt,
    SplitBolt,
    committed_counts,
    counts,
    new_run,
    truth,
)

WORDS = ["apple", "pear", "fig", "kiwi", "plum", "lime"] * 100
EXACTLY_ONCE = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": "exactly_once",
                "topology.async.max.in.flight": 20}


class AsyncCountBolt(AsyncBolt, BaseStatefulBolt):
    """The stateful word count, each input taking a few ms of awaiting before it counts; the first ``fig`` raises."""

    def __init__(self, run: str, raise_on: tuple[str, ...] = ()) -> None:
        self.run = run
        self.raise_on = raise_on

    async def prepare(self, conf, context, collector):
        self.collector = collector
        self.task = context.this_task_id
        self.loop = asyncio.get_running_loop()
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
        await asyncio.sleep(0.001 * (len(word) % 4))
        run = RUNS[self.run]
        with run.lock:
            first = word in self.raise_on and word not in run.raised
            run.raised.add(word)
        if first:
            raise RuntimeError(f"boom on {word}")
        count = self.state.get(word, 0) + 1
        self.state.put(word, count)
        self.collector.emit([word, count])

    def pre_rollback(self):
        run = RUNS[self.run]
        with run.lock:
            run.hooks.append(("pre_rollback", None))

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "count"])


def test_async_counts_are_exact_through_a_rollback_under_exactly_once():
    run = new_run("async-eo")
    builder = TopologyBuilder()
    builder.set_spout("words", PositionSpout("async-eo", WORDS))
    builder.set_bolt("split", SplitBolt("async-eo"), 2).shuffle_grouping("words")
    builder.set_bolt("count", AsyncCountBolt("async-eo", raise_on=("fig",)), 2).fields_grouping("split", ["word"])
    builder.set_bolt("sink", SinkBolt("async-eo")).shuffle_grouping("count")
    with LocalCluster() as cluster:
        cluster.submit_topology("async-eo", EXACTLY_ONCE, builder.create_topology())
        wait_until(lambda: "fig" in run.raised, 60, what="the raising execution")
        wait_until(lambda: committed_counts(run) == truth(WORDS), 90, what="the exact counts committed")
        assert "pre_rollback" in run.hook_names()  # the failure rolled the bolt back
        assert run.hook_names().count("spout_init") >= 2  # and the spout replayed from its restored position
        assert counts(run) == truth(WORDS)
        cluster.kill_topology("async-eo", wait_secs=0)
