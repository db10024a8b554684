"""This module owns ``WindowedVectorBolt``: windowed bolts whose windows are measured in rows of columnar batches,
the ``TableWindow`` they see, and the executor that runs them.

A batch tuple's rows join the window one by one (``Count(n)`` counts rows; ``with_timestamp_field(name)`` reads
each row's column ``name``, ints in ms or Arrow timestamps), so the rows of one batch may fall in different
windows.  The batch tuple is acked once every one of its rows has expired (a late row counts as gone at once:
it goes to the late-tuple stream as ``[row values]``, anchored to its batch tuple).  Emits from ``execute`` are
anchored to every batch tuple with a row in the window.  Subscribed to a per-tuple stream, each tuple is one row.

The window's rows are counted and ordered by the pure core of :mod:`storm_py.windowing.rows`; this module slices
the batches into ``pyarrow.Table`` s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from storm_py.api.components import OutputCollector
from storm_py.api.tuple import DEFAULT_STREAM, SYSTEM_COMPONENT, TICK_STREAM, Tuple
from storm_py.errors import ReportedFailedException
from storm_py.windowing.bolt import BaseWindowedBolt
from storm_py.windowing.events import Activation, Expiry, Step
from storm_py.windowing.executor import WindowedBoltExecutor, WindowedCollector
from storm_py.windowing.rows import BatchEntry, RowRef, add_rows, anchors, expire, runs
from storm_py.windowing.spec import TIMESTAMP_FIELD, TimestampExtractor

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext

log = logging.getLogger(__name__)


class TableWindow:
    """One evaluation of a window of rows: :meth:`get`, :meth:`get_new` and :meth:`get_expired` return
    ``pyarrow.Table`` s (rows in arrival order), and the bounds are ``TupleWindow``'s (epoch ms)."""

    __slots__ = ("_end", "_expired", "_new", "_rows", "_start", "_tables")

    def __init__(self, rows: list[RowRef], new: list[RowRef], expired: list[RowRef], start: int | None,
                 end: int) -> None:
        self._rows = rows
        self._new = new
        self._expired = expired
        self._start = start
        self._end = end
        self._tables: dict[str, pa.Table] = {}

    def _table(self, which: str, refs: list[RowRef]) -> pa.Table:
        table = self._tables.get(which)
        if table is None:
            # no new or expired rows: the window's columns, empty
            table = self.get().schema.empty_table() if not refs and which != "all" else rows_table(refs)
            self._tables[which] = table
        return table

    def get(self) -> pa.Table:
        """Every row in the window, oldest first."""
        return self._table("all", self._rows)

    def get_new(self) -> pa.Table:
        """The rows that were not in the previous evaluation."""
        return self._table("new", self._new)

    def get_expired(self) -> pa.Table:
        """The rows that left the window since the previous evaluation (with the window's columns when none did)."""
        return self._table("expired", self._expired)

    def get_start_timestamp(self) -> int | None:
        """The window's start in epoch ms (exclusive), or ``None`` for a count-length window."""
        return self._start

    def get_end_timestamp(self) -> int:
        """The window's end (reference time) in epoch ms (inclusive)."""
        return self._end

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return (f"TableWindow(rows={len(self._rows)}, new={len(self._new)}, expired={len(self._expired)}, "
                f"start={self._start}, end={self._end})")


def rows_table(refs: Sequence[RowRef]) -> pa.Table:
    """The rows ``refs`` as one table, in order: slices of their batches; rows of per-tuple inputs (``data`` is
    None, the token is the tuple) read from their values.  Tables of different column types are unified
    (e.g. a column all null in one batch)."""
    if not refs:
        return pa.table({})
    parts: list[pa.Table] = []
    pending: list[Tuple] = []

    def flush() -> None:
        if pending:
            parts.append(pa.Table.from_pylist([dict(zip(t.fields, t.values, strict=True)) for t in pending]))
            pending.clear()

    for entry, start, stop in runs(refs):
        if entry.data is None:
            pending.append(entry.token)
            continue
        flush()
        parts.append(pa.Table.from_batches([entry.data.slice(start, stop - start)]))
    flush()
    if len(parts) == 1:
        return parts[0]
    if all(p.schema.equals(parts[0].schema) for p in parts):
        return pa.concat_tables(parts)
    return pa.concat_tables(parts, promote_options="permissive")


def timestamps_of(batch: pa.RecordBatch, name: str, where: str) -> list[int]:
    """Column ``name`` of ``batch`` as epoch ms: ints (ms) or Arrow timestamps, no nulls."""
    if name not in batch.schema.names:
        raise ReportedFailedException(f"{where}: the batch has no timestamp column {name!r} (its columns: "
                                      f"{batch.schema.names})")
    column = batch.column(name)
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz)).cast(pa.int64())
    elif pa.types.is_integer(column.type):
        column = column.cast(pa.int64())
    else:
        raise ReportedFailedException(f"{where}: timestamp column {name!r} is {column.type}, not an integer of ms "
                                      f"or an Arrow timestamp")
    if column.null_count:
        raise ReportedFailedException(f"{where}: timestamp column {name!r} holds {column.null_count} nulls")
    values: list[int] = column.to_pylist()
    return values


