"""The values a window holds and what its manager returns: an :class:`Event` (a value and its timestamp in ms) in
the queue, and the :class:`Step` s an evaluation causes, an :class:`Expiry` or an :class:`Activation`.

Both the window manager and its policies read these; nothing here decides anything.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Event(Generic[T]):
    """One value in the window, its timestamp (ms) and the last evaluation it was in the window of."""

    __slots__ = ("mark", "ts", "value")

    def __init__(self, value: T, ts: int) -> None:
        self.value = value
        self.ts = ts
        self.mark = -1

    def __repr__(self) -> str:
        return f"Event({self.value!r}, ts={self.ts})"


class Expiry(Generic[T]):
    """Values that left the window for good (acked by the executor)."""

    __slots__ = ("values",)

    def __init__(self, values: list[T]) -> None:
        self.values = values


class Activation(Generic[T]):
    """One evaluation of a non-empty window: its values, the new ones, those expired since the last evaluation,
    and the reference time (the window's end, ms)."""

    __slots__ = ("end", "expired", "new", "values")

    def __init__(self, values: list[T], new: list[T], expired: list[T], end: int) -> None:
        self.values = values
        self.new = new
        self.expired = expired
        self.end = end


Step = Expiry[T] | Activation[T]
