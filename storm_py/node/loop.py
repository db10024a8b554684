"""This module owns the loop nimbus and supervisor daemons share: rounds until stopped, clock-driven waits, wakes.

A :class:`DaemonLoop` calls its ``round`` function, which returns how many seconds of the clock to wait before
the next round, and waits that long or until :meth:`DaemonLoop.wake` is called (a watch fired, leadership
changed).  A round that fails with a :class:`~storm_py.errors.StormPyError` is logged and retried after
``error_wait`` seconds; anything else ends the loop (a programming error must not spin).  The wait reads the
daemon's :class:`~storm_py.clock.Clock`, so a simulated clock drives the loop as it drives everything else.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from storm_py.clock import Clock
from storm_py.errors import StormPyError

log = logging.getLogger(__name__)

#: How often a wait checks an outside stop event (set by SIGTERM / SIGINT handlers).
STOP_POLL_SECS = 0.2


def until_stopped(stop: threading.Event) -> None:
    """Return once ``stop`` (set by a signal handler) is set.

    The wait is a loop of short ones, never one untimed wait: Python runs signal handlers on the main thread only,
    and a signal the kernel hands to another of the process's threads does not wake a main thread blocked in an
    untimed wait, which would then wait for ever."""
    while not stop.wait(STOP_POLL_SECS):
        pass


class DaemonLoop:
    """Runs ``round`` until stopped (see the module docstring).

    Args:
        name: the daemon's name, for log lines.
        clock: the daemon's clock; waits are measured on it.
        round: one round of the daemon; returns the seconds to wait before the next round.
        min_wait: the shortest pause between two rounds, even when woken.
        error_wait: the pause after a round that failed.
    """

    def __init__(
        self,
        name: str,
        clock: Clock,
        round: Callable[[], float],
        *,
        min_wait: float = 0.0,
        error_wait: float = 1.0,
    ) -> None:
        self.name = name
        self.clock = clock
        self.round = round
        self.min_wait = min_wait
        self.error_wait = error_wait
        self._cond = threading.Condition()
        self._woken = False
        self._stopped = False
        #: The clock time the loop waits for, while it waits (None while a round runs).
        self.next_round_at: float | None = None

    def wake(self) -> None:
        """Run the next round now (after ``min_wait``)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def stop(self) -> None:
        """End the loop after the round in progress."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopped

    def run(self, stop: threading.Event | None = None) -> None:
        """Run rounds until :meth:`stop` is called or ``stop`` is set (a signal handler's event, polled)."""
        while not self._ended(stop):
            try:
                wait = self.round()
            except StormPyError as err:
                # a round cut short by the daemon's own shutdown is no failure worth a warning
                level = logging.DEBUG if self._ended(stop) else logging.WARNING
                log.log(level, "%s round failed: %s", self.name, err.message)
                wait = self.error_wait
            self.wait(max(self.min_wait, wait), stop)

    def wait(self, secs: float, stop: threading.Event | None = None) -> bool:
        """Wait ``secs`` of the clock or until woken or stopped; True when woken or stopped early."""
        deadline = self.clock.now() + secs
        self.clock.add_listener(self._tick)
        try:
            with self._cond:
                self.next_round_at = deadline
                while not (self._woken or self._ended(stop)):
                    remaining = deadline - self.clock.now()
                    if remaining <= 0:
                        return False
                    # A signal handler cannot notify us; poll its event.
                    self._cond.wait(remaining if stop is None else min(remaining, STOP_POLL_SECS))
                self._woken = False
                return True
        finally:
            self.next_round_at = None
            self.clock.remove_listener(self._tick)

    def _ended(self, stop: threading.Event | None) -> bool:
        return self._stopped or (stop is not None and stop.is_set())

    def _tick(self) -> None:
        with self._cond:  # a simulated clock moved: re-check the deadline
            self._cond.notify_all()
