"""This module owns the bookkeeping of one async bolt task's executions, as a pure core: which inputs are in
flight, when each times out, and in which order their emits, acks and fails are released.

:class:`AsyncLedger` takes what happened (an execution started, emitted, finished; the time is ``now``) and
returns :data:`Decision` s (emit, ack, fail, cancel) for the driver (:mod:`storm_py.runtime.async_executor`) to
carry out; it never touches a loop, a thread or a clock.  One execution is one input: a tuple, or later one
batch of a columnar stream; the ledger does not look inside it.

- ``ordered`` mode: an input's emits are kept and released, followed by its ack, only once every earlier input
  of the task completed (released, failed or timed out).  A failed or timed-out execution's emits are discarded.
  A finished execution waiting for an earlier one still counts as in flight.
- ``unordered`` mode: emits are released as they are made and each ack or fail as its execution completes.
- an execution running past its deadline is cancelled and its input failed with :class:`AsyncTimeoutError`;
  whatever it reports later is ignored.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from storm_py.config.keys import setting
from storm_py.errors import FailedException, ReportedFailedException

MAX_IN_FLIGHT_KEY: Final = "topology.async.max.in.flight"
TIMEOUT_KEY: Final = "topology.async.execute.timeout.secs"
OUTPUT_MODE_KEY: Final = "topology.async.output.mode"
ORDERED: Final = "ordered"
UNORDERED: Final = "unordered"


class AsyncTimeoutError(Exception):
    """An execution of an async bolt ran longer than ``topology.async.execute.timeout.secs``."""


@dataclass(frozen=True)
class AsyncSettings:
    """The settings of one async bolt (its component conf over the topology's)."""

    max_in_flight: int
    timeout_secs: float
    ordered: bool

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], component_id: str) -> AsyncSettings:
        """Read and check the three keys; ``ValueError`` names the key, the value and the component."""
        limit = setting(conf, MAX_IN_FLIGHT_KEY)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"{MAX_IN_FLIGHT_KEY} of bolt {component_id!r} must be a positive integer, got {limit!r}")
        timeout = conf.get(TIMEOUT_KEY)
        if timeout is None:
            timeout = setting(conf, "topology.message.timeout.secs")
        elif not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
            raise ValueError(f"{TIMEOUT_KEY} of bolt {component_id!r} must be a positive number or null, "
                             f"got {timeout!r}")
        mode = setting(conf, OUTPUT_MODE_KEY)
        if mode not in (ORDERED, UNORDERED):
            raise ValueError(f"{OUTPUT_MODE_KEY} of bolt {component_id!r} must be {ORDERED!r} or {UNORDERED!r}, "
                             f"got {mode!r}")
        return cls(limit, float(timeout), mode == ORDERED)


@dataclass(frozen=True, slots=True)
class Emit:
    """Send ``values`` on ``stream`` anchored to ``input`` (to task ``task`` of a direct stream when set)."""

    input: Any
    stream: str
    values: list[Any]
    task: int | None = None


@dataclass(frozen=True, slots=True)
class Ack:
    """Ack ``input``."""

    input: Any


