"""This module owns nimbus's administration routes (``storm-py admin``); each needs the token and the leader.

* ``POST /api/v1/admin/removeCorruptTopologies`` -> ``{"removed": [{"id", "name", "missing": [keys]}]}``: kills at
  once every live topology whose package blobs no nimbus holds any more (its workers could never start again),
  as Storm's ``admin remove_corrupt_topologies`` does.
"""

from __future__ import annotations

from typing import Any, Protocol

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import NotLeaderError
from storm_py.nimbus.blobstore import topology_keys
from storm_py.nimbus.core import Nimbus
from storm_py.node.http_api import Request, Route

API = "/api/v1"


class AdminNode(Protocol):
    """What the admin routes need of the nimbus daemon."""

    state: ClusterState
    nimbus: Nimbus

    def is_leader(self) -> bool: ...

    def leader_id(self) -> str | None: ...

    def wake(self) -> None: ...


def corrupt_topologies(state: ClusterState) -> list[dict[str, Any]]:
    """Live topologies whose package blobs have no holder: ``[{"id", "name", "missing"}]``."""
    out = []
    for tid, base in sorted(state.storm_bases().items()):
        missing = [k for k in topology_keys(tid) if not state.blob_holders(k)]
        if missing:
            out.append({"id": tid, "name": base.name, "missing": missing})
    return out


def admin_routes(node: AdminNode) -> list[Route]:
    """The administration routes of ``node``."""

    def remove_corrupt(req: Request) -> Any:
        if not node.is_leader():
            leader = node.leader_id()
            raise NotLeaderError(f"this nimbus is not the leader (the leader is {leader or 'not elected yet'})",
                                 leader=leader or "")
        found = corrupt_topologies(node.state)
        for row in found:
            node.nimbus.kill_topology(row["name"], 0)
        node.wake()
        return {"removed": found}

    return [Route("POST", API + "/admin/removeCorruptTopologies", remove_corrupt, protected=True)]
