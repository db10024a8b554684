"""Moving keyed state by key group between generations of a component's tasks (in-memory states): every entry
lands once, in the task owning its key group, as of the committed checkpoint; a move is done once; two rescales
in a row read through a generation that never moved; namespaces never follow shifted task ids."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from storm_py.errors import ConfigError
from storm_py.runtime.key_groups import groups_of_task, task_index_of_group
from storm_py.stateful.state.key_buckets import key_group_of
from storm_py.stateful.state.key_group_move import KeyGroupMove
from storm_py.stateful.state.key_value import KeyValueState, MemoryStore
from storm_py.stateful.state.task_names import Rescales, namespace

M = 128
WORDS = Counter({f"word{i}": i + 1 for i in range(400)})


class Stores:
    """In-memory states by namespace (what the memory provider keeps per topology)."""

    def __init__(self) -> None:
        self.stores: dict[str, MemoryStore] = {}

    def open(self, ns: str) -> KeyValueState:
        return KeyValueState(self.stores.setdefault(ns, MemoryStore()))

    def committed(self, ns: str) -> dict[Any, Any]:
        return dict(self.stores[ns].committed) if ns in self.stores else {}


def _seed(stores: Stores, rescales: Rescales, tasks: int, txid: int, words: Counter[str] = WORDS) -> None:
    """Generation 0 of ``count``: each word's count in the task owning its key group, committed at ``txid``."""
    states = [stores.open(namespace(rescales, "count", i, -1, 0)) for i in range(tasks)]
    for w, n in words.items():
        states[task_index_of_group(key_group_of(w, M), tasks, M)].put(w, n)
    for s in states:
        s.prepare_commit(txid)
        s.commit(txid)


def _settle_all(stores: Stores, rescales: Rescales, committed: int) -> list[dict[Any, Any]]:
    n = rescales.tasks_at("count", rescales.generation("count"))
    out = []
    for i in range(n):
        ns = namespace(rescales, "count", i, -1)
        state = stores.open(ns)
        KeyGroupMove(rescales, "count", i, M, stores.open).settle(state, committed)
        out.append(stores.committed(ns))
    return out


def _check_partition(shares: list[dict[Any, Any]], want: Counter[str]) -> None:
    n = len(shares)
    merged: Counter[str] = Counter()
    for i, share in enumerate(shares):
        for key in share:
            assert key_group_of(key, M) in groups_of_task(i, n, M), (key, i)
        merged.update(share)
    assert merged == want  # every key once (a key in two tasks would double its count)


@pytest.mark.parametrize(("old", "new"), [(4, 8), (8, 3), (4, 1), (1, 5)])
def test_each_new_task_takes_exactly_the_keys_of_its_groups(old: int, new: int) -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [old, new]})
    _seed(stores, rescales, old, txid=7)
    shares = _settle_all(stores, rescales, committed=7)
    _check_partition(shares, WORDS)
    for i in range(new):
        assert stores.stores[namespace(rescales, "count", i, -1)].committed_txid == 7


def test_generation_zero_keeps_storms_names_by_the_submits_task_ids() -> None:
    none = Rescales()
    assert namespace(none, "count", 2, 9) == "count-9"  # never rescaled: Storm's name
    shifted = Rescales({"count": 5, "words": 9}, {"count": [4, 8]})
    assert namespace(shifted, "words", 0, 13) == "words-9"  # its id moved from 9 to 13: the name did not
    assert namespace(shifted, "count", 6, 11) == "count@1-6"
    assert namespace(shifted, "count", 2, -1, 0) == "count-7"


def test_a_move_happens_once_and_a_task_killed_midway_moves_again_from_the_same_sources() -> None:
    stores = Stores()
    rescales = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, rescales, 4, txid=3)
    ns = namespace(rescales, "count", 0, -1)
    mover = KeyGroupMove(rescales, "count", 0, M, stores.open)
    # killed after taking its entries, before committing them: nothing of it counts, and it moves again
    half = stores.open(ns)
    for k, v in list(stores.open(namespace(rescales, "count", 0, -1, 0)))[:3]:
        half.put(k, v)
    assert mover.pending
    assert mover.settle(stores.open(ns), 3) > 0
    assert not mover.pending
    state = stores.open(ns)
    state.put("word1", 10_000)  # the task runs on and commits its own changes
    state.prepare_commit(4)
    state.commit(4)
    assert KeyGroupMove(rescales, "count", 0, M, stores.open).settle(stores.open(ns), 4) == 0  # done already
    assert stores.committed(ns)["word1"] == 10_000


def test_two_rescales_in_a_row_read_through_a_generation_that_never_moved() -> None:
    stores = Stores()
    first = Rescales({"count": 5}, {"count": [4, 8]})
    _seed(stores, first, 4, txid=2)
    # only tasks 0 and 5 of generation 1 moved (and task 5 counted on) before the second rescale
    for i in (0, 5):
        KeyGroupMove(first, "count", i, M, stores.open).settle(stores.open(namespace(first, "count", i, -1)), 2)
    five = stores.open(namespace(first, "count", 5, -1))
    later = Counter(WORDS)
    for key, value in list(five):
        five.put(key, value + 1)
        later[key] += 1
    five.prepare_commit(3)
    five.commit(3)
    second = Rescales({"count": 5}, {"count": [4, 8, 3]})
    _check_partition(_settle_all(stores, second, committed=3), later)


def test_a_prepared_snapshot_counts_when_the_checkpoint_covers_it_and_is_dropped_otherwise() -> None:
    for committed, want in ((5, 1), (4, 0)):
        stores = Stores()
        rescales = Rescales({"count": 1}, {"count": [1, 2]})
        _seed(stores, rescales, 1, txid=4, words=Counter({"a": 1, "b": 1}))
        source = stores.open("count-1")
        source.put("a", 2)
        source.put("b", 2)
        source.prepare_commit(5)  # its COMMIT never reached it
        shares = _settle_all(stores, rescales, committed)
        merged: Counter[str] = Counter()
        for share in shares:
            merged.update(share)
        assert merged == Counter({"a": 1 + want, "b": 1 + want})


def test_a_malformed_history_is_refused_naming_the_key() -> None:
    for bad in ({"first_tasks": {"count": "x"}}, {"tasks": {"count": []}}, {"tasks": {"count": [-1]}}, [1]):
        with pytest.raises(ConfigError, match=r"topology\.state\.rescales"):
            Rescales.of({"topology.state.rescales": bad})


def test_the_history_keeps_the_submits_first_ids_and_appends_each_count() -> None:
    h = Rescales().rescaled({"count": 5, "words": 9}, {"count": 8}, {"count": 4, "words": 2})
    assert h.to_conf() == {"first_tasks": {"count": 5, "words": 9}, "tasks": {"count": [4, 8]}}
    h2 = h.rescaled({"count": 5, "words": 13}, {"count": 3, "words": 2}, {"count": 8, "words": 2})
    assert h2.to_conf() == {"first_tasks": {"count": 5, "words": 9}, "tasks": {"count": [4, 8, 3]}}
    assert Rescales.of({"topology.state.rescales": h2.to_conf()}) == h2
