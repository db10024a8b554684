"""This module owns the exactly-once output of a transactional :class:`~storm_py.kafka.bolt.KafkaBolt`: one
Kafka transaction per committed checkpoint.

The records of checkpoint ``n`` are kept (in the bolt's managed state from ``pre_prepare(n)`` on) until ``n``
commits; then they are produced in one transaction of the task's ``transactional.id``, committed together with
the marker ``n + 1``, an offset committed for consumer group ``<transactional.id>`` on partition 0 of the bolt's
topic.  A restarted task's ``init_transactions`` fences its previous incarnation and aborts what that left open;
it reads the marker back, so a checkpoint already committed to Kafka is never produced again.  A transaction that
fails is aborted and tried again with backoff; a commit that got no answer in time is not aborted (the broker may
have made it) but committed again, until it is confirmed or fails.  Records of a checkpoint that rolls back never
reach the broker, so even a reader without ``read_committed`` sees no record of it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from storm_py.clock import Clock
from storm_py.kafka.client import CommitPending, KafkaClientError, KafkaTransactionalProducer
from storm_py.stateful.api.sink import RetryBackoff, SinkLedger
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState

#: how long one transactional call may wait for the broker (seconds)
TX_TIMEOUT = 30.0

Record = tuple[str, bytes | None, bytes | None]


class TransactionalOutput:
    """One task's transactions: records in, one transaction per committed checkpoint out."""

    def __init__(self, producer: KafkaTransactionalProducer, marker_topic: str, report: Callable[[str], None],
                 clock: Clock) -> None:
        self.producer = producer
        self.marker_topic = marker_topic
        self.report = report
        self.clock = clock
        self.ledger = SinkLedger()
        self.backoff = RetryBackoff()
        self.written = NO_TXID
        #: the checkpoint whose transaction's commit got no answer yet (committed again before anything else)
        self.committing: int | None = None
        self.committed_transactions = 0
        self.aborted_transactions = 0

    def add(self, record: Record) -> None:
        self.ledger.add(list(record))

    def restore(self, state: KeyValueState) -> None:
        """The state of a (re)start or a rollback: read which checkpoint Kafka holds last (a fresh state starts
        the marker over)."""
        if self.ledger.restore(state):
            self.producer.reset_marker(self.marker_topic, 0, 0)
            self.written = NO_TXID
        else:
            marker = self.producer.marker(self.marker_topic, 0, TX_TIMEOUT)
            self.written = NO_TXID if marker is None else marker - 1

    def seal(self, txid: int) -> None:
        self.ledger.seal(txid)

    def commit(self, txid: int) -> None:
        self.ledger.commit(txid)
        self.write_due()

    def rollback(self) -> None:
        self.ledger.rollback()

    def write_due(self) -> None:
        """Write each committed checkpoint not yet in Kafka, in order; a commit that got no answer goes first."""
        pending = self.committing
        if pending is not None and not self._attempt(pending, partial(self._complete, pending)):
            return
        for txid, records in self.ledger.due():
            if txid > self.written and not self._attempt(txid, partial(self._write, txid, records)):
                return
            self.ledger.written(txid)

    def _attempt(self, txid: int, action: Callable[[], None]) -> bool:
        """Run ``action`` (a step of ``txid``'s transaction) unless the backoff holds it; whether it succeeded."""
        if not self.backoff.ready(self.clock.now()):
            return False
        try:
            action()
        except KafkaClientError as exc:
            delay = self.backoff.failed(self.clock.now())
            outcome = "not confirmed: committing it again" if self.committing is not None else "aborted: retrying"
            self.report(f"transaction of checkpoint {txid} failed ({outcome} in {delay:.1f}s): {exc.message}")
            return False
        self.backoff.succeeded()
        return True

    def _write(self, txid: int, records: list[Any]) -> None:
        self._transaction(txid, records)
        self._complete(txid)

    def _transaction(self, txid: int, records: list[Any]) -> None:
        """Produce the records of ``txid`` in a transaction and send its marker; its commit is :meth:`_complete`."""
        errors: list[str] = []

        def delivered(error: str | None, topic: str, partition: int, offset: int) -> None:
            if error is not None:
                errors.append(f"{topic}: {error}")

        self.producer.begin()
        try:
            for topic, key, value in records:
                self.producer.produce(topic, key, value, delivered)
            left = self.producer.flush(TX_TIMEOUT)
            if left or errors:
                raise KafkaClientError(f"{left} records unconfirmed, delivery errors {errors[:3]}")
            self.producer.send_marker((self.marker_topic, 0, txid + 1), TX_TIMEOUT)
        except KafkaClientError:
            self._abort(txid)
            raise
        self.committing = txid

    def _complete(self, txid: int) -> None:
        """Commit the open transaction of ``txid``: no answer in time leaves it open, committed again next time
        (aborting it could follow a commit the broker made, and its records would be written twice)."""
        try:
            self.producer.complete_commit(TX_TIMEOUT)
        except CommitPending:
            raise
        except KafkaClientError:
            self.committing = None
            self._abort(txid)
            raise
        self.committing = None
        self.committed_transactions += 1
        self.written = max(self.written, txid)

    def _abort(self, txid: int) -> None:
        self.aborted_transactions += 1
        try:
            self.producer.abort(TX_TIMEOUT)
        except KafkaClientError as exc:
            self.report(f"abort of checkpoint {txid}'s transaction failed: {exc.message}")
