"""This module owns the columnar components users extend, :class:`VectorSpout` and :class:`VectorBolt`, the
collectors a vector bolt emits through, and the bolts of the system a vector bolt runs inside.

A vector bolt runs inside a :class:`VectorBoltRunner` (the builder puts it there when the bolt is set): the
runner hands each batch tuple of a columnar input to ``execute_batch`` as it arrived, gathers the tuples of a
per-tuple input into batches (:mod:`storm_py.vector.gathering`, by ``topology.vector.batch.size`` and
``topology.vector.batch.linger.ms``), and acks or fails the inputs with ``BasicBolt``'s semantics.

A vector bolt whose ``execute_batch`` is a coroutine function runs inside an :class:`AsyncVectorBoltRunner`
instead: the asyncio bolts' rules (one event loop per executor, ``topology.async.max.in.flight`` executions per
task, ordered or unordered output, timeouts), one execution per batch tuple.  A tuple of a per-tuple input is one
execution too, its batch of one row: gathering many inputs into one execution would make one input's failure
fail the others, so an asyncio vector bolt does not gather.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pyarrow as pa

from storm_py.api.async_bolt import AsyncBolt, AsyncOutputCollector
from storm_py.api.components import Bolt, Component, OutputCollector, OutputFieldsDeclarer, Spout, own_configuration
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.config.keys import setting
from storm_py.errors import FailedException, ReportedFailedException
from storm_py.vector.batches import SchemaMismatchException, gather_batch
from storm_py.vector.gathering import Gatherer

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.clock import Clock


class VectorSpout(Spout):
    """A spout of batches: the executor calls :meth:`next_batch` where it would call ``next_tuple``, under the
    same rules; emit batches with ``collector.emit(batch, msg_id=None, stream="default")``."""

    def next_batch(self) -> None:
        """Emit zero or more batches; called again and again while the topology is active."""

    def next_tuple(self) -> None:
        """Calls :meth:`next_batch`."""
        self.next_batch()


class VectorBolt(Component):
    """A bolt of batches, with ``BasicBolt``'s semantics: every emit is anchored to the input, and the input is
    acked when :meth:`execute_batch` returns (failed when it raises; reported too unless it raised
    :class:`~storm_py.errors.FailedException`).  Define ``execute_tick(tup, collector)`` to get tick tuples."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> Awaitable[None] | None:
        """Called once when the task starts (may be ``async def`` when ``execute_batch`` is)."""
        return None

    def execute_batch(self, batch: pa.RecordBatch,
                      collector: VectorOutputCollector | AsyncVectorCollector) -> Awaitable[None] | None:
        """Process one batch (may be ``async def``: the bolt then runs under the asyncio bolts' rules)."""
        return None

    def cleanup(self) -> Awaitable[None] | None:
        """The task is shutting down (not guaranteed to be called)."""
        return None

    def topology_bolt(self) -> VectorBoltRunner | AsyncVectorBoltRunner:
        """The bolt this one runs inside: an asyncio one when ``execute_batch`` is a coroutine function."""
        if inspect.iscoroutinefunction(self.execute_batch):
            return AsyncVectorBoltRunner(self)
        return VectorBoltRunner(self)


@runtime_checkable
class TickHandler(Protocol):
    """A vector bolt that takes tick tuples."""

    def execute_tick(self, tup: Tuple,
                     collector: VectorOutputCollector | AsyncVectorCollector) -> Awaitable[None] | None: ...


class _InputSource:
    """The read-only names of the input a vector bolt is processing, which its collectors carry."""

    __slots__ = ("_source_component", "_source_stream", "_source_task")

    def __init__(self, source_component: str, source_stream: str, source_task: int | None) -> None:
        self._source_component = source_component
        self._source_stream = source_stream
        self._source_task = source_task

    @property
    def source_component(self) -> str:
        """The component of the input being processed."""
        return self._source_component

    @property
    def source_stream(self) -> str:
        """The stream of the input being processed."""
        return self._source_stream

    @property
    def source_task(self) -> int | None:
        """The task that emitted the input (``None`` for a batch gathered from several tasks)."""
        return self._source_task


