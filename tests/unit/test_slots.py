"""The supervisor's pure slot decisions: reconcile (incl. silent workers) and the restart backoff."""

from __future__ import annotations

import pytest

from storm_py.supervisor.slots import RestartBackoff, RunningSlot, SlotActions, WantedSlot, reconcile

EXECS = ((1, 1), (2, 2))
TIMEOUT = 30.0


def test_a_wanted_slot_with_nothing_running_is_launched() -> None:
    assert reconcile({6700: WantedSlot("t-1", EXECS)}, {}, TIMEOUT) == SlotActions((), (6700,), ())


def test_a_live_matching_worker_is_left_alone() -> None:
    running = {6700: RunningSlot("t-1", EXECS, alive=True, silent_secs=TIMEOUT)}
    assert reconcile({6700: WantedSlot("t-1", EXECS)}, running, TIMEOUT) == SlotActions((), (), ())


def test_a_silent_worker_is_stopped_as_dead_and_relaunched() -> None:
    running = {6700: RunningSlot("t-1", EXECS, alive=True, silent_secs=TIMEOUT + 0.1)}
    actions = reconcile({6700: WantedSlot("t-1", EXECS)}, running, TIMEOUT)
    assert actions == SlotActions(stop=(6700,), launch=(6700,), dead=(6700,))


def test_an_exited_worker_is_dead_and_relaunched() -> None:
    running = {6700: RunningSlot("t-1", EXECS, alive=False)}
    assert reconcile({6700: WantedSlot("t-1", EXECS)}, running, TIMEOUT) == SlotActions((6700,), (6700,), (6700,))


def test_a_worker_whose_assignment_moved_is_stopped_but_not_dead() -> None:
    running = {6700: RunningSlot("t-1", EXECS, alive=True), 6701: RunningSlot("t-1", EXECS, alive=True)}
    wanted = {6700: WantedSlot("t-2", EXECS), 6701: WantedSlot("t-1", ((1, 1),))}
    assert reconcile(wanted, running, TIMEOUT) == SlotActions((6700, 6701), (6700, 6701), ())


def test_an_unwanted_worker_is_stopped_and_not_relaunched() -> None:
    assert reconcile({}, {6700: RunningSlot("t-1", EXECS, alive=True)}, TIMEOUT) == SlotActions((6700,), (), ())


def test_backoff_first_early_death_relaunches_at_once_then_doubles_to_the_cap() -> None:
    b = RestartBackoff(min_uptime_secs=10, base_secs=1, max_secs=4)
    now = 0.0
    delays = []
    for _ in range(5):
        assert b.may_launch(6700, now)
        b.launched(6700, now)
        now += 1  # dies young
        delays.append(b.ended(6700, now))
        assert b.may_launch(6700, now) == (delays[-1] == 0)
        now += delays[-1]
    assert delays == [0, 1, 2, 4, 4]


def test_backoff_a_long_life_ends_the_streak_and_forget_starts_afresh() -> None:
    b = RestartBackoff(min_uptime_secs=10, base_secs=1, max_secs=30)
    b.launched(6700, 0)
    b.ended(6700, 1)
    b.launched(6700, 1)
    assert b.ended(6700, 2) == 1
    b.launched(6700, 3)
    assert b.ended(6700, 20) == 0  # lived 17 s
    b.launched(6700, 20)
    b.ended(6700, 21)
    b.forget(6700)
    assert b.may_launch(6700, 21)
    b.launched(6700, 21)
    assert b.ended(6700, 22) == 0


def test_backoff_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="bad restart backoff"):
        RestartBackoff(min_uptime_secs=10, base_secs=5, max_secs=1)
