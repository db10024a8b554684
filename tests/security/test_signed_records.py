"""A forged storm base and assignment, written to a real ZooKeeper with the cluster's stolen digest credentials
(but not its token), schedule and run nothing: nimbus's view drops them and a supervisor launches no worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from storm_py.clock import SimulatedClock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import Assignment, StormBase
from storm_py.cluster_state.zk import KazooStorage
from storm_py.supervisor.core import Supervisor
from tests.zk_fixture import digest_conf

pytestmark = pytest.mark.zookeeper

TOKEN = "cluster-token-4c1f0e8a9b7d"


class Worker:
    def __init__(self, topology_id: str) -> None:
        self.topology_id = topology_id
        self.alive = True

    def refresh(self) -> bool:
        return True

    def stop(self) -> None:
        self.alive = False

    def silent_secs(self) -> float:
        return 0.0


class Launcher:
    def __init__(self) -> None:
        self.launched: list[str] = []

    def launch(self, supervisor_id: str, topology_id: str, port: int, executors: list[tuple[int, int]]) -> Worker:
        self.launched.append(topology_id)
        return Worker(topology_id)


@pytest.fixture
def conf(zookeeper: Any, zk_chroot: str) -> dict[str, Any]:
    return {**digest_conf(zookeeper, zk_chroot, "storm:5e1d-stolen-digest"), "nimbus.auth.token": TOKEN}


@pytest.fixture
def states(conf: dict[str, Any]) -> Iterator[tuple[ClusterState, ClusterState, ClusterState]]:
    """(nimbus, supervisor, attacker): the attacker holds the digest payload but not the token."""
    stolen = {k: v for k, v in conf.items() if k != "nimbus.auth.token"}
    opened = [ClusterState(KazooStorage.from_conf(c), c) for c in (conf, conf, stolen)]
    try:
        yield opened[0], opened[1], opened[2]
    finally:
        for state in opened:
            state.close()


def test_a_forged_storm_base_and_assignment_are_not_scheduled(
    states: tuple[ClusterState, ClusterState, ClusterState], conf: dict[str, Any]
) -> None:
    nimbus, supervisor_state, attacker = states
    base = StormBase(name="evil", status="active", launch_time=1.0, num_workers=1)
    attacker.set_storm_base("evil-1-1", base)
    attacker.set_assignment(
        "evil-1-1", Assignment(node_host={"s1": "127.0.0.1"}, executor_node_port={(1, 1): ("s1", 6700)})
    )
    launcher = Launcher()
    supervisor = Supervisor(conf, supervisor_state, launcher, SimulatedClock(), "s1", ports=[6700])
    supervisor.sync()
    assert launcher.launched == []
    assert supervisor_state.refused >= 1
    assert nimbus.storm_bases() == {} and nimbus.storm_base("evil-1-1") is None
    assert nimbus.refused >= 2

    # the same records written by nimbus run
    nimbus.set_storm_base("wc-1-1", base)
    nimbus.set_assignment(
        "wc-1-1", Assignment(node_host={"s1": "127.0.0.1"}, executor_node_port={(1, 1): ("s1", 6700)})
    )
    attacker.remove_assignment("evil-1-1")
    supervisor.sync()
    assert launcher.launched == ["wc-1-1"]
