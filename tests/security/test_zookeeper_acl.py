"""An attacker with a raw ZooKeeper client and no credentials (or the wrong ones) against a cluster's state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NotEmptyError

from storm_py.clock import wait_until
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import StormBase, SupervisorInfo
from storm_py.cluster_state.zk import KazooStorage
from tests.zk_fixture import digest_conf

pytestmark = pytest.mark.zookeeper

SECRET = "storm:9f2c7d1e-cluster"


@pytest.fixture
def cluster_conf(zookeeper: Any, zk_chroot: str) -> dict[str, Any]:
    return digest_conf(zookeeper, zk_chroot, SECRET)


@pytest.fixture
def state(cluster_conf: dict[str, Any]) -> Iterator[ClusterState]:
    cluster = ClusterState(KazooStorage.from_conf(cluster_conf), cluster_conf)
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(params=["anonymous", "wrong-secret"])
def intruder(request: pytest.FixtureRequest, zookeeper: Any) -> Iterator[KazooClient]:
    auth = None if request.param == "anonymous" else [("digest", "storm:guessed")]
    client = KazooClient(hosts=zookeeper.connect_string, auth_data=auth, timeout=6.0)
    client.start(timeout=10.0)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def populate(state: ClusterState) -> None:
    state.set_storm_base(
        "wc-1-1", StormBase(name="wc", status="active", launch_time=1.0, num_workers=1)
    )
    state.set_supervisor_info(
        "sup-1", SupervisorInfo(hostname="h", time_secs=1.0, ports=[6700], used_ports=[], uptime_secs=0.0)
    )
    state.register_blob_holder("wc-1-1-stormcode", "nimbus-a:6627", 1)
    state.report_error("wc-1-1", "split", "boom", "h", 6700, 1.0)


def every_node(client: KazooClient, path: str) -> list[str]:
    out = [path]
    for child in client.get_children(path):
        out += every_node(client, f"{path}/{child}")
    return out


def test_a_client_without_the_secret_reads_and_writes_nothing(
    state: ClusterState, intruder: KazooClient, zookeeper: Any
) -> None:
    populate(state)
    root = state.root
    owner = KazooClient(hosts=zookeeper.connect_string, auth_data=[("digest", SECRET)])
    owner.start(timeout=10.0)
    try:
        nodes = every_node(owner, root)
        for path in nodes:
            acl, _stat = owner.get_acls(path)
            assert all(entry.id.scheme == "digest" for entry in acl), (path, acl)  # no world access anywhere
    finally:
        owner.stop()
        owner.close()
    assert len(nodes) > 8
    for path in nodes:
        with pytest.raises(NoAuthError):
            intruder.get(path)
        with pytest.raises(NoAuthError):
            intruder.get_children(path)
        with pytest.raises(NoAuthError):
            intruder.set(path, b"forged")
        with pytest.raises(NoAuthError):
            intruder.create(f"{path}/planted", b"x")
        # Deleting needs DELETE on the parent; the root's parent is outside the cluster's tree (open, like "/"),
        # so there the root's children protect it: it is never empty, and they cannot be deleted.
        with pytest.raises(NotEmptyError if path == root else NoAuthError):
            intruder.delete(path, recursive=False)
    # The cluster still reads its own records, untouched.
    assert state.storm_base("wc-1-1") is not None
    assert state.storm_base("wc-1-1").name == "wc"  # type: ignore[union-attr]
    assert state.supervisor_ids() == ["sup-1"]
    assert state.blob_holders("wc-1-1-stormcode") == {"nimbus-a:6627": 1}
    assert [e.error for e in state.errors("wc-1-1", "split")] == ["boom"]


def test_a_stolen_blob_holder_entry_cannot_be_planted(state: ClusterState, intruder: KazooClient) -> None:
    """Planting a holder pointing at an attacker's server is the way to make daemons fetch its code."""
    populate(state)
    holder = f"{state.root}/blobstore/wc-1-1-stormcode/evil.example:6627"
    with pytest.raises(NoAuthError):
        intruder.create(holder, b"{}", makepath=True)
    with pytest.raises(NoAuthError):
        intruder.create(f"{state.root}/storms/evil-1-1", b"{}", makepath=True)
    assert state.blob_holders("wc-1-1-stormcode") == {"nimbus-a:6627": 1}
    assert state.active_topology_ids() == ["wc-1-1"]


def test_assignment_round_trip_with_auth(state: ClusterState) -> None:
    """Authenticated daemons keep working end to end (writes, reads, watches, ephemeral registration)."""
    from storm_py.cluster_state.models import Assignment

    seen: list[int] = []
    watch = state.watch_assignments(lambda: seen.append(1))
    assignment = Assignment(node_host={"n": "h"}, executor_node_port={(1, 1): ("n", 6700)})
    state.set_assignment("wc-1-1", assignment)
    assert state.assignment("wc-1-1") == assignment
    wait_until(lambda: bool(seen), 10.0, what="the assignments watch")
    watch.cancel()
