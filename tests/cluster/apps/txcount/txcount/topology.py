"""storm-starter's transactional global count and word counts over one deterministic spout, with seeded failures.

``build(conf)`` wires a :class:`~storm_py.transactional.SequencePartitionedSpout` (words picked by
:class:`~storm_py.transactional.SeededWords`) into the bolts of ``examples.transactional_global_count``
(``partial-count`` -> committer ``sum``) and ``examples.transactional_words`` (committer ``count`` ->
``bucketize`` -> ``buckets``), all writing the SQLite database ``txcount.db``.  Every process derives the same
batches from the conf, so the truth is known (:func:`expected_counts`) and replays are identical whichever
worker runs them.

:class:`FaultPlan` raises ``FailedException`` in the processing phase (``partial-count`` and ``count``
executing) and the commit phase (``sum``, ``count``, ``buckets`` before or after writing) for a seeded
``txcount.fault.rate`` of the attempts.  An attempt is known by its txid and its rank among the attempts of
that txid, ranks being handed out in the database, so every worker process draws the same decisions whatever
the random attempt ids.  The database also logs every commit-phase call (with the run and the process) and
every failure fired, for the test to check commit order and where the commits ran.

Conf: ``txcount.db`` (required), ``txcount.tx.id``, ``txcount.seed``, ``txcount.partitions``, ``txcount.take``,
``txcount.batches`` (batches of data per partition), ``txcount.interval`` (seconds between new transactions),
``txcount.fault.rate``, ``txcount.run`` (a label logged with commit calls).
"""

from __future__ import annotations

import collections
import os
import random
import sqlite3
import threading
from typing import Any

from examples import transactional_global_count as global_count
from examples import transactional_words as words
from storm_py.errors import FailedException
from storm_py.transactional import SeededWords, SequencePartitionedSpout, TransactionalTopologyBuilder
from storm_py.transactional.attempt import TransactionAttempt

VOCABULARY = ["apple", "banana", "cat", "dog", "egg", "fig", "grape", "ham", "ice", "jam", "kiwi", "lime"]
PROCESSING_POINTS = frozenset({"partial-count.execute", "count.execute"})
COMMITTERS = frozenset({"sum", "count", "buckets"})

DEFAULTS: dict[str, Any] = {
    "txcount.tx.id": "txcount",
    "txcount.seed": 1,
    "txcount.partitions": 2,
    "txcount.take": 4,
    "txcount.batches": 50,
    "txcount.interval": 0.2,
    "txcount.fault.rate": 0.1,
    "txcount.run": 1,
}

FAULT_TABLES = (
    "CREATE TABLE IF NOT EXISTS fault_attempts (seq INTEGER PRIMARY KEY AUTOINCREMENT, txid INTEGER NOT NULL, "
    "attempt_id INTEGER NOT NULL, UNIQUE (txid, attempt_id))",
    "CREATE TABLE IF NOT EXISTS fault_fired (point TEXT NOT NULL, txid INTEGER NOT NULL, rank INTEGER NOT NULL, "
    "run INTEGER NOT NULL, pid INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS commit_calls (seq INTEGER PRIMARY KEY AUTOINCREMENT, run INTEGER NOT NULL, "
    "point TEXT NOT NULL, txid INTEGER NOT NULL, attempt_id INTEGER NOT NULL, pid INTEGER NOT NULL)",
)


def setting(conf: dict[str, Any], key: str) -> Any:
    """``conf[key]`` or its default."""
    value = conf.get(key)
    return DEFAULTS[key] if value is None else value


def spout_from_conf(conf: dict[str, Any]) -> SequencePartitionedSpout:
    """The spout the conf describes (the same in every process)."""
    take = int(setting(conf, "txcount.take"))
    return SequencePartitionedSpout(
        SeededWords(VOCABULARY, int(setting(conf, "txcount.seed"))), ["word"], take,
        partitions=int(setting(conf, "txcount.partitions")), length=take * int(setting(conf, "txcount.batches")),
        batch_interval_secs=float(setting(conf, "txcount.interval")),
    )


def expected_counts(conf: dict[str, Any]) -> collections.Counter[str]:
    """Every word's count once the whole source is counted."""
    spout = spout_from_conf(conf)
    return collections.Counter(values[0] for p in range(spout.partitions) for values in spout.tuples(p))


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


def create_db(path: str) -> None:
    """The database of a run: the examples' tables and the fault plan's."""
    global_count.GlobalCountDB(path)
    words.WordsDB(path)
    conn = _connect(path)
    try:
        for sql in FAULT_TABLES:
            conn.execute(sql)
    finally:
        conn.close()


