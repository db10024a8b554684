"""Async bolts in LocalCluster, calling a local HTTP endpoint that answers after 20 ms: every input acked once,
ordered output, at most ``topology.async.max.in.flight`` calls at once, 500s and a hung call failing exactly their
inputs (the spout replays them), unordered mode, and collector misuse raising ``RuntimeError``."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from storm_py import AsyncBolt, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from tests.asyncbolt.components import RUNS, NumberSpout, SinkBolt, endpoint, enrichment_topology, new_run

N = 2000
CONF = {"topology.async.max.in.flight": 100, "topology.message.timeout.secs": 60}


def errors(cluster: LocalCluster, name: str, component: str) -> list[str]:
    tid = cluster.get_topology_id(name)
    assert tid is not None
    return [e.error for e in cluster.state.errors(tid, component)]


def test_every_input_acked_once_in_order_with_at_most_max_in_flight_calls():
    run = new_run("ordered")
    with endpoint() as server, LocalCluster() as cluster:
        cluster.submit_topology("ordered", CONF, enrichment_topology("ordered", server.url, N))
        wait_until(lambda: len(run.acks) == N, 120, what="every input acked")
        assert set(run.acks) == set(range(N)) and set(run.acks.values()) == {1}
        assert not run.fails
        assert run.sunk == list(range(N))  # answers overtook each other; the emits did not
        assert 50 < run.peak <= 100  # concurrent, and never more than the limit
        assert len(run.loops) == 1
        cluster.kill_topology("ordered", wait_secs=0)


def test_500s_and_a_hung_call_fail_exactly_their_inputs_which_are_replayed():
    run = new_run("failing")
    bad = frozenset(range(3, N, 97))
    hang = frozenset({11, 1500})
    conf = {**CONF, "topology.async.execute.timeout.secs": 5}  # far above a loaded answer
    with endpoint(bad=bad, hang=hang) as server, LocalCluster() as cluster:
        cluster.submit_topology("failing", conf, enrichment_topology("failing", server.url, N))
        wait_until(lambda: len(run.acks) == N, 120, what="every input acked")
        assert set(run.fails) == bad | hang and set(run.fails.values()) == {1}
        assert set(run.acks.values()) == {1}
        assert sorted(run.sunk) == list(range(N))  # a failed execution's emits were discarded
        wait_until(lambda: any("timeout" in e for e in errors(cluster, "failing", "enrich")), 30,
                   what="the timeout reported")
        found = errors(cluster, "failing", "enrich")
        timeouts = [e for e in found if "topology.async.execute.timeout.secs" in e]
        assert timeouts and "'enrich'" in timeouts[0] and "5 s" in timeouts[0]
        assert any("HTTP 500" in e for e in found)
        cluster.kill_topology("failing", wait_secs=0)


def test_unordered_mode_acks_every_input_once():
    run = new_run("unordered")
    conf = {**CONF, "topology.async.output.mode": "unordered"}
    with endpoint() as server, LocalCluster() as cluster:
        cluster.submit_topology("unordered", conf, enrichment_topology("unordered", server.url, 500))
        wait_until(lambda: len(run.acks) == 500, 120, what="every input acked")
        assert set(run.acks.values()) == {1} and not run.fails
        assert sorted(run.sunk) == list(range(500))
        assert run.sunk != list(range(500))  # answers came back out of order and went on as they came
        cluster.kill_topology("unordered", wait_secs=0)


class MisusingBolt(AsyncBolt):
    """Emits from a task it started (allowed), then tries to emit from another thread, from a callback outside
    every execution and from a task that outlives its execution."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector
        self.orphans: list[asyncio.Task[None]] = []

    async def execute(self, tup):
        i = tup.values[0]

        async def child():
            self.collector.emit([i, 2 * i])  # a task started by the execution inherits its input

        await asyncio.create_task(child())
        outcomes = RUNS[self.run].sunk  # reuse the run's list for what the misuse raised
        thread_error: list[BaseException] = []

        def from_thread():
            try:
                self.collector.emit([i, 2 * i])
            except RuntimeError as exc:
                thread_error.append(exc)

        t = threading.Thread(target=from_thread)
        t.start()
        t.join()
        loop = asyncio.get_running_loop()
        outside: list[BaseException] = []

        def later():
            try:
                self.collector.emit([i, 2 * i])
            except RuntimeError as exc:
                outside.append(exc)

        loop.call_soon(later, context=contextvars.Context())  # a callback in no execution's context
        await asyncio.sleep(0.01)
        with RUNS[self.run].lock:
            if thread_error and "another thread" in str(thread_error[0]):
                outcomes.append(-1)
            if outside and "outside an execution" in str(outside[0]):
                outcomes.append(-2)

        async def orphan():
            await asyncio.sleep(0.05)
            try:
                self.collector.emit([i, 2 * i])
            except RuntimeError as exc:
                if "after it completed" in str(exc):
                    with RUNS[self.run].lock:
                        outcomes.append(-3)

        self.orphans.append(asyncio.create_task(orphan()))  # goes on after the execution returned

    def declare_output_fields(self, declarer):
        declarer.declare(["i", "answer"])


def test_emits_outside_an_execution_or_from_another_thread_raise():
    run = new_run("misuse")
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout("misuse", 5))
    builder.set_bolt("enrich", MisusingBolt("misuse")).shuffle_grouping("numbers")
    builder.set_bolt("sink", SinkBolt("misuse")).shuffle_grouping("enrich")
    with LocalCluster() as cluster:
        cluster.submit_topology("misuse", CONF, builder.create_topology())
        wait_until(lambda: len(run.acks) == 5, 60, what="every input acked")
        with run.lock:
            sunk = list(run.sunk)
        assert sorted(x for x in sunk if x >= 0) == list(range(5))  # the child task's emits went through
        assert sunk.count(-1) == 5 and sunk.count(-2) == 5
        wait_until(lambda: run.sunk.count(-3) == 5, 30, what="the orphaned tasks' emits refused")
        cluster.kill_topology("misuse", wait_secs=0)
