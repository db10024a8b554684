"""This module owns storm_py's ZooKeeper client: :class:`KazooStorage`, the only place that imports kazoo.

It implements :class:`~storm_py.cluster_state.storage.StateStorage` and keeps a session usable across ZooKeeper's
failure modes without help from its users:

* operations wait for the connection (up to the operation timeout) and retry on connection loss; every kazoo
  error becomes a :class:`~storm_py.errors.StateError` naming the operation and the path;
* the non-sequential ephemeral nodes this client created (with their latest data) are re-created when a new
  session replaces an expired one; leader elections re-enter (see :mod:`storm_py.cluster_state.election`);
* watches are re-armed after every reconnection, and notify if the node changed meanwhile;
* a ZooKeeper restart is a suspension followed by a reconnection (same session if it comes back in time,
  otherwise a new one), both handled as above;
* with a configured identity (:mod:`storm_py.cluster_state.acl`) the session authenticates with its digest payloads
  and every node it creates, missing parents included, gets the ACL of its own path; refusals are
  ``StateError(reason="no_auth")``.

Bookkeeping after a reconnection runs on the storage thread before connection listeners hear ``connected``;
whatever fails there (the connection dropped again) is retried on the next reconnection or idle tick.  That
recovery lives in :mod:`storm_py.cluster_state.zk_session` and the kept watches in
:mod:`storm_py.cluster_state.zk_watches`; neither imports kazoo: this module talks to ZooKeeper for them.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
    SessionMovedError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id

from storm_py.clock import SYSTEM_CLOCK
from storm_py.cluster_state import acl as acls
from storm_py.cluster_state import znodes
from storm_py.cluster_state.election import LatchElection
from storm_py.cluster_state.storage import ConnectionListener, ConnectionState, LeaderElection, WatchCallback
from storm_py.cluster_state.zk_session import SessionKeeper
from storm_py.cluster_state.zk_watches import KeptWatch, Key, WatchKind, WatchRegistry
from storm_py.errors import StateError

log = logging.getLogger(__name__)

#: How often a wait for a connection checks whether the session's owner stopped waiting (see stop_waiting).
_STOP_POLL_SECS = 0.2

#: Errors after which an operation is retried (the client reconnects on its own meanwhile).
_RETRYABLE = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, SessionMovedError)
_PORT_SUFFIX = re.compile(r":\d+$")
#: ZooKeeper's own subtree, hidden from listings of the real root.
_SYSTEM_NODE = "zookeeper"
_STATES: dict[str, ConnectionState] = {
    KazooState.CONNECTED: "connected",
    KazooState.SUSPENDED: "suspended",
    KazooState.LOST: "lost",
}


def hosts_string(servers: Sequence[str] | str, port: int) -> str:
    """kazoo's connect string ``h1:p,h2:p`` from a server list; ``host:port`` entries keep their port."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    hosts = [
        s.strip() if _PORT_SUFFIX.search(s.strip()) else f"{s.strip()}:{int(port)}"
        for s in items
        if s.strip()
    ]
    if not hosts:
        raise StateError("no ZooKeeper servers configured", servers=str(servers))
    return ",".join(hosts)


#: kazoo's node errors -> (what the message says, the StateError reason)
_KNOWN_ERRORS: dict[type[Exception], tuple[str, str]] = {
    NoNodeError: ("no such node", "no_node"),
    NodeExistsError: ("node exists", "node_exists"),
    NotEmptyError: ("node has children", "not_empty"),
    NoChildrenForEphemeralsError: ("the parent is ephemeral", "ephemeral_parent"),
    NoAuthError: ("not authorized", "no_auth"),
}


def kazoo_acl(acl: acls.Acl) -> list[Any]:
    """kazoo's form of an ACL."""
    return [ACL(entry.perms, Id(entry.scheme, entry.id)) for entry in acl]


