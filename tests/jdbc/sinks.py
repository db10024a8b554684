"""Components of the exactly-once sink tests: a StatefulSpout of numbered records, a bolt that raises once on
chosen records (a rollback), and the sinks' mappers."""

from __future__ import annotations

import threading
from typing import Any

from storm_py import Bolt, StatefulSpout, TopologyBuilder
from storm_py.jdbc import Column, JdbcInsertBolt, PooledConnectionProvider, SimpleJdbcMapper, Types
from storm_py.redis import RedisConfig, RedisDataTypeDescription, RedisStoreBolt, RedisStoreMapper

RAISED: set[int] = set()
LOCK = threading.Lock()


class NumberSpout(StatefulSpout):
    """Emits ``n`` records 0..n-1 from a position kept in its state."""

    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.pos = 0

    def init_state(self, state):
        self.state = state
        self.pos = state.get("pos", 0)

    def pre_prepare(self, txid):
        self.state.put("pos", self.pos)

    def next_tuple(self):
        if self.pos < self.n:
            self.collector.emit([self.pos, f"v{self.pos}"], msg_id=self.pos)
            self.pos += 1

    def declare_output_fields(self, declarer):
        declarer.declare(["id", "val"])


class RaiseOnce(Bolt):
    """Passes records on; raises the first time it sees one of ``raise_on`` (every component rolls back)."""

    def __init__(self, raise_on: tuple[int, ...]) -> None:
        self.raise_on = raise_on

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        i = tup.get_value_by_field("id")
        with LOCK:
            first = i in self.raise_on and i not in RAISED
            RAISED.add(i)
        if first:
            raise RuntimeError(f"record {i} raises once")
        self.collector.emit([i, tup.get_value_by_field("val")], anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        declarer.declare(["id", "val"])


class ListStore(RedisStoreMapper):
    """RPUSH each record's id to one list (a record pushed twice shows as a duplicate)."""

    def __init__(self, key: str) -> None:
        self.key = key

    def get_data_type_description(self) -> RedisDataTypeDescription:
        return RedisDataTypeDescription("LIST")

    def get_key_from_tuple(self, tup: Any) -> str:
        return self.key

    def get_value_from_tuple(self, tup: Any) -> str:
        return str(tup.get_value_by_field("id"))


def sink_topology(n: int, pg_url: str, table: str, redis_port: int, redis_key: str, raise_on: tuple[int, ...] = ()):
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(n))
    builder.set_bolt("pass", RaiseOnce(raise_on), 2).shuffle_grouping("numbers")
    provider = PooledConnectionProvider(pg_url)
    mapper = SimpleJdbcMapper([Column("id", Types.INTEGER), Column("val", Types.VARCHAR)])
    builder.set_bolt("pg", JdbcInsertBolt(provider, mapper).with_table_name(table), 2).shuffle_grouping("pass")
    builder.set_bolt("rd", RedisStoreBolt(RedisConfig(port=redis_port), ListStore(redis_key)), 2) \
        .shuffle_grouping("pass")
    return builder.create_topology()
