"""Trident's JDBC states against PostgreSQL: JdbcMapState counts exactly once through replayed batches (opaque and
transactional), a replayed batch applied once at the state, a missing column named; JdbcState inserts a batch in
one transaction and looks rows up."""

from __future__ import annotations

import uuid
from collections import Counter

import psycopg
import pytest

from storm_py.jdbc import (
    Column,
    JdbcError,
    JdbcMapState,
    JdbcQuery,
    JdbcState,
    JdbcStateFactory,
    JdbcUpdater,
    PooledConnectionProvider,
    SimpleJdbcLookupMapper,
    SimpleJdbcMapper,
    Types,
)
from storm_py.trident import Count, FixedBatchSpout, TridentTopology
from storm_py.trident.state import GLOBAL_KEY
from storm_py.trident.tuple import Schema, TridentTuple
from tests.trident.helpers import FailOnce, Seen, record, running, wait
from tests.trident.test_state import SENTENCES, Split


def _counts_table(postgres, kind: str) -> str:
    name = f"counts_{uuid.uuid4().hex[:8]}"
    prev = ", prev BIGINT" if kind == "opaque" else ""
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {name} (word VARCHAR(50) PRIMARY KEY, val BIGINT, txid BIGINT{prev})")
    return name


def _options(postgres, table: str) -> JdbcState.Options:
    return (JdbcState.Options().with_connection_provider(PooledConnectionProvider(postgres.url))
            .with_table_name(table).with_key_columns(["word"]))


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_a_replayed_batch_applies_once_in_the_table(postgres, kind):
    table = _counts_table(postgres, kind)
    state = JdbcMapState.factory(kind, _options(postgres, table).with_cache_size(0)).make_state({}, None, 0, 1)
    for txid, n in [(1, 5), (2, 3), (2, 3), (3, 1)]:
        state.begin_commit(txid)
        state.update(lambda curr, n=n: (curr or 0) + n)
        state.commit(txid)
    with psycopg.connect(postgres.url) as conn:
        assert conn.execute(f"SELECT val, txid FROM {table} WHERE word = %s", [GLOBAL_KEY[0]]).fetchone() == (9, 3)


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_replayed_batches_count_exactly_once_in_postgres(postgres, kind):
    words_total = Counter(w for (s,) in SENTENCES for w in s.split())
    table = _counts_table(postgres, kind)
    topology = TridentTopology()
    sentences = topology.new_stream(f"jdbc-{kind}", FixedBatchSpout(["sentence"], 1, *SENTENCES))
    words = sentences.each(["sentence"], FailOnce({SENTENCES[2][0]}, Seen()), []).each(
        ["sentence"], Split(), ["word"])
    factory = JdbcMapState.factory(kind, _options(postgres, table).with_cache_size(0))
    state = words.group_by(["word"]).persistent_aggregate(factory, Count(), ["count"]).parallelism_hint(2)
    state.new_values_stream().each(["word"], FailOnce({"moon", "person"}, Seen()), [])
    done = record(sentences)

    def counts() -> dict[str, int]:
        with psycopg.connect(postgres.url) as conn:
            return dict(conn.execute(f"SELECT word, val FROM {table}").fetchall())

    with running(topology):
        wait(lambda: done.has(len(SENTENCES) + 1) and counts() == dict(words_total), "every sentence counted", 60)
    assert counts() == dict(words_total)


def test_a_missing_column_is_named_when_the_state_is_made(postgres):
    table = _counts_table(postgres, "transactional")
    with pytest.raises(JdbcError, match="'prev'"):
        JdbcMapState.factory("opaque", _options(postgres, table)).make_state({}, None, 0, 1)


def test_jdbc_state_inserts_a_batch_and_looks_rows_up(postgres):
    table = f"users_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {table} (user_id INTEGER, user_name VARCHAR(20) NOT NULL)")
    provider = PooledConnectionProvider(postgres.url)
    options = (JdbcState.Options().with_connection_provider(provider).with_table_name(table)
               .with_mapper(SimpleJdbcMapper(table, provider))
               .with_jdbc_lookup_mapper(SimpleJdbcLookupMapper(["user_id", "user_name"],
                                                               [Column("user_id", Types.INTEGER)]))
               .with_select_query(f"SELECT user_name FROM {table} WHERE user_id = ?"))
    state = JdbcStateFactory(options).make_state({}, None, 0, 1)
    schema = Schema(["user_id", "user_name"])
    JdbcUpdater().update_state(state, [TridentTuple([1, "ann"], schema), TridentTuple([2, "bob"], schema)], None)
    with pytest.raises(Exception, match="not-null"):  # the batch fails (replayed), nothing of it is written
        state.update_state([TridentTuple([3, "cy"], schema), TridentTuple([4, None], schema)])
    query = JdbcQuery()
    probe = [TridentTuple([2, None], Schema(["user_id", "x"])), TridentTuple([9, None], Schema(["user_id", "x"]))]
    results = query.batch_retrieve(state, probe)
    assert results == [[[2, "bob"]], []]
    with psycopg.connect(postgres.url) as conn:
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (2,)


def test_a_static_jdbc_state_answers_state_queries(postgres):
    table = f"depts_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres.url) as conn:
        conn.execute(f"CREATE TABLE {table} (word VARCHAR(20), dept VARCHAR(20))")
        conn.execute(f"INSERT INTO {table} VALUES ('moon', 'sky'), ('moon', 'night'), ('cow', 'farm')")
    options = (JdbcState.Options().with_connection_provider(PooledConnectionProvider(postgres.url))
               .with_jdbc_lookup_mapper(SimpleJdbcLookupMapper(["dept"], [Column("word", Types.VARCHAR)]))
               .with_select_query(f"SELECT dept FROM {table} WHERE word = ? ORDER BY dept"))
    topology = TridentTopology()
    sentences = topology.new_stream("jdbc-static", FixedBatchSpout(["sentence"], 1, *SENTENCES))
    words = sentences.each(["sentence"], Split(), ["word"])
    depts = topology.new_static_state(JdbcStateFactory(options))
    found = words.state_query(depts, ["word"], JdbcQuery(), ["dept"])
    seen = record(found)
    moons = sum(w == "moon" for (s,) in SENTENCES for w in s.split())
    cows = sum(w == "cow" for (s,) in SENTENCES for w in s.split())
    assert moons and cows

    def rows() -> Counter[tuple[str, str]]:
        return Counter((r[-2], r[-1]) for t in range(1, len(SENTENCES) + 1) for r in seen.rows(t))

    with running(topology):
        wait(lambda: seen.has(len(SENTENCES) + 1), "every sentence looked up", 60)
    assert rows() == Counter({("moon", "night"): moons, ("moon", "sky"): moons, ("cow", "farm"): cows})
