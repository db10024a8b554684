"""The rights core (storm_py.nimbus.users): what each request needs, and who has it."""

from __future__ import annotations

import pytest

from storm_py.nimbus.users import Principal, Right, Target, TopologyAcl, allowed, classify

ACL = TopologyAcl.of("alice", {"topology.users": ["bob"], "topology.readonly.users": ["carol"]})


@pytest.mark.parametrize(("method", "path", "right", "action", "topology"), [
    ("GET", "/api/v1/cluster/summary", Right.CLUSTER_READ, "read", None),
    ("GET", "/api/v1/topology/summary", Right.CLUSTER_READ, "read", None),
    ("GET", "/api/v1/topology/wc-1-2", Right.TOPOLOGY_READ, "read", "wc-1-2"),
    ("GET", "/api/v1/topology/wc-1-2/workerlog", Right.TOPOLOGY_READ, "read", "wc-1-2"),
    ("GET", "/api/v1/topology-workers/wc-1-2", Right.TOPOLOGY_READ, "read", "wc-1-2"),
    ("GET", "/api/v1/topology/wc-1-2/autoscale", Right.TOPOLOGY_READ, "read", "wc-1-2"),
    ("POST", "/api/v1/topology/wc-1-2/kill/0", Right.TOPOLOGY_CHANGE, "kill", "wc-1-2"),
    ("POST", "/api/v1/topology/wc-1-2/component/split/debug/enable/10", Right.TOPOLOGY_CHANGE, "debug", "wc-1-2"),
    ("POST", "/api/v1/topology/wc-1-2/profiling/dumpjstack/h:6700", Right.TOPOLOGY_CHANGE, "profile", "wc-1-2"),
    ("POST", "/api/v1/uploadTopology", Right.SUBMIT, "submit", None),
    ("GET", "/metrics", Right.READ_ALL, "metrics", None),
    ("GET", "/api/v1/users", Right.ADMIN, "users list", None),
    ("POST", "/api/v1/users/bob/rotate", Right.ADMIN, "users rotate", None),
    ("DELETE", "/api/v1/users/bob", Right.ADMIN, "users remove", None),
    ("POST", "/api/v1/admin/removeCorruptTopologies", Right.ADMIN, "post admin/removeCorruptTopologies", None),
    ("GET", "/api/v1/stored-blobs/k", Right.ADMIN, "get stored-blobs/k", None),
    ("GET", "/api/v1/something-new", Right.ADMIN, "get something-new", None),  # unknown: an admin's
])
def test_each_request_is_classified_by_its_path(method, path, right, action, topology) -> None:
    assert classify(method, path) == Target(right, action, topology)


def test_a_topology_named_with_a_percent_escape_is_its_unescaped_id() -> None:
    assert classify("POST", "/api/v1/topology/a%2Db/kill").topology == "a-b"


READ, CHANGE = Target(Right.TOPOLOGY_READ, "read", "t"), Target(Right.TOPOLOGY_CHANGE, "kill", "t")
CLUSTER, SUBMIT = Target(Right.CLUSTER_READ, "read"), Target(Right.SUBMIT, "submit")
METRICS, USERS = Target(Right.READ_ALL, "metrics"), Target(Right.ADMIN, "users add")


@pytest.mark.parametrize(("who", "target", "expected"), [
    (Principal("root", "admin"), CHANGE, True),
    (Principal("root", "admin"), USERS, True),
    (Principal("alice", "user"), CHANGE, True),  # the submitter
    (Principal("bob", "user"), CHANGE, True),  # topology.users
    (Principal("carol", "user"), READ, True),  # topology.readonly.users
    (Principal("carol", "user"), CHANGE, False),
    (Principal("dave", "user"), READ, False),  # nobody to this topology
    (Principal("dave", "user"), CHANGE, False),
    (Principal("dave", "user"), CLUSTER, True),
    (Principal("dave", "user"), SUBMIT, True),
    (Principal("dave", "user"), METRICS, False),
    (Principal("dave", "user"), USERS, False),
    (Principal("eve", "readonly"), READ, True),
    (Principal("eve", "readonly"), METRICS, True),
    (Principal("eve", "readonly"), CHANGE, False),
    (Principal("eve", "readonly"), SUBMIT, False),
    (Principal("eve", "readonly"), USERS, False),
    (Principal("ghost", ""), CLUSTER, False),  # no role: nothing
])
def test_rights_by_role_and_topology_acl(who, target, expected) -> None:
    assert allowed(who, target, ACL) is expected


def test_a_topology_that_names_a_user_only_in_readonly_users_gives_no_change_even_if_listed_oddly() -> None:
    odd = TopologyAcl.of("alice", {"topology.users": "bob", "topology.readonly.users": [3, None, "carol"]})
    assert odd.users == frozenset({"bob"}) and odd.readonly_users == frozenset({"carol"})
    assert not allowed(Principal("carol", "user"), CHANGE, odd)
