"""Test spouts: in-memory transactional spouts for tests and examples, partitioned (identical replays) and opaque.

``data`` is ``{partition: [values, ...]}`` (partitions 0..n-1) and stays the caller's object: it may grow
while the topology runs, partitions may be added.  Each batch takes up to ``take_per_batch`` tuples of every
partition; tuples are ``[tx, *values]`` with fields ``["tx", *fields]``.

A partition counts as finished once it has produced more than ``topology.max.spout.pending`` empty new
batches in a row: every batch that carried its data is committed by then.  ``is_exhausted()`` (what
``complete_topology`` asks) is true when every partition is finished and nothing was added since; while it
is, the coordinator starts no new transactions, so the topology goes quiet.  Works in-process only (the data
is shared with the caller).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Fields
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector
from storm_py.transactional.spouts import (
    OpaqueCoordinator,
    OpaqueEmitter,
    OpaquePartitionedTransactionalSpout,
    PartitionedCoordinator,
    PartitionedEmitter,
    PartitionedTransactionalSpout,
)

log = logging.getLogger(__name__)

TX_FIELD = "tx"


class MemorySource:
    """What every copy of a memory spout shares: the caller's data and the partitions' completion."""

    def __init__(self, data: dict[int, list[Any]]) -> None:
        self.data = data
        self.lock = threading.Lock()
        self._finished: dict[int, int] = {}
        self.disabled: set[int] = set()

    def __deepcopy__(self, memo: dict[int, Any]) -> MemorySource:
        return self

    def __copy__(self) -> MemorySource:
        return self

    def num_partitions(self) -> int:
        """Partitions now."""
        return len(self.data)

    def queue(self, partition: int) -> list[Any]:
        """A partition's tuples (empty if it does not exist)."""
        return self.data.get(partition, [])

    def mark_finished(self, partition: int, position: int) -> None:
        """``partition`` has nothing left after ``position`` and all of it is committed."""
        with self.lock:
            self._finished[partition] = position

    def is_exhausted(self) -> bool:
        """Every partition is finished at its current length."""
        with self.lock:
            return all(self._finished.get(p) == len(q) for p, q in list(self.data.items()))

    def reset(self) -> None:
        """Forget completion (a new run of the topology starts)."""
        with self.lock:
            self._finished.clear()


def _max_pending(conf: dict[str, Any]) -> int:
    value = conf.get("topology.max.spout.pending")
    return int(value) if value else 1


class _Batches:
    """The batch arithmetic both memory spouts share: ``{"index", "amt"}`` metadata and completion."""

    def __init__(self, source: MemorySource, take: int, max_pending: int) -> None:
        self.source = source
        self.take = take
        self.max_pending = max_pending
        self.empty_runs: dict[int, int] = {}
        self.last_txid: dict[int, int] = {}

    def next_meta(self, partition: int, txid: int, last_meta: Any) -> dict[str, int]:
        index = 0 if last_meta is None else int(last_meta["index"]) + int(last_meta["amt"])
        left = max(0, len(self.source.queue(partition)) - index)
        amt = min(left, self.take)
        if amt:
            self.empty_runs[partition] = 0
        elif txid > self.last_txid.get(partition, 0):  # replays of a txid count once
            runs = self.empty_runs.get(partition, 0) + 1
            self.empty_runs[partition] = runs
            if runs > self.max_pending:
                self.source.mark_finished(partition, index)
        self.last_txid[partition] = max(txid, self.last_txid.get(partition, 0))
        return {"index": index, "amt": amt}

    def emit(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any) -> None:
        queue = self.source.queue(partition)
        start = int(meta["index"])
        emit = collector.emit
        for values in queue[start:start + int(meta["amt"])]:
            emit([tx, *values])


class _MemoryCoordinator:
    def __init__(self, source: MemorySource) -> None:
        self.source = source

    def num_partitions(self) -> int:
        return self.source.num_partitions()

    def is_ready(self) -> bool:
        return not self.source.is_exhausted()

    def close(self) -> None:
        pass


class _MemoryEmitter:
    def __init__(self, batches: _Batches) -> None:
        self.batches = batches

    def emit_partition_batch_new(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any:
        meta = self.batches.next_meta(partition, tx.transaction_id, last_meta)
        self.batches.emit(tx, collector, partition, meta)
        return meta

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any
    ) -> None:
        self.batches.emit(tx, collector, partition, meta)

    def close(self) -> None:
        pass


def _as_fields(fields: Fields | Sequence[str]) -> list[str]:
    return list(fields)


class _MemoryData:
    """What both memory spouts share: the in-memory source, the declared fields and completion."""

    def __init__(self, data: dict[int, list[Any]], fields: Fields | Sequence[str], take_per_batch: int) -> None:
        if take_per_batch < 1:
            raise ValueError(f"take_per_batch must be >= 1, got {take_per_batch}")
        self.source = MemorySource(data)
        self.fields = _as_fields(fields)
        self.take_per_batch = take_per_batch

    def _batches(self, conf: dict[str, Any]) -> _Batches:
        return _Batches(self.source, self.take_per_batch, _max_pending(conf))

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare([TX_FIELD, *self.fields])

    def is_exhausted(self) -> bool:
        """Every partition's tuples were emitted and committed (and nothing was added since)."""
        return self.source.is_exhausted()

    def startup(self) -> None:
        """Called when the topology's coordinator opens: completion starts over."""
        self.source.reset()


class MemoryTransactionalSpout(_MemoryData, PartitionedTransactionalSpout):
    """Storm's ``MemoryTransactionalSpout``: a partitioned transactional spout over in-memory lists."""

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedCoordinator:
        return _MemoryCoordinator(self.source)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedEmitter:
        return _MemoryEmitter(self._batches(conf))


class _OpaqueMemoryEmitter:
    def __init__(self, batches: _Batches) -> None:
        self.batches = batches

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any:
        if partition in self.batches.source.disabled:
            return last_meta
        meta = self.batches.next_meta(partition, tx.transaction_id, last_meta)
        self.batches.emit(tx, collector, partition, meta)
        return meta

    def num_partitions(self) -> int:
        return self.batches.source.num_partitions()

    def close(self) -> None:
        pass


class OpaqueMemoryTransactionalSpout(_MemoryData, OpaquePartitionedTransactionalSpout):
    """Storm's ``OpaqueMemoryTransactionalSpout``: like :class:`MemoryTransactionalSpout`, opaque.

    ``set_disabled(partition, True)`` makes the partition emit nothing until re-enabled, so a replayed
    transaction can differ from its first attempt.
    """

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> OpaqueCoordinator:
        return _MemoryCoordinator(self.source)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> OpaqueEmitter:
        return _OpaqueMemoryEmitter(self._batches(conf))

    def set_disabled(self, partition: int, disabled: bool) -> None:
        """Stop (or resume) emitting ``partition``."""
        with self.source.lock:
            if disabled:
                self.source.disabled.add(partition)
            else:
                self.source.disabled.discard(partition)
