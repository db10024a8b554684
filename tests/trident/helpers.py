"""Trident test kit: a recorder of each batch's output, functions that fail once, and a runner."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.errors import FailedException
from storm_py.testing.registry import Shared
from storm_py.trident import BaseAggregator, BaseFunction, Stream, TridentTopology


class Batches(Shared):
    """What a stream held in each batch: ``{txid: rows}`` of the last attempt of each txid (every task)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts: dict[int, dict[int, list[list[Any]]]] = {}
        self.completions: dict[tuple[int, int], int] = {}

    def add(self, attempt: Any, rows: list[list[Any]]) -> None:
        with self.lock:
            per_tx = self.attempts.setdefault(attempt.transaction_id, {})
            per_tx.setdefault(attempt.attempt_id, []).extend(rows)
            key = (attempt.transaction_id, attempt.attempt_id)
            self.completions[key] = self.completions.get(key, 0) + 1

    def rows(self, txid: int) -> list[list[Any]]:
        """The rows of txid's last attempt."""
        with self.lock:
            attempts = self.attempts.get(txid, {})
            return list(list(attempts.values())[-1]) if attempts else []

    def has(self, *txids: int) -> bool:
        with self.lock:
            return all(t in self.attempts for t in txids)

    def tasks_completed(self, txid: int) -> int:
        """How many tasks completed the last attempt of ``txid``."""
        with self.lock:
            last = list(self.attempts.get(txid, {}))[-1]
            return self.completions[(txid, last)]


class Record(BaseAggregator):
    """A partition aggregate handing every batch's tuples to a :class:`Batches`; emits nothing."""

    def __init__(self, batches: Batches) -> None:
        self.batches = batches

    def init(self, batch_id: Any, collector: Any) -> Any:
        return (batch_id, [])

    def aggregate(self, state: Any, tuple: Any, collector: Any) -> None:
        state[1].append(list(tuple.values))

    def complete(self, state: Any, collector: Any) -> None:
        self.batches.add(state[0], state[1])


def record(stream: Stream) -> Batches:
    """Record what ``stream`` holds per batch."""
    batches = Batches()
    stream.partition_aggregate(Record(batches), ["ignored"])
    return batches


class Seen(Shared):
    """Values seen so far, shared by every task (a function that fails the first time it sees a value)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: set[Any] = set()
        self.failures = 0

    def first_time(self, value: Any) -> bool:
        with self.lock:
            if value in self.values:
                return False
            self.values.add(value)
            self.failures += 1
            return True


class FailOnce(BaseFunction):
    """Passes its input on (emits nothing extra) but fails the batch the first time it sees one of ``values``."""

    def __init__(self, values: set[Any], seen: Seen) -> None:
        self.fail_on = values
        self.seen = seen

    def execute(self, tuple: Any, collector: Any) -> None:
        value = tuple.get_value(0)
        if value in self.fail_on and self.seen.first_time(value):
            raise FailedException(f"failing {value!r} the first time")
        collector.emit([])


@contextmanager
def running(topology: TridentTopology, conf: dict[str, Any] | None = None) -> Iterator[LocalCluster]:
    """``topology`` running in a LocalCluster (killed when the block ends)."""
    with LocalCluster() as cluster:
        cluster.submit_topology("trident", {"topology.max.spout.pending": 3, **(conf or {})}, topology.build())
        yield cluster


def wait(predicate: Any, what: str, timeout: float = 30) -> None:
    wait_until(predicate, timeout, what=what)
