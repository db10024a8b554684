"""This module owns the pure part of storm-redis's bolts: the Redis command each data type gives for a store, a
lookup and a filter, and what their replies mean (``k`` the tuple's key, ``v`` its value, ``a`` the additional
key)."""

from __future__ import annotations

from typing import Any

from storm_py.redis.mappers import RedisDataType, RedisDataTypeDescription

T = RedisDataType


def _text(value: Any) -> str | bytes:
    return value if isinstance(value, (str, bytes)) else str(value)


def store_command(desc: RedisDataTypeDescription, key: Any, value: Any) -> list[Any]:
    """The command storing ``value`` at ``key``; a value that does not fit its type is a ``ValueError``."""
    t, a, k = desc.data_type, desc.additional_key, _text(key)
    if t is T.STRING:
        return ["SET", k, _text(value)]
    if t is T.LIST:
        return ["RPUSH", k, _text(value)]
    if t is T.HASH:
        return ["HSET", a, k, _text(value)]
    if t is T.SET:
        return ["SADD", k, _text(value)]
    if t is T.SORTED_SET:
        try:
            score = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"SORTED_SET score {value!r} of member {key!r} is not a number") from None
        return ["ZADD", a, repr(score), k]
    if t is T.HYPER_LOG_LOG:
        return ["PFADD", k, _text(value)]
    lon, lat = geo_point(value)
    return ["GEOADD", a, repr(lon), repr(lat), k]


def geo_point(value: Any) -> tuple[float, float]:
    """``"longitude:latitude"`` as two floats in range, else a ``ValueError``."""
    text = value.decode() if isinstance(value, bytes) else str(value)
    parts = text.split(":")
    try:
        lon, lat = float(parts[0]), float(parts[1])
        if len(parts) != 2:
            raise ValueError
    except (ValueError, IndexError):
        raise ValueError(f"GEO value {value!r} is not 'longitude:latitude'") from None
    if not (-180 <= lon <= 180 and -85.05112878 <= lat <= 85.05112878):
        raise ValueError(f"GEO value {value!r} is out of range")
    return lon, lat


def lookup_command(desc: RedisDataTypeDescription, key: Any) -> list[Any]:
    """The command a lookup of ``key`` runs."""
    t, a, k = desc.data_type, desc.additional_key, _text(key)
    table: dict[RedisDataType, list[Any]] = {
        T.STRING: ["GET", k], T.LIST: ["LPOP", k], T.HASH: ["HGET", a, k], T.SET: ["SCARD", k],
        T.SORTED_SET: ["ZSCORE", a, k], T.HYPER_LOG_LOG: ["PFCOUNT", k], T.GEO: ["GEOPOS", a, k],
    }
    return table[t]


def lookup_value(desc: RedisDataTypeDescription, reply: Any) -> Any:
    """A lookup's reply as the mapper's ``to_tuple`` gets it."""
    t = desc.data_type
    if t in (T.STRING, T.LIST, T.HASH):
        return reply.decode("utf-8") if isinstance(reply, bytes) else reply
    if t in (T.SET, T.HYPER_LOG_LOG):
        return int(reply)
    if t is T.SORTED_SET:
        return None if reply is None else float(reply)
    return [None if p is None else (float(p[0]), float(p[1])) for p in (reply or [None])]


def check_filter_type(desc: RedisDataTypeDescription) -> None:
    """A filter cannot test a LIST, nor a SET without the set's key."""
    if desc.data_type is T.LIST:
        raise ValueError("RedisFilterBolt cannot filter on data type LIST")
    if desc.data_type is T.SET and not desc.additional_key:
        raise ValueError("RedisFilterBolt on data type SET needs the set's key as additional key")


def filter_command(desc: RedisDataTypeDescription, key: Any) -> list[Any]:
    """The command telling whether ``key`` is found."""
    t, a, k = desc.data_type, desc.additional_key, _text(key)
    table: dict[RedisDataType, list[Any]] = {
        T.STRING: ["EXISTS", k], T.SET: ["SISMEMBER", a, k], T.HASH: ["HEXISTS", a, k],
        T.SORTED_SET: ["ZSCORE", a, k], T.HYPER_LOG_LOG: ["PFCOUNT", k], T.GEO: ["GEOPOS", a, k],
    }
    return table[t]


def found(desc: RedisDataTypeDescription, reply: Any) -> bool:
    """Whether a filter's reply says the key is there."""
    t = desc.data_type
    if t in (T.STRING, T.SET, T.HASH, T.HYPER_LOG_LOG):
        return int(reply) > 0
    if t is T.SORTED_SET:
        return reply is not None
    return bool(reply) and reply[0] is not None
