"""The DRPC server's pure core: pending requests by id, per-function queues, timeouts from ``now``, bounds."""

from __future__ import annotations

import pytest

from storm_py.drpc.errors import BUSY, FAILED_REQUEST, SERVER_SHUTDOWN, SERVER_TIMEOUT, DRPCExecutionException
from storm_py.drpc.ledger import Invocation, PendingRequests


def test_a_request_is_fetched_once_oldest_first_and_answered_with_its_result():
    ledger = PendingRequests(timeout_secs=10, max_pending=10, id_prefix="p-")
    first = ledger.submit("f", "a", now=0.0)
    second = ledger.submit("f", "b", now=1.0)
    other = ledger.submit("g", "c", now=1.0)
    assert len({first, second, other}) == 3 and first.startswith("p-")
    assert ledger.fetch("f", limit=1, now=2.0) == [Invocation(first, "a")]
    assert ledger.fetch("f", limit=5, now=2.0) == [Invocation(second, "b")]
    assert ledger.fetch("f", limit=5, now=2.0) == []
    assert ledger.queued("g") == 1
    assert ledger.result(first, "A") and not ledger.answered(second)
    assert not ledger.result(first, "again"), "a second answer is ignored"
    assert ledger.take(first, now=3.0) == "A"
    assert first not in ledger and len(ledger) == 2


def test_a_failed_request_raises_a_failed_request_error_naming_the_function():
    ledger = PendingRequests(10, 10)
    rid = ledger.submit("reach", "x", 0.0)
    ledger.fetch("reach", 1, 0.0)
    assert ledger.fail(rid, "boom")
    with pytest.raises(DRPCExecutionException, match="'reach' failed: boom") as err:
        ledger.take(rid, 1.0)
    assert err.value.type == FAILED_REQUEST and err.value.status == 400
    assert len(ledger) == 0


def test_timeouts_are_decided_from_now_and_say_whether_a_topology_fetched_the_request():
    ledger = PendingRequests(timeout_secs=5, max_pending=10)
    fetched = ledger.submit("f", "b", now=0.0)
    assert [i.id for i in ledger.fetch("f", 1, now=0.0)] == [fetched]
    never = ledger.submit("f", "a", now=0.0)
    with pytest.raises(ValueError, match="still pending"):
        ledger.take(never, now=4.9)
    with pytest.raises(DRPCExecutionException, match="no topology fetched it") as err:
        ledger.take(never, now=5.0)
    assert err.value.type == SERVER_TIMEOUT and err.value.status == 504
    with pytest.raises(DRPCExecutionException, match="fetched it but never returned"):
        ledger.take(fetched, now=5.0)
    assert len(ledger) == 0


def test_an_expired_request_is_never_handed_to_a_topology_and_a_late_result_is_ignored():
    ledger = PendingRequests(timeout_secs=5, max_pending=10)
    rid = ledger.submit("f", "a", now=0.0)
    assert ledger.fetch("f", 10, now=5.0) == []
    with pytest.raises(DRPCExecutionException):
        ledger.take(rid, now=5.0)
    assert not ledger.result(rid, "late") and not ledger.fail(rid, "late")


def test_pending_requests_are_bounded_and_a_slot_frees_when_its_client_takes_the_answer():
    ledger = PendingRequests(timeout_secs=5, max_pending=2)
    a = ledger.submit("f", "1", 0.0)
    ledger.submit("f", "2", 0.0)
    with pytest.raises(DRPCExecutionException, match="busy: 2 requests pending") as err:
        ledger.submit("f", "3", 0.0)
    assert err.value.type == BUSY and err.value.status == 503
    ledger.result(a, "x")
    assert ledger.take(a, 0.1) == "x"
    ledger.submit("f", "3", 0.2)
    assert len(ledger) == 2


def test_closing_refuses_new_requests_and_fails_the_waiting_ones_as_shutting_down():
    ledger = PendingRequests(timeout_secs=0, max_pending=5)
    waiting = ledger.submit("f", "1", 0.0)
    done = ledger.submit("f", "2", 0.0)
    ledger.result(done, "ok")
    assert ledger.close() == [waiting]
    with pytest.raises(DRPCExecutionException, match="shutting down") as err:
        ledger.submit("f", "3", 0.0)
    assert err.value.type == SERVER_SHUTDOWN and err.value.status == 503
    with pytest.raises(DRPCExecutionException, match="shut down before"):
        ledger.take(waiting, 1e9)
    assert ledger.take(done, 1e9) == "ok"


def test_without_a_timeout_a_request_never_expires():
    ledger = PendingRequests(timeout_secs=0, max_pending=5)
    rid = ledger.submit("f", "1", 0.0)
    assert [i.id for i in ledger.fetch("f", 1, now=1e12)] == [rid]
    with pytest.raises(ValueError):
        ledger.take(rid, now=1e12)


def test_requests_for_a_function_nobody_serves_leave_nothing_behind_once_timed_out():
    ledger = PendingRequests(timeout_secs=1, max_pending=10)
    for round_ in range(50):
        ids = [ledger.submit("unserved", str(i), now=float(round_)) for i in range(10)]
        for rid in ids:
            with pytest.raises(DRPCExecutionException, match="no topology fetched it"):
                ledger.take(rid, now=round_ + 1.0)
    assert len(ledger) == 0 and ledger.queued("unserved") == 0
