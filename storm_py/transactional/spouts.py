"""The transactional spout contracts: plain, committer, partitioned and opaque-partitioned.

A transactional spout has two halves that run in different tasks: a *coordinator* (inside the single
coordinator spout task) that decides each transaction's metadata, and an *emitter* (inside each task of the
emitter bolt) that emits the batch of a transaction from that metadata.  ``get_coordinator`` and
``get_emitter`` return them; by default the spout object is both (each task works on its own copy), so a user
can simply override the methods below on one class.

* :class:`TransactionalSpout` (Storm's ``ITransactionalSpout``): coordinator ``initialize_transaction(txid,
  prev_meta) -> meta`` and ``is_ready()``; emitter ``emit_batch(tx, meta, collector)`` and
  ``cleanup_before(txid)``.
* :class:`CommitterTransactionalSpout`: its emitter also gets ``commit(tx)`` in the commit phase.
* :class:`PartitionedTransactionalSpout`: coordinator ``num_partitions()``, ``is_ready()``; emitter
  ``emit_partition_batch_new(tx, collector, partition, last_meta) -> meta`` (a new batch, its metadata is
  persisted) and ``emit_partition_batch(tx, collector, partition, meta)`` (a replay: must emit the same batch).
* :class:`OpaquePartitionedTransactionalSpout`: coordinator ``is_ready()``; emitter ``num_partitions()`` and
  ``emit_partition_batch(tx, collector, partition, last_meta) -> meta`` (a replay may differ).

Metadata must be JSON values (they are persisted in the state store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from storm_py.api.components import Component

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext
    from storm_py.transactional.attempt import TransactionAttempt
    from storm_py.transactional.batch import BatchOutputCollector


class TransactionalCoordinator(Protocol):
    """The coordinator half of a :class:`TransactionalSpout`."""

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any: ...

    def is_ready(self) -> bool: ...

    def close(self) -> None: ...


class TransactionalEmitter(Protocol):
    """The emitter half of a :class:`TransactionalSpout`."""

    def emit_batch(self, tx: TransactionAttempt, meta: Any, collector: BatchOutputCollector) -> None: ...

    def cleanup_before(self, txid: int) -> None: ...

    def close(self) -> None: ...


class CommitterEmitter(TransactionalEmitter, Protocol):
    """The emitter of a :class:`CommitterTransactionalSpout`."""

    def commit(self, tx: TransactionAttempt) -> None: ...


class TransactionalSpout(Component):
    """Storm's ``ITransactionalSpout``; by default the spout is its own coordinator and emitter."""

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> TransactionalCoordinator:
        """The coordinator (runs in the coordinator spout task)."""
        return self

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> TransactionalEmitter:
        """The emitter (runs in each emitter task)."""
        return self

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        """The metadata of a new transaction ``txid``, given the previous transaction's."""
        raise NotImplementedError(f"{type(self).__name__} must implement initialize_transaction")

    def is_ready(self) -> bool:
        """Whether a new transaction may start now (asked repeatedly; must not block)."""
        return True

    def emit_batch(self, tx: TransactionAttempt, meta: Any, collector: BatchOutputCollector) -> None:
        """Emit the batch of ``tx`` described by ``meta``; each tuple's first value is ``tx``."""
        raise NotImplementedError(f"{type(self).__name__} must implement emit_batch")

    def cleanup_before(self, txid: int) -> None:
        """Every transaction below ``txid`` is committed: forget what was kept for them."""

    def close(self) -> None:
        """The task is shutting down."""


class CommitterTransactionalSpout(TransactionalSpout):
    """A transactional spout whose emitter takes part in the commit phase (``commit(tx)``)."""

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> CommitterEmitter:
        """The emitter (runs in each emitter task)."""
        return self

    def commit(self, tx: TransactionAttempt) -> None:
        """``tx`` is being committed (in txid order)."""


# --------------------------------------------------------------------------------------------- partitioned


class PartitionedCoordinator(Protocol):
    """The coordinator half of a :class:`PartitionedTransactionalSpout`."""

    def num_partitions(self) -> int: ...

    def is_ready(self) -> bool: ...

    def close(self) -> None: ...


class PartitionedEmitter(Protocol):
    """The emitter half of a :class:`PartitionedTransactionalSpout`."""

    def emit_partition_batch_new(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any: ...

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any
    ) -> None: ...

    def close(self) -> None: ...


class PartitionedTransactionalSpout(Component):
    """Storm's ``IPartitionedTransactionalSpout``: replays of a transaction emit exactly the same tuples.

    Emitter task ``i`` of ``n`` owns partitions ``i, i+n, ...``.  Each partition's batch metadata is persisted
    per txid under ``/transactional/<id>/user/<partition>/<txid>``.
    """

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedCoordinator:
        """The coordinator (runs in the coordinator spout task)."""
        return self

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedEmitter:
        """The emitter (runs in each emitter task)."""
        return self

    def num_partitions(self) -> int:
        """How many partitions the source has now."""
        raise NotImplementedError(f"{type(self).__name__} must implement num_partitions")

    def is_ready(self) -> bool:
        """Whether a new transaction may start now (asked repeatedly; must not block)."""
        return True

    def emit_partition_batch_new(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any:
        """Emit a new batch of ``partition`` following ``last_meta`` (None at first); return its metadata."""
        raise NotImplementedError(f"{type(self).__name__} must implement emit_partition_batch_new")

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any
    ) -> None:
        """Emit again exactly the batch of ``partition`` described by ``meta``."""
        raise NotImplementedError(f"{type(self).__name__} must implement emit_partition_batch")

    def close(self) -> None:
        """The task is shutting down."""


class OpaqueCoordinator(Protocol):
    """The coordinator half of an :class:`OpaquePartitionedTransactionalSpout`."""

    def is_ready(self) -> bool: ...

    def close(self) -> None: ...


class OpaqueEmitter(Protocol):
    """The emitter half of an :class:`OpaquePartitionedTransactionalSpout`."""

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any: ...

    def num_partitions(self) -> int: ...

    def close(self) -> None: ...


class OpaquePartitionedTransactionalSpout(Component):
    """Storm's ``IOpaquePartitionedTransactionalSpout``: a replayed transaction may emit different tuples.

    Each attempt continues from the last *committed* metadata of the partition (or the metadata of the
    previous in-flight transaction); metadata is persisted only when the transaction commits.  An emitter may
    also define ``reemit_partition_batch(tx, collector, partition, last_meta, meta) -> meta``: a replay of a
    transaction whose earlier attempt emitted ``meta`` calls it to emit that same batch again (or a new one
    after ``last_meta`` when ``meta`` no longer follows it).
    """

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> OpaqueCoordinator:
        """The coordinator (runs in the coordinator spout task)."""
        return self

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> OpaqueEmitter:
        """The emitter (runs in each emitter task)."""
        return self

    def is_ready(self) -> bool:
        """Whether a new transaction may start now (asked repeatedly; must not block)."""
        return True

    def num_partitions(self) -> int:
        """How many partitions the source has now."""
        raise NotImplementedError(f"{type(self).__name__} must implement num_partitions")

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any:
        """Emit the batch of ``partition`` that follows ``last_meta`` (None at first); return its metadata."""
        raise NotImplementedError(f"{type(self).__name__} must implement emit_partition_batch")

    def close(self) -> None:
        """The task is shutting down."""
