"""This module owns a ZooKeeper session's recovery for :class:`~storm_py.cluster_state.zk.KazooStorage`: connection
state and listeners, and what a new session restores (this client's ephemeral nodes, then every kept watch).

The storage's thread (a :class:`~storm_py.cluster_state.dispatch.CallbackThread`) does the bookkeeping after each state
change, before connection listeners hear of it; whatever fails there (the connection dropped again) is retried
on the next reconnection or idle tick.  Talking to ZooKeeper is the storage's: this module never imports kazoo.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from storm_py.cluster_state import znodes
from storm_py.cluster_state.dispatch import CallbackThread
from storm_py.cluster_state.storage import ConnectionListeners, ConnectionState
from storm_py.cluster_state.zk_watches import KeptWatch, WatchRegistry
from storm_py.errors import StateError

log = logging.getLogger(__name__)


class EphemeralBook:
    """The non-sequential ephemeral nodes this client made: path -> (latest data, the session that last created
    it, None if unknown)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[bytes, int | None]] = {}

    def update(self, path: str, data: bytes) -> bool:
        """New data for ``path`` if it is one of ours; whether it is."""
        with self._lock:
            if path not in self._nodes:
                return False
            self._nodes[path] = (data, self._nodes[path][1])
            return True

    def track(self, path: str, data: bytes) -> None:
        """``path`` is ours, holding ``data`` (its session unchanged while the write is under way)."""
        with self._lock:
            previous = self._nodes.get(path)
            self._nodes[path] = (data, None if previous is None else previous[1])

    def created(self, path: str, data: bytes, session: int | None) -> None:
        with self._lock:
            self._nodes[path] = (data, session)

    def settled(self, path: str, session: int) -> None:
        """``path`` is now an ephemeral node of ``session`` (if still ours)."""
        with self._lock:
            if path in self._nodes:
                self._nodes[path] = (self._nodes[path][0], session)

    def forget_within(self, path: str) -> None:
        with self._lock:
            for tracked in [p for p in self._nodes if znodes.is_within(p, path)]:
                del self._nodes[tracked]

    def to_restore(self, session: int | None) -> list[tuple[str, bytes]]:
        """``(path, data)`` of the nodes ``session`` does not own yet, in path order."""
        with self._lock:
            nodes = dict(self._nodes)
        return [(p, data) for p, (data, owner) in sorted(nodes.items()) if session is None or owner != session]


class SessionKeeper:
    """One storage's connection state, listeners and recovery after each reconnection.

    Args:
        name: the storage thread's name.
        hosts: the connect string (for log lines).
        live_session: the current session's id, None while disconnected.
        restore: re-creates one ephemeral node for the current session (on the storage thread; raises StateError).
        watches: the storage's kept watches.
        closed: whether the storage is closed.
    """

    def __init__(self, name: str, hosts: str, live_session: Callable[[], int | None],
                 restore: Callable[[str, bytes], None], watches: WatchRegistry, closed: Callable[[], bool]) -> None:
        self._hosts = hosts
        self._live_session = live_session
        self._restore = restore
        self._watches = watches
        self._closed = closed
        self.ephemerals = EphemeralBook()
        self.listeners = ConnectionListeners()
        #: set while connected (operations wait on it; the storage sets it when closing, to wake them)
        self.connected = threading.Event()
        #: set when a session was lost (what ``expire_session`` waits for)
        self.lost = threading.Event()
        self.state: ConnectionState = "lost"
        self.session_id: int | None = None
        self._needs_resync = False
        #: whether the connection was down since the last ``connected`` handled (the first one is no reconnection)
        self._was_down = False
        self.dispatcher = CallbackThread(name, idle=self._on_idle)

    def on_state(self, state: ConnectionState) -> None:
        """The client's new state, on its connection thread: recorded, then handled on the storage thread."""
        if state == "lost":
            self.lost.set()
        if self._closed():
            return
        self.state = state
        if state == "connected":
            self.connected.set()
        else:
            self.connected.clear()
        session = self._live_session() if state == "connected" else None
        self.dispatcher.post(functools.partial(self._handle_state, state, session))

    def refresh(self, watch: KeptWatch) -> None:
        """On the storage thread: re-arm one kept watch (a resync follows if it cannot be)."""
        if not self._watches.refresh(watch):
            self._needs_resync = True

    def _handle_state(self, state: ConnectionState, session: int | None) -> None:
        if self._closed():
            return
        if state == "connected":
            previous, self.session_id = self.session_id, session
            if previous is not None and session != previous:
                log.warning(
                    "ZooKeeper session 0x%x expired; new session 0x%x: restoring ephemeral nodes and watches",
                    previous,
                    session or 0,
                )
            elif self._was_down:
                log.info("reconnected to ZooKeeper %s", self._hosts)
            self._was_down = False
            self.resync()
        else:
            self._was_down = True
            log.warning("ZooKeeper connection %s (%s)", state, self._hosts)
        for listener in self.listeners.snapshot():
            try:
                listener(state)
            except Exception:
                log.exception("connection listener failed")

    def resync(self) -> None:
        """Restore this client's ephemeral nodes (when the session changed) and re-arm every watch."""
        self._needs_resync = False
        for path, data in self.ephemerals.to_restore(self._live_session()):
            try:
                self._restore(path, data)
                log.info("re-created ephemeral node %s", path)
            except StateError as err:
                log.warning("cannot re-create ephemeral node %s yet: %s", path, err)
                self._needs_resync = True
        for watch in self._watches.snapshot():
            if not self._watches.refresh(watch):
                self._needs_resync = True

    def _on_idle(self) -> None:
        if self._needs_resync and self.connected.is_set() and not self._closed():
            self.resync()
