"""Parquet through pyarrow (the only module importing it): writing a txid's files, reading committed rows, compaction.

Files hold the data columns only: the partition columns and ``txid`` come from the directory names, the way
Spark's partition discovery reads them.  A compacted segment (``_compacted/<first>-<last>/``) is the exception:
one file holding every column, ``txid`` included, for a run of small committed txids; the manifests of those
txids point at it, and readers going through the manifests (:func:`read_committed_table`, and
:func:`storm_py.spark.read_committed` for Spark) read it in their place.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storm_py.spark.columns import COMPILED, epoch_micros
from storm_py.spark.durable import fsync_path
from storm_py.spark.layout import (
    COMPACTED,
    TXID_COLUMN,
    DatasetLayout,
    FileEntry,
    Manifest,
    part_name,
    partition_dir,
    prune_empty,
)
from storm_py.spark.schema import Field, Schema, SchemaError, plain_schema

ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "binary": pa.binary(),
}


def arrow_schema(schema: Schema, exclude: Sequence[str] = ()) -> pa.Schema:
    """The pyarrow schema of ``schema``'s fields (less ``exclude``)."""
    return pa.schema([pa.field(f.name, ARROW_TYPES[f.type], nullable=f.nullable)
                      for f in schema.fields if f.name not in exclude])


def schema_from_arrow(schema: pa.Schema) -> Schema:
    """A :class:`Schema` from a pyarrow schema made of the supported types."""
    fields = []
    for f in schema:
        names = [n for n, t in ARROW_TYPES.items()
                 if f.type == t or (n == "timestamp" and pa.types.is_timestamp(f.type))]
        if not names:
            raise SchemaError(f"field {f.name!r}: pyarrow type {f.type} is not supported "
                              f"(use one of {', '.join(ARROW_TYPES)})", field=f.name)
        fields.append(Field(f.name, names[0], f.nullable))
    return Schema(fields)


def batch_table(schema: Schema, data: Any) -> tuple[pa.Table | None, str | None]:
    """A batch input (a ``RecordBatch`` or ``Table``) as a table of exactly ``schema``'s fields: each field taken
    from the column of its name and cast safely to its type (other columns are ignored).  ``(None, reason)``
    when it lacks a field, a column cannot be cast, or a non-nullable field holds nulls; the reason names them."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        return None, f"a batch input must be a pyarrow RecordBatch or Table, not {type(data).__name__}"
    names = set(data.schema.names)
    missing = [f.name for f in schema.fields if f.name not in names]
    if missing:
        return None, f"the batch has no columns {missing} (its columns: {data.schema.names})"
    target = arrow_schema(schema)
    columns = []
    problems = []
    for f in target:
        column = data.column(f.name)
        try:
            column = column.cast(f.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            problems.append(f"column {f.name!r} ({column.type}) cannot be cast to {f.type}: {err}")
            continue
        if not f.nullable and column.null_count:
            problems.append(f"column {f.name!r} holds {column.null_count} nulls but the field is not nullable")
            continue
        columns.append(column)
    if problems:
        return None, "; ".join(problems)
    return pa.Table.from_arrays(columns, schema=target), None


def source_pairs(table: pa.Table, partition: str, offset: str) -> list[tuple[Any, Any]]:
    """The ``(partition, lowest offset)`` and ``(partition, highest offset)`` of a batch input's rows."""
    if table.num_rows == 0:
        return []
    grouped = table.group_by(partition).aggregate([(offset, "min"), (offset, "max")]).to_pylist()
    return [(g[partition], g[f"{offset}_{fn}"]) for g in grouped for fn in ("min", "max")]


