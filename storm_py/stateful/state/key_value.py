"""This module owns :class:`KeyValueState`, the managed state of a stateful component, and its in-memory store.

A state has three layers, as Storm's: the *current* map the component reads and writes, at most one *prepared*
snapshot (``prepare_commit(txid)``) and the *committed* snapshot (``commit(txid)``); ``rollback()`` drops the
prepared snapshot and every change since the last commit.  The in-memory state keeps its prepared and committed
snapshots in a :class:`MemoryStore`, which the ``"memory"`` provider keeps per topology and task for the life of
the process, so a task restarted in the same process (a worker of a ``LocalCluster``) recovers its last
committed state, while a topology killed and submitted again starts empty, as Storm's in-memory state does.
A compiled build compiles this module (``get`` and ``put`` run for every tuple of a stateful bolt).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from storm_py.errors import StateBackendError
from storm_py.protocol.codec import pack_value, unpack_value

#: the txid of a state nothing has been committed to yet
NO_TXID = -1


@dataclass
class MemoryStore:
    """The durable part of an in-memory state: the committed snapshot and the prepared one, with their txids."""

    committed: dict[Any, Any] = field(default_factory=dict)
    committed_txid: int = NO_TXID
    prepared: dict[Any, Any] | None = None
    prepared_txid: int = NO_TXID
    lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)  # a threading.Lock


@dataclass(frozen=True)
class _PackedKey:
    """An unhashable key (a list, a dict: the codec carries them) kept by its msgpack body."""

    body: bytes


def _unpacked(key: Any) -> Any:
    return unpack_value(key.body) if type(key) is _PackedKey else key


@mypyc_attr(allow_interpreted_subclasses=True)  # providers subclass it
class KeyValueState:
    """Storm's ``KeyValueState``: a map with two-phase commits, in memory unless a provider says otherwise.

    ``put``/``get``/``delete`` act on the current map; iteration yields ``(key, value)`` pairs.  Values are kept
    as given (a value changed in place after ``put`` changes what a later snapshot holds: put a new value).
    Providers subclass it (the Redis state) and override every method.
    """

    def __init__(self, store: MemoryStore | None = None) -> None:
        self._store = store if store is not None else MemoryStore()
        with self._store.lock:
            self._current: dict[Any, Any] = dict(self._store.committed)

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value`` in the current map."""
        try:
            self._current[key] = value
        except TypeError:  # unhashable: kept by its encoding
            self._current[_PackedKey(pack_value(key))] = value

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        """``put`` every ``(key, value)`` pair of ``entries``, in their order (one bulk update of the current
        map)."""
        pairs = entries if isinstance(entries, list) else list(entries)
        try:
            self._current.update(pairs)
        except TypeError:  # an unhashable key: every pair is put by itself (those before it again, unchanged)
            for key, value in pairs:
                self.put(key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        """The current value of ``key``, or ``default``."""
        try:
            return self._current.get(key, default)
        except TypeError:
            return self._current.get(_PackedKey(pack_value(key)), default)

    def delete(self, key: Any) -> None:
        """Remove ``key`` from the current map (nothing happens when it is absent)."""
        try:
            self._current.pop(key, None)
        except TypeError:
            self._current.pop(_PackedKey(pack_value(key)), None)

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter([(_unpacked(k), v) for k, v in self._current.items()])

    def __len__(self) -> int:
        return len(self._current)

    def prepare_commit(self, txid: int) -> None:
        """Snapshot the current map as transaction ``txid`` (phase one); a later prepare replaces it."""
        store = self._store
        with store.lock:
            if store.prepared is not None and txid < store.prepared_txid:
                raise StateBackendError(
                    f"cannot prepare txid {txid}: txid {store.prepared_txid} is already prepared", txid=txid
                )
            store.prepared = dict(self._current)
            store.prepared_txid = txid

    def commit(self, txid: int | None = None) -> None:
        """Make the prepared snapshot of ``txid`` the committed one (phase two); committing a txid already
        committed does nothing.  Without ``txid``, commit the current map at once (no prepare)."""
        store = self._store
        with store.lock:
            if txid is None:
                store.committed = dict(self._current)
                return
            if store.prepared is not None and store.prepared_txid == txid:
                store.committed, store.committed_txid = store.prepared, txid
                store.prepared, store.prepared_txid = None, NO_TXID
            elif txid != store.committed_txid:
                raise StateBackendError(
                    f"cannot commit txid {txid}: it was not prepared (prepared: "
                    f"{store.prepared_txid if store.prepared is not None else 'none'}, "
                    f"committed: {store.committed_txid})",
                    txid=txid,
                )

    def rollback(self) -> None:
        """Drop the prepared snapshot and every change since the last commit."""
        store = self._store
        with store.lock:
            store.prepared, store.prepared_txid = None, NO_TXID
            self._current = dict(store.committed)

    def committed_txid(self) -> int:
        """The txid of the last commit (``-1``: none yet)."""
        return self._store.committed_txid

    def prepared_txid(self) -> int | None:
        """The txid prepared and not yet committed or rolled back (``None``: none)."""
        store = self._store
        return store.prepared_txid if store.prepared is not None else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} keys, committed txid {self.committed_txid()})"


class MemoryStores:
    """The ``"memory"`` provider's stores, one per ``(topology id, namespace)``, for the life of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: dict[tuple[str, str], MemoryStore] = {}

    def store(self, topology_id: str, namespace: str) -> MemoryStore:
        """The store of one task of one topology (created empty the first time)."""
        with self._lock:
            key = (topology_id, namespace)
            found = self._stores.get(key)
            if found is None:
                found = self._stores[key] = MemoryStore()
            return found

    def forget(self, topology_id: str) -> None:
        """Drop every store of a topology."""
        with self._lock:
            for key in [k for k in self._stores if k[0] == topology_id]:
                del self._stores[key]


#: the process's in-memory stores
MEMORY_STORES = MemoryStores()
