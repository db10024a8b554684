"""The pure core of async bolts: in-flight limits, release order, timeouts, rollback, and the settings' checks."""

from __future__ import annotations

import pytest

from storm_py.errors import FailedException, ReportedFailedException
from storm_py.runtime.async_core import (
    Ack,
    AsyncLedger,
    AsyncSettings,
    AsyncTimeoutError,
    Cancel,
    Emit,
    Fail,
)


def ledger(max_in_flight: int = 3, timeout: float = 10.0, ordered: bool = True) -> AsyncLedger:
    return AsyncLedger(AsyncSettings(max_in_flight, timeout, ordered), "enrich")


def test_room_counts_started_inputs_until_they_complete():
    led = ledger(max_in_flight=2)
    a = led.start("a", 0.0)
    led.start("b", 0.0)
    assert led.room() == 0 and led.in_flight == 2
    led.finished(a, None)
    assert led.room() == 1


def test_ordered_mode_releases_emits_then_ack_in_input_order():
    led = ledger()
    a = led.start("a", 0.0)
    b = led.start("b", 0.0)
    assert led.emitted(b, "default", [2]) == []
    assert led.finished(b, None) == []  # waits for a
    assert led.in_flight == 2  # a finished execution waiting for an earlier one still counts
    assert led.emitted(a, "default", [1]) == []
    assert led.finished(a, None) == [
        Emit("a", "default", [1]), Ack("a"), Emit("b", "default", [2]), Ack("b"),
    ]
    assert led.in_flight == 0


def test_ordered_mode_discards_the_emits_of_a_failed_execution():
    led = ledger()
    a = led.start("a", 0.0)
    b = led.start("b", 0.0)
    led.emitted(a, "default", [1])
    boom = RuntimeError("boom")
    assert led.finished(a, boom) == [Fail("a", boom)]
    led.emitted(b, "default", [2])
    assert led.finished(b, None) == [Emit("b", "default", [2]), Ack("b")]


def test_unordered_mode_releases_emits_and_acks_as_they_come():
    led = ledger(ordered=False)
    a = led.start("a", 0.0)
    b = led.start("b", 0.0)
    assert led.emitted(b, "s", [2]) == [Emit("b", "s", [2])]
    assert led.finished(b, None) == [Ack("b")]
    assert led.in_flight == 1
    assert led.finished(a, None) == [Ack("a")]


def test_a_failed_exception_fails_quietly_and_other_errors_are_reported():
    led = ledger(ordered=False)
    quiet = FailedException("no")
    loud = ReportedFailedException("tell")
    boom = ValueError("boom")
    a, b, c = led.start("a", 0.0), led.start("b", 0.0), led.start("c", 0.0)
    assert led.finished(a, quiet) == [Fail("a", None)]
    assert led.finished(b, loud) == [Fail("b", loud)]
    assert led.finished(c, boom) == [Fail("c", boom)]


@pytest.mark.parametrize("ordered", [True, False])
def test_an_execution_past_its_deadline_is_cancelled_and_failed_naming_the_component_and_timeout(ordered):
    led = ledger(timeout=2.0, ordered=ordered)
    a = led.start("a", 0.0)
    b = led.start("b", 1.0)
    assert led.next_deadline() == 2.0
    assert led.expire(1.9) == []
    out = led.expire(2.0)
    assert out[0] == Cancel(a)
    fail = out[1]
    assert isinstance(fail, Fail) and fail.input == "a" and isinstance(fail.error, AsyncTimeoutError)
    assert "'enrich'" in str(fail.error) and "topology.async.execute.timeout.secs" in str(fail.error)
    assert "2 s" in str(fail.error)
    # what the cancelled execution reports later is ignored
    assert led.emitted(a, "default", [1]) == [] and led.finished(a, None) == []
    assert led.next_deadline() == 3.0
    assert led.finished(b, None) == [Ack("b")]
    assert led.in_flight == 0 and led.next_deadline() == float("inf")


def test_ordered_mode_holds_a_later_execution_behind_a_timed_out_one_until_it_expires():
    led = ledger(timeout=5.0)
    a = led.start("a", 0.0)
    b = led.start("b", 0.0)
    led.emitted(b, "default", [2])
    assert led.finished(b, None) == []
    out = led.expire(5.0)
    assert out[0] == Cancel(a)
    assert isinstance(out[1], Fail) and out[1].input == "a" and isinstance(out[1].error, AsyncTimeoutError)
    assert out[2:] == [Emit("b", "default", [2]), Ack("b")]


def test_cancel_all_drops_every_execution_in_start_order():
    led = ledger(ordered=True)
    a = led.start("a", 0.0)
    b = led.start("b", 0.0)
    led.finished(b, None)  # finished, waiting for a
    cancels, inputs = led.cancel_all()
    assert cancels == [Cancel(a)]
    assert inputs == ["a", "b"]
    assert led.in_flight == 0 and led.room() == 3
    assert led.finished(a, None) == []


def test_settings_default_to_the_table_and_the_message_timeout():
    s = AsyncSettings.from_conf({"topology.message.timeout.secs": 7}, "enrich")
    assert s == AsyncSettings(100, 7.0, True)
    s = AsyncSettings.from_conf({"topology.async.max.in.flight": 5, "topology.async.execute.timeout.secs": 0.5,
                                 "topology.async.output.mode": "unordered"}, "enrich")
    assert s == AsyncSettings(5, 0.5, False)


@pytest.mark.parametrize(("key", "value"), [
    ("topology.async.max.in.flight", 0),
    ("topology.async.max.in.flight", 2.5),
    ("topology.async.max.in.flight", True),
    ("topology.async.execute.timeout.secs", 0),
    ("topology.async.execute.timeout.secs", "10"),
    ("topology.async.output.mode", "sorted"),
])
def test_a_bad_setting_is_refused_naming_the_key_and_the_component(key, value):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")) as err:
        AsyncSettings.from_conf({key: value}, "enrich")
    assert "'enrich'" in str(err.value) and repr(value) in str(err.value)