def write_txid_files(
    staging: Path,
    prefix: str,
    schema: Schema,
    columns: Sequence[Sequence[Any]],
    partition_by: Sequence[str],
    txid: int,
    task: int,
    token: str,
    *,
    max_rows_per_file: int,
    row_group_rows: int,
    compression: str,
    fsync: bool = True,
    keep: list[int] | None = None,
    tables: Sequence[pa.Table] = (),
) -> list[tuple[FileEntry, Path]]:
    """Write checked rows (as ``columns``), then the rows of ``tables`` (batch inputs, as :func:`batch_table`
    made them), into ``staging``; each file's entry (its published path) and staged path.
    ``keep`` receives a descriptor of each file, left open for the caller to fsync (and close)."""
    nrows = len(columns[0]) if columns else 0
    parts = [t for t in tables if t.num_rows]
    if nrows:
        arrays = [to_array(f, col) for f, col in zip(schema.fields, columns, strict=True)]
        parts.insert(0, pa.Table.from_arrays(arrays, schema=arrow_schema(schema)))
    if not parts:
        return []
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    groups: list[tuple[tuple[Any, ...], pa.Table]]
    if partition_by:
        key_columns = ([columns[schema.names.index(c)] for c in partition_by] if len(parts) == 1 and nrows
                       else [table.column(c).to_pylist() for c in partition_by])
        keys = list(zip(*key_columns, strict=True))
        keyed: dict[tuple[Any, ...], list[int]] = {}
        for i, key in enumerate(keys):
            keyed.setdefault(key, []).append(i)
        groups = [(key, table.take(pa.array(ix, type=pa.int64())).drop_columns(list(partition_by)))
                  for key, ix in sorted(keyed.items())]
    else:
        groups = [((), table)]
    out: list[tuple[FileEntry, Path]] = []
    seq = 0
    for key, part in groups:
        rel_dir = partition_dir(partition_by, key, txid)
        for start in range(0, part.num_rows, max_rows_per_file):
            chunk = part.slice(start, max_rows_per_file)
            staged = staging / f"{prefix}-{seq:04d}.parquet"
            size = write_table(chunk, staged, row_group_rows, compression, fsync, keep)
            entry = FileEntry(f"{rel_dir}/{part_name(txid, task, seq, token)}", chunk.num_rows,
                              dict(zip(partition_by, key, strict=True)), size)
            out.append((entry, staged))
            seq += 1
    return out


def to_array(f: Field, col: Sequence[Any]) -> pa.Array:
    """A checked column as an Arrow array of ``f``'s type.  The compiled build converts UTC and naive timestamps
    to microseconds itself (:func:`storm_py.spark.columns.epoch_micros`): pyarrow calls each aware value's
    ``utcoffset()``, which costs more than the rest of a typical row's conversion."""
    if f.type == "timestamp" and COMPILED:
        micros = epoch_micros(col if isinstance(col, list) else list(col))
        if micros is not None:
            return pa.array(micros, type=pa.int64()).view(ARROW_TYPES["timestamp"])
    return pa.array(col, type=ARROW_TYPES[f.type])


def write_table(table: pa.Table, path: Path, row_group_rows: int, compression: str, fsync: bool,
                keep: list[int] | None = None) -> int:
    """One Parquet file, fsynced when asked; its size in bytes (``keep``: see :func:`write_txid_files`)."""
    with open(path, "wb") as fh:
        pq.write_table(table, fh, row_group_size=row_group_rows, compression=compression)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
        if keep is not None:
            keep.append(os.dup(fh.fileno()))
        return fh.tell()


def _typed_constant(schema: Schema, name: str, value: Any, n: int) -> pa.Array:
    f = schema.field(name)
    if f.type == "int64":
        value = int(value)
    elif f.type == "bool":
        value = value if isinstance(value, bool) else str(value).lower() == "true"
    return pa.array([value] * n, type=ARROW_TYPES[f.type])


def _full_table(layout: DatasetLayout, schema: Schema, manifest: Manifest, entry: FileEntry) -> pa.Table:
    """One published file with its partition columns and ``txid``, columns in schema order."""
    table = pq.read_table(layout.root / entry.path)
    n = table.num_rows
    cols = []
    for f in schema.fields:
        if f.name in entry.partition:
            cols.append(_typed_constant(schema, f.name, entry.partition[f.name], n))
        else:
            cols.append(table.column(f.name))
    cols.append(pa.array([manifest.txid] * n, type=pa.int64()))
    return pa.Table.from_arrays(cols, schema=read_schema(schema))


def read_schema(schema: Schema) -> pa.Schema:
    """The schema of committed rows as read: every field, then ``txid``."""
    return arrow_schema(schema).append(pa.field(TXID_COLUMN, pa.int64(), nullable=False))


