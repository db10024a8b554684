"""Map-state helpers for users' stores: transactional, opaque and non-transactional maps over a backing map.

A *backing map* is the user's store reduced to ``multi_get(keys) -> [stored or None]`` and
``multi_put(keys, stored)``.  The wrappers decide what to store so that replays do not double-count:

* :class:`TransactionalMap` stores :class:`TransactionalValue` ``(txid, val)``.  Updating a key in batch
  ``txid``: if the stored txid is ``txid`` the update was already applied (skip), otherwise apply it and store
  ``txid``.  Exactly-once when the spout is transactional (a txid always replays the same tuples) and commits
  are in txid order.
* :class:`OpaqueMap` stores :class:`OpaqueValue` ``(curr_txid, curr, prev)``.  If the stored txid is ``txid``,
  the update is recomputed from ``prev`` (a replay may carry different tuples), otherwise ``prev = curr`` and
  the update applies to ``curr``.  Exactly-once with opaque spouts too, at twice the storage.
* :class:`NonTransactionalMap` stores plain values and always applies (at-least-once under replays).

Use them in a committer's ``finish_batch``: ``begin_commit(txid)``, ``multi_update``/``multi_put``,
``commit(txid)``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from storm_py.errors import StormPyError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)
Updater = Callable[[Any], Any]


class MapStateError(StormPyError):
    """A map state was used out of order (e.g. an update for a transaction older than the stored one)."""

    code = "map_state_error"


class BackingMap(Protocol[K_contra, V]):
    """The user's store as a map: batch reads and writes."""

    def multi_get(self, keys: Sequence[K_contra]) -> list[V | None]: ...

    def multi_put(self, keys: Sequence[K_contra], values: Sequence[V]) -> None: ...


class MemoryBackingMap(Generic[K, V]):
    """A thread-safe dict as a backing map (Trident's ``MemoryMapState`` store)."""

    def __init__(self) -> None:
        self._data: dict[K, V] = {}
        self._lock = threading.Lock()

    def multi_get(self, keys: Sequence[K]) -> list[V | None]:
        with self._lock:
            return [self._data.get(k) for k in keys]

    def multi_put(self, keys: Sequence[K], values: Sequence[V]) -> None:
        with self._lock:
            for k, v in zip(keys, values, strict=True):
                self._data[k] = v

    def snapshot(self) -> dict[K, V]:
        """A copy of everything stored."""
        with self._lock:
            return dict(self._data)


@dataclass(frozen=True)
class TransactionalValue:
    """A value and the txid of the batch that last updated it."""

    txid: int
    val: Any


@dataclass(frozen=True)
class OpaqueValue:
    """The value after batch ``curr_txid`` and the value before it."""

    curr_txid: int
    curr: Any
    prev: Any = None

    def update(self, batch_txid: int, new_val: Any) -> OpaqueValue:
        """The stored value after batch ``batch_txid`` set ``new_val``."""
        if self.curr_txid < batch_txid:
            return OpaqueValue(batch_txid, new_val, self.curr)
        if self.curr_txid == batch_txid:
            return OpaqueValue(batch_txid, new_val, self.prev)
        raise MapStateError(
            f"update of batch {batch_txid} on a value already updated by the later batch {self.curr_txid}",
            batch=batch_txid,
            stored=self.curr_txid,
        )

    def get(self, batch_txid: int | None) -> Any:
        """The value batch ``batch_txid`` builds on (``curr``, or ``prev`` when it is a replay of that batch)."""
        if batch_txid is None or self.curr_txid < batch_txid:
            return self.curr
        if self.curr_txid == batch_txid:
            return self.prev
        raise MapStateError(
            f"read for batch {batch_txid} of a value already updated by the later batch {self.curr_txid}",
            batch=batch_txid,
            stored=self.curr_txid,
        )


