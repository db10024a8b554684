"""The cluster-state layer: znode layout, the storage contract and its implementations, the typed facade.

``KazooStorage`` (ZooKeeper) lives in :mod:`storm_py.state.zk` and is not imported here, so that the
in-process cluster never loads kazoo.
"""

from __future__ import annotations

from storm_py.state.cluster_state import ClusterState
from storm_py.state.memory import MemoryStorage, MemoryStore
from storm_py.state.models import (
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
from storm_py.state.storage import ConnectionState, LeaderElection, StateStorage, Watch

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
