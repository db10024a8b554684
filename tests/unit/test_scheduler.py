"""Storm's even scheduler (pure): slots interleaved across supervisors, executors spread round-robin."""

from __future__ import annotations

from storm_py.scheduler.even import interleave_slots, schedule_even

EXECUTORS = [("spout", 1, 1), ("split", 2, 2), ("split", 3, 3), ("count", 4, 4)]


def test_slots_interleave_across_supervisors_with_ports_sorted() -> None:
    slots = [("b", 6701), ("a", 6701), ("a", 6700), ("b", 6700), ("a", 6702)]
    assert interleave_slots(slots) == [("a", 6700), ("b", 6700), ("a", 6701), ("b", 6701), ("a", 6702)]


def test_two_workers_land_on_two_supervisors() -> None:
    free = [("a", 6700), ("a", 6701), ("b", 6700), ("b", 6701)]
    placed = schedule_even(EXECUTORS, 2, free)
    assert set(placed.values()) == {("a", 6700), ("b", 6700)}


def test_executors_go_round_robin_in_task_order() -> None:
    placed = schedule_even(EXECUTORS, 2, [("a", 6700), ("b", 6700)])
    assert placed == {
        ("spout", 1, 1): ("a", 6700), ("split", 2, 2): ("b", 6700),
        ("split", 3, 3): ("a", 6700), ("count", 4, 4): ("b", 6700),
    }


def test_never_more_workers_than_executors_or_slots() -> None:
    assert set(schedule_even(EXECUTORS[:1], 4, [("a", 1), ("b", 1)]).values()) == {("a", 1)}
    assert len(set(schedule_even(EXECUTORS, 10, [("a", 1), ("b", 1)]).values())) == 2


def test_no_slot_gives_an_empty_plan() -> None:
    assert schedule_even(EXECUTORS, 2, []) == {}


def test_a_healthy_assignment_is_kept_untouched() -> None:
    existing = {ex: (("b", 6701) if i % 2 else ("a", 6702)) for i, ex in enumerate(EXECUTORS)}
    alive = [("a", 6702), ("b", 6701), ("c", 6700)]
    assert schedule_even(EXECUTORS, 2, [("c", 6700)], existing, alive_slots=alive) == existing


def test_executors_of_a_dead_slot_move_and_the_live_slot_stays() -> None:
    existing = {ex: (("b", 6701) if i % 2 else ("a", 6702)) for i, ex in enumerate(EXECUTORS)}
    alive = [("a", 6702), ("c", 6700)]  # b is gone
    placed = schedule_even(EXECUTORS, 2, [("c", 6700)], existing, alive_slots=alive)
    assert set(placed.values()) == {("a", 6702), ("c", 6700)}
    assert ("b", 6701) not in placed.values()
