"""The only time source of storm_py: a system clock and a simulated clock that tests advance by hand.

Every timer (tick tuples, pending-map rotation, heartbeats, kill/rebalance waits) reads ``now()`` from a
:class:`Clock`.  A :class:`SimulatedClock` only moves when ``advance`` is called, which wakes whoever waits on it.
Every time a user sees (window bounds, metric and checkpoint times, batch and request times) is wall-clock epoch
time: ``wall()`` read where the event happens, or ``wall_at(instant)`` for a moment that was timed with ``now()``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Clock:
    """Wall time in seconds (float) plus waiting; the system implementation."""

    simulated = False

    def now(self) -> float:
        """Seconds since an arbitrary epoch (monotonic)."""
        return time.monotonic()

    def wall(self) -> float:
        """Seconds since the Unix epoch, for records humans read (launch times)."""
        return time.time()

    def wall_at(self, instant: float) -> float:
        """The wall time (seconds since the Unix epoch) of ``instant``, an earlier or later reading of :meth:`now`."""
        return self.wall() - (self.now() - instant)

    def instant_at(self, wall: float) -> float:
        """The reading of :meth:`now` at the wall time ``wall`` (the inverse of :meth:`wall_at`): a time saved as
        wall time, back on this process's monotonic clock."""
        return self.now() - (self.wall() - wall)

    def sleep(self, secs: float) -> None:
        """Block for ``secs`` of this clock's time."""
        if secs > 0:
            time.sleep(secs)

    def add_listener(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` whenever the clock jumps (never, for the system clock)."""

    def remove_listener(self, fn: Callable[[], None]) -> None:
        """Undo :meth:`add_listener`."""


class SimulatedClock(Clock):
    """A clock that stands still until :meth:`advance` moves it; ``sleep`` blocks until it has moved far enough."""

    simulated = True

    def __init__(self, start: float = 0.0, wall_zero: float | None = None) -> None:
        self._now = start
        #: the wall time of ``now() == 0``: by default the current whole second, so simulated wall times in ms are
        #: exact
        self._wall0 = float(int(time.time())) if wall_zero is None else wall_zero
        self._cond = threading.Condition()
        self._listeners: list[Callable[[], None]] = []

    def now(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall0 + self._now

    def wall_at(self, instant: float) -> float:
        return self._wall0 + instant

    def instant_at(self, wall: float) -> float:
        return wall - self._wall0

    def advance(self, secs: float) -> None:
        """Move time forward by ``secs`` and wake sleepers and listeners."""
        if secs < 0:
            raise ValueError(f"cannot move a clock backwards (secs={secs})")
        with self._cond:
            self._now += secs
            self._cond.notify_all()
            listeners = list(self._listeners)
        for fn in listeners:
            fn()

    def sleep(self, secs: float) -> None:
        deadline = self._now + secs
        with self._cond:
            while self._now < deadline:
                self._cond.wait(0.05)

    def add_listener(self, fn: Callable[[], None]) -> None:
        with self._cond:
            self._listeners.append(fn)

    def remove_listener(self, fn: Callable[[], None]) -> None:
        with self._cond:
            if fn in self._listeners:
                self._listeners.remove(fn)


SYSTEM_CLOCK = Clock()


class Deadline:
    """A point ``timeout`` seconds ahead on ``clock`` (real time by default): for waits that must give up."""

    def __init__(self, timeout: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.at = clock.now() + timeout

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.at - self.clock.now())

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.clock.now() >= self.at


def wait_until(
    predicate: Callable[[], object], timeout: float, interval: float = 0.005, what: str = "condition"
) -> None:
    """Poll ``predicate`` in real time until it returns something truthy (a bool, a non-empty list, ...);
    raise :class:`WaitTimeoutError` after ``timeout`` seconds."""
    from storm_py.errors import WaitTimeoutError

    deadline = time.monotonic() + timeout
    delay = interval
    while not predicate():
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(f"timed out after {timeout}s waiting for {what}", what=what, timeout=timeout)
        time.sleep(delay)
        delay = min(delay * 1.5, 0.1)
