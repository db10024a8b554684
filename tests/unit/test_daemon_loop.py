"""The daemon loop nimbus and supervisor share: rounds paced by the clock, woken early, stopped."""

from __future__ import annotations

import threading

from storm_py.clock import SimulatedClock, wait_until
from storm_py.errors import StormPyError
from storm_py.node.loop import DaemonLoop


class Rounds:
    def __init__(self, wait: float, fail_first: bool = False) -> None:
        self.count = 0
        self.wait = wait
        self.fail_first = fail_first

    def __call__(self) -> float:
        self.count += 1
        if self.fail_first and self.count == 1:
            raise StormPyError("state store unreachable")
        return self.wait


def run_in_thread(loop: DaemonLoop) -> threading.Thread:
    t = threading.Thread(target=loop.run, daemon=True)
    t.start()
    return t


def waiting(loop: DaemonLoop, rounds: Rounds, n: int) -> None:
    """Until ``n`` rounds ran and the loop waits for the next."""
    wait_until(lambda: rounds.count == n and loop.next_round_at is not None, 5, what=f"round {n} done")


def test_the_next_round_waits_for_the_clock() -> None:
    clock = SimulatedClock()
    rounds = Rounds(wait=10)
    loop = DaemonLoop("test", clock, rounds)
    t = run_in_thread(loop)
    waiting(loop, rounds, 1)
    assert loop.next_round_at == 10
    clock.advance(9)
    assert rounds.count == 1
    clock.advance(1)
    wait_until(lambda: rounds.count == 2, 5, what="the round due at t=10")
    loop.stop()
    t.join(5)
    assert not t.is_alive()


def test_wake_runs_a_round_before_its_time_and_stop_ends_the_loop() -> None:
    clock = SimulatedClock()
    rounds = Rounds(wait=1000)
    loop = DaemonLoop("test", clock, rounds)
    t = run_in_thread(loop)
    waiting(loop, rounds, 1)
    loop.wake()
    wait_until(lambda: rounds.count == 2, 5, what="the woken round")
    assert clock.now() == 0
    loop.stop()
    t.join(5)
    assert not t.is_alive() and rounds.count == 2


def test_a_failed_round_is_retried_after_the_error_wait() -> None:
    clock = SimulatedClock()
    rounds = Rounds(wait=1000, fail_first=True)
    loop = DaemonLoop("test", clock, rounds, error_wait=2)
    t = run_in_thread(loop)
    waiting(loop, rounds, 1)
    assert loop.next_round_at == 2
    clock.advance(2)
    wait_until(lambda: rounds.count == 2, 5, what="the retry")
    loop.stop()
    t.join(5)


def test_an_outside_stop_event_ends_the_loop() -> None:
    clock = SimulatedClock()
    rounds = Rounds(wait=1000)
    loop = DaemonLoop("test", clock, rounds)
    stop = threading.Event()
    t = threading.Thread(target=loop.run, args=(stop,), daemon=True)
    t.start()
    waiting(loop, rounds, 1)
    stop.set()
    t.join(5)
    assert not t.is_alive() and rounds.count == 1
