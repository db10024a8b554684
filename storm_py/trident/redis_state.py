"""``RedisMapState``: Trident map state in a real Redis (Storm's storm-redis ``RedisMapState``), through
the Redis state provider's client (:mod:`storm_py.stateful.state.redis_client` is the one module importing redis-py).

Keys are ``<key_prefix><JSON list of the group's values>``; each stored value is one JSON document: the
opaque kind stores ``{"txid", "curr", "prev"}`` (``OpaqueValue``), the transactional kind ``{"txid", "val"}``
(``TransactionalValue``), the non-transactional kind ``{"val"}``.  Reads are one ``MGET``, writes one
``MSET``, behind Storm's ``CachedMap`` (an LRU of ``cache_size`` entries per partition).

Config (``RedisMapState.factory(kind, config)``): ``host`` (``127.0.0.1``), ``port`` (6379), ``database`` (0),
``password`` (None), ``key_prefix`` (``"trident:"``), ``cache_size`` (1000), ``timeout_secs`` (5).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from storm_py.errors import InvalidTopologyException
from storm_py.stateful.state.redis_state import redis_client
from storm_py.transactional.map_state import OpaqueValue, TransactionalValue
from storm_py.trident.state import KINDS, CachedMap, MapState, StateFactory

DEFAULTS: dict[str, Any] = {
    "host": "127.0.0.1",
    "port": 6379,
    "database": 0,
    "password": None,
    "key_prefix": "trident:",
    "cache_size": 1000,
    "timeout_secs": 5.0,
}


def encode(value: Any) -> str:
    """One stored value as JSON."""
    if isinstance(value, OpaqueValue):
        return json.dumps({"txid": value.curr_txid, "curr": value.curr, "prev": value.prev})
    if isinstance(value, TransactionalValue):
        return json.dumps({"txid": value.txid, "val": value.val})
    return json.dumps({"val": value})


def decode(raw: bytes | str | None) -> Any:
    """The stored value of one JSON document (None for a missing key)."""
    if raw is None:
        return None
    doc = json.loads(raw)
    if "curr" in doc:
        return OpaqueValue(int(doc["txid"]), doc["curr"], doc["prev"])
    if "txid" in doc:
        return TransactionalValue(int(doc["txid"]), doc["val"])
    return doc["val"]


class RedisBackingMap:
    """A backing map over one Redis database: ``MGET`` / ``MSET`` of JSON documents."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self.client = client
        self.key_prefix = key_prefix

    def _key(self, key: Any) -> str:
        return self.key_prefix + json.dumps(list(key) if isinstance(key, (tuple, list)) else [key])

    def multi_get(self, keys: Sequence[Any]) -> list[Any]:
        if not keys:
            return []
        return [decode(raw) for raw in self.client.mget([self._key(k) for k in keys])]

    def multi_put(self, keys: Sequence[Any], values: Sequence[Any]) -> None:
        if keys:
            self.client.mset({self._key(k): encode(v) for k, v in zip(keys, values, strict=True)})


class RedisMapStateFactory(StateFactory):
    """Makes a :class:`MapState` of ``kind`` over Redis for each partition (one client per partition)."""

    def __init__(self, kind: str, config: Mapping[str, Any] | None = None) -> None:
        if kind not in KINDS:
            raise InvalidTopologyException(f"RedisMapState kind must be one of {list(KINDS)}, got {kind!r}")
        unknown = sorted(set(config or {}) - set(DEFAULTS))
        if unknown:
            raise InvalidTopologyException(f"RedisMapState: unknown config keys {unknown}; known: {sorted(DEFAULTS)}")
        self.kind = kind
        self.config = {**DEFAULTS, **(config or {})}

    def client(self) -> Any:
        """The process's redis-py client for the configured server (shared with the Redis state provider)."""
        server = ("host", "port", "database", "password", "timeout_secs")
        return redis_client({k: self.config[k] for k in server})

    def make_state(self, conf: dict[str, Any], context: Any, partition_index: int, num_partitions: int) -> MapState:
        backing = RedisBackingMap(self.client(), str(self.config["key_prefix"]))
        return MapState(CachedMap(backing, int(self.config["cache_size"])), self.kind)

    def values(self) -> dict[tuple[Any, ...], Any]:
        """The current value of every key under the prefix (for checks and tools)."""
        client = self.client()
        prefix = str(self.config["key_prefix"])
        out: dict[tuple[Any, ...], Any] = {}
        for raw_key in client.scan_iter(match=prefix + "*"):
            name = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
            stored = decode(client.get(raw_key))
            if isinstance(stored, OpaqueValue):
                stored = stored.curr
            elif isinstance(stored, TransactionalValue):
                stored = stored.val
            out[tuple(json.loads(name[len(prefix):]))] = stored
        return out


class RedisMapState:
    """Storm's ``RedisMapState``: ``RedisMapState.factory(kind, config)``."""

    @staticmethod
    def factory(kind: str = "opaque", config: Mapping[str, Any] | None = None) -> RedisMapStateFactory:
        """A factory of Redis map states of ``kind`` (opaque, transactional or non_transactional)."""
        return RedisMapStateFactory(kind, config)
