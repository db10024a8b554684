"""Exactly-once output from Kafka across worker processes: KafkaSpout (a StatefulSpout) -> a stateful bolt
counting records per partition and passing each record on -> JdbcInsertBolt (PostgreSQL), RedisStoreBolt (a
Redis list) and a transactional KafkaBolt (another topic), under ``topology.state.guarantee: exactly_once`` with
the state in Redis."""

from __future__ import annotations

from typing import Any

from storm_py import BaseStatefulBolt, TopologyBuilder
from storm_py.jdbc import Column, JdbcInsertBolt, PooledConnectionProvider, SimpleJdbcMapper, Types
from storm_py.kafka import KafkaBolt, KafkaSpout, KafkaSpoutConfig
from storm_py.redis import RedisConfig, RedisDataTypeDescription, RedisStoreBolt, RedisStoreMapper


class Tally(BaseStatefulBolt):
    """Counts records per partition in its state and passes each record's value on."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: Any) -> None:
        self.state = state

    def execute(self, tup: Any) -> None:
        part = tup.get_value_by_field("partition")
        self.state.put(part, self.state.get(part, 0) + 1)
        self.collector.emit([tup.get_value_by_field("value").decode()], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["rec"])


class Push(RedisStoreMapper):
    def __init__(self, key: str) -> None:
        self.key = key

    def get_data_type_description(self) -> RedisDataTypeDescription:
        return RedisDataTypeDescription("LIST")

    def get_key_from_tuple(self, tup: Any) -> str:
        return self.key

    def get_value_from_tuple(self, tup: Any) -> str:
        return str(tup.get_value_by_field("rec"))


def build(conf: dict[str, Any]) -> Any:
    spout_conf = KafkaSpoutConfig(str(conf["eosinks.bootstrap"]), [str(conf["eosinks.topic"])],
                                  group_id=str(conf["eosinks.group"]), first_poll_offset_strategy="EARLIEST")
    builder = TopologyBuilder()
    builder.set_spout("records", KafkaSpout(spout_conf), 2)
    builder.set_bolt("tally", Tally(), 2).shuffle_grouping("records")
    provider = PooledConnectionProvider(str(conf["eosinks.pg"]))
    mapper = SimpleJdbcMapper([Column("rec", Types.VARCHAR)])
    table = str(conf["eosinks.table"])
    builder.set_bolt("pg", JdbcInsertBolt(provider, mapper).with_table_name(table), 2).shuffle_grouping("tally")
    redis = RedisConfig(port=int(conf["eosinks.redis.port"]))
    builder.set_bolt("rd", RedisStoreBolt(redis, Push(str(conf["eosinks.list"]))), 2).shuffle_grouping("tally")
    out = KafkaBolt(str(conf["eosinks.bootstrap"]), str(conf["eosinks.out"]), key_field=None, value_field="rec")
    builder.set_bolt("kafka", out.with_transactional_id_prefix(str(conf["eosinks.out"])), 2).shuffle_grouping("tally")
    return builder.create_topology()
