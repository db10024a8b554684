"""storm-redis's bolts against a real redis-server: store, lookup and filter for every data type, a value that
does not fit failing its input only, a wrong password at prepare, and a server that goes away and comes back
losing nothing."""

from __future__ import annotations

import pickle
import uuid

import pytest
import redis as redis_py

from storm_py.clock import wait_until
from storm_py.redis import (
    JedisPoolConfig,
    RedisConfig,
    RedisDataType,
    RedisDataTypeDescription,
    RedisError,
    RedisFilterBolt,
    RedisFilterMapper,
    RedisLookupBolt,
    RedisLookupMapper,
    RedisStoreBolt,
    RedisStoreMapper,
)
from tests.jdbc.harness import run_bolt, tick, tup

FIELDS = ["word", "count"]


class Store(RedisStoreMapper):
    def __init__(self, data_type, additional_key=None):
        self.desc = RedisDataTypeDescription(data_type, additional_key)

    def get_data_type_description(self):
        return self.desc

    def get_key_from_tuple(self, t):
        return t.get_value_by_field("word")

    def get_value_from_tuple(self, t):
        return t.get_value_by_field("count")


class Lookup(Store, RedisLookupMapper):
    def to_tuple(self, input, value):
        return [[input.get_value_by_field("word"), value]]

    def declare_output_fields(self, declarer):
        declarer.declare(["word", "value"])


class Filter(Store, RedisFilterMapper):
    def declare_output_fields(self, declarer):
        declarer.declare(FIELDS)


def _client(port: int) -> redis_py.Redis:
    return redis_py.Redis(port=port)


STORED = [  # data type, additional key, (word, value) stored, what the lookup gives, what Redis holds
    ("STRING", None, [("apple", "3")], "3"),
    ("LIST", None, [("apple", "1"), ("apple", "2")], "1"),
    ("HASH", "h", [("apple", "5")], "5"),
    ("SET", None, [("apple", "a"), ("apple", "b"), ("apple", "a")], 2),
    ("SORTED_SET", "z", [("apple", "2.5")], 2.5),
    ("HYPER_LOG_LOG", None, [("apple", "x"), ("apple", "y"), ("apple", "x")], 2),
    ("GEO", "g", [("apple", "13.361389:38.115556")], None),
]


@pytest.mark.parametrize(("data_type", "extra", "writes", "looked_up"), STORED, ids=[s[0] for s in STORED])
def test_store_then_lookup_and_filter_by_data_type(redis_port, data_type, extra, writes, looked_up):
    prefix = uuid.uuid4().hex[:6]
    extra = f"{prefix}:{extra}" if extra else None
    config = JedisPoolConfig.Builder().set_host("127.0.0.1").set_port(redis_port).build()
    store = pickle.loads(pickle.dumps(RedisStoreBolt(config, Store(data_type, extra))))
    collector = run_bolt(store)
    inputs = [tup(FIELDS, [f"{prefix}:{w}", v]) for w, v in writes]
    for t in inputs:
        store.execute(t)
    assert collector.acked == inputs and not collector.failed
    lookup = RedisLookupBolt({"port": redis_port}, Lookup(data_type, extra))
    seen = run_bolt(lookup)
    key = f"{prefix}:apple"
    probe = tup(FIELDS, [key, None])
    lookup.execute(probe)
    assert seen.acked == [probe]
    [(values, anchor)] = seen.emitted
    assert anchor is probe
    if data_type == "GEO":
        [(lon, lat)] = values[1]
        assert lon == pytest.approx(13.361389, abs=1e-4) and lat == pytest.approx(38.115556, abs=1e-4)
    else:
        assert values == [key, looked_up]
    if data_type == "LIST":
        return  # a filter cannot test a list
    if data_type == "SET":
        return  # SET membership is tested below, with the set's key
    filt = RedisFilterBolt(RedisConfig(port=redis_port), Filter(data_type, extra))
    passed = run_bolt(filt)
    hit, miss = tup(FIELDS, [key, 1]), tup(FIELDS, [f"{prefix}:nothing", 1])
    filt.execute(hit)
    filt.execute(miss)
    assert passed.emitted == [([key, 1], hit)] and passed.acked == [hit, miss]


