"""This module owns how batches cross workers: Arrow IPC inside the wire codec.

A ``pyarrow.RecordBatch`` is carried as msgpack extension type :data:`BATCH_EXT_CODE` holding one Arrow IPC
stream of that batch, and a ``pyarrow.Table`` as :data:`TABLE_EXT_CODE` holding one IPC stream of its batches;
what arrives ``equals`` what was sent, field names and types included.  A batch tuple of a columnar stream is
a tuple whose one value is its batch, so it travels as one IPC stream; a batch or table is also a value any tuple
may carry.  Decoding reads the IPC stream over the frame's bytes without copying them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa

from storm_py.errors import CodecError
from storm_py.protocol.codec import register_ext

#: the extension codes of a batch and of a table (below the codes ``topology.kryo.register`` hands out)
BATCH_EXT_CODE: Final = 17
TABLE_EXT_CODE: Final = 18


def _ipc(schema: pa.Schema, batches: Sequence[pa.RecordBatch]) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return bytes(sink.getvalue())


def batch_to_bytes(batch: pa.RecordBatch) -> bytes:
    """One batch as an Arrow IPC stream."""
    return _ipc(batch.schema, [batch])


def table_to_bytes(table: pa.Table) -> bytes:
    """A table as an Arrow IPC stream of its batches."""
    return _ipc(table.schema, table.to_batches())


def _read(data: bytes, what: str) -> pa.Table:
    try:
        return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (pa.ArrowException, ValueError, OSError) as err:
        raise CodecError(f"an Arrow IPC {what} on the wire cannot be read: {err}") from err


def batch_from_bytes(data: bytes) -> pa.RecordBatch:
    """The batch of one IPC stream (a stream of several batches is one batch of their rows)."""
    table = _read(data, "batch")
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0]
    return table.combine_chunks().to_batches()[0] if table.num_rows else pa.RecordBatch.from_pylist(
        [], schema=table.schema)


def table_from_bytes(data: bytes) -> pa.Table:
    """The table of one IPC stream."""
    return _read(data, "table")


def batch_tuple_fits(values: list[Any], names: Sequence[str]) -> bool:
    """Whether the values of a tuple from the wire are one batch with the columns ``names`` (a columnar
    stream's tuple)."""
    return len(values) == 1 and isinstance(values[0], pa.RecordBatch) and values[0].schema.names == list(names)


register_ext(BATCH_EXT_CODE, pa.RecordBatch, batch_to_bytes, batch_from_bytes)
register_ext(TABLE_EXT_CODE, pa.Table, table_to_bytes, table_from_bytes)
