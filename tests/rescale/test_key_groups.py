"""Key groups and the move plan of a rescale (pure): every group has one owner, ranges are contiguous, the plan
hands each group of the new layout over exactly once from the old owner, and the key-group chooser agrees with
them for single tuples and for hashes."""

from __future__ import annotations

import random

import pytest

from storm_py.api.topology import FIELDS, Grouping
from storm_py.api.tuple import Fields
from storm_py.runtime.groupers import FieldsHash, KeyGroupHash, OneFieldHash, make_grouper, values_hash
from storm_py.runtime.key_groups import (
    check_counts,
    group_table,
    groups_of_task,
    key_group,
    move_plan,
    sources_of,
    task_index_of_group,
)


@pytest.mark.parametrize("m", [1, 7, 128, 1000])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_every_group_has_one_owner_and_ranges_are_contiguous(n: int, m: int) -> None:
    if n > m:
        return
    owned = [list(groups_of_task(i, n, m)) for i in range(n)]
    assert [g for r in owned for g in r] == list(range(m))  # in order, each once
    assert all(r for r in owned)  # no task without a group
    for i, r in enumerate(owned):
        assert all(task_index_of_group(g, n, m) == i for g in r)
    assert group_table(n, m) == [task_index_of_group(g, n, m) for g in range(m)]
    assert max(len(r) for r in owned) - min(len(r) for r in owned) <= 1  # balanced


def test_ranges_match_flinks_formula_for_128_groups() -> None:
    assert groups_of_task(0, 3, 128) == range(0, 43)
    assert groups_of_task(1, 3, 128) == range(43, 86)
    assert groups_of_task(2, 3, 128) == range(86, 128)
    assert task_index_of_group(127, 8, 128) == 7 and task_index_of_group(15, 8, 128) == 0


@pytest.mark.parametrize(("old", "new"), [(4, 8), (8, 3), (3, 4), (4, 4), (1, 128), (128, 1), (5, 7)])
def test_the_move_plan_hands_every_group_over_once_from_its_old_owner(old: int, new: int) -> None:
    m = 128
    plan = move_plan(old, new, m)
    seen: list[int] = []
    for mv in plan:
        for g in mv.groups:
            assert task_index_of_group(g, old, m) == mv.source
            assert task_index_of_group(g, new, m) == mv.target
            seen.append(g)
    assert sorted(seen) == list(range(m))
    assert plan == sorted(plan, key=lambda mv: (mv.target, mv.source))
    for j in range(new):
        assert sources_of(j, old, new, m) == [mv for mv in plan if mv.target == j]


def test_doubling_splits_each_range_in_two_and_halving_merges() -> None:
    plan = move_plan(4, 8, 128)
    assert [(mv.source, mv.target) for mv in plan] == [(i // 2, i) for i in range(8)]
    merged = move_plan(8, 4, 128)
    assert [(mv.source, mv.target) for mv in merged] == [(i, i // 2) for i in range(8)]


@pytest.mark.parametrize(("n", "m"), [(0, 128), (129, 128), (-1, 8), (2, 0), (True, 8), (2.0, 8)])
def test_counts_outside_the_key_groups_are_refused(n: object, m: object) -> None:
    with pytest.raises(ValueError, match="integer"):
        check_counts(n, m)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        move_plan(2, n, m)  # type: ignore[arg-type]


def test_a_keys_group_never_changes_with_the_task_count() -> None:
    words = [f"w{i}" for i in range(500)]
    for w in words:
        g = key_group(values_hash([w]), 128)
        for n in (1, 3, 4, 8, 128):
            assert g in groups_of_task(task_index_of_group(g, n, 128), n, 128)


def _chooser(targets: list[int], fields: list[str], key_groups: int | None) -> object:
    return make_grouper(Grouping(FIELDS, Fields(fields)), targets, Fields(["word", "n"]), set(), random.Random(1),
                        lambda g, t: None, None, key_groups)


def test_a_fields_grouping_into_keyed_state_routes_by_key_group_and_others_keep_hash_mod_n() -> None:
    targets = [11, 12, 13, 14]
    keyed = _chooser(targets, ["word"], 128)
    assert isinstance(keyed, KeyGroupHash)
    assert isinstance(_chooser(targets, ["word"], None), OneFieldHash)
    assert isinstance(_chooser(targets, ["word", "n"], None), FieldsHash)
    for i in range(300):
        values = [f"k{i}", i]
        h = values_hash([values[0]])
        want = targets[task_index_of_group(key_group(h, 128), 4, 128)]
        assert keyed.choose_one(0, values) == want
        assert keyed.target_of_hash(h) == want
    hashes = [values_hash([f"k{i}"]) for i in range(300)]
    assert keyed.targets_of_hashes(hashes) == [keyed.target_of_hash(h) for h in hashes]
    table = keyed.key_group_targets
    assert [table[h % 128] for h in hashes] == keyed.targets_of_hashes(hashes)


def test_the_key_group_chooser_hashes_several_fields_as_the_fields_grouping_does() -> None:
    keyed = _chooser([1, 2, 3], ["word", "n"], 16)
    assert isinstance(keyed, KeyGroupHash)
    for i in range(100):
        h = values_hash([f"k{i}", i])
        assert keyed.choose_one(0, [f"k{i}", i]) == [1, 2, 3][task_index_of_group(h % 16, 3, 16)]
