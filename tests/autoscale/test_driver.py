"""The autoscaler's driver over a real nimbus core, an in-memory cluster state, a simulated clock and heartbeats
written as workers write them: it samples each period, rebalances, records decisions, serves them; and the
sampler turning executor reports into period samples."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import SupervisorInfo, WorkerHeartbeat
from storm_py.errors import InvalidTopologyException
from storm_py.metrics.reports import reports
from storm_py.nimbus.autoscale_api import autoscale_view, well_formed_decisions
from storm_py.nimbus.autoscale_metrics import PeriodSampler
from storm_py.nimbus.autoscaler import Autoscaler
from storm_py.nimbus.core import Nimbus
from storm_py.nimbus.monitor import executors_of
from storm_py.packaging.code_store import MemoryCodeStore
from storm_py.testing import TestWordCounter, TestWordSpout

AUTOSCALE = {"topology.autoscale.enabled": True, "topology.autoscale.period.secs": 10,
             "topology.autoscale.cooldown.secs": 30, "topology.autoscale.rebalance.wait.secs": 0,
             "topology.acker.executors": 0}


def topology():
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout(), 1)
    builder.set_bolt("count", TestWordCounter(), 1).set_num_tasks(8).fields_grouping("words", ["word"])
    return builder.create_topology()


class World:
    """Nimbus, one supervisor and workers whose heartbeats say what the test wants: the bolt executes ``rate``
    tuples a second costing ``cost`` seconds each, over ``executors`` executors, while the input comes at
    ``arrival`` a second (the rest goes to the lag)."""

    def __init__(self, **conf: Any) -> None:
        self.clock = SimulatedClock()
        self.state = ClusterState(MemoryStorage(MemoryStore()), {})
        self.nimbus = Nimbus({}, self.state, MemoryCodeStore(), self.clock)
        self.state.set_supervisor_info("s1", SupervisorInfo("127.0.0.1", self.clock.wall(), ports=[6700]))
        self.tid = self.nimbus.submit_topology("t", {**AUTOSCALE, **conf}, topology())
        self.autoscaler = Autoscaler(self.nimbus, self.state, self.clock)
        self.totals: dict[str, dict[str, float]] = {}
        self.lag = 0.0
        self.uptime = 0.0

    def executors(self) -> int:
        base = self.state.storm_base(self.tid)
        assert base is not None
        return base.component_executors["count"]

    def period(self, arrival: float, cost: float = 0.002) -> None:
        """Ten seconds pass; the workers heartbeat; the autoscaler steps."""
        self.clock.advance(10)
        self.uptime += 10
        base = self.state.storm_base(self.tid)
        assert base is not None
        n = base.component_executors["count"]
        done = min(arrival + self.lag / 10, n / cost)
        self.lag = max(0.0, self.lag + (arrival - done) * 10)
        execs: dict[str, Any] = {}
        for component, start, end in executors_of(base):
            key = f"{component}:[{start}-{end}]"
            t = self.totals.setdefault(key, {})
            if component == "count":
                t["executed:words:default"] = t.get("executed:words:default", 0) + done / n * 10
                t["execute_ms:words:default"] = t.get("execute_ms:words:default", 0) + done / n * cost * 10000
            elif component == "words":
                t["emitted:default"] = t.get("emitted:default", 0) + done * 10
            execs[key] = {"component": component, "tasks": list(range(start, end + 1)), "uptime": self.uptime,
                          "type": "spout" if component == "words" else "bolt", "counters": dict(t)}
            if component == "words":
                execs[key]["lag"] = {"type": "kafka", "partitions": [["in", 0, 0, int(self.lag)]]}
        self.state.set_worker_heartbeat(self.tid, "s1", 6700, WorkerHeartbeat(
            self.tid, [], self.clock.wall(), self.uptime, {"executors": execs}))
        self.autoscaler.step()
        if base.component_executors["count"] != self.executors():  # rebalanced: new executors start afresh
            self.totals.clear()
            self.uptime = 0.0


def test_a_saturated_bolt_is_rebalanced_to_more_executors_and_the_decision_is_recorded_and_served():
    w = World()
    assert w.autoscaler.step() == pytest.approx(10)  # first period due in 10 s
    for _ in range(3):
        w.period(arrival=2000)
    assert w.executors() > 1
    events = w.state.autoscale_events(w.tid)
    [decision] = events["decisions"]
    assert decision["component"] == "count" and decision["from"] == 1 and decision["to"] == w.executors()
    assert decision["time"] == pytest.approx(w.clock.wall()) and "saturated" in decision["reason"]
    base = w.state.storm_base(w.tid)
    assert base is not None
    view = autoscale_view(w.tid, base, events)
    assert view["decisions"] == [decision] and view["enabled"] is True
    assert view["bolts"] == {"count": {"executors": w.executors(), "tasks": 8, "min": 1, "max": 8}}


def test_after_the_load_falls_the_bolt_is_scaled_back_down_within_bounds():
    w = World(**{"topology.autoscale.min.parallelism": {"count": 2}})
    for _ in range(8):
        w.period(arrival=2000)
    peak = w.executors()
    assert peak >= 5
    for _ in range(12):
        w.period(arrival=100)
    assert w.executors() == 2
    moves = [(d["from"], d["to"]) for d in w.state.autoscale_events(w.tid)["decisions"]]
    assert moves[0][0] == 1 and moves[-1][1] == 2 and len(moves) <= 4


def test_a_topology_without_the_autoscaler_is_left_alone():
    w = World(**{"topology.autoscale.enabled": False})
    assert w.autoscaler.step() is None
    for _ in range(5):
        w.period(arrival=2000)
    assert w.executors() == 1 and w.state.autoscale_events(w.tid) == {}


def test_an_inactive_topology_is_not_sampled():
    w = World()
    w.nimbus.deactivate("t")
    for _ in range(5):
        w.period(arrival=2000)
    assert w.executors() == 1


def test_the_events_of_a_killed_topology_are_removed():
    w = World()
    for _ in range(4):
        w.period(arrival=2000)
    assert w.state.autoscale_events(w.tid)
    w.nimbus.kill_topology("t", 0)
    w.autoscaler.step()
    assert w.state.autoscale_events(w.tid) == {} and w.state.autoscale_topology_ids() == []


def test_submit_refuses_bad_bounds_naming_the_key_and_the_component():
    w = World()
    with pytest.raises(InvalidTopologyException, match=r"topology.autoscale.max.parallelism of 'count' is 9"):
        w.nimbus.submit_topology("u", {"topology.autoscale.max.parallelism": {"count": 9}}, topology())


def test_stored_events_of_the_wrong_shape_are_not_served():
    good = {"time": 1.0, "component": "c", "from": 1, "to": 2, "reason": "r"}
    assert well_formed_decisions([good, {**good, "from": "1"}, {**good, "reason": ""}, "x", {}]) == [good]
    assert well_formed_decisions({"no": "list"}) == []


# ---------------------------------------------------------------------------------------------------- sampler

def beat(time: float, uptime: float, executed: float, execute_ms: float, keys: tuple[str, ...] = ("b:[1-1]",),
         emitted: float = 0.0, skipped_bp_ms: float = 0.0) -> dict[tuple[str, int], WorkerHeartbeat]:
    execs: dict[str, Any] = {k: {"component": "b", "tasks": [1], "type": "bolt", "uptime": uptime, "counters": {
        "executed:s:default": executed, "execute_ms:s:default": execute_ms}} for k in keys}
    execs["s:[2-2]"] = {"component": "s", "tasks": [2], "type": "spout", "uptime": uptime, "counters": {
        "emitted:default": emitted, "emitted:__ack_init": emitted, "skipped_backpressure_ms": skipped_bp_ms}}
    return {("n", 1): WorkerHeartbeat("t", [], time, uptime, {"executors": execs})}


def test_the_sampler_reads_rates_busy_time_and_backpressure_between_two_reports():
    sampler = PeriodSampler()
    assert sampler.sample(reports(beat(100, 5, 0, 0)), {"b": 1, "s": 1}, ["s"], 1e9) is None  # one report only
    sample = sampler.sample(reports(beat(110, 15, 1000, 5000, emitted=1000, skipped_bp_ms=2500)),
                            {"b": 1, "s": 1}, ["s"], 1e9)
    assert sample is not None
    bolt = sample.bolts["b"]
    assert bolt.executed_per_sec == pytest.approx(100) and bolt.busy == pytest.approx(0.5)
    assert bolt.capacity == pytest.approx(0.5) and bolt.execute_latency_ms == pytest.approx(5)
    assert sample.spout_rate == pytest.approx(100)  # the spout's own streams only
    assert sample.backpressure == pytest.approx(0.25) and sample.lag is None and sample.time == 1e9


def test_the_sampler_waits_for_every_executor_and_for_restarted_ones():
    sampler = PeriodSampler()
    sampler.sample(reports(beat(100, 50, 500, 500)), {"b": 2, "s": 1}, ["s"], 0)
    assert sampler.sample(reports(beat(110, 60, 600, 600)), {"b": 2, "s": 1}, ["s"], 0) is None  # one of two
    assert sampler.sample(reports(beat(120, 5, 10, 10)), {"b": 1, "s": 1}, ["s"], 0) is None  # restarted
    assert sampler.sample(reports(beat(130, 15, 20, 20)), {"b": 1, "s": 1}, ["s"], 0) is not None
    # restarted with counters above the last ones seen: its uptime tells
    assert sampler.sample(reports(beat(140, 2, 900, 900)), {"b": 1, "s": 1}, ["s"], 0) is None
