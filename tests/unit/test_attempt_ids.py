"""Attempt ids of transactional batches: random and distinct, drawn without a system call (a system call per
batch releases the GIL thousands of times a second and starves every other thread of an in-process cluster)."""

from __future__ import annotations

import random

import pytest

from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.coordinator import TxCoordinator


def _no_system_entropy(n: int) -> bytes:
    raise AssertionError("an attempt id read the system's entropy")


def test_the_coordinators_attempt_ids_are_distinct_63_bit_ints_made_without_a_system_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(random, "_urandom", _no_system_entropy)
    ledger = TxCoordinator(max_active=1000)
    ids = [d.attempt.attempt_id for d in ledger.sync(0.0, lambda txid: True)]
    assert len(ids) == 1000 and len(set(ids)) == 1000
    assert all(0 <= i < 2**63 for i in ids) and max(ids) > 2**60
    fresh = [TransactionAttempt.new(1).attempt_id for _ in range(100)]
    assert len(set(fresh)) == 100
