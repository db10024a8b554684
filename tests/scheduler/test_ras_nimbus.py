"""Nimbus with ``storm.scheduler: resource_aware``: submit checks, waiting topologies and their reasons, eviction,
generic resources and ``rebalance -r``, over an in-memory cluster state and a simulated clock."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import SupervisorInfo
from storm_py.errors import ConfigError, InvalidTopologyException
from storm_py.nimbus.core import Nimbus
from storm_py.nimbus.ras import placement_of
from storm_py.packaging.code_store import MemoryCodeStore
from storm_py.testing import TestWordCounter, TestWordSpout

RAS = "org.apache.storm.scheduler.resource.ResourceAwareScheduler"


def topology(memory: float = 1400.0, gpu: float = 0.0):
    builder = TopologyBuilder()
    spout = builder.set_spout("words", TestWordSpout(), 1).set_memory_load(memory).set_cpu_load(50)
    if gpu:
        spout.add_resource("gpu.count", gpu)
    builder.set_bolt("count", TestWordCounter(), 1).fields_grouping("words", ["word"]).set_memory_load(64, 16)
    return builder.create_topology()


class World:
    def __init__(self, scheduler: str = RAS, **conf: Any) -> None:
        self.store = MemoryStore()
        self.clock = SimulatedClock()
        self.conf = {"storm.scheduler": scheduler, "topology.acker.executors": 0, **conf}
        self.state = ClusterState(MemoryStorage(self.store), self.conf)
        self.nimbus = Nimbus(self.conf, self.state, MemoryCodeStore(), self.clock)
        self.sessions: dict[str, MemoryStorage] = {}

    def supervisor(self, sid: str, memory: float = 2048, **generic: float) -> None:
        session = self.sessions.setdefault(sid, MemoryStorage(self.store))
        resources = {"supervisor.memory.capacity.mb": memory, "supervisor.cpu.capacity": 400.0, **generic}
        ClusterState(session, {}).set_supervisor_info(
            sid, SupervisorInfo("127.0.0.1", self.clock.wall(), ports=[6700, 6701], resources=resources))

    def submit(self, name: str, priority: int = 29, **kw: Any) -> str:
        return self.nimbus.submit_topology(name, {"topology.priority": priority}, topology(**kw))

    def nodes(self, tid: str) -> set[str]:
        a = self.state.assignment(tid)
        return {n for n, _ in a.executor_node_port.values()} if a else set()

    def info(self, tid: str) -> str:
        return self.nimbus.reading(tid).scheduler_info

    def row(self, tid: str) -> dict[str, Any]:
        return next(r for r in self.nimbus.cluster_summary() if r["id"] == tid)


def test_three_topologies_that_do_not_all_fit_the_last_waits_until_another_is_killed() -> None:
    w = World()
    w.supervisor("s1")
    w.supervisor("s2")
    a, b, c = w.submit("a", 10), w.submit("b", 20), w.submit("c", 30)
    assert w.nodes(a) and w.nodes(b) and w.nodes(a) != w.nodes(b)
    assert w.state.assignment(c) is None
    summary = w.row(c)
    assert summary["status"] == "ACTIVE" and summary["schedulerInfo"] == w.info(c)
    assert "not enough resources: an executor of 'words' needs 1400 MB memory" in summary["schedulerInfo"]
    assert [r["schedulerInfo"] for r in w.nimbus.cluster_summary()] == ["", "", summary["schedulerInfo"]]
    w.nimbus.step()
    assert w.state.assignment(c) is None  # still waiting, nothing evicted for it
    w.nimbus.kill_topology("a", 0)
    w.nimbus.step()
    assert w.nodes(c) and w.info(c) == ""


def test_a_more_important_topology_evicts_the_least_important_one() -> None:
    w = World()
    w.supervisor("s1")
    w.supervisor("s2")
    a, b = w.submit("a", 20), w.submit("b", 30)
    c = w.submit("c", 5)
    assert w.nodes(c) and w.nodes(a)
    assert w.state.assignment(b) is None
    assert "evicted for the more important topology" in w.info(b)
    w.nimbus.step()
    assert w.state.assignment(b) is None and w.nodes(c)


def test_a_gpu_component_runs_only_on_the_supervisor_offering_gpus() -> None:
    w = World()
    w.supervisor("s1", memory=8192)
    w.supervisor("s2", memory=1024, **{"gpu.count": 1.0})
    plain = w.submit("plain", memory=256)
    gpu = w.submit("gpu", memory=256, gpu=1)
    assert w.nodes(plain) == {"s1"}
    placed, base = w.state.assignment(gpu), w.state.storm_base(gpu)
    assert placed is not None and base is not None
    by_component = placement_of(base, placed.executor_node_port)
    assert [slot[0] for ex, slot in by_component.items() if ex[0] == "words"] == ["s2"]
    second = w.submit("gpu2", memory=256, gpu=1)  # the one GPU is taken
    assert w.state.assignment(second) is None and "short of gpu.count" in w.info(second)


@pytest.mark.parametrize(("declare", "phrase"), [
    (lambda d: d.set_memory_load(-1), "topology.component.resources.onheap.memory.mb of 'words' must be a number"),
    (lambda d: d.set_memory_load(10, float("nan")), "offheap.memory.mb of 'words' must be a number >= 0"),
    (lambda d: d.set_cpu_load("lots"), "topology.component.cpu.pcore.percent of 'words' must be a number"),
    (lambda d: d.add_resource("gpu.count", -2), "resources.map['gpu.count'] of 'words' must be a number >= 0"),
    (lambda d: d.add_resource("", 1), "resource name of 'words' must be a non-empty string"),
])
def test_bad_resources_on_a_declarer_are_refused_naming_key_and_component(declare, phrase) -> None:
    builder = TopologyBuilder()
    with pytest.raises(InvalidTopologyException) as err:
        declare(builder.set_spout("words", TestWordSpout(), 1))
    assert phrase in str(err.value)


@pytest.mark.parametrize(("conf", "phrase"), [
    ({"topology.component.resources.onheap.memory.mb": "lots"},
     "component 'words': key 'topology.component.resources.onheap.memory.mb' must be a number"),
    ({"topology.component.cpu.pcore.percent": -5}, "key 'topology.component.cpu.pcore.percent' must be a number >= 0"),
    ({"topology.component.resources.map": {"gpu.count": "one"}},
     "component 'words': key 'topology.component.resources.map' needs a non-negative amount"),
    ({"topology.component.resources.map": {"gpu.count": -1}},
     "component 'words': key 'topology.component.resources.map' needs a non-negative amount"),
])
def test_bad_component_resource_keys_fail_the_submit(conf, phrase) -> None:
    w = World()
    w.supervisor("s1")
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout(), 1).add_configurations(conf)
    with pytest.raises(InvalidTopologyException) as err:
        w.nimbus.submit_topology("t", {}, builder.create_topology())
    assert phrase in str(err.value)
    assert w.nimbus.cluster_summary() == []  # nothing stored


def test_bad_topology_level_resources_fail_the_submit_naming_the_key() -> None:
    w = World()
    with pytest.raises(ConfigError) as err:
        w.nimbus.submit_topology("t", {"topology.component.resources.offheap.memory.mb": -1}, topology())
    assert "'topology.component.resources.offheap.memory.mb' must be a number >= 0" in str(err.value)


def test_a_component_bigger_than_any_supervisor_is_refused_at_submit() -> None:
    w = World()
    w.supervisor("s1")
    with pytest.raises(InvalidTopologyException, match="component 'words' needs 9000 MB memory, 50% CPU per "
                                                       "executor, more than any supervisor offers"):
        w.submit("huge", memory=9000)
    assert w.nimbus.cluster_summary() == []


def test_the_even_scheduler_ignores_resources() -> None:
    w = World(scheduler="even")
    w.supervisor("s1", memory=100)
    tid = w.submit("huge", memory=9000)
    assert w.nodes(tid) == {"s1"}


def test_rebalance_r_changes_a_components_memory() -> None:
    w = World()
    w.supervisor("s1")
    tid = w.submit("t", memory=1400)
    w.nimbus.rebalance("t", 0, resources={"words": {"onheap.memory.mb": 4000}})
    base = w.state.storm_base(tid)
    assert base is not None
    assert base.component_resources["words"]["topology.component.resources.onheap.memory.mb"] == 4000
    assert w.state.assignment(tid) is None and "needs 4000 MB memory" in w.info(tid)
    w.nimbus.rebalance("t", 0, resources={"words": {"onheap.memory.mb": 512}})
    assert w.nodes(tid) == {"s1"}


@pytest.mark.parametrize(("resources", "phrase"), [
    ({"nope": {"onheap.memory.mb": 1}}, "unknown component 'nope'"),
    ({"words": {"disk.mb": 1}}, "unknown resource 'disk.mb' of 'words'"),
    ({"words": {"cpu.pcore.percent": -1}}, "'topology.component.cpu.pcore.percent' must be a number >= 0"),
    ({"words": 5}, "resources of 'words' must be a mapping"),
])
def test_rebalance_r_refuses_bad_resources(resources, phrase) -> None:
    w = World()
    w.supervisor("s1")
    tid = w.submit("t")
    before = w.state.storm_base(tid)
    with pytest.raises(InvalidTopologyException) as err:
        w.nimbus.rebalance("t", 0, resources=resources)
    assert phrase in str(err.value)
    assert w.state.storm_base(tid) == before  # nothing changed


def test_bad_user_pools_are_refused_naming_the_key_and_user() -> None:
    with pytest.raises(ConfigError) as err:
        World(**{"resource.aware.scheduler.user.pools": {"jerry": {"memory": -1}}})
    assert "'resource.aware.scheduler.user.pools': user 'jerry'" in str(err.value)


def test_rebalance_r_needs_the_resource_aware_scheduler() -> None:
    w = World(scheduler="even")
    w.supervisor("s1")
    w.submit("t")
    with pytest.raises(InvalidTopologyException) as err:
        w.nimbus.rebalance("t", 0, resources={"words": {"onheap.memory.mb": 512}})
    assert "storm.scheduler: resource_aware" in str(err.value)


def test_the_summary_shows_requested_and_assigned_resources() -> None:
    w = World()
    w.supervisor("s1")
    running, waiting = w.submit("running", 10), w.submit("waiting", 20)
    page = w.row(running)
    # words: 1400 on heap, 50% CPU; count: 64 on heap + 16 off heap, the default 10% CPU
    assert (page["requestedMemOnHeap"], page["requestedMemOffHeap"], page["requestedCpu"]) == (1464, 16, 60)
    assert (page["assignedTotalMem"], page["assignedCpu"]) == (1480, 60)
    page = w.row(waiting)
    assert (page["requestedTotalMem"], page["assignedTotalMem"], page["assignedCpu"]) == (1480, 0, 0)
    even = World(scheduler="even")
    even.supervisor("s1")
    assert "requestedTotalMem" not in even.row(even.submit("t"))  # even: no resources shown


@pytest.mark.parametrize(("conf", "phrase"), [
    ({"topology.ras.constraints": [["words", "nope"]]}, "'topology.ras.constraints' names unknown component 'nope'"),
    ({"topology.ras.constraints": [["words"]]}, "'topology.ras.constraints' takes pairs [component, component]"),
    ({"topology.spread.components": ["nope"]}, "'topology.spread.components' names unknown component 'nope'"),
])
def test_bad_constraints_fail_the_submit_naming_the_key(conf, phrase) -> None:
    w = World()
    w.supervisor("s1")
    with pytest.raises(InvalidTopologyException) as err:
        w.nimbus.submit_topology("t", conf, topology(memory=128))
    assert phrase in str(err.value)


def test_the_constraint_strategy_keeps_constrained_components_apart() -> None:
    w = World()
    w.supervisor("s1")
    w.supervisor("s2")
    conf = {"topology.scheduler.strategy": "org.apache.storm.scheduler.resource.strategies.scheduling."
                                           "ConstraintSolverStrategy",
            "topology.ras.constraints": [["words", "count"]]}
    tid = w.nimbus.submit_topology("apart", conf, topology(memory=128))
    base, placed = w.state.storm_base(tid), w.state.assignment(tid)
    assert base is not None and placed is not None
    slots = {ex[0]: slot for ex, slot in placement_of(base, placed.executor_node_port).items()}
    assert slots["words"] != slots["count"]
    together = w.submit("together", memory=128)  # the default strategy: one worker
    assert len(set(w.state.assignment(together).executor_node_port.values())) == 1


def test_rebalance_t_cannot_sneak_in_bad_constraints() -> None:
    w = World()
    w.supervisor("s1")
    tid = w.submit("t", memory=128)
    before = w.state.storm_base(tid)
    with pytest.raises(InvalidTopologyException) as err:
        w.nimbus.rebalance("t", 0, conf_overrides={"topology.ras.constraints": [5]})
    assert "'topology.ras.constraints' takes pairs" in str(err.value)
    assert w.state.storm_base(tid) == before
