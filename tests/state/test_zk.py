"""KazooStorage beyond the shared contract: server restarts, outages, connection errors, chroots, config."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from storm_py.clock import wait_until
from storm_py.cluster_state.zk import KazooStorage, hosts_string
from storm_py.config import defaults
from storm_py.errors import StateError
from tests.zk_fixture import ZooKeeperServer, free_port

from .conftest import WAIT, ZK_SESSION_TIMEOUT, Recorder, barrier

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def open_storage(zookeeper: ZooKeeperServer, zk_chroot: str) -> Iterator[Callable[..., KazooStorage]]:
    opened: list[KazooStorage] = []

    def factory(**kwargs: object) -> KazooStorage:
        options: dict[str, object] = {
            "root_chroot": zk_chroot,
            "session_timeout": ZK_SESSION_TIMEOUT,
            "connection_timeout": 10.0,
        }
        options.update(kwargs)
        storage = KazooStorage(zookeeper.connect_string, zookeeper.port, **options)  # type: ignore[arg-type]
        opened.append(storage)
        return storage

    yield factory
    for storage in opened:
        storage.close()


def test_survives_a_zookeeper_restart(
    zookeeper: ZooKeeperServer, open_storage: Callable[..., KazooStorage]
) -> None:
    owner, watcher = open_storage(), open_storage()
    owner.set_ephemeral("/supervisors/s1", b"registered")
    owner.create("/nimbuses/n1", b"nimbus", ephemeral=True)
    owner.set("/assignments/t1", b"v1")
    election = owner.elect("/leader-lock", "n1")
    wait_until(election.is_leader, WAIT, what="the only candidate to lead")
    data_calls, child_calls, states = Recorder(), Recorder(), Recorder()
    watcher.watch_data("/assignments/t1", data_calls)
    watcher.watch_children("/supervisors", child_calls)
    owner.add_connection_listener(states)

    zookeeper.restart()

    states.wait_for(
        lambda calls: "suspended" in calls and calls[-1] == "connected", "suspended, then connected"
    )
    wait_until(lambda: watcher.connection_state() == "connected", WAIT, what="the watcher to reconnect")
    # Persistent and ephemeral nodes are there (kept by the restored session, or re-created by a new one).
    wait_until(
        lambda: watcher.get("/supervisors/s1") == b"registered" and watcher.get("/nimbuses/n1") == b"nimbus",
        WAIT,
        what="the ephemeral nodes after the restart",
    )
    assert watcher.get("/assignments/t1") == b"v1"
    wait_until(election.is_leader, WAIT, what="the leader to lead again")
    # The watches are still armed.
    owner.set("/assignments/t1", b"v2")
    data_calls.wait_for(lambda calls: bool(calls), "the data watch after the restart")
    before = len(child_calls)
    owner.set_ephemeral("/supervisors/s2", b"")
    child_calls.wait_count(before + 1, "the children watch after the restart")


def test_session_expiry_during_a_restart(
    zookeeper: ZooKeeperServer, open_storage: Callable[..., KazooStorage]
) -> None:
    owner, watcher = open_storage(), open_storage()
    owner.set_ephemeral("/supervisors/s1", b"registered")
    owner.expire_session()
    zookeeper.restart()
    wait_until(
        lambda: owner.connection_state() == "connected" and watcher.get("/supervisors/s1") == b"registered",
        WAIT,
        what="the ephemeral node in a new session after the restart",
    )
    owner.set_ephemeral("/supervisors/s1", b"heartbeat")
    assert watcher.get("/supervisors/s1") == b"heartbeat"


def test_operations_fail_with_a_state_error_while_zookeeper_is_down(
    zookeeper: ZooKeeperServer, open_storage: Callable[..., KazooStorage]
) -> None:
    storage = open_storage(operation_timeout=0.5)
    storage.set("/x", b"1")
    states = Recorder()
    storage.add_connection_listener(states)
    zookeeper.stop()
    try:
        states.wait_for(lambda calls: "suspended" in calls, "the suspension")
        assert storage.connection_state() == "suspended"
        with pytest.raises(StateError) as info:
            storage.get("/x")
        assert info.value.fields["reason"] == "connection"
        assert info.value.fields["path"] == "/x"
        assert zookeeper.connect_string in str(info.value)
    finally:
        zookeeper.start()
    states.wait_for(lambda calls: calls[-1] == "connected", "the reconnection")
    assert storage.get("/x") == b"1"


def test_unreachable_servers_give_a_state_error_naming_them() -> None:
    port = free_port()
    with pytest.raises(StateError) as info:
        KazooStorage(["127.0.0.1"], port, connection_timeout=0.5)
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message
    assert info.value.fields["reason"] == "connection"
    assert info.value.__cause__ is not None


def test_chroots_isolate_clients(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    first = KazooStorage(zookeeper.connect_string, zookeeper.port, root_chroot=zk_chroot + "/one")
    second = KazooStorage(zookeeper.connect_string, zookeeper.port, root_chroot=zk_chroot + "/two")
    outer = KazooStorage(zookeeper.connect_string, zookeeper.port, root_chroot=zk_chroot)
    try:
        first.set("/x", b"1")
        assert second.get("/x") is None
        assert outer.get("/one/x") == b"1"
        created = first.create("/seq-", b"", sequential=True)
        assert created.startswith("/seq-")
        assert first.children("/") == sorted(["x", created.removeprefix("/")])
        first.delete("/")  # clears the chroot's content, keeps working
        assert first.children("/") == []
        first.set("/y", b"")
        assert outer.children("/one") == ["y"]
    finally:
        for storage in (first, second, outer):
            storage.close()


def test_root_listing_hides_zookeepers_own_node(zookeeper: ZooKeeperServer) -> None:
    storage = KazooStorage(zookeeper.connect_string, zookeeper.port)
    try:
        assert "zookeeper" not in storage.children("/")
    finally:
        storage.close()


def test_from_conf(zookeeper: ZooKeeperServer, zk_chroot: str) -> None:
    conf = defaults()
    conf["storm.zookeeper.servers"] = [zookeeper.host]
    conf["storm.zookeeper.port"] = zookeeper.port
    conf["storm.zookeeper.session.timeout"] = 4000
    storage = KazooStorage.from_conf(conf, root_chroot=zk_chroot)
    try:
        storage.set("/conf", b"ok")
        assert storage.get("/conf") == b"ok"
        assert storage.hosts == zookeeper.connect_string
    finally:
        storage.close()


def test_a_second_client_sees_expiry_notifications(open_storage: Callable[..., KazooStorage]) -> None:
    owner, watcher = open_storage(), open_storage()
    owner.create("/seq-", b"", ephemeral=True, sequential=True)
    calls = Recorder()
    watcher.watch_children("/", calls)
    barrier(owner, watcher)
    calls.calls.clear()
    old_session = owner.session_id
    owner.expire_session()
    calls.wait_for(lambda c: bool(c), "the sequential node's removal")
    wait_until(lambda: owner.session_id not in (None, old_session), WAIT, what="a new session id")


@pytest.mark.parametrize(
    ("servers", "port", "expected"),
    [
        (["a", "b"], 2181, "a:2181,b:2181"),
        ("a, b:2182", 2181, "a:2181,b:2182"),
        (["127.0.0.1:9"], 1, "127.0.0.1:9"),
    ],
)
def test_hosts_string(servers: list[str] | str, port: int, expected: str) -> None:
    assert hosts_string(servers, port) == expected


def test_hosts_string_rejects_an_empty_list() -> None:
    with pytest.raises(StateError):
        hosts_string([], 2181)
