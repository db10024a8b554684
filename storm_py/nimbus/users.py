"""This module owns who may do what on a shared cluster (pure): roles, a topology's users, the right a request needs.

Every request reaching nimbus's REST API is classified by :func:`classify` from its method and path alone (so a
route added later is covered by the rule of its path: a read of ``/api/v1/topology/<id>/...`` needs the right to
read that topology, any other method under it the right to change it, and a path the table does not know needs an
admin) and decided by :func:`allowed` from the caller and, for a topology, its :class:`TopologyAcl`:

* role ``admin`` (stored, listed in ``nimbus.admins``, or the cluster token): everything;
* role ``readonly``: every read (cluster, every topology, ``/metrics``, blobs), no change;
* role ``user``: the cluster summaries, submitting, blobs (their own ACLs apply), and what a topology grants:
  its submitter and ``topology.users`` read and change it, its ``topology.readonly.users`` read it.

:func:`cluster_actions` and :func:`topology_actions` name what a caller may do, for the UI to show only that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any
from urllib.parse import unquote, urlsplit

from storm_py.cluster_state.users import ADMIN, READONLY, USER

API = "/api/v1"


class Right(Enum):
    """What a request needs."""

    CLUSTER_READ = "cluster-read"  # the summaries every user sees
    READ_ALL = "read-all"  # every topology's figures at once (/metrics)
    TOPOLOGY_READ = "topology-read"
    TOPOLOGY_CHANGE = "topology-change"
    SUBMIT = "submit"
    BLOB_READ = "blob-read"
    BLOB_WRITE = "blob-write"
    ADMIN = "admin"


@dataclass(frozen=True)
class Target:
    """A request as the rights see it: the right it needs, the action's name (for the audit), the topology."""

    right: Right
    action: str
    topology: str | None = None


@dataclass(frozen=True)
class Principal:
    """An identified caller."""

    name: str
    role: str


@dataclass(frozen=True)
class TopologyAcl:
    """Who a topology grants rights to."""

    owner: str
    users: frozenset[str] = frozenset()
    readonly_users: frozenset[str] = frozenset()

    @classmethod
    def of(cls, owner: str, conf: Mapping[str, Any]) -> TopologyAcl:
        """The ACL of a topology submitted by ``owner`` with ``conf`` (``topology.users``,
        ``topology.readonly.users``: lists of names; anything else grants nothing)."""
        return cls(owner, _names(conf.get("topology.users")), _names(conf.get("topology.readonly.users")))


#: the topology conf keys that name users
ACL_KEYS = ("topology.users", "topology.readonly.users")


def acl_problems(conf: Mapping[str, Any], known: Callable[[str], bool]) -> list[str]:
    """What is wrong with the user names a topology's ``conf`` grants rights to (empty: nothing): each ACL key must
    be a list of names, each a user ``known`` to the cluster."""
    problems = []
    for key in ACL_KEYS:
        value = conf.get(key)
        if value is None:
            continue
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
            problems.append(f"{key} must be a list of user names, not {value!r}")
            continue
        unknown = sorted(v for v in set(value) if not known(v))
        if unknown:
            problems.append(f"{key} names users this cluster does not know: {unknown} (storm-py users add NAME)")
    return problems


def _names(value: object) -> frozenset[str]:
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, (list, tuple)):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


_CLUSTER_READS = frozenset({"cluster/configuration", "cluster/summary", "supervisor/summary", "nimbus/summary",
                            "topology/summary"})
_VERBS = {"profiling": "profile"}


def classify(method: str, path: str) -> Target:
    """The right ``method path`` needs (``path``: the URL path; a query string is ignored)."""
    path = urlsplit(path).path
    read = method in ("GET", "HEAD")
    if path.rstrip("/") == "/metrics":
        return Target(Right.READ_ALL if read else Right.ADMIN, "metrics")
    if not path.startswith(API + "/"):
        return Target(Right.ADMIN, f"{method.lower()} {path}")
    rest = path[len(API) + 1:].rstrip("/")
    parts = [unquote(p) for p in rest.split("/")]
    head = parts[0]
    if read and rest in _CLUSTER_READS:
        return Target(Right.CLUSTER_READ, "read")
    if head in ("topology", "topology-workers") and len(parts) >= 2 and parts[1]:
        topology = parts[1]
        if read:
            return Target(Right.TOPOLOGY_READ, "read", topology)
        verb = parts[2] if len(parts) >= 3 else "change"
        if verb == "component" and len(parts) >= 5:
            verb = parts[4]
        return Target(Right.TOPOLOGY_CHANGE, _VERBS.get(verb, verb), topology)
    if head == "uploadTopology":
        return Target(Right.SUBMIT, "submit")
    if head == "blobs":
        return Target(Right.BLOB_READ if read else Right.BLOB_WRITE, f"blob {method.lower()}")
    if head == "users":
        action = {"GET": "users list", "POST": "users add", "DELETE": "users remove"}.get(method, "users")
        if not read and len(parts) >= 3 and parts[2] == "rotate":
            action = "users rotate"
        return Target(Right.ADMIN, action, None)
    return Target(Right.ADMIN, f"{method.lower()} {rest}")


def allowed(who: Principal, target: Target, acl: TopologyAcl | None) -> bool:
    """Whether ``who`` may do ``target`` (``acl``: the target topology's, None when it has none or is unknown)."""
    if who.role == ADMIN:
        return True
    right = target.right
    if who.role == READONLY:
        return right in (Right.CLUSTER_READ, Right.READ_ALL, Right.TOPOLOGY_READ, Right.BLOB_READ)
    if who.role != USER:
        return False
    if right in (Right.CLUSTER_READ, Right.SUBMIT, Right.BLOB_READ, Right.BLOB_WRITE):
        return True
    if right in (Right.TOPOLOGY_READ, Right.TOPOLOGY_CHANGE):
        if acl is None:
            return target.topology is not None  # no such topology: its route answers 404
        changers = acl.users | {acl.owner}
        if right == Right.TOPOLOGY_CHANGE:
            return who.name in changers
        return who.name in changers or who.name in acl.readonly_users
    return False


#: The actions on a topology, by the name the UI and the audit give them (each one changes the topology).
TOPOLOGY_ACTIONS = ("activate", "deactivate", "rebalance", "kill", "debug", "logconfig", "profile")
#: The actions on the cluster: submitting a topology, managing the users.
CLUSTER_ACTIONS = {"submit": Right.SUBMIT, "users": Right.ADMIN}


def cluster_actions(who: Principal) -> list[str]:
    """The cluster actions ``who`` may take, in :data:`CLUSTER_ACTIONS`' order."""
    return [name for name, right in CLUSTER_ACTIONS.items() if allowed(who, Target(right, name), None)]


def topology_actions(who: Principal, topology: str, acl: TopologyAcl | None) -> list[str]:
    """The actions ``who`` may take on ``topology`` (``acl``: its ACL; None grants a user nothing here)."""
    if acl is None and who.role != ADMIN:
        return []
    return [a for a in TOPOLOGY_ACTIONS if allowed(who, Target(Right.TOPOLOGY_CHANGE, a, topology), acl)]
