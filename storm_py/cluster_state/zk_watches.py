"""This module owns the watches a :class:`~storm_py.cluster_state.zk.KazooStorage` keeps armed: their registry and
refresh.

A ZooKeeper watch fires once and says nothing of what happened while the connection was down.  A kept watch
remembers a key of the state it last saw (``(czxid, mzxid)`` of a node, ``(czxid, pzxid)`` of a node's children,
``None`` while the node is missing); every event and every reconnection re-arms it, and its callback runs when
the key changed.  Arming is the storage's (it talks to ZooKeeper, and turns its errors into
:class:`~storm_py.errors.StateError`); this module never imports kazoo.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Literal

from storm_py.cluster_state.storage import WatchCallback
from storm_py.errors import StateError

log = logging.getLogger(__name__)

WatchKind = Literal["data", "children"]
#: what a watch saw last: ``(czxid, mzxid)`` (data) or ``(czxid, pzxid)`` (children); None: no node
Key = tuple[int, int] | None
#: sets ZooKeeper's watcher of a watch and returns its key (``internal``: the storage thread's bookkeeping, which
#: does not wait for a connection); raises StateError
Arm = Callable[["KeptWatch", bool], Key]


class KeptWatch:
    """One watch kept armed by its :class:`WatchRegistry` (a :class:`~storm_py.cluster_state.storage.Watch`)."""

    def __init__(self, registry: WatchRegistry, kind: WatchKind, path: str, full: str,
                 callback: WatchCallback) -> None:
        self._registry = registry
        self.kind = kind
        self._path = path
        #: the path on the server (under the storage's chroot)
        self.full = full
        self.callback = callback
        self.key: Key = None
        self.lock = threading.Lock()
        self.cancelled = False

    @property
    def path(self) -> str:
        return self._path

    def cancel(self) -> None:
        self.cancelled = True
        self._registry.forget(self)

    def on_event(self, event: Any) -> None:
        """ZooKeeper's watcher of this watch (on the client's thread): the registry decides what to do."""
        if not self.cancelled:
            self._registry.on_event(self, event)


class WatchRegistry:
    """The watches of one storage: registered before they are armed, so a reconnection in between re-arms them.

    Args:
        arm: sets a watch's watcher and returns its key.
        on_event: what an event of a watch's watcher does (the storage posts a :meth:`refresh` to its thread).
        closed: whether the storage is closed (nothing is re-armed then).
    """

    def __init__(self, arm: Arm, on_event: Callable[[KeptWatch, Any], None], closed: Callable[[], bool]) -> None:
        self._arm = arm
        self.on_event = on_event
        self._closed = closed
        self._lock = threading.Lock()
        self._watches: set[KeptWatch] = set()

    def keep(self, kind: WatchKind, path: str, full: str, callback: WatchCallback) -> KeptWatch:
        """A new watch, armed; raises StateError (and keeps nothing) when it cannot be armed."""
        watch = KeptWatch(self, kind, path, full, callback)
        with self._lock:
            self._watches.add(watch)
        try:
            with watch.lock:
                watch.key = self._arm(watch, False)
        except StateError:
            watch.cancel()
            raise
        return watch

    def forget(self, watch: KeptWatch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def snapshot(self) -> list[KeptWatch]:
        with self._lock:
            return list(self._watches)

    def refresh(self, watch: KeptWatch) -> bool:
        """On the storage thread: re-arm ``watch`` and notify if its state changed since it last looked.

        False when it could not be re-armed (the connection dropped again): the next resync tries again.
        """
        with watch.lock:
            if watch.cancelled or self._closed():
                return True
            try:
                key = self._arm(watch, True)
            except StateError as err:
                log.debug("cannot re-arm the watch on %s yet: %s", watch.path, err)
                return False
            changed, watch.key = key != watch.key, key
        if changed and not watch.cancelled:
            try:
                watch.callback(watch.path)
            except Exception:
                log.exception("watch callback for %s failed", watch.path)
        return True
