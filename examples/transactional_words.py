"""storm-starter's TransactionalWords: exact per-word counts and a histogram of counts, into SQLite.

``count`` (a committer, one task per share of the words) stores each word as ``(count, prev_count, txid)``:
when the stored txid is the batch's, the batch was already applied and the stored values are re-emitted
unchanged.  ``bucketize`` turns each new count into moves between buckets of 10 (``[0, 10)``, ``[10, 20)``,
...), and ``buckets`` applies those moves to ``(count, txid)`` rows the same way.  ``buckets`` reads from a
committer, so it too runs in the commit phase, in txid order.  The database always holds the exact counts.

Run it in-process:  storm-py local examples.transactional_words:build --ttl 5 -c example.db.path=FILE
(without ``example.db.path`` a new temporary file is used).  It prints each commit's progress and, once the
finite input is all counted, the counts: the topology then idles until ``--ttl`` ends.  A fresh in-process cluster
needs a fresh database (its txids start at 1 again, so the rows of an earlier run would make new batches look
applied): an existing FILE is refused unless ``-c example.db.reuse=true``.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from typing import Any

from examples.sqlite_state import SQLiteState, db_path_from_conf
from storm_py import BasicBolt, Config, LocalCluster
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.clock import wait_until
from storm_py.transactional import (
    BaseTransactionalBolt,
    Committer,
    MemoryTransactionalSpout,
    TransactionalTopologyBuilder,
)
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BatchOutputCollector

log = logging.getLogger(__name__)

#: called at named points with the attempt being processed; may raise FailedException (fault injection)
FaultHook = Callable[[str, TransactionAttempt], None]

BUCKET_SIZE = 10
PARTITION_TAKE_PER_BATCH = 3
DEFAULT_DB = "transactional_words.db"

DATA: dict[int, list[list[Any]]] = {
    0: [["cat"], ["dog"], ["chicken"], ["cat"], ["dog"], ["apple"]],
    1: [["cat"], ["dog"], ["apple"], ["banana"]],
    2: [["cat"], ["cat"], ["cat"], ["cat"], ["cat"], ["dog"], ["dog"], ["dog"], ["dog"]],
}


class WordsDB(SQLiteState):
    """The SQLite database: ``words(word, count, prev_count, txid)`` and ``buckets(bucket, count, txid)``."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS words "
        "(word TEXT PRIMARY KEY, count INTEGER NOT NULL, prev_count INTEGER, txid INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS buckets "
        "(bucket INTEGER PRIMARY KEY, count INTEGER NOT NULL, txid INTEGER NOT NULL)",
    )

    def apply_words(self, txid: int, deltas: dict[str, int]) -> list[tuple[str, int, int | None]]:
        """Add each word's delta for ``txid`` unless applied; return ``(word, count, prev_count)`` per word."""
        out: list[tuple[str, int, int | None]] = []
        with self.transaction() as conn:
            for word, delta in sorted(deltas.items()):
                row = conn.execute("SELECT count, prev_count, txid FROM words WHERE word = ?", (word,)).fetchone()
                if row is not None and row[2] == txid:
                    out.append((word, int(row[0]), None if row[1] is None else int(row[1])))
                    continue
                prev = None if row is None else int(row[0])
                count = (prev or 0) + delta
                conn.execute(
                    "INSERT INTO words (word, count, prev_count, txid) VALUES (?, ?, ?, ?) ON CONFLICT(word) DO "
                    "UPDATE SET count = excluded.count, prev_count = excluded.prev_count, txid = excluded.txid",
                    (word, count, prev, txid),
                )
                out.append((word, count, prev))
        return out

    def apply_buckets(self, txid: int, deltas: dict[int, int]) -> list[tuple[int, int]]:
        """Add each bucket's delta for ``txid`` unless applied; return ``(bucket, count)`` per bucket."""
        out: list[tuple[int, int]] = []
        with self.transaction() as conn:
            for bucket, delta in sorted(deltas.items()):
                row = conn.execute("SELECT count, txid FROM buckets WHERE bucket = ?", (bucket,)).fetchone()
                if row is not None and row[1] == txid:
                    out.append((bucket, int(row[0])))
                    continue
                count = (0 if row is None else int(row[0])) + delta
                conn.execute(
                    "INSERT INTO buckets (bucket, count, txid) VALUES (?, ?, ?) ON CONFLICT(bucket) DO "
                    "UPDATE SET count = excluded.count, txid = excluded.txid",
                    (bucket, count, txid),
                )
                out.append((bucket, count))
        return out

    def word_counts(self) -> dict[str, int]:
        """Every word's count."""
        with self.transaction() as conn:
            return {w: int(c) for w, c in conn.execute("SELECT word, count FROM words")}

    def bucket_counts(self) -> dict[int, int]:
        """How many words each bucket holds (empty buckets left out)."""
        with self.transaction() as conn:
            return {int(b): int(c) for b, c in conn.execute("SELECT bucket, count FROM buckets WHERE count != 0")}


