"""The emitter bolt's delegate: turns the coordinator's batch tuples into batches (Storm's
``TransactionalSpoutBatchExecutor``).

For each batch tuple ``[attempt, meta, committed-txid]`` it calls the spout emitter's ``emit_batch`` and acks
(``FailedException`` fails the batch); ``committed-txid`` lets the emitter drop state of committed
transactions.  For committer spouts it also receives the commit stream and calls ``commit`` for the attempt
it emitted last for that transaction (an unknown attempt fails the commit).
"""

from __future__ import annotations

import logging
from typing import Any, cast

from storm_py.api.components import OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.errors import FailedException
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchCollector
from storm_py.transactional.spouts import CommitterEmitter, TransactionalEmitter, TransactionalSpout
from storm_py.transactional.streams import COMMIT_STREAM

log = logging.getLogger(__name__)


class TransactionalSpoutBatchExecutor:
    """Delegate of the coordinated emitter bolt."""

    def __init__(self, spout: TransactionalSpout) -> None:
        self.spout = spout
        self._emitter: TransactionalEmitter | None = None
        self._collector: BatchCollector | None = None
        self._active: dict[int, TransactionAttempt] = {}

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Create the spout's emitter for this task."""
        self._collector = BatchCollector(collector)
        self._active = {}
        self._emitter = self.spout.get_emitter(conf, context)

    def execute(self, tup: Tuple) -> None:
        """Emit a batch, or commit one (committer spouts)."""
        emitter, collector = self._emitter, self._collector
        assert emitter is not None and collector is not None, "emitter used before prepare"
        attempt = tup.values[0]
        if not isinstance(attempt, TransactionAttempt):
            log.warning("emitter got a tuple without a transaction attempt from %s: %r", tup.source_component, tup)
            collector.fail(tup)
            return
        txid = attempt.transaction_id
        try:
            if tup.source_stream == COMMIT_STREAM:
                if self._active.get(txid) != attempt:
                    log.info("not committing %r: this emitter last emitted %r", attempt, self._active.get(txid))
                    collector.fail(tup)
                    return
                cast(CommitterEmitter, emitter).commit(attempt)
                del self._active[txid]
            else:
                emitter.emit_batch(attempt, tup.values[1], collector)
                self._active[txid] = attempt
                committed = tup.values[2]
                if committed is not None:
                    for old in [t for t in self._active if t < committed]:
                        del self._active[old]
                    emitter.cleanup_before(int(committed))
        except FailedException as exc:
            log.info("emitter failed %r: %s", attempt, exc)
            collector.fail(tup)
            return
        collector.ack(tup)

    def cleanup(self) -> None:
        """Close the emitter."""
        if self._emitter is not None:
            self._emitter.close()

    def declare_output_fields(self, declarer: Any) -> None:
        """The spout's streams."""
        self.spout.declare_output_fields(declarer)

    def get_component_configuration(self) -> dict[str, Any] | None:
        """The spout's component configuration."""
        return self.spout.get_component_configuration()
