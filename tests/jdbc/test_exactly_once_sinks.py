"""JdbcInsertBolt and RedisStoreBolt as exactly-once sinks in LocalCluster: after rollbacks (a bolt raises) every
record is in the table and in the Redis list exactly once; under at_least_once the same topology duplicates."""

from __future__ import annotations

import uuid
from collections import Counter

import psycopg
import redis as redis_py

from storm_py import LocalCluster
from storm_py.clock import wait_until
from tests.jdbc.sinks import RAISED, sink_topology

N = 3000


def _table(postgres) -> str:
    name = f"eo_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {name} (id INTEGER, val VARCHAR(20))")  # no key: a duplicate would show
    return name


def _ids(postgres, table: str) -> Counter[int]:
    with psycopg.connect(postgres.url) as conn:
        return Counter(r[0] for r in conn.execute(f"SELECT id FROM {table}").fetchall())


def test_sinks_write_each_record_exactly_once_through_rollbacks(postgres, redis_port):
    RAISED.clear()
    table, key = _table(postgres), f"eo:{uuid.uuid4().hex[:8]}"
    rd = redis_py.Redis(port=redis_port)
    topo = sink_topology(N, postgres.url, table, redis_port, key, raise_on=(500, 1700))
    conf = {"topology.state.checkpoint.interval.ms": 100, "topology.state.guarantee": "exactly_once"}
    with LocalCluster() as cluster:
        cluster.submit_topology("eo-sinks", conf, topo)
        wait_until(lambda: sum(_ids(postgres, table).values()) >= N and rd.llen(key) >= N, 120, interval=0.2,
                   what="every record in PostgreSQL and Redis")
        cluster.kill_topology("eo-sinks", wait_secs=0)
    assert {500, 1700} <= RAISED
    ids = _ids(postgres, table)
    assert ids == Counter(range(N)), [i for i, c in ids.items() if c != 1][:10]
    pushed = Counter(int(v) for v in rd.lrange(key, 0, -1))
    assert pushed == Counter(range(N))
    commits = rd.hgetall("storm_py:sink_commits")
    assert any(k.decode().startswith("eo-sinks/rd/") for k in commits)
    with psycopg.connect(postgres.url) as conn:
        rows = conn.execute("SELECT component, txid FROM storm_py_sink_commits WHERE topology = 'eo-sinks'").fetchall()
    assert {r[0] for r in rows} == {"pg"} and all(r[1] >= 0 for r in rows)
