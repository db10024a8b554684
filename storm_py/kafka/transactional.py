"""Transactional and opaque Kafka spouts for ``TransactionalTopologyBuilder`` (storm-kafka-client's Trident spouts).

Partition ``i`` of the spout is the ``i``-th of the sorted ``(topic, partition)`` pairs the config's topics
match; emitter task ``j`` of ``n`` owns partitions ``j, j+n, ...`` (the transactional executors decide that).
Each batch of a partition is described by ``{"topic", "partition", "first_offset", "next_offset"}``: the records
``first_offset <= offset < next_offset``; the next batch starts at ``next_offset``.  Nothing is committed to
Kafka: the metadata lives in the transactional state (ZooKeeper in a cluster).

* :class:`TransactionalKafkaSpout` (partitioned): a replay of a txid reads exactly ``[first_offset,
  next_offset)`` again, so it carries exactly the same records; it waits for the broker (and fails the batch,
  which is retried) rather than emit anything else.
* :class:`OpaqueKafkaSpout` (opaque partitioned): each attempt continues from the last committed metadata; a
  partition that cannot be read (broker error, deleted topic) emits nothing and keeps its metadata, so the
  transaction goes on with the other partitions.  Offsets the broker no longer has are jumped (logged).  A
  replay of a txid whose earlier attempt this task emitted or committed reads that attempt's range again
  while it still starts where the previous batch ended (its commit may have reached a state already).

Every tuple is ``[TransactionAttempt, topic, partition, offset, key, value]``; with ``columnar=True``, each
partition's records of a transaction are one tuple ``[TransactionAttempt, RecordBatch]`` (fields ``attempt, batch``)
of :data:`~storm_py.kafka.columnar.RECORD_SCHEMA` (or ``batch_schema`` through ``batch_translator``).  A batch the
translator cannot handle fails its transaction, which is replayed.
"""

from __future__ import annotations

import logging
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.errors import FailedException
from storm_py.kafka.client import KafkaClientError, KafkaConsumerClient, KafkaRecord, TopicPartition
from storm_py.kafka.columnar import BatchTranslationError, make_batch_translator, records_batch, translate
from storm_py.kafka.config import DEFAULT_FIELDS, KafkaSpoutConfig
from storm_py.kafka.stores import CALL_TIMEOUT
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector
from storm_py.transactional.spouts import OpaquePartitionedTransactionalSpout, PartitionedTransactionalSpout

log = logging.getLogger(__name__)

TX_FIELD = "tx"
#: the fields of a columnar transactional spout's tuples
COLUMNAR_FIELDS = ["attempt", "batch"]
#: how long a replay may wait for the records of its batch before the batch fails (and is replayed later)
REPLAY_TIMEOUT = 10.0


class _Partitions:
    """The sorted ``(topic, partition)`` list of the config's topics, re-read at most every refresh period."""

    def __init__(self, config: KafkaSpoutConfig, client: KafkaConsumerClient, clock: Clock) -> None:
        self.config = config
        self.client = client
        self.clock = clock
        self.pairs: list[TopicPartition] | None = None
        self.next_read = float("-inf")

    def get(self) -> list[TopicPartition] | None:
        now = self.clock.now()
        if now >= self.next_read:
            self.next_read = now + self.config.partition_refresh_period_ms / 1000.0
            try:
                topics = self.client.topic_partitions(CALL_TIMEOUT)
            except KafkaClientError as err:
                log.warning("kafka transactional spout: cannot list partitions: %s", err)
                return self.pairs
            self.pairs = sorted((p.topic, p.partition) for name, infos in topics.items()
                                if self.config.matches(name) for p in infos)
        return self.pairs


class _Reader:
    """Reads ranges of one partition with its own consumer (keeps its position between sequential batches)."""

    def __init__(self, config: KafkaSpoutConfig, tp: TopicPartition, group_id: str, clock: Clock) -> None:
        self.config = config
        self.tp = tp
        self.clock = clock
        self.client = KafkaConsumerClient(config.bootstrap_servers, group_id, config.consumer_options,
                                          headers=config.columnar)
        self.position: int | None = None

    def start_offset(self) -> int:
        """Where a partition without metadata starts (the first-poll strategy's earliest or latest)."""
        marks = self.client.watermarks(self.tp, CALL_TIMEOUT)
        if marks is None:
            raise KafkaClientError(f"no offsets for {self.tp[0]}/{self.tp[1]}")
        return marks[1] if self.config.first_poll_offset_strategy.endswith("LATEST") else marks[0]

    def read(self, first: int, until: int | None, wait: float) -> list[KafkaRecord]:
        """Records from ``first`` (up to ``max_poll_records``; below ``until`` when given), waiting at most
        ``wait`` seconds (for ``until``: until the range is complete)."""
        if self.position != first:
            self.client.assign({self.tp: first})
            self.position = first
        want = self.config.max_poll_records if until is None else max(0, until - first)
        out: list[KafkaRecord] = []
        deadline = self.clock.now() + wait
        while len(out) < want:
            records, errors = self.client.poll(want - len(out), max(0.0, min(0.1, deadline - self.clock.now())))
            for e in errors:
                if e.kind in ("unknown_topic", "other"):
                    raise KafkaClientError(f"reading {self.tp[0]}/{self.tp[1]}: {e.message}")
            done = False
            for r in records:
                if r.offset < first:
                    continue
                if until is not None and r.offset >= until:
                    done = True
                    break
                out.append(r)
                if until is not None and r.offset >= until - 1:
                    done = True
            if out:
                self.position = out[-1].offset + 1
            if done or (until is None and out and not records) or self.clock.now() >= deadline:
                break  # a new batch takes what is there (waiting at most ``wait`` for the first records)
        if done and until is not None:
            self.position = None  # records past the range were fetched: seek next time
        return out

    def close(self) -> None:
        self.client.close()


