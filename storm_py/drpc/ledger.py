"""This module owns the DRPC server's pure core: the ledger of pending requests, with no sockets, threads or clock.

A request is submitted by a client (:meth:`PendingRequests.submit`), waits in its function's queue until a
topology fetches it (:meth:`~PendingRequests.fetch`), and ends with a result, a failure, or its deadline
(``now`` at submission plus the request timeout).  Every method takes ``now``; the driver
(:mod:`storm_py.drpc.server`, :mod:`storm_py.drpc.local`) owns waiting and waking.

Bounds: at most ``max_pending`` requests exist at once (queued or fetched); one more is refused as busy.  A
request leaves the ledger only through :meth:`~PendingRequests.take`, which its waiting client calls once it
was woken (answer) or its deadline passed, so the ledger never grows past the bound (a request timing out
unfetched leaves its function's queue too: a function nobody serves keeps nothing).  A result or failure for
an unknown or finished request is ignored (a topology answering after the timeout, a replayed failure).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from storm_py.drpc.errors import (
    BUSY,
    FAILED_REQUEST,
    SERVER_SHUTDOWN,
    SERVER_TIMEOUT,
    DRPCExecutionException,
)

QUEUED = "queued"
FETCHED = "fetched"
DONE = "done"
FAILED = "failed"


@dataclass
class Request:
    """One pending request."""

    id: str
    function: str
    args: str
    deadline: float
    state: str = QUEUED
    result: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Invocation:
    """A request as a topology sees it: ``id`` (answer with it) and ``args``."""

    id: str
    args: str


class PendingRequests:
    """The ledger (see the module docstring).

    Args:
        timeout_secs: seconds a request may stay unanswered (0: no timeout).
        max_pending: requests that may exist at once.
        id_prefix: prefix of the request ids (a server picks a random one, so ids of a restarted server never
            match answers meant for an earlier one).
    """

    def __init__(self, timeout_secs: float, max_pending: int, id_prefix: str = "") -> None:
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.timeout_secs = float(timeout_secs)
        self.max_pending = int(max_pending)
        self._prefix = id_prefix
        self._ids = itertools.count(1)
        self._requests: dict[str, Request] = {}
        self._queues: dict[str, deque[str]] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._requests)

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._requests

    def queued(self, function: str) -> int:
        """Requests of ``function`` waiting to be fetched."""
        return len(self._queues.get(function, ()))

    def submit(self, function: str, args: str, now: float) -> str:
        """Queue a request; its id.  Raises :class:`DRPCExecutionException` when closed or full."""
        if self._closed:
            raise DRPCExecutionException(
                f"the DRPC server is shutting down: request for {function!r} refused", SERVER_SHUTDOWN,
                function=function,
            )
        if len(self._requests) >= self.max_pending:
            raise DRPCExecutionException(
                f"the DRPC server is busy: {len(self._requests)} requests pending, the most drpc.max.pending.requests "
                f"allows; request for {function!r} refused, retry later", BUSY, function=function,
            )
        request_id = f"{self._prefix}{next(self._ids)}"
        deadline = now + self.timeout_secs if self.timeout_secs > 0 else float("inf")
        self._requests[request_id] = Request(request_id, function, args, deadline)
        self._queues.setdefault(function, deque()).append(request_id)
        return request_id

    def fetch(self, function: str, limit: int, now: float) -> list[Invocation]:
        """Up to ``limit`` queued requests of ``function``, oldest first, now marked fetched (expired ones skipped)."""
        queue = self._queues.get(function)
        out: list[Invocation] = []
        while queue and len(out) < limit:
            request = self._requests.get(queue.popleft())
            if request is None or request.state != QUEUED or request.deadline <= now:
                continue
            request.state = FETCHED
            out.append(Invocation(request.id, request.args))
        if queue is not None and not queue:
            del self._queues[function]
        return out

    def result(self, request_id: str, value: str) -> bool:
        """Record the result of a request; False when it is unknown or already answered."""
        request = self._requests.get(request_id)
        if request is None or request.state in (DONE, FAILED):
            return False
        request.state, request.result = DONE, value
        return True

    def fail(self, request_id: str, message: str) -> bool:
        """Record that a request failed; False when it is unknown or already answered."""
        request = self._requests.get(request_id)
        if request is None or request.state in (DONE, FAILED):
            return False
        request.state, request.error = FAILED, message
        return True

    def answered(self, request_id: str) -> bool:
        """Whether the request has a result or failed (its client can take it)."""
        request = self._requests.get(request_id)
        return request is not None and request.state in (DONE, FAILED)

    def deadline(self, request_id: str) -> float:
        """When the request times out."""
        return self._requests[request_id].deadline

    def take(self, request_id: str, now: float) -> str:
        """Remove a request and return its result; raises :class:`DRPCExecutionException` for a failure, a
        timeout (the deadline passed unanswered), or a server that shut down meanwhile."""
        request = self._requests.get(request_id)
        if request is None:
            raise KeyError(request_id)
        if request.state == DONE:
            del self._requests[request_id]
            assert request.result is not None
            return request.result
        if request.state == FAILED:
            del self._requests[request_id]
            raise DRPCExecutionException(
                f"DRPC request for {request.function!r} failed: {request.error}", FAILED_REQUEST,
                function=request.function,
            )
        if self._closed:
            del self._requests[request_id]
            if request.state == QUEUED:
                self._dequeue(request)
            raise DRPCExecutionException(
                f"the DRPC server shut down before request for {request.function!r} was answered", SERVER_SHUTDOWN,
                function=request.function,
            )
        if now < request.deadline:
            raise ValueError(f"request {request_id} is still pending")
        del self._requests[request_id]
        if request.state == QUEUED:
            self._dequeue(request)
            why = f"no topology fetched it (is a topology serving DRPC function {request.function!r} running?)"
        else:
            why = "a topology fetched it but never returned a result or a failure"
        raise DRPCExecutionException(
            f"DRPC request for {request.function!r} timed out after {self.timeout_secs:g}s: {why}", SERVER_TIMEOUT,
            function=request.function,
        )

    def _dequeue(self, request: Request) -> None:
        """Drop a request that was never fetched from its function's queue (no fetcher may ever come)."""
        queue = self._queues.get(request.function)
        if queue is None:
            return
        try:
            queue.remove(request.id)
        except ValueError:
            pass
        if not queue:
            del self._queues[request.function]

    def close(self) -> list[str]:
        """Refuse new requests from now on; the ids whose clients must be woken (they get a shutdown error)."""
        self._closed = True
        return [rid for rid, r in self._requests.items() if r.state not in (DONE, FAILED)]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed
