"""Persisted state of a transactional topology: one subtree under ``/transactional/<id>/`` and per-txid rotation.

The coordinator keeps ``coordinator/currtx`` and ``coordinator/meta/<txid>``; partitioned emitters keep
``user/<partition>/<txid>``.  The store is the cluster state (ZooKeeper in a cluster, the in-memory store in
LocalCluster), which every worker hands its tasks as the resource :data:`TRANSACTIONAL_STATE_RESOURCE` — so
nothing here lives only in one process, and a resubmitted topology continues where the killed one stopped.

Values are JSON (what the store keeps); every value is passed through a JSON round trip before it is cached,
so what a task sees first and what it reads back after a restart are the same.
"""

from __future__ import annotations

import bisect
import json
import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

from storm_py.errors import StormPyError

log = logging.getLogger(__name__)

#: the resource key (``context.get_resource(...)``) under which a worker shares its transactional-state store:
#: an object with ``transactional_get/set/delete/children`` (a
#: :class:`storm_py.cluster_state.cluster_state.ClusterState`)
TRANSACTIONAL_STATE_RESOURCE: Final = "storm_py.transactional_state"

COORDINATOR_SUBTREE = "coordinator"
USER_SUBTREE = "user"
#: the first transaction id
INIT_TXID = 1


class TransactionalStateError(StormPyError):
    """The persisted state of a transactional topology is unavailable or used out of order."""

    code = "transactional_state_error"


class TransactionalStore(Protocol):
    """What the state layer offers for transactional topologies (``ClusterState`` has these methods)."""

    def transactional_get(self, tx_id: str, *parts: str) -> Any | None: ...

    def transactional_set(self, tx_id: str, *parts: str, value: Any) -> None: ...

    def transactional_delete(self, tx_id: str, *parts: str) -> None: ...

    def transactional_children(self, tx_id: str, *parts: str) -> list[str]: ...


class _ResourceSource(Protocol):
    def get_resource(self, key: str) -> Any: ...


def store_from_context(context: _ResourceSource) -> TransactionalStore:
    """The worker's transactional store, found in the task context's resources."""
    store = context.get_resource(TRANSACTIONAL_STATE_RESOURCE)
    if store is None:
        raise TransactionalStateError(
            f"no transactional state store in the task context (resource {TRANSACTIONAL_STATE_RESOURCE!r}): "
            "transactional topologies must run in a worker (LocalCluster or a cluster)",
            resource=TRANSACTIONAL_STATE_RESOURCE,
        )
    return store  # type: ignore[no-any-return]


def json_value(value: Any) -> Any:
    """``value`` as it will read back from the store (tuples become lists, dict keys strings)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as err:
        raise TransactionalStateError(
            f"transactional metadata must be JSON-encodable, got {type(value).__name__}: {err}"
        ) from err


def _split(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split("/") if p)


class TransactionalState:
    """One subtree (``coordinator`` or ``user``) of a transactional topology's state; paths are relative."""

    def __init__(self, store: TransactionalStore, tx_id: str, subtree: str) -> None:
        if not tx_id:
            raise TransactionalStateError("a transactional topology needs a non-empty id", subtree=subtree)
        self.store = store
        self.tx_id = tx_id
        self.subtree = subtree

    @classmethod
    def coordinator_state(cls, store: TransactionalStore, tx_id: str) -> TransactionalState:
        """The coordinator's subtree."""
        return cls(store, tx_id, COORDINATOR_SUBTREE)

    @classmethod
    def user_state(cls, store: TransactionalStore, tx_id: str) -> TransactionalState:
        """The emitters' subtree."""
        return cls(store, tx_id, USER_SUBTREE)

    def get_data(self, path: str) -> Any | None:
        """The value at ``path``, or None."""
        return self.store.transactional_get(self.tx_id, self.subtree, *_split(path))

    def set_data(self, path: str, value: Any) -> None:
        """Write ``value`` (JSON) at ``path``, creating parents."""
        self.store.transactional_set(self.tx_id, self.subtree, *_split(path), value=value)

    def delete(self, path: str) -> None:
        """Delete ``path`` and everything below it."""
        self.store.transactional_delete(self.tx_id, self.subtree, *_split(path))

    def list(self, path: str = "") -> list[str]:
        """The children of ``path``."""
        return self.store.transactional_children(self.tx_id, self.subtree, *_split(path))


