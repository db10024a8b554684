"""The cluster-state layer: znode layout, the storage contract and its implementations, the typed facade.

``KazooStorage`` (ZooKeeper) lives in :mod:`storm_py.cluster_state.zk` and is not imported here, so that the
in-process cluster never loads kazoo.
"""

from __future__ import annotations

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import (
    Assignment,
    ErrorInfo,
    ExecutorId,
    NimbusInfo,
    NodePort,
    StormBase,
    SupervisorInfo,
    TopologyStatus,
    WorkerHeartbeat,
)
from storm_py.cluster_state.storage import ConnectionState, LeaderElection, StateStorage, Watch

__all__ = [
    "Assignment",
    "ClusterState",
    "ConnectionState",
    "ErrorInfo",
    "ExecutorId",
    "LeaderElection",
    "MemoryStorage",
    "MemoryStore",
    "NimbusInfo",
    "NodePort",
    "StateStorage",
    "StormBase",
    "SupervisorInfo",
    "TopologyStatus",
    "Watch",
    "WorkerHeartbeat",
]