class _KafkaBatches:
    """What both emitters share: partition index -> reader, metadata, emitting a range."""

    def __init__(self, config: KafkaSpoutConfig, context: TopologyContext) -> None:
        self.config = config
        self.clock: Clock = getattr(context, "clock", SYSTEM_CLOCK)
        self.group_id = config.group_id or f"storm-py.{getattr(context, 'topology_name', 'tx')}.tx"
        self.meta_client = KafkaConsumerClient(config.bootstrap_servers, self.group_id, config.consumer_options)
        self.partitions = _Partitions(config, self.meta_client, self.clock)
        self.readers: dict[TopicPartition, _Reader] = {}
        self.schema = config.stream_schema()
        self.translator = make_batch_translator(config.batch_translator, config.batch_schema)

    def reader(self, tp: TopicPartition) -> _Reader:
        r = self.readers.get(tp)
        if r is None:
            r = self.readers[tp] = _Reader(self.config, tp, self.group_id, self.clock)
        return r

    def pair(self, partition: int, last_meta: Any) -> TopicPartition:
        pairs = self.partitions.get()
        if pairs is None or partition >= len(pairs):
            if isinstance(last_meta, dict):
                return str(last_meta["topic"]), int(last_meta["partition"])
            raise KafkaClientError(f"partition {partition} of {self.config.describe_topics()} is unknown")
        return pairs[partition]

    def new_batch(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int,
                  last_meta: Any) -> dict[str, Any]:
        tp = self.pair(partition, last_meta)
        reader = self.reader(tp)
        if isinstance(last_meta, dict) and (last_meta.get("topic"), last_meta.get("partition")) == tp:
            first = int(last_meta["next_offset"])
        else:
            first = reader.start_offset()
        records = reader.read(first, None, self.config.poll_timeout_ms / 1000.0)
        if records and records[0].offset > first:
            log.warning("kafka transactional spout: %s/%d skipped offsets %d..%d the broker no longer has",
                        tp[0], tp[1], first, records[0].offset - 1)
        self.emit(tx, collector, records)
        nxt = records[-1].offset + 1 if records else first
        return {"topic": tp[0], "partition": tp[1], "first_offset": first, "next_offset": nxt}

    def emit(self, tx: TransactionAttempt, collector: BatchOutputCollector, records: list[KafkaRecord]) -> None:
        if self.config.columnar:
            if records:
                batch = records_batch([(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp, r.headers)
                                      for r in records])
                try:
                    out = translate(self.translator, self.schema, batch)
                except BatchTranslationError as err:
                    collector.report_error(err)
                    raise FailedException(str(err)) from err
                collector.emit([tx, out])
            return
        for r in records:
            collector.emit([tx, r.topic, r.partition, r.offset, r.key, r.value])

    def check_replayed(self, tp: tuple[str, int], first: int, nxt: int, records: list[KafkaRecord]) -> None:
        """A replay of offsets ``first..nxt - 1`` that came back short fails its batch (tried again later) while
        the broker has not served the whole range yet."""
        if not records or records[-1].offset < nxt - 1:
            marks = self.reader(tp).client.watermarks(tp, 0.0, cached=True)
            if marks is None or marks[1] < nxt:  # the broker has not served the range yet: try again later
                raise FailedException(f"replay of {tp[0]}/{tp[1]} offsets {first}..{nxt - 1} got "
                                      f"{len(records)} records before the timeout")

    def close(self) -> None:
        for r in self.readers.values():
            r.close()
        self.meta_client.close()


class _Coordinator:
    def __init__(self, config: KafkaSpoutConfig, context: TopologyContext, batch_interval: float) -> None:
        self.clock: Clock = getattr(context, "clock", SYSTEM_CLOCK)
        group = config.group_id or f"storm-py.{getattr(context, 'topology_name', 'tx')}.tx"
        self.client = KafkaConsumerClient(config.bootstrap_servers, group, config.consumer_options)
        self.partitions = _Partitions(config, self.client, self.clock)
        self.batch_interval = batch_interval
        self.next_start = float("-inf")

    def num_partitions(self) -> int:
        return len(self.partitions.get() or [])

    def is_ready(self) -> bool:
        now = self.clock.now()
        if now < self.next_start or self.partitions.get() is None:
            return False
        self.next_start = now + self.batch_interval
        return True

    def close(self) -> None:
        self.client.close()


