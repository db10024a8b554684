"""Fixtures of the state tests: a ``backend`` that opens storage sessions on one shared tree.

``backend`` is parametrized over the in-memory twin and a real ZooKeeper (``zookeeper`` marker); both sessions
of a test see the same tree (a per-test chroot for ZooKeeper).  Every session is closed at teardown.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.storage import StateStorage
from storm_py.errors import WaitTimeoutError

#: Session timeout of test clients, in seconds (the test server allows 1 to 10 s).
ZK_SESSION_TIMEOUT = 6.0
WAIT = 20.0


class Backend:
    """Opens sessions on one tree and plays failures on them."""

    name = "abstract"

    def __init__(self) -> None:
        self.sessions: list[Any] = []

    def session(self) -> StateStorage:
        raise NotImplementedError

    def expire(self, storage: StateStorage) -> None:
        """Make ``storage``'s session expire (its owner gets a new one)."""
        storage.expire_session()  # type: ignore[attr-defined]

    def close(self) -> None:
        for storage in self.sessions:
            storage.close()


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryStore()

    def session(self) -> StateStorage:
        storage = MemoryStorage(self.store)
        self.sessions.append(storage)
        return storage


class KazooBackend(Backend):
    name = "kazoo"

    def __init__(self, zookeeper: Any, chroot: str) -> None:
        super().__init__()
        self.zookeeper = zookeeper
        self.chroot = chroot

    def session(self) -> StateStorage:
        from storm_py.cluster_state.zk import KazooStorage

        storage = KazooStorage(
            self.zookeeper.connect_string,
            self.zookeeper.port,
            root_chroot=self.chroot,
            session_timeout=ZK_SESSION_TIMEOUT,
            connection_timeout=10.0,
        )
        self.sessions.append(storage)
        return storage


@pytest.fixture(params=["memory", pytest.param("kazoo", marks=pytest.mark.zookeeper)])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        chosen: Backend = MemoryBackend()
    else:
        chosen = KazooBackend(request.getfixturevalue("zookeeper"), request.getfixturevalue("zk_chroot"))
    try:
        yield chosen
    finally:
        chosen.close()


class Recorder:
    """Collects callback arguments (from the storage thread) for tests to wait on."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, *args: Any) -> None:
        self.calls.append(args[0] if len(args) == 1 else args)

    def __len__(self) -> int:
        return len(self.calls)

    def wait_for(self, predicate: Callable[[list[Any]], bool], what: str, timeout: float = WAIT) -> None:
        try:
            wait_until(lambda: predicate(list(self.calls)), timeout, what=what)
        except WaitTimeoutError as err:
            raise AssertionError(f"{err}; calls so far: {self.calls}") from err

    def wait_count(self, count: int, what: str = "callbacks", timeout: float = WAIT) -> None:
        self.wait_for(lambda calls: len(calls) >= count, f"{count} {what}", timeout)


def barrier(writer: StateStorage, watcher: StateStorage) -> None:
    """Return once ``watcher`` has delivered every notification caused by ``writer``'s earlier writes.

    Notifications reach a session in order, so a fresh watch seeing a fresh write means the earlier ones
    arrived too; this replaces sleeping "long enough" before asserting that something did not happen.
    """
    path = f"/barrier-{uuid.uuid4().hex}"
    seen = Recorder()
    watch = watcher.watch_data(path, seen)
    writer.set(path, b"")
    seen.wait_count(1, f"the barrier write at {path}")
    watch.cancel()
    writer.delete(path)


@pytest.fixture
def recorder() -> Callable[[], Recorder]:
    return Recorder