class VectorWindowCollector:
    """What a :class:`WindowedVectorBolt` emits through: §15's vector collector whose emits are anchored to every
    batch tuple with a row in the window being evaluated."""

    #: no single input is being processed
    source_component: str | None = None
    source_stream: str | None = None
    source_task: int | None = None

    def __init__(self, windowed: WindowedCollector) -> None:
        self._windowed = windowed

    def emit(self, data: Any, stream: str = DEFAULT_STREAM) -> list[int]:
        """Emit ``data`` (a batch on a columnar stream, one values list on a per-tuple stream)."""
        return self._windowed.collector.emit(data, self._windowed.window, stream)

    def emit_direct(self, task_id: int, data: Any, stream: str = DEFAULT_STREAM) -> None:
        """``emit`` to one task of a direct stream."""
        self._windowed.collector.emit_direct(task_id, data, self._windowed.window, stream)

    def report_error(self, exc: BaseException) -> None:
        """Show ``exc`` in the topology's errors."""
        self._windowed.collector.report_error(exc)


class WindowedVectorBolt(BaseWindowedBolt):
    """A windowed bolt over rows: implement ``execute(window)`` taking a :class:`TableWindow`; configure the
    window as for :class:`~storm_py.windowing.bolt.BaseWindowedBolt` (``Count`` counts rows, and
    ``with_timestamp_field`` names a column).  ``prepare(conf, context, collector)`` gets a
    :class:`VectorWindowCollector`."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext,  # type: ignore[override]
                collector: VectorWindowCollector) -> None:
        """Called once when the task starts."""

    def execute(self, window: TableWindow) -> None:  # type: ignore[override]
        """Process one evaluation of the window."""
        raise NotImplementedError

    def with_timestamp_extractor(self, fn: TimestampExtractor) -> WindowedVectorBolt:
        """Not for rows of batches: name the timestamp column with :meth:`with_timestamp_field`."""
        raise TypeError(f"{type(self).__name__} reads event time from a column: use with_timestamp_field(name)")

    def topology_bolt(self) -> WindowedVectorExecutor:
        """What runs in the topology: this bolt inside its row-window executor."""
        return WindowedVectorExecutor(self)


class WindowedVectorExecutor(WindowedBoltExecutor):
    """Runs a :class:`WindowedVectorBolt`: takes batch tuples whole and windows their rows."""

    def __init__(self, bolt: WindowedVectorBolt) -> None:
        super().__init__(bolt)  # type: ignore[arg-type]
        conf = bolt.get_component_configuration() or {}
        #: event time: the timestamp column
        self.column: str | None = conf.get(TIMESTAMP_FIELD)
        self.columnar: frozenset[tuple[str, str]] = frozenset()
        self.where = type(bolt).__name__

    def takes_batches(self) -> bool:
        """Batch tuples come whole (the executor windows their rows)."""
        return True

    def bolt_collector(self, collector: WindowedCollector) -> Any:
        return VectorWindowCollector(collector)

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.columnar = context.get_columnar_sources()
        self.where = f"windowed vector bolt {context.get_this_component_id()!r}"
        super().prepare(conf, context, collector)

    def execute(self, tup: Tuple) -> None:
        manager = self.manager
        assert manager is not None, "execute before prepare"
        stream = tup.source_stream
        if stream == TICK_STREAM and tup.source_component == SYSTEM_COMPONENT:
            self.on_time(self.now())
            return
        if (tup.source_component, stream) in self.columnar:
            batch = tup.values[0]
            entry = BatchEntry(tup, batch, batch.num_rows)
        else:
            batch = None
            entry = BatchEntry(tup, None, 1)
        if entry.remaining == 0:
            self._done([tup])
            return
        watermarks = self.watermarks
        if self.column is None or watermarks is None:
            now = self.now()
            if now >= self.due:
                self.on_time(now)
            steps, late = add_rows(manager, entry, [now] * entry.remaining)
        else:
            where = f"{self.where}, batch from {tup.source_component!r} stream {stream!r}"
            if batch is None:
                batch = pa.RecordBatch.from_pylist([dict(zip(tup.fields, tup.values, strict=True))])
            stamps = timestamps_of(batch, self.column, where)  # raises: the tuple fails, nothing was added
            cell = watermarks.cell((tup.source_component, stream), stamps[0])
            latest = max(stamps)
            if latest > cell[0]:
                cell[0] = latest
            steps, late = add_rows(manager, entry, stamps, watermarks.watermark)
            if late:
                self._late(entry, batch, late)
        if entry.remaining == 0:  # every row was late (rows that joined leave through the steps)
            self._done([tup])
        if steps:
            self.apply(steps)

    def _late(self, entry: BatchEntry, batch: pa.RecordBatch, late: list[int]) -> None:
        collector = self.collector
        assert collector is not None
        rows = batch.take(pa.array(late, pa.int64())).to_pylist()
        if self.late_stream is None:
            log.info("%s: %d late rows are not processed", self.where, len(rows))
            return
        names = batch.schema.names
        for row in rows:
            collector.collector.emit([[row[n] for n in names]], [entry.token], self.late_stream)

    def _done(self, tuples: list[Any]) -> None:
        collector = self.collector
        assert collector is not None
        for tup in tuples:
            collector.ack(tup)

    def apply(self, steps: list[Step[Any]]) -> None:
        """Ack the batch tuples whose rows all expired; hand each activation's rows to the bolt."""
        collector = self.collector
        spec = self.spec
        assert collector is not None and spec is not None
        for step in steps:
            if isinstance(step, Expiry):
                self._done(expire(step.values))
                continue
            window = self.table_window(step)
            collector.window = anchors(step.values)
            try:
                self.bolt.execute(window)  # type: ignore[arg-type]
            except Exception as exc:
                log.exception("%s raised on %r", self.where, window)
                collector.report_error(exc)
            finally:
                collector.window = []

    def table_window(self, step: Activation[RowRef]) -> TableWindow:
        """The window an activation hands the bolt: start and end in epoch ms."""
        spec = self.spec
        assert spec is not None
        end = self.epoch_ms(step.end)
        return TableWindow(step.values, step.new, step.expired, spec.start_of(end), end)
