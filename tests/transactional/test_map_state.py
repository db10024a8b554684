"""Map-state helpers: the transactional, opaque and non-transactional update rules."""

from __future__ import annotations

import pytest

from storm_py.transactional import (
    MapStateError,
    MemoryBackingMap,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    TransactionalMap,
    TransactionalValue,
)


def add(n):
    return lambda old: (old or 0) + n


def run_batch(state, txid, updates):
    state.begin_commit(txid)
    out = state.multi_update(list(updates), [add(n) for n in updates.values()])
    state.commit(txid)
    return out


def test_transactional_map_skips_a_replayed_batch():
    backing = MemoryBackingMap()
    state = TransactionalMap(backing)
    assert run_batch(state, 1, {"a": 2, "b": 1}) == [2, 1]
    assert run_batch(state, 2, {"a": 3}) == [5]
    assert run_batch(state, 2, {"a": 3}) == [5]  # the replay of txid 2 is already applied
    assert backing.snapshot() == {"a": TransactionalValue(2, 5), "b": TransactionalValue(1, 1)}
    assert state.multi_get(["a", "b", "c"]) == [5, 1, None]


def test_transactional_map_applies_twice_within_one_batch():
    state = TransactionalMap(MemoryBackingMap())
    state.begin_commit(1)
    state.multi_update(["a"], [add(1)])
    assert state.multi_update(["a"], [add(1)]) == [2]
    state.multi_put(["z"], [9])
    state.commit(1)
    assert state.multi_get(["a", "z"]) == [2, 9]


def test_opaque_map_recomputes_a_replay_from_the_previous_value():
    backing = MemoryBackingMap()
    state = OpaqueMap(backing)
    run_batch(state, 1, {"a": 2})
    run_batch(state, 2, {"a": 3})
    assert backing.snapshot()["a"] == OpaqueValue(2, 5, 2)
    assert run_batch(state, 2, {"a": 10}) == [12]  # a replay with different tuples: rebuilt from prev
    assert backing.snapshot()["a"] == OpaqueValue(2, 12, 2)
    state.begin_commit(3)
    assert state.multi_get(["a"]) == [12]
    state.multi_put(["a"], [0])
    assert backing.snapshot()["a"] == OpaqueValue(3, 0, 12)
    with pytest.raises(MapStateError):
        run_batch(state, 1, {"a": 1})


def test_opaque_value_rules():
    v = OpaqueValue(5, "curr", "prev")
    assert v.get(6) == "curr" and v.get(5) == "prev" and v.get(None) == "curr"
    with pytest.raises(MapStateError):
        v.get(4)
    assert v.update(6, "new") == OpaqueValue(6, "new", "curr")
    assert v.update(5, "again") == OpaqueValue(5, "again", "prev")


def test_non_transactional_map_double_counts_replays():
    state = NonTransactionalMap(MemoryBackingMap())
    run_batch(state, 1, {"a": 2})
    run_batch(state, 1, {"a": 2})
    assert state.multi_get(["a"]) == [4]


def test_updates_need_a_batch():
    with pytest.raises(MapStateError, match="begin_commit"):
        TransactionalMap(MemoryBackingMap()).multi_update(["a"], [add(1)])
