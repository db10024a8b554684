"""storm-starter's TransactionalGlobalCount: count every tuple exactly once, into SQLite.

Batches of words are counted in parallel (``partial-count``), then summed by a committer (``sum``) that
stores ``(count, txid)``.  Commits happen strictly in txid order and a replayed transaction carries the same
tuples, so when the stored txid equals the batch's txid the batch was already applied and is skipped: the
count is exact however often batches fail and replay.  Every application is also logged in
``global_count_log`` keyed by txid, so a double application would be visible (and refused) in the database.

Run it in-process:  storm-py local examples.transactional_global_count:build --ttl 5 -c example.db.path=FILE
(without ``example.db.path`` a new temporary file is used).  The database belongs with the topology's
transactional state: a fresh cluster starts again at txid 1, so give it a fresh database too.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from typing import Any

from examples.sqlite_state import SQLiteState, db_path_from_conf
from storm_py import Config, LocalCluster
from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.clock import wait_until
from storm_py.transactional import (
    BaseBatchBolt,
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

PARTITION_TAKE_PER_BATCH = 3
DEFAULT_DB = "transactional_global_count.db"
GLOBAL_KEY = "GLOBAL-COUNT"

DATA: dict[int, list[list[Any]]] = {
    0: [["cat"], ["dog"], ["chicken"], ["cat"], ["dog"], ["apple"]],
    1: [["cat"], ["dog"], ["apple"], ["banana"]],
    2: [["cat"], ["cat"], ["cat"], ["cat"], ["cat"], ["dog"], ["dog"], ["dog"], ["dog"]],
}


class GlobalCountDB(SQLiteState):
    """The SQLite database the committer writes: the count with its txid, and a log of applications."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS global_count "
        "(name TEXT PRIMARY KEY, count INTEGER NOT NULL, txid INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS global_count_log (txid INTEGER PRIMARY KEY, count INTEGER NOT NULL)",
    )

    def apply(self, txid: int, delta: int) -> tuple[int, bool]:
        """Add ``delta`` for transaction ``txid`` unless it was applied; return (count, applied now)."""
        with self.transaction() as conn:
            row = conn.execute("SELECT count, txid FROM global_count WHERE name = ?", (GLOBAL_KEY,)).fetchone()
            if row is not None and row[1] == txid:
                return int(row[0]), False
            count = (int(row[0]) if row is not None else 0) + delta
            conn.execute(
                "INSERT INTO global_count (name, count, txid) VALUES (?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET count = excluded.count, txid = excluded.txid",
                (GLOBAL_KEY, count, txid),
            )
            conn.execute("INSERT INTO global_count_log (txid, count) VALUES (?, ?)", (txid, count))
            return count, True

    def read(self) -> tuple[int, int] | None:
        """``(count, txid)``, or None before the first commit."""
        with self.transaction() as conn:
            row = conn.execute("SELECT count, txid FROM global_count WHERE name = ?", (GLOBAL_KEY,)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def history(self) -> list[tuple[int, int]]:
        """Every application ``(txid, count after it)`` in txid order."""
        with self.transaction() as conn:
            rows = conn.execute("SELECT txid, count FROM global_count_log ORDER BY txid")
            return [(int(t), int(c)) for t, c in rows]


class BatchCount(BaseBatchBolt):
    """Counts the tuples of its share of a batch."""

    def __init__(self, fault_hook: FaultHook | None = None) -> None:
        self.fault_hook = fault_hook

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, id: Any
    ) -> None:
        self.collector = collector
        self.id = id
        self.count = 0

    def execute(self, tup: Tuple) -> None:
        if self.fault_hook is not None:
            self.fault_hook("partial-count.execute", self.id)
        self.count += 1

    def finish_batch(self) -> None:
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "count"])


class UpdateGlobalCount(BaseTransactionalBolt, Committer):
    """Adds the batch's partial counts to the stored count, once per transaction (the commit phase)."""

    def __init__(self, db_path: str, fault_hook: FaultHook | None = None) -> None:
        self.db_path = db_path
        self.fault_hook = fault_hook

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, id: Any
    ) -> None:
        self.collector = collector
        self.attempt: TransactionAttempt = id
        self.sum = 0

    def execute(self, tup: Tuple) -> None:
        self.sum += int(tup.get_value(1))

    def finish_batch(self) -> None:
        hook = self.fault_hook
        if hook is not None:
            hook("sum.before-write", self.attempt)
        db = GlobalCountDB(self.db_path, create=False)
        count, applied = db.apply(self.attempt.transaction_id, self.sum)
        log.debug("txid %d: count %d (%s)", self.attempt.transaction_id, count, "applied" if applied else "replay")
        if hook is not None:
            hook("sum.after-write", self.attempt)
        self.collector.emit([self.attempt, count])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "sum"])


class Progress(BaseTransactionalBolt):
    """Prints the global count after each commit that changed it (it follows the committer ``sum``, so it runs in
    the commit phase too, after the count is written, and ``partial-count``, to tell a batch that counted
    nothing), and says so when the last tuple of the input is counted."""

    def __init__(self, total: int) -> None:
        self.total = total

    def prepare(
        self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector, id: Any
    ) -> None:
        self.attempt: TransactionAttempt = id
        self.count: int | None = None
        self.added = 0

    def execute(self, tup: Tuple) -> None:
        if tup.source_component == "sum":
            self.count = int(tup.get_value(1))
        else:
            self.added += int(tup.get_value(1))

    def finish_batch(self) -> None:
        if self.count is None or not self.added:
            return
        print(f"txid {self.attempt.transaction_id} committed: global count {self.count} of {self.total}", flush=True)
        if self.count >= self.total:
            print(f"all {self.total} tuples counted (the input is finite: nothing more comes)", flush=True)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass


def build_topology(
    db_path: str,
    data: dict[int, list[list[Any]]] | None = None,
    take_per_batch: int = PARTITION_TAKE_PER_BATCH,
    fault_hook: FaultHook | None = None,
    tx_id: str = "global-count",
    spout_parallelism: int = 3,
    progress: bool = False,
) -> StormTopology:
    """The topology over ``data`` (default :data:`DATA`, shared with the caller), writing ``db_path``; with
    ``progress``, a :class:`Progress` bolt prints the count after each commit."""
    GlobalCountDB(db_path)
    spout = MemoryTransactionalSpout(DATA if data is None else data, ["word"], take_per_batch)
    builder = TransactionalTopologyBuilder(tx_id, "spout", spout, spout_parallelism)
    builder.set_bolt("partial-count", BatchCount(fault_hook), 5).none_grouping("spout")
    builder.set_bolt("sum", UpdateGlobalCount(db_path, fault_hook)).global_grouping("partial-count")
    if progress:
        total = sum(len(rows) for rows in (DATA if data is None else data).values())
        builder.set_bolt("progress", Progress(total)).global_grouping("sum").global_grouping("partial-count")
    return builder.build_topology()


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """For ``storm-py local``: the topology writing ``example.db.path`` (default: a new temporary file), printing
    the count after each commit."""
    return build_topology(db_path_from_conf(conf, "transactional_global_count-", "the global count", log),
                          progress=True)


def main() -> None:
    """Run the topology on a fresh database until every tuple is counted, then print the database."""
    config = Config()
    config.set_max_spout_pending(3)
    total = sum(len(rows) for rows in DATA.values())
    with tempfile.TemporaryDirectory() as tmp:
        db = GlobalCountDB(os.path.join(tmp, DEFAULT_DB))
        with LocalCluster() as cluster:
            cluster.submit_topology("global-count-topology", config, build_topology(db.path))
            wait_until(lambda: (db.read() or (0, 0))[0] >= total, 30, what="every tuple counted")
        print("count, txid:", db.read())
        print("applications (txid, count):", db.history())


if __name__ == "__main__":
    main()
