"""This module owns the columnar path of :class:`~storm_py.kafka.spout.KafkaSpout` (``columnar=True``): emitting
the waiting records as one batch per partition, re-emitting failed batches whose retry is due, and a failed batch's
fate (retried whole, or dead-lettered as one batch with an ``error`` column past ``max_retries``).

A thin driver over the pure functions of :mod:`storm_py.kafka.columnar`; the spout owns the consumer, the
assignment and the commits, exactly as in its per-record mode.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from storm_py.api.components import SpoutOutputCollector
from storm_py.errors import StormPyError
from storm_py.kafka.client import HeaderedRecord, TopicPartition
from storm_py.kafka.columnar import (
    BatchTranslationError,
    dead_letter_batch,
    make_batch_translator,
    message_id,
    on_batch_emit,
    records_batch,
    take_batches,
    translate,
)
from storm_py.kafka.config import DEAD_LETTER_STREAM, KafkaSpoutConfig
from storm_py.kafka.offsets import PartitionOffsets
from storm_py.kafka.spout_metrics import KafkaSpoutStats

log = logging.getLogger(__name__)

#: how the spout reports a problem: a kind (reports of one kind are rate-limited), the error and ``now``
Report = Callable[[str, BaseException, float], None]


class ColumnarBatchError(StormPyError):
    """A batch of Kafka records could not be translated (the message names topic, partition and offsets)."""

    code = "kafka_spout_error"


class ColumnarPath:
    """The columnar emits, retries and failures of one spout task.

    Args:
        config: the spout's configuration (``columnar=True``).
        collector: the spout's collector.
        managers: the spout's offset managers (the same dict, updated by the spout's assignment).
        stats: the spout's counters.
        report: how a problem is reported.
        tracked: whether batches are emitted with a message id (AT_LEAST_ONCE, not under exactly_once).
    """

    def __init__(self, config: KafkaSpoutConfig, collector: SpoutOutputCollector,
                 managers: dict[TopicPartition, PartitionOffsets], stats: KafkaSpoutStats, report: Report,
                 tracked: bool) -> None:
        self.config = config
        self.stream = config.translator_stream
        self.schema = config.stream_schema()
        self.translator = make_batch_translator(config.batch_translator, config.batch_schema)
        self.collector = collector
        self.managers = managers
        self.stats = stats
        self.report = report
        self.tracked = tracked

    def emit_waiting(self, waiting: deque[Any], now: float, budget: int) -> None:
        """Emit up to ``budget`` waiting records, one batch per partition."""
        for tp, records in take_batches(waiting, self.managers, budget, self.tracked):
            m = self.managers[tp]
            if self.tracked:
                on_batch_emit(m, records)
            self._emit(tp, m, records, now, retry=False)

    def emit_retries(self, now: float, budget: int) -> int:
        """Emit the failed batches whose retry is due (at most ``budget`` records, and at least one batch);
        how many records."""
        n = 0
        for tp, m in self.managers.items():
            for first in m.due_retries(now):
                if n >= budget:
                    return n
                records: list[HeaderedRecord] | None = m.pending.get(first)
                m.on_emit(first)
                if not records:  # cannot happen: a scheduled batch keeps its records until done
                    m.on_ack(first)
                    continue
                self.stats.retried += 1
                self._emit(tp, m, records, now, retry=True)
                n += len(records)
        return n

    def _emit(self, tp: TopicPartition, m: PartitionOffsets, records: list[HeaderedRecord], now: float,
              retry: bool) -> None:
        batch = records_batch(records)
        mid = message_id(tp, records) if self.tracked else None
        try:
            out = translate(self.translator, self.schema, batch)
        except BatchTranslationError as err:
            error = ColumnarBatchError(str(err))
            error.__cause__ = err.__cause__
            log.warning("kafka spout: %s", error.message)
            self.report(f"translate:{tp[0]}/{tp[1]}", error, now)
            self.stats.translator_errors += 1
            if mid is None:
                self._dead_letter(batch, error.message, None, 0)
                return
            # counts as a failed batch: retried whole, then dead-lettered
            self.fail(mid, now, error.message)
            return
        self.collector.emit(out, mid, self.stream)
        if not retry:
            self.stats.emitted += len(records)

    def fail(self, msg_id: Any, now: float, reason: str | None = None) -> None:
        """The batch of ``msg_id`` failed: scheduled for a retry, or past ``max_retries`` dead-lettered."""
        m = self.managers.get((msg_id[0], msg_id[1]))
        if m is None:
            self.stats.ignored_acks += 1
            return
        first = msg_id[2]
        decision = m.on_fail(first, now)
        self.stats.failed += 1
        if decision != "dead":
            return
        records: list[HeaderedRecord] | None = m.pending.get(first)
        if records:
            fails = m.fails.get(first, 0)
            why = reason or "the batch failed"
            self._dead_letter(records_batch(records), f"{why} ({fails} times, max_retries="
                              f"{self.config.max_retries})", m, first)
        else:
            m.on_ack(first)

    def _dead_letter(self, batch: Any, error: str, m: PartitionOffsets | None, first: int) -> None:
        self.collector.emit(dead_letter_batch(batch, error), None, DEAD_LETTER_STREAM)
        self.stats.dead_lettered += batch.num_rows
        if m is not None:
            m.on_ack(first)
