"""Process-wide registry for test helpers whose state is shared by every copy of a component.

Each task gets a deep copy of its component object; helpers that tests must observe (feeder queues, ack
trackers, captured tuples) keep their state here, keyed by an id that survives copying.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}


def register(value: Any, key: str | None = None) -> str:
    """Store ``value`` under a new (or given) key and return the key."""
    k = key or uuid.uuid4().hex
    with _LOCK:
        _STATE[k] = value
    return k


def lookup(key: str) -> Any:
    """The value stored under ``key``."""
    with _LOCK:
        return _STATE[key]


def forget(key: str) -> None:
    """Drop ``key`` (no error if absent)."""
    with _LOCK:
        _STATE.pop(key, None)


class Shared:
    """Base for helpers that must stay one object even when a component holding them is deep-copied."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Shared:
        return self

    def __copy__(self) -> Shared:
        return self
