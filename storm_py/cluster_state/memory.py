"""This module owns the in-process twin of ZooKeeper: :class:`MemoryStore` (the tree) and
:class:`MemoryStorage` (one client session on it), used by the LocalCluster and by tests.

It follows ZooKeeper's data model closely enough for the contract suite: ephemeral nodes belong to a session
and cannot have children, sequential names carry the parent's 10-digit child counter, watches fire after
changes, and every node carries the ACL its creator's :class:`~storm_py.cluster_state.acl.AclPolicy` gave it, checked
on each operation with ZooKeeper's rules (reason ``no_auth`` when refused).
:meth:`MemoryStorage.expire_session` plays a session expiry: the session's ephemeral nodes vanish
(other sessions' watches fire), listeners see ``lost``, then a new session re-creates the non-sequential
ephemeral nodes and listeners see ``connected``.  All methods are thread-safe; each session runs its callbacks
on its own storage thread.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
from dataclasses import dataclass, field
from typing import Literal

from storm_py.cluster_state import acl as acls
from storm_py.cluster_state import znodes
from storm_py.cluster_state.dispatch import CallbackThread
from storm_py.cluster_state.election import LatchElection
from storm_py.cluster_state.storage import (
    ConnectionListener,
    ConnectionListeners,
    ConnectionState,
    LeaderElection,
    WatchCallback,
)
from storm_py.errors import StateError

log = logging.getLogger(__name__)

_WatchKind = Literal["data", "children"]


@dataclass(slots=True)
class _Node:
    data: bytes
    owner: int | None = None  # session id of an ephemeral node
    acl: acls.Acl = acls.OPEN_ACL
    children: set[str] = field(default_factory=set)
    cversion: int = 0  # bumped on every child creation and deletion; names sequential children


class _MemoryWatch:
    """A watch registered by one session on the shared store."""

    def __init__(self, storage: MemoryStorage, kind: _WatchKind, path: str, callback: WatchCallback) -> None:
        self._storage = storage
        self.kind = kind
        self._path = path
        self._callback = callback
        self.cancelled = False

    @property
    def path(self) -> str:
        return self._path

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self._storage.store._remove_watch(self)

    def fire(self) -> None:
        if not self.cancelled:
            self._storage._dispatcher.post(self._run)

    def _run(self) -> None:
        if not self.cancelled:
            self._callback(self._path)


@dataclass(frozen=True, slots=True)
class _Who:
    """The identities of the session doing an operation, and the ACL its new nodes get."""

    ids: frozenset[str]
    acl_for: acls.AclFor
    #: the ACL of a missing parent created on the way
    parent_acl_for: acls.AclFor


class MemoryStore:
    """The shared tree of nodes; sessions are :class:`MemoryStorage` objects made with :meth:`session`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {znodes.ROOT: _Node(b"")}
        self._watches: dict[tuple[_WatchKind, str], list[_MemoryWatch]] = {}
        self._session_ids = itertools.count(1)

    def session(self) -> MemoryStorage:
        """A new client session on this store."""
        return MemoryStorage(self)

    def dump(self) -> dict[str, bytes]:
        """Every node's data by path (for debugging and tests)."""
        with self._lock:
            return {path: node.data for path, node in sorted(self._nodes.items())}

    # ------------------------------------------------------------------- operations (path already normalized)
    def _new_session_id(self) -> int:
        return next(self._session_ids)

    def _check(self, who: _Who, path: str, perm: int, op: str, target: str | None = None) -> None:
        """Raise ``no_auth`` unless ``who`` has ``perm`` on the node at ``path`` (which must exist)."""
        if not acls.allowed(self._nodes[path].acl, who.ids, perm):
            target = target or path
            raise StateError(
                f"cannot {op} {target}: not authorized (ACL of {path})", path=target, op=op, reason="no_auth"
            )

    def _get(self, path: str, who: _Who) -> bytes | None:
        with self._lock:
            node = self._nodes.get(path)
            if node is None:
                return None
            self._check(who, path, acls.READ, "get")
            return node.data

    def _exists(self, path: str) -> bool:
        with self._lock:
            return path in self._nodes

    def _children(self, path: str, who: _Who) -> list[str]:
        with self._lock:
            node = self._nodes.get(path)
            if node is None:
                return []
            self._check(who, path, acls.READ, "children")
            return sorted(node.children)

    def _create(self, path: str, data: bytes, owner: int | None, sequential: bool, who: _Who) -> str:
        with self._lock:
            for ancestor in znodes.ancestors(path):
                if ancestor not in self._nodes:
                    self._check(who, znodes.parent(ancestor), acls.CREATE, "create", path)
                    self._add(ancestor, b"", None, who.parent_acl_for(ancestor))
            self._check(who, znodes.parent(path), acls.CREATE, "create", path)
            parent = self._nodes[znodes.parent(path)]
            if parent.owner is not None:
                raise StateError(
                    f"cannot create {path}: its parent is ephemeral",
                    path=path,
                    op="create",
                    reason="ephemeral_parent",
                )
            if sequential:
                path = znodes.join(
                    znodes.parent(path), znodes.sequential_name(znodes.basename(path), parent.cversion)
                )
            if path in self._nodes:
                raise StateError(
                    f"cannot create {path}: node exists", path=path, op="create", reason="node_exists"
                )
            self._add(path, data, owner, who.acl_for(path))
            return path

    def _set(self, path: str, data: bytes, owner: int | None, who: _Who) -> None:
        """Overwrite ``path``; create it (persistent, or ephemeral for ``owner``) if absent."""
        with self._lock:
            node = self._nodes.get(path)
            if node is None:
                self._create(path, data, owner, False, who)
                return
            self._check(who, path, acls.WRITE, "set")
            node.data = data
            self._fire("data", path)

    def _set_ephemeral(self, path: str, data: bytes, owner: int, who: _Who) -> None:
        with self._lock:
            node = self._nodes.get(path)
            if node is not None and node.owner == owner:
                self._check(who, path, acls.WRITE, "set")
                node.data = data
                self._fire("data", path)
                return
            if node is not None:
                self._check(who, znodes.parent(path), acls.DELETE, "set", path)
                if node.children:
                    raise StateError(
                        f"cannot make {path} ephemeral: it has children",
                        path=path,
                        op="set",
                        reason="not_empty",
                    )
                self._remove(path)
            self._create(path, data, owner, False, who)

    def _delete(self, path: str, who: _Who) -> None:
        with self._lock:
            if path == znodes.ROOT:
                for child in self._children(path, who):
                    self._delete(znodes.join(path, child), who)
                return
            node = self._nodes.get(path)
            if node is None:
                return
            self._check(who, znodes.parent(path), acls.DELETE, "delete", path)
            for child in self._children(path, who):
                self._delete(znodes.join(path, child), who)
            self._remove(path)

    def _drop_session(self, owner: int) -> None:
        """Delete the ephemeral nodes of session ``owner``."""
        with self._lock:
            for path in sorted(path for path, node in self._nodes.items() if node.owner == owner):
                self._remove(path)

    # ------------------------------------------------------------------------------------------- watches
    def _add_watch(self, watch: _MemoryWatch) -> None:
        with self._lock:
            self._watches.setdefault((watch.kind, watch.path), []).append(watch)

    def _remove_watch(self, watch: _MemoryWatch) -> None:
        with self._lock:
            watches = self._watches.get((watch.kind, watch.path), [])
            if watch in watches:
                watches.remove(watch)
            if not watches:
                self._watches.pop((watch.kind, watch.path), None)

    def _remove_watches_of(self, storage: MemoryStorage) -> None:
        with self._lock:
            mine = [w for watches in self._watches.values() for w in watches if w._storage is storage]
            for watch in mine:
                watch.cancel()

    # ------------------------------------------------------------------------------------------ internals
    def _add(self, path: str, data: bytes, owner: int | None, acl: acls.Acl) -> None:
        parent_path = znodes.parent(path)
        parent = self._nodes[parent_path]
        parent.children.add(znodes.basename(path))
        parent.cversion += 1
        self._nodes[path] = _Node(data, owner, acl=acl)
        self._fire("data", path)
        self._fire("children", path)
        self._fire("children", parent_path)

    def _remove(self, path: str) -> None:
        parent_path = znodes.parent(path)
        parent = self._nodes[parent_path]
        parent.children.discard(znodes.basename(path))
        parent.cversion += 1
        del self._nodes[path]
        self._fire("data", path)
        self._fire("children", path)
        self._fire("children", parent_path)

    def _fire(self, kind: _WatchKind, path: str) -> None:
        for watch in list(self._watches.get((kind, path), ())):
            watch.fire()


