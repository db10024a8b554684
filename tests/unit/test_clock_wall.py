"""``Clock.wall_at``: the epoch time of a monotonic instant, on the system clock and the simulated one."""

from __future__ import annotations

import time

from storm_py.clock import Clock, SimulatedClock


def test_the_system_clock_gives_the_epoch_time_of_a_monotonic_instant() -> None:
    clock = Clock()
    before = time.time()
    instant = clock.now()
    after = time.time()
    assert before - 0.01 <= clock.wall_at(instant) <= after + 0.01
    assert abs(clock.wall_at(instant - 5.0) - (clock.wall_at(instant) - 5.0)) < 0.01


def test_the_simulated_clock_gives_its_own_wall_time() -> None:
    clock = SimulatedClock()
    clock.advance(12.5)
    assert clock.wall_at(clock.now()) == clock.wall()
    assert clock.wall_at(2.5) == clock.wall() - 10.0
    assert abs(clock.wall() - time.time() - 12.5) < 2.0  # an epoch-based clock, started near the real time


def test_instant_at_is_the_inverse_of_wall_at() -> None:
    clock = Clock()
    instant = clock.now() - 3.0
    assert abs(clock.instant_at(clock.wall_at(instant)) - instant) < 0.01
    simulated = SimulatedClock(start=4.0, wall_zero=1_700_000_000.0)
    assert simulated.wall() == 1_700_000_004.0
    assert simulated.instant_at(1_700_000_001.5) == 1.5
    assert simulated.instant_at(simulated.wall_at(2.25)) == 2.25
