"""Storm's statistics windows and the capacity and latency arithmetic, on simulated time."""

from __future__ import annotations

import pytest

from storm_py.metrics import stats
from storm_py.metrics.windows import (
    ALL_TIME,
    BUCKETS,
    ExecutorRollup,
    RollingWindow,
    StatsBook,
    parse_window,
    window_pretty,
)


def test_window_labels_and_parameter() -> None:
    assert [window_pretty(w) for w in ("600", "10800", "86400", ALL_TIME)] == [
        "10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]
    assert parse_window(None) == ALL_TIME and parse_window("600") == "600"
    with pytest.raises(ValueError, match="unknown window '61'"):
        parse_window("61")


def test_rolling_window_forgets_old_buckets() -> None:
    w = RollingWindow(600)  # 30 s buckets
    w.add(0.0, {"x": 1})
    w.add(29.0, {"x": 2})
    w.add(30.0, {"x": 4})
    assert w.sums(30.0) == {"x": 7}
    assert w.sums(599.0) == {"x": 7}
    assert w.sums(600.0) == {"x": 4}  # the [0, 30) bucket left whole
    assert w.sums(630.0) == {}


def test_rolling_window_memory_is_bounded_by_buckets() -> None:
    w = RollingWindow(600)
    for t in range(0, 100_000, 3):
        w.add(float(t), {"x": 1, "y": 2})
    assert len(w) <= BUCKETS
    assert w.sums(99_999.0)["x"] == pytest.approx(200, abs=10)  # one per 3 s over ~600 s


def test_rollup_windows_from_cumulative_reports() -> None:
    r = ExecutorRollup(1000.0, {"emitted:default": 500})  # counted before the first report: all time only
    for i in range(1, 701):  # one report per second, 10 tuples each
        r.observe(1000.0 + i, {"emitted:default": 500 + 10 * i})
    now = 1700.0
    ten_min = r.values("600", now)
    assert 5700 <= ten_min.counters["emitted:default"] <= 6000 and ten_min.span_secs == 600
    assert r.values("10800", now).counters["emitted:default"] == 7000
    assert r.values("10800", now).span_secs == 700
    assert r.values(ALL_TIME, now, uptime_secs=800).counters["emitted:default"] == 7500


def test_rollup_counts_a_restart_from_zero() -> None:
    r = ExecutorRollup(0.0, {"acked": 100})
    r.observe(1.0, {"acked": 110})
    r.observe(2.0, {"acked": 5})  # the worker restarted
    assert r.values("600", 2.0).counters["acked"] == 15


def test_capacity_and_latency_arithmetic() -> None:
    # a bolt executing 50 tuples/s at 10 ms each is busy half the time
    r = ExecutorRollup(0.0, {})
    for t in range(1, 101):
        r.observe(float(t), {"executed:s:default": 50 * t, "execute_ms:s:default": 500.0 * t})
    v = r.values("600", 100.0)
    fig = stats.ExecutorFigures.of(v.counters, v.span_secs)
    assert fig.execute_latency_ms == pytest.approx(10.0)
    assert fig.capacity == pytest.approx(0.5)
    assert stats.capacity(1000, 2.0, 10) == pytest.approx(0.2)
    assert stats.capacity(1000, 2.0, 0) == 0.0


def test_complete_latency_and_timed_out_apart_from_failed() -> None:
    counters = {"emitted:default": 100, "acked": 80, "failed": 5, "timed_out": 15, "complete_ms": 400.0}
    comp = stats.combine([stats.ExecutorFigures.of(counters, 10.0), stats.ExecutorFigures.of(counters, 10.0)])
    fields = stats.spout_fields(comp)
    assert (fields["acked"], fields["failed"], fields["timedOut"]) == (160, 10, 30)
    assert fields["completeLatency"] == "5.000"


def test_component_capacity_is_the_busiest_executor() -> None:
    busy = stats.ExecutorFigures.of({"executed:a:s": 100, "execute_ms:a:s": 900.0}, 1.0)
    idle = stats.ExecutorFigures.of({"executed:a:s": 100, "execute_ms:a:s": 100.0}, 1.0)
    comp = stats.combine([busy, idle])
    fields = stats.bolt_fields(comp)
    assert fields["capacity"] == "0.900" and fields["executeLatency"] == "5.000" and fields["executed"] == 200
    (row,) = stats.input_stats(comp)
    assert (row["component"], row["stream"], row["executed"]) == ("a", "s", 200)


def test_stats_book_is_bounded_by_live_executors() -> None:
    book = StatsBook()
    book.observe("t1", {"a:[1-1]": (1.0, {"x": 1}), "b:[2-2]": (1.0, {"x": 1})})
    book.observe("t1", {"a:[1-1]": (2.0, {"x": 5})})
    assert book.executors("t1") == 1 and book.rollup("t1", "b:[2-2]") is None
    rollup = book.rollup("t1", "a:[1-1]")
    assert rollup is not None and rollup.values("600", 2.0).counters == {"x": 4}
    book.observe("t1", {"a:[1-1]": (2.0, {"x": 9})})  # the same report again: ignored
    assert rollup.values("600", 2.0).counters == {"x": 4}
    book.retain([])
    assert book.executors("t1") == 0


def test_a_young_executor_is_counted_from_its_start() -> None:
    book = StatsBook()
    book.observe("t", {"young": (10.0, {"failed": 7}), "old": (500.0, {"failed": 7})},
                 started={"young": 8.0, "old": 100.0})
    young = book.values("t", "young", "600", 10.0)
    old = book.values("t", "old", "600", 500.0)
    assert young is not None and young.counters == {"failed": 7} and young.span_secs == 2.0
    assert old is not None and old.counters == {} and old.span_secs == 0.0


def test_process_latency_is_sampled_else_execute_latency() -> None:
    sampled = stats.combine([stats.ExecutorFigures.of(
        {"executed:a:s": 10, "execute_ms:a:s": 20.0, "process_ms": 90.0, "processed": 3}, 1.0)])
    assert stats.bolt_fields(sampled)["processLatency"] == "30.000"
    assert stats.input_stats(sampled)[0]["processLatency"] == "30.000"
    basic = stats.combine([stats.ExecutorFigures.of({"executed:a:s": 10, "execute_ms:a:s": 20.0}, 1.0)])
    assert stats.bolt_fields(basic)["processLatency"] == "2.000"
