"""This module owns storm-redis's connection configs: :class:`RedisConfig` (one server; Storm's
``JedisPoolConfig``), :class:`RedisClusterConfig` (``JedisClusterConfig``) and :class:`RedisSentinelConfig`, with
Storm's builders, and the client each one makes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storm_py.stateful.state.redis_client import cluster_client, sentinel_client, server_client


@dataclass
class RedisConfig:
    """One Redis server."""

    host: str = "127.0.0.1"
    port: int = 6379
    password: str | None = None
    database: int = 0
    timeout_ms: int = 2000

    def client(self) -> Any:
        return server_client(self.host, int(self.port), self.password, int(self.database), self.timeout_ms / 1000)

    def where(self) -> str:
        return f"redis {self.host}:{self.port}/{self.database}"

    class Builder:
        """Storm's ``JedisPoolConfig.Builder``."""

        def __init__(self) -> None:
            self._values: dict[str, Any] = {}

        def set_host(self, host: str) -> RedisConfig.Builder:
            self._values["host"] = host
            return self

        def set_port(self, port: int) -> RedisConfig.Builder:
            self._values["port"] = int(port)
            return self

        def set_timeout(self, timeout_ms: int) -> RedisConfig.Builder:
            self._values["timeout_ms"] = int(timeout_ms)
            return self

        def set_password(self, password: str | None) -> RedisConfig.Builder:
            self._values["password"] = password
            return self

        def set_database(self, database: int) -> RedisConfig.Builder:
            self._values["database"] = int(database)
            return self

        def build(self) -> RedisConfig:
            return RedisConfig(**self._values)


JedisPoolConfig = RedisConfig


@dataclass
class RedisClusterConfig:
    """A Redis Cluster: ``nodes`` a list of ``(host, port)``."""

    nodes: Sequence[tuple[str, int]] = field(default_factory=list)
    password: str | None = None
    timeout_ms: int = 2000
    max_redirections: int = 5

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("RedisClusterConfig needs at least one (host, port) node")

    def client(self) -> Any:
        return cluster_client(list(self.nodes), self.password, self.timeout_ms / 1000, self.max_redirections)

    def where(self) -> str:
        return "redis cluster " + ",".join(f"{h}:{p}" for h, p in self.nodes)

    class Builder:
        """Storm's ``JedisClusterConfig.Builder``."""

        def __init__(self) -> None:
            self._values: dict[str, Any] = {}

        def set_nodes(self, nodes: Sequence[tuple[str, int]]) -> RedisClusterConfig.Builder:
            self._values["nodes"] = [(str(h), int(p)) for h, p in nodes]
            return self

        def set_timeout(self, timeout_ms: int) -> RedisClusterConfig.Builder:
            self._values["timeout_ms"] = int(timeout_ms)
            return self

        def set_password(self, password: str | None) -> RedisClusterConfig.Builder:
            self._values["password"] = password
            return self

        def set_max_redirections(self, n: int) -> RedisClusterConfig.Builder:
            self._values["max_redirections"] = int(n)
            return self

        def build(self) -> RedisClusterConfig:
            return RedisClusterConfig(**self._values)


JedisClusterConfig = RedisClusterConfig


@dataclass
class RedisSentinelConfig:
    """A Sentinel-managed master: ``sentinels`` a list of ``(host, port)``."""

    sentinels: Sequence[tuple[str, int]]
    master_name: str
    password: str | None = None
    database: int = 0
    timeout_ms: int = 2000

    def client(self) -> Any:
        return sentinel_client(list(self.sentinels), self.master_name, self.password, int(self.database),
                               self.timeout_ms / 1000)

    def where(self) -> str:
        return f"redis master {self.master_name!r} of sentinels " + ",".join(f"{h}:{p}" for h, p in self.sentinels)


AnyRedisConfig = RedisConfig | RedisClusterConfig | RedisSentinelConfig


def as_config(config: AnyRedisConfig | Mapping[str, Any]) -> AnyRedisConfig:
    """A config object, from one or from a dict of :class:`RedisConfig`'s keywords."""
    if isinstance(config, (RedisConfig, RedisClusterConfig, RedisSentinelConfig)):
        return config
    if isinstance(config, Mapping):
        try:
            return RedisConfig(**dict(config))
        except TypeError as exc:
            raise ValueError(f"a Redis config dict takes host, port, password, database, timeout_ms: {exc}") from exc
    raise ValueError(f"a Redis config is a RedisConfig, RedisClusterConfig, RedisSentinelConfig or dict, "
                     f"got {config!r}")