class VectorOutputCollector(_InputSource):
    """What :meth:`VectorBolt.execute_batch` emits through: every emit is anchored to the input being processed.

    On a columnar stream ``data`` is a batch (a ``RecordBatch``, a ``Table`` or an Arrow PyCapsule object); on a
    per-tuple stream it is one values list.
    """

    __slots__ = ("_anchors", "_collector")

    def __init__(self, collector: OutputCollector, anchors: Tuple | list[Tuple], source_component: str,
                 source_stream: str, source_task: int | None) -> None:
        super().__init__(source_component, source_stream, source_task)
        self._collector = collector
        self._anchors = anchors

    def emit(self, data: Any, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``data`` anchored to the input; return the sorted ids of the tasks that got it."""
        return self._collector.emit(data, self._anchors, stream)

    def emit_direct(self, task_id: int, data: Any, stream: str = DEFAULT_STREAM) -> None:
        """Emit ``data`` to ``task_id`` on a direct stream, anchored to the input."""
        self._collector.emit_direct(task_id, data, self._anchors, stream)

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._collector.report_error(exc)


class VectorBoltRunner(Bolt):
    """The bolt a :class:`VectorBolt` runs inside (see the module docstring)."""

    def __init__(self, bolt: VectorBolt) -> None:
        self.bolt = bolt
        self._collector: OutputCollector | None = None
        self._columnar: frozenset[tuple[str, str]] = frozenset()
        self._gatherer: Gatherer[tuple[str, str], Tuple] = Gatherer(1, 0.0)
        self._clock: Clock | None = None
        self._component_id = ""
        self._tick: Callable[[Tuple, VectorOutputCollector], object] | None = None

    @property
    def wrapped_component(self) -> VectorBolt:
        """The user's vector bolt."""
        return self.bolt

    def takes_batches(self) -> bool:
        """Batch tuples of columnar inputs come whole (no row tuples)."""
        return True

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._collector = collector
        self._columnar = context.get_columnar_sources()
        self._clock = context.clock
        self._component_id = context.get_this_component_id()
        size = int(setting(conf, "topology.vector.batch.size"))
        linger_ms = float(setting(conf, "topology.vector.batch.linger.ms"))
        self._gatherer = Gatherer(size, linger_ms / 1000.0)
        bolt = self.bolt
        self._tick = bolt.execute_tick if isinstance(bolt, TickHandler) else None
        bolt.prepare(conf, context)

    def bind_wake(self, wake: Callable[[], None]) -> None:
        """Nothing arrives from outside the inputs: gathered batches are handed out by :meth:`background_step`."""

    def background_step(self, now: float) -> bool:
        """Hand out the gathered batches whose linger is over."""
        if not len(self._gatherer):
            return False
        due = self._gatherer.due(now)
        for (component, stream), tuples in due:
            self._run_gathered(component, stream, tuples)
        return bool(due)

    def execute(self, tup: Tuple) -> None:
        key = (tup.source_component, tup.source_stream)
        if key in self._columnar:
            self._run(tup.values[0], [tup], tup.source_component, tup.source_stream, tup.source_task)
        elif tup.is_tick():
            self._run_tick(tup)
        else:
            assert self._clock is not None
            full = self._gatherer.add(key, tup, self._clock.now())
            if full is not None:
                self._run_gathered(tup.source_component, tup.source_stream, full)

    def _run_tick(self, tup: Tuple) -> None:
        if self._tick is None:
            return  # no execute_tick: ticks are dropped
        self._call(lambda out: self._tick(tup, out) if self._tick else None, [], tup.source_component,
                   tup.source_stream, tup.source_task)

    def _run_gathered(self, component: str, stream: str, tuples: list[Tuple]) -> None:
        tasks = {t.source_task for t in tuples}
        source_task = tasks.pop() if len(tasks) == 1 else None
        collector = self._collector
        assert collector is not None
        try:
            batch = gather_batch([t.values for t in tuples], list(tuples[0].fields), self._component_id, stream)
        except SchemaMismatchException as exc:
            collector.report_error(exc)
            for t in tuples:
                collector.fail(t)
            return
        self._run(batch, tuples, component, stream, source_task)

    def _run(self, batch: pa.RecordBatch, inputs: list[Tuple], component: str, stream: str,
             source_task: int | None) -> None:
        bolt = self.bolt
        self._call(lambda out: bolt.execute_batch(batch, out), inputs, component, stream, source_task)

    def _call(self, work: Callable[[VectorOutputCollector], object], inputs: Sequence[Tuple], component: str,
              stream: str, source_task: int | None) -> None:
        """Run ``work`` with a collector anchored to ``inputs``; ack them after, or fail them (BasicBolt)."""
        collector = self._collector
        assert collector is not None
        anchors: Tuple | list[Tuple] = inputs[0] if len(inputs) == 1 else list(inputs)
        out = VectorOutputCollector(collector, anchors, component, stream, source_task)
        try:
            work(out)
        except ReportedFailedException as exc:
            collector.report_error(exc)
            self._fail(inputs)
            return
        except FailedException:
            self._fail(inputs)
            return
        except Exception as exc:
            collector.report_error(exc)
            self._fail(inputs)
            return
        for t in inputs:
            collector.ack(t)

    def _fail(self, inputs: Sequence[Tuple]) -> None:
        collector = self._collector
        assert collector is not None
        for t in inputs:
            collector.fail(t)

    def cleanup(self) -> None:
        self.bolt.cleanup()


class AsyncVectorCollector(_InputSource):
    """What an asyncio ``execute_batch`` emits through: every emit is anchored to the execution's input.  On a
    columnar stream ``data`` is a batch; on a per-tuple stream one values list.  ``emit`` returns ``None``: in
    ordered mode the data is not sent yet."""

    __slots__ = ("_collector",)

    def __init__(self, collector: AsyncOutputCollector, source_component: str, source_stream: str,
                 source_task: int) -> None:
        super().__init__(source_component, source_stream, source_task)
        self._collector = collector

    def emit(self, data: Any, stream: str = DEFAULT_STREAM) -> None:
        """Emit ``data`` anchored to the execution's input."""
        self._collector.emit(data, stream)

    def emit_direct(self, task_id: int, data: Any, stream: str = DEFAULT_STREAM) -> None:
        """Emit ``data`` to ``task_id`` on a direct stream, anchored to the execution's input."""
        self._collector.emit_direct(task_id, data, stream)

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._collector.report_error(exc)


async def _settle(result: object) -> None:
    if inspect.isawaitable(result):
        await result


class AsyncVectorBoltRunner(AsyncBolt):
    """The asyncio bolt a :class:`VectorBolt` with ``async def execute_batch`` runs inside."""

    def __init__(self, bolt: VectorBolt) -> None:
        self.bolt = bolt
        self._collector: AsyncOutputCollector | None = None
        self._columnar: frozenset[tuple[str, str]] = frozenset()
        self._component_id = ""

    @property
    def wrapped_component(self) -> VectorBolt:
        """The user's vector bolt."""
        return self.bolt

    def takes_batches(self) -> bool:
        """Batch tuples of columnar inputs come whole (no row tuples)."""
        return True

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return own_configuration(self.bolt)

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: AsyncOutputCollector) -> Awaitable[None] | None:
        self._collector = collector
        self._columnar = context.get_columnar_sources()
        self._component_id = context.get_this_component_id()
        return _settle(self.bolt.prepare(conf, context))

    async def execute(self, tup: Tuple) -> None:
        collector = self._collector
        assert collector is not None
        out = AsyncVectorCollector(collector, tup.source_component, tup.source_stream, tup.source_task)
        if tup.is_tick():
            if isinstance(self.bolt, TickHandler):  # without execute_tick, ticks are dropped
                await _settle(self.bolt.execute_tick(tup, out))
            return
        if (tup.source_component, tup.source_stream) in self._columnar:
            batch = tup.values[0]
        else:
            batch = gather_batch([tup.values], list(tup.fields), self._component_id, tup.source_stream)
        await _settle(self.bolt.execute_batch(batch, out))

    def cleanup(self) -> Awaitable[None] | None:
        return _settle(self.bolt.cleanup())
