"""Digest ACLs, run against the in-memory twin and a real ZooKeeper: without the secret, nothing is readable
or writable; a topology's identity reaches exactly its own nodes."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from storm_py.cluster_state import acl as acls
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import WorkerHeartbeat
from storm_py.cluster_state.storage import StateStorage
from storm_py.errors import StateError

SECRET = "storm:s3cret-cluster-payload"
WRONG = "storm:not-the-secret"

Opener = Callable[[acls.AclPolicy], StateStorage]


@pytest.fixture(params=["memory", pytest.param("kazoo", marks=pytest.mark.zookeeper)])
def open_session(request: pytest.FixtureRequest) -> Iterator[Opener]:
    opened: list[StateStorage] = []
    if request.param == "memory":
        store = MemoryStore()

        def opener(policy: acls.AclPolicy) -> StateStorage:
            storage = MemoryStorage(store, policy)
            opened.append(storage)
            return storage

    else:
        from storm_py.cluster_state.zk import KazooStorage

        zookeeper: Any = request.getfixturevalue("zookeeper")
        chroot: str = request.getfixturevalue("zk_chroot")

        def opener(policy: acls.AclPolicy) -> StateStorage:
            storage = KazooStorage(
                zookeeper.connect_string, zookeeper.port, root_chroot=chroot, session_timeout=6.0,
                connection_timeout=10.0, policy=policy,
            )  # fmt: skip
            opened.append(storage)
            return storage

    try:
        yield opener
    finally:
        for storage in opened:
            storage.close()


def cluster_policy(payload: str = SECRET) -> acls.AclPolicy:
    return acls.policy_from_conf({"storm.zookeeper.auth.payload": payload})


def topology_policy(topology_id: str) -> acls.AclPolicy:
    return acls.policy_from_conf(
        {
            "storm.zookeeper.topology.auth.payload": acls.topology_payload(SECRET, topology_id),
            "storm.zookeeper.superACL": f"digest:{acls.digest_id(SECRET)}",
        }
    )


def refused(action: Callable[[], object]) -> str:
    with pytest.raises(StateError) as info:
        action()
    assert info.value.fields["reason"] == "no_auth", info.value
    return str(info.value)


def heartbeat() -> WorkerHeartbeat:
    return WorkerHeartbeat(topology_id="t-1", time_secs=1.0, executors=[], uptime_secs=1.0)


def test_without_the_secret_nothing_is_readable_or_writable(open_session: Opener) -> None:
    owner = open_session(cluster_policy())
    owner.set("/storm/storms/t-1", b'{"secret": "topology"}')
    owner.set("/storm/assignments/t-1", b"{}")
    owner.create("/storm/supervisors/s-1", b"{}", ephemeral=True)
    owner.create("/storm/errors/t-1/spout/e", b"boom", sequential=True)
    for policy in (acls.AclPolicy(), cluster_policy(WRONG)):
        stranger = open_session(policy)
        for path in ("/storm", "/storm/storms", "/storm/storms/t-1", "/storm/supervisors/s-1"):
            refused(lambda p=path: stranger.get(p))  # type: ignore[misc]
        for path in ("/storm", "/storm/storms", "/storm/errors/t-1/spout"):
            refused(lambda p=path: stranger.children(p))  # type: ignore[misc]
        message = refused(lambda: stranger.set("/storm/storms/t-1", b"forged"))
        assert "/storm/storms/t-1" in message
        refused(lambda: stranger.set("/storm/storms/t-2", b"planted"))
        refused(lambda: stranger.create("/storm/assignments/t-2", b"{}"))
        refused(lambda: stranger.create("/storm/nimbuses/evil", b"{}", ephemeral=True))
        refused(lambda: stranger.set_ephemeral("/storm/supervisors/s-1", b"hijacked"))
        refused(lambda: stranger.delete("/storm/storms/t-1"))
        refused(lambda: stranger.delete("/storm"))
        refused(lambda: stranger.watch_children("/storm/storms", lambda _p: None))
    assert owner.get("/storm/storms/t-1") == b'{"secret": "topology"}'
    assert owner.children("/storm/storms") == ["t-1"]
    assert owner.exists("/storm/supervisors/s-1")
    assert not owner.exists("/storm/storms/t-2") and not owner.exists("/storm/nimbuses/evil")


def test_sessions_with_the_secret_share_everything(open_session: Opener) -> None:
    first, second = open_session(cluster_policy()), open_session(cluster_policy())
    first.set("/storm/storms/t-1", b"a")
    second.set("/storm/storms/t-1", b"b")
    second.create("/storm/storms/t-2", b"c")
    assert first.get("/storm/storms/t-1") == b"b"
    first.delete("/storm/storms")
    assert second.children("/storm") == sorted(second.children("/storm"))
    assert not second.exists("/storm/storms/t-2")


def test_a_topology_reaches_its_own_nodes_only(open_session: Opener) -> None:
    daemon = ClusterState(open_session(cluster_policy()), {})
    raw = daemon.storage
    raw.set("/storm/storms/t-1", b"base-1")
    raw.set("/storm/assignments/t-1", b"assignment-1")
    raw.set("/storm/storms/t-2", b"base-2")
    raw.set("/storm/assignments/t-2", b"assignment-2")
    raw.set("/storm/supervisors/s-1", b"{}")
    worker = ClusterState(open_session(topology_policy("t-1")), {})
    assert worker.storage.get("/storm/storms/t-1") == b"base-1"
    assert worker.storage.get("/storm/assignments/t-1") == b"assignment-1"
    refused(lambda: worker.storage.set("/storm/assignments/t-1", b"forged"))
    refused(lambda: worker.storage.get("/storm/assignments/t-2"))
    refused(lambda: worker.storage.get("/storm/storms/t-2"))
    refused(lambda: worker.storage.children("/storm/supervisors"))
    # Its own heartbeats and errors, once the daemon side made their directories.
    raw.set("/storm/workerbeats/t-1", b"")
    raw.set("/storm/errors/t-1", b"")
    raw.set("/storm/workerbeats/t-2", b"")
    worker.set_worker_heartbeat("t-1", "node-a", 6700, heartbeat())
    worker.report_error("t-1", "spout", "boom", "host", 6700, 1.0)
    assert daemon.worker_heartbeat("t-1", "node-a", 6700) is not None
    assert [e.error for e in daemon.errors("t-1", "spout")] == ["boom"]
    refused(lambda: worker.set_worker_heartbeat("t-2", "node-a", 6700, heartbeat()))
    # The daemon (super identity) can still remove what the worker wrote.
    daemon.remove_worker_heartbeats("t-1")
    daemon.remove_errors("t-1")
    assert daemon.worker_heartbeat("t-1", "node-a", 6700) is None


def test_policy_acls() -> None:
    cluster = cluster_policy()
    own = acls.AclEntry(acls.ALL, "digest", acls.digest_id(SECRET))
    assert cluster.acl_for("/storm/supervisors/s") == (own,)
    topology_id = acls.digest_id(acls.topology_payload(SECRET, "t-1"))
    assert cluster.acl_for("/storm/storms/t-1") == (own, acls.AclEntry(acls.READ, "digest", topology_id))
    assert cluster.acl_for("/storm/workerbeats/t-1/n-1") == (own, acls.AclEntry(acls.ALL, "digest", topology_id))
    assert acls.AclPolicy().acl_for("/storm/storms/t-1") == acls.OPEN_ACL
    expected = base64.b64encode(hashlib.sha1(b"super:secret").digest()).decode()
    assert acls.digest_id("super:secret") == f"super:{expected}"  # ZooKeeper's DigestAuthenticationProvider
    with pytest.raises(Exception, match="digest"):
        acls.policy_from_conf({"storm.zookeeper.auth.scheme": "sasl", "storm.zookeeper.auth.payload": "a:b"})


def test_state_outside_the_cluster_tree_is_shared_by_workers_and_nobody_else(open_session: Opener) -> None:
    """Transactional state and Kafka offsets outlive a topology: a resubmitted topology (a new id, a new identity)
    continues with them.  Workers of any topology and the daemons reach them; a client without the secret does
    not."""
    one = open_session(acls.policy_from_conf(acls.worker_auth({"storm.zookeeper.auth.payload": SECRET}, "t-1")))
    two = open_session(acls.policy_from_conf(acls.worker_auth({"storm.zookeeper.auth.payload": SECRET}, "t-2")))
    daemon = open_session(cluster_policy())
    one.set("/transactional/tx-a/coordinator/currtx", b"1")
    assert two.get("/transactional/tx-a/coordinator/currtx") == b"1"  # the resubmitted topology continues
    two.set("/transactional/tx-a/coordinator/currtx", b"2")
    two.set("/kafka-offsets/spout/partition_0", b"{}")
    assert daemon.get("/transactional/tx-a/coordinator/currtx") == b"2"
    for stranger in (open_session(acls.AclPolicy()), open_session(cluster_policy(WRONG))):
        refused(lambda s=stranger: s.children("/transactional"))  # type: ignore[misc]
        refused(lambda s=stranger: s.get("/transactional/tx-a/coordinator/currtx"))  # type: ignore[misc]
        refused(lambda s=stranger: s.create("/transactional/planted", b""))  # type: ignore[misc]
        refused(lambda s=stranger: s.get("/kafka-offsets/spout/partition_0"))  # type: ignore[misc]
    # inside the cluster's tree the topologies stay apart
    daemon.set("/storm/assignments/t-1", b"a")
    refused(lambda: two.get("/storm/assignments/t-1"))


def test_a_worker_identity_holds_no_cluster_secret() -> None:
    given = acls.worker_auth({"storm.zookeeper.auth.payload": SECRET}, "t-1")
    assert SECRET not in "".join(given.values())
    assert given["storm.zookeeper.superACL"] == f"digest:{acls.digest_id(SECRET)}"
    assert acls.worker_auth({}, "t-1") == {}


def test_kafka_offsets_belong_to_one_topology_name(open_session: Opener) -> None:
    """Outside the cluster's roots a topology's first node is its own: other topologies add theirs beside it
    and change nothing under it; the same name resubmitted (a new id) continues."""
    conf = {"storm.zookeeper.auth.payload": SECRET}
    alpha = open_session(acls.policy_from_conf(acls.worker_auth(conf, "alpha-1-1")))
    beta = open_session(acls.policy_from_conf(acls.worker_auth(conf, "beta-2-2")))
    alpha.set("/kafka-offsets/clicks", b"")
    alpha.set("/kafka-offsets/clicks/partition_0", b"1")
    beta.set("/kafka-offsets/views", b"")
    beta.set("/kafka-offsets/views/partition_0", b"2")
    refused(lambda: beta.set("/kafka-offsets/clicks/partition_0", b"9"))
    refused(lambda: beta.create("/kafka-offsets/clicks/partition_7", b"9"))
    refused(lambda: beta.delete("/kafka-offsets/clicks/partition_0"))
    again = open_session(acls.policy_from_conf(acls.worker_auth(conf, "alpha-3-3")))
    again.set("/kafka-offsets/clicks/partition_0", b"3")
    assert alpha.get("/kafka-offsets/clicks/partition_0") == b"3"