class _TransactionalEmitter(_KafkaBatches):
    def emit_partition_batch_new(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int,
                                 last_meta: Any) -> Any:
        try:
            return self.new_batch(tx, collector, partition, last_meta)
        except KafkaClientError as err:
            collector.report_error(err)
            raise FailedException(f"cannot read a new batch of partition {partition}: {err}") from err

    def emit_partition_batch(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int,
                             meta: Any) -> None:
        tp = (str(meta["topic"]), int(meta["partition"]))
        first, nxt = int(meta["first_offset"]), int(meta["next_offset"])
        if nxt <= first:
            return
        try:
            records = self.reader(tp).read(first, nxt, REPLAY_TIMEOUT)
        except KafkaClientError as err:
            collector.report_error(err)
            raise FailedException(f"cannot replay {tp[0]}/{tp[1]} offsets {first}..{nxt - 1}: {err}") from err
        self.check_replayed(tp, first, nxt, records)
        self.emit(tx, collector, records)


class _OpaqueEmitter(_KafkaBatches):
    def emit_partition_batch(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int,
                             last_meta: Any) -> Any:
        try:
            return self.new_batch(tx, collector, partition, last_meta)
        except KafkaClientError as err:
            log.warning("kafka opaque spout: partition %d is unreadable, it emits nothing this batch: %s",
                        partition, err)
            collector.report_error(err)
            return last_meta

    def reemit_partition_batch(self, tx: TransactionAttempt, collector: BatchOutputCollector, partition: int,
                               last_meta: Any, meta: Any) -> Any:
        """A replay of a txid whose earlier attempt emitted ``meta``: the same records when ``meta`` still
        continues ``last_meta`` (a state may hold that batch under the txid), else a new batch."""
        if not _continues(last_meta, meta):
            return self.emit_partition_batch(tx, collector, partition, last_meta)
        tp = (str(meta["topic"]), int(meta["partition"]))
        first, nxt = int(meta["first_offset"]), int(meta["next_offset"])
        if nxt > first:
            try:
                records = self.reader(tp).read(first, nxt, REPLAY_TIMEOUT)
            except KafkaClientError as err:
                log.warning("kafka opaque spout: partition %d is unreadable, it emits nothing this batch: %s",
                            partition, err)
                collector.report_error(err)
                return last_meta
            self.check_replayed(tp, first, nxt, records)
            self.emit(tx, collector, records)
        return {"topic": tp[0], "partition": tp[1], "first_offset": first, "next_offset": nxt}

    def num_partitions(self) -> int:
        return len(self.partitions.get() or [])


def _continues(last_meta: Any, meta: Any) -> bool:
    """Whether batch ``meta`` starts where ``last_meta`` ended (any batch continues no metadata)."""
    if not isinstance(meta, dict) or not {"topic", "partition", "first_offset", "next_offset"} <= meta.keys():
        return False
    if last_meta is None:
        return True
    return (isinstance(last_meta, dict) and (last_meta.get("topic"), last_meta.get("partition"))
            == (meta["topic"], meta["partition"]) and last_meta.get("next_offset") == meta["first_offset"])


class _Declares:
    config: KafkaSpoutConfig

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(COLUMNAR_FIELDS if self.config.columnar else [TX_FIELD, *DEFAULT_FIELDS])


class TransactionalKafkaSpout(_Declares, PartitionedTransactionalSpout):
    """A partitioned transactional spout over Kafka: a replayed txid carries exactly the same records.

    ``batch_interval_ms`` paces new transactions (replays are never held back).
    """

    def __init__(self, config: KafkaSpoutConfig, batch_interval_ms: float = 100) -> None:
        self.config = config
        self.batch_interval = batch_interval_ms / 1000.0

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> _Coordinator:
        return _Coordinator(self.config, context, self.batch_interval)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> _TransactionalEmitter:
        return _TransactionalEmitter(self.config, context)


class OpaqueKafkaSpout(_Declares, OpaquePartitionedTransactionalSpout):
    """An opaque partitioned transactional spout over Kafka: tolerates a partition that became unreadable."""

    def __init__(self, config: KafkaSpoutConfig, batch_interval_ms: float = 100) -> None:
        self.config = config
        self.batch_interval = batch_interval_ms / 1000.0

    def get_coordinator(self, conf: dict[str, Any], context: TopologyContext) -> _Coordinator:
        return _Coordinator(self.config, context, self.batch_interval)

    def get_emitter(self, conf: dict[str, Any], context: TopologyContext) -> _OpaqueEmitter:
        return _OpaqueEmitter(self.config, context)
