"""Trident spouts and the one transactional spout that carries them all.

A Trident spout has two halves, as a transactional spout: ``initialize_transaction(txid, prev_meta) ->
meta`` runs in the coordinator task and decides what batch ``txid`` holds (the metadata is persisted per
txid by the coordinator, so a replayed txid gets the same metadata), ``emit_batch(attempt, meta,
collector)`` runs in the emitter task and emits it (``collector.emit(values)``, no batch id).

:class:`TridentSpoutsExecutor` is the :class:`~storm_py.transactional.spouts.TransactionalSpout` a Trident
topology hands the transactional builder: its metadata is ``{txid name: that spout's metadata}`` and it
emits each spout's batch on the spout's streams, so every spout of the topology shares the coordinator,
its txids and its ordered commits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from storm_py.api.tuple import Fields
from storm_py.errors import InvalidTopologyException
from storm_py.transactional.batch import BatchCollector
from storm_py.transactional.spouts import CommitterTransactionalSpout, TransactionalSpout
from storm_py.trident.bolt import BATCH_FIELD

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.transactional.attempt import TransactionAttempt
    from storm_py.transactional.batch import BatchOutputCollector
    from storm_py.trident.operation import TridentCollector


class TridentSpout:
    """The base of Trident spouts: override ``get_output_fields``, ``initialize_transaction``, ``emit_batch``."""

    def get_output_fields(self) -> Fields:
        """The fields of the spout's tuples."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_output_fields")

    def open(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called in the emitter task before the first batch."""

    def is_ready(self) -> bool:
        """Whether a new batch may start now (asked repeatedly in the coordinator task; must not block)."""
        return True

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        """The metadata (a JSON value) of new batch ``txid`` given the previous batch's (None at first)."""
        raise NotImplementedError(f"{type(self).__name__} must implement initialize_transaction")

    def emit_batch(self, attempt: TransactionAttempt, meta: Any, collector: TridentCollector) -> None:
        """Emit the batch ``meta`` describes; a replay (same txid) gets the same metadata."""
        raise NotImplementedError(f"{type(self).__name__} must implement emit_batch")

    def cleanup_before(self, txid: int) -> None:
        """Every batch below ``txid`` is committed (called in the emitter task)."""

    def close(self) -> None:
        """The task is shutting down."""

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Configuration for the spout's tasks."""
        return None


class FixedBatchSpout(TridentSpout):
    """Storm's ``FixedBatchSpout``: up to ``max_batch_size`` of the given value lists per batch, in order;
    then empty batches, or (``set_cycle(True)``) from the start again.  A replayed txid re-emits exactly the
    tuples of its first attempt: the batch is decided by its persisted metadata ``[start, end]``."""

    def __init__(self, fields: Fields | Sequence[str], max_batch_size: int, *values: Sequence[Any]) -> None:
        if max_batch_size < 1:
            raise InvalidTopologyException(f"FixedBatchSpout: max_batch_size must be >= 1, got {max_batch_size}")
        self.fields = fields if isinstance(fields, Fields) else Fields(list(fields))
        self.max_batch_size = int(max_batch_size)
        self.outputs = [list(v) for v in values]
        for v in self.outputs:
            if len(v) != len(self.fields):
                raise InvalidTopologyException(
                    f"FixedBatchSpout: value {v!r} does not match the fields {list(self.fields)}"
                )
        self.cycle = False

    def set_cycle(self, cycle: bool) -> None:
        """Start again from the first value once every value was emitted."""
        self.cycle = bool(cycle)

    def get_output_fields(self) -> Fields:
        return self.fields

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        start = 0 if prev_meta is None else int(prev_meta[1])
        if start >= len(self.outputs) and self.cycle:
            start = 0
        return [start, min(start + self.max_batch_size, len(self.outputs))]

    def emit_batch(self, attempt: TransactionAttempt, meta: Any, collector: TridentCollector) -> None:
        start, end = meta
        for values in self.outputs[start:end]:
            collector.emit(values)


class _StreamCollector:
    """A Trident spout's collector: each emit goes out as ``[attempt, *values]`` on the spout's streams."""

    __slots__ = ("_emit", "attempt", "out", "streams")

    def __init__(self, out: BatchOutputCollector, attempt: Any, streams: list[str]) -> None:
        self.out = out
        self.attempt = attempt
        self.streams = streams
        #: ``emit(values, anchors, stream)``: the bolt's output collector itself when it is at hand
        self._emit: Callable[[list[Any], Any, str], Any] = (
            out.output.emit if isinstance(out, BatchCollector) else lambda values, _, stream: out.emit(values, stream)
        )

    def emit(self, values: Sequence[Any]) -> None:
        wire = [self.attempt, *values]
        emit = self._emit
        for stream in self.streams:
            emit(wire, None, stream)

    def report_error(self, exc: BaseException) -> None:
        self.out.report_error(exc)


class TridentSpoutsExecutor(TransactionalSpout):
    """Every Trident spout of a topology as one transactional spout (its coordinator and its emitter).

    Partitioned spouts emit in every emitter task (each owns some partitions), the others in the first.

    Args:
        spouts: ``{txid name: (spout, streams)}``: each spout's batch goes out on its streams.
    """

    def __init__(self, spouts: dict[str, tuple[Any, list[str]]]) -> None:
        self.spouts = spouts
        self._first_task = True

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> TridentSpoutsExecutor:
        for spout, _ in self.spouts.values():
            opener = getattr(spout, "open_coordinator", None)
            if opener is not None:
                opener(conf, context)
        return self

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> TridentSpoutsExecutor:
        self._first_task = context.this_task_index == 0
        for spout, _ in self._emitting():
            spout.open(conf, context)
        return self

    def _emitting(self) -> list[tuple[Any, list[str]]]:
        return [
            (spout, streams)
            for spout, streams in self.spouts.values()
            if self._first_task or getattr(spout, "partitioned", False)
        ]

    def is_ready(self) -> bool:
        return all(spout.is_ready() for spout, _ in self.spouts.values())

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        prev = prev_meta or {}
        return {name: spout.initialize_transaction(txid, prev.get(name)) for name, (spout, _) in self.spouts.items()}

    def emit_batch(self, tx: TransactionAttempt, meta: Any, collector: BatchOutputCollector) -> None:
        for name, (spout, streams) in self.spouts.items():
            if self._first_task or getattr(spout, "partitioned", False):
                spout.emit_batch(tx, meta.get(name), _StreamCollector(collector, tx, streams))

    def cleanup_before(self, txid: int) -> None:
        for spout, _ in self.spouts.values():
            cleanup = getattr(spout, "cleanup_before", None)
            if cleanup is not None:
                cleanup(txid)

    def close(self) -> None:
        for spout, _ in self.spouts.values():
            spout.close()

    def declare_output_fields(self, declarer: Any) -> None:
        for spout, streams in self.spouts.values():
            for stream in streams:
                declarer.declare_stream(stream, [BATCH_FIELD, *spout.get_output_fields()])

    def get_component_configuration(self) -> dict[str, Any] | None:
        merged: dict[str, Any] = {}
        for spout, _ in self.spouts.values():
            merged.update(spout.get_component_configuration() or {})
        return merged or None


class CommitterTridentSpoutsExecutor(TridentSpoutsExecutor, CommitterTransactionalSpout):
    """The spouts of a topology with an opaque partitioned spout: its emitter also commits each batch."""

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> CommitterTridentSpoutsExecutor:
        super().get_emitter(conf, context)
        return self

    def commit(self, tx: TransactionAttempt) -> None:
        for spout, _ in self.spouts.values():
            commit = getattr(spout, "commit", None)
            if commit is not None:
                commit(tx)
