"""The pure cores of the connectors: Storm's placeholders rewritten per paramstyle, Column, connection URLs, the
sinks' retry backoff and checkpoint ledger."""

from __future__ import annotations

import pickle
import sqlite3

import pytest

from storm_py.jdbc import Column, HikariCPConnectionProvider, JdbcError, PooledConnectionProvider, Types
from storm_py.jdbc.driver import driver_for
from storm_py.jdbc.sql import count_placeholders, insert_query, rewrite_placeholders
from storm_py.stateful.api.sink import RetryBackoff, SinkLedger
from storm_py.stateful.state.key_value import KeyValueState


def test_placeholders_follow_the_paramstyle_and_skip_literals_identifiers_and_comments():
    q = "SELECT '?', \"a?b\", x FROM t WHERE a = ? AND b LIKE '50%' -- ?\n AND c = ? /* ? */"
    assert rewrite_placeholders(q, "qmark") == q
    assert rewrite_placeholders(q, "format") == (
        "SELECT '?', \"a?b\", x FROM t WHERE a = %s AND b LIKE '50%%' -- ?\n AND c = %s /* ? */")
    assert rewrite_placeholders("a = ? and b = ?", "numeric") == "a = :1 and b = :2"
    assert rewrite_placeholders("a = ?", "named") == "a = :p1"
    assert count_placeholders(q) == 2
    assert rewrite_placeholders("it''s ? 'it''s ?'", "format") == "it''s %s 'it''s ?'"
    with pytest.raises(ValueError, match="paramstyle"):
        rewrite_placeholders("?", "dollar")


def test_insert_query_and_column():
    assert insert_query("users", ["a", "b"]) == "INSERT INTO users (a,b) VALUES (?,?)"
    assert Column("id", Types.INTEGER).get_sql_type() == Types.INTEGER and Column("id", Types.INTEGER).val is None
    assert Column("id", 5, Types.INTEGER) == Column(column_name="id", val=5, sql_type=Types.INTEGER)
    assert Column("id", 5, Types.INTEGER) != Column("id", 6, Types.INTEGER)
    assert Types.BIGINT == -5 and Types.OTHER == 1111


def test_connection_urls():
    pg = driver_for("postgresql://storm:p%40ss@db.local:5433/app", None, {})
    assert pg.is_postgres and pg.connect_kwargs == {"host": "db.local", "port": 5433, "dbname": "app",
                                                    "user": "storm", "password": "p@ss"}
    jdbc = driver_for("jdbc:postgresql://h:5432/db", None, {"user": "u", "password": "p"})
    assert jdbc.connect_kwargs["user"] == "u" and jdbc.connect_kwargs["dbname"] == "db"
    lite = driver_for("sqlite:////tmp/x.db", None, {})
    assert lite.module is sqlite3 and lite.connect_kwargs == {"database": "/tmp/x.db"}
    with pytest.raises(ValueError, match="unsupported connection url"):
        driver_for("mysql://h/db", None, {})
    with pytest.raises(JdbcError, match="no_such_driver"):
        PooledConnectionProvider(driver="no_such_driver").driver()
    hikari = HikariCPConnectionProvider({"jdbcUrl": "jdbc:postgresql://h/db", "username": "u", "password": "p",
                                         "maximumPoolSize": 3, "connectionTimeout": 4000})
    assert hikari.max_size == 3 and hikari.connect_timeout_secs == 4
    copy = pickle.loads(pickle.dumps(hikari))
    assert copy.config_map["username"] == "u" and "***" in repr(PooledConnectionProvider("postgresql://u:pw@h/db"))


def test_retry_backoff_doubles_to_its_cap_and_resets():
    b = RetryBackoff()
    assert b.ready(0.0)
    delays = [b.failed(0.0) for _ in range(8)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert not b.ready(4.9) and b.ready(5.0)
    b.succeeded()
    assert b.ready(0.0) and b.failed(1.0) == 0.1


def test_sink_ledger_writes_only_committed_checkpoints_in_order():
    state = KeyValueState()
    ledger = SinkLedger()
    assert ledger.restore(state)  # empty: the store's record starts over
    ledger.add("a")
    ledger.seal(0)
    ledger.add("b")
    ledger.seal(1)
    ledger.add("c")  # the open checkpoint
    assert ledger.due() == []  # nothing committed yet
    ledger.commit(0)
    assert ledger.due() == [(0, ["a"])]
    ledger.written(0)
    ledger.commit(1)
    assert ledger.due() == [(1, ["b"])]
    state.prepare_commit(1)
    state.commit(1)
    assert not SinkLedger().restore(state)  # a committed state is no fresh start
    ledger.rollback()
    assert ledger.open == []