def read_committed_table(root: str | os.PathLike[str], schema: Any = None) -> pa.Table:
    """Exactly the committed rows of the dataset at ``root`` as a pyarrow Table (with a ``txid`` column)."""
    layout = DatasetLayout(root)
    manifests = layout.committed_manifests()
    if schema is None and not manifests:
        raise SchemaError(f"nothing is committed under {root} yet: pass the schema to read an empty dataset")
    resolved = Schema.from_dict(manifests[-1].schema) if schema is None else _coerce(schema)
    tables: list[pa.Table] = []
    segments: dict[str, set[int]] = {}
    for m in manifests:
        if m.compacted:
            segments.setdefault(m.compacted, set()).add(m.txid)
            continue
        tables.extend(_full_table(layout, resolved, m, e) for e in m.files)
    for seg, txids in sorted(segments.items()):
        for path in sorted((layout.root / COMPACTED / seg).glob("*.parquet")):
            t = pq.read_table(path, schema=read_schema(resolved))
            tables.append(t.filter(pc.is_in(t.column(TXID_COLUMN), pa.array(sorted(txids), type=pa.int64()))))
    if not tables:
        return read_schema(resolved).empty_table()
    return pa.concat_tables(tables)


def _coerce(schema: Any) -> Schema:
    return schema_from_arrow(schema) if isinstance(schema, pa.Schema) else plain_schema(schema)


def compact(root: str | os.PathLike[str], min_rows: int = 100_000, row_group_rows: int = 128 * 1024,
            compression: str = "zstd") -> list[tuple[int, int]]:
    """Merge runs of consecutive small committed txids into compacted segments; the ``(first, last)`` merged.

    A txid is small when it holds fewer than ``min_rows`` rows; a run closes once it reaches ``min_rows``.  Each
    run is written as one file under ``_compacted/<first>-<last>/``, then the run's manifests are switched
    (atomically, one by one) to point at it.  Safe while readers read and the sink commits:

    * the last committed txid is never compacted (a replay may still replace it), the sink writes nothing
      below it, so compaction and sink never touch the same manifest;
    * a reader reads each txid either from its own files or from the segment, by the manifest it took;
    * the txids' own files are deleted by the *next* call, not this one, so a reader that took a manifest
      before the switch reads on; run compactions further apart than the longest read (one at a time).

    An interrupted compaction is finished by the next one; a second compaction while one runs raises
    :class:`~storm_py.spark.layout.DatasetError`.
    """
    layout = DatasetLayout(root)
    with layout.compacting():
        return _compact(layout, min_rows, row_group_rows, compression)


def _compact(layout: DatasetLayout, min_rows: int, row_group_rows: int, compression: str) -> list[tuple[int, int]]:
    latest = layout.latest()
    manifests = layout.committed_manifests(latest)[:-1]  # not the last: a replay may replace it
    for m in manifests:  # compacted by an earlier call: the original files are no longer read
        if m.compacted:
            _remove_originals(layout, m)
    runs: list[list[Manifest]] = []
    current: list[Manifest] = []
    for m in manifests:
        if m.compacted or m.rows >= min_rows:
            if len(current) > 1:
                runs.append(current)
            current = []
            continue
        current.append(m)
        if sum(x.rows for x in current) >= min_rows:
            runs.append(current)
            current = []
    if len(current) > 1:
        runs.append(current)
    done: list[tuple[int, int]] = []
    for run in runs:
        schema = Schema.from_dict(run[-1].schema)
        seg = f"{run[0].txid:020d}-{run[-1].txid:020d}"
        tmp = layout.staging / f"compact-{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        table = pa.concat_tables([_full_table(layout, schema, m, e) for m in run for e in m.files]
                                 or [read_schema(schema).empty_table()])
        write_table(table, tmp / "part-0000.parquet", row_group_rows, compression, fsync=True)
        target = layout.root / COMPACTED / seg
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            shutil.rmtree(target)
        os.rename(tmp, target)
        fsync_path(target.parent)
        for m in run:
            old = Manifest(m.txid, m.attempt, m.files, m.schema, m.fingerprint, m.source, m.errors, m.tasks, seg)
            layout.write_manifest(old)
        done.append((run[0].txid, run[-1].txid))
    return done


def _remove_originals(layout: DatasetLayout, m: Manifest) -> None:
    for e in m.files:
        path = layout.root / e.path
        if path.exists():
            path.unlink()
            prune_empty(path.parent, layout.root)
