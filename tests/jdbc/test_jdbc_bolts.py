"""storm-jdbc's bolts against a real PostgreSQL and SQLite: insert by table metadata and by a custom query,
batches, lookups (a tuple per row), a refused row failing its input only, a wrong password at prepare, and a
database that goes down and comes back losing nothing."""

from __future__ import annotations

import pickle
import uuid

import psycopg
import pytest

from storm_py.clock import wait_until
from storm_py.jdbc import (
    Column,
    HikariCPConnectionProvider,
    JdbcClient,
    JdbcError,
    JdbcInsertBolt,
    JdbcLookupBolt,
    PooledConnectionProvider,
    SimpleJdbcLookupMapper,
    SimpleJdbcMapper,
    Types,
)
from tests.jdbc.harness import run_bolt, tick, tup
from tests.postgres_fixture import PASSWORD, USER


def _table(postgres) -> str:
    name = f"users_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {name} (user_id INTEGER PRIMARY KEY, user_name VARCHAR(100) NOT NULL, "
                     "dept_name VARCHAR(100))")
    return name


def _rows(postgres, table: str) -> list[tuple]:
    with psycopg.connect(postgres.url) as conn:
        return sorted(conn.execute(f"SELECT user_id, user_name, dept_name FROM {table}").fetchall())


FIELDS = ["user_id", "user_name", "dept_name"]


def test_insert_by_table_metadata_in_batches(postgres):
    table = _table(postgres)
    provider = PooledConnectionProvider(postgres.url)
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper(table, provider)).with_table_name(table).with_batch_size(3)
    bolt = pickle.loads(pickle.dumps(bolt))  # as the topology ships it
    collector = run_bolt(bolt)
    inputs = [tup(FIELDS, [i, f"user{i}", "eng"]) for i in range(7)]
    for t in inputs[:3]:
        bolt.execute(t)
    assert len(collector.acked) == 3  # a full batch is written at once
    for t in inputs[3:]:
        bolt.execute(t)
    assert len(collector.acked) == 6
    bolt.execute(tick())  # the rest on the next tick
    assert collector.acked == inputs and not collector.failed
    assert _rows(postgres, table) == [(i, f"user{i}", "eng") for i in range(7)]
    bolt.cleanup()


def test_custom_insert_query_with_a_given_schema_and_hikari_keys(postgres):
    table = _table(postgres)
    provider = HikariCPConnectionProvider({
        "dataSourceClassName": "org.postgresql.ds.PGSimpleDataSource",
        "dataSource.url": f"jdbc:postgresql://127.0.0.1:{postgres.port}/storm",
        "dataSource.user": USER, "dataSource.password": PASSWORD,
    })
    schema = [Column("user_id", Types.INTEGER), Column("user_name", Types.VARCHAR)]
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper(schema)).with_insert_query(
        f"INSERT INTO {table} (user_id, user_name, dept_name) VALUES (?, upper(?), 'ops?') "
        "ON CONFLICT (user_id) DO NOTHING")
    collector = run_bolt(bolt)
    bolt.execute(tup(FIELDS, [1, "ann", "x"]))
    bolt.execute(tup(FIELDS, [1, "ann", "x"]))
    bolt.execute(tick())
    assert len(collector.acked) == 2
    assert _rows(postgres, table) == [(1, "ANN", "ops?")]


def test_table_name_and_insert_query_exclude_each_other():
    provider = PooledConnectionProvider("sqlite:///:memory:")
    with pytest.raises(ValueError, match="exclude"):
        JdbcInsertBolt(provider, SimpleJdbcMapper([Column("a", Types.INTEGER)])).with_table_name("t") \
            .with_insert_query("INSERT INTO t VALUES (?)")


def test_a_refused_row_fails_only_its_input_with_the_database_message(postgres):
    table = _table(postgres)
    provider = PooledConnectionProvider(postgres.url)
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper(table, provider)).with_table_name(table)
    collector = run_bolt(bolt, component="users-sink")
    good1, bad_null, bad_type, good2 = (tup(FIELDS, [1, "a", None]), tup(FIELDS, [2, None, "x"]),
                                         tup(FIELDS, ["two", "b", None]), tup(FIELDS, [3, "c", None]))
    for t in (good1, bad_null, bad_type, good2):
        bolt.execute(t)
    bolt.execute(tick())
    assert collector.acked == [good1, good2]
    assert collector.failed == [bad_null, bad_type]
    messages = [str(e) for e in collector.errors]
    assert any("users-sink" in m and 'null value in column "user_name"' in m for m in messages), messages
    assert any("users-sink" in m and "invalid input syntax for type integer" in m for m in messages), messages
    assert _rows(postgres, table) == [(1, "a", None), (3, "c", None)]


