"""storm_py.transactional: Storm 1.2 transactional topologies (``docs/REFERENCE.md``) and map-state helpers.

Batches are processed in parallel and committed strictly in txid order; a failed batch is replayed with the
same txid under a new attempt id.  The lower-level pieces live in the submodules: the spout contracts in
:mod:`~storm_py.transactional.spouts`, the coordinator in :mod:`~storm_py.transactional.coordinator`, the
counting protocol in :mod:`~storm_py.transactional.coordinated`, persisted state in
:mod:`~storm_py.transactional.state`, stream ids in :mod:`~storm_py.transactional.streams`; the spouts usable
across worker processes (deterministic sources) in :mod:`~storm_py.transactional.sequence`.
"""

from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BaseBatchBolt, BaseTransactionalBolt, Committer
from storm_py.transactional.builder import TransactionalTopologyBuilder
from storm_py.transactional.map_state import (
    BackingMap,
    MapStateError,
    MemoryBackingMap,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    TransactionalMap,
    TransactionalValue,
)
from storm_py.transactional.sequence import SeededWords, SequencePartitionedSpout
from storm_py.transactional.spouts import OpaquePartitionedTransactionalSpout, PartitionedTransactionalSpout
from storm_py.transactional.testing_spouts import MemoryTransactionalSpout, OpaqueMemoryTransactionalSpout

__all__ = [
    "BackingMap",
    "BaseBatchBolt",
    "BaseTransactionalBolt",
    "Committer",
    "MapStateError",
    "MemoryBackingMap",
    "MemoryTransactionalSpout",
    "NonTransactionalMap",
    "OpaqueMap",
    "OpaqueMemoryTransactionalSpout",
    "OpaquePartitionedTransactionalSpout",
    "OpaqueValue",
    "PartitionedTransactionalSpout",
    "SeededWords",
    "SequencePartitionedSpout",
    "TransactionAttempt",
    "TransactionalMap",
    "TransactionalTopologyBuilder",
    "TransactionalValue",
]
