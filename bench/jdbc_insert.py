"""Rows/s into PostgreSQL through JdbcInsertBolt (at-least-once and exactly-once) beside a plain psycopg loop
with the same batching, in one process.

    python bench/jdbc_insert.py [--rows 200000] [--batch 100] [--checkpoint-rows 5000] [--runs 3]

Starts a PostgreSQL server (initdb into a temporary directory, a free loopback port, as the tests do).  Each run
inserts ``--rows`` rows of (id INTEGER, name VARCHAR, score DOUBLE PRECISION) into a fresh table:

- ``psycopg``: ``executemany`` of ``--batch`` rows, one commit per batch (the ceiling);
- ``at_least_once``: the bolt's ``execute`` per tuple, batch size ``--batch`` (one transaction per batch);
- ``exactly_once``: the bolt under ``topology.state.guarantee: exactly_once`` with an in-memory managed state:
  a checkpoint every ``--checkpoint-rows`` rows (prepare, then commit: the rows and the commit row in one
  transaction), as the aligned executor drives it.

Prints one JSON line per mode: the best rows/s over the runs and the ratio to psycopg.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))

import psycopg  # noqa: E402

from storm_py.api.tuple import Fields  # noqa: E402
from storm_py.clock import SYSTEM_CLOCK  # noqa: E402
from storm_py.jdbc import Column, JdbcInsertBolt, PooledConnectionProvider, SimpleJdbcMapper, Types  # noqa: E402
from storm_py.stateful.state.key_value import KeyValueState  # noqa: E402
from tests.jdbc.harness import RecordingCollector, context, tup  # noqa: E402
from tests.postgres_fixture import start_server  # noqa: E402

FIELDS = Fields(["id", "name", "score"])


def table(url: str) -> str:
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url) as conn:
        conn.execute(f"CREATE TABLE {name} (id INTEGER, name VARCHAR(40), score DOUBLE PRECISION)")
    return name


def plain(url: str, rows: list[list[object]], batch: int) -> float:
    name = table(url)
    start = SYSTEM_CLOCK.now()
    with psycopg.connect(url) as conn:
        cur = conn.cursor()
        for i in range(0, len(rows), batch):
            cur.executemany(f"INSERT INTO {name} (id,name,score) VALUES (%s,%s,%s)", rows[i:i + batch])
            conn.commit()
    return len(rows) / (SYSTEM_CLOCK.now() - start)


def bolt(url: str, rows: list[list[object]], batch: int, exactly_once: bool, every: int) -> float:
    name = table(url)
    mapper = SimpleJdbcMapper([Column("id", Types.INTEGER), Column("name", Types.VARCHAR),
                               Column("score", Types.DOUBLE)])
    b = JdbcInsertBolt(PooledConnectionProvider(url), mapper).with_table_name(name).with_batch_size(batch)
    conf = {"topology.message.timeout.secs": 30}
    if exactly_once:
        conf["topology.state.guarantee"] = "exactly_once"
    collector = RecordingCollector()
    b.prepare(conf, context(), collector)
    tuples = [tup(["id", "name", "score"], r) for r in rows]
    state = KeyValueState()
    txid = 0
    start = SYSTEM_CLOCK.now()
    if exactly_once:
        b.init_state(state)
    for i, t in enumerate(tuples, 1):
        b.execute(t)
        if exactly_once and i % every == 0:
            b.pre_prepare(txid)
            state.prepare_commit(txid)
            b.pre_commit(txid)
            state.commit(txid)
            txid += 1
    if exactly_once:
        b.pre_prepare(txid)
        state.prepare_commit(txid)
        b.pre_commit(txid)
        state.commit(txid)
    else:
        b._flush()
    rate = len(rows) / (SYSTEM_CLOCK.now() - start)
    with psycopg.connect(url) as conn:
        got = conn.execute(f"SELECT count(*) FROM {name}").fetchone()
    assert got is not None and got[0] == len(rows), f"{got} rows written, {len(rows)} expected"
    b.cleanup()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--checkpoint-rows", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows: list[list[object]] = [[i, f"user-{i}", i * 0.5] for i in range(args.rows)]
    server, workdir = start_server()
    try:
        best = {"psycopg": 0.0, "at_least_once": 0.0, "exactly_once": 0.0}
        for _ in range(args.runs):
            best["psycopg"] = max(best["psycopg"], plain(server.url, rows, args.batch))
            best["at_least_once"] = max(best["at_least_once"], bolt(server.url, rows, args.batch, False, 0))
            best["exactly_once"] = max(best["exactly_once"],
                                       bolt(server.url, rows, args.batch, True, args.checkpoint_rows))
        for mode, rate in best.items():
            print(json.dumps({"bench": "jdbc_insert", "mode": mode, "rows_per_s": round(rate),
                              "ratio_to_psycopg": round(rate / best["psycopg"], 3), "rows": args.rows,
                              "batch": args.batch}))
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
