"""The KeyValueState contract, run on every provider that ships: the in-memory twin, Redis (a real redis-server)
and the durable checkpoint directory (a local path, ``file://`` and fsspec's ``memory://``).  ``backend.reopen()``
gives the state of the same task as a restarted task would find it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py import KeyValueState
from storm_py.api.context import TopologyContext
from storm_py.errors import StateBackendError
from storm_py.stateful.state.key_value import MEMORY_STORES
from storm_py.stateful.state.providers import new_state


def _context(topology: str) -> TopologyContext:
    return TopologyContext(topology_id=f"{topology}-1-1", topology_name=topology, task_id=3, component_id="count",
                           task_to_component={3: "count"}, component_tasks={"count": [3]},
                           component_streams={}, worker_tasks=[3])


class Backend:
    """Opens the state of one task (``count-3``) of a fresh topology, as often as a restart would."""

    def __init__(self, name: str, conf: dict[str, Any], cleanup: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.conf = conf
        self.context = _context(f"contract{uuid.uuid4().hex[:8]}")
        self._cleanup = cleanup

    def reopen(self) -> KeyValueState:
        return new_state("count-3", self.conf, self.context)

    def close(self) -> None:
        MEMORY_STORES.forget(self.context.topology_id)
        self._cleanup()


BACKENDS = ["memory", "redis", "checkpoint_dir-path", "checkpoint_dir-file", "checkpoint_dir-fsspec-memory"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    kind = request.param
    cleanup: Callable[[], None] = lambda: None  # noqa: E731
    if kind == "memory":
        conf: dict[str, Any] = {"topology.state.provider": "memory"}
    elif kind == "redis":
        server = request.getfixturevalue("redis_server")
        conf = {"topology.state.provider": "redis",
                "topology.state.provider.config": {"port": server.port, "key_prefix": "contract:"}}
    elif kind == "checkpoint_dir-path":
        conf = {"topology.state.provider": "checkpoint_dir",
                "topology.state.provider.config": {"url": str(tmp_path / "state"), "compact_files": 3}}
    elif kind == "checkpoint_dir-file":
        conf = {"topology.state.provider": "checkpoint_dir",
                "topology.state.provider.config": {"url": f"file://{tmp_path / 'state'}", "compact_files": 3}}
    else:
        import fsspec

        root = f"/contract-{uuid.uuid4().hex}"
        conf = {"topology.state.provider": "checkpoint_dir",
                "topology.state.provider.config": {"url": f"memory://{root}", "compact_files": 3}}

        def cleanup() -> None:
            fs = fsspec.filesystem("memory")
            if fs.exists(root):
                fs.rm(root, recursive=True)

    chosen = Backend(kind, conf, cleanup)
    try:
        yield chosen
    finally:
        chosen.close()


def test_put_get_delete_iterate_and_len(backend: Backend) -> None:
    s = backend.reopen()
    assert len(s) == 0 and list(s) == [] and s.committed_txid() == -1 and s.prepared_txid() is None
    s.put("a", 1)
    s.put(["k", 2], {"x": [1, 2]})
    s.put(7, b"\x00bytes")
    s.delete("missing")
    assert s.get("a") == 1 and s.get("b") is None and s.get("b", 0) == 0
    assert s.get(["k", 2]) == {"x": [1, 2]} and s.get(7) == b"\x00bytes"
    assert len(s) == 3 and sorted(map(repr, s)) == sorted(map(repr, [("a", 1), (["k", 2], {"x": [1, 2]}),
                                                                     (7, b"\x00bytes")]))
    s.delete("a")
    assert s.get("a") is None and len(s) == 2


def test_a_commit_is_what_a_restarted_task_finds(backend: Backend) -> None:
    s = backend.reopen()
    s.put("a", 1)
    s.put(["k", 2], {"nested": [1, {"y": None}]})
    s.prepare_commit(0)
    assert s.prepared_txid() == 0
    s.commit(0)
    assert s.committed_txid() == 0 and s.prepared_txid() is None
    again = backend.reopen()
    assert dict((repr(k), v) for k, v in again) == {"'a'": 1, "['k', 2]": {"nested": [1, {"y": None}]}}
    assert again.committed_txid() == 0 and again.prepared_txid() is None


def test_changes_after_a_prepare_are_not_in_its_commit(backend: Backend) -> None:
    s = backend.reopen()
    s.put("a", 1)
    s.prepare_commit(1)
    s.put("a", 2)
    s.put("late", 1)
    s.commit(1)
    assert s.get("a") == 2 and s.get("late") == 1 and s.committed_txid() == 1  # the current map goes on
    assert dict(backend.reopen()) == {"a": 1}
    s.prepare_commit(2)
    s.commit(2)
    assert dict(backend.reopen()) == {"a": 2, "late": 1}


def test_rollback_returns_to_the_last_commit_and_commit_needs_a_prepare(backend: Backend) -> None:
    s = backend.reopen()
    s.put("a", 1)
    s.put("gone", 0)
    s.prepare_commit(1)
    s.commit(1)
    s.put("b", 3)
    s.put("a", 5)
    s.delete("gone")
    s.prepare_commit(2)
    s.put("c", 4)
    s.rollback()
    assert dict(s) == {"a": 1, "gone": 0} and s.prepared_txid() is None
    assert dict(backend.reopen()) == {"a": 1, "gone": 0} and backend.reopen().prepared_txid() is None
    with pytest.raises(StateBackendError, match="cannot commit txid 2"):
        s.commit(2)
    s.commit(1)  # committing a committed txid again does nothing (a recovery may)
    assert s.committed_txid() == 1


def test_a_task_restarted_between_prepare_and_commit_commits_the_prepared_changes(backend: Backend) -> None:
    first = backend.reopen()
    first.put("a", 1)
    first.prepare_commit(0)
    first.commit(0)
    first.put("a", 5)
    first.put("b", 6)
    first.prepare_commit(1)
    again = backend.reopen()  # the task died between prepare and commit
    assert again.committed_txid() == 0 and again.prepared_txid() == 1
    again.commit(1)
    assert dict(backend.reopen()) == {"a": 5, "b": 6} and backend.reopen().committed_txid() == 1


def test_a_task_restarted_between_prepare_and_commit_can_roll_back(backend: Backend) -> None:
    first = backend.reopen()
    first.put("a", 1)
    first.prepare_commit(0)
    first.commit(0)
    first.put("a", 5)
    first.delete("a")
    first.put("b", 6)
    first.prepare_commit(1)
    again = backend.reopen()
    again.rollback()
    assert dict(again) == {"a": 1}
    assert dict(backend.reopen()) == {"a": 1} and backend.reopen().prepared_txid() is None


def test_a_later_prepare_replaces_the_earlier_one(backend: Backend) -> None:
    s = backend.reopen()
    s.put("a", 1)
    s.prepare_commit(3)
    s.put("b", 2)
    s.prepare_commit(4)
    assert backend.reopen().prepared_txid() == 4
    s.commit(4)
    assert dict(backend.reopen()) == {"a": 1, "b": 2}


def test_commit_without_a_txid_commits_the_current_map_at_once(backend: Backend) -> None:
    s = backend.reopen()
    s.put("pos", 10)
    s.commit()
    s.put("pos", 20)
    s.commit()
    assert backend.reopen().get("pos") == 20


def test_many_checkpoints_keep_every_key(backend: Backend) -> None:
    s = backend.reopen()
    want: dict[str, int] = {}
    for txid in range(12):
        for i in range(txid, txid + 5):
            s.put(f"k{i}", txid)
            want[f"k{i}"] = txid
        if txid % 3 == 2:
            s.delete(f"k{txid - 2}")
            want.pop(f"k{txid - 2}")
        s.prepare_commit(txid)
        s.commit(txid)
        assert dict(backend.reopen()) == want, txid
    assert backend.reopen().committed_txid() == 11
