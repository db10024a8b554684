"""A partitioned transactional spout over a deterministic source, so batches replay alike in any process.

:class:`SequencePartitionedSpout` owns a source whose tuple at ``offset`` of partition ``p`` is ``values(p,
offset)``, a pure function: nothing is shared between processes but the metadata the partitioned executor
persists per partition and txid (``{"index": first offset, "amt": tuples}``).  The first attempt of a
transaction takes the next ``take_per_batch`` offsets of every partition (``emit_partition_batch_new``); every
replay, in whichever worker process, emits ``values(p, o)`` for the stored offsets (``emit_partition_batch``),
so a transaction always carries exactly the same tuples — after a worker is killed and restarted, or after the
whole topology is killed and resubmitted under the same transactional id.  This is what makes it usable in the
distributed cluster, where the in-memory spouts of :mod:`~storm_py.transactional.testing_spouts` are not.

Tuples are ``[tx, *values(p, offset)]`` with fields ``["tx", *fields]``.

* ``length`` bounds every partition (None: unbounded).  Once the persisted metadata of every partition reaches
  the end, the coordinator starts no new transactions (``is_ready()`` is false for good), so the topology goes
  quiet; transactions already started still replay until they commit.  The coordinator reads that metadata
  (at most every :data:`END_CHECK_SECS`) under the ``topology.transactional.id`` the builder gives it.
* ``batch_interval_secs`` paces new transactions (at most one per interval, on the cluster's clock); replays
  are never held back.
* :class:`SeededWords` is a ready-made ``values``: a word of a vocabulary picked by a keyed hash of ``(seed,
  partition, offset)``, the same in every process whatever ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Fields
from storm_py.clock import Clock
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector
from storm_py.transactional.spouts import PartitionedCoordinator, PartitionedEmitter, PartitionedTransactionalSpout
from storm_py.transactional.state import TransactionalState, TransactionalStore, store_from_context

log = logging.getLogger(__name__)

TX_FIELD = "tx"
#: the component configuration key holding a transactional topology's id (set by the builder)
TX_ID_KEY = "topology.transactional.id"
#: how often, at most, the coordinator reads the partitions' metadata to learn whether the source is exhausted
END_CHECK_SECS = 0.5

#: ``values(partition, offset)``: the values of a tuple (without the attempt); must be a pure function
ValuesFn = Callable[[int, int], Sequence[Any]]


class SeededWords:
    """``values`` picking a word of ``vocabulary`` per ``(partition, offset)`` by a keyed hash of ``seed``."""

    def __init__(self, vocabulary: Sequence[str], seed: int | str = 0) -> None:
        if not vocabulary:
            raise ValueError("SeededWords needs a non-empty vocabulary")
        self.vocabulary = list(vocabulary)
        self.seed = str(seed)

    def word(self, partition: int, offset: int) -> str:
        """The word at ``offset`` of ``partition``."""
        digest = hashlib.blake2b(f"{self.seed}/{partition}/{offset}".encode(), digest_size=8).digest()
        return self.vocabulary[int.from_bytes(digest, "big") % len(self.vocabulary)]

    def __call__(self, partition: int, offset: int) -> list[Any]:
        return [self.word(partition, offset)]


def batch_meta(last_meta: Any, take: int, length: int | None) -> dict[str, int]:
    """The metadata of the batch after ``last_meta`` (None: the first batch) of a partition."""
    index = 0 if last_meta is None else int(last_meta["index"]) + int(last_meta["amt"])
    amt = take if length is None else max(0, min(take, length - index))
    return {"index": index, "amt": amt}


class _SequenceCoordinator:
    """Paces new transactions and notices when every partition's persisted metadata reached the end."""

    def __init__(self, spout: SequencePartitionedSpout, clock: Clock, store: TransactionalStore | None,
                 tx_id: str | None) -> None:
        self.spout = spout
        self.clock = clock
        self.state = TransactionalState.user_state(store, tx_id) if store is not None and tx_id else None
        self.next_start = float("-inf")
        self.next_check = float("-inf")
        self.exhausted = False

    def num_partitions(self) -> int:
        return self.spout.partitions

    def _at_end(self, partition: int) -> bool:
        assert self.state is not None and self.spout.length is not None
        txids = [int(name) for name in self.state.list(str(partition)) if name.isdigit()]
        if not txids:
            return self.spout.length == 0
        meta = self.state.get_data(f"{partition}/{max(txids)}")
        return meta is not None and int(meta["index"]) + int(meta["amt"]) >= self.spout.length

    def is_ready(self) -> bool:
        if self.exhausted:
            return False
        now = self.clock.now()
        if now < self.next_start:
            return False
        if self.spout.length is not None and self.state is not None and now >= self.next_check:
            self.next_check = now + END_CHECK_SECS
            if all(self._at_end(p) for p in range(self.spout.partitions)):
                log.info("sequence spout: every partition was emitted to its end (%d tuples each); "
                         "no new transactions start", self.spout.length)
                self.exhausted = True
                return False
        # the coordinator starts a transaction whenever this answers true
        self.next_start = now + self.spout.batch_interval_secs
        return True

    def close(self) -> None:
        pass


