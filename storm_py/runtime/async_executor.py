"""This module owns the executor of asyncio bolts (:class:`~storm_py.api.async_bolt.AsyncBolt`): one event loop per
executor in a thread of its own (:class:`~storm_py.runtime.async_loop.AsyncLoop`), and per task a driver
(:class:`AsyncBoltDriver`) that puts the bolt's coroutines on it and carries out what the task's
:class:`~storm_py.runtime.async_core.AsyncLedger` decides.

The split of work between the two threads:

- the worker loop thread runs :class:`AsyncBoltExecutor` like any bolt executor.  ``execute(tup)`` of a driver
  records the start in the ledger and queues the input; the driver's ``step`` (called every pass) hands the
  queued inputs to the event loop in one call, reads what the executions reported (emits, completions), checks
  their deadlines against the clock and applies the ledger's decisions through the task's collector (emits,
  acks, fails, errors).  So every emit and ack still leaves from the worker loop thread, as for any bolt.
- the event loop thread runs ``prepare``, the executions and ``cleanup``.  An execution's collector calls
  (:class:`AsyncCollector`) only append to the driver's event queue and wake the worker loop.

A full task (``room() <= 0``) is handed no more input: the executor keeps it in its inbox, which backs up into
the worker's backlog and so pauses the spouts.  Managed state wraps the driver: at a checkpoint the wrapper calls
:meth:`AsyncBoltDriver.drain` before it prepares the state, and :meth:`AsyncBoltDriver.cancel_in_flight` before a
rollback (:class:`~storm_py.runtime.contracts.Drains`).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final, Protocol, runtime_checkable

from storm_py.api.async_bolt import AsyncBolt, check_async_bolt
from storm_py.api.components import OutputCollector, OutputFieldsDeclarer, own_configuration
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.clock import Clock
from storm_py.config import merge_component_conf
from storm_py.errors import InvalidTopologyException
from storm_py.runtime.async_core import Ack, AsyncLedger, AsyncSettings, Cancel, Decision, Emit, Fail
from storm_py.runtime.async_loop import CANCEL_WAIT_SECS, AsyncLoop
from storm_py.runtime.bolt_executor import BoltExecutor
from storm_py.runtime.contracts import ReplacesWrapped, TakesBatches, layers
from storm_py.runtime.executor import ExecutorHost

log = logging.getLogger(__name__)

#: the execution a coroutine belongs to: ``(driver, seq)``; each asyncio task runs in a copy of its creator's
#: context, so tasks an execution starts belong to it too
CURRENT: contextvars.ContextVar[tuple[AsyncBoltDriver, int] | None] = contextvars.ContextVar(
    "storm_py_async_execution", default=None
)

#: kinds of events an execution reports to the worker loop thread
EMIT: Final = 0
DONE: Final = 1
ERROR: Final = 2
RESET: Final = 3

#: longest wait of a drain between two looks at the deadlines (seconds)
DRAIN_POLL_SECS: Final = 0.05


@runtime_checkable
class _StateHooks(Protocol):
    """The hooks of a stateful bolt (:class:`~storm_py.stateful.api.bolt.BaseStatefulBolt`) the driver passes on."""

    def init_state(self, state: Any) -> None: ...

    def pre_prepare(self, txid: int) -> None: ...

    def pre_commit(self, txid: int) -> None: ...

    def pre_rollback(self) -> None: ...


def _kept(values: Any) -> Any:
    """What an emit keeps until it is sent: a copy of a values list (the coroutine may change its own list after
    the emit); a batch of a columnar stream as it is (emitted batches are not modified)."""
    return list(values) if isinstance(values, (list, tuple)) else values


class AsyncCollector:
    """The :class:`~storm_py.api.async_bolt.AsyncOutputCollector` of one task: it records what an execution emits
    for the worker loop thread to send."""

    def __init__(self, driver: AsyncBoltDriver, streams: Sequence[str]) -> None:
        self._driver = driver
        self._streams = frozenset(streams)

    def _seq(self, what: str) -> int:
        """The execution calling now; ``RuntimeError`` when the call is not made by one of this task's."""
        driver = self._driver
        if threading.get_ident() != driver.loop.thread_id:
            raise RuntimeError(f"{what} of bolt {driver.component_id!r} called from another thread than its "
                               "event loop's: only an execution may emit")
        current = CURRENT.get()
        if current is None or current[0] is not driver or current[1] not in driver._tasks:
            raise RuntimeError(f"{what} of bolt {driver.component_id!r} called outside an execution (or after it "
                               "completed): an emit is anchored to the input of the execution making it")
        return current[1]

    def _check_stream(self, stream: str) -> None:
        if stream not in self._streams:
            raise ValueError(f"unknown stream {stream!r}: {self._driver.component_id!r} does not declare it")

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        seq = self._seq("emit")
        self._check_stream(stream)
        self._driver.report((EMIT, seq, stream, _kept(values), None))

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        seq = self._seq("emit_direct")
        self._check_stream(stream)
        self._driver.report((EMIT, seq, stream, _kept(values), task_id))

    def report_error(self, exc: BaseException) -> None:
        self._driver.report((ERROR, exc))

    def reset_timeout(self, tup: Tuple) -> None:
        self._seq("reset_timeout")
        self._driver.report((RESET, tup))


