"""This module owns the redis-py clients of storm_py, the one import of redis-py: the state provider's shared
client (:func:`redis_client`), the clients of the Redis bolts (one server, Sentinel or Cluster) and which of
redis-py's errors mean "the server is unreachable" or "the login was refused"."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from storm_py.errors import ConfigError

try:
    import redis
    import redis.backoff
    import redis.retry
except ImportError as _err:  # the redis extra is not installed
    redis = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = _err
else:
    _IMPORT_ERROR = None

DEFAULTS: Mapping[str, Any] = {
    "host": "127.0.0.1", "port": 6379, "database": 0, "password": None, "key_prefix": "storm_py:", "timeout_secs": 5.0,
}


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def redis_client(config: Mapping[str, Any]) -> Any:
    """The process's redis-py client (a connection pool, shared by every state of the same server) for a provider
    config (``host``, ``port``, ``database``, ``password``, ``timeout_secs``)."""
    if redis is None:
        raise ConfigError(
            "topology.state.provider 'redis' needs redis-py: pip install 'storm_py[redis]'",
            key="topology.state.provider",
        ) from _IMPORT_ERROR
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ConfigError(
            f"topology.state.provider.config has unknown keys {unknown} (known: {sorted(DEFAULTS)})",
            key="topology.state.provider.config",
        )
    conf = {**DEFAULTS, **config}
    try:
        key = (str(conf["host"]), int(conf["port"]), int(conf["database"]), conf["password"],
               float(conf["timeout_secs"]))
    except (TypeError, ValueError) as err:
        raise ConfigError(f"topology.state.provider.config {dict(config)!r} is invalid: {err}",
                          key="topology.state.provider.config") from err
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = _new_client(*key)
        return client


def _new_client(host: str, port: int, database: int, password: str | None, timeout: float) -> Any:
    assert redis is not None
    # no retries inside the client: a failed call fails its checkpoint (or its tuple), which the checkpoint
    # protocol retries; the worker's loop is never held up by a client's backoff
    return redis.Redis(
        host=host, port=port, db=database, password=password, socket_timeout=timeout, socket_connect_timeout=timeout,
        retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0),
    )


def is_redis_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of redis-py's errors."""
    return redis is not None and isinstance(exc, redis.RedisError)


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the server could not be reached or went away (retry the same work)."""
    return (redis is not None and isinstance(exc, (redis.ConnectionError, redis.TimeoutError))
            and not is_refused_login(exc))


def is_refused_login(exc: BaseException) -> bool:
    """Whether ``exc`` is a refused ``AUTH`` or ``SELECT`` (wrong settings, not a passing failure)."""
    if redis is None:
        return False  # type: ignore[unreachable]
    return isinstance(exc, redis.AuthenticationError) or (
        isinstance(exc, redis.ResponseError) and ("DB index" in str(exc) or "WRONGPASS" in str(exc)))


def _need_redis(what: str) -> None:
    if redis is None:
        raise ConfigError(f"{what} needs redis-py: pip install 'storm_py[redis]'") from _IMPORT_ERROR


def server_client(host: str, port: int, password: str | None, database: int, timeout_secs: float) -> Any:
    """A client of one server for a bolt (no retries inside: the bolt retries with its own backoff)."""
    _need_redis("a Redis bolt")
    return redis.Redis(host=host, port=port, db=database, password=password, socket_timeout=timeout_secs,
                       socket_connect_timeout=timeout_secs, retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0))


def sentinel_client(sentinels: Sequence[tuple[str, int]], master_name: str, password: str | None, database: int,
                    timeout_secs: float) -> Any:
    """A client of the master a set of Sentinels names."""
    _need_redis("a Redis bolt")
    import redis.sentinel

    hosts = [(h, int(p)) for h, p in sentinels]
    sentinel = redis.sentinel.Sentinel(hosts, socket_timeout=timeout_secs)  # type: ignore[no-untyped-call]
    return sentinel.master_for(  # type: ignore[no-untyped-call]
        master_name, password=password, db=database, socket_timeout=timeout_secs)


def cluster_client(nodes: Sequence[tuple[str, int]], password: str | None, timeout_secs: float,
                   max_redirections: int) -> Any:
    """A Redis Cluster client."""
    _need_redis("a Redis bolt")
    import redis.cluster

    return redis.cluster.RedisCluster(
        startup_nodes=[redis.cluster.ClusterNode(h, int(p))  # type: ignore[no-untyped-call]
                       for h, p in nodes], password=password,
        socket_timeout=timeout_secs, socket_connect_timeout=timeout_secs)
