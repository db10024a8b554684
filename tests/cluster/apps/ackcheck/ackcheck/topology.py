"""Message ids 0..N-1 from a SQLite ledger through two bolt layers; every id must end up acked.

The ledger (``ackcheck.db``, created by the test) is the durable source: the spout emits every id not yet
acked, marks ids acked when their tuple trees complete, replays failed ids, and after a restart (its worker was
killed) emits again whatever was not acked.  ``emits`` counts every emission, so replays are measurable.
``ackcheck.rate`` paces the spout (ids per second) so that a test can break things mid-stream;
``ackcheck.payload.bytes`` pads every tuple; ``ackcheck.unencodable`` makes every payload a set, which the codec
refuses wherever a tuple crosses workers.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from typing import Any

from storm_py import BasicBolt, Spout, TopologyBuilder

FLUSH_SECS = 0.2


def create_ledger(path: str, count: int) -> None:
    """The ledger with ``count`` ids, none acked."""
    db = sqlite3.connect(path)
    with db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE ids (id INTEGER PRIMARY KEY, acked INTEGER NOT NULL, emits INTEGER NOT NULL)")
        db.executemany("INSERT INTO ids VALUES (?, 0, 0)", ((i,) for i in range(count)))
    db.close()


class LedgerSpout(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.db = sqlite3.connect(conf["ackcheck.db"], timeout=60, isolation_level=None)
        self.db.execute("PRAGMA busy_timeout=60000")
        rows = self.db.execute("SELECT id FROM ids WHERE acked = 0 ORDER BY id").fetchall()
        self.queue: deque[int] = deque(r[0] for r in rows)
        self.rate = float(conf.get("ackcheck.rate") or 0)
        self.pad = "x" * int(conf.get("ackcheck.payload.bytes") or 0)
        self.unencodable = bool(conf.get("ackcheck.unencodable"))
        self.started = time.monotonic()
        self.sent = 0
        self.emitted: list[int] = []
        self.acked: list[int] = []
        self.last_flush = time.monotonic()

    def next_tuple(self) -> None:
        self._maybe_flush()
        if not self.queue:
            return
        if self.rate and self.sent >= (time.monotonic() - self.started) * self.rate:
            return
        i = self.queue.popleft()
        self.sent += 1
        self.emitted.append(i)
        payload: Any = {i} if self.unencodable else f"payload-{i}{self.pad}"
        self.collector.emit([i, payload], i)

    def ack(self, msg_id: Any) -> None:
        self.acked.append(msg_id)
        self._maybe_flush()

    def fail(self, msg_id: Any) -> None:
        self.queue.append(msg_id)

    def _maybe_flush(self) -> None:
        if time.monotonic() - self.last_flush >= FLUSH_SECS:
            self.flush()

    def flush(self) -> None:
        self.last_flush = time.monotonic()
        if not (self.emitted or self.acked):
            return
        emitted, acked = self.emitted, self.acked
        self.emitted, self.acked = [], []
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany("UPDATE ids SET emits = emits + 1 WHERE id = ?", ((i,) for i in emitted))
        self.db.executemany("UPDATE ids SET acked = 1 WHERE id = ?", ((i,) for i in acked))
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.flush()
        self.db.close()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "payload"])


class Relay(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup.values[0], tup.values[1]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["id", "payload"])


class Sink(BasicBolt):
    """Consumes the tuples; ``ackcheck.sink.sleep.ms`` makes it slow (to cause backpressure)."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.sleep = float(conf.get("ackcheck.sink.sleep.ms") or 0) / 1000.0

    def execute(self, tup: Any, collector: Any) -> None:
        if self.sleep:
            time.sleep(self.sleep)


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("ledger", LedgerSpout(), 1)
    builder.set_bolt("relay", Relay(), int(conf.get("ackcheck.parallelism", 4))).shuffle_grouping("ledger")
    builder.set_bolt("sink", Sink(), int(conf.get("ackcheck.parallelism", 4))).fields_grouping("relay", ["id"])
    return builder.create_topology()
