"""Storm's storm-redis over redis-py: connection configs, data types and mappers, and the store, lookup and filter
bolts (the store bolt an exactly-once sink under managed state)."""

from __future__ import annotations

from storm_py.redis.bolts import AbstractRedisBolt, RedisFilterBolt, RedisLookupBolt, RedisStoreBolt
from storm_py.redis.config import (
    JedisClusterConfig,
    JedisPoolConfig,
    RedisClusterConfig,
    RedisConfig,
    RedisSentinelConfig,
)
from storm_py.redis.mappers import (
    RedisDataType,
    RedisDataTypeDescription,
    RedisError,
    RedisFilterMapper,
    RedisLookupMapper,
    RedisMapper,
    RedisStoreMapper,
    TupleMapper,
)

__all__ = [
    "AbstractRedisBolt",
    "JedisClusterConfig",
    "JedisPoolConfig",
    "RedisClusterConfig",
    "RedisConfig",
    "RedisDataType",
    "RedisDataTypeDescription",
    "RedisError",
    "RedisFilterBolt",
    "RedisFilterMapper",
    "RedisLookupBolt",
    "RedisLookupMapper",
    "RedisMapper",
    "RedisSentinelConfig",
    "RedisStoreBolt",
    "RedisStoreMapper",
    "TupleMapper",
]
