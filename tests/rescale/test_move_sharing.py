"""The moves of one worker's new tasks share their reads: each previous-generation state is read and its keys
hashed once, bucketed by key group for the worker's pending new tasks, taken by group, and gone once every
local task's move is committed; a move that fails takes its groups again; every provider writes a move's
entries in bulk (``put_all``) as ``put`` would one by one."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_py.runtime.key_groups import groups_of_task, task_index_of_group
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, LocalBlobs
from storm_py.stateful.state.key_buckets import GroupedSources, by_key_group, key_group_of
from storm_py.stateful.state.key_group_move import KeyGroupMove
from storm_py.stateful.state.key_value import KeyValueState, MemoryStore
from storm_py.stateful.state.redis_state import RedisKeyValueState
from storm_py.stateful.state.task_names import Rescales, namespace

M = 128
KEYS = {f"k{i}": i for i in range(2000)}


class Stores:
    """In-memory states by namespace, counting the opens of each (a source read opens it)."""

    def __init__(self) -> None:
        self.stores: dict[str, MemoryStore] = {}
        self.opens: Counter[str] = Counter()

    def open(self, ns: str) -> KeyValueState:
        self.opens[ns] += 1
        return KeyValueState(self.stores.setdefault(ns, MemoryStore()))

    def committed(self, ns: str) -> dict[Any, Any]:
        return dict(self.stores[ns].committed) if ns in self.stores else {}


def _seed(stores: Stores, rescales: Rescales, tasks: int, txid: int) -> None:
    states = [stores.open(namespace(rescales, "count", i, -1, 0)) for i in range(tasks)]
    for k, v in KEYS.items():
        states[task_index_of_group(key_group_of(k, M), tasks, M)].put(k, v)
    for s in states:
        s.prepare_commit(txid)
        s.commit(txid)
    stores.opens.clear()


def test_key_groups_bucket_each_key_once_and_only_the_groups_asked_for() -> None:
    entries = [("a", 1), (("x", 2), 2), (["x", 2], 3), (7, 4), ("b", 5)]
    wanted = {key_group_of("a", M), key_group_of(("x", 2), M), key_group_of(7, M)}
    assert key_group_of("b", M) not in wanted
    buckets = by_key_group(entries, wanted, M)
    assert set(buckets) == wanted
    for group, bucket in buckets.items():
        assert all(key_group_of(k, M) == group for k, _ in bucket)
    taken = [kv for bucket in buckets.values() for kv in bucket]
    assert sorted(map(repr, taken)) == sorted(map(repr, entries[:4]))  # "b"'s group was not asked for
    assert key_group_of(("x", 2), M) == key_group_of(["x", 2], M)  # a list key is its tuple's values
    assert key_group_of("a", M) != key_group_of(("a", "a"), M)


def test_the_new_tasks_of_one_worker_read_each_source_once_and_free_it_after_their_moves() -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, rescales, 4, txid=3)
    shared = GroupedSources()
    shares = []
    for i in range(8):
        ns = namespace(rescales, "count", i, -1)
        KeyGroupMove(rescales, "count", i, M, stores.open, range(8), shared, "topo").settle(stores.open(ns), 3)
        shares.append(stores.committed(ns))
    for old in range(4):
        assert stores.opens[namespace(rescales, "count", old, -1, 0)] == 1  # read once for both its targets
    assert len(shared) == 0  # every bucket taken: nothing held after the moves
    merged: dict[Any, Any] = {}
    for i, share in enumerate(shares):
        assert all(key_group_of(k, M) in groups_of_task(i, 8, M) for k in share)
        merged.update(share)
    assert merged == KEYS and sum(map(len, shares)) == len(KEYS)


def test_a_worker_keeps_only_the_groups_of_its_own_pending_tasks() -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, rescales, 4, txid=3)
    shared = GroupedSources()
    # tasks 0 and 1 run here (both read old task 0), 2 and 3 (old task 1) run in another worker
    KeyGroupMove(rescales, "count", 0, M, stores.open, [0, 1], shared, "topo").settle(
        stores.open(namespace(rescales, "count", 0, -1)), 3)
    assert len(shared) == 1  # task 1's groups wait for it
    KeyGroupMove(rescales, "count", 1, M, stores.open, [0, 1], shared, "topo").settle(
        stores.open(namespace(rescales, "count", 1, -1)), 3)
    assert len(shared) == 0
    # a task whose local neighbour moved already (before a worker restart) keeps nothing for it
    KeyGroupMove(rescales, "count", 5, M, stores.open, [5], GroupedSources(), "topo").settle(
        stores.open(namespace(rescales, "count", 5, -1)), 3)
    KeyGroupMove(rescales, "count", 4, M, stores.open, [4, 5], shared, "topo").settle(
        stores.open(namespace(rescales, "count", 4, -1)), 3)
    assert len(shared) == 0


def test_groups_read_as_of_another_checkpoint_are_freed_by_the_task_that_moved() -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, rescales, 4, txid=3)
    shared = GroupedSources()
    # task 0 moves as of checkpoint 3 and keeps task 1's groups; task 1 moves as of 2 (a rollback's recovery)
    KeyGroupMove(rescales, "count", 0, M, stores.open, [0, 1], shared, "topo").settle(
        stores.open(namespace(rescales, "count", 0, -1)), 3)
    assert len(shared) == 1
    KeyGroupMove(rescales, "count", 1, M, stores.open, [0, 1], shared, "topo").settle(
        stores.open(namespace(rescales, "count", 1, -1)), 2)
    assert len(shared) == 0


class FailingCommit(KeyValueState):
    """A task's own state whose first commit fails (the task dies before its move is committed)."""

    failed = False

    def commit(self, txid: int | None = None) -> None:
        if not FailingCommit.failed:
            FailingCommit.failed = True
            raise OSError("the disk went away")
        super().commit(txid)


