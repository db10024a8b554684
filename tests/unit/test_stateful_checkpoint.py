"""The checkpoint spout's state machine (Storm's CheckPointState and CheckpointSpout decisions), without a cluster."""

from __future__ import annotations

import pytest

from storm_py.stateful.at_least_once.checkpoint import (
    COMMIT,
    COMMITTED,
    COMMITTING,
    INITIAL,
    INITSTATE,
    PREPARE,
    PREPARING,
    ROLLBACK,
    CheckpointCoordinator,
    Emit,
    TxState,
)


def test_states_and_actions_follow_storm():
    assert TxState(3, PREPARING).next_state(False) == TxState(3, COMMITTING)
    assert TxState(3, PREPARING).next_state(True) == TxState(2, COMMITTED)
    assert TxState(3, COMMITTING).next_state(True) == TxState(3, COMMITTED)
    assert TxState(3, COMMITTED).next_state(False) == TxState(4, PREPARING)
    assert TxState(3, COMMITTED).next_state(True) == TxState(3, COMMITTED)
    assert [TxState(1, s).next_action(True) for s in (PREPARING, COMMITTING, COMMITTED)] == [
        ROLLBACK, COMMIT, INITSTATE]
    assert [TxState(1, s).next_action(False) for s in (PREPARING, COMMITTING, COMMITTED)] == [
        PREPARE, COMMIT, PREPARE]


def test_saved_state_round_trips_and_bad_ones_are_refused():
    assert TxState.from_saved(TxState(7, COMMITTING).to_list()) == TxState(7, COMMITTING)
    with pytest.raises(ValueError, match="not \\[txid"):
        TxState.from_saved(["7", "DONE"])


def step(core: CheckpointCoordinator, now: float) -> Emit | None:
    emit, save = core.next_emit(now)
    if emit is not None:
        core.emitted(emit, save, now)
    return emit


def ack(core: CheckpointCoordinator, txid: int, now: float) -> None:
    nxt = core.acked(txid)
    if nxt is not None:
        core.advanced(nxt, now)


def test_a_fresh_topology_inits_state_then_prepares_and_commits_each_interval():
    core = CheckpointCoordinator(INITIAL, 1.0, now=0.0)
    assert step(core, 0.0) == Emit(-1, INITSTATE)
    assert step(core, 0.0) is None  # one step at a time
    ack(core, -1, 0.0)
    assert not core.recovering
    assert step(core, 0.0) == Emit(0, PREPARE)
    assert core.current == TxState(0, PREPARING)
    ack(core, 0, 0.1)
    assert core.current == TxState(0, COMMITTING)
    assert step(core, 0.1) == Emit(0, COMMIT)
    ack(core, 0, 0.2)
    assert core.current == TxState(0, COMMITTED)
    assert core.committed_at == 0.2
    assert step(core, 0.9) is None  # the interval runs from the last PREPARE
    assert step(core, 1.01) == Emit(1, PREPARE)


def test_a_failed_prepare_rolls_back_after_a_pause_then_inits_state():
    core = CheckpointCoordinator(TxState(4, COMMITTED), 1.0, now=0.0)
    step(core, 0.0)
    ack(core, 4, 0.0)
    assert step(core, 5.0) == Emit(5, PREPARE)
    core.failed(5.0)
    assert core.recovering
    assert step(core, 5.05) is None  # retried after interval / 10
    assert step(core, 5.1) == Emit(5, ROLLBACK)
    ack(core, 5, 5.1)
    assert core.current == TxState(4, COMMITTED)
    assert step(core, 5.1) == Emit(4, INITSTATE)
    ack(core, 4, 5.1)
    assert not core.recovering
    assert step(core, 5.2) is None  # the interval still runs from the failed PREPARE (Storm)
    assert step(core, 6.01) == Emit(5, PREPARE)


def test_recovery_of_a_committing_transaction_commits_it_again():
    core = CheckpointCoordinator(TxState(9, COMMITTING), 1.0, now=0.0)
    assert step(core, 0.0) == Emit(9, COMMIT)
    ack(core, 9, 0.0)
    assert core.current == TxState(9, COMMITTED)
    assert step(core, 0.0) == Emit(9, INITSTATE)


def test_failures_in_a_row_back_off_up_to_the_interval():
    core = CheckpointCoordinator(INITIAL, 1.0, now=0.0)
    pauses = []
    now = 0.0
    for _ in range(6):
        step(core, now)
        core.failed(now)
        pauses.append(round(core.not_before - now, 3))
        now = core.not_before
    assert pauses == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_an_ack_of_another_txid_is_ignored():
    core = CheckpointCoordinator(TxState(2, COMMITTED), 1.0, now=0.0)
    step(core, 0.0)
    ack(core, 1, 0.0)
    assert core.recovering and not core.in_progress
