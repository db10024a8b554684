"""Partitioned transactional spouts as Trident spouts (Storm's ``PartitionedTridentSpoutExecutor`` and
``OpaquePartitionedTridentSpoutExecutor``).

A :class:`~storm_py.transactional.spouts.PartitionedTransactionalSpout` or
:class:`~storm_py.transactional.spouts.OpaquePartitionedTransactionalSpout` (e.g. the Kafka spouts) runs
through the transactional package's own executors, so per-partition metadata is kept exactly as in a
transactional topology: under ``/transactional/<txid>/user/<partition>/``, ``txid`` being the stream's.  The
emitter tasks share the partitions (task ``i`` of ``n`` owns ``i, i+n, ...``); the first field the spout
declares (the attempt) is dropped from the Trident stream's fields and from every tuple.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.tuple import DEFAULT_STREAM, Fields
from storm_py.errors import InvalidTopologyException
from storm_py.transactional.partitioned import (
    OpaquePartitionedTransactionalSpoutExecutor,
    PartitionedTransactionalSpoutExecutor,
)
from storm_py.transactional.spouts import (
    CommitterEmitter,
    CommitterTransactionalSpout,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalCoordinator,
    TransactionalEmitter,
    TransactionalSpout,
)
from storm_py.trident.spout import TridentSpout

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.transactional.attempt import TransactionAttempt
    from storm_py.trident.operation import TridentCollector


def is_partitioned(spout: object) -> bool:
    """Whether ``spout`` is a partitioned or opaque-partitioned transactional spout."""
    return isinstance(spout, (PartitionedTransactionalSpout, OpaquePartitionedTransactionalSpout))


class _Unwrap:
    """The batch collector the wrapped emitter sees: drops the attempt each tuple starts with."""

    __slots__ = ("out",)

    def __init__(self, out: TridentCollector) -> None:
        self.out = out

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]:
        if stream == DEFAULT_STREAM:
            self.out.emit(list(values)[1:])
        return []

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None:
        self.emit(values, stream)

    def report_error(self, exc: BaseException) -> None:
        self.out.report_error(exc)


class PartitionedTridentSpout(TridentSpout):
    """Runs a (opaque-)partitioned transactional spout as a Trident spout; ``txid`` keys its metadata."""

    #: emits in every emitter task (each owns some partitions)
    partitioned = True

    def __init__(self, spout: PartitionedTransactionalSpout | OpaquePartitionedTransactionalSpout, txid: str) -> None:
        self.executor: TransactionalSpout
        if isinstance(spout, PartitionedTransactionalSpout):
            self.executor = PartitionedTransactionalSpoutExecutor(spout, txid)
        else:
            self.executor = OpaquePartitionedTransactionalSpoutExecutor(spout, txid)
        self.committer = isinstance(self.executor, CommitterTransactionalSpout)
        declarer = OutputFieldsDeclarer()
        spout.declare_output_fields(declarer)
        declared = declarer.streams.get(DEFAULT_STREAM)
        if declared is None or len(declared[0]) < 2:
            raise InvalidTopologyException(
                f"{type(spout).__name__} must declare a default stream of the attempt and at least one field"
            )
        self.fields = Fields(list(declared[0])[1:])
        self._coordinator: TransactionalCoordinator | None = None
        self._emitter: TransactionalEmitter | None = None

    def get_output_fields(self) -> Fields:
        return self.fields

    def open_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """In the coordinator task: the wrapped spout's coordinator."""
        self._coordinator = self.executor.get_coordinator(conf, context)

    def is_ready(self) -> bool:
        return self._coordinator is not None and bool(self._coordinator.is_ready())

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        assert self._coordinator is not None, "initialize_transaction before open_coordinator"
        return self._coordinator.initialize_transaction(txid, prev_meta)

    def open(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self._emitter = self.executor.get_emitter(conf, context)

    def emit_batch(self, attempt: TransactionAttempt, meta: Any, collector: TridentCollector) -> None:
        assert self._emitter is not None, "emit_batch before open"
        self._emitter.emit_batch(attempt, meta, _Unwrap(collector))

    def commit(self, attempt: TransactionAttempt) -> None:
        """The batch commits (opaque spouts persist its metadata now)."""
        if self.committer and self._emitter is not None:
            cast(CommitterEmitter, self._emitter).commit(attempt)

    def cleanup_before(self, txid: int) -> None:
        if self._emitter is not None:
            self._emitter.cleanup_before(txid)

    def close(self) -> None:
        for half in (self._coordinator, self._emitter):
            if half is not None:
                half.close()

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.executor.get_component_configuration()
