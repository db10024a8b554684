"""Trident state: the interfaces, map states over the transactional map wrappers, and ``MemoryMapState``.

A map state is a backing map (``multi_get``/``multi_put``) seen through one of the wrappers of
:mod:`storm_py.transactional.map_state` — :class:`~storm_py.transactional.map_state.OpaqueMap` storing
``OpaqueValue``, :class:`~storm_py.transactional.map_state.TransactionalMap` storing ``TransactionalValue``,
or :class:`~storm_py.transactional.map_state.NonTransactionalMap` — so a replayed batch is applied exactly
once (the first two).  :class:`MapState` adds Trident's ``State`` life cycle and Storm's ``Snapshottable``
face (``get``/``set``/``update`` of one global key) that ``persistent_aggregate`` without grouping uses;
:class:`CachedMap` is Storm's LRU cache in front of a backing map.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from storm_py.errors import InvalidTopologyException
from storm_py.transactional.map_state import (
    BackingMap,
    MemoryBackingMap,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    TransactionalMap,
    TransactionalValue,
)

#: the key ``persistent_aggregate`` without grouping keeps its one value under (Storm's global key)
GLOBAL_KEY = ("$GLOBAL$",)

KINDS = ("opaque", "transactional", "non_transactional")


class State:
    """Storm's ``State``: ``begin_commit(txid)`` before a batch's updates, ``commit(txid)`` after them."""

    def begin_commit(self, txid: int) -> None:
        """Updates from now on belong to batch ``txid``."""

    def commit(self, txid: int) -> None:
        """Batch ``txid`` is applied."""


class StateFactory:
    """Storm's ``StateFactory``: one state per partition (task) of the bolt holding it."""

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> State:
        """The state of partition ``partition_index`` of ``num_partitions``."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_state")


class BaseStateUpdater:
    """Storm's ``BaseStateUpdater``: applies a batch's tuples to the state; emits go to the new-values stream."""

    def update_state(self, state: Any, tuples: list[Any], collector: Any) -> None:
        """Apply the batch's tuples (projected to the persisted fields)."""
        raise NotImplementedError(f"{type(self).__name__} must implement update_state")


class BaseQueryFunction:
    """Storm's ``BaseQueryFunction``: ``batch_retrieve`` looks a batch's tuples up at once, then ``execute``
    runs per tuple with its result (emits are appended to the tuple)."""

    def batch_retrieve(self, state: Any, tuples: list[Any]) -> list[Any]:
        """One result per tuple."""
        raise NotImplementedError(f"{type(self).__name__} must implement batch_retrieve")

    def execute(self, tuple: Any, result: Any, collector: Any) -> None:
        """Emit what the result of one tuple yields."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute")


class CachedMap:
    """Storm's ``CachedMap``: an LRU cache of ``cache_size`` entries in front of a backing map (write-through)."""

    def __init__(self, backing: BackingMap[Any, Any], cache_size: int = 1000) -> None:
        self.backing = backing
        self.cache_size = max(0, int(cache_size))
        self._cache: OrderedDict[Any, Any] = OrderedDict()

    def _remember(self, key: Any, value: Any) -> None:
        if self.cache_size == 0:
            return
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        out: list[Any] = [None] * len(keys)
        missing: list[int] = []
        for i, key in enumerate(keys):
            if key in self._cache:
                self._cache.move_to_end(key)
                out[i] = self._cache[key]
            else:
                missing.append(i)
        if missing:
            fetched = self.backing.multi_get([keys[i] for i in missing])
            for i, value in zip(missing, fetched, strict=True):
                out[i] = value
                if value is not None:
                    self._remember(keys[i], value)
        return out

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        self.backing.multi_put(keys, values)
        for key, value in zip(keys, values, strict=True):
            self._remember(key, value)


class MapState(State):
    """A Trident map state: ``multi_get``/``multi_update``/``multi_put`` of tuple keys, and Storm's
    ``Snapshottable`` ``get``/``set``/``update`` of :data:`GLOBAL_KEY`."""

    def __init__(self, backing: BackingMap[Any, Any], kind: str) -> None:
        if kind not in KINDS:
            raise InvalidTopologyException(f"map state kind must be one of {list(KINDS)}, got {kind!r}")
        self.kind = kind
        self.map: OpaqueMap | TransactionalMap | NonTransactionalMap
        if kind == "opaque":
            self.map = OpaqueMap(backing)
        elif kind == "transactional":
            self.map = TransactionalMap(backing)
        else:
            self.map = NonTransactionalMap(backing)

    def begin_commit(self, txid: int) -> None:
        self.map.begin_commit(txid)

    def commit(self, txid: int) -> None:
        self.map.commit(txid)

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        """The current values (None for missing keys)."""
        return self.map.multi_get(keys)

    def multi_update(self, keys: Sequence[Any], updaters: Sequence[Callable[[Any], Any]]) -> list[Any]:
        """Apply ``updaters[i]`` to each key's value (None when missing) once for this batch."""
        return self.map.multi_update(keys, updaters)

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        """Set values for this batch."""
        self.map.multi_put(keys, values)

    def get(self) -> Any:
        """The global value."""
        return self.map.multi_get([GLOBAL_KEY])[0]

    def set(self, value: Any) -> None:
        """Set the global value for this batch."""
        self.map.multi_put([GLOBAL_KEY], [value])

    def update(self, updater: Callable[[Any], Any]) -> Any:
        """Update the global value for this batch; return the new value."""
        return self.map.multi_update([GLOBAL_KEY], [updater])[0]


_BACKINGS: dict[str, MemoryBackingMap[Any, Any]] = {}
_BACKINGS_LOCK = threading.Lock()


def _memory_backing(state_id: str) -> MemoryBackingMap[Any, Any]:
    with _BACKINGS_LOCK:
        backing = _BACKINGS.get(state_id)
        if backing is None:
            backing = _BACKINGS[state_id] = MemoryBackingMap()
        return backing


class MemoryMapStateFactory(StateFactory):
    """Makes :class:`MapState` over one in-process map per factory, shared by every partition of the process
    (Storm's ``MemoryMapState``: for tests and local runs)."""

    def __init__(self, kind: str = "opaque") -> None:
        if kind not in KINDS:
            raise InvalidTopologyException(f"MemoryMapState kind must be one of {list(KINDS)}, got {kind!r}")
        self.kind = kind
        self.state_id = uuid.uuid4().hex

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> MapState:
        return MapState(_memory_backing(self.state_id), self.kind)

    def stored(self) -> dict[Any, Any]:
        """Everything stored, as stored (``OpaqueValue`` / ``TransactionalValue`` for those kinds)."""
        return _memory_backing(self.state_id).snapshot()

    def values(self) -> dict[Any, Any]:
        """The current value of every key (the global key of an ungrouped aggregate is :data:`GLOBAL_KEY`)."""
        out: dict[Any, Any] = {}
        for key, stored in self.stored().items():
            if isinstance(stored, OpaqueValue):
                out[key] = stored.curr
            elif isinstance(stored, TransactionalValue):
                out[key] = stored.val
            else:
                out[key] = stored
        return out


class MemoryMapState:
    """Storm's ``MemoryMapState``: ``MemoryMapState.factory(kind="opaque")``."""

    @staticmethod
    def factory(kind: str = "opaque") -> MemoryMapStateFactory:
        """A factory of in-memory map states of ``kind``: opaque, transactional or non_transactional."""
        return MemoryMapStateFactory(kind)
