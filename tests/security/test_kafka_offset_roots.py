"""Kafka spout offsets in a real ZooKeeper belong to one topology (by name): another topology's workers can
neither change them nor add nodes under them, while a resubmitted topology of the same name continues them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from storm_py.cluster_state import znodes
from storm_py.cluster_state.acl import topology_name, worker_auth
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.zk import KazooStorage
from storm_py.errors import StateError
from tests.zk_fixture import digest_conf

pytestmark = pytest.mark.zookeeper

SECRET = "storm:77ab-cluster-secret"
ZK_ROOT = "/kafka-spout"


@pytest.fixture
def cluster_conf(zookeeper: Any, zk_chroot: str) -> dict[str, Any]:
    return {**digest_conf(zookeeper, zk_chroot, SECRET), "transactional.zookeeper.root": f"{zk_chroot}/transactional"}


@pytest.fixture
def worker_of(cluster_conf: dict[str, Any], zk_chroot: str) -> Iterator[Any]:
    """Opens the cluster state as a worker of a topology id would (the identities its supervisor hands it)."""
    opened: list[ClusterState] = []

    def open_worker(topology_id: str) -> ClusterState:
        conf = {k: v for k, v in cluster_conf.items() if k != "storm.zookeeper.auth.payload"}
        conf.update(worker_auth(cluster_conf, topology_id))
        state = ClusterState(KazooStorage.from_conf(conf), conf)
        opened.append(state)
        return state

    yield open_worker
    for state in opened:
        state.close()


def offset(topology_id: str, n: int) -> dict[str, Any]:
    return {"topology": {"id": topology_id, "name": topology_name(topology_id)}, "offset": n, "partition": 0}


def test_a_topology_writes_only_under_its_own_offsets_root(worker_of: Any, zk_chroot: str) -> None:
    root = f"{zk_chroot}{ZK_ROOT}"
    alpha = worker_of("alpha-1-1700000000")
    beta = worker_of("beta-2-1700000001")
    alpha.kafka_offset_set(root, "clicks", 0, offset("alpha-1-1700000000", 10))
    beta.kafka_offset_set(root, "views", 0, offset("beta-2-1700000001", 5))  # its own root beside alpha's

    with pytest.raises(StateError):
        beta.kafka_offset_set(root, "clicks", 0, offset("alpha-1-1700000000", 999_999))  # overwrite alpha's
    with pytest.raises(StateError):
        beta.kafka_offset_set(root, "clicks", 7, offset("alpha-1-1700000000", 999_999))  # plant a partition
    with pytest.raises(StateError):
        beta.storage.delete(znodes.kafka_spout_partition(root, "clicks", 0))
    assert alpha.kafka_offset_get(root, "clicks", 0) == offset("alpha-1-1700000000", 10)
    assert alpha.kafka_offset_get(root, "clicks", 7) is None

    # alpha killed and resubmitted: a new topology id, the same name, the same offsets
    again = worker_of("alpha-3-1700000100")
    again.kafka_offset_set(root, "clicks", 0, offset("alpha-3-1700000100", 11))
    assert again.kafka_offset_get(root, "clicks", 0) == offset("alpha-3-1700000100", 11)


def test_topology_names_come_from_ids() -> None:
    assert topology_name("word-count-3-1700000000") == "word-count"
    assert topology_name("odd") == "odd"
