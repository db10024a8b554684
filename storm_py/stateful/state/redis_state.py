"""This module owns the Redis state provider (``topology.state.provider: redis``), over the clients of
:mod:`storm_py.stateful.state.redis_client`.

A task's state lives in three Redis hashes under ``key_prefix`` (Storm's layout): ``<ns>`` the committed map,
``<ns>$prepare`` the prepared changes and ``<ns>$txid`` the txids last prepared and committed.  Keys and values
are msgpack bodies of the project's codec; a deleted key is prepared as an empty value.  Changes since the last
prepare stay in memory; a prepare writes them to ``<ns>$prepare`` (merged with a prepared transaction a restart
found there), a commit moves them into ``<ns>`` in one MULTI/EXEC transaction, a rollback deletes
``<ns>$prepare``.  So a task restarted between prepare and commit finds the prepared changes and can commit them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from storm_py.errors import StateBackendError
from storm_py.protocol.codec import pack_value, unpack_value
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState
from storm_py.stateful.state.redis_client import DEFAULTS, is_redis_error, redis_client

__all__ = ["RedisKeyValueState", "redis_client"]

#: a deletion in the prepared changes (no msgpack body is empty)
TOMBSTONE = b""
PREPARE_TXID = "prepare"
COMMIT_TXID = "commit"


class RedisKeyValueState(KeyValueState):
    """A :class:`KeyValueState` kept in Redis; every call that reaches Redis raises
    :class:`~storm_py.errors.StateBackendError` when Redis fails."""

    def __init__(self, client: Any, namespace: str, key_prefix: str = "") -> None:
        # no super().__init__: nothing of the in-memory state is used
        self._client = client
        self.namespace = namespace
        self._hash = f"{key_prefix}{namespace}"
        self._prepare_hash = f"{self._hash}$prepare"
        self._txid_hash = f"{self._hash}$txid"
        #: changes since the last prepare, and the prepared ones not committed yet (packed key -> packed value)
        self._pending: dict[bytes, bytes] = {}
        self._prepared: dict[bytes, bytes] = {}
        with self._errors("read its txids"):
            txids = {k.decode(): int(v) for k, v in client.hgetall(self._txid_hash).items()}
            self._txids = txids
            if txids.get(PREPARE_TXID, NO_TXID) > txids.get(COMMIT_TXID, NO_TXID):
                self._prepared = dict(client.hgetall(self._prepare_hash))

    @classmethod
    def from_config(cls, namespace: str, config: Mapping[str, Any]) -> RedisKeyValueState:
        """The state of ``namespace`` under the config's ``key_prefix``."""
        prefix = config.get("key_prefix", DEFAULTS["key_prefix"])
        return cls(redis_client(config), namespace, str(prefix))

    @classmethod
    def committed_of(cls, component: str, config: Mapping[str, Any]) -> dict[int, dict[Any, Any]]:
        """The committed state of every task of ``component`` found in Redis, by task id (for tools and tests)."""
        prefix = str(config.get("key_prefix", DEFAULTS["key_prefix"]))
        client = redis_client(config)
        out: dict[int, dict[Any, Any]] = {}
        with _backend_errors(f"cannot list the states of {component!r} in Redis"):
            for raw in client.scan_iter(match=f"{prefix}{component}-*"):
                namespace = raw.decode()[len(prefix):]
                task = namespace[len(component) + 1:]
                if task.isdigit():
                    out[int(task)] = dict(cls(client, namespace, prefix))
        return out

    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        return _backend_errors(f"Redis state {self._hash!r} cannot {what}")

    def put(self, key: Any, value: Any) -> None:
        self._pending[pack_value(key)] = pack_value(value)

    def put_all(self, entries: Iterable[tuple[Any, Any]]) -> None:
        self._pending.update({pack_value(key): pack_value(value) for key, value in entries})

    def get(self, key: Any, default: Any = None) -> Any:
        k = pack_value(key)
        raw = self._pending.get(k)
        if raw is None:
            raw = self._prepared.get(k)
        if raw is None:
            with self._errors("read a key"):
                raw = self._client.hget(self._hash, k)
        return default if raw is None or raw == TOMBSTONE else unpack_value(raw)

    def delete(self, key: Any) -> None:
        self._pending[pack_value(key)] = TOMBSTONE

    def _merged(self) -> dict[bytes, bytes]:
        with self._errors("read its keys"):
            merged: dict[bytes, bytes] = dict(self._client.hgetall(self._hash))
        merged.update(self._prepared)
        merged.update(self._pending)
        return {k: v for k, v in merged.items() if v != TOMBSTONE}

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return iter([(unpack_value(k), unpack_value(v)) for k, v in self._merged().items()])

    def __len__(self) -> int:
        return len(self._merged())

    def prepare_commit(self, txid: int) -> None:
        changes = {**self._prepared, **self._pending}
        with self._errors(f"prepare txid {txid}"):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(self._prepare_hash)
            if changes:
                pipe.hset(self._prepare_hash, mapping=changes)
            pipe.hset(self._txid_hash, PREPARE_TXID, txid)
            pipe.execute()
        self._prepared = changes
        self._pending = {}
        self._txids[PREPARE_TXID] = txid

    def commit(self, txid: int | None = None) -> None:
        if txid is None:  # commit the current changes at once (the checkpoint spout's own state)
            self._apply(self._pending, None)
            self._pending = {}
            return
        if txid == self._txids.get(COMMIT_TXID, NO_TXID) and not self._prepared:
            return  # committed already (a recovery commits again)
        if txid != self._txids.get(PREPARE_TXID, NO_TXID):
            raise StateBackendError(
                f"Redis state {self._hash!r} cannot commit txid {txid}: prepared is "
                f"{self._txids.get(PREPARE_TXID, NO_TXID)}, committed {self._txids.get(COMMIT_TXID, NO_TXID)}",
                txid=txid,
            )
        self._apply(self._prepared, txid)
        self._prepared = {}
        self._txids[COMMIT_TXID] = txid

    def _apply(self, changes: dict[bytes, bytes], txid: int | None) -> None:
        puts = {k: v for k, v in changes.items() if v != TOMBSTONE}
        deletes = [k for k, v in changes.items() if v == TOMBSTONE]
        with self._errors("commit" if txid is None else f"commit txid {txid}"):
            pipe = self._client.pipeline(transaction=True)
            if puts:
                pipe.hset(self._hash, mapping=puts)
            if deletes:
                pipe.hdel(self._hash, *deletes)
            if txid is not None:
                pipe.hset(self._txid_hash, COMMIT_TXID, txid)
                pipe.delete(self._prepare_hash)
            pipe.execute()

    def rollback(self) -> None:
        self._pending = {}
        self._prepared = {}
        committed = self._txids.get(COMMIT_TXID, NO_TXID)
        with self._errors("roll back"):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(self._prepare_hash)
            pipe.hset(self._txid_hash, PREPARE_TXID, committed)
            pipe.execute()
        self._txids[PREPARE_TXID] = committed

    def committed_txid(self) -> int:
        return self._txids.get(COMMIT_TXID, NO_TXID)

    def prepared_txid(self) -> int | None:
        prepared = self._txids.get(PREPARE_TXID, NO_TXID)
        return prepared if prepared > self.committed_txid() else None

    def __repr__(self) -> str:
        return f"RedisKeyValueState({self._hash!r}, committed txid {self.committed_txid()})"

    def keys_in_redis(self) -> list[str]:
        """The Redis keys this state may use."""
        return [self._hash, self._prepare_hash, self._txid_hash]


@contextlib.contextmanager
def _backend_errors(what: str) -> Iterator[None]:
    """Turn redis-py's errors into :class:`StateBackendError` saying what could not be done."""
    try:
        yield
    except Exception as exc:
        if is_redis_error(exc):
            raise StateBackendError(f"{what}: {exc}") from exc
        raise