class _TxMap:
    def __init__(self) -> None:
        self.current_txid: int | None = None

    def begin_commit(self, txid: int) -> None:
        """Updates from now on belong to batch ``txid``."""
        self.current_txid = int(txid)

    def commit(self, txid: int) -> None:
        """Batch ``txid`` is done."""
        self.current_txid = None

    def _txid(self) -> int:
        if self.current_txid is None:
            raise MapStateError("update outside a batch: call begin_commit(txid) first")
        return self.current_txid


class TransactionalMap(_TxMap):
    """Stores :class:`TransactionalValue`; an update already applied by this txid is skipped."""

    def __init__(self, backing: BackingMap[Any, TransactionalValue]) -> None:
        super().__init__()
        self.backing = backing
        self._written: set[Any] = set()

    def begin_commit(self, txid: int) -> None:
        super().begin_commit(txid)
        self._written = set()

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        """The current values (None for missing keys)."""
        return [None if v is None else v.val for v in self.backing.multi_get(keys)]

    def multi_update(self, keys: Sequence[Any], updaters: Sequence[Updater]) -> list[Any]:
        """Apply ``updaters[i](old)`` to each key unless this batch already did; return the resulting values."""
        txid = self._txid()
        stored = self.backing.multi_get(keys)
        out: list[Any] = []
        put_keys: list[Any] = []
        put_vals: list[TransactionalValue] = []
        for key, old, update in zip(keys, stored, updaters, strict=True):
            if old is not None and old.txid == txid and key not in self._written:
                out.append(old.val)  # applied by an earlier attempt of this very batch
                continue
            new = TransactionalValue(txid, update(None if old is None else old.val))
            out.append(new.val)
            put_keys.append(key)
            put_vals.append(new)
        if put_keys:
            self.backing.multi_put(put_keys, put_vals)
            self._written.update(put_keys)
        return out

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        """Set values outright for this batch."""
        txid = self._txid()
        self.backing.multi_put(list(keys), [TransactionalValue(txid, v) for v in values])
        self._written.update(keys)


class OpaqueMap(_TxMap):
    """Stores :class:`OpaqueValue`; a replayed batch recomputes from the value before it."""

    def __init__(self, backing: BackingMap[Any, OpaqueValue]) -> None:
        super().__init__()
        self.backing = backing

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        """The values the current batch builds on (None for missing keys)."""
        return [None if v is None else v.get(self.current_txid) for v in self.backing.multi_get(keys)]

    def multi_update(self, keys: Sequence[Any], updaters: Sequence[Updater]) -> list[Any]:
        """Apply ``updaters[i]`` to the value each key had before this batch; return the resulting values."""
        txid = self._txid()
        stored = self.backing.multi_get(keys)
        new_vals: list[OpaqueValue] = []
        for old, update in zip(stored, updaters, strict=True):
            if old is None:
                new_vals.append(OpaqueValue(txid, update(None), None))
            else:
                new_vals.append(old.update(txid, update(old.get(txid))))
        if keys:
            self.backing.multi_put(list(keys), new_vals)
        return [v.curr for v in new_vals]

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        """Set values outright for this batch."""
        txid = self._txid()
        stored = self.backing.multi_get(keys)
        new_vals = [
            OpaqueValue(txid, v, None) if old is None else old.update(txid, v)
            for old, v in zip(stored, values, strict=True)
        ]
        self.backing.multi_put(list(keys), new_vals)


class NonTransactionalMap(_TxMap):
    """Stores plain values; every update applies (replays double-count)."""

    def __init__(self, backing: BackingMap[Any, Any]) -> None:
        super().__init__()
        self.backing = backing

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        """The stored values."""
        return self.backing.multi_get(keys)

    def multi_update(self, keys: Sequence[Any], updaters: Sequence[Updater]) -> list[Any]:
        """Apply every updater."""
        stored = self.backing.multi_get(keys)
        new_vals = [update(old) for old, update in zip(stored, updaters, strict=True)]
        if keys:
            self.backing.multi_put(list(keys), new_vals)
        return new_vals

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        """Set values outright."""
        self.backing.multi_put(list(keys), list(values))
