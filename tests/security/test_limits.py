"""Absurd parallelism and non-finite waits: refused with a clear error before anything is built or written,
while a running topology keeps processing."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from storm_py import TopologyBuilder
from storm_py.api.topology import StormTopology
from storm_py.cluster_state.cluster_state import MAX_RECORD_BYTES, ClusterState
from storm_py.cluster_state.memory import MemoryStorage
from storm_py.cluster_state.models import StormBase
from storm_py.errors import InvalidTopologyException, StateError
from storm_py.local import LocalCluster
from tests.security.test_frame_fuzz import NumberSpout, Relay, Sink


def topology(parallelism: int = 1) -> StormTopology:
    b = TopologyBuilder()
    b.set_spout("numbers", NumberSpout(10**9), 1)
    b.set_bolt("relay", Relay(), parallelism).shuffle_grouping("numbers")
    b.set_bolt("sink", Sink(), 1).shuffle_grouping("relay")
    return b.create_topology()


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    local = LocalCluster(supervisors=2, ports_per_supervisor=2)
    try:
        yield local
    finally:
        local.shutdown()


def test_absurd_parallelism_and_waits_are_refused(cluster: LocalCluster) -> None:
    cluster.submit_topology("steady", {"topology.workers": 2}, topology())
    state_before = dict(cluster._store.dump())
    with pytest.raises(InvalidTopologyException, match=r"nimbus\.slots\.perTopology"):
        cluster.submit_topology("huge", {"topology.workers": 100_000}, topology())
    with pytest.raises(InvalidTopologyException, match=r"nimbus\.executors\.perTopology"):
        cluster.submit_topology("wide", {"topology.workers": 1}, topology(parallelism=20_000))
    with pytest.raises(InvalidTopologyException, match=r"nimbus\.executors\.perTopology"):
        cluster.submit_topology("ackers", {"topology.acker.executors": 50_000}, topology())
    for wait in (math.nan, math.inf, -math.inf, -1.0, 10.0**12):
        with pytest.raises(InvalidTopologyException, match="wait"):
            cluster.kill_topology("steady", wait)
        with pytest.raises(InvalidTopologyException, match="wait"):
            cluster.rebalance("steady", wait)
    with pytest.raises(InvalidTopologyException, match=r"nimbus\.slots\.perTopology"):
        cluster.rebalance("steady", 0, num_workers=100_000)
    # Nothing was written for the refused requests; the running topology is untouched and still active.
    assert {p for p in cluster._store.dump() if "huge" in p or "wide" in p or "ackers" in p} == set()
    assert {p for p in state_before if "/storms/" in p} == {p for p in cluster._store.dump() if "/storms/" in p}
    tid = cluster.nimbus.topology_id("steady")
    assert tid is not None
    base = cluster.state.storm_base(tid)
    assert base is not None and base.status == "active" and not base.topology_action_options


def test_a_record_over_the_znode_limit_is_never_written() -> None:
    state = ClusterState(MemoryStorage(), {})
    huge = StormBase(name="x", status="active", launch_time=1.0, num_workers=1,
                     topology_conf={"blob": "x" * MAX_RECORD_BYTES})  # fmt: skip
    with pytest.raises(StateError) as info:
        state.set_storm_base("x-1-1", huge)
    assert info.value.fields["reason"] == "too_large"
    assert state.storm_base("x-1-1") is None
