"""Chaos: seeded FailedExceptions in the processing and commit phases; SQLite ends up exactly right."""

from __future__ import annotations

import collections
import random
import threading
from typing import Any

import pytest

from examples import transactional_global_count as global_count
from examples import transactional_words as words
from storm_py import LocalCluster
from storm_py.errors import FailedException
from storm_py.testing import complete_topology
from storm_py.testing.registry import Shared
from storm_py.transactional import TransactionAttempt

BATCHES = 50
TAKE = 4
PARTITIONS = 2
VOCABULARY = ["apple", "banana", "cat", "dog", "egg", "fig", "grape", "ham", "ice", "jam", "kiwi", "lime"]


class FaultPlan(Shared):
    """Fails ``rate`` of the attempts at each processing point and of the commits, decided by a seeded hash.

    An attempt is known by its txid and its rank among that txid's attempts, so the same seed picks the
    same failures whatever the random attempt ids.  At a commit the failure comes either before or after
    the write to the database (after: the replay must find the txid stored and skip it).
    """

    def __init__(self, seed: int, rate: float, processing: set[str], commits: set[str]) -> None:
        self.seed = seed
        self.rate = rate
        self.processing = processing
        self.commits = commits
        self.lock = threading.Lock()
        self.ranks: dict[int, list[int]] = {}
        self.fired: set[tuple[str, int, int]] = set()
        self.commit_calls: list[tuple[str, int]] = []

    def _draw(self, *key: Any) -> random.Random:
        return random.Random("/".join(str(k) for k in (self.seed, *key)))

    def __call__(self, point: str, attempt: TransactionAttempt) -> None:
        txid = attempt.transaction_id
        with self.lock:
            seen = self.ranks.setdefault(txid, [])
            if attempt.attempt_id not in seen:
                seen.append(attempt.attempt_id)
            rank = seen.index(attempt.attempt_id)
            component, _, where = point.partition(".")
            if where != "execute":
                self.commit_calls.append((point, txid))
            if point in self.processing:
                fail = self._draw(point, txid, rank).random() < self.rate
            elif component in self.commits:
                draw = self._draw(component, "commit", txid, rank)
                fail = draw.random() < self.rate and where == draw.choice(["before-write", "after-write"])
            else:
                fail = False
            if fail:
                self.fired.add((point, txid, rank))
        if fail:
            raise FailedException(f"injected failure at {point} of {attempt!r}")

    def fired_at(self, suffix: str) -> int:
        return sum(1 for point, _, _ in self.fired if point.endswith(suffix))


def make_data(seed: int) -> dict[int, list[list[Any]]]:
    rng = random.Random(seed)
    return {p: [[rng.choice(VOCABULARY)] for _ in range(BATCHES * TAKE)] for p in range(PARTITIONS)}


def truth(data: dict[int, list[list[Any]]]) -> collections.Counter[str]:
    return collections.Counter(row[0] for rows in data.values() for row in rows)


def assert_commits_in_order(calls: list[tuple[str, int]], point: str) -> list[int]:
    """Commit-phase calls never go back to an earlier txid; returns the distinct txids in call order."""
    txids = [t for p, t in calls if p == point]
    assert txids == sorted(txids), f"commits out of txid order at {point}: {txids}"
    distinct = [t for i, t in enumerate(txids) if i == 0 or t != txids[i - 1]]
    assert distinct == sorted(set(distinct))
    return distinct


CONF = {"topology.max.spout.pending": 3, "topology.message.timeout.secs": 300}


@pytest.mark.parametrize("seed", [7, 2024])
def test_global_count_is_exact_under_injected_failures(tmp_path, seed):
    data = make_data(seed)
    plan = FaultPlan(seed, 0.10, processing={"partial-count.execute"}, commits={"sum"})
    db = global_count.GlobalCountDB(str(tmp_path / "count.db"))
    topology = global_count.build_topology(db.path, data, TAKE, plan, tx_id=f"chaos-count-{seed}")
    with LocalCluster(simulated_time=True) as cluster:
        complete_topology(cluster, topology, storm_conf=CONF, timeout_secs=120)

    total = sum(truth(data).values())
    count, _ = db.read()
    assert count == total
    history = db.history()
    assert [c for _, c in history][-1] == total
    assert [t for t, _ in history] == list(range(1, len(history) + 1)), "every txid applied exactly once"
    grew = sum(1 for (_, before), (_, after) in zip([(0, 0), *history], history, strict=False) if after != before)
    assert grew == BATCHES, "each of the 50 batches carrying data was added once"
    committed = assert_commits_in_order(plan.commit_calls, "sum.before-write")
    assert committed[: len(history)] == [t for t, _ in history]
    print(f"seed {seed}: {len(history)} commits, injected failures: {sorted(plan.fired)}")
    assert plan.fired_at(".execute") >= 1, "some batches failed while processing"
    assert plan.fired_at("-write") >= 1, "some commits failed"


@pytest.mark.parametrize("seed", [11])
def test_word_counts_are_exact_under_injected_failures(tmp_path, seed):
    data = make_data(seed)
    plan = FaultPlan(seed, 0.10, processing={"count.execute"}, commits={"count", "buckets"})
    db = words.WordsDB(str(tmp_path / "words.db"))
    topology = words.build_topology(db.path, data, TAKE, plan, tx_id=f"chaos-words-{seed}")
    with LocalCluster(simulated_time=True) as cluster:
        complete_topology(cluster, topology, storm_conf=CONF, timeout_secs=120)

    expected = truth(data)
    assert db.word_counts() == dict(expected)
    assert db.bucket_counts() == words.expected_buckets(dict(expected))
    assert_commits_in_order(plan.commit_calls, "count.before-write")
    assert_commits_in_order(plan.commit_calls, "buckets.before-write")
    print(f"seed {seed}: injected failures: {sorted(plan.fired)}")
    assert plan.fired_at(".execute") >= 1
    assert plan.fired_at("-write") >= 1
