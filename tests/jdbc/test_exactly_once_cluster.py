"""Acceptance of the exactly-once sinks on the dev cluster: Kafka (100,000 records) -> an exactly_once stateful
topology (three workers, state in a real Redis) -> PostgreSQL, a Redis list and a Kafka topic (a transactional
KafkaBolt), with every worker killed (kill -9) twice while the records are still being produced: the table, the
list and the topic as a read_committed reader sees it each hold every record exactly once.

The topic is read through tests/kafka/txn_log.py: the dev broker (tansu) writes the transactions' COMMIT and ABORT
markers into the log but lists no aborted transactions in its fetch responses, which is what a Kafka client's
read_committed mode filters by; that reader applies the markers itself, as Kafka's read_committed does."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest
import redis as redis_py

from storm_py.clock import wait_until
from storm_py.dev.redis import RedisServerProcess
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)
from tests.kafka.txn_log import PartitionLog, read_partition

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "eosinks"
RECORDS = 100_000
PARTITIONS = 4


def differences(got: Counter[str], truth: Counter[str]) -> str:
    """What ``got`` holds other than ``truth`` (empty when the same): values missing, values more than once."""
    missing = [v for v in truth if got[v] < truth[v]]
    twice = [v for v in got if got[v] > truth[v]]
    return f"{len(missing)} missing {missing[:5]}, {len(twice)} more than once {twice[:5]}" if missing or twice else ""


def test_sinks_hold_every_record_once_through_kill_9_of_each_worker_twice(
        dev_cluster, zookeeper, request, broker: Broker, redis_server: RedisServerProcess,  # noqa: F811
        postgres, tmp_path: Path) -> None:
    topic = broker.topic(PARTITIONS)
    values = [f"r{i}" for i in range(RECORDS)]
    tenth = RECORDS // 10

    def produce_tenth(n: int) -> None:  # the producer keeps writing while workers are killed
        broker.produce(topic, [(i % PARTITIONS, None, values[i].encode()) for i in range(n * tenth, (n + 1) * tenth)])

    produce_tenth(0)
    produce_tenth(1)
    out_topic = broker.topic(2, prefix="out")
    table, key = f"eo_{uuid.uuid4().hex[:8]}", f"eo:{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {table} (rec VARCHAR(20))")  # no key: a duplicate would show
    rd = redis_py.Redis(port=redis_server.port)

    def table_rows() -> Counter[str]:
        with psycopg.connect(postgres.url) as conn:
            return Counter(r[0] for r in conn.execute(f"SELECT rec FROM {table}").fetchall())

    def table_count() -> int:
        with psycopg.connect(postgres.url) as conn:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    wheel = build_wheel(APP, tmp_path / "wheels")
    state = {"port": redis_server.port, "key_prefix": "eo:"}
    conf = {"eosinks.bootstrap": broker.bootstrap, "eosinks.topic": topic, "eosinks.group": f"eo-{topic}",
            "eosinks.pg": postgres.url, "eosinks.table": table, "eosinks.redis.port": redis_server.port,
            "eosinks.list": key, "eosinks.out": out_topic, "topology.workers": 3,
            "topology.state.guarantee": "exactly_once",
            "topology.state.provider": "redis", "topology.state.provider.config": json.dumps(state),
            "topology.state.checkpoint.interval.ms": 500, "topology.message.timeout.secs": 10,
            "topology.max.spout.pending": 500}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(wheel), "eosinks.topology:build", "--name", "eosinks", *args)
    assert "Finished submitting topology: eosinks" in out.stdout
    client = cluster.client()
    tid = client.topology_id("eosinks")
    wait_until(lambda: table_count() >= 500 and rd.llen(key) >= 500, 120, interval=0.25, what="first checkpoints")
    assert len(client.topology("eosinks")["workers"]) == 3
    kills = 6  # each of the three workers twice, one kill each time another tenth of the records is in the table

    def ports() -> list[int]:
        return sorted(int(w["port"]) for w in client.topology("eosinks")["workers"])

    for i in range(1, kills + 1):
        produce_tenth(i + 1)  # tenths 0..i+1 are in the topic: the kill lands while records are still coming
        wait_until(lambda i=i: table_count() >= i * tenth, 300, interval=0.2,
                   what=f"{i} tenths of the records written")
        killed: list[tuple[int, int]] = []

        def kill(i: int = i, killed: list[tuple[int, int]] = killed) -> bool:
            current = ports()  # where the workers are now (a loaded machine may have moved one)
            port = current[(i - 1) % len(current)]
            victim = cluster.worker_pid(tid, port)
            try:  # the worker the file names may have just been replaced: read it again
                os.kill(victim, signal.SIGKILL)
            except (ProcessLookupError, FileNotFoundError):
                return False
            killed.append((port, victim))
            return True

        wait_until(kill, 60, interval=0.2, what="a worker to kill")
        ((port, victim),) = killed
        wait_until(lambda port=port, victim=victim: port not in ports() or cluster.worker_pid(tid, port) != victim,
                   60, interval=0.2, what=f"a new worker on port {port}")
    for n in range(kills + 2, 10):
        produce_tenth(n)
    wait_until(lambda: table_count() >= RECORDS and rd.llen(key) >= RECORDS, 600, interval=1,
               what="every record in PostgreSQL and Redis")
    truth = Counter(values)

    def topic_views() -> list[PartitionLog]:
        return [read_partition(broker.bootstrap, out_topic, p) for p in range(2)]

    wait_until(lambda: sum(len(log.committed) for log in topic_views()) >= RECORDS, 120, interval=1,
               what="every record committed to the output topic")
    cluster.cli("kill", "eosinks", "-w", "0")
    # each check names what differs (pytest's own diff of two counters of this size runs for many minutes)
    rows = table_rows()
    assert not differences(rows, truth), f"PostgreSQL: {differences(rows, truth)}"
    listed = Counter(v.decode() for v in rd.lrange(key, 0, -1))
    assert not differences(listed, truth), f"Redis: {differences(listed, truth)}"
    logs = topic_views()
    got = Counter(v.decode() for log in logs for _, v in log.committed if v is not None)
    assert not differences(got, truth), (f"the output topic: {differences(got, truth)}; its logs: "
                                         f"{[dataclasses.replace(log, committed=[]) for log in logs]}")
    assert sum(log.open for log in logs) == 0, "a transaction left open"