class MemoryStorage:
    """One client session on a :class:`MemoryStore`; a :class:`~storm_py.cluster_state.storage.StateStorage`."""

    def __init__(self, store: MemoryStore | None = None, policy: acls.AclPolicy | None = None) -> None:
        self.store = store if store is not None else MemoryStore()
        self.policy = policy if policy is not None else acls.AclPolicy()
        self._who = _Who(frozenset(self.policy.identities), self.policy.acl_for, self.policy.parent_acl_for)
        self._session = self.store._new_session_id()
        self._closed = False
        self._lock = threading.Lock()
        self._listeners = ConnectionListeners()
        # The non-sequential ephemeral nodes this client made, with their latest data: what a new session
        # re-creates (guarded by the store's lock).
        self._ephemerals: dict[str, bytes] = {}
        self._dispatcher = CallbackThread(f"memory-storage-{self._session}")

    @property
    def session_id(self) -> int:
        """The current session's id (changes after :meth:`expire_session`)."""
        return self._session

    # ------------------------------------------------------------------------------------------- data
    def get(self, path: str) -> bytes | None:
        return self.store._get(self._path("get", path), self._who)

    def set(self, path: str, data: bytes) -> None:
        path = self._path("set", path)
        with self.store._lock:
            if path in self._ephemerals:
                # A node of ours stays ephemeral, even when (re-)created by a write.
                self._ephemerals[path] = bytes(data)
                self.store._set_ephemeral(path, bytes(data), self._session, self._who)
            else:
                self.store._set(path, bytes(data), None, self._who)

    def set_if_parent(self, path: str, data: bytes) -> bool:
        path = self._path("set", path)
        with self.store._lock:
            if znodes.parent(path) not in self.store._nodes:
                return False
            self.store._set(path, bytes(data), None, self._who)
            return True

    def set_ephemeral(self, path: str, data: bytes) -> None:
        path = self._path("set", path)
        with self.store._lock:
            self._ephemerals[path] = bytes(data)
            self.store._set_ephemeral(path, bytes(data), self._session, self._who)

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, sequential: bool = False) -> str:
        path = self._path("create", path)
        if path == znodes.ROOT:
            raise StateError("cannot create the root", path=path, op="create", reason="node_exists")
        with self.store._lock:
            owner = self._session if ephemeral else None
            created = self.store._create(path, bytes(data), owner, sequential, self._who)
            if ephemeral and not sequential:
                self._ephemerals[created] = bytes(data)
            return created

    def exists(self, path: str) -> bool:
        return self.store._exists(self._path("exists", path))

    def children(self, path: str) -> list[str]:
        return self.store._children(self._path("children", path), self._who)

    def delete(self, path: str) -> None:
        path = self._path("delete", path)
        with self.store._lock:
            for tracked in [p for p in self._ephemerals if znodes.is_within(p, path)]:
                del self._ephemerals[tracked]
            self.store._delete(path, self._who)

    # ---------------------------------------------------------------------------------------- watches
    def watch_data(self, path: str, callback: WatchCallback) -> _MemoryWatch:
        return self._watch("data", path, callback)

    def watch_children(self, path: str, callback: WatchCallback) -> _MemoryWatch:
        return self._watch("children", path, callback)

    def _watch(self, kind: _WatchKind, path: str, callback: WatchCallback) -> _MemoryWatch:
        watch = _MemoryWatch(self, kind, self._path("watch", path), callback)
        if kind == "children":
            self.store._children(watch.path, self._who)  # ZooKeeper arms a children watch with a READ
        self.store._add_watch(watch)
        return watch

    # ------------------------------------------------------------------------------------- connection
    def add_connection_listener(self, callback: ConnectionListener) -> None:
        self._listeners.add(callback)

    def remove_connection_listener(self, callback: ConnectionListener) -> None:
        self._listeners.remove(callback)

    def connection_state(self) -> ConnectionState:
        return "lost" if self._closed else "connected"

    def elect(self, path: str, identifier: str) -> LeaderElection:
        self._path("elect", path)
        return LatchElection(self, path, identifier)

    def expire_session(self) -> None:
        """Play a session expiry followed by a new session (see the module docstring)."""
        self._path("expire", znodes.ROOT)
        with self.store._lock:
            self.store._drop_session(self._session)
            self._notify("lost")
            old, self._session = self._session, self.store._new_session_id()
            for path, data in sorted(self._ephemerals.items()):
                try:
                    self.store._set_ephemeral(path, data, self._session, self._who)
                except StateError as err:
                    log.warning("could not re-create ephemeral node %s: %s", path, err)
            self._notify("connected")
        log.info("memory session %d expired; new session %d", old, self._session)

    def stop_waiting(self) -> None:
        """Nothing to do: a memory session never waits for a connection."""

    def close(self) -> None:
        with self.store._lock:
            if self._closed:
                return
            self._closed = True
            self.store._drop_session(self._session)
            self.store._remove_watches_of(self)
        self._dispatcher.stop()

    # ------------------------------------------------------------------------------------------ internals
    def _path(self, op: str, path: str) -> str:
        if self._closed:
            raise StateError(
                f"cannot {op} {path}: the storage session is closed", path=path, op=op, reason="closed"
            )
        return znodes.normalize(path)

    def _notify(self, state: ConnectionState) -> None:
        for listener in self._listeners.snapshot():
            self._dispatcher.post(functools.partial(listener, state))

    def __repr__(self) -> str:
        return f"MemoryStorage(session={self._session})"
