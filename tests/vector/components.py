"""Columnar test components: a spout of sentence batches, a vectorized split and count, a per-tuple counter, and
the shared store they report into."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storm_py import BasicBolt, Fields, Tuple, VectorBolt, VectorSpout
from storm_py.testing.registry import Shared
from storm_py.vector import VectorOutputCollector

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honeydew"]


def sentence(i: int) -> str:
    """Sentence ``i``: four words picked by ``i``."""
    return " ".join(WORDS[(i * k + k) % len(WORDS)] for k in (1, 2, 3, 5))


def expected_counts(batches: int, size: int) -> Counter[str]:
    """The word counts of ``batches`` batches of ``size`` sentences."""
    out: Counter[str] = Counter()
    for i in range(batches * size):
        out.update(sentence(i).split())
    return out


class Store(Shared):
    """What the test reads: acked and failed batch ids, counts per (batch, word) (idempotent), errors seen."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.counts: dict[tuple[Any, str], int] = {}
        #: rows each counting task got, and the tasks each word went to
        self.rows_seen = 0
        self.owners: dict[str, set[int]] = {}

    def total(self) -> Counter[str]:
        with self.lock:
            out: Counter[str] = Counter()
            for (_, word), n in self.counts.items():
                out[word] += n
            return out


class SentenceBatchSpout(VectorSpout):
    """Emits ``batches`` batches of ``size`` sentences with columns ``batch`` (its id) and ``sentence``; replays
    failed batches."""

    def __init__(self, store: Store, batches: int, size: int = 1000) -> None:
        self.store = store
        self.batches = batches
        self.size = size
        self.next_id = 0
        self.replay: list[int] = []
        self.collector: Any = None

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def batch(self, bid: int) -> pa.RecordBatch:
        start = bid * self.size
        return pa.record_batch({"batch": pa.array([bid] * self.size, pa.int64()),
                                "sentence": [sentence(i) for i in range(start, start + self.size)]})

    def next_batch(self) -> None:
        if self.replay:
            bid = self.replay.pop()
        elif self.next_id < self.batches:
            bid = self.next_id
            self.next_id += 1
        else:
            return
        self.collector.emit(self.batch(bid), msg_id=bid)

    def ack(self, msg_id: Any) -> None:
        with self.store.lock:
            self.store.acked.append(msg_id)

    def fail(self, msg_id: Any) -> None:
        with self.store.lock:
            self.store.failed.append(msg_id)
        self.replay.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(pa.schema([("batch", pa.int64()), ("sentence", pa.string())]))


class SplitBolt(VectorBolt):
    """Splits sentences into words, vectorized: columns ``batch``, ``word``."""

    def execute_batch(self, batch: pa.RecordBatch, collector: VectorOutputCollector) -> None:
        words = pc.utf8_split_whitespace(batch.column("sentence"))
        rows = pc.list_parent_indices(words)
        collector.emit(pa.record_batch({"batch": pc.take(batch.column("batch"), rows), "word": pc.list_flatten(words)}))

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["batch", "word"], columnar=True)


class CountBolt(VectorBolt):
    """Counts words per batch id, vectorized, into the store: set (a replayed batch counts once, when every row of
    a batch and word comes in one batch), or added (``add``: rows of a batch and word gathered in several)."""

    def __init__(self, store: Store, add: bool = False) -> None:
        self.store = store
        self.add = add

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.task = context.get_this_task_id()

    def execute_batch(self, batch: pa.RecordBatch, collector: VectorOutputCollector) -> None:
        grouped = pa.Table.from_batches([batch]).group_by(["batch", "word"]).aggregate([([], "count_all")])
        partial: dict[tuple[Any, str], int] = {}
        for b, w, n in zip(grouped.column("batch").to_pylist(), grouped.column("word").to_pylist(),
                           grouped.column("count_all").to_pylist(), strict=True):
            partial[(b, w)] = n
        with self.store.lock:
            self.store.rows_seen += batch.num_rows
            for word in set(batch.column("word").to_pylist()):
                self.store.owners.setdefault(word, set()).add(self.task)
            if self.add:
                for key, n in partial.items():
                    self.store.counts[key] = self.store.counts.get(key, 0) + n
            else:
                self.store.counts.update(partial)


class RowCountBolt(BasicBolt):
    """A per-tuple counter on a columnar stream: each row is a tuple ``[batch, word]``; emits ``[batch, word]``
    per-tuple to the next bolt."""

    def execute(self, tup: Tuple, collector: Any) -> None:
        collector.emit([tup["batch"], tup["word"]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields("batch", "word"))
