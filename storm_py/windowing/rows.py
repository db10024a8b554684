"""This module owns windows measured in rows of batches, as a pure core: a batch's rows into a window manager, the
rows that expire counted against their batch (a batch is done once every row of it has left), the batches a window
holds rows of, and a window's rows as runs of consecutive rows of one batch (cheap to slice).

The batch itself is opaque here (``data``), and so is the input it arrived with (``token``): the vector window
executor gives Arrow batches and tuples, this module only counts and orders.  Nothing here does I/O or reads a
clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from storm_py.windowing.events import Step
from storm_py.windowing.manager import WindowManager


class BatchEntry:
    """One input batch in the window: what it arrived with (``token``), its rows (``data``), and how many of its
    rows have not left the window yet."""

    __slots__ = ("data", "remaining", "token")

    def __init__(self, token: Any, data: Any, rows: int) -> None:
        self.token = token
        self.data = data
        self.remaining = rows

    def __repr__(self) -> str:
        return f"BatchEntry(remaining={self.remaining})"


class RowRef:
    """Row ``index`` of a batch: what the window manager holds."""

    __slots__ = ("entry", "index")

    def __init__(self, entry: BatchEntry, index: int) -> None:
        self.entry = entry
        self.index = index

    def __repr__(self) -> str:
        return f"RowRef({self.index})"


def add_rows(manager: WindowManager[Any], entry: BatchEntry, timestamps: Sequence[int],
             late_before: int | None = None) -> tuple[list[Step[RowRef]], list[int]]:
    """Add every row of ``entry`` with its timestamp (ms): the steps that caused, in order, and the indexes of
    the late rows (timestamp before ``late_before``), which do not join the window and count as gone at once."""
    steps: list[Step[RowRef]] = []
    late: list[int] = []
    add = manager.add
    for index, ts in enumerate(timestamps):
        if late_before is not None and ts < late_before:
            late.append(index)
            continue
        out = add(RowRef(entry, index), ts)
        if out:
            steps.extend(out)
    entry.remaining -= len(late)
    return steps, late


def expire(refs: Sequence[RowRef]) -> list[Any]:
    """Rows left the window for good: the tokens of the batches none of whose rows is left (in order)."""
    done: list[Any] = []
    for ref in refs:
        entry = ref.entry
        entry.remaining -= 1
        if entry.remaining == 0:
            done.append(entry.token)
    return done


def anchors(refs: Sequence[RowRef]) -> list[Any]:
    """The tokens of the batches with a row among ``refs``, each once, in order of first appearance."""
    seen: set[int] = set()
    out: list[Any] = []
    for ref in refs:
        entry = ref.entry
        if id(entry) not in seen:
            seen.add(id(entry))
            out.append(entry.token)
    return out


def runs(refs: Sequence[RowRef]) -> list[tuple[BatchEntry, int, int]]:
    """``refs`` as runs ``(entry, start, stop)`` of consecutive rows ``start <= index < stop`` of one batch, in
    order."""
    out: list[tuple[BatchEntry, int, int]] = []
    entry: BatchEntry | None = None
    start = stop = 0
    for ref in refs:
        if ref.entry is entry and ref.index == stop:
            stop += 1
            continue
        if entry is not None:
            out.append((entry, start, stop))
        entry, start, stop = ref.entry, ref.index, ref.index + 1
    if entry is not None:
        out.append((entry, start, stop))
    return out