def test_a_wrong_password_is_a_clear_error_at_prepare(postgres):
    url = f"postgresql://{USER}:wrong@127.0.0.1:{postgres.port}/storm"
    provider = PooledConnectionProvider(url)
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper([Column("a", Types.INTEGER)])).with_table_name("t")
    with pytest.raises(JdbcError, match=r"'sink'.*password authentication failed for user \"storm\""):
        run_bolt(bolt)


def test_an_unknown_table_is_named_at_prepare(postgres):
    provider = PooledConnectionProvider(postgres.url)
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper("no_such_table", provider)).with_table_name("no_such_table")
    with pytest.raises(JdbcError, match="no_such_table"):
        run_bolt(bolt)


def test_lookup_emits_one_tuple_per_row_anchored(postgres):
    table = _table(postgres)
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"INSERT INTO {table} VALUES (1, 'ann', 'eng'), (2, 'bob', 'eng'), (3, 'cy', 'ops')")
    provider = PooledConnectionProvider(postgres.url)
    mapper = SimpleJdbcLookupMapper(["dept_name", "user_id", "user_name"], [Column("dept_name", Types.VARCHAR)])
    bolt = JdbcLookupBolt(provider, f"SELECT user_id, USER_NAME FROM {table} WHERE dept_name = ? ORDER BY user_id",
                          mapper)
    collector = run_bolt(bolt)
    eng, none = tup(["dept_name"], ["eng"]), tup(["dept_name"], ["hr"])
    bolt.execute(eng)
    bolt.execute(none)
    assert collector.emitted == [(["eng", 1, "ann"], eng), (["eng", 2, "bob"], eng)]
    assert collector.acked == [eng, none]
    client = JdbcClient(provider, 5)
    rows = client.select(f"SELECT user_id, user_name FROM {table} WHERE user_id = ?", [Column("id", 3, Types.INTEGER)])
    assert rows == [[Column("user_id", 3, Types.INTEGER), Column("user_name", "cy", Types.VARCHAR)]]
    assert [c.column_name for c in client.get_column_schema(table)] == FIELDS


def test_sqlite_insert_and_lookup(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    provider = PooledConnectionProvider(url)
    JdbcClient(provider).execute_sql("CREATE TABLE users (user_id INTEGER PRIMARY KEY, user_name TEXT NOT NULL)")
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper("users", provider)).with_table_name("users")
    collector = run_bolt(bolt)
    ok, bad = tup(["user_id", "user_name"], [1, "ann"]), tup(["user_id", "user_name"], [2, None])
    bolt.execute(ok)
    bolt.execute(bad)
    bolt.execute(tick())
    assert collector.acked == [ok] and collector.failed == [bad]
    assert "NOT NULL constraint failed: users.user_name" in str(collector.errors[0])
    lookup = JdbcLookupBolt(provider, "SELECT user_name FROM users WHERE user_id = ?",
                            SimpleJdbcLookupMapper(["user_id", "user_name"], [Column("user_id", Types.INTEGER)]))
    seen = run_bolt(lookup)
    lookup.execute(tup(["user_id"], [1]))
    assert seen.emitted[0][0] == [1, "ann"]


def test_a_database_that_is_down_keeps_the_batch_and_retries(postgres):
    table = _table(postgres)
    provider = PooledConnectionProvider(postgres.url, connect_timeout_secs=2)
    bolt = JdbcInsertBolt(provider, SimpleJdbcMapper(table, provider)).with_table_name(table)
    collector = run_bolt(bolt)
    postgres.stop()
    try:
        inputs = [tup(FIELDS, [i, f"u{i}", None]) for i in range(5)]
        for t in inputs:
            bolt.execute(t)
        bolt.execute(tick())
        assert not collector.acked and not collector.failed
        assert collector.errors and "retrying" in str(collector.errors[0]) and "'sink'" in str(collector.errors[0])
    finally:
        postgres.start()
    def ticking() -> bool:
        bolt.execute(tick())
        return len(collector.acked) == 5

    wait_until(ticking, 30, what="the kept batch written once the database is back")
    assert collector.acked == inputs and not collector.failed
    assert _rows(postgres, table) == [(i, f"u{i}", None) for i in range(5)]


def test_a_lookup_longer_than_the_query_timeout_is_cancelled_and_fails(postgres):
    provider = PooledConnectionProvider(postgres.url)
    mapper = SimpleJdbcLookupMapper(["id", "slept"], [Column("id", Types.INTEGER)])
    bolt = JdbcLookupBolt(provider, "SELECT pg_sleep(5)::text AS slept, ?::int AS id", mapper) \
        .with_query_timeout_secs(1)
    collector = run_bolt(bolt, component="slow-lookup")
    slow = tup(["id"], [1])
    bolt.execute(slow)
    assert collector.failed == [slow] and not collector.emitted
    assert "slow-lookup" in str(collector.errors[0]) and "statement timeout" in str(collector.errors[0])
