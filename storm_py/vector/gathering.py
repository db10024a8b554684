"""This module owns gathering tuples into batches (a vector bolt reading a per-tuple stream), as a pure core.

Tuples are gathered per input (source component, stream).  A batch is handed out when it holds ``size`` tuples,
or once ``linger`` seconds passed since its first tuple arrived; the caller passes ``now`` (the cluster's
clock) with every call.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@dataclass
class Gathering(Generic[T]):
    """The open batch of one input: when its first item arrived, and its items in arrival order."""

    first_at: float
    items: list[T] = field(default_factory=list)


class Gatherer(Generic[K, T]):
    """Open batches by input; ``add`` hands out a full one, ``due`` the ones that lingered long enough."""

    def __init__(self, size: int, linger_secs: float) -> None:
        if size < 1:
            raise ValueError(f"a gathered batch holds at least one row, got a size of {size}")
        if linger_secs < 0:
            raise ValueError(f"a gathered batch's linger cannot be negative, got {linger_secs}")
        self.size = size
        self.linger = linger_secs
        self._open: dict[K, Gathering[T]] = {}

    def add(self, key: K, item: T, now: float) -> list[T] | None:
        """Gather ``item`` of input ``key``; the batch it completed, if it did."""
        gathering = self._open.get(key)
        if gathering is None:
            gathering = self._open[key] = Gathering(now)
        gathering.items.append(item)
        if len(gathering.items) >= self.size:
            del self._open[key]
            return gathering.items
        return None

    def due(self, now: float) -> list[tuple[K, list[T]]]:
        """The batches whose first item arrived ``linger`` or more seconds before ``now``, oldest first."""
        ready = [(k, g) for k, g in self._open.items() if now >= g.first_at + self.linger]
        ready.sort(key=lambda kg: kg[1].first_at)
        for k, _ in ready:
            del self._open[k]
        return [(k, g.items) for k, g in ready]

    def next_due(self) -> float | None:
        """When the oldest open batch is due (``None``: nothing is open)."""
        if not self._open:
            return None
        return min(g.first_at for g in self._open.values()) + self.linger

    def __len__(self) -> int:
        """Items gathered and not handed out yet."""
        return sum(len(g.items) for g in self._open.values())
