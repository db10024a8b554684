"""Trident's pure pieces: map states across replays, the LRU cache, FixedBatchSpout's metadata, tuples."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py.errors import InvalidTopologyException
from storm_py.transactional.map_state import MemoryBackingMap
from storm_py.trident import CachedMap, FixedBatchSpout, MapState, MemoryMapState, OpaqueValue, TransactionalValue
from storm_py.trident.state import GLOBAL_KEY
from storm_py.trident.tuple import Schema, TridentTuple


def add(n: int) -> Any:
    return lambda curr: (curr or 0) + n


def apply(state: MapState, txid: int, n: int) -> Any:
    state.begin_commit(txid)
    new = state.update(add(n))
    state.commit(txid)
    return new


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_a_replayed_batch_applies_once(kind: str) -> None:
    state = MemoryMapState.factory(kind).make_state({}, None, 0, 1)
    assert apply(state, 1, 5) == 5
    assert apply(state, 2, 3) == 8
    assert apply(state, 2, 3) == 8  # txid 2 again
    assert apply(state, 3, 1) == 9
    assert state.get() == 9


def test_an_opaque_replay_may_carry_different_tuples() -> None:
    factory = MemoryMapState.factory("opaque")
    state = factory.make_state({}, None, 0, 1)
    apply(state, 1, 5)
    apply(state, 2, 3)
    assert apply(state, 2, 10) == 15  # recomputed from the value before txid 2
    assert factory.stored()[GLOBAL_KEY] == OpaqueValue(2, 15, 5)


def test_transactional_and_non_transactional_storage() -> None:
    transactional = MemoryMapState.factory("transactional")
    apply(transactional.make_state({}, None, 0, 1), 4, 2)
    assert transactional.stored()[GLOBAL_KEY] == TransactionalValue(4, 2)
    plain = MemoryMapState.factory("non_transactional")
    state = plain.make_state({}, None, 0, 1)
    apply(state, 1, 2)
    apply(state, 1, 2)
    assert plain.values() == {GLOBAL_KEY: 4}
    with pytest.raises(InvalidTopologyException, match="kind"):
        MemoryMapState.factory("exactly")


def test_every_partition_of_one_factory_shares_its_map() -> None:
    factory = MemoryMapState.factory()
    one, two = factory.make_state({}, None, 0, 2), factory.make_state({}, None, 1, 2)
    one.begin_commit(1)
    one.multi_put([("a",)], [1])
    one.commit(1)
    assert two.multi_get([("a",), ("b",)]) == [1, None]


class CountingBacking(MemoryBackingMap[Any, Any]):
    def __init__(self) -> None:
        super().__init__()
        self.gets: list[Any] = []

    def multi_get(self, keys: Any) -> list[Any]:
        self.gets.extend(keys)
        return super().multi_get(keys)


def test_cached_map_serves_recent_keys_and_evicts_the_least_recent() -> None:
    backing = CountingBacking()
    cached = CachedMap(backing, cache_size=2)
    cached.multi_put(["a", "b"], [1, 2])
    assert cached.multi_get(["a", "b"]) == [1, 2] and backing.gets == []
    cached.multi_put(["c"], [3])  # evicts "a", the least recently used
    assert cached.multi_get(["a", "c"]) == [1, 3] and backing.gets == ["a"]
    assert cached.multi_get(["zzz"]) == [None]


def test_fixed_batch_spout_metadata_decides_each_batch() -> None:
    spout = FixedBatchSpout(["v"], 2, [1], [2], [3])
    first = spout.initialize_transaction(1, None)
    second = spout.initialize_transaction(2, first)
    third = spout.initialize_transaction(3, second)
    assert (first, second, third) == ([0, 2], [2, 3], [3, 3])
    spout.set_cycle(True)
    assert spout.initialize_transaction(3, second) == [0, 2]
    emitted: list[list[Any]] = []

    class Collect:
        def emit(self, values: Any) -> None:
            emitted.append(list(values))

        def report_error(self, exc: BaseException) -> None:
            raise exc

    spout.emit_batch(None, second, Collect())  # type: ignore[arg-type]
    spout.emit_batch(None, second, Collect())  # type: ignore[arg-type]
    assert emitted == [[3], [3]]
    with pytest.raises(InvalidTopologyException, match="does not match"):
        FixedBatchSpout(["a", "b"], 2, [1])


def test_trident_tuple_access() -> None:
    t = TridentTuple(["x", 2], Schema(["word", "n"]))
    assert t.values == ["x", 2] and t[0] == "x" and t["n"] == 2
    assert t.get_value(1) == 2 and t.get_value_by_field("word") == "x" and len(t) == 2
    assert list(t.fields) == ["word", "n"] and t.select(["n", "word"]) == [2, "x"]
