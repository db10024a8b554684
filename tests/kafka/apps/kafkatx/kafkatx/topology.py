"""Exactly-once word counts from a Kafka topic into SQLite with a transactional Kafka spout, under injected faults.

``partial`` counts the words of its share of each batch; the committer ``counts`` adds them to SQLite in the
commit phase, once per txid (a replayed txid carries the same records and is skipped when already applied).
Faults: a seeded share of attempts raise ``FailedException`` in ``partial.execute`` and before the commit's write.

Conf: ``kafkatx.bootstrap``, ``kafkatx.topic``, ``kafkatx.db``, ``kafkatx.tx.id``, ``kafkatx.fault.rate``,
``kafkatx.seed``, ``kafkatx.opaque`` (use the opaque spout).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from typing import Any

from storm_py.errors import FailedException
from storm_py.kafka import KafkaSpoutConfig, OpaqueKafkaSpout, TransactionalKafkaSpout
from storm_py.transactional import BaseBatchBolt, BaseTransactionalBolt, Committer, TransactionalTopologyBuilder

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS counts (word TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS applied (txid INTEGER PRIMARY KEY, words INTEGER NOT NULL)",
)


def create_db(path: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        for s in SCHEMA:
            conn.execute(s)
    finally:
        conn.close()


def read_counts(path: str) -> dict[str, int]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        return {w: int(n) for w, n in conn.execute("SELECT word, n FROM counts")}
    finally:
        conn.close()


def applied_txids(path: str) -> list[int]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        return [int(t) for (t,) in conn.execute("SELECT txid FROM applied ORDER BY txid")]
    finally:
        conn.close()


def should_fail(conf: dict[str, Any], point: str, attempt: Any) -> bool:
    rate = float(conf.get("kafkatx.fault.rate") or 0)
    if rate <= 0:
        return False
    key = f"{conf.get('kafkatx.seed', 0)}/{point}/{attempt.transaction_id}/{attempt.attempt_id}"
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") / 2**64 < rate


class PartialCount(BaseBatchBolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, id: Any) -> None:
        self.conf = conf
        self.collector = collector
        self.id = id
        self.counts: Counter[str] = Counter()
        self.checked = False

    def execute(self, tup: Any) -> None:
        if not self.checked:
            self.checked = True
            if should_fail(self.conf, "partial", self.id):
                raise FailedException(f"injected failure in partial for {self.id}")
        self.counts[tup.values[5].decode("utf-8")] += 1

    def finish_batch(self) -> None:
        for word, n in self.counts.items():
            self.collector.emit([self.id, word, n])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "word", "n"])


class CommitCounts(BaseTransactionalBolt, Committer):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any, id: Any) -> None:
        self.conf = conf
        self.db = str(conf["kafkatx.db"])
        self.attempt = id
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Any) -> None:
        self.counts[tup.values[1]] += int(tup.values[2])

    def finish_batch(self) -> None:
        if should_fail(self.conf, "commit", self.attempt):
            raise FailedException(f"injected failure before committing {self.attempt}")
        txid = self.attempt.transaction_id
        conn = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("SELECT 1 FROM applied WHERE txid = ?", (txid,)).fetchone():
                conn.execute("ROLLBACK")  # a replay of an applied transaction
                return
            for word, n in self.counts.items():
                conn.execute("INSERT INTO counts (word, n) VALUES (?, ?) "
                             "ON CONFLICT(word) DO UPDATE SET n = n + excluded.n", (word, n))
            conn.execute("INSERT INTO applied (txid, words) VALUES (?, ?)", (txid, sum(self.counts.values())))
            conn.execute("COMMIT")
        finally:
            conn.close()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id"])


def build(conf: dict[str, Any]) -> Any:
    spout_conf = KafkaSpoutConfig(str(conf["kafkatx.bootstrap"]), [str(conf["kafkatx.topic"])],
                                  max_poll_records=int(conf.get("kafkatx.batch", 200)))
    spout = OpaqueKafkaSpout(spout_conf) if conf.get("kafkatx.opaque") else TransactionalKafkaSpout(spout_conf)
    builder = TransactionalTopologyBuilder(str(conf.get("kafkatx.tx.id", "kafkatx")), "spout", spout, 2)
    builder.set_bolt("partial", PartialCount(), 2).shuffle_grouping("spout")
    builder.set_committer_bolt("counts", CommitCounts(), 1).global_grouping("partial")
    return builder.build_topology()
