"""This module owns the Kafka spouts' columnar mode as pure functions: fetched records into Arrow record batches of
the record schema, the JSON batch translator, dead-letter batches, and the per-batch offset bookkeeping.

A columnar spout emits the records of one poll of one partition as one batch, whose message id is
``(topic, partition, first_offset, last_offset)``.  The bookkeeping reuses the partition's
:class:`~storm_py.kafka.offsets.PartitionOffsets`: a batch is pending under its first offset (its payload is the
batch's records, kept to re-emit or dead-letter it), and the manager's emitted range covers it up to its last
offset, so the commit (the acked prefix), ``max_uncommitted_offsets`` (counted in records), the retry backoff and
``max_retries`` all apply to the batch as a whole.  Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from storm_py.kafka.client import HeaderedRecord, TopicPartition
from storm_py.kafka.offsets import PartitionOffsets

#: the header of a record, as the ``headers`` column holds it
HEADER_TYPE: Final = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
#: the schema of a columnar Kafka stream
RECORD_SCHEMA: Final = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
    pa.field("headers", pa.list_(HEADER_TYPE)),
])
#: the error column a dead-letter batch adds to the record schema
ERROR_COLUMN: Final = "error"
DEAD_LETTER_SCHEMA: Final = RECORD_SCHEMA.append(pa.field(ERROR_COLUMN, pa.string()))
#: the columns of a ``batch_schema`` filled from the record rather than from the JSON value
RECORD_COLUMNS: Final = ("topic", "partition", "offset", "key", "timestamp")
JSON = "json"

#: ``(topic, partition, first_offset, last_offset)``
BatchMessageId = tuple[str, int, int, int]
#: what a batch translator returns
Translated = Any  # a pyarrow RecordBatch or Table
BatchTranslator = Callable[[pa.RecordBatch], Translated]


def is_schema(value: object) -> bool:
    """Whether ``value`` is a ``pyarrow.Schema``."""
    return isinstance(value, pa.Schema)


class BatchTranslationError(ValueError):
    """A batch translator could not turn a batch into its output (the message says why)."""


def records_batch(records: Sequence[Any]) -> pa.RecordBatch:
    """The records (:data:`~storm_py.kafka.client.HeaderedRecord` tuples, in order) as one batch of
    :data:`RECORD_SCHEMA`.  A record without headers has an empty ``headers`` list."""
    if not records:
        return pa.RecordBatch.from_pylist([], RECORD_SCHEMA)
    topics, partitions, offsets, keys, values, stamps, headers = zip(*records, strict=True)
    return pa.RecordBatch.from_arrays([
        pa.array(topics, pa.string()),
        pa.array(partitions, pa.int32()),
        pa.array(offsets, pa.int64()),
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array(stamps, pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        pa.array([h or [] for h in headers], pa.list_(HEADER_TYPE)),
    ], schema=RECORD_SCHEMA)


def dead_letter_batch(batch: pa.RecordBatch, error: str) -> pa.RecordBatch:
    """A batch of the record schema with the ``error`` column (the same ``error`` on every row)."""
    errors = pa.array([error] * batch.num_rows, pa.string())
    return pa.RecordBatch.from_arrays([*batch.columns, errors], schema=DEAD_LETTER_SCHEMA)


class JsonBatchTranslator:
    """``batch_translator="json"``: each record's value is one JSON object, read by Arrow's JSON reader into the
    columns of ``schema``; the columns named like :data:`RECORD_COLUMNS` come from the record instead.

    A value that is null, not one JSON object or not of the schema's types fails the whole batch
    (:class:`BatchTranslationError` naming the topic, partition and offsets).
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.json_schema = pa.schema([f for f in schema if f.name not in RECORD_COLUMNS])
        self.parse = pa_json.ParseOptions(explicit_schema=self.json_schema, unexpected_field_behavior="ignore")
        self.parse_multiline = pa_json.ParseOptions(explicit_schema=self.json_schema,
                                                    unexpected_field_behavior="ignore", newlines_in_values=True)

    def __call__(self, batch: pa.RecordBatch) -> pa.Table:
        n = batch.num_rows
        if n == 0:
            return self.schema.empty_table()
        values = batch.column("value")
        where = _describe(batch)
        if values.null_count:
            raise BatchTranslationError(f"{where}: {values.null_count} records have no value (null), not a JSON "
                                        f"object")
        parsed = self._read(values, n, where) if self.json_schema else None
        columns = []
        for f in self.schema:
            if f.name in RECORD_COLUMNS:
                column = batch.column(f.name)
            else:
                assert parsed is not None
                column = parsed.column(f.name)
            try:
                columns.append(column.cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise BatchTranslationError(f"{where}: column {f.name!r} cannot be {f.type}: {err}") from None
        return pa.Table.from_arrays(columns, schema=self.schema)

    def _read(self, values: pa.Array, n: int, where: str) -> pa.Table:
        # one newline-delimited buffer of every value, joined by Arrow (no Python object per record)
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, n], pa.int32()), values), b"\n")[0]
        multiline = pc.sum(pc.count_substring(values, b"\n")).as_py()
        parse = self.parse_multiline if multiline else self.parse
        try:
            table = pa_json.read_json(pa.BufferReader(joined.as_buffer()), parse_options=parse)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            raise BatchTranslationError(f"{where}: the values are not JSON objects of {_names(self.json_schema)}:"
                                        f" {err}") from None
        if table.num_rows != n:
            raise BatchTranslationError(f"{where}: {n} values gave {table.num_rows} JSON objects (each value must "
                                        f"hold exactly one)")
        return table


