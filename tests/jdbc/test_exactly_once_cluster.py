"""Acceptance of the exactly-once sinks on the dev cluster: Kafka (100,000 records) -> an exactly_once stateful
topology (three workers, state in a real Redis) -> PostgreSQL, a Redis list and a Kafka topic (a transactional
KafkaBolt), with every worker killed (kill -9) twice while the records are still being produced: the table and the
list each hold every record exactly once.

The topic holds every record, none foreign.  It is not checked exactly once here: a worker killed while its
transaction is open leaves that transaction's records in the log, aborted, and the dev broker (tansu 0.6.0) lists
no aborted transactions in its fetch responses, so a read_committed reader sees them beside the same records
produced again in the checkpoint's committed transaction.  (Without kills, tests/kafka/test_transactional_bolt.py
checks the topic exactly once through rollbacks.)"""

from __future__ import annotations

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
from tests.cluster.harness import alive, build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "eosinks"
RECORDS = 100_000
PARTITIONS = 4


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
    ports = sorted(int(w["port"]) for w in client.topology("eosinks")["workers"])
    assert len(ports) == 3
    victims = ports * 2  # each worker twice, one kill each time another tenth of the records is in the table
    for i, port in enumerate(victims, 1):
        produce_tenth(i + 1)  # tenths 0..i+1 are in the topic: the kill lands while records are still coming
        wait_until(lambda i=i: table_count() >= i * tenth, 300, interval=0.2,
                   what=f"{i} tenths of the records written")
        victim = cluster.worker_pid(tid, port)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda port=port, victim=victim: cluster.worker_pid(tid, port) != victim, 60, interval=0.2,
                   what=f"a new worker on port {port}")
        assert alive(cluster.worker_pid(tid, port))
    for n in range(len(victims) + 2, 10):
        produce_tenth(n)
    wait_until(lambda: table_count() >= RECORDS and rd.llen(key) >= RECORDS, 600, interval=1,
               what="every record in PostgreSQL and Redis")
    cluster.cli("kill", "eosinks", "-w", "0")
    truth = Counter(values)
    rows = table_rows()
    assert rows == truth, f"duplicates {[v for v, c in rows.items() if c > 1][:5]}"
    assert Counter(v.decode() for v in rd.lrange(key, 0, -1)) == truth
    records = broker.read_all(out_topic, 2, 2 * RECORDS, timeout=30)  # all of it: a duplicate would show
    got = Counter(v.decode() for _, v in records)
    missing = [v for v in truth if v not in got]
    assert not missing and set(got) == set(truth), f"missing {len(missing)} {missing[:5]}"
    # a record is produced again at most once per kill of its task's worker (twice each)
    assert max(got.values()) <= 3, got.most_common(3)