class AsyncBoltDriver:
    """What the bolt executor (or a managed-state wrapper) runs in place of one task's :class:`AsyncBolt`: a rich
    bolt whose ``execute`` starts an execution and returns at once (see the module's description)."""

    def __init__(self, bolt: AsyncBolt, loop: AsyncLoop, clock: Clock, wake: Callable[[], None]) -> None:
        self.bolt = bolt
        self.loop = loop
        self.clock = clock
        self._wake = wake
        self.component_id = ""
        self._takes_batches = isinstance(bolt, TakesBatches) and bolt.takes_batches()
        self.collector: OutputCollector | None = None
        self.ledger: AsyncLedger | None = None
        #: inputs started on the worker loop thread and not yet handed to the event loop
        self._starts: list[tuple[int, Tuple]] = []
        #: what executions reported, read by the worker loop thread (deque appends are atomic)
        self._events: deque[tuple[Any, ...]] = deque()
        #: the asyncio task of each running execution (touched on the event loop's thread only)
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._signal = threading.Event()
        self._draining = False

    def takes_batches(self) -> bool:
        """Whether the batch tuples of columnar inputs reach the bolt whole (an asyncio vector bolt's runner)."""
        return self._takes_batches

    @property
    def wrapped_component(self) -> Any:
        """The user's bolt."""
        return self.bolt

    # ------------------------------------------------------------------------------------- the bolt's face

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.component_id = context.get_this_component_id()
        self.collector = collector
        self.ledger = AsyncLedger(AsyncSettings.from_conf(conf, self.component_id), self.component_id)
        out = AsyncCollector(self, context.get_component_streams(self.component_id))
        bolt = self.bolt
        self.loop.run(lambda: bolt.prepare(conf, context, out))

    def execute(self, tup: Tuple) -> None:
        ledger = self.ledger
        if ledger is None:
            raise RuntimeError(f"async bolt {type(self.bolt).__name__} was not prepared: execute came before prepare")
        self._starts.append((ledger.start(tup, self.clock.now()), tup))

    def room(self) -> int:
        """How many more inputs the task takes now."""
        return self.ledger.room() if self.ledger is not None else 0

    def cleanup(self) -> None:
        if self.ledger is not None:
            self.cancel_in_flight()
        bolt = self.bolt
        self.loop.run(bolt.cleanup, CANCEL_WAIT_SECS)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)

    # managed state's hooks, run on the bolt's loop (no execution is in flight then)

    def init_state(self, state: Any) -> None:
        bolt = self.bolt
        if isinstance(bolt, _StateHooks):
            self.loop.run(lambda: bolt.init_state(state))

    def pre_prepare(self, txid: int) -> None:
        bolt = self.bolt
        if isinstance(bolt, _StateHooks):
            self.loop.run(lambda: bolt.pre_prepare(txid))

    def pre_commit(self, txid: int) -> None:
        bolt = self.bolt
        if isinstance(bolt, _StateHooks):
            self.loop.run(lambda: bolt.pre_commit(txid))

    def pre_rollback(self) -> None:
        bolt = self.bolt
        if isinstance(bolt, _StateHooks):
            self.loop.run(bolt.pre_rollback)

    # ------------------------------------------------------------------------ the worker loop thread's side

    def step(self, now: float) -> bool:
        """Hand queued inputs to the loop, apply what executions reported and what timed out; whether anything
        was done."""
        did = self._flush()
        ledger = self.ledger
        if ledger is None:
            return did
        events = self._events
        decisions: list[Decision] = []
        while events:
            did = True
            event = events.popleft()
            kind = event[0]
            if kind == EMIT:
                decisions.extend(ledger.emitted(event[1], event[2], event[3], event[4]))
            elif kind == DONE:
                decisions.extend(ledger.finished(event[1], event[2]))
            else:
                self._apply(decisions)
                decisions = []
                self._side_event(event)
        if now >= ledger.next_deadline():
            decisions.extend(ledger.expire(now))
        if decisions:
            did = True
            self._apply(decisions)
        return did

    def drain(self) -> None:
        """Wait until every execution in flight completed (acked, failed or timed out), applying what they report;
        nothing new starts meanwhile (the caller, a checkpoint, holds the worker loop thread)."""
        ledger = self.ledger
        if ledger is None:
            return
        self._draining = True
        try:
            while True:
                self._signal.clear()
                self.step(self.clock.now())
                if not ledger.in_flight:
                    return
                wait = min(DRAIN_POLL_SECS, max(0.0, ledger.next_deadline() - self.clock.now()))
                if not self._events:
                    self._signal.wait(wait)
        finally:
            self._draining = False

    def cancel_in_flight(self) -> list[Tuple]:
        """Cancel every execution in flight (a rollback) and wait until they unwound; their inputs, unacked and
        not failed, in the order they arrived.  What they emitted and not sent yet is discarded."""
        ledger = self.ledger
        if ledger is None:
            return []
        self._starts = []
        _, inputs = ledger.cancel_all()
        self._events.clear()
        try:
            self.loop.run(self._cancel_all, CANCEL_WAIT_SECS)
        except TimeoutError:
            log.warning("bolt %s: executions still running %.0f s after they were cancelled", self.component_id,
                        CANCEL_WAIT_SECS)
        self._events.clear()
        return inputs

    def _flush(self) -> bool:
        starts = self._starts
        if not starts:
            return False
        self._starts = []
        self.loop.post(functools.partial(self._start_all, starts))
        return True

    def _apply(self, decisions: list[Decision]) -> None:
        collector = self.collector
        assert collector is not None
        for d in decisions:
            try:
                if type(d) is Emit:
                    if d.task is None:
                        collector.emit(d.values, d.input, d.stream)
                    else:
                        collector.emit_direct(d.task, d.values, anchors=d.input, stream=d.stream)
                elif type(d) is Ack:
                    collector.ack(d.input)
                elif type(d) is Fail:
                    if d.error is not None:
                        log.error("bolt %s failed %r: %s", self.component_id, d.input, d.error)
                        collector.report_error(d.error)
                    collector.fail(d.input)
                elif type(d) is Cancel:
                    self.loop.post(functools.partial(self._cancel, d.seq))
            except Exception as exc:  # an emit the collector refuses (a direct stream's rules): the error shows
                log.error("bolt %s could not carry out %r: %s", self.component_id, d, exc)
                collector.report_error(exc)

    def _side_event(self, event: tuple[Any, ...]) -> None:
        collector = self.collector
        assert collector is not None
        if event[0] == ERROR:
            collector.report_error(event[1])
        elif event[0] == RESET:
            collector.reset_timeout(event[1])

    def report(self, event: tuple[Any, ...]) -> None:
        """An event for the worker loop thread (called on the event loop's thread)."""
        self._events.append(event)
        self._wake()
        if self._draining:
            self._signal.set()

    # ---------------------------------------------------------------------------- the event loop's side

    def _start_all(self, starts: list[tuple[int, Tuple]]) -> None:
        loop = self.loop.loop
        tasks = self._tasks
        for seq, tup in starts:
            tasks[seq] = loop.create_task(self._run(seq, tup))

    async def _run(self, seq: int, tup: Tuple) -> None:
        CURRENT.set((self, seq))
        error: BaseException | None = None
        try:
            await self.bolt.execute(tup)
        except asyncio.CancelledError:
            return  # timed out or rolled back: the ledger failed or dropped it already
        except Exception as exc:
            error = exc
        finally:
            self._tasks.pop(seq, None)
        self.report((DONE, seq, error))

    def _cancel(self, seq: int) -> None:
        task = self._tasks.get(seq)
        if task is not None:
            task.cancel()

    def _cancel_all(self) -> Coroutine[Any, Any, None] | None:
        tasks = list(self._tasks.values())
        if not tasks:
            return None
        for task in tasks:
            task.cancel()
        return self._wait_all(tasks)

    @staticmethod
    async def _wait_all(tasks: list[asyncio.Task[None]]) -> None:
        await asyncio.wait(tasks, timeout=CANCEL_WAIT_SECS)