class _CommitWriter(BaseTransactionalBolt):
    """A bolt whose ``finish_batch`` (commit phase) writes the batch to SQLite and emits the rows it changed.

    Subclasses set ``stage`` (the fault hook's name prefix) and implement :meth:`reset` and :meth:`write`.
    """

    stage = ""

    def __init__(self, db_path: str, fault_hook: FaultHook | None = None) -> None:
        self.db_path = db_path
        self.fault_hook = fault_hook

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, id: Any
    ) -> None:
        self.collector = collector
        self.attempt: TransactionAttempt = id
        self.reset()

    def reset(self) -> None:
        """Start the batch's accumulation."""

    def write(self, db: WordsDB) -> list[list[Any]]:
        """Apply the batch to ``db``; the rows to emit (after the attempt)."""
        raise NotImplementedError

    def finish_batch(self) -> None:
        hook = self.fault_hook
        if hook is not None:
            hook(f"{self.stage}.before-write", self.attempt)
        rows = self.write(WordsDB(self.db_path, create=False))
        if hook is not None:
            hook(f"{self.stage}.after-write", self.attempt)
        for row in rows:
            self.collector.emit([self.attempt, *row])


class KeyedCountUpdater(_CommitWriter, Committer):
    """Counts its words of the batch; in the commit phase adds them to the stored counts once per txid."""

    stage = "count"

    def reset(self) -> None:
        self.counts: dict[str, int] = {}

    def execute(self, tup: Tuple) -> None:
        if self.fault_hook is not None:
            self.fault_hook("count.execute", self.attempt)
        word = str(tup.get_value(1))
        self.counts[word] = self.counts.get(word, 0) + 1

    def write(self, db: WordsDB) -> list[list[Any]]:
        rows = db.apply_words(self.attempt.transaction_id, self.counts) if self.counts else []
        return [list(r) for r in rows]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "key", "count", "prev-count"])


class Bucketize(BasicBolt):
    """A word's new count moves it into a bucket (``+1``) and, if it changed bucket, out of the old one (``-1``)."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        attempt, count, prev = tup.get_value(0), int(tup.get_value(2)), tup.get_value(3)
        bucket = count // BUCKET_SIZE
        if prev is None:
            collector.emit([attempt, bucket, 1])
        elif bucket != int(prev) // BUCKET_SIZE:
            collector.emit([attempt, bucket, 1])
            collector.emit([attempt, int(prev) // BUCKET_SIZE, -1])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["attempt", "bucket", "delta"])


class BucketCountUpdater(_CommitWriter):
    """Adds the batch's bucket moves to the stored bucket counts once per txid (it runs in the commit phase)."""

    stage = "buckets"

    def reset(self) -> None:
        self.accum: dict[int, int] = {}

    def execute(self, tup: Tuple) -> None:
        bucket = int(tup.get_value(1))
        self.accum[bucket] = self.accum.get(bucket, 0) + int(tup.get_value(2))

    def write(self, db: WordsDB) -> list[list[Any]]:
        rows = db.apply_buckets(self.attempt.transaction_id, self.accum) if self.accum else []
        return [list(r) for r in rows]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "bucket", "count"])