def test_a_move_that_failed_takes_its_groups_again_from_the_shared_buckets() -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, rescales, 4, txid=3)
    shared = GroupedSources()
    ns = namespace(rescales, "count", 0, -1)
    mover = KeyGroupMove(rescales, "count", 0, M, stores.open, [0, 1], shared, "topo")
    with pytest.raises(OSError):
        mover.settle(FailingCommit(stores.stores.setdefault(ns, MemoryStore())), 3)
    assert mover.pending
    again = KeyGroupMove(rescales, "count", 0, M, stores.open, [0, 1], shared, "topo")
    assert again.settle(stores.open(ns), 3) == sum(1 for k in KEYS if key_group_of(k, M) in groups_of_task(0, 8, M))
    assert stores.committed(ns) == {k: v for k, v in KEYS.items() if key_group_of(k, M) in groups_of_task(0, 8, M)}


def test_two_topologies_in_one_process_move_their_own_states() -> None:
    shared = GroupedSources()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    mine, theirs = Stores(), Stores()
    _seed(mine, rescales, 4, txid=3)
    _seed(theirs, rescales, 4, txid=3)
    for k in KEYS:
        for i in range(4):
            ns = namespace(rescales, "count", i, -1, 0)
            if k in theirs.stores[ns].committed:
                theirs.stores[ns].committed[k] = -1
    ns = namespace(rescales, "count", 0, -1)
    KeyGroupMove(rescales, "count", 0, M, mine.open, range(8), shared, "mine").settle(mine.open(ns), 3)
    KeyGroupMove(rescales, "count", 0, M, theirs.open, range(8), shared, "theirs").settle(theirs.open(ns), 3)
    assert mine.committed(ns) and all(v >= 0 for v in mine.committed(ns).values())
    assert theirs.committed(ns) and all(v == -1 for v in theirs.committed(ns).values())


def test_sources_of_two_topologies_or_two_checkpoints_are_kept_apart() -> None:
    shared = GroupedSources()
    reads: list[str] = []

    def read(name: str) -> Any:
        def entries() -> list[tuple[Any, Any]]:
            reads.append(name)
            return [(name, 1)]
        return entries

    groups = set(range(M))
    a = shared.buckets(("t1", "count-5", 3), read("a"), lambda: groups, M)
    b = shared.buckets(("t2", "count-5", 3), read("b"), lambda: groups, M)
    c = shared.buckets(("t1", "count-5", 4), read("c"), lambda: groups, M)
    assert shared.buckets(("t1", "count-5", 3), read("again"), lambda: groups, M) is a
    assert reads == ["a", "b", "c"] and a != b and a != c
    shared.release([("t1", "count-5", 3)], range(M))
    assert len(shared) == 1  # t1's state as of either checkpoint is released; t2's is not
    assert shared.buckets(("t2", "count-5", 3), read("again"), lambda: groups, M) is b


def _states(tmp_path: Path, redis_server: Any) -> list[KeyValueState]:
    return [KeyValueState(),
            RedisKeyValueState.from_config("count@1-0", {"port": redis_server.port, "key_prefix": "bulk:"}),
            CheckpointDirState(LocalBlobs(tmp_path / "count@1-0", fsync=False))]


def test_put_all_is_put_of_every_pair_in_order_on_every_provider(tmp_path: Path, redis_server: Any) -> None:
    hashable = [("first", 1), ("a", 1), ("first", 2)]
    pairs = [("a", 1), (["l", 1], 2), (("t", 2), 3), (5, {"x": [1]}), ("a", 9)]
    for state in _states(tmp_path, redis_server):
        state.put("kept", 0)
        state.put_all(hashable)  # every key hashable: one update of the memory map
        state.put_all(iter(pairs))  # a list key among them, any iterable
        state.prepare_commit(1)
        state.commit(1)
        got = {repr(k): v for k, v in state}
        assert got[repr("a")] == 9 and got[repr("kept")] == 0, type(state).__name__  # the later pair wins
        assert state.get(["l", 1]) == 2 and state.get(5) == {"x": [1]}, type(state).__name__
        assert state.get(("t", 2)) == 3 or state.get(["t", 2]) == 3, type(state).__name__
        assert state.get("first") == 2 and len(state) == 6, type(state).__name__


def test_two_workers_in_one_process_each_move_their_own_tasks_groups() -> None:
    """LocalCluster runs several workers in one process: a source one worker bucketed for its own tasks is not
    what another worker's tasks take their groups from."""
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [2, 8]})
    _seed(stores, rescales, 2, txid=3)  # each old task's state holds the groups of four new tasks, two a worker
    shared = GroupedSources()
    workers = [range(0, 8, 2), range(1, 8, 2)]
    merged: dict[Any, Any] = {}
    for i in range(8):  # the two workers' tasks move in turn, while the other's buckets are held
        local = workers[i % 2]
        ns = namespace(rescales, "count", i, -1)
        KeyGroupMove(rescales, "count", i, M, stores.open, local, shared, "topo").settle(stores.open(ns), 3)
        share = stores.committed(ns)
        assert share and all(key_group_of(k, M) in groups_of_task(i, 8, M) for k in share)
        merged.update(share)
    assert merged == KEYS
    assert len(shared) == 0
