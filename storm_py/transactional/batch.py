"""Batch bolts: the user-facing bases (one instance per batch) and the executor that keeps one per open batch.

A batch bolt sees the tuples of one batch (``execute``), then ``finish_batch`` once the counting protocol
(:mod:`storm_py.transactional.coordinated`) established that it received the whole batch.  A bolt marked
:class:`Committer` finishes in the commit phase, strictly in transaction order.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from storm_py.api.components import BasicBolt, Component, OutputCollector, own_configuration
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.errors import FailedException, ReportedFailedException

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext

log = logging.getLogger(__name__)


class BatchOutputCollector(Protocol):
    """What batch bolts and batch emitters emit through (emits are not anchored: the batch is the unit)."""

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]: ...

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None: ...

    def report_error(self, exc: BaseException) -> None: ...


class BatchCollector:
    """The :class:`BatchOutputCollector` over a bolt's output collector."""

    __slots__ = ("_out",)

    def __init__(self, out: OutputCollector) -> None:
        self._out = out

    @property
    def output(self) -> OutputCollector:
        """The output collector emits go to (``emit(values, None, stream)`` is this collector's ``emit``)."""
        return self._out

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit a tuple of the batch (its first value is the batch id); return the target tasks."""
        return self._out.emit(values, None, stream)

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        """Emit a tuple of the batch to one task of a direct stream."""
        self._out.emit_direct(task_id, values, None, stream)

    def report_error(self, exc: BaseException) -> None:
        """Record an error for the topology summary."""
        self._out.report_error(exc)

    def ack(self, tup: Tuple) -> None:
        """Ack an input (used by the framework)."""
        self._out.ack(tup)

    def fail(self, tup: Tuple) -> None:
        """Fail an input (used by the framework)."""
        self._out.fail(tup)


class BaseBatchBolt(Component):
    """Storm's ``BaseBatchBolt``: a fresh copy is prepared for every batch id and sees only that batch.

    Raise :class:`~storm_py.errors.FailedException` from ``execute`` or ``finish_batch`` to fail the batch.
    """

    def prepare(
        self,
        conf: dict[str, Any],
        context: TopologyContext,
        collector: BatchOutputCollector,
        id: Any,
    ) -> None:
        """Called once per batch, before its first tuple (or before ``finish_batch`` of an empty batch)."""

    def execute(self, tup: Tuple) -> None:
        """Process one tuple of the batch (its first value is the batch id)."""

    def finish_batch(self) -> None:
        """The whole batch was received; emit results (a committer: commit them)."""


class BaseTransactionalBolt(BaseBatchBolt):
    """A batch bolt of a transactional topology: the ``id`` handed to ``prepare`` is a
    :class:`~storm_py.transactional.attempt.TransactionAttempt`."""


class Committer:
    """Mixin marking a batch bolt a committer: ``finish_batch`` runs in the commit phase, in txid order."""


def is_batch_bolt(obj: object) -> bool:
    """Whether ``obj`` looks like a batch bolt (has ``finish_batch``)."""
    return callable(getattr(obj, "finish_batch", None)) and callable(getattr(obj, "execute", None))


def is_batch_executor(obj: object) -> bool:
    """Whether ``obj`` is a batch executor (like :class:`BatchBoltExecutor`: ``execute`` acks or fails each
    tuple, ``finished_id(id)`` ends a batch), to run as a coordinated bolt's delegate as it is."""
    return callable(getattr(obj, "finished_id", None)) and callable(getattr(obj, "execute", None))


