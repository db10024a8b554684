"""Adapters running partitioned and opaque-partitioned spouts as transactional spouts, with per-partition state.

* :class:`PartitionedTransactionalSpoutExecutor`: the coordinator's metadata is the number of partitions; each
  emitter task keeps, per owned partition, the metadata of every uncommitted txid in a
  :class:`RotatingTransactionalState` under ``user/<partition>/<txid>``.  The first attempt of a txid calls
  ``emit_partition_batch_new`` and stores the metadata; every replay calls ``emit_partition_batch`` with the
  stored metadata (so the batch is identical, even after a restart).  A txid first seen after later ones
  already have state emits nothing for that partition.
* :class:`OpaquePartitionedTransactionalSpoutExecutor`: metadata of in-flight txids is cached in memory and
  persisted for a txid only when it commits; every attempt continues from the previous in-flight txid's
  metadata or the last committed one before its txid.  A replay of a txid whose earlier attempt this task
  emitted or committed asks the emitter's optional ``reemit_partition_batch`` for that same batch: the commit
  of the earlier attempt may have reached a state before it failed elsewhere, and an opaque state keeps that
  batch's effect under the txid for every key the replay does not touch.
"""

from __future__ import annotations

import logging
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector
from storm_py.transactional.spouts import (
    CommitterEmitter,
    CommitterTransactionalSpout,
    OpaqueCoordinator,
    OpaqueEmitter,
    OpaquePartitionedTransactionalSpout,
    PartitionedCoordinator,
    PartitionedEmitter,
    PartitionedTransactionalSpout,
    TransactionalCoordinator,
    TransactionalEmitter,
    TransactionalSpout,
)
from storm_py.transactional.state import RotatingTransactionalState, TransactionalState, json_value, store_from_context

log = logging.getLogger(__name__)


def owned_partitions(index: int, num_tasks: int, partitions: int) -> range:
    """Partitions owned by emitter task ``index`` of ``num_tasks``: ``index, index + num_tasks, ...``."""
    return range(index, partitions, max(1, num_tasks))


class _CoordinatorAdapter:
    """What both coordinators share: readiness and close pass through to the wrapped coordinator."""

    def __init__(self, inner: PartitionedCoordinator | OpaqueCoordinator) -> None:
        self.inner = inner

    def is_ready(self) -> bool:
        return bool(self.inner.is_ready())

    def close(self) -> None:
        self.inner.close()


class _EmitterAdapter:
    """What both emitters share: this task's partitions, each with its rotating state, and close."""

    def __init__(
        self, inner: PartitionedEmitter | OpaqueEmitter, state: TransactionalState, context: TopologyContext
    ) -> None:
        self.inner = inner
        self.state = state
        self.index = context.this_task_index
        self.num_tasks = len(context.get_component_tasks(context.this_component_id)) or 1
        self.partition_states: dict[int, RotatingTransactionalState] = {}

    def _state_of(self, partition: int) -> RotatingTransactionalState:
        rotating = self.partition_states.get(partition)
        if rotating is None:
            rotating = RotatingTransactionalState(self.state, str(partition))
            self.partition_states[partition] = rotating
        return rotating

    def cleanup_before(self, txid: int) -> None:
        for rotating in self.partition_states.values():
            rotating.cleanup_before(txid)

    def close(self) -> None:
        self.inner.close()


class _PartitionedCoordinator(_CoordinatorAdapter):
    def __init__(self, inner: PartitionedCoordinator) -> None:
        super().__init__(inner)
        self.inner: PartitionedCoordinator = inner

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        return int(self.inner.num_partitions())


class _PartitionedEmitter(_EmitterAdapter):
    def __init__(self, inner: PartitionedEmitter, state: TransactionalState, context: TopologyContext) -> None:
        super().__init__(inner, state, context)
        self.inner: PartitionedEmitter = inner

    def emit_batch(self, tx: TransactionAttempt, meta: Any, collector: BatchOutputCollector) -> None:
        partitions = int(meta or 0)
        for partition in owned_partitions(self.index, self.num_tasks, partitions):

            def new_batch(txid: int, last_meta: Any, partition: int = partition) -> Any:
                return self.inner.emit_partition_batch_new(tx, collector, partition, last_meta)

            stored = self._state_of(partition).get_state_or_create(tx.transaction_id, new_batch)
            # None: either this call created the metadata (the batch was just emitted as new), or a later
            # transaction already had state for the partition (this one emits nothing there)
            if stored is not None:
                self.inner.emit_partition_batch(tx, collector, partition, stored)


