"""The Kafka spout (storm-kafka-client's ``KafkaSpout``): a driver around the pure per-partition offset managers.

Each ``next_tuple``: (1) re-read the topics' partitions when the refresh timer is due and own this task's share
(round-robin over the sorted ``(topic, partition)`` list by task index; no consumer-group rebalancing); (2) commit
the acked prefixes when the commit timer is due, or at once for a partition at its ``max_uncommitted_offsets`` limit
(at most every :data:`GATE_COMMIT_EVERY` seconds, and only after new acks); (3) re-emit the failed records whose
retry is due (they are kept in memory until done, so retries never wait for a poll); (4) poll, with a short timeout,
the partitions under their ``max_uncommitted_offsets`` limit; (5) emit the waiting records (at most
``max_poll_records`` per call, and no more than ``topology.max.spout.pending`` allows).

Broker trouble never stops the spout: a failed refresh backs off (0.5 s doubling to 30 s), failed commits are
retried at the next period (STORM-2494), and every problem is logged and reported through
``collector.report_error`` (at most once per :data:`REPORT_EVERY` seconds per kind) so it shows in the
topology summary.  A record the translator cannot handle is reported naming topic, partition and offset.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import deque
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.clock import Clock
from storm_py.errors import StormPyError
from storm_py.kafka.client import (
    KafkaClientError,
    KafkaConsumerClient,
    KafkaRecord,
    PollError,
    RawRecord,
    TopicPartition,
)
from storm_py.kafka.columnar import DEAD_LETTER_SCHEMA
from storm_py.kafka.columnar_spout import ColumnarPath
from storm_py.kafka.config import DEAD_LETTER_FIELDS, DEAD_LETTER_STREAM, DefaultTranslator, KafkaSpoutConfig
from storm_py.kafka.flow import ack_message, emit_waiting, emit_waiting_trees, take_fetched
from storm_py.kafka.offsets import PartitionOffsets
from storm_py.kafka.positions import POSITIONS_KEY, from_saved, positions, to_saved
from storm_py.kafka.spout_metrics import KafkaSpoutStats, lag_report
from storm_py.kafka.stores import CALL_TIMEOUT, KafkaOffsetStore, OffsetStore, ZkOffsetStore
from storm_py.stateful import KeyValueState, StatefulSpout

log = logging.getLogger(__name__)

#: the same kind of problem is reported to the topology summary at most this often (seconds)
REPORT_EVERY = 5.0
REFRESH_BACKOFF_MIN = 0.5
REFRESH_BACKOFF_MAX = 30.0
#: a partition at its ``max_uncommitted_offsets`` limit commits its acked prefix at once rather than at the next
#: commit period, at most this often (seconds): waiting for the period would cap every partition at
#: ``max_uncommitted_offsets`` records per ``offset_commit_period_ms``
GATE_COMMIT_EVERY = 0.05


class KafkaSpoutError(StormPyError):
    """Something the Kafka spout cannot do (unknown topic, broker unreachable, a record it cannot translate)."""

    code = "kafka_spout_error"


#: The message id of a Kafka spout tuple: the record's ``(topic, partition, offset)`` (a plain tuple: cheap to
#: build and hash on the per-record path); for a tree of several records (``records_per_tree``),
#: ``(topic, partition, [offsets])``; for a batch (``columnar``), ``(topic, partition, first_offset, last_offset)``.
KafkaMessageId = tuple[str, int, int] | tuple[str, int, list[int]] | tuple[str, int, int, int]


class KafkaSpout(StatefulSpout):
    """Reads topics into tuples with at-least-once (default), at-most-once or no guarantee.

    It is a :class:`StatefulSpout`: in a topology with ``topology.state.guarantee: exactly_once`` its records are
    emitted untracked, its position (the next offset of each partition) is saved with every checkpoint and
    restored by ``init_state`` after a restart, and the checkpointed offsets are committed to Kafka (for the lag
    view) when the checkpoint commits.  Under the other guarantees its state is not used.
    """

    def __init__(self, config: KafkaSpoutConfig) -> None:
        self.config = config
        self.translator = config.record_translator()
        self.stats = KafkaSpoutStats()
        self.managers: dict[TopicPartition, PartitionOffsets] = {}  # none owned until open (an empty lag report)
        self.columnar: ColumnarPath | None = None

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        if self.config.columnar:
            declarer.declare_stream(self.config.translator_stream, self.config.stream_schema())
            declarer.declare_stream(DEAD_LETTER_STREAM, DEAD_LETTER_SCHEMA)
            return
        for stream, fields in self.translator.streams().items():
            declarer.declare_stream(stream, fields)
        declarer.declare_stream(DEAD_LETTER_STREAM, DEAD_LETTER_FIELDS)

    # --------------------------------------------------------------------------------------------- open
    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        cfg = self.config
        self.collector = collector
        self.clock: Clock = context.clock
        self.topology_id = getattr(context, "topology_id", "")
        self.task_id = context.this_task_id
        self.index = context.this_task_index
        self.num_tasks = max(1, len(context.get_component_tasks(context.this_component_id)))
        name = getattr(context, "topology_name", "topology")
        self.group_id = cfg.group_id or f"storm-py.{name}.{context.this_component_id}"
        #: exactly_once managed state: the position lives in the state, records need no tuple tree
        self.exactly_once = conf.get("topology.state.guarantee") == "exactly_once"
        self.restored: dict[TopicPartition, int] = {}
        #: the restored positions until the spout next looks up the partitions it owns (saved as they are by a
        #: checkpoint taken before: a spout held, or a broker away, right after its restore)
        self.unassigned: dict[TopicPartition, int] = {}
        self.prepared: dict[int, dict[TopicPartition, int]] = {}
        self.tracked = cfg.processing_guarantee == "AT_LEAST_ONCE" and not self.exactly_once
        #: the most records one tuple tree holds (tracked only)
        self.per_tree = cfg.records_per_tree if self.tracked else 1
        pending = conf.get("topology.max.spout.pending")
        self.max_pending: int | None = int(pending) if pending else None
        self.retry = cfg.retry_policy()
        self.client = KafkaConsumerClient(cfg.bootstrap_servers, self.group_id, cfg.consumer_options,
                                          auto_offset_reset="latest" if cfg.first_poll_offset_strategy.endswith(
                                              "LATEST") and not self.tracked else "earliest",
                                          timestamps=type(self.translator) is not DefaultTranslator,
                                          headers=cfg.columnar)
        self.store: OffsetStore
        if cfg.offsets_store == "zookeeper":
            from storm_py.transactional.state import store_from_context

            self.store = ZkOffsetStore(store_from_context(context), self.client, cfg,  # type: ignore[arg-type]
                                       cfg.zk_id or self.group_id, self.topology_id, name)
        else:
            self.store = KafkaOffsetStore(self.client, cfg, self.topology_id, self.task_id)
        self.managers = {}
        self.paused: set[TopicPartition] = set()
        self.waiting: deque[RawRecord] = deque()
        self.missing_topics: set[str] = set()
        now = self.clock.now()
        self.next_refresh = now
        self.refresh_backoff = REFRESH_BACKOFF_MIN
        self.next_commit = now + cfg.offset_commit_period_ms / 1000.0
        self.next_gate_commit = now
        self.acked_at_gate_commit = -1
        self.last_report: dict[str, float] = {}
        self.stats = KafkaSpoutStats()  # this task's own (the spout object may be a copy)
        self.stats.started(now)
        # The executor calls the instance's ``ack`` once per tuple tree: the compiled function itself, bound to
        # this task's managers and stats (neither object is replaced after this), instead of the method below,
        # whose interpreted frame cost about 380 instructions per record more
        self.ack = functools.partial(ack_message, self.managers, self.stats)  # type: ignore[method-assign]
        context.register_metric("kafkaOffset", self.stats.offset_metric(self), cfg.metrics_time_bucket_secs)
        #: columnar: one batch per partition of a poll, tracked per batch
        self.columnar = ColumnarPath(cfg, collector, self.managers, self.stats, self._report,
                                     self.tracked) if cfg.columnar else None

    # ------------------------------------------------------------------------------------ managed state
    def init_state(self, state: KeyValueState) -> None:
        """exactly_once: go on from the restored position (every owned partition is assigned again)."""
        self.state = state
        if not self.exactly_once:
            return
        self.restored = from_saved(state.get(POSITIONS_KEY))
        self.unassigned = dict(self.restored)
        self.prepared = {}
        self.waiting.clear()
        self.managers.clear()  # in place: the bound ack function holds this dict
        self.paused = set()
        self.next_refresh = self.clock.now()

    def pre_prepare(self, txid: int) -> None:
        if self.exactly_once:
            pos = positions(self.managers, self.waiting, self.unassigned)
            self.state.put(POSITIONS_KEY, to_saved(pos))
            self.prepared = {t: p for t, p in self.prepared.items() if t > txid - 8}
            self.prepared[txid] = pos

    def pre_commit(self, txid: int) -> None:
        pos = self.prepared.pop(txid, None) if self.exactly_once else None
        if pos:
            try:
                self.store.commit(pos, False)
            except (KafkaClientError, StormPyError) as err:
                self.stats.commit_errors += 1
                self._report("commit", err, self.clock.now())

    def activate(self) -> None:
        self.next_refresh = self.clock.now()

    def deactivate(self) -> None:
        self._commit(self.clock.now(), sync=True)

    def close(self) -> None:
        try:
            self._commit(self.clock.now(), sync=True)
        finally:
            self.client.close()

    def lag_report(self) -> dict[str, Any]:
        """Committed offset and log end per owned partition, for the worker's heartbeat (nimbus's lag view);
        nothing yet before ``open``."""
        return lag_report(self)

    # --------------------------------------------------------------------------------------- next_tuple
    def next_tuple(self) -> None:
        now = self.clock.now()
        if now >= self.next_refresh:
            self._refresh(now)
        if now >= self.next_commit:
            self.next_commit = now + self.config.offset_commit_period_ms / 1000.0
            self._commit(now, sync=False)
        budget = self.config.max_poll_records
        if self.max_pending is not None:  # counts tuple trees
            free = self.max_pending - self.collector.get_pending_count()
            if free <= 0:
                return
            budget = min(budget, free * (self.config.max_poll_records if self.columnar else self.per_tree))
        if self.tracked:
            budget -= self.columnar.emit_retries(now, budget) if self.columnar else self._emit_retries(now, budget)
        if not self.waiting and self.managers:
            self._poll(now)
        if self.waiting and budget > 0:
            self._emit_waiting(now, budget)

    def _emit_retries(self, now: float, budget: int) -> int:
        n = 0
        for tp, m in self.managers.items():
            if n >= budget:
                break
            for offset in m.due_retries(now, budget - n):
                mid = (tp[0], tp[1], offset)
                record = m.pending.get(offset)
                if record is None:  # cannot happen: a scheduled offset keeps its record until done
                    m.on_emit(offset)
                    m.on_ack(offset)
                    continue
                m.on_emit(offset)
                translated = self._translate(record, m, now, retry=True)  # translators are deterministic
                if translated is None:
                    continue
                stream, values = translated
                self.collector.emit(values, mid, stream)
                self.stats.retried += 1
                n += 1
        return n

    def _emit_waiting(self, now: float, budget: int) -> None:
        if self.columnar is not None:
            self.columnar.emit_waiting(self.waiting, now, budget)
            return
        if type(self.translator) is DefaultTranslator:  # the per-record loop of the hot path (a subclass may translate)
            if self.per_tree > 1:
                self.stats.emitted += emit_waiting_trees(self.waiting, self.managers, self.collector.emit_batch,
                                                         budget)
            else:
                emit = self.collector.emit if self.tracked else getattr(self.collector, "emit_untracked",
                                                                             self.collector.emit)
                self.stats.emitted += emit_waiting(self.waiting, self.managers, emit, self.tracked, budget)
            return
        waiting = self.waiting
        managers = self.managers
        translate = self.translator.translate
        tracked = self.tracked
        trees = self.per_tree > 1
        tree: list[list[Any]] = []  # the tree being filled: its values, offsets, records, partition and stream
        tree_offsets: list[int] = []
        tree_records: list[Any] = []
        tree_tp: TopicPartition | None = None
        tree_stream = ""
        n = 0
        tp: TopicPartition | None = None
        m: PartitionOffsets | None = None
        while waiting and n < budget:
            record = waiting.popleft()
            offset = record[2]
            if tp is None or tp[0] != record[0] or tp[1] != record[1]:
                tp = (record[0], record[1])
                m = managers.get(tp)
            if m is None:
                continue  # no longer ours
            if tracked and not m.should_emit(offset):
                continue  # committed meanwhile (STORM-2666), or already emitted
            try:
                out = translate(KafkaRecord(*record))
            except Exception as err:  # user code: the record is reported, never lost
                self._translator_failed(record, m, err, now)
                continue
            if out is None:  # the translator skips it: done at once
                m.on_emit(offset)
                m.on_ack(offset)
                self.stats.skipped_by_translator += 1
                continue
            stream, values = out
            if trees:
                if tree and (tree_tp != tp or tree_stream != stream or len(tree) >= m.tree_size):
                    self._emit_tree(tree, tree_tp, tree_offsets, tree_records, tree_stream)
                    tree, tree_offsets, tree_records = [], [], []
                m.emitted_through(offset)  # the tree is recorded as a whole when it goes out
                tree.append(values)  # emit_batch makes a list of it, as emit does
                tree_offsets.append(offset)
                tree_records.append(record)
                tree_tp, tree_stream = tp, stream
            elif tracked:
                m.on_emit(offset, record)
                self.collector.emit(values, (tp[0], tp[1], offset), stream)
            else:
                self.collector.emit(values, None, stream)
            n += 1
        if tree:
            self._emit_tree(tree, tree_tp, tree_offsets, tree_records, tree_stream)
        self.stats.emitted += n

    def _emit_tree(self, tree: list[list[Any]], tp: TopicPartition | None, offsets: list[int], records: list[Any],
                   stream: str) -> None:
        assert tp is not None
        self.managers[tp].on_tree_emit(offsets, records)
        self.collector.emit_batch(tree, (tp[0], tp[1], offsets), stream)

    def _translate(self, raw: RawRecord, m: PartitionOffsets, now: float,
                   retry: bool) -> tuple[str, list[Any]] | None:
        try:
            out = self.translator.translate(KafkaRecord(*raw))
        except Exception as err:  # user code
            self._translator_failed(raw, m, err, now, already_emitted=retry)
            return None
        if out is None:
            m.on_ack(raw[2])
        return out

    def _translator_failed(self, raw: RawRecord, m: PartitionOffsets, err: Exception, now: float,
                           already_emitted: bool = False) -> None:
        record = KafkaRecord(*raw)
        error = KafkaSpoutError(f"the record translator failed on topic {record.topic!r} partition "
                                f"{record.partition} offset {record.offset}: {type(err).__name__}: {err}")
        error.__cause__ = err
        log.warning("kafka spout: %s", error.message)
        # every one is logged; the summary gets the first of each partition every REPORT_EVERY seconds
        self._report(f"translate:{record.topic}/{record.partition}", error, now)
        self.stats.translator_errors += 1
        if not already_emitted:
            m.on_emit(record.offset, raw)
        if (self.config.dead_letter_on_translator_error or not self.tracked
                or m.on_fail(record.offset, now) == "dead"):
            self._dead_letter(raw, error.message, m)
        # else: scheduled for a retry; the record waits in the manager

    def _dead_letter(self, raw: RawRecord, error: str, m: PartitionOffsets) -> None:
        self.collector.emit([raw[0], raw[1], raw[2], raw[3], raw[4], error], None, DEAD_LETTER_STREAM)
        m.on_ack(raw[2])
        self.stats.dead_lettered += 1

    # --------------------------------------------------------------------------------------- ack / fail
    def ack(self, msg_id: Any) -> None:
        """The records of ``msg_id`` were fully processed (``open`` puts :func:`ack_message` in its place)."""
        ack_message(self.managers, self.stats, msg_id)

    def fail(self, msg_id: Any) -> None:
        if self.columnar is not None:
            self.columnar.fail(msg_id, self.clock.now())
            return
        offsets = msg_id[2]
        tree = type(offsets) is list
        m = self.managers.get((msg_id[0], msg_id[1]))
        if m is None:
            self.stats.ignored_acks += len(offsets) if tree else 1
            return
        if tree:  # its records go again one by one, now
            self.stats.failed_trees += 1
            self.stats.split += m.on_tree_fail(offsets, self.clock.now())
            return
        decision = m.on_fail(msg_id[2], self.clock.now())
        self.stats.failed += 1
        if decision == "dead":
            record = m.pending.get(msg_id[2])
            if record is not None:
                fails = m.fails.get(msg_id[2], 0)
                self._dead_letter(record, f"failed {fails} times (max_retries="
                                  f"{self.config.max_retries})", m)
            else:
                m.on_ack(msg_id[2])

    # --------------------------------------------------------------------------------------------- poll
    def _poll(self, now: float) -> None:
        managers = self.managers
        want_paused = {tp for tp, m in managers.items() if not m.pollable()} if self.tracked else set()
        if want_paused != self.paused:
            self.client.resume(self.paused - want_paused)
            self.client.pause(want_paused - self.paused)
            self.paused = want_paused
        if want_paused and now >= self.next_gate_commit and self.stats.acked != self.acked_at_gate_commit:
            self.next_gate_commit = now + GATE_COMMIT_EVERY
            self.acked_at_gate_commit = self.stats.acked
            self._commit(now, sync=False, only=want_paused)
        # Wait for records only when idle: with tuples in flight the worker has acks to deliver, so the poll
        # takes what the client has prefetched.  Every partition at its limit still polls (without waiting):
        # commit outcomes arrive through polls.
        idle = len(want_paused) < len(managers) and not any(m.has_pending() for m in managers.values())
        timeout = self.config.poll_timeout_ms / 1000.0 if idle else 0.0
        records, errors = self.client.poll_raw(self.config.max_poll_records, timeout)
        if self.client.commit_results:
            self._commit_results(now)
        for e in errors:
            self._poll_error(e, now)
        if not records:
            return
        self.stats.fetched += len(records)
        untracked_ends: dict[TopicPartition, int] | None = None if self.tracked else {}
        for (topic, partition), offset, kind, count in take_fetched(records, self.managers, self.waiting,
                                                                     untracked_ends):
            if kind == "reset":
                self.stats.offset_resets += 1
                log.warning("kafka spout: %s/%d was reset to offset %d below the commit; %d pending records "
                            "dropped", topic, partition, offset, count)
            else:
                log.warning("kafka spout: %s/%d skipped %d offsets the broker no longer has (%d..%d)",
                            topic, partition, count, offset - count, offset - 1)
        if self.config.processing_guarantee == "AT_MOST_ONCE" and untracked_ends:
            self._commit_before_emit(untracked_ends, now)

    def _commit_before_emit(self, ends: dict[TopicPartition, int], now: float) -> None:
        """AT_MOST_ONCE: the polled offsets are committed before anything of them is emitted."""
        try:
            self.store.commit(ends, sync=True)
        except KafkaClientError as err:
            # nothing of this poll is emitted: fetch it again from the committed position
            self.waiting.clear()
            for tp in ends:
                m = self.managers[tp]
                self.client.seek(tp, m.committed)
                m.fetched_to = m.committed
            self._report("commit", err, now)
            return
        for tp, offset in ends.items():
            self.managers[tp].committed_to(offset)

    def _poll_error(self, e: PollError, now: float) -> None:
        where = f" (topic {e.topic!r} partition {e.partition})" if e.topic else ""
        if e.kind == "offset_reset" and e.topic is not None and e.partition is not None:
            log.warning("kafka spout: offset out of range%s, reset: %s", where, e.message)
            self._report(f"reset:{e.topic}/{e.partition}", KafkaSpoutError(f"offset out of range{where}: "
                                                                          f"{e.message}"), now)
            return
        self.stats.broker_errors += 1
        self._report(e.kind, KafkaSpoutError(f"Kafka poll from {self.config.bootstrap_servers}{where}: "
                                             f"{e.message}"), now)

    # -------------------------------------------------------------------------------------- assignment
    def _refresh(self, now: float) -> None:
        cfg = self.config
        try:
            topics = self.client.topic_partitions(CALL_TIMEOUT)
            wanted = sorted((p.topic, p.partition) for name, infos in topics.items() if cfg.matches(name)
                            for p in infos)
            if not isinstance(cfg.topics, re.Pattern):
                missing = {t for t in cfg.topics if t not in topics}
                for t in sorted(missing - self.missing_topics):
                    self._report(f"topic:{t}", KafkaSpoutError(
                        f"topic {t!r} does not exist on {cfg.bootstrap_servers}; the spout waits for it"), now,
                        always=True)
                self.missing_topics = missing
            mine = wanted[self.index::self.num_tasks]
            if set(mine) != set(self.managers):
                self._reassign(mine, now)
            self.unassigned = {}
        except KafkaClientError as err:
            self.next_refresh = now + self.refresh_backoff
            self.refresh_backoff = min(self.refresh_backoff * 2, REFRESH_BACKOFF_MAX)
            self.stats.broker_errors += 1
            self._report("refresh", KafkaSpoutError(f"cannot read the partitions of {cfg.describe_topics()} "
                                                    f"from {cfg.bootstrap_servers}: {err.message}"), now)
            return
        self.refresh_backoff = REFRESH_BACKOFF_MIN
        self.next_refresh = now + cfg.partition_refresh_period_ms / 1000.0

    def _reassign(self, mine: list[TopicPartition], now: float) -> None:
        old = set(self.managers)
        new = set(mine)
        revoked = old - new
        if revoked and self.tracked:
            self._commit(now, sync=True, only=revoked)
        added = sorted(new - old)
        starts = self.store.start_positions(added) if added else {}
        if self.exactly_once:
            starts.update({tp: self.restored[tp] for tp in added if tp in self.restored})
        for tp in revoked:
            self.managers.pop(tp)
            self.paused.discard(tp)
        if revoked:
            self.waiting = deque(r for r in self.waiting if (r[0], r[1]) in new)
        for tp in added:
            self.managers[tp] = PartitionOffsets(starts[tp], self.config.max_uncommitted_offsets, self.retry,
                                                 self.per_tree)
        positions = {tp: m.fetched_to for tp, m in self.managers.items()}
        self.client.assign(positions)
        self.paused = set()
        log.info("kafka spout task %d owns %s", self.task_id, ", ".join(f"{t}/{p}" for t, p in sorted(new)) or "none")

    # ------------------------------------------------------------------------------------------ commits
    def _commit(self, now: float, sync: bool, only: set[TopicPartition] | None = None) -> None:
        if self.config.processing_guarantee == "AT_MOST_ONCE" or not self.managers or self.exactly_once:
            return
        offsets: dict[TopicPartition, int] = {}
        for tp, m in self.managers.items():
            if only is not None and tp not in only:
                continue
            offset = m.commit_offset() if self.tracked else (m.fetched_to if m.fetched_to > m.committed else None)
            if offset is not None:
                offsets[tp] = offset
        if not offsets:
            return
        try:
            confirmed = self.store.commit(offsets, sync)
        except (KafkaClientError, StormPyError) as err:
            self.stats.commit_errors += 1
            self._report("commit", err, now)  # kept; retried at the next period (STORM-2494)
            return
        if confirmed:
            for tp, offset in offsets.items():
                self._committed(tp, offset)

    def _commit_results(self, now: float) -> None:
        for tp, offset, error in self.client.take_commit_results():
            if error is not None:
                self.stats.commit_errors += 1
                self._report("commit", KafkaSpoutError(f"committing {tp[0]}/{tp[1]} offset {offset} failed: "
                                                       f"{error}"), now)
            else:
                self._committed(tp, offset)

    def _committed(self, tp: TopicPartition, offset: int) -> None:
        m = self.managers.get(tp)
        if m is None:
            return
        m.committed_to(offset)
        if not self.tracked:
            return
        if m.position_behind(m.fetched_to):  # STORM-2666: never fetch below the commit again
            self.client.seek(tp, m.committed)

    # ------------------------------------------------------------------------------------------ reports
    def _report(self, kind: str, err: BaseException, now: float, always: bool = False) -> None:
        last = self.last_report.get(kind)
        if not always and last is not None and now - last < REPORT_EVERY:
            return
        self.last_report[kind] = now
        log.warning("kafka spout task %d: %s", self.task_id, err)
        self.collector.report_error(err)