class BatchBoltExecutor:
    """Storm's ``BatchBoltExecutor``: one prepared copy of the batch bolt per open batch id.

    It is the delegate of a coordinated bolt: ``execute`` runs the batch's instance then acks the tuple
    (``FailedException`` fails it); ``finished_id`` runs ``finish_batch`` and drops the instance;
    ``timeout_id`` drops it.
    """

    def __init__(self, bolt: Any) -> None:
        self.bolt = bolt
        self._open: dict[Any, Any] = {}
        self._conf: dict[str, Any] = {}
        self._context: TopologyContext | None = None
        self._collector: BatchCollector | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext | None, collector: OutputCollector) -> None:
        """Keep what every per-batch instance is prepared with."""
        self._conf = conf
        self._context = context
        self._collector = BatchCollector(collector)
        self._open = {}

    def _bolt_for(self, batch_id: Any) -> Any:
        bolt = self._open.get(batch_id)
        if bolt is None:
            bolt = copy.deepcopy(self.bolt)
            bolt.prepare(self._conf, self._context, self._collector, batch_id)
            self._open[batch_id] = bolt
        return bolt

    def execute(self, tup: Tuple) -> None:
        """Run the tuple through its batch's instance, then ack it; ``FailedException`` fails it."""
        collector = self._collector
        assert collector is not None, "BatchBoltExecutor used before prepare"
        try:
            self._bolt_for(tup.values[0]).execute(tup)
        except FailedException as exc:
            log.info("failed a tuple of batch %r: %s", tup.values[0], exc)
            collector.fail(tup)
            return
        collector.ack(tup)

    def finished_id(self, batch_id: Any) -> None:
        """The batch is complete: run ``finish_batch`` on its instance (created now for an empty batch)."""
        bolt = self._bolt_for(batch_id)
        del self._open[batch_id]
        bolt.finish_batch()

    def timeout_id(self, batch_id: Any) -> None:
        """The batch will not complete: forget its instance."""
        self._open.pop(batch_id, None)

    def open_batches(self) -> list[Any]:
        """Ids of the batches with a live instance."""
        return list(self._open)

    def cleanup(self) -> None:
        """The batch instances hold nothing; the bolt as declared may (e.g. a background job): clean it up."""
        self._open = {}
        cleanup = getattr(self.bolt, "cleanup", None)
        if cleanup is not None:
            cleanup()

    def declare_output_fields(self, declarer: Any) -> None:
        """The batch bolt's streams."""
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The batch bolt's component configuration."""
        return own_configuration(self.bolt)


class _AnchoringCollector:
    """The collector a basic bolt sees inside a transactional topology: emits are anchored to the input."""

    __slots__ = ("_out", "input")

    def __init__(self, out: OutputCollector) -> None:
        self._out = out
        self.input: Tuple | None = None

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        return self._out.emit(values, self.input, stream)

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        self._out.emit_direct(task_id, values, self.input, stream)

    def report_error(self, exc: BaseException) -> None:
        self._out.report_error(exc)

    def reset_timeout(self, tup: Tuple) -> None:
        self._out.reset_timeout(tup)


class BasicBoltExecutor:
    """Runs a :class:`~storm_py.api.components.BasicBolt` as the delegate of a coordinated bolt.

    Emits are anchored to the input, the input is acked when ``execute`` returns; ``FailedException`` fails it
    (``ReportedFailedException`` also reports the error).
    """

    def __init__(self, bolt: BasicBolt) -> None:
        self.bolt = bolt
        self._out: OutputCollector | None = None
        self._basic: _AnchoringCollector | None = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Prepare the basic bolt."""
        self._out = collector
        self._basic = _AnchoringCollector(collector)
        self.bolt.prepare(conf, context)

    def execute(self, tup: Tuple) -> None:
        """Execute, then ack (or fail on ``FailedException``)."""
        out, basic = self._out, self._basic
        assert out is not None and basic is not None, "BasicBoltExecutor used before prepare"
        basic.input = tup
        try:
            self.bolt.execute(tup, basic)
        except ReportedFailedException as exc:
            out.report_error(exc)
            out.fail(tup)
            return
        except FailedException:
            out.fail(tup)
            return
        out.ack(tup)

    def cleanup(self) -> None:
        """Clean up the basic bolt."""
        self.bolt.cleanup()

    def declare_output_fields(self, declarer: Any) -> None:
        """The basic bolt's streams."""
        self.bolt.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The basic bolt's component configuration."""
        return self.bolt.get_component_configuration()
