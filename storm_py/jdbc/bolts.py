"""This module owns storm-jdbc's bolts: :class:`JdbcInsertBolt` (batched inserts, one transaction per batch; an
exactly-once sink under ``exactly_once``) and :class:`JdbcLookupBolt` (one select per input, a tuple per row).

At-least-once: rows are written once a batch holds ``batch_size`` of them and on every tick tuple (every
:data:`TICK_SECS`), so a light load waits at most a tick; each input is acked once its row's transaction commits.
A row the database refuses fails its input only (reported with the component id and the database's message); a
database that is down keeps the batch, is reported and retried with :class:`~storm_py.stateful.api.sink.RetryBackoff`.

Exactly-once (the bolt is a :class:`~storm_py.stateful.api.sink.CheckpointedSink`): the rows of checkpoint ``n`` are
sealed into the bolt's managed state when ``n`` is prepared and written when it commits, in one transaction with
the row ``(topology, component, task) -> n`` of the commit table; a checkpoint whose txid the commit table already
holds is not written again.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from storm_py.api.components import Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.config.keys import setting
from storm_py.jdbc.client import DatabaseDown, JdbcClient
from storm_py.jdbc.mappers import JdbcLookupMapper, JdbcMapper, SimpleJdbcMapper
from storm_py.jdbc.provider import ConnectionProvider
from storm_py.jdbc.sql import insert_query
from storm_py.jdbc.types import Column, JdbcError
from storm_py.stateful.api.sink import RetryBackoff, SinkLedger
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState

log = logging.getLogger(__name__)

#: tick tuples write what is pending this often (seconds)
TICK_SECS: Final = 0.1
DEFAULT_COMMIT_TABLE: Final = "storm_py_sink_commits"
EXACTLY_ONCE: Final = "exactly_once"


class JdbcInsertBolt(Bolt):
    """Storm's ``JdbcInsertBolt(connectionProvider, jdbcMapper)`` with its chainable options."""

    def __init__(self, provider: ConnectionProvider, mapper: JdbcMapper, clock: Clock = SYSTEM_CLOCK) -> None:
        self.provider = provider
        self.mapper = mapper
        self.table_name: str | None = None
        self.insert_query: str | None = None
        self.query_timeout_secs: int | None = None
        self.batch_size = 100
        self.commit_table = DEFAULT_COMMIT_TABLE
        self.clock = clock
        self.exactly_once = False

    def with_table_name(self, table_name: str) -> JdbcInsertBolt:
        if self.insert_query is not None:
            raise ValueError("JdbcInsertBolt: with_table_name and with_insert_query exclude each other")
        self.table_name = table_name
        return self

    def with_insert_query(self, insert_query: str) -> JdbcInsertBolt:
        if self.table_name is not None:
            raise ValueError("JdbcInsertBolt: with_table_name and with_insert_query exclude each other")
        self.insert_query = insert_query
        return self

    def with_query_timeout_secs(self, secs: int) -> JdbcInsertBolt:
        self.query_timeout_secs = int(secs)
        return self

    def with_batch_size(self, n: int) -> JdbcInsertBolt:
        if int(n) < 1:
            raise ValueError(f"JdbcInsertBolt: batch size must be at least 1, got {n!r}")
        self.batch_size = int(n)
        return self

    def with_commit_table(self, name: str) -> JdbcInsertBolt:
        self.commit_table = name
        return self

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.tick.tuple.freq.secs": TICK_SECS}

    def takes_part_in_checkpoints(self) -> bool:
        return True

    def requires_exactly_once(self) -> bool:
        return False

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component_id = context.get_this_component_id()
        self.task_id = context.get_this_task_id()
        self.topology = context.topology_name
        self.exactly_once = conf.get("topology.state.guarantee") == EXACTLY_ONCE
        if self.table_name is None and self.insert_query is None:
            raise ValueError(f"JdbcInsertBolt {self.component_id!r}: set with_table_name or with_insert_query")
        timeout = self.query_timeout_secs
        if timeout is None:
            timeout = int(setting(conf, "topology.message.timeout.secs"))
        try:
            self.provider.prepare()
            self.mapper.prepare()
        except JdbcError as exc:
            raise JdbcError(f"bolt {self.component_id!r}: {exc.message}") from exc
        self.client = JdbcClient(self.provider, timeout)
        self.query = self.insert_query
        if self.query is None and isinstance(self.mapper, SimpleJdbcMapper):
            assert self.table_name is not None
            self.query = insert_query(self.table_name, self.mapper.column_names())
        self.pending: list[tuple[Tuple, list[Any]]] = []
        self.backoff = RetryBackoff()
        self.ledger = SinkLedger()
        self.written_txid = NO_TXID
        if self.exactly_once:
            self._create_commit_table()

    def _query_for(self, row_names: list[str]) -> str:
        if self.query is None:
            assert self.table_name is not None
            self.query = insert_query(self.table_name, row_names)
        return self.query

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self._flush()
            return
        try:
            columns = self.mapper.get_columns(tup)
        except (JdbcError, KeyError, ValueError) as exc:
            self._report(f"cannot map the tuple from {tup.source_component!r}: {exc}")
            self.collector.fail(tup)
            return
        if self.query is None:
            self._query_for([c.column_name for c in columns])
        row = [c.val for c in columns]
        if self.exactly_once:
            self.ledger.add(row)
            self.collector.ack(tup)
            return
        self.pending.append((tup, row))
        if len(self.pending) >= self.batch_size:
            self._flush()

    def _report(self, message: str) -> None:
        err = JdbcError(f"bolt {self.component_id!r}: {message}")
        log.warning("%s", err.message)
        self.collector.report_error(err)

    def _flush(self) -> None:
        if self.exactly_once:
            self._write_due()
            return
        while self.pending and self.backoff.ready(self.clock.now()):
            batch = self.pending[:self.batch_size]
            try:
                outcome = self.client.write_batch(self._query_for([]), [row for _, row in batch])
            except JdbcError as exc:
                self._down(exc)
                return
            self.backoff.succeeded()
            del self.pending[:len(batch)]
            for i, (tup, _) in enumerate(batch):
                refused = outcome.refused.get(i)
                if refused is None:
                    self.collector.ack(tup)
                else:
                    self._report(f"row refused: {refused}")
                    self.collector.fail(tup)

    def _down(self, exc: JdbcError) -> None:
        delay = self.backoff.failed(self.clock.now())
        what = "database unreachable" if isinstance(exc, DatabaseDown) else "batch failed"
        self._report(f"{what} (retrying in {delay:.1f}s, nothing lost): {exc.message}")

    # -- exactly_once --------------------------------------------------------------------------------------------

    def _create_commit_table(self) -> None:
        try:
            self.client.execute_sql(
                f"CREATE TABLE IF NOT EXISTS {self.commit_table} (topology VARCHAR(255) NOT NULL, component "
                "VARCHAR(255) NOT NULL, task INTEGER NOT NULL, txid BIGINT NOT NULL, PRIMARY KEY (topology, "
                "component, task))")
        except JdbcError as exc:
            raise JdbcError(f"bolt {self.component_id!r}: cannot create commit table {self.commit_table!r}: "
                            f"{exc.message}") from exc

    def _commit_row(self, txid: int) -> tuple[str, list[Any]]:
        return (f"INSERT INTO {self.commit_table} (topology, component, task, txid) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (topology, component, task) DO UPDATE SET txid = excluded.txid",
                [self.topology, self.component_id, self.task_id, txid])

    def _read_written(self) -> int:
        rows = self.client.select(f"SELECT txid FROM {self.commit_table} WHERE topology = ? AND component = ? "
                                  "AND task = ?", [_param(self.topology), _param(self.component_id),
                                                   _param(self.task_id)])
        return int(rows[0][0].val) if rows else NO_TXID

    def init_state(self, state: KeyValueState) -> None:
        fresh = self.ledger.restore(state)
        while True:
            try:
                if fresh:
                    self.client.write_batch(self._commit_row(NO_TXID)[0], [self._commit_row(NO_TXID)[1]])
                    self.written_txid = NO_TXID
                else:
                    self.written_txid = self._read_written()
                self.backoff.succeeded()
                return
            except JdbcError as exc:
                self._down(exc)
                if not isinstance(exc, DatabaseDown):
                    raise
                self.clock.sleep(self.backoff.delay)

    def pre_prepare(self, txid: int) -> None:
        self.ledger.seal(txid)

    def pre_commit(self, txid: int) -> None:
        self.ledger.commit(txid)
        self._write_due()

    def pre_rollback(self) -> None:
        self.ledger.rollback()

    def _write_due(self) -> None:
        for txid, rows in self.ledger.due():
            if txid > self.written_txid:
                if not self.backoff.ready(self.clock.now()):
                    return
                query, params = self._commit_row(txid)
                try:
                    outcome = self.client.write_batch(self._query_for([]) if rows else query, rows,
                                                      extra=[(query, params)])
                except JdbcError as exc:
                    self._down(exc)
                    return
                self.backoff.succeeded()
                for refused in outcome.refused.values():
                    self._report(f"row of checkpoint {txid} refused (left out): {refused}")
                self.written_txid = txid
            self.ledger.written(txid)

    def cleanup(self) -> None:
        if not self.exactly_once and self.pending:
            self._flush()
        self.provider.cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """No output."""


