"""A columnar word count over a SQLite ledger, for the dev cluster.

The ledger (``vectorcount.db``, created by the test with :func:`create_ledger`) lists batch ids 0..N-1.  The spout
emits each batch not yet acked as one ``RecordBatch`` of ``vectorcount.size`` sentences (columns ``batch``,
``sentence``), counts every ack in the ledger, and replays failed batches; after a restart it emits again what was
not acked.  ``vectorcount.rate`` paces it (batches per second), and ``vectorcount.count.sleep.ms`` slows the
count down.  A vectorized split emits ``batch, word`` rows, a fields grouping by word spreads them, and a
vectorized count writes the count of each (batch, word) to the ledger: set (``vectorcount.mode=columnar``: every
row of a batch and word arrives in one batch, so a replay writes the same count again) or added (``mixed``: the
rows go through a per-tuple bolt first, and are gathered again).
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storm_py import BasicBolt, TopologyBuilder, VectorBolt, VectorSpout

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honeydew", "kiwi", "lemon", "mango"]
SCHEMA = pa.schema([("batch", pa.int64()), ("sentence", pa.string())])


def sentence(i: int) -> str:
    """Sentence ``i``: five words picked by ``i``."""
    return " ".join(WORDS[(i * k + k * k) % len(WORDS)] for k in (1, 2, 3, 5, 7))


def truth(batches: int, size: int) -> dict[str, int]:
    """The word counts of ``batches`` batches of ``size`` sentences."""
    out: dict[str, int] = {}
    for i in range(batches * size):
        for w in sentence(i).split():
            out[w] = out.get(w, 0) + 1
    return out


def connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=60, isolation_level=None)
    db.execute("PRAGMA busy_timeout=60000")
    return db


def create_ledger(path: str, batches: int) -> None:
    """The ledger with ``batches`` batch ids, none acked, and no counts."""
    db = connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE batches (id INTEGER PRIMARY KEY, acks INTEGER NOT NULL, emits INTEGER NOT NULL)")
    db.execute("CREATE TABLE counts (batch INTEGER, word TEXT, n INTEGER NOT NULL, PRIMARY KEY (batch, word))")
    db.executemany("INSERT INTO batches VALUES (?, 0, 0)", ((i,) for i in range(batches)))
    db.close()


class LedgerBatchSpout(VectorSpout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.db = connect(conf["vectorcount.db"])
        rows = self.db.execute("SELECT id FROM batches WHERE acks = 0 ORDER BY id").fetchall()
        self.queue: deque[int] = deque(r[0] for r in rows)
        self.size = int(conf.get("vectorcount.size") or 1000)
        self.rate = float(conf.get("vectorcount.rate") or 0)
        self.started = time.monotonic()
        self.sent = 0

    def next_batch(self) -> None:
        if not self.queue:
            return
        if self.rate and self.sent >= (time.monotonic() - self.started) * self.rate:
            return
        bid = self.queue.popleft()
        self.sent += 1
        start = bid * self.size
        batch = pa.record_batch([pa.array([bid] * self.size, pa.int64()),
                                 pa.array([sentence(i) for i in range(start, start + self.size)])], schema=SCHEMA)
        self.db.execute("UPDATE batches SET emits = emits + 1 WHERE id = ?", (bid,))
        self.collector.emit(batch, msg_id=bid)

    def ack(self, msg_id: Any) -> None:
        self.db.execute("UPDATE batches SET acks = acks + 1 WHERE id = ?", (msg_id,))

    def fail(self, msg_id: Any) -> None:
        self.queue.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(SCHEMA)


class Split(VectorBolt):
    def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        words = pc.utf8_split_whitespace(batch.column("sentence"))
        rows = pc.list_parent_indices(words)
        collector.emit(pa.record_batch({"batch": pc.take(batch.column("batch"), rows), "word": pc.list_flatten(words)}))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["batch", "word"], columnar=True)


class Rows(BasicBolt):
    """A per-tuple bolt between columnar ones: each row in, the same row out."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup["batch"], tup["word"]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["batch", "word"])


class Count(VectorBolt):
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.db = connect(conf["vectorcount.db"])
        self.add = conf.get("vectorcount.mode") == "mixed"
        self.sleep = float(conf.get("vectorcount.count.sleep.ms") or 0) / 1000.0

    def execute_batch(self, batch: pa.RecordBatch, collector: Any) -> None:
        grouped = pa.Table.from_batches([batch]).group_by(["batch", "word"]).aggregate([([], "count_all")])
        rows = list(zip(grouped.column("batch").to_pylist(), grouped.column("word").to_pylist(),
                        grouped.column("count_all").to_pylist(), strict=True))
        sql = ("INSERT INTO counts VALUES (?, ?, ?) ON CONFLICT (batch, word) DO UPDATE SET n = n + excluded.n"
               if self.add else "INSERT OR REPLACE INTO counts VALUES (?, ?, ?)")
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(sql, rows)
        self.db.execute("COMMIT")
        if self.sleep:  # keeps batches in flight (a test kills a worker mid-run)
            time.sleep(self.sleep)


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("ledger", LedgerBatchSpout(), 1)
    builder.set_bolt("split", Split(), 2).shuffle_grouping("ledger")
    if conf.get("vectorcount.mode") == "mixed":
        builder.set_bolt("rows", Rows(), 2).fields_grouping("split", ["word"])
        builder.set_bolt("count", Count(), 2).fields_grouping("rows", ["word"])
    else:
        builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    return builder.create_topology()
