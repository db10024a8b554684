"""The transaction coordinator: Storm's coordinator sequencing test, and the pure txid core."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.coordinator import (
    AttemptStatus,
    Committed,
    EmitBatch,
    EmitCommit,
    TransactionalSpoutCoordinator,
    TxCoordinator,
)
from storm_py.transactional.spouts import TransactionalSpout
from storm_py.transactional.state import TransactionalState, TransactionalStateError
from storm_py.transactional.streams import BATCH_STREAM, COMMIT_STREAM
from tests.transactional.helpers import SpoutCapture, make_context, memory_state


class Box:
    """A mutable cell shared by the test and the coordinator (Clojure's atom)."""

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __deepcopy__(self, memo):
        return self


class StateChangerSpout(TransactionalSpout):
    """Ready while the box holds a value; every transaction's metadata is that value."""

    def __init__(self, box: Box) -> None:
        self.box = box

    def is_ready(self) -> bool:
        return self.box.value is not None

    def initialize_transaction(self, txid: int, prev_meta: Any) -> Any:
        return self.box.value


def open_coordinator(box: Box, state, max_pending: int = 4, tx_id: str = "abc"):
    coordinator = TransactionalSpoutCoordinator(StateChangerSpout(box), tx_id)
    capture = SpoutCapture()
    coordinator.open({"topology.max.spout.pending": max_pending}, make_context(state), capture)
    return coordinator, capture


def test_coordinator():
    """Ports transactional_test.clj test-coordinator: batch/commit sequencing, replays after failures."""
    box = Box()
    state = memory_state()
    coordinator, capture = open_coordinator(box, state)
    box.value = 10
    coordinator.next_tuple()
    attempts = capture.msg_ids(BATCH_STREAM)
    first_attempt = attempts[0]
    assert capture.take() == {BATCH_STREAM: [[1, 10], [2, 10], [3, 10], [4, 10]]}

    coordinator.next_tuple()
    assert capture.take() == {}

    coordinator.fail(attempts[1])
    old_second = attempts[1]
    attempts = capture.msg_ids(BATCH_STREAM)
    new_second_attempt = attempts[0]
    assert capture.take() == {BATCH_STREAM: [[2, 10], [3, 10], [4, 10]]}
    assert new_second_attempt != old_second
    coordinator.ack(new_second_attempt)
    assert capture.take() == {}
    coordinator.ack(first_attempt)
    commit_id = capture.msg_ids(COMMIT_STREAM)[0]
    assert capture.take() == {COMMIT_STREAM: [[1]]}

    box.value = 12
    coordinator.ack(commit_id)
    commit_id = capture.msg_ids(COMMIT_STREAM)[0]
    assert capture.take() == {COMMIT_STREAM: [[2]], BATCH_STREAM: [[5, 12]]}
    box.value = None
    coordinator.ack(commit_id)
    assert capture.take() == {}

    coordinator.fail(attempts[1])  # txid 3: 3, 4 and 5 replay from their stored metadata (not ready any more)
    attempts = capture.msg_ids(BATCH_STREAM)
    assert capture.take() == {BATCH_STREAM: [[3, 10], [4, 10], [5, 12]]}

    box.value = 12
    coordinator.next_tuple()
    assert capture.take() == {BATCH_STREAM: [[6, 12]]}

    coordinator.ack(attempts[0])
    commit_id = capture.msg_ids(COMMIT_STREAM)[0]
    assert capture.take() == {COMMIT_STREAM: [[3]]}

    coordinator.ack(attempts[1])
    assert capture.take() == {}

    coordinator.fail(commit_id)  # a failed commit replays its transaction and all later ones
    attempts = capture.msg_ids(BATCH_STREAM)
    assert capture.take() == {BATCH_STREAM: [[3, 10], [4, 10], [5, 12], [6, 12]]}

    coordinator.ack(attempts[0])
    commit_id = capture.msg_ids(COMMIT_STREAM)[0]
    assert capture.take() == {COMMIT_STREAM: [[3]]}

    coordinator.ack(attempts[1])
    coordinator.next_tuple()
    assert capture.take() == {}

    coordinator.ack(commit_id)
    assert capture.take() == {COMMIT_STREAM: [[4]], BATCH_STREAM: [[7, 12]]}
    coordinator.close()


def test_coordinator_state_is_persisted_and_resumed():
    """currtx and per-txid metadata live under /transactional/<id>/coordinator; a new coordinator resumes."""
    box = Box(7)
    state = memory_state()
    coordinator, capture = open_coordinator(box, state, max_pending=2)
    coordinator.next_tuple()
    a1, _ = capture.msg_ids(BATCH_STREAM)
    capture.take()
    coordinator.ack(a1)
    coordinator.ack(capture.msg_ids(COMMIT_STREAM)[0])
    assert state.transactional_get("abc", "coordinator", "currtx") == 2
    assert state.transactional_children("abc", "coordinator", "meta") == ["1", "2", "3"]
    capture.take()

    box.value = 99  # metadata of in-flight transactions must be replayed as first decided
    resumed, capture2 = open_coordinator(box, state, max_pending=2)
    assert resumed.current_txid() == 2
    resumed.next_tuple()
    assert capture2.take() == {BATCH_STREAM: [[2, 7], [3, 7]]}


def test_batch_tuples_carry_the_last_committed_txid():
    box = Box(1)
    coordinator, capture = open_coordinator(box, memory_state(), max_pending=1)
    coordinator.next_tuple()
    (values, attempt), = capture.emitted[BATCH_STREAM]
    assert values == [attempt, 1, None]
    capture.take()
    coordinator.ack(attempt)
    coordinator.ack(capture.msg_ids(COMMIT_STREAM)[0])
    (values, attempt), = capture.emitted[BATCH_STREAM]
    assert values[0].transaction_id == 2 and values[2] == 1


def test_stale_acks_and_fails_are_ignored():
    box = Box(1)
    coordinator, capture = open_coordinator(box, memory_state(), max_pending=2)
    coordinator.next_tuple()
    a1, a2 = capture.msg_ids(BATCH_STREAM)
    capture.take()
    coordinator.ack(TransactionAttempt(1, a1.attempt_id + 1))
    coordinator.fail(TransactionAttempt(2, a2.attempt_id + 1))
    coordinator.ack("not an attempt")
    assert capture.take() == {}
    coordinator.ack(a1)
    assert capture.take() == {COMMIT_STREAM: [[1]]}


def test_coordinator_needs_the_state_resource():
    coordinator = TransactionalSpoutCoordinator(StateChangerSpout(Box(1)), "abc")
    ctx = make_context(None)
    with pytest.raises(TransactionalStateError, match="no transactional state store"):
        coordinator.open({}, ctx, SpoutCapture())


def test_coordinator_refuses_to_run_without_ackers():
    coordinator = TransactionalSpoutCoordinator(StateChangerSpout(Box(1)), "abc")
    with pytest.raises(TransactionalStateError, match="need ackers"):
        coordinator.open({"topology.acker.executors": 0}, make_context(memory_state()), SpoutCapture())


# ------------------------------------------------------------------------------------------------ the core


def ids():
    n = iter(range(100, 10**6))
    return lambda: next(n)


def test_core_keeps_in_flight_contiguous_and_commits_in_order():
    core = TxCoordinator(1, 3, ids())
    ready = {1, 2, 4}
    out = core.sync(0.0, lambda t: t in ready)
    assert [d.attempt.transaction_id for d in out if isinstance(d, EmitBatch)] == [1, 2]  # stops at 3
    a1, a2 = (d.attempt for d in out)
    assert core.ack(a2, 1.0, lambda t: False) == []  # 2 is processed but 1 is not committed
    assert core.active()[2][1] is AttemptStatus.PROCESSED
    out = core.ack(a1, 2.0, lambda t: False)
    assert out == [EmitCommit(a1)]
    out = core.ack(a1, 3.0, lambda t: t == 3)
    assert out[0] == Committed(1)
    assert out[1] == EmitCommit(a2)
    assert isinstance(out[2], EmitBatch) and out[2].attempt.transaction_id == 3
    assert core.current_txid == 2
    assert core.oldest_age(5.0) == pytest.approx(5.0)  # txid 2 started at 0


def test_core_fail_replays_the_transaction_and_all_later_ones():
    core = TxCoordinator(1, 3, ids())
    first = [d.attempt for d in core.sync(0.0, lambda t: True)]
    out = core.fail(first[1], 1.0, lambda t: True)
    replayed = [d.attempt for d in out]
    assert [a.transaction_id for a in replayed] == [2, 3]
    assert all(a not in first for a in replayed)
    assert core.fail(first[2], 2.0, lambda t: True) == []  # stale
    assert core.active()[1][0] == first[0]


def test_core_rejects_bad_max_active():
    with pytest.raises(ValueError):
        TxCoordinator(1, 0)


def test_transactional_state_paths():
    state = memory_state()
    ts = TransactionalState.user_state(state, "xyz")
    ts.set_data("3/7", {"index": 1})
    assert state.storage.get("/transactional/xyz/user/3/7") is not None
    assert ts.list("3") == ["7"]
    assert ts.get_data("3/7") == {"index": 1}
    ts.delete("3")
    assert ts.list("") == []


def test_a_deactivated_coordinator_starts_nothing_but_still_commits():
    box = Box(1)
    coordinator, capture = open_coordinator(box, memory_state(), max_pending=2)
    coordinator.next_tuple()
    a1, a2 = capture.msg_ids(BATCH_STREAM)
    capture.take()
    coordinator.deactivate()
    coordinator.fail(a2)  # no replay while inactive
    assert capture.take() == {}
    coordinator.ack(a1)
    commit = capture.msg_ids(COMMIT_STREAM)[0]
    assert capture.take() == {COMMIT_STREAM: [[1]]}
    coordinator.ack(commit)
    assert capture.take() == {}
    coordinator.activate()
    coordinator.next_tuple()
    assert capture.take() == {BATCH_STREAM: [[2, 1], [3, 1]]}
