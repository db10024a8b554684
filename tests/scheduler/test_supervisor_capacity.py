"""A supervisor reports what it offers the resource aware scheduler, and refuses a bad ``supervisor.resources.map``."""

from __future__ import annotations

from typing import Any

import click
import pytest

from storm_py.cli.daemons import supervisor_confs
from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.errors import ConfigError
from storm_py.scheduler.resource_aware import Resources, capacity_of
from storm_py.supervisor.core import Supervisor


def _supervisor(conf: dict[str, Any], state: ClusterState) -> Supervisor:
    return Supervisor(conf, state, launcher=None, clock=Clock(), supervisor_id="s1", ports=[6700])  # type: ignore[arg-type]


def test_the_heartbeat_carries_the_capacities_and_generic_resources() -> None:
    state = ClusterState(MemoryStorage(MemoryStore()))
    conf = {"supervisor.memory.capacity.mb": 8192, "supervisor.cpu.capacity": 800,
            "supervisor.resources.map": {"gpu.count": 2}}
    _supervisor(conf, state).heartbeat()
    info = state.supervisor_info("s1")
    assert info is not None
    assert capacity_of(info.resources) == Resources(8192.0, 800.0, {"gpu.count": 2.0})


def test_a_supervisor_without_settings_offers_the_defaults() -> None:
    state = ClusterState(MemoryStorage(MemoryStore()))
    _supervisor({}, state).heartbeat()
    info = state.supervisor_info("s1")
    assert info is not None and capacity_of(info.resources) == Resources(4096.0, 400.0, {})
    assert capacity_of({}) == Resources(4096.0, 400.0, {})  # an older supervisor that reports nothing


@pytest.mark.parametrize("generic", [{"gpu.count": -1}, {"gpu.count": "two"}, {"gpu.count": True},
                                     {"supervisor.cpu.capacity": 5}, {"": 1}])
def test_a_bad_resources_map_is_refused_naming_the_key(generic: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        _supervisor({"supervisor.resources.map": generic}, ClusterState(MemoryStorage(MemoryStore())))
    assert "'supervisor.resources.map'" in str(err.value)


@pytest.mark.parametrize(("item", "phrase"), [
    ("3:supervisor.cpu.capacity=100", "must start with a supervisor number from 1 to 2"),
    ("supervisor.cpu.capacity=100", "must start with a supervisor number"),
    ("1:supervisor.cpu.capacity=-1", "'supervisor.cpu.capacity' must be a number >= 0"),
    ("2:nothing", "is not of the form key=value"),
])
def test_dev_cluster_refuses_a_bad_supervisor_conf(item: str, phrase: str) -> None:
    with pytest.raises(click.BadParameter) as err:
        supervisor_confs(["1:supervisor.cpu.capacity=100", item], 2)
    assert phrase in err.value.format_message()


def test_dev_cluster_supervisor_confs_go_to_their_supervisor() -> None:
    assert supervisor_confs(["2:supervisor.resources.map={gpu.count: 1}", "2:supervisor.cpu.capacity=300"], 2) == {
        2: {"supervisor.resources.map": {"gpu.count": 1}, "supervisor.cpu.capacity": 300}}
