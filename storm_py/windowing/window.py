"""The window a windowed bolt's ``execute`` receives: its tuples, the new and expired ones, and its bounds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class TupleWindow(Generic[T]):
    """One evaluation of a window (Storm's ``TupleWindow``); iterating it iterates :meth:`get`.

    ``get_end_timestamp`` is the window's reference time in epoch ms (the wall time of the trigger for
    processing time, the window end in the tuples' own time for event time); ``get_start_timestamp`` is the end
    minus the window length for duration windows and ``None`` for count windows.  A duration window holds the
    tuples with ``start < ts <= end``.
    """

    __slots__ = ("_end", "_expired", "_new", "_start", "_tuples")

    def __init__(self, tuples: list[T], new: list[T], expired: list[T], start: int | None, end: int) -> None:
        self._tuples = tuples
        self._new = new
        self._expired = expired
        self._start = start
        self._end = end

    def get(self) -> list[T]:
        """Every tuple in the window, oldest first."""
        return self._tuples

    def get_new(self) -> list[T]:
        """The tuples that were not in the previous evaluation."""
        return self._new

    def get_expired(self) -> list[T]:
        """The tuples that left the window since the previous evaluation."""
        return self._expired

    def get_start_timestamp(self) -> int | None:
        """The window's start in epoch ms (exclusive), or ``None`` for a count-length window."""
        return self._start

    def get_end_timestamp(self) -> int:
        """The window's end (reference time) in epoch ms (inclusive)."""
        return self._end

    def __iter__(self) -> Iterator[T]:
        return iter(self._tuples)

    def __len__(self) -> int:
        return len(self._tuples)

    def __repr__(self) -> str:
        return (
            f"TupleWindow(tuples={len(self._tuples)}, new={len(self._new)}, expired={len(self._expired)}, "
            f"start={self._start}, end={self._end})"
        )
