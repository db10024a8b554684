"""The pure part of the Redis bolts: each data type's store, lookup and filter command, and their replies."""

from __future__ import annotations

import pytest

from storm_py.redis import RedisDataTypeDescription as D
from storm_py.redis.commands import filter_command, found, geo_point, lookup_command, lookup_value, store_command


def test_store_commands_by_data_type():
    assert store_command(D("STRING"), "k", "v") == ["SET", "k", "v"]
    assert store_command(D("LIST"), "k", 3) == ["RPUSH", "k", "3"]
    assert store_command(D("HASH", "h"), "k", "v") == ["HSET", "h", "k", "v"]
    assert store_command(D("SET"), "k", "v") == ["SADD", "k", "v"]
    assert store_command(D("SORTED_SET", "z"), "m", "2") == ["ZADD", "z", "2.0", "m"]
    assert store_command(D("HYPER_LOG_LOG"), "k", "v") == ["PFADD", "k", "v"]
    assert store_command(D("GEO", "g"), "m", "13.5:38.1") == ["GEOADD", "g", "13.5", "38.1", "m"]
    with pytest.raises(ValueError, match="score 'x'"):
        store_command(D("SORTED_SET", "z"), "m", "x")
    for bad in ("13.5", "a:b", "200:10", "1:2:3"):
        with pytest.raises(ValueError, match="GEO value"):
            geo_point(bad)


def test_lookups_and_filters_by_data_type():
    assert lookup_command(D("SET"), "k") == ["SCARD", "k"]
    assert lookup_command(D("SORTED_SET", "z"), "m") == ["ZSCORE", "z", "m"]
    assert lookup_value(D("STRING"), b"v") == "v" and lookup_value(D("STRING"), None) is None
    assert lookup_value(D("HYPER_LOG_LOG"), 4) == 4
    assert lookup_value(D("SORTED_SET", "z"), b"2.5") == 2.5
    assert lookup_value(D("GEO", "g"), [None]) == [None]
    assert filter_command(D("HASH", "h"), "k") == ["HEXISTS", "h", "k"]
    assert found(D("STRING"), 1) and not found(D("STRING"), 0)
    assert found(D("SORTED_SET", "z"), b"1") and not found(D("SORTED_SET", "z"), None)
    assert not found(D("GEO", "g"), [None]) and found(D("GEO", "g"), [(1.0, 2.0)])
    assert not found(D("HYPER_LOG_LOG"), 0)
