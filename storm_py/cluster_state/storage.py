"""This module owns the byte-level contract of the cluster-state store: :class:`StateStorage` and its handles.

Two implementations exist: :class:`storm_py.cluster_state.zk.KazooStorage` (ZooKeeper) and
:class:`storm_py.cluster_state.memory.MemoryStorage` (an in-process twin).  Both pass the same contract suite.
Typed access (JSON records, Storm's layout) lives one level up, in :mod:`storm_py.cluster_state.cluster_state`.

Watch semantics, common to both implementations:

* ``watch_data(path, cb)`` calls ``cb(path)`` after the node at ``path`` is created, changed or deleted;
* ``watch_children(path, cb)`` calls ``cb(path)`` after a child of ``path`` is created or deleted (the
  creation or deletion of ``path`` itself may notify too);
* a watch is not called for the state it found when it was registered; it stays armed until cancelled, across
  reconnections and new sessions;
* notifications may coalesce (several quick changes, one call) and may be spurious (after a reconnection):
  a callback re-reads what it cares about;
* callbacks run on the storage's own thread, one at a time and in order; they must return quickly and should
  only post an event to their owner's loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Literal, Protocol, runtime_checkable

#: The connection states reported to connection listeners (Curator's simplified states).
#: ``suspended``: the connection dropped, the session may still be alive; ``lost``: the session expired and
#: this client's ephemeral nodes are gone (they are re-created when a new session is ``connected``).
ConnectionState = Literal["connected", "suspended", "lost"]

WatchCallback = Callable[[str], None]
ConnectionListener = Callable[[ConnectionState], None]
LeadershipListener = Callable[[bool], None]


class ConnectionListeners:
    """The connection listeners registered with one storage (thread-safe; both implementations keep one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[ConnectionListener] = []

    def add(self, callback: ConnectionListener) -> None:
        """Register ``callback``."""
        with self._lock:
            self._items.append(callback)

    def remove(self, callback: ConnectionListener) -> None:
        """Unregister ``callback`` (no error when it is not registered)."""
        with self._lock:
            if callback in self._items:
                self._items.remove(callback)

    def snapshot(self) -> list[ConnectionListener]:
        """The listeners now, to call outside the lock."""
        with self._lock:
            return list(self._items)


@runtime_checkable
class Watch(Protocol):
    """A registered watch; it fires until cancelled."""

    @property
    def path(self) -> str:
        """The watched path."""
        ...

    def cancel(self) -> None:
        """Stop notifying; idempotent."""
        ...


@runtime_checkable
class LeaderElection(Protocol):
    """One candidate in a leader election (ephemeral-sequential candidates, the lowest leads)."""

    @property
    def identifier(self) -> str:
        """This candidate's identifier (what :meth:`leader_id` returns while it leads)."""
        ...

    def is_leader(self) -> bool:
        """Whether this candidate leads now: its candidate node is the lowest and the connection is up."""
        ...

    def leader_id(self) -> str | None:
        """The identifier of the current leader (this candidate or another), or None if there is none."""
        ...

    def add_listener(self, callback: LeadershipListener) -> None:
        """Call ``callback(is_leader)`` on the storage thread when this candidate gains or loses the lead."""
        ...

    def cancel(self) -> None:
        """Leave the election (giving up leadership); idempotent."""
        ...


@runtime_checkable
class StateStorage(Protocol):
    """A client session on a hierarchical store of byte values (ZooKeeper's data model).

    Paths are absolute (``/a/b``).  Every failure is a :class:`storm_py.errors.StateError` whose fields name
    the ``path``, the ``op`` and, when known, a ``reason`` (``no_node``, ``node_exists``, ``not_empty``,
    ``ephemeral_parent``, ``connection``, ``closed``).
    """

    def get(self, path: str) -> bytes | None:
        """The data at ``path``, or None if there is no such node."""
        ...

    def set(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path``, creating it and its missing parents (persistent) if needed."""
        ...

    def set_if_parent(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` (persistent) only while its parent exists, never creating the parent; whether
        it was written.  A follower registering under a node another session may delete uses it, so a delete is
        never undone by a late write."""
        ...

    def set_ephemeral(self, path: str, data: bytes) -> None:
        """Create or overwrite ``path`` as an ephemeral node of this session.

        A node left at ``path`` by another (typically a previous, not yet expired) session is replaced.  The
        node is re-created with its latest data after a session loss.
        """
        ...

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, sequential: bool = False) -> str:
        """Create a node (and its missing parents, persistent) and return its path.

        With ``sequential`` the returned path is ``path`` plus a 10-digit counter.  Ephemeral nodes vanish
        with the session; non-sequential ephemeral nodes are re-created after a new session.

        Raises:
            StateError: ``reason="node_exists"`` if the node exists, ``"ephemeral_parent"`` if its parent is
                ephemeral.
        """
        ...

    def exists(self, path: str) -> bool:
        """Whether a node exists at ``path``."""
        ...

    def children(self, path: str) -> list[str]:
        """The names of ``path``'s children, sorted; empty if ``path`` does not exist."""
        ...

    def delete(self, path: str) -> None:
        """Delete ``path`` and everything below it; nothing happens if it does not exist."""
        ...

    def watch_data(self, path: str, callback: WatchCallback) -> Watch:
        """Call ``callback(path)`` after each creation, change or deletion of ``path``."""
        ...

    def watch_children(self, path: str, callback: WatchCallback) -> Watch:
        """Call ``callback(path)`` after each change of the set of ``path``'s children."""
        ...

    def add_connection_listener(self, callback: ConnectionListener) -> None:
        """Call ``callback(state)`` on each connection state change (on the storage thread)."""
        ...

    def remove_connection_listener(self, callback: ConnectionListener) -> None:
        """Undo :meth:`add_connection_listener`; unknown callbacks are ignored."""
        ...

    def connection_state(self) -> ConnectionState:
        """The connection state now (``lost`` once closed)."""
        ...

    def elect(self, path: str, identifier: str) -> LeaderElection:
        """Enter the leader election held under ``path`` as ``identifier``."""
        ...

    def stop_waiting(self) -> None:
        """From now on an operation that finds no connection fails at once (a :class:`StateError`) instead of
        waiting for one, and so do those waiting now: the owner is shutting down.  Operations on a live connection
        still run; idempotent."""
        ...

    def close(self) -> None:
        """End the session (its ephemeral nodes vanish) and stop its thread; idempotent."""
        ...
