"""``ParquetState``: Trident's state for the Spark side, landing each committed batch exactly once as Parquet.

It is :class:`~storm_py.spark.sink.DatasetWriter` (the writer of ``ParquetBatchSink``) behind Trident's
state interface, so the dataset is the same: one directory per committed txid, the schema's columns in order
plus ``txid`` (the Trident txid), read by ``read_committed`` / ``read_committed_table`` and ``storm-py
spark-job``.  ``partition_persist(ParquetState.factory(root, schema), fields, ParquetUpdater(), ["values",
"reason"])``: the persisted ``fields`` are the schema's, in order; each partition of the state is one writer
task; a replayed txid replaces its earlier attempt or is skipped once published; an empty batch commits with
zero rows.  Rows that do not fit the schema are emitted on the new-values stream as ``[values, reason]``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from storm_py.errors import InvalidTopologyException
from storm_py.spark.layout import CommitAction
from storm_py.spark.resolve import coerce_schema
from storm_py.spark.sink import WRITERS, CommitResult, DatasetWriter, WriterOptions
from storm_py.trident.state import BaseStateUpdater, State, StateFactory


class ParquetState(State):
    """One partition's writer; ``write`` lands the batch of the attempt being committed."""

    def __init__(self, writer: DatasetWriter) -> None:
        self.writer = writer
        self.attempt: Any = None
        self.txid: int | None = None
        self.last: CommitResult | None = None

    def begin_attempt(self, attempt: Any) -> None:
        """The transaction attempt about to be committed (its attempt id tells replays apart)."""
        self.attempt = attempt

    def begin_commit(self, txid: int) -> None:
        self.txid = int(txid)

    def write(self, rows: Sequence[Sequence[Any]]) -> CommitResult:
        """Publish this partition's rows of the batch (skipped when the txid is already published)."""
        if self.txid is None:
            raise InvalidTopologyException("ParquetState.write outside a commit (begin_commit first)")
        attempt_id = int(getattr(self.attempt, "attempt_id", 0)) if self.attempt is not None else 0
        self.last = self.writer.commit(self.txid, attempt_id, rows)
        return self.last

    def commit(self, txid: int) -> None:
        self.txid = None

    def skipped(self) -> bool:
        """Whether the last write found its txid already published."""
        return self.last is not None and self.last.action is CommitAction.SKIP

    @staticmethod
    def factory(root: str | os.PathLike[str], schema: Any, partition_by: Sequence[str] | None = None,
                **options: Any) -> ParquetStateFactory:
        """A factory of Parquet states writing under ``root`` (``options``: ``ParquetBatchSink``'s
        ``max_rows_per_file``, ``row_group_rows``, ``compression``, ``fsync``)."""
        return ParquetStateFactory(root, schema, partition_by, **options)


class ParquetStateFactory(StateFactory):
    """Makes one :class:`ParquetState` per partition: writer task ``partition_index`` of ``num_partitions``."""

    def __init__(self, root: str | os.PathLike[str], schema: Any, partition_by: Sequence[str] | None = None,
                 *, max_rows_per_file: int = 1_000_000, row_group_rows: int = 128 * 1024,
                 compression: str = "zstd", fsync: bool = True) -> None:
        self.root = str(root)
        self.schema = coerce_schema(schema)
        self.partition_by = self.schema.check_partition_by(partition_by or ())
        self.options = WriterOptions(max_rows_per_file, row_group_rows, compression, fsync)

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> ParquetState:
        return ParquetState(WRITERS.get(self, partition_index, max(1, num_partitions)))  # type: ignore[arg-type]


class ParquetUpdater(BaseStateUpdater):
    """Writes a batch's tuples (the schema's fields, in order) with the state; emits ``[values, reason]`` for
    each row the schema refuses."""

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        result = state.write([list(t.values) for t in tuples])
        for values, reason in result.bad:
            collector.emit([list(values), reason])
