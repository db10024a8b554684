"""Nimbus's monitoring where the distributed cluster needs it: no slots, vanished supervisors, reconnections."""

from __future__ import annotations

import pytest

from storm_py import TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import SupervisorInfo
from storm_py.nimbus.core import Nimbus
from storm_py.packaging.code_store import MemoryCodeStore
from storm_py.testing import TestWordCounter, TestWordSpout

TIMEOUT = 10.0


def topology():
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout(), 1)
    builder.set_bolt("count", TestWordCounter(), 2).fields_grouping("words", ["word"])
    return builder.create_topology()


class World:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.clock = SimulatedClock()
        conf = {"nimbus.supervisor.timeout.secs": TIMEOUT, "nimbus.task.timeout.secs": TIMEOUT,
                "topology.workers": 2, "topology.message.timeout.secs": 30}
        self.state = ClusterState(MemoryStorage(self.store), conf)
        self.nimbus = Nimbus(conf, self.state, MemoryCodeStore(), self.clock)
        self.sessions: dict[str, MemoryStorage] = {}

    def supervisor(self, sid: str, ports: list[int]) -> None:
        session = self.sessions.setdefault(sid, MemoryStorage(self.store))
        ClusterState(session, {}).set_supervisor_info(
            sid, SupervisorInfo("127.0.0.1", self.clock.wall(), ports=ports)
        )

    def kill_supervisor(self, sid: str) -> None:
        self.sessions.pop(sid).close()  # its registration was ephemeral

    def slots(self, tid: str) -> set[tuple[str, int]]:
        a = self.state.assignment(tid)
        return set(a.executor_node_port.values()) if a else set()


@pytest.fixture
def world() -> World:
    return World()


def test_a_topology_submitted_before_any_supervisor_is_scheduled_when_one_comes(world) -> None:
    tid = world.nimbus.submit_topology("t", {}, topology())
    assert world.state.assignment(tid) is None
    world.nimbus.step()
    assert world.state.assignment(tid) is None
    world.supervisor("s1", [1, 2])
    world.nimbus.step()
    assert world.slots(tid) == {("s1", 1), ("s1", 2)}


def test_when_every_supervisor_is_gone_the_assignment_is_kept_not_emptied(world) -> None:
    world.supervisor("s1", [1, 2])
    tid = world.nimbus.submit_topology("t", {}, topology())
    before = world.slots(tid)
    world.kill_supervisor("s1")
    world.clock.advance(TIMEOUT + 1)
    world.nimbus.step()
    assert world.slots(tid) == before  # nowhere to go: nothing torn down
    world.supervisor("s2", [7, 8])
    world.nimbus.step()
    assert world.slots(tid) == {("s2", 7), ("s2", 8)}


def test_after_a_reconnection_a_missing_supervisor_gets_a_full_timeout(world) -> None:
    world.supervisor("s1", [1])
    world.supervisor("s2", [2])
    tid = world.nimbus.submit_topology("t", {}, topology())
    world.clock.advance(TIMEOUT * 2)
    world.supervisor("s1", [1])
    world.supervisor("s2", [2])
    world.kill_supervisor("s2")  # its session is being replaced after a ZooKeeper outage
    world.nimbus.reset_heartbeat_tracking()
    world.clock.advance(TIMEOUT / 2)
    world.supervisor("s1", [1])
    world.nimbus.step()
    assert ("s2", 2) in world.slots(tid)  # not yet judged
    world.clock.advance(TIMEOUT)
    world.supervisor("s1", [1])
    world.nimbus.step()
    assert world.slots(tid) == {("s1", 1)}