class Progress(BaseTransactionalBolt):
    """Prints, after each commit that changed the counts, how many of the input's words are counted, and the
    counts once all are (it follows the committer ``count`` and its child ``buckets``, so it runs in the commit
    phase too, after both wrote the txid)."""

    def __init__(self, db_path: str, total: int) -> None:
        self.db_path = db_path
        self.total = total

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, id: Any
    ) -> None:
        self.attempt: TransactionAttempt = id
        self.changed = False

    def execute(self, tup: Tuple) -> None:
        self.changed = True

    def finish_batch(self) -> None:
        if not self.changed:
            return
        db = WordsDB(self.db_path, create=False)
        words = db.word_counts()
        counted = sum(words.values())
        print(f"txid {self.attempt.transaction_id} committed: {counted} of {self.total} words counted", flush=True)
        if counted >= self.total:
            print(f"all {self.total} words counted (the input is finite: nothing more comes)", flush=True)
            print("words:", dict(sorted(words.items())), flush=True)
            print("buckets:", dict(sorted(db.bucket_counts().items())), flush=True)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass


def build_topology(
    db_path: str,
    data: dict[int, list[list[Any]]] | None = None,
    take_per_batch: int = PARTITION_TAKE_PER_BATCH,
    fault_hook: FaultHook | None = None,
    tx_id: str = "top-n-words",
    progress: bool = False,
) -> StormTopology:
    """The topology over ``data`` (default :data:`DATA`, shared with the caller), writing ``db_path``; with
    ``progress``, a :class:`Progress` bolt prints each commit's progress."""
    WordsDB(db_path)
    data = DATA if data is None else data
    spout = MemoryTransactionalSpout(data, ["word"], take_per_batch)
    builder = TransactionalTopologyBuilder(tx_id, "spout", spout, 2)
    builder.set_bolt("count", KeyedCountUpdater(db_path, fault_hook), 5).fields_grouping("spout", ["word"])
    builder.set_bolt("bucketize", Bucketize()).none_grouping("count")
    builder.set_bolt("buckets", BucketCountUpdater(db_path, fault_hook), 5).fields_grouping("bucketize", ["bucket"])
    if progress:
        shown = builder.set_bolt("progress", Progress(db_path, sum(len(rows) for rows in data.values())))
        shown.global_grouping("count").global_grouping("buckets")  # done with a txid once both are
    return builder.build_topology()


def expected_buckets(counts: dict[str, int]) -> dict[int, int]:
    """How many words fall in each bucket, given the word counts."""
    out: dict[int, int] = {}
    for count in counts.values():
        out[count // BUCKET_SIZE] = out.get(count // BUCKET_SIZE, 0) + 1
    return out


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """For ``storm-py local``: the topology writing ``example.db.path`` (default: a new temporary file), printing
    each commit's progress."""
    return build_topology(db_path_from_conf(conf, "transactional_words-", "the word counts", log), progress=True)


def main() -> None:
    """Run the topology on a fresh database until every word is counted, then print the database."""
    config = Config()
    config.set_max_spout_pending(3)
    total = sum(len(rows) for rows in DATA.values())
    with tempfile.TemporaryDirectory() as tmp:
        db = WordsDB(os.path.join(tmp, DEFAULT_DB))
        with LocalCluster() as cluster:
            cluster.submit_topology("top-n-topology", config, build_topology(db.path))
            wait_until(
                lambda: sum(db.word_counts().values()) >= total
                and db.bucket_counts() == expected_buckets(db.word_counts()),
                30,
                what="every word counted",
            )
        print("words:", dict(sorted(db.word_counts().items())))
        print("buckets:", dict(sorted(db.bucket_counts().items())))


if __name__ == "__main__":
    main()