class KazooStorage:
    """A ZooKeeper session implementing :class:`~storm_py.cluster_state.storage.StateStorage` (see module docstring).

    Args:
        servers: ZooKeeper hosts (a list, or a comma-separated string); ``host:port`` entries keep their port.
        port: the port of entries without one.
        root_chroot: a path every operation is relative to (created if missing); None for the real root.
        session_timeout: requested session timeout in seconds (the server clamps it to its own bounds).
        connection_timeout: how long to wait for the first connection, in seconds.
        operation_timeout: how long an operation waits for a connection; defaults to ``connection_timeout``.
        policy: the identity to authenticate with and the ACLs of new nodes (open ACLs without one).

    Raises:
        StateError: no server answered within ``connection_timeout``.
    """

    def __init__(
        self,
        servers: Sequence[str] | str,
        port: int = 2181,
        root_chroot: str | None = None,
        session_timeout: float = 20.0,
        connection_timeout: float = 15.0,
        operation_timeout: float | None = None,
        policy: acls.AclPolicy | None = None,
    ) -> None:
        self._hosts = hosts_string(servers, port)
        self._policy = policy if policy is not None else acls.AclPolicy()
        self._prefix = znodes.normalize(root_chroot) if root_chroot else znodes.ROOT
        self._session_timeout = session_timeout
        self._connection_timeout = connection_timeout
        self._op_timeout = operation_timeout if operation_timeout is not None else connection_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._stop_waiting = False
        self._watches = WatchRegistry(self._arm_converted, self._on_watch_event, self._is_closed)
        self._keeper = SessionKeeper(f"zk-storage[{self._hosts}{self._prefix}]", self._hosts, self._live_session,
                                     self._restore_ephemeral, self._watches, self._is_closed)
        self._client = self._new_client(None)
        self._client.add_listener(self._on_kazoo_state)
        try:
            self._client.start(timeout=connection_timeout)
        except KazooTimeoutError as err:
            self._shutdown_client(self._client)
            self._keeper.dispatcher.stop()
            raise StateError(
                f"could not connect to ZooKeeper within {connection_timeout:g}s: "
                f"no answer from {self._hosts.replace(',', ', ')}",
                servers=self._hosts,
                timeout=connection_timeout,
                reason="connection",
            ) from err
        self._keeper.session_id = self._live_session()
        log.info("connected to ZooKeeper %s (session 0x%x)", self._hosts, self._keeper.session_id or 0)
        if self._prefix != znodes.ROOT:
            try:
                self._ensure_chroot()
            except StateError:
                self.close()
                raise

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any], root_chroot: str | None = None) -> KazooStorage:
        """A session configured by Storm's ``storm.zookeeper.*`` keys (timeouts in milliseconds)."""
        return cls(
            conf["storm.zookeeper.servers"],
            int(conf["storm.zookeeper.port"]),
            root_chroot=root_chroot,
            session_timeout=float(conf["storm.zookeeper.session.timeout"]) / 1000.0,
            connection_timeout=float(conf["storm.zookeeper.connection.timeout"]) / 1000.0,
            policy=acls.policy_from_conf(conf),
        )

    @property
    def hosts(self) -> str:
        """The connect string in use."""
        return self._hosts

    @property
    def session_id(self) -> int | None:
        """The current session's id, or None while disconnected."""
        return self._live_session()

    # ---------------------------------------------------------------------------------------------- data
    def get(self, path: str) -> bytes | None:
        full = self._full(path)
        with self._converted("get", path):
            try:
                data, _stat = self._call("get", path, self._client.get_async, full)
            except NoNodeError:
                return None
        return b"" if data is None else bytes(data)

    def set(self, path: str, data: bytes) -> None:
        path = znodes.normalize(path)
        full = self._full(path)
        data = bytes(data)
        if self._keeper.ephemerals.update(path, data):
            # A node of ours stays ephemeral, even when (re-)created by a write.
            self.set_ephemeral(path, data)
            return
        with self._converted("set", path):
            for _ in range(10):
                try:
                    self._call("set", path, self._client.set_async, full, data)
                    return
                except NoNodeError:
                    pass
                try:
                    self._create_node("set", path, data)
                    return
                except NodeExistsError:
                    pass
        raise StateError(f"ZooKeeper set {path}: node keeps appearing and vanishing", path=path, op="set")

    def set_if_parent(self, path: str, data: bytes) -> bool:
        path = znodes.normalize(path)
        full, data = self._full(path), bytes(data)
        with self._converted("set", path):
            for _ in range(10):
                try:
                    self._call("set", path, self._client.set_async, full, data)
                    return True
                except NoNodeError:
                    pass
                try:  # no parents made: a missing parent means the node was deleted
                    self._call("set", path, self._client.create_async, full, data,
                               kazoo_acl(self._policy.acl_for(path)))
                    return True
                except NoNodeError:
                    return False
                except NodeExistsError:
                    pass
        raise StateError(f"ZooKeeper set {path}: node keeps appearing and vanishing", path=path, op="set")

    def set_ephemeral(self, path: str, data: bytes) -> None:
        data = bytes(data)
        path = znodes.normalize(path)
        self._keeper.ephemerals.track(path, data)
        # Stays tracked even if this write fails: the node is restored with the next session bookkeeping.
        self._put_ephemeral(path, data, internal=False)

    def create(self, path: str, data: bytes = b"", ephemeral: bool = False, sequential: bool = False) -> str:
        path = znodes.normalize(path)
        full = self._full(path)
        data = bytes(data)
        if full == self._prefix:
            raise StateError(
                f"cannot create {path}: it is the root", path=path, op="create", reason="node_exists"
            )
        with self._converted("create", path):
            try:
                created = self._create_node("create", path, data, ephemeral=ephemeral, sequence=sequential)
            except NodeExistsError:
                # A create retried after a lost reply finds its own node: that is a success.
                if not (ephemeral and not sequential and self._owned_by_us(path)):
                    raise
                created = full
        rel = znodes.relative_to(created, self._prefix)
        if ephemeral and not sequential:
            self._keeper.ephemerals.created(rel, data, self._live_session())
        return rel

    def exists(self, path: str) -> bool:
        full = self._full(path)
        with self._converted("exists", path):
            return self._call("exists", path, self._client.exists_async, full) is not None

    def children(self, path: str) -> list[str]:
        full = self._full(path)
        with self._converted("children", path):
            try:
                names = self._call("children", path, self._client.get_children_async, full)
            except NoNodeError:
                return []
        if full == znodes.ROOT:
            names = [n for n in names if n != _SYSTEM_NODE]
        return sorted(str(n) for n in names)

    def delete(self, path: str) -> None:
        path = znodes.normalize(path)
        full = self._full(path)
        self._keeper.ephemerals.forget_within(path)
        with self._converted("delete", path):
            if full == self._prefix:
                for child in self.children(path):
                    self._delete_tree(path, znodes.join(full, child))
            else:
                self._delete_tree(path, full)

    # ------------------------------------------------------------------------------------------- watches
    def watch_data(self, path: str, callback: WatchCallback) -> KeptWatch:
        return self._watch("data", path, callback)

    def watch_children(self, path: str, callback: WatchCallback) -> KeptWatch:
        return self._watch("children", path, callback)

    def _watch(self, kind: WatchKind, path: str, callback: WatchCallback) -> KeptWatch:
        path = znodes.normalize(path)
        return self._watches.keep(kind, path, self._full(path), callback)

    def _on_watch_event(self, watch: KeptWatch, event: Any) -> None:
        """kazoo's watcher (on kazoo's thread): hand the work to the storage thread."""
        # NONE events only say the connection dropped; the reconnection re-arms every watch.
        if event.type != EventType.NONE:
            self._keeper.dispatcher.post(functools.partial(self._keeper.refresh, watch))

    # ---------------------------------------------------------------------------------------- connection
    def add_connection_listener(self, callback: ConnectionListener) -> None:
        self._keeper.listeners.add(callback)

    def remove_connection_listener(self, callback: ConnectionListener) -> None:
        self._keeper.listeners.remove(callback)

    def connection_state(self) -> ConnectionState:
        return "lost" if self._closed else self._keeper.state

    def elect(self, path: str, identifier: str) -> LeaderElection:
        return LatchElection(self, znodes.normalize(path), identifier)

    def stop_waiting(self) -> None:
        self._stop_waiting = True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._shutdown_client(self._client)
        # Wake operations waiting for a connection: they find the storage closed.
        self._keeper.connected.set()
        self._keeper.dispatcher.stop()
        log.info("closed ZooKeeper session to %s", self._hosts)

    def expire_session(self, timeout: float | None = None) -> None:
        """Make the server expire this client's session (for tests and failure drills).

        A second client attaches to the session and closes it, as ZooKeeper's own tests do.  This client then
        sees ``suspended``, ``lost`` and, with a new session, ``connected``.  Returns once ``lost`` was seen.
        """
        deadline = SYSTEM_CLOCK.now() + (timeout if timeout is not None else self._session_timeout + 10.0)
        lost = self._keeper.lost
        lost.clear()
        while not lost.is_set():
            client_id = self._client.client_id
            if client_id is not None:
                intruder = self._new_client(client_id)
                try:
                    intruder.start(timeout=self._connection_timeout)
                except KazooTimeoutError as err:
                    raise StateError(
                        f"cannot attach to the session at {self._hosts}", reason="connection"
                    ) from err
                finally:
                    self._shutdown_client(intruder)
            remaining = deadline - SYSTEM_CLOCK.now()
            if remaining <= 0:
                raise StateError("the session did not expire", servers=self._hosts, reason="connection")
            lost.wait(min(remaining, 2.0))

    # ------------------------------------------------------------------------------------------ internals
    def _create_node(self, op: str, path: str, data: bytes, internal: bool = False, **kw: Any) -> str:
        """Create ``path`` with its policy's ACL, creating missing parents with theirs; kazoo errors propagate."""
        full = self._full(path)
        acl = kazoo_acl(self._policy.acl_for(path))
        try:
            return str(self._call(op, path, self._client.create_async, full, data, acl, internal=internal, **kw))
        except NoNodeError:
            pass
        for ancestor in znodes.ancestors(path):
            # exists is open to everyone; creating an existing node without CREATE on its parent is refused.
            if self._call(op, path, self._client.exists_async, self._full(ancestor), internal=internal):
                continue
            try:
                self._call(
                    op, path, self._client.create_async, self._full(ancestor), b"",
                    kazoo_acl(self._policy.parent_acl_for(ancestor)), internal=internal,
                )  # fmt: skip
            except NodeExistsError:
                pass
        return str(self._call(op, path, self._client.create_async, full, data, acl, internal=internal, **kw))

    def _ensure_chroot(self) -> None:
        """Create the chroot: its ancestors (shared with other users of the server) open, itself with the ACL of
        this storage's root."""
        chain = [*znodes.ancestors(self._prefix), self._prefix]
        for node in chain:
            acl = acls.OPEN_ACL if node != self._prefix else self._policy.acl_for(znodes.ROOT)
            with self._converted("create", node):
                try:
                    if self._call("create", node, self._client.exists_async, node) is None:
                        self._call("create", node, self._client.create_async, node, b"", kazoo_acl(acl))
                except NodeExistsError:
                    pass

    def _new_client(self, client_id: tuple[int, bytes] | None) -> Any:
        # A short reconnection back-off, so that a restarted server is found within the session timeout.
        return KazooClient(
            hosts=self._hosts,
            timeout=self._session_timeout,
            client_id=client_id,
            auth_data=[(acls.DIGEST, payload) for payload in self._policy.payloads] or None,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, backoff=2, max_delay=1.0),
            command_retry=KazooRetry(max_tries=1),
        )

    @staticmethod
    def _shutdown_client(client: Any) -> None:
        try:
            client.stop()
            client.close()
        except Exception:
            log.warning("error while stopping a ZooKeeper client", exc_info=True)

    def _full(self, path: str) -> str:
        return znodes.under(self._prefix, path)

    def _live_session(self) -> int | None:
        client_id = self._client.client_id
        return None if client_id is None else int(client_id[0])

    def _owned_by_us(self, path: str) -> bool:
        session = self._live_session()
        stat = self._call("exists", path, self._client.exists_async, self._full(path))
        return stat is not None and session is not None and int(stat.ephemeralOwner) == session

    def _call(
        self, op: str, path: str, start: Callable[..., Any], *args: Any, internal: bool = False, **kw: Any
    ) -> Any:
        """Run kazoo's ``start(*args, **kw)`` to completion, waiting for the connection and retrying on loss.

        Non-retryable kazoo errors propagate unchanged (callers test for ``NoNodeError`` and friends).
        ``internal`` calls (the storage thread's bookkeeping) do not wait for a connection.
        """
        timeout = min(self._op_timeout, 5.0) if internal else self._op_timeout
        deadline = SYSTEM_CLOCK.now() + timeout
        delay = 0.02

        def lost(problem: str) -> StateError:
            return StateError(
                f"ZooKeeper {op} {path}: {problem}", path=path, op=op, servers=self._hosts, reason="connection"
            )

        while True:
            if self._closed:
                raise StateError(
                    f"cannot {op} {path}: the storage session is closed", path=path, op=op, reason="closed"
                )
            connected = self._keeper.connected
            while not connected.is_set():
                remaining = deadline - SYSTEM_CLOCK.now()
                if self._stop_waiting:
                    raise lost("no connection, and the session's owner is shutting down")
                if internal or remaining <= 0.0:
                    raise lost(f"no connection to {self._hosts} within {timeout:g}s")
                # in short steps, so that stop_waiting ends a wait in progress
                connected.wait(min(remaining, _STOP_POLL_SECS))
            try:
                return start(*args, **kw).get(timeout=max(deadline - SYSTEM_CLOCK.now(), 0.05))
            except ConnectionClosedError as err:
                raise StateError(
                    f"cannot {op} {path}: the client is closed", path=path, op=op, reason="closed"
                ) from err
            except _RETRYABLE as err:
                if internal or self._stop_waiting or SYSTEM_CLOCK.now() + delay >= deadline:
                    raise lost(f"{type(err).__name__} talking to {self._hosts}") from err
                SYSTEM_CLOCK.sleep(delay)
                delay = min(delay * 2, 0.5)
            except KazooTimeoutError as err:
                raise lost(f"no reply from {self._hosts} within {timeout:g}s") from err

    @contextmanager
    def _converted(self, op: str, path: str) -> Iterator[None]:
        """Turn kazoo's exceptions raised in the block into :class:`StateError` naming ``op`` and ``path``."""
        try:
            yield
        except StateError:
            raise
        except (NoNodeError, NodeExistsError, NotEmptyError, NoChildrenForEphemeralsError, NoAuthError) as err:
            what, reason = next(v for k, v in _KNOWN_ERRORS.items() if isinstance(err, k))
            raise StateError(f"ZooKeeper {op} {path}: {what}", path=path, op=op, reason=reason) from err
        except (KazooException, KazooTimeoutError) as err:
            raise StateError(
                f"ZooKeeper {op} {path} failed: {type(err).__name__}: {err}", path=path, op=op
            ) from err

    def _put_ephemeral(self, path: str, data: bytes, internal: bool) -> None:
        """Make ``path`` an ephemeral node of the current session holding ``data`` (replacing another's)."""
        full = self._full(path)
        with self._converted("set", path):
            for _ in range(10):
                stat = self._call("set", path, self._client.exists_async, full, internal=internal)
                session = self._live_session()
                if session is None:
                    continue
                try:
                    if stat is None:
                        self._create_node("set", path, data, ephemeral=True, internal=internal)
                    elif int(stat.ephemeralOwner) == session:
                        self._call(
                            "set", path, self._client.set_async, full, data, stat.version, internal=internal
                        )
                    else:
                        if int(stat.numChildren):
                            raise StateError(
                                f"cannot make {path} ephemeral: it has children",
                                path=path,
                                op="set",
                                reason="not_empty",
                            )
                        log.info("replacing %s, left by session 0x%x", path, int(stat.ephemeralOwner))
                        self._call(
                            "set", path, self._client.delete_async, full, stat.version, internal=internal
                        )
                        continue
                except (NoNodeError, NodeExistsError, BadVersionError):
                    continue  # raced with another writer or with the old session's expiry; look again
                self._keeper.ephemerals.settled(path, session)
                return
        raise StateError(f"ZooKeeper set {path}: could not settle the ephemeral node", path=path, op="set")

    def _delete_tree(self, path: str, full: str) -> None:
        for _ in range(10):
            try:
                names = self._call("delete", path, self._client.get_children_async, full)
            except NoNodeError:
                return
            for name in names:
                self._delete_tree(path, znodes.join(full, name))
            try:
                self._call("delete", path, self._client.delete_async, full)
                return
            except NoNodeError:
                return
            except NotEmptyError:
                continue  # a child appeared meanwhile
        raise StateError(
            f"ZooKeeper delete {path}: children keep appearing", path=path, op="delete", reason="not_empty"
        )

    def _restore_ephemeral(self, path: str, data: bytes) -> None:
        self._put_ephemeral(path, data, internal=True)

    def _is_closed(self) -> bool:
        return self._closed

    def _arm_converted(self, watch: KeptWatch, internal: bool) -> Key:
        with self._converted("watch", watch.path):
            return self._arm(watch, internal)

    def _arm(self, watch: KeptWatch, internal: bool) -> Key:
        """Set kazoo's watcher for ``watch`` and return the key telling whether the watched state changed."""
        client, full, path = self._client, watch.full, watch.path
        if watch.kind == "data":
            stat = self._call(
                "watch", path, client.exists_async, full, watch=watch.on_event, internal=internal
            )
            return None if stat is None else (int(stat.czxid), int(stat.mzxid))
        for _ in range(10):
            try:
                _names, stat = self._call(
                    "watch", path, client.get_children_async, full, watch=watch.on_event, include_data=True,
                    internal=internal,
                )  # fmt: skip
                return int(stat.czxid), int(stat.pzxid)
            except NoNodeError:
                stat = self._call(
                    "watch", path, client.exists_async, full, watch=watch.on_event, internal=internal
                )
                if stat is None:
                    return None
                # Created in between: loop to set the children watcher.
        raise StateError(f"ZooKeeper watch {path}: node keeps appearing and vanishing", path=path, op="watch")

    def _on_kazoo_state(self, state: str) -> None:
        """kazoo's state listener, on kazoo's connection thread."""
        self._keeper.on_state(_STATES[state])

    def __repr__(self) -> str:
        return f"KazooStorage({self._hosts!r}, chroot={self._prefix!r}, state={self.connection_state()!r})"