class _SequenceEmitter:
    def __init__(self, spout: SequencePartitionedSpout) -> None:
        self.spout = spout

    def _emit(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any) -> None:
        values, emit = self.spout.values, collector.emit
        start = int(meta["index"])
        for offset in range(start, start + int(meta["amt"])):
            emit([tx, *values(partition, offset)])

    def emit_partition_batch_new(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, last_meta: Any
    ) -> Any:
        meta = batch_meta(last_meta, self.spout.take_per_batch, self.spout.length)
        self._emit(tx, collector, partition, meta)
        return meta

    def emit_partition_batch(
        self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int, meta: Any
    ) -> None:
        self._emit(tx, collector, partition, meta)

    def close(self) -> None:
        pass


class SequencePartitionedSpout(PartitionedTransactionalSpout):
    """A partitioned transactional spout whose partition ``p`` holds ``values(p, 0), values(p, 1), ...``.

    Args:
        values: ``values(partition, offset)`` -> the tuple's values; a pure function (e.g. :class:`SeededWords`).
        fields: the names of those values.
        take_per_batch: tuples per partition in each new transaction.
        partitions: how many partitions (dealt over the emitter tasks).
        length: tuples per partition (None: unbounded).
        batch_interval_secs: at least this long between the starts of new transactions.
    """

    def __init__(
        self,
        values: ValuesFn,
        fields: Fields | Sequence[str],
        take_per_batch: int,
        partitions: int = 1,
        length: int | None = None,
        batch_interval_secs: float = 0.0,
    ) -> None:
        if take_per_batch < 1:
            raise ValueError(f"take_per_batch must be >= 1, got {take_per_batch}")
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if length is not None and length < 0:
            raise ValueError(f"length must be >= 0 or None, got {length}")
        if batch_interval_secs < 0:
            raise ValueError(f"batch_interval_secs must be >= 0, got {batch_interval_secs}")
        self.values = values
        self.fields = list(fields)
        self.take_per_batch = take_per_batch
        self.partitions = partitions
        self.length = length
        self.batch_interval_secs = float(batch_interval_secs)

    def tuples(self, partition: int) -> list[list[Any]]:
        """Every tuple's values of a bounded ``partition``, in order (what the topology will emit, for checks)."""
        if self.length is None:
            raise ValueError("an unbounded partition cannot be listed")
        return [list(self.values(partition, offset)) for offset in range(self.length)]

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedCoordinator:
        tx_id = conf.get(TX_ID_KEY)
        store = store_from_context(context) if self.length is not None and tx_id else None
        return _SequenceCoordinator(self, context.clock, store, None if tx_id is None else str(tx_id))

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> PartitionedEmitter:
        return _SequenceEmitter(self)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare([TX_FIELD, *self.fields])