def test_filter_on_set_membership(redis_port):
    client = _client(redis_port)
    client.sadd("fruits", "pear")
    filt = RedisFilterBolt(RedisConfig(port=redis_port), Filter(RedisDataType.SET, "fruits"))
    passed = run_bolt(filt)
    filt.execute(tup(FIELDS, ["pear", 1]))
    filt.execute(tup(FIELDS, ["rock", 1]))
    assert [v for v, _ in passed.emitted] == [["pear", 1]]


def test_filter_refuses_list_and_set_without_key_and_types_need_their_key():
    with pytest.raises(ValueError, match="LIST"):
        RedisFilterBolt(RedisConfig(), Filter("LIST"))
    with pytest.raises(ValueError, match="SET"):
        RedisFilterBolt(RedisConfig(), Filter("SET"))
    for name in ("HASH", "SORTED_SET", "GEO"):
        with pytest.raises(ValueError, match=name):
            RedisDataTypeDescription(name)
    assert RedisDataTypeDescription.RedisDataType.GEO is RedisDataType.GEO


def test_a_value_that_does_not_fit_fails_its_input_only(redis_port):
    store = RedisStoreBolt(RedisConfig(port=redis_port), Store("SORTED_SET", "scores"))
    collector = run_bolt(store, component="scores-sink")
    good, bad = tup(FIELDS, ["ann", "1"]), tup(FIELDS, ["bob", "lots"])
    store.execute(good)
    store.execute(bad)
    assert collector.acked == [good] and collector.failed == [bad]
    assert "scores-sink" in str(collector.errors[0]) and "'lots'" in str(collector.errors[0])
    geo = RedisStoreBolt(RedisConfig(port=redis_port), Store("GEO", "places"))
    seen = run_bolt(geo)
    geo.execute(tup(FIELDS, ["x", "north"]))
    assert seen.failed and "longitude:latitude" in str(seen.errors[0])


def test_a_wrong_password_is_a_clear_error_at_prepare(redis_server):
    client = _client(redis_server.port)
    client.config_set("requirepass", "right")
    try:
        with pytest.raises(RedisError, match=r"'sink'.*(WRONGPASS|invalid password|invalid username)"):
            run_bolt(RedisStoreBolt(RedisConfig(port=redis_server.port, password="wrong"), Store("STRING")))
    finally:
        redis_py.Redis(port=redis_server.port, password="right").config_set("requirepass", "")


def test_a_server_that_goes_away_keeps_the_inputs_and_retries(redis_server):
    store = RedisStoreBolt(RedisConfig(port=redis_server.port, timeout_ms=500), Store("STRING"))
    collector = run_bolt(store)
    redis_server.stop()
    inputs = [tup(FIELDS, [f"k{i}", str(i)]) for i in range(3)]
    try:
        for t in inputs:
            store.execute(t)
        assert not collector.acked and not collector.failed
        assert "unreachable" in str(collector.errors[0]) and "'sink'" in str(collector.errors[0])
    finally:
        redis_server.start()

    def ticking() -> bool:
        store.execute(tick())
        return len(collector.acked) == 3

    wait_until(ticking, 30, what="the kept inputs written once Redis is back")
    assert collector.acked == inputs and not collector.failed
    assert _client(redis_server.port).get("k2") == b"2"


def test_configs_builders_and_a_cluster_refused_under_exactly_once():
    from storm_py.redis import JedisClusterConfig, RedisClusterConfig, RedisSentinelConfig

    cluster = JedisClusterConfig.Builder().set_nodes([("127.0.0.1", 7000)]).set_timeout(500).build()
    assert isinstance(cluster, RedisClusterConfig) and cluster.nodes == [("127.0.0.1", 7000)]
    with pytest.raises(ValueError, match="node"):
        RedisClusterConfig([])
    with pytest.raises(RedisError, match=r"'sink'.*exactly_once"):
        run_bolt(RedisStoreBolt(cluster, Store("STRING")), {"topology.state.guarantee": "exactly_once"})
    sentinel = RedisSentinelConfig([("127.0.0.1", 1)], "mymaster", timeout_ms=200)
    with pytest.raises(RedisError, match=r"'sink'.*mymaster"):
        run_bolt(RedisStoreBolt(sentinel, Store("STRING")))
    with pytest.raises(ValueError, match="host, port"):
        RedisStoreBolt({"hots": "x"}, Store("STRING"))