class PartitionedTransactionalSpoutExecutor(TransactionalSpout):
    """A :class:`PartitionedTransactionalSpout` as a transactional spout (the builder wraps it)."""

    def __init__(self, spout: PartitionedTransactionalSpout, tx_id: str) -> None:
        self.partitioned = spout
        self.tx_id = tx_id

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> TransactionalCoordinator:
        return _PartitionedCoordinator(self.partitioned.get_coordinator(conf, context))

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> TransactionalEmitter:
        state = TransactionalState.user_state(store_from_context(context), self.tx_id)
        return _PartitionedEmitter(self.partitioned.get_emitter(conf, context), state, context)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.partitioned.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.partitioned.get_component_configuration()


# ---------------------------------------------------------------------------------------------------- opaque


class _OpaqueCoordinator(_CoordinatorAdapter):
    def __init__(self, inner: OpaqueCoordinator) -> None:
        super().__init__(inner)
        self.inner: OpaqueCoordinator = inner

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        return None


class _OpaqueEmitter(_EmitterAdapter):
    def __init__(self, inner: OpaqueEmitter, state: TransactionalState, context: TopologyContext) -> None:
        super().__init__(inner, state, context)
        self.inner: OpaqueEmitter = inner
        self.cached: dict[int, dict[int, Any]] = {}
        for name in state.list(""):
            try:
                partition = int(name)
            except ValueError:
                continue
            if (partition - self.index) % self.num_tasks == 0:
                self.partition_states[partition] = RotatingTransactionalState(state, name)

    def emit_batch(self, tx: TransactionAttempt, meta: Any, collector: BatchOutputCollector) -> None:
        txid = tx.transaction_id
        earlier = [t for t in self.cached if t < txid]
        prev_cached = self.cached[max(earlier)] if earlier else {}
        before = self.cached.get(txid, {})  # what an earlier attempt of this txid emitted in this task
        again = getattr(self.inner, "reemit_partition_batch", None)
        metas: dict[int, Any] = {}
        self.cached[txid] = metas
        for partition in owned_partitions(self.index, self.num_tasks, int(self.inner.num_partitions())):
            rotating = self._state_of(partition)
            last_meta = prev_cached.get(partition)
            if last_meta is None:
                last_meta = rotating.get_state_before(txid)
            # an earlier attempt's batch may already be applied to a state under this txid (a commit that
            # failed part way): emitting it again keeps "the batch of txid N" one batch
            prior = before.get(partition)
            if prior is None:
                prior = rotating.get_state_at(txid)
            if prior is not None and again is not None:
                out = again(tx, collector, partition, last_meta, prior)
            else:
                out = self.inner.emit_partition_batch(tx, collector, partition, last_meta)
            metas[partition] = json_value(out)

    def commit(self, tx: TransactionAttempt) -> None:
        txid = tx.transaction_id
        for partition, meta in self.cached.pop(txid, {}).items():
            self._state_of(partition).override_state(txid, meta)

    def cleanup_before(self, txid: int) -> None:
        super().cleanup_before(txid)
        for old in [t for t in self.cached if t < txid]:
            del self.cached[old]


class OpaquePartitionedTransactionalSpoutExecutor(CommitterTransactionalSpout):
    """An :class:`OpaquePartitionedTransactionalSpout` as a committer transactional spout (the builder wraps it)."""

    def __init__(self, spout: OpaquePartitionedTransactionalSpout, tx_id: str) -> None:
        self.opaque = spout
        self.tx_id = tx_id

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> TransactionalCoordinator:
        return _OpaqueCoordinator(self.opaque.get_coordinator(conf, context))

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> CommitterEmitter:
        state = TransactionalState.user_state(store_from_context(context), self.tx_id)
        return _OpaqueEmitter(self.opaque.get_emitter(conf, context), state, context)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.opaque.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.opaque.get_component_configuration()
