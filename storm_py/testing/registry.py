"""Shared: the base of test helpers that stay one object when a component holding them is copied per task.

Each task gets a deep copy of its component object; helpers that tests must observe (feeder queues, ack
trackers, captured tuples) derive from :class:`Shared`, whose copies are the object itself.
"""

from __future__ import annotations

from typing import Any


class Shared:
    """Base for helpers that must stay one object even when a component holding them is deep-copied."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Shared:
        return self

    def __copy__(self) -> Shared:
        return self