def is_async_component(component: object) -> bool:
    """Whether ``component`` is, or wraps, an :class:`AsyncBolt`."""
    return any(isinstance(layer, AsyncBolt) for layer in layers(component))


def check_async_bolts(topology: StormTopology, conf: dict[str, Any]) -> None:
    """The submit-time check of every async bolt of ``topology``: its ``execute`` is a coroutine function and its
    settings (its component conf over ``conf``) are valid; :class:`InvalidTopologyException` names the component
    and what is wrong.  Components without their object (a topology's skeleton) are not checked."""
    for cid, spec in sorted(topology.bolts.items()):
        for layer in layers(spec.obj):
            if isinstance(layer, AsyncBolt):
                check_async_bolt(cid, layer)
                try:
                    AsyncSettings.from_conf(merge_component_conf(conf, spec.conf), cid)
                except ValueError as err:
                    raise InvalidTopologyException(str(err), component=cid) from err


class AsyncBoltExecutor(BoltExecutor):
    """The bolt executor of an :class:`AsyncBolt`: one event loop for its tasks, a driver per task."""

    def __init__(self, rt: ExecutorHost, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        self.loop = AsyncLoop(f"async-{component_id}-{task_ids[0]}")
        self.drivers: dict[int, AsyncBoltDriver] = {}

    def instantiate(self, task: int) -> Any:
        """The task's component with a driver in place of its :class:`AsyncBolt` (wrapped or not)."""
        obj = super().instantiate(task)
        if isinstance(obj, AsyncBolt):
            driver = self.drivers[task] = AsyncBoltDriver(obj, self.loop, self.clock, self.rt.wake.set)
            return driver
        for layer in layers(obj):
            if isinstance(layer, ReplacesWrapped) and isinstance(layer.wrapped_component, AsyncBolt):
                driver = self.drivers[task] = AsyncBoltDriver(
                    layer.wrapped_component, self.loop, self.clock, self.rt.wake.set)
                layer.replace_wrapped(driver)
                break
        return obj

    def prepare(self) -> None:
        self.loop.start()
        try:
            super().prepare()
        except BaseException:
            self.loop.stop()
            raise
        for task, driver in self.drivers.items():
            self.rooms[task] = driver.room
            self.background.append(driver.step)

    def shutdown(self) -> None:
        try:
            super().shutdown()
        finally:
            self.loop.stop()