def _param(value: Any) -> Column:
    return Column("p", value, None)


class JdbcLookupBolt(Bolt):
    """Storm's ``JdbcLookupBolt(connectionProvider, selectQuery, jdbcLookupMapper)``: per input one select; what
    the mapper makes of each row is emitted anchored to the input, which is then acked."""

    def __init__(self, provider: ConnectionProvider, select_query: str, lookup_mapper: JdbcLookupMapper,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.provider = provider
        self.select_query = select_query
        self.mapper = lookup_mapper
        self.query_timeout_secs: int | None = None
        self.clock = clock

    def with_query_timeout_secs(self, secs: int) -> JdbcLookupBolt:
        self.query_timeout_secs = int(secs)
        return self

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component_id = context.get_this_component_id()
        timeout = self.query_timeout_secs
        if timeout is None:
            timeout = int(setting(conf, "topology.message.timeout.secs"))
        try:
            self.provider.prepare()
        except JdbcError as exc:
            raise JdbcError(f"bolt {self.component_id!r}: {exc.message}") from exc
        self.client = JdbcClient(self.provider, timeout)
        self.backoff = RetryBackoff()

    def execute(self, tup: Tuple) -> None:
        try:
            params = self.mapper.get_columns(tup)
        except (JdbcError, KeyError, ValueError) as exc:
            self._failed(tup, f"cannot map the tuple from {tup.source_component!r}: {exc}")
            return
        while True:
            try:
                rows = self.client.select(self.select_query, params)
                break
            except DatabaseDown as exc:
                delay = self.backoff.failed(self.clock.now())
                self._report(f"database unreachable (retrying in {delay:.1f}s): {exc.message}")
                self.clock.sleep(delay)
            except JdbcError as exc:
                self._failed(tup, exc.message)
                return
        self.backoff.succeeded()
        try:
            for row in rows:
                for values in self.mapper.to_tuple(tup, row):
                    self.collector.emit(values, anchors=tup)
        except (JdbcError, KeyError, ValueError) as exc:
            self._failed(tup, str(exc))
            return
        self.collector.ack(tup)

    def _report(self, message: str) -> None:
        err = JdbcError(f"bolt {self.component_id!r}: {message}")
        log.warning("%s", err.message)
        self.collector.report_error(err)

    def _failed(self, tup: Tuple, message: str) -> None:
        self._report(message)
        self.collector.fail(tup)

    def cleanup(self) -> None:
        self.provider.cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.mapper.declare_output_fields(declarer)
