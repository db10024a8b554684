"""The stored users (storm_py.cluster_state.users): hashed tokens, rotation, removal, planted records."""

from __future__ import annotations

import json

import pytest

from storm_py.cluster_state import znodes
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.users import UserStore, token_hash
from storm_py.errors import ConfigError

CONF = {"nimbus.auth.token": "cluster-secret-cluster-secret"}


@pytest.fixture
def store() -> UserStore:
    return UserStore(ClusterState(MemoryStorage(MemoryStore()), CONF))


def _everything_stored(state: ClusterState) -> str:
    out = []
    for parent in (znodes.users(state.root), znodes.join(state.root, znodes.USER_TOKENS)):
        for name in state.storage.children(parent):
            out.append(name + (state.storage.get(znodes.join(parent, name)) or b"").decode())
    return "\n".join(out)


def test_a_token_identifies_its_user_and_is_stored_only_hashed(store: UserStore) -> None:
    token = store.add("alice", "user", 10.0)
    found = store.identify(token)
    assert found is not None and (found.name, found.role) == ("alice", "user")
    stored = _everything_stored(store.state)
    assert token not in stored and token_hash(token) in stored
    assert store.identify(token + "x") is None and store.identify("") is None
    assert [u.name for u in store.all()] == ["alice"]


def test_rotation_refuses_the_old_token_at_once_and_removal_every_token(store: UserStore) -> None:
    old = store.add("bob", "readonly", 1.0)
    new = store.rotate("bob")
    assert store.identify(old) is None
    user = store.identify(new)
    assert user is not None and user.role == "readonly"
    store.remove("bob")
    assert store.identify(new) is None and store.all() == []


def test_bad_names_roles_and_duplicates_are_refused_naming_them(store: UserStore) -> None:
    for name in ("", "../x", "a/b", "cluster", "-x", "x" * 65):
        with pytest.raises(ConfigError, match="user name"):
            store.add(name, "user", 0.0)
    with pytest.raises(ConfigError, match="role 'root'"):
        store.add("ann", "root", 0.0)
    store.add("ann", "user", 0.0)
    with pytest.raises(ConfigError, match="'ann' already exists"):
        store.add("ann", "admin", 0.0)
    with pytest.raises(ConfigError, match="no user 'zed'"):
        store.rotate("zed")


def test_a_record_planted_without_the_cluster_token_grants_nothing(store: UserStore) -> None:
    state = store.state
    digest = token_hash("planted-token")
    state.storage.set(znodes.user_token(state.root, digest), json.dumps({"name": "mallory"}).encode())
    record = {"name": "mallory", "role": "admin", "token_hash": digest, "created": 0.0}
    state.storage.set(znodes.user(state.root, "mallory"), json.dumps(record).encode())
    assert store.identify("planted-token") is None
    assert store.get("mallory") is None


def test_an_index_entry_left_behind_by_a_rotation_cut_short_names_nobody(store: UserStore) -> None:
    state = store.state
    old = store.add("bob", "user", 1.0)
    index = znodes.user_token(state.root, token_hash(old))
    entry = state.storage.get(index)
    store.rotate("bob")
    assert entry is not None
    state.storage.set(index, entry)  # as if nimbus died between writing the new token and tidying the old one
    assert store.identify(old) is None


def test_a_daemon_without_its_state_recognises_no_user_token_and_never_waits_for_it() -> None:
    import socket

    from storm_py.clock import SYSTEM_CLOCK
    from storm_py.node.user_tokens import TokenDirectory

    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers: a hung ZooKeeper
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    hung = {"storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": silent.getsockname()[1],
            "storm.zookeeper.connection.timeout": 10000}
    directory = TokenDirectory(hung)
    try:
        started = SYSTEM_CLOCK.now()
        assert [directory.identify("some-token") for _ in range(3)] == [None] * 3
        assert SYSTEM_CLOCK.now() - started < 5.0  # not one ZooKeeper connection timeout (10 s)
    finally:
        directory.close()
        silent.close()


def test_a_token_directory_over_a_store_identifies_at_once(store: UserStore) -> None:
    from storm_py.node.user_tokens import TokenDirectory

    token = store.add("ann", "readonly", 0.0)
    directory = TokenDirectory({}, store)
    found = directory.identify(token)
    assert found is not None and found.name == "ann" and directory.identify("x") is None
