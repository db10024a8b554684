"""Load-aware shuffling's pure core (weights from loads, choice tables, locality) and its chooser."""

from __future__ import annotations

import collections
import random

import pytest

from storm_py.api.topology import Grouping
from storm_py.api.tuple import Fields
from storm_py.runtime import load_aware
from storm_py.runtime.groupers import LoadAwareShuffle, Shuffle, make_grouper
from storm_py.runtime.load_aware import MAX_WEIGHT, TABLE_SIZE, choice_table, next_weights, task_load, widen


def test_task_load_is_the_share_of_the_budget_clamped() -> None:
    assert task_load(0, 100) == 0.0
    assert task_load(25, 100) == 0.25
    assert task_load(500, 100) == 1.0
    assert task_load(3, 0) == 1.0 and task_load(0, 0) == 0.0


def test_congested_targets_shrink_fast_and_the_least_loaded_grow_slowly() -> None:
    weights = [MAX_WEIGHT, MAX_WEIGHT, 50, 0]
    # within 5 % of the minimum: grows by 1 up to the maximum; above: shrinks by 10 down to 0
    assert next_weights(weights, [0.1, 0.14, 0.12, 0.9]) == [MAX_WEIGHT, MAX_WEIGHT, 51, 0]
    assert next_weights(weights, [0.1, 0.5, 0.1, 0.1]) == [MAX_WEIGHT, 90, 51, 1]
    assert next_weights([], []) == []
    with pytest.raises(ValueError, match="2 weights for 1 loads"):
        next_weights([1, 2], [0.0])


def test_choice_table_follows_the_weights() -> None:
    rng = random.Random(1)
    table = choice_table([7, 8, 9], [100, 50, 0], rng)
    counts = collections.Counter(table)
    assert len(table) == TABLE_SIZE and set(counts) == {7, 8}
    assert abs(counts[7] - 2 * counts[8]) <= 3
    assert table != sorted(table)  # shuffled


def test_equal_weights_are_exactly_round_robin() -> None:
    table = choice_table([1, 2, 3, 4], [MAX_WEIGHT] * 4, random.Random(2))
    assert sorted(table) == [1, 2, 3, 4]
    assert sorted(choice_table([1, 2], [0, 0], random.Random(2))) == [1, 2]
    with pytest.raises(ValueError, match="at least one target"):
        choice_table([], [], random.Random(2))


def test_locality_widens_above_the_higher_bound_and_narrows_below_the_lower() -> None:
    assert not widen(True, 0.5, 0.2, 0.8) and widen(True, 0.81, 0.2, 0.8)
    assert widen(False, 0.5, 0.2, 0.8) and not widen(False, 0.1, 0.2, 0.8)


def shares(chooser: LoadAwareShuffle, n: int = 4000) -> collections.Counter[int]:
    return collections.Counter(chooser.choose_one(0, []) for _ in range(n))


def test_a_slow_target_loses_its_share_and_wins_it_back() -> None:
    chooser = LoadAwareShuffle([1, 2, 3, 4], random.Random(3))
    assert set(shares(chooser, 400).values()) == {100}  # nothing known: round robin
    for _ in range(8):
        chooser.refresh({1: 0.6, 2: 0.0, 3: 0.01, 4: 0.0})
    got = shares(chooser)
    assert got[1] <= got[2] / 2 and got[1] > 0
    for _ in range(10):
        chooser.refresh({1: 0.9, 2: 0.0, 3: 0.0, 4: 0.0})
    assert shares(chooser)[1] == 0
    for _ in range(100):
        chooser.refresh({})  # idle again: weights grow back to equal, round robin again
    assert set(shares(chooser, 400).values()) == {100}


def test_local_or_shuffle_keeps_to_its_worker_until_it_is_overloaded() -> None:
    chooser = LoadAwareShuffle([1, 2, 3, 4], random.Random(4), local=[1, 2], bounds=(0.2, 0.8))
    assert set(shares(chooser)) == {1, 2}
    chooser.refresh({1: 0.9, 2: 0.85})
    assert chooser.scope == [1, 2, 3, 4] and set(shares(chooser)) == {1, 2, 3, 4}
    chooser.refresh({1: 0.3, 2: 0.3})  # mean of all 0.15: back home
    assert chooser.scope == [1, 2]


def test_make_grouper_is_load_aware_unless_disabled() -> None:
    def make(kind: str, bounds: tuple[float, float] | None, targets: list[int]) -> object:
        return make_grouper(Grouping(kind), targets, Fields(["w"]), {1}, random.Random(5), lambda g, t: None,
                            bounds)

    assert isinstance(make("shuffle", (0.2, 0.8), [1, 2]), LoadAwareShuffle)
    assert isinstance(make("local_or_shuffle", (0.2, 0.8), [1, 2]), LoadAwareShuffle)
    assert type(make("shuffle", None, [1, 2])) is Shuffle
    assert type(make("local_or_shuffle", None, [1, 2])) is Shuffle
    assert type(make("shuffle", (0.2, 0.8), [1])) is Shuffle  # one target: nothing to weigh
    assert load_aware.REFRESH_SECS > 0


class FakeExecutor:
    def __init__(self, component_id: str, tasks: list[int]) -> None:
        self.component_id = component_id
        self.task_ids = tasks
        self.inbox: list[tuple[int, list[object]]] = []
        self.busy_secs = 0.0


def test_worker_loads_count_queues_excess_busy_time_and_peers_backlog() -> None:
    from storm_py.runtime.loads import WorkerLoads, locality_bounds

    loads = WorkerLoads(capacity=100)
    a, b, c = FakeExecutor("work", [1]), FakeExecutor("work", [2]), FakeExecutor("other", [3])
    executors = [a, b, c]
    remote = {4: "peer:6701", 5: "peer:6701"}
    loads.task_loads(executors, remote, lambda w: 30, 1.0)  # the first reading is the baseline
    a.busy_secs, b.busy_secs, c.busy_secs = 0.9, 0.1, 0.8  # in 1 s: a busy 90 %, b 10 %, c alone 80 %
    b.inbox.append((2, [None] * 50))  # b's queue holds half its budget
    got = loads.task_loads(executors, {1: "me", 2: "me", 3: "me", **remote}, lambda w: 30, 1.0)
    assert got[1] == 0.8  # busier than its component's least busy executor by 0.8
    assert got[2] == 0.5  # its queue
    assert got[3] == 0.0  # busy alone: nothing in this worker to compare with, so not loaded
    assert got[4] == got[5] == 0.3  # what waits for the peer's worker
    assert locality_bounds({}) == (0.2, 0.8)
    assert locality_bounds({"topology.localityaware.higher.bound": 0.9}) == (0.2, 0.9)
    assert locality_bounds({"topology.disable.loadaware.messaging": True}) is None