@dataclass(frozen=True, slots=True)
class Fail:
    """Fail ``input``; report ``error`` first when it is set (a quiet fail has none)."""

    input: Any
    error: BaseException | None


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel the still running execution ``seq``."""

    seq: int


Decision = Emit | Ack | Fail | Cancel


@dataclass(slots=True)
class Execution:
    """One input in flight."""

    seq: int
    input: Any
    deadline: float
    #: emits kept until release (ordered mode)
    emits: list[Emit] = field(default_factory=list)
    done: bool = False
    #: how it ended: None (returned), else what it raised (or the timeout)
    error: BaseException | None = None


def reported(error: BaseException | None) -> BaseException | None:
    """The error a failed execution reports: none for a plain :class:`FailedException` (a quiet fail)."""
    if error is None or (isinstance(error, FailedException) and not isinstance(error, ReportedFailedException)):
        return None
    return error


class AsyncLedger:
    """The executions of one async bolt task (see the module's description)."""

    def __init__(self, settings: AsyncSettings, component_id: str) -> None:
        self.settings = settings
        self.component_id = component_id
        self._next_seq = 0
        #: executions started and not completed (running, or finished and waiting for release)
        self._live: dict[int, Execution] = {}
        #: running executions in start order: deadlines grow with it (one timeout for all)
        self._deadlines: deque[Execution] = deque()
        #: ordered mode: every live execution in start order (released from the front)
        self._order: deque[Execution] = deque()

    @property
    def in_flight(self) -> int:
        """Inputs started and not yet acked or failed."""
        return len(self._live)

    def room(self) -> int:
        """How many more inputs may start now (0 or less: the task is full)."""
        return self.settings.max_in_flight - len(self._live)

    def next_deadline(self) -> float:
        """When the oldest running execution times out (``inf`` when none runs)."""
        deadlines = self._deadlines
        while deadlines and deadlines[0].done:
            deadlines.popleft()
        return deadlines[0].deadline if deadlines else float("inf")

    def start(self, input: Any, now: float) -> int:
        """An execution of ``input`` starts; its sequence number, which names it in later calls.  It starts even
        when the task is full (a tick tuple does): :meth:`room` is what keeps inputs back."""
        seq = self._next_seq
        self._next_seq = seq + 1
        ex = Execution(seq, input, now + self.settings.timeout_secs)
        self._live[seq] = ex
        self._deadlines.append(ex)
        if self.settings.ordered:
            self._order.append(ex)
        return seq

    def emitted(self, seq: int, stream: str, values: list[Any], task: int | None = None) -> list[Decision]:
        """Execution ``seq`` emitted; ignored once it completed (it timed out or was cancelled)."""
        ex = self._live.get(seq)
        if ex is None or ex.done:
            return []
        emit = Emit(ex.input, stream, values, task)
        if self.settings.ordered:
            ex.emits.append(emit)
            return []
        return [emit]

    def finished(self, seq: int, error: BaseException | None) -> list[Decision]:
        """Execution ``seq`` returned (``error`` None) or raised ``error``; ignored once it completed."""
        ex = self._live.get(seq)
        if ex is None or ex.done:
            return []
        ex.done = True
        ex.error = error
        if self.settings.ordered:
            return self._release()
        del self._live[seq]
        return [Ack(ex.input)] if error is None else [Fail(ex.input, reported(error))]

    def expire(self, now: float) -> list[Decision]:
        """Every running execution whose deadline passed: cancel it and fail its input, reporting the timeout."""
        out: list[Decision] = []
        deadlines = self._deadlines
        while deadlines and (deadlines[0].done or deadlines[0].deadline <= now):
            ex = deadlines.popleft()
            if ex.done:
                continue
            out.append(Cancel(ex.seq))
            error = AsyncTimeoutError(
                f"bolt {self.component_id!r}: an execution ran longer than {TIMEOUT_KEY} "
                f"({self.settings.timeout_secs:g} s); it was cancelled and its input failed"
            )
            if self.settings.ordered:
                ex.done = True
                ex.error = error
            else:
                del self._live[ex.seq]
                out.append(Fail(ex.input, error))
        if self.settings.ordered and out:
            out.extend(self._release())
        return out

    def cancel_all(self) -> tuple[list[Decision], list[Any]]:
        """Drop every live execution (a rollback): cancel the running ones; their inputs, in start order."""
        cancels: list[Decision] = [Cancel(ex.seq) for ex in self._live.values() if not ex.done]
        inputs = [ex.input for ex in self._live.values()]
        self._live.clear()
        self._deadlines.clear()
        self._order.clear()
        return cancels, inputs

    def _release(self) -> list[Decision]:
        """Ordered mode: release the completed executions at the front, in start order."""
        out: list[Decision] = []
        order = self._order
        live = self._live
        while order and order[0].done:
            ex = order.popleft()
            del live[ex.seq]
            if ex.error is None:
                out.extend(ex.emits)
                out.append(Ack(ex.input))
            else:
                out.append(Fail(ex.input, reported(ex.error)))
        return out