def _names(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _describe(batch: pa.RecordBatch) -> str:
    if batch.num_rows == 0:
        return "an empty batch"
    if not {"topic", "partition", "offset"} <= set(batch.schema.names):
        return f"a batch of {batch.num_rows} rows"
    offsets = batch.column("offset")
    return (f"topic {batch.column('topic')[0].as_py()!r} partition {batch.column('partition')[0].as_py()} "
            f"offsets {offsets[0].as_py()}..{offsets[batch.num_rows - 1].as_py()}")


def make_batch_translator(translator: BatchTranslator | str | None, schema: pa.Schema | None
                          ) -> BatchTranslator | None:
    """The translator a config names: ``"json"`` (with ``schema``), a callable, or None."""
    if translator == JSON:
        assert schema is not None
        return JsonBatchTranslator(schema)
    if translator is None or callable(translator):
        return translator
    raise TypeError(f"batch_translator must be a callable or 'json', got {translator!r}")


def translate(translator: BatchTranslator | None, schema: pa.Schema, batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` through ``translator`` into one batch of exactly ``schema``'s columns (names and types).

    Raises:
        BatchTranslationError: the translator raised, or returned something that is not a batch of ``schema``.
    """
    if translator is None:
        return batch
    try:
        out = translator(batch)
    except BatchTranslationError:
        raise
    except Exception as err:  # user code: the batch fails, naming what it was
        raise BatchTranslationError(f"the batch translator failed on {_describe(batch)}: "
                                    f"{type(err).__name__}: {err}") from err
    if isinstance(out, pa.Table):
        out = out.combine_chunks().to_batches()[0] if out.num_rows else pa.RecordBatch.from_pylist([], out.schema)
    if not isinstance(out, pa.RecordBatch):
        raise BatchTranslationError(f"the batch translator returned {type(out).__name__} for {_describe(batch)}, "
                                    f"not a pyarrow RecordBatch or Table")
    if out.schema.names != schema.names or any(a.type != b.type for a, b in zip(out.schema, schema, strict=True)):
        raise BatchTranslationError(f"the batch translator returned columns ({_names(out.schema)}) for "
                                    f"{_describe(batch)}, not batch_schema's ({_names(schema)})")
    return out


# ------------------------------------------------------------------------------------------- bookkeeping
def take_batches(waiting: deque[Any], managers: dict[TopicPartition, PartitionOffsets], budget: int,
                 tracked: bool) -> list[tuple[TopicPartition, list[HeaderedRecord]]]:
    """Up to ``budget`` waiting records, as runs of consecutive new records of one partition each (one batch per
    partition of a poll).  A record of a partition no longer owned is dropped, and so is one already emitted or
    below the commit when ``tracked``."""
    out: list[tuple[TopicPartition, list[HeaderedRecord]]] = []
    runs: dict[TopicPartition, list[HeaderedRecord]] = {}
    n = 0
    while waiting and n < budget:
        record = waiting.popleft()
        tp = (record[0], record[1])
        m = managers.get(tp)
        if m is None:
            continue
        run = runs.get(tp)
        if tracked:
            top = run[-1][2] + 1 if run else m.emitted_to
            if record[2] < top:
                continue
        if run is None:
            run = runs[tp] = []
            out.append((tp, run))
        run.append(record)
        n += 1
    return out


def message_id(tp: TopicPartition, records: Sequence[HeaderedRecord]) -> BatchMessageId:
    """The message id of a batch of ``records`` of partition ``tp``."""
    return tp[0], tp[1], records[0][2], records[-1][2]


def on_batch_emit(m: PartitionOffsets, records: list[HeaderedRecord]) -> None:
    """A new batch of ``records`` went out tracked: pending under its first offset, emitted through its last."""
    m.on_emit(records[0][2], records)
    m.emitted_through(records[-1][2])


def batch_records(m: PartitionOffsets, first: int) -> list[HeaderedRecord] | None:
    """The records of the pending batch starting at ``first`` (None when it is not pending)."""
    records: list[HeaderedRecord] | None = m.pending.get(first)
    return records
