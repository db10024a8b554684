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


def test_the_insert_bolt_under_exactly_once_by_hand(postgres):
    """Rows reach the table only when their checkpoint commits, with its txid; a refused row is left out and
    reported; a database that is down delays the write; a restarted task skips what the table holds."""
    from storm_py.jdbc import Column, JdbcInsertBolt, PooledConnectionProvider, SimpleJdbcMapper, Types
    from storm_py.stateful.state.key_value import KeyValueState
    from tests.jdbc.harness import run_bolt, tick, tup

    table = f"eo_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {table} (id INTEGER, val VARCHAR(20) NOT NULL)")

    def new_bolt():
        mapper = SimpleJdbcMapper([Column("id", Types.INTEGER), Column("val", Types.VARCHAR)])
        provider = PooledConnectionProvider(postgres.url, connect_timeout_secs=2)
        bolt = JdbcInsertBolt(provider, mapper).with_table_name(table).with_commit_table(f"{table}_commits")
        return bolt, run_bolt(bolt, {"topology.state.guarantee": "exactly_once"}, component="pg")

    def stored() -> Counter[int]:
        with psycopg.connect(postgres.url) as conn:
            return Counter(r[0] for r in conn.execute(f"SELECT id FROM {table}").fetchall())

    def commit_txid() -> int:
        with psycopg.connect(postgres.url) as conn:
            return conn.execute(f"SELECT txid FROM {table}_commits").fetchone()[0]

    state = KeyValueState()
    bolt, collector = new_bolt()
    bolt.init_state(state)
    assert commit_txid() == -1
    for i, val in [(1, "a"), (2, None), (3, "c")]:
        bolt.execute(tup(["id", "val"], [i, val]))
    assert len(collector.acked) == 3 and not stored()  # acked at once, written only with the checkpoint
    bolt.pre_prepare(0)
    state.prepare_commit(0)
    assert not stored()
    bolt.pre_commit(0)
    state.commit(0)
    assert stored() == Counter([1, 3]) and commit_txid() == 0
    assert any("pg" in str(e) and "checkpoint 0" in str(e) and "not-null" in str(e) for e in collector.errors)
    bolt.execute(tup(["id", "val"], [4, "d"]))
    bolt.pre_prepare(1)
    state.prepare_commit(1)
    postgres.stop()
    try:
        bolt.pre_commit(1)  # the database is down: the checkpoint's rows stay sealed in the state
        state.commit(1)
        assert "retrying" in str(collector.errors[-1])
    finally:
        postgres.start()

    def ticking() -> bool:
        bolt.execute(tick())
        return commit_txid() == 1

    wait_until(ticking, 30, what="checkpoint 1 written once the database is back")
    assert stored() == Counter([1, 3, 4])
    # a task restarted from a state that still holds checkpoint 1 (its deletion not yet committed) skips it
    state.rollback()  # what a restart restores: the committed state, checkpoint 1's rows still in it
    assert [k for k, _ in state] == [1]
    again, _ = new_bolt()
    again.init_state(state)
    again.pre_commit(1)
    assert stored() == Counter([1, 3, 4])
