"""This module owns leader election on top of any :class:`~storm_py.cluster_state.storage.StateStorage`.

Each candidate creates an ephemeral-sequential node under the election path holding its identifier; the
candidate with the lowest counter leads (the scheme of Curator's LeaderLatch).  A candidate's node name starts
with a random token so that, when a create is retried after a lost reply, the candidate finds its own node
instead of creating a second one.  After a session loss the candidate re-enters with a new node; while the
connection is suspended :meth:`LatchElection.is_leader` answers False.
"""

from __future__ import annotations

import logging
import threading
import uuid

from storm_py.cluster_state import znodes
from storm_py.cluster_state.storage import ConnectionState, LeadershipListener, StateStorage, Watch
from storm_py.errors import StateError

log = logging.getLogger(__name__)

_LATCH = "-latch-"


def _candidates(storage: StateStorage, path: str) -> list[str]:
    """The candidate names under ``path``, leader first."""
    ranked: list[tuple[int, str]] = []
    for name in storage.children(path):
        seq = znodes.sequence_of(name)
        if _LATCH in name and seq is not None:
            ranked.append((seq, name))
    return [name for _, name in sorted(ranked)]


def current_leader(storage: StateStorage, path: str) -> str | None:
    """The identifier of the leader of the election under ``path``, or None; works for non-candidates too."""
    for _ in range(10):
        names = _candidates(storage, path)
        if not names:
            return None
        data = storage.get(znodes.join(path, names[0]))
        if data is not None:
            return data.decode("utf-8")
        # The leader left between the two reads; look again.
    return None


class LatchElection:
    """A candidate in the election under ``path``; see the module docstring."""

    def __init__(self, storage: StateStorage, path: str, identifier: str) -> None:
        self._storage = storage
        self._path = znodes.normalize(path)
        self._identifier = identifier
        self._prefix = uuid.uuid4().hex + _LATCH
        self._lock = threading.RLock()
        self._node: str | None = None
        self._leader = False
        self._cancelled = False
        self._listeners: list[LeadershipListener] = []
        self._watch: Watch = storage.watch_children(self._path, self._on_children)
        storage.add_connection_listener(self._on_connection)
        try:
            self._join()
        except StateError:
            self.cancel()
            raise

    @property
    def identifier(self) -> str:
        return self._identifier

    @property
    def path(self) -> str:
        """The election directory."""
        return self._path

    def is_leader(self) -> bool:
        return self._leader and not self._cancelled and self._storage.connection_state() == "connected"

    def leader_id(self) -> str | None:
        return current_leader(self._storage, self._path)

    def add_listener(self, callback: LeadershipListener) -> None:
        with self._lock:
            self._listeners.append(callback)

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            node, self._node = self._node, None
        self._watch.cancel()
        self._storage.remove_connection_listener(self._on_connection)
        if node is not None:
            try:
                self._storage.delete(node)
            except StateError as err:
                # The node is ephemeral: it goes with the session anyway.
                log.debug("could not delete election node %s: %s", node, err)
        self._set_leader(False)

    # ------------------------------------------------------------------------------------------ internals
    def _join(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            mine = [n for n in _candidates(self._storage, self._path) if n.startswith(self._prefix)]
            if mine:
                self._node = znodes.join(self._path, mine[0])
            else:
                self._node = self._storage.create(
                    znodes.join(self._path, self._prefix),
                    self._identifier.encode("utf-8"),
                    ephemeral=True,
                    sequential=True,
                )
                log.debug("election %s: %s entered as %s", self._path, self._identifier, self._node)
        self._check()

    def _check(self) -> None:
        rejoin = False
        with self._lock:
            leader = False
            if not self._cancelled and self._node is not None:
                names = _candidates(self._storage, self._path)
                mine = znodes.basename(self._node)
                if mine in names:
                    leader = names[0] == mine
                elif self._storage.connection_state() == "connected":
                    # Our node went away (deleted by someone, or the session changed): enter again.
                    self._node = None
                    rejoin = True
        self._set_leader(leader)
        if rejoin:
            self._join()

    def _set_leader(self, leader: bool) -> None:
        with self._lock:
            if leader == self._leader:
                return
            self._leader = leader
            listeners = list(self._listeners)
        log.info(
            "election %s: %s %s leadership", self._path, self._identifier, "gained" if leader else "lost"
        )
        for callback in listeners:
            try:
                callback(leader)
            except Exception:
                log.exception("leadership listener failed")

    def _on_children(self, _path: str) -> None:
        try:
            self._check()
        except StateError as err:
            log.warning("election %s: cannot read candidates: %s", self._path, err)
            self._set_leader(False)

    def _on_connection(self, state: ConnectionState) -> None:
        if state == "connected":
            try:
                self._join()
            except StateError as err:
                log.warning("election %s: cannot re-enter after reconnecting: %s", self._path, err)
                self._set_leader(False)
        else:
            if state == "lost":
                with self._lock:
                    self._node = None
            self._set_leader(False)