def _rows(path: str, sql: str) -> list[tuple[Any, ...]]:
    conn = _connect(path)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def commit_calls(path: str) -> list[tuple[int, str, int, int]]:
    """Every commit-phase call ``(run, point, txid, pid)`` in the order they happened."""
    return [(int(r), str(p), int(t), int(pid))
            for r, p, t, pid in _rows(path, "SELECT run, point, txid, pid FROM commit_calls ORDER BY seq")]


def fired(path: str) -> list[tuple[str, int, int]]:
    """Every failure injected ``(point, txid, rank)``."""
    return [(str(p), int(t), int(k)) for p, t, k in _rows(path, "SELECT point, txid, rank FROM fault_fired")]


class FaultPlan:
    """Seeded ``FailedException``s shared through the database by every process (see the module docstring).

    Every copy of a component holds this one object (deep copies return it), so what a process learned about
    an attempt is remembered across the bolt instances of that attempt.
    """

    def __init__(self, path: str, seed: int, rate: float, run: int) -> None:
        self.path = path
        self.seed = seed
        self.rate = rate
        self.run = run
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._ranks: dict[tuple[int, int], int] = {}
        self._decided: dict[tuple[str, int, int], bool] = {}

    def __deepcopy__(self, memo: dict[int, Any]) -> FaultPlan:
        return self

    def __copy__(self) -> FaultPlan:
        return self

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = _connect(self.path)
        return self._conn

    def _rank(self, attempt: TransactionAttempt) -> int:
        key = (attempt.transaction_id, attempt.attempt_id)
        rank = self._ranks.get(key)
        if rank is None:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT OR IGNORE INTO fault_attempts (txid, attempt_id) VALUES (?, ?)", key)
                (seq,) = db.execute("SELECT seq FROM fault_attempts WHERE txid = ? AND attempt_id = ?", key).fetchone()
                (rank,) = db.execute("SELECT COUNT(*) FROM fault_attempts WHERE txid = ? AND seq < ?",
                                     (key[0], seq)).fetchone()
            finally:
                db.execute("COMMIT")
            self._ranks[key] = rank = int(rank)
        return rank

    def _draw(self, *key: Any) -> random.Random:
        return random.Random("/".join(str(k) for k in (self.seed, *key)))

    def __call__(self, point: str, attempt: TransactionAttempt) -> None:
        txid = attempt.transaction_id
        component, _, where = point.partition(".")
        with self._lock:
            if point in PROCESSING_POINTS:
                decided = self._decided.get((point, txid, attempt.attempt_id))
                if decided is not None:
                    fail, fresh = decided, False
                else:
                    fail, fresh = self._draw(point, txid, self._rank(attempt)).random() < self.rate, True
                    self._decided[(point, txid, attempt.attempt_id)] = fail
            else:
                rank = self._rank(attempt)
                self._db().execute(
                    "INSERT INTO commit_calls (run, point, txid, attempt_id, pid) VALUES (?, ?, ?, ?, ?)",
                    (self.run, point, txid, attempt.attempt_id, os.getpid()),
                )
                draw = self._draw(component, "commit", txid, rank)
                fail = component in COMMITTERS and draw.random() < self.rate and where == draw.choice(
                    ["before-write", "after-write"])
                fresh = True
            if fail and fresh:
                self._db().execute("INSERT INTO fault_fired (point, txid, rank, run, pid) VALUES (?, ?, ?, ?, ?)",
                                   (point, txid, self._rank(attempt), self.run, os.getpid()))
        if fail:
            raise FailedException(f"injected failure at {point} of {attempt!r}")


def build(conf: dict[str, Any]) -> Any:
    """The topology: both examples' bolts on one :class:`SequencePartitionedSpout`, writing ``txcount.db``."""
    db_path = str(conf["txcount.db"])
    plan = FaultPlan(db_path, int(setting(conf, "txcount.seed")), float(setting(conf, "txcount.fault.rate")),
                     int(setting(conf, "txcount.run")))
    builder = TransactionalTopologyBuilder(str(setting(conf, "txcount.tx.id")), "spout", spout_from_conf(conf), 2)
    builder.set_bolt("partial-count", global_count.BatchCount(plan), 3).none_grouping("spout")
    builder.set_bolt("sum", global_count.UpdateGlobalCount(db_path, plan)).global_grouping("partial-count")
    builder.set_bolt("count", words.KeyedCountUpdater(db_path, plan), 3).fields_grouping("spout", ["word"])
    builder.set_bolt("bucketize", words.Bucketize()).none_grouping("count")
    builder.set_bolt("buckets", words.BucketCountUpdater(db_path, plan), 2).fields_grouping("bucketize", ["bucket"])
    return builder.build_topology()
