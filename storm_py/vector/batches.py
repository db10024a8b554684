"""This module owns what a batch of a columnar stream is: turning what an emit takes into one ``RecordBatch``,
the check that it fits its stream, its rows as Python values, and a batch gathered from rows.

A batch fits a stream when its column names equal the stream's fields, in order; when the stream was declared
with a ``pyarrow.Schema``, each column's type must equal the declared one too (nullability and metadata aside).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from storm_py.errors import ReportedFailedException


class SchemaMismatchException(ReportedFailedException):
    """A batch does not fit its columnar stream (or gathered rows cannot be typed): the message names the
    component, the stream, the declared columns and the batch's."""

    def __init__(self, message: str, component: str = "", stream: str = "") -> None:
        super().__init__(message)
        self.component = component
        self.stream = stream


def describe_schema(schema: pa.Schema) -> str:
    """``[name: type, ...]`` of a schema."""
    return "[" + ", ".join(f"{f.name}: {f.type}" for f in schema) + "]"


def to_record_batch(data: Any, component: str, stream: str) -> pa.RecordBatch:
    """What an emit on a columnar stream took, as one ``RecordBatch``: a batch as it is, a ``Table`` with its
    chunks concatenated, an object of the Arrow PyCapsule interface (a Polars frame) read through it."""
    if isinstance(data, pa.RecordBatch):
        return data
    if isinstance(data, pa.Table):
        return _table_batch(data)
    if hasattr(data, "__arrow_c_array__"):
        try:
            return pa.record_batch(data)
        except (TypeError, ValueError, pa.ArrowException):
            pass
    if hasattr(data, "__arrow_c_stream__"):
        return _table_batch(pa.table(data))
    raise SchemaMismatchException(
        f"component {component!r} emitted {type(data).__name__} on columnar stream {stream!r}: a columnar stream "
        "takes a pyarrow.RecordBatch, a pyarrow.Table or an object of the Arrow PyCapsule interface",
        component, stream)


def _table_batch(table: pa.Table) -> pa.RecordBatch:
    """A table's rows as one batch."""
    batches = table.combine_chunks().to_batches()
    if len(batches) == 1:
        return batches[0]
    if not batches:
        return pa.RecordBatch.from_pylist([], schema=table.schema)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def check_fit(batch: pa.RecordBatch, names: Sequence[str], schema: pa.Schema | None, component: str,
              stream: str) -> None:
    """Raise :class:`SchemaMismatchException` unless ``batch`` fits the stream of ``names`` (and ``schema``)."""
    got = batch.schema
    if list(got.names) == list(names) and (
            schema is None or all(a.type.equals(b.type) for a, b in zip(got, schema, strict=True))):
        return
    declared = describe_schema(schema) if schema is not None else str(list(names))
    raise SchemaMismatchException(
        f"a batch emitted by {component!r} on stream {stream!r} does not fit it: declared columns {declared}, "
        f"the batch has {describe_schema(got)}", component, stream)


def row_values(batch: pa.RecordBatch) -> list[list[Any]]:
    """Each row of ``batch`` as a list of Python values (``as_py``), in order."""
    columns = [column.to_pylist() for column in batch.columns]
    if not columns:
        return [[] for _ in range(batch.num_rows)]
    return [list(row) for row in zip(*columns, strict=True)]


def gather_batch(rows: Sequence[Sequence[Any]], names: Sequence[str], component: str, stream: str) -> pa.RecordBatch:
    """One batch of ``rows`` with the columns ``names``, typed by Arrow's inference over each column's values;
    a column Arrow cannot type raises :class:`SchemaMismatchException` naming it."""
    arrays = []
    for i, name in enumerate(names):
        values = [row[i] for row in rows]
        try:
            arrays.append(pa.array(values))
        except (TypeError, ValueError, pa.ArrowException) as err:
            raise SchemaMismatchException(
                f"bolt {component!r} cannot gather column {name!r} of stream {stream!r} into a batch: {err}",
                component, stream) from err
    return pa.RecordBatch.from_arrays(arrays, names=list(names))
