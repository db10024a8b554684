"""This module owns the groupings of a columnar stream: which tasks get which rows of a batch.

Shuffle, local-or-shuffle, none, all and global move the whole batch (their choosers pick tasks without looking
at values).  A fields grouping splits the batch by a hash of its key columns computed over the whole batch: the
same 32-bit hash per row that the per-tuple grouping computes for that row's values (each distinct value of a
column hashed once, by :func:`~storm_py.runtime.groupers.value_hash`, then combined per row with numpy), mapped
to tasks by the chooser itself (:class:`HashRouted`), so a key goes to the same task in a batch or in a tuple.
Any other chooser (partial key, custom) is asked per row, fed the rows in order.  Rows bound for one task travel
as one batch, in their original order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from storm_py.runtime.groupers import AnyOne, Chooser, Fixed, LoadAwareShuffle, Shuffle, value_hash
from storm_py.vector.batches import check_fit, row_values, to_record_batch

_MASK: Final = 0xFFFFFFFF

#: one batch for each target task that gets rows: ``(task, values)`` with ``values`` the tuple's ``[batch]``
Parts = list[tuple[int, list[Any]]]


@runtime_checkable
class HashRouted(Protocol):
    """A chooser that picks a task from the hash of a tuple's key values (a fields grouping): the positions of
    its key fields, and the task of each of an array of hashes."""

    @property
    def key_indices(self) -> list[int]: ...

    def targets_of_hashes(self, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]: ...


def distinct_hashes(column: pa.Array | pa.ChunkedArray) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64] | None]:
    """``value_hash`` of each distinct value of ``column`` (a null counts as the value ``None``) and the position
    of each row's value among them; ``None`` positions when the column's type cannot be dictionary encoded (the
    hashes are then one per row)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    try:
        encoded = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return np.fromiter((value_hash(v) for v in column.to_pylist()), dtype=np.uint64, count=len(column)), None
    dictionary = encoded.dictionary.to_pylist()
    n = len(dictionary)
    distinct = np.fromiter((value_hash(v) for v in [*dictionary, None]), dtype=np.uint64, count=n + 1)
    indices = encoded.indices
    if indices.null_count:
        indices = indices.fill_null(n)  # the null slot, last
    positions: npt.NDArray[np.int64] = indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return distinct, positions


def column_hashes(column: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.uint64]:
    """``value_hash`` of each value of ``column`` (nulls hash as ``None``), each distinct value hashed once."""
    distinct, positions = distinct_hashes(column)
    if positions is None:
        return distinct
    hashes: npt.NDArray[np.uint64] = distinct[positions]
    return hashes


def row_hashes(batch: pa.RecordBatch, key_indices: Sequence[int]) -> npt.NDArray[np.uint64]:
    """The per-tuple fields grouping's hash of each row's key values (``values_hash`` of the key columns)."""
    h = np.ones(batch.num_rows, dtype=np.uint64)
    for i in key_indices:
        h = (h * np.uint64(31) + column_hashes(batch.column(i))) & np.uint64(_MASK)
    return h


def row_targets(chooser: HashRouted, batch: pa.RecordBatch) -> npt.NDArray[np.int64]:
    """The task of each row of ``batch`` by ``chooser``: on one key column, each distinct value's task is found
    once; on several, each row's combined hash is."""
    keys = chooser.key_indices
    if len(keys) != 1:
        return chooser.targets_of_hashes(row_hashes(batch, keys))
    distinct, positions = distinct_hashes(batch.column(keys[0]))
    targets = chooser.targets_of_hashes((distinct + np.uint64(31)) & np.uint64(_MASK))  # values_hash([v])
    if positions is None:
        return targets
    picked: npt.NDArray[np.int64] = targets[positions]
    return picked


def split_by_targets(batch: pa.RecordBatch, targets: npt.NDArray[np.int64]) -> Parts:
    """The rows of ``batch`` by their target task (``targets[row]``), each task's rows in their order."""
    if len(targets) == 0:
        return []
    low = int(targets.min())
    present = np.flatnonzero(np.bincount(targets - low)) + low  # the tasks that get rows, ascending
    if len(present) == 1:
        return [(low, [batch])]
    return [(int(t), [batch.take(pa.array(np.flatnonzero(targets == t)))]) for t in present]


Splitter = Callable[[int, pa.RecordBatch], Parts]


def _whole(chooser: Chooser) -> Splitter:
    def split(task: int, batch: pa.RecordBatch) -> Parts:
        return [(t, [batch]) for t in chooser.choose(task, [])]
    return split


def _hashed(chooser: HashRouted) -> Splitter:
    def split(task: int, batch: pa.RecordBatch) -> Parts:
        return split_by_targets(batch, row_targets(chooser, batch))
    return split


def _per_row(chooser: Chooser) -> Splitter:
    def split(task: int, batch: pa.RecordBatch) -> Parts:
        rows: dict[int, list[int]] = {}
        for i, values in enumerate(row_values(batch)):
            for t in chooser.choose(task, values):
                rows.setdefault(t, []).append(i)
        return [(t, [batch.take(pa.array(idx, type=pa.int64()))]) for t, idx in sorted(rows.items())]
    return split


def splitter(chooser: Chooser) -> Splitter:
    """How a batch is spread by ``chooser`` (decided once, when the route is built)."""
    if isinstance(chooser, (Shuffle, LoadAwareShuffle, AnyOne, Fixed)):
        return _whole(chooser)
    if isinstance(chooser, HashRouted):
        return _hashed(chooser)
    return _per_row(chooser)


class ColumnarRoute:
    """The columnar side of one output stream of one task: what its emits take and where their rows go."""

    __slots__ = ("component", "names", "schema", "splitters", "stream")

    def __init__(self, component: str, stream: str, names: Sequence[str], schema: pa.Schema | None,
                 choosers: Sequence[Chooser]) -> None:
        self.component = component
        self.stream = stream
        self.names = list(names)
        self.schema = schema
        self.splitters = [splitter(c) for c in choosers]

    def batch(self, data: Any) -> pa.RecordBatch:
        """What an emit took as a batch that fits the stream, else :class:`SchemaMismatchException`."""
        batch = to_record_batch(data, self.component, self.stream)
        check_fit(batch, self.names, self.schema, self.component, self.stream)
        return batch

    def parts(self, task: int, data: Any) -> Parts:
        """The batch of one emit by ``task`` split over the target tasks; nothing for a batch of no rows."""
        batch = self.batch(data)
        if batch.num_rows == 0:
            return []
        if len(self.splitters) == 1:
            return self.splitters[0](task, batch)
        out: Parts = []
        for split in self.splitters:
            out.extend(split(task, batch))
        return out


def pairs(targets: list[int], values: list[Any]) -> Parts:
    """``(target, values)`` for each target: one tuple's values sent to several tasks.  (A function of its own:
    a comprehension over ``values`` inside an emit would make ``values`` a cell of every emit call.)"""
    return [(t, values) for t in targets]


def sorted_targets(parts: Parts) -> list[int]:
    """The sorted ids of the tasks that got rows."""
    return sorted({t for t, _ in parts})