StateInitializer = Callable[[int, Any], Any]


class RotatingTransactionalState:
    """A txid -> value map persisted under one directory, loaded once, cleaned below committed txids.

    With ``strict_order`` a txid's value may only be created right after its predecessor's (the coordinator's
    metadata); without it, a txid created after later ones were created gets None (nothing to emit).
    """

    def __init__(self, state: TransactionalState, subdir: str, strict_order: bool = False) -> None:
        self._state = state
        self._subdir = subdir
        self._strict = strict_order
        self._curr: dict[int, Any] = {}
        self._keys: list[int] = []
        for name in state.list(subdir):
            try:
                txid = int(name)
            except ValueError:
                log.warning("ignoring %s/%s in the state of %s: not a txid", subdir, name, state.tx_id)
                continue
            self._put(txid, state.get_data(self._path(txid)))

    def _path(self, txid: int) -> str:
        return f"{self._subdir}/{txid}"

    def _put(self, txid: int, value: Any) -> None:
        if txid not in self._curr:
            bisect.insort(self._keys, txid)
        self._curr[txid] = value

    def _remove(self, txid: int) -> None:
        del self._curr[txid]
        self._keys.remove(txid)

    def txids(self) -> list[int]:
        """The txids with a value, ascending."""
        return list(self._keys)

    def has_cache(self, txid: int) -> bool:
        """Whether ``txid`` has a value (possibly None)."""
        return txid in self._curr

    def get_last_state(self) -> Any:
        """The value of the highest txid, or None."""
        return self._curr[self._keys[-1]] if self._keys else None

    def get_state_at(self, txid: int) -> Any:
        """``txid``'s value, or None when it has none."""
        return self._curr.get(txid)

    def get_state_before(self, txid: int) -> Any:
        """The value of the highest txid below ``txid``, or None."""
        pos = bisect.bisect_left(self._keys, txid)
        return self._curr[self._keys[pos - 1]] if pos > 0 else None

    def override_state(self, txid: int, value: Any) -> None:
        """Set ``txid``'s value unconditionally."""
        value = json_value(value)
        self._state.set_data(self._path(txid), value)
        self._put(txid, value)

    def remove_state(self, txid: int) -> None:
        """Forget ``txid``'s value."""
        if txid in self._curr:
            self._remove(txid)
            self._state.delete(self._path(txid))

    def get_state(self, txid: int, init: StateInitializer) -> Any:
        """``txid``'s value, created with ``init(txid, previous value)`` when absent."""
        if txid not in self._curr:
            pos = bisect.bisect_left(self._keys, txid)
            prev = self._keys[pos - 1] if pos > 0 else None
            has_later = pos < len(self._keys)
            if self._strict:
                if prev is None and txid != INIT_TXID:
                    raise TransactionalStateError(
                        f"cannot initialize transaction {txid}: no state for the previous transaction", txid=txid
                    )
                if prev is not None and prev != txid - 1:
                    raise TransactionalStateError(
                        f"cannot initialize transaction {txid}: the latest state is of transaction {prev}",
                        txid=txid,
                    )
                if has_later:
                    raise TransactionalStateError(
                        f"cannot initialize transaction {txid}: later transactions already have state", txid=txid
                    )
            # a txid created after later ones emits nothing: its value is None
            value = None if has_later else json_value(init(txid, None if prev is None else self._curr[prev]))
            self._state.set_data(self._path(txid), value)
            self._put(txid, value)
        return self._curr[txid]

    def get_state_or_create(self, txid: int, init: StateInitializer) -> Any:
        """``txid``'s stored value, or None after creating it (``init`` ran, e.g. emitting a new batch)."""
        if txid in self._curr:
            return self._curr[txid]
        self.get_state(txid, init)
        return None

    def cleanup_before(self, txid: int) -> None:
        """Delete every value of a txid below ``txid``."""
        while self._keys and self._keys[0] < txid:
            old = self._keys[0]
            self._remove(old)
            self._state.delete(self._path(old))
