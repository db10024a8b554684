"""This module owns the thread-safe DRPC service around the ledger: blocking ``execute`` for clients, long-poll
``fetch`` and ``result`` / ``fail`` for topologies.  The DRPC server serves it over HTTP; :class:`LocalDRPC`
calls it in-process.

A client thread blocks on its own event until its request is answered or its deadline passes (a timeout is
decided by the ledger when the client takes the request); fetchers wait on one condition woken by every
submission.  :meth:`DRPCService.close` wakes everyone: waiting clients get a shutdown error, fetchers an empty
list.
"""

from __future__ import annotations

import secrets
import threading

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.drpc.errors import BAD_REQUEST, DRPCExecutionException
from storm_py.drpc.ledger import Invocation, PendingRequests

#: Longest name of a DRPC function.
MAX_FUNCTION_CHARS = 256


def check_function(function: object) -> str:
    """``function`` as a valid DRPC function name, or a :class:`DRPCExecutionException` naming the problem."""
    if not isinstance(function, str) or not function or len(function) > MAX_FUNCTION_CHARS:
        raise DRPCExecutionException(
            f"a DRPC function name must be a non-empty string of at most {MAX_FUNCTION_CHARS} characters, "
            f"got {str(function)[:80]!r}", BAD_REQUEST,
        )
    return function


class DRPCService:
    """Pending DRPC requests shared by clients and topologies (see the module docstring)."""

    def __init__(self, timeout_secs: float, max_pending: int, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._ledger = PendingRequests(timeout_secs, max_pending, id_prefix=f"{secrets.token_hex(4)}-")
        self._lock = threading.Lock()
        self._submitted = threading.Condition(self._lock)
        self._answered: dict[str, threading.Event] = {}
        self._wakers: list[threading.Event] = []

    @property
    def timeout_secs(self) -> float:
        """Seconds a request may stay unanswered."""
        return self._ledger.timeout_secs

    def pending(self) -> int:
        """Requests waiting or in flight."""
        with self._lock:
            return len(self._ledger)

    def execute(self, function: str, args: str) -> str:
        """Submit a request and wait for its result; :class:`DRPCExecutionException` when it fails, times out,
        is refused (busy, shutting down) or the service closes meanwhile."""
        check_function(function)
        if not isinstance(args, str):
            raise DRPCExecutionException(f"DRPC arguments must be a string, got {type(args).__name__}", BAD_REQUEST)
        answered = threading.Event()
        with self._lock:
            request_id = self._ledger.submit(function, args, self.clock.now())
            self._answered[request_id] = answered
            deadline = self._ledger.deadline(request_id)
            self._submitted.notify_all()
            wakers = list(self._wakers)
        for waker in wakers:
            waker.set()
        while not answered.wait(min(max(deadline - self.clock.now(), 0.0), 3600.0)):
            if self.clock.now() >= deadline:
                break
        with self._lock:
            self._answered.pop(request_id, None)
            return self._ledger.take(request_id, self.clock.now())

    def add_waker(self, event: threading.Event) -> None:
        """Set ``event`` on every submission (an in-process spout's worker loop wakes to fetch at once)."""
        with self._lock:
            self._wakers.append(event)

    def remove_waker(self, event: threading.Event) -> None:
        """Undo :meth:`add_waker`."""
        with self._lock:
            if event in self._wakers:
                self._wakers.remove(event)

    def fetch(self, function: str, limit: int = 1, wait_secs: float = 0.0) -> list[Invocation]:
        """Up to ``limit`` requests of ``function``, waiting up to ``wait_secs`` for the first one."""
        check_function(function)
        limit = max(1, int(limit))
        end = self.clock.now() + max(0.0, wait_secs)
        with self._lock:
            while True:
                got = self._ledger.fetch(function, limit, self.clock.now())
                remaining = end - self.clock.now()
                if got or remaining <= 0 or self._ledger.closed:
                    return got
                self._submitted.wait(remaining)

    def result(self, request_id: str, value: str) -> bool:
        """Answer a request; False when it is unknown or already answered (too late, or a duplicate)."""
        with self._lock:
            ok = self._ledger.result(request_id, value)
            event = self._answered.get(request_id)
        if ok and event is not None:
            event.set()
        return ok

    def fail(self, request_id: str, message: str = "the topology failed the request") -> bool:
        """Fail a request; False when it is unknown or already answered."""
        with self._lock:
            ok = self._ledger.fail(request_id, message)
            event = self._answered.get(request_id)
        if ok and event is not None:
            event.set()
        return ok

    def close(self) -> None:
        """Refuse new requests, wake every waiting client (shutdown error) and fetcher (nothing)."""
        with self._lock:
            ids = self._ledger.close()
            events = [self._answered[i] for i in ids if i in self._answered]
            self._submitted.notify_all()
        for event in events:
            event.set()
