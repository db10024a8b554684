"""Windowed bolts in LocalCluster with simulated time: count and duration windows, sliding and tumbling, the
Windowing docs' event-time example window by window, late tuples, acks on expiry, failures through anchored
window emits, and the bad-input cases."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from storm_py import BaseWindowedBolt, Bolt, Count, Duration, InvalidTopologyException, LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.testing import AckFailMapTracker, FeederSpout, TrackedTopology, tracked_wait
from storm_py.testing.registry import Shared
from tests.core.helpers import feeder_topology

HOUR_MS = 3_600_000


class Record(Shared):
    """What the test observes: windows as the windowed bolt saw them, tuples a downstream bolt received."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        with self._lock:
            self.items.append(item)

    def snapshot(self) -> list[Any]:
        with self._lock:
            return list(self.items)


class SumWindow(BaseWindowedBolt):
    """Records each window (first values, new, expired, start, end) and emits its sum, anchored to the window."""

    def __init__(self, record: Record) -> None:
        self.record = record

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, window):
        values = [t.values[0] for t in window]
        self.record.add({
            "values": values,
            "new": [t.values[0] for t in window.get_new()],
            "expired": [t.values[0] for t in window.get_expired()],
            "start": window.get_start_timestamp(),
            "end": window.get_end_timestamp(),
        })
        self.collector.emit([sum(values)])

    def declare_output_fields(self, declarer):
        declarer.declare(["sum"])


class Capture(Bolt):
    """Records every input's values and acks it (or fails it, with ``fail=True``)."""

    def __init__(self, record: Record, fail: bool = False) -> None:
        self.record = record
        self.fail = fail

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        self.record.add(tup.values)
        (self.collector.fail if self.fail else self.collector.ack)(tup)


def cluster() -> LocalCluster:
    return LocalCluster(supervisors=1, ports_per_supervisor=2, simulated_time=True)


@dataclass
class Run:
    feeder: Any
    tracker: AckFailMapTracker
    tracked: TrackedTopology
    out: Record
    late: Record


def run(cluster: LocalCluster, bolt: BaseWindowedBolt, fields: list[str], fail_downstream: bool = False,
        conf: dict[str, Any] | None = None, late_stream: str | None = None):
    """Feeder "1" -> windowed bolt "w" -> capture "out" (and "late" on the late stream when given)."""
    tracker = AckFailMapTracker()
    feeder, builder = feeder_topology(fields, tracker)
    out, late = Record(), Record()
    builder.set_bolt("w", bolt).shuffle_grouping("1")
    builder.set_bolt("out", Capture(out, fail_downstream)).shuffle_grouping("w")
    if late_stream is not None:
        builder.set_bolt("late", Capture(late)).shuffle_grouping("w", late_stream)
    tracked = TrackedTopology(builder.create_topology(), cluster)
    cluster.submit_topology("windows", conf or {}, tracked)
    return Run(feeder, tracker, tracked, out, late)


def bounds(c: LocalCluster, windows: Record) -> list[tuple[int | None, int, list[Any]]]:
    """Each processing-time window's (start, end, values), the bounds as ms since the simulated clock's zero (the
    windows carry epoch ms: the cluster clock's wall time)."""
    zero = round(c.clock.wall_at(0.0) * 1000)
    return [(None if w["start"] is None else w["start"] - zero, w["end"] - zero, w["values"])
            for w in windows.snapshot()]


def acked(tracker: AckFailMapTracker, ids) -> list[bool]:
    return [tracker.is_acked(i) for i in ids]


def test_count_sliding_window_acks_tuples_as_they_expire():
    """Length 4 tuples sliding every 2: windows [1,2], [1..4], [3..6]; 1 and 2 are acked when they leave."""
    windows = Record()
    with cluster() as c:
        r = run(c, SumWindow(windows).with_window(Count(4), Count(2)), ["n"])
        for i in range(1, 7):
            r.feeder.feed([i], i)
        tracked_wait(r.tracked, 6)
        assert [w["values"] for w in windows.snapshot()] == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]]
        assert [w["new"] for w in windows.snapshot()] == [[1, 2], [3, 4], [5, 6]]
        assert [w["expired"] for w in windows.snapshot()] == [[], [], [1, 2]]
        assert {w["start"] for w in windows.snapshot()} == {None}  # count windows have no start
        assert r.out.snapshot() == [[3], [10], [18]]
        wait_until(lambda: acked(r.tracker, [1, 2]) == [True, True], 10, what="acks of the expired tuples")
        assert acked(r.tracker, range(3, 7)) == [False] * 4  # still in the window


def test_count_tumbling_window():
    windows = Record()
    with cluster() as c:
        r = run(c, SumWindow(windows).with_tumbling_window(Count(3)), ["n"])
        for i in range(1, 8):
            r.feeder.feed([i], i)
        tracked_wait(r.tracked, 7)
        assert [w["values"] for w in windows.snapshot()] == [[1, 2, 3], [4, 5, 6]]
        assert r.out.snapshot() == [[6], [15]]
        wait_until(lambda: acked(r.tracker, [1, 2, 3]) == [True] * 3, 10, what="acks of the first window")
        assert acked(r.tracker, range(4, 8)) == [False] * 4


def test_duration_sliding_window_on_the_simulated_clock():
    """Length 10 s sliding 5 s in processing time: windows end every 5 s of cluster time."""
    windows = Record()
    with cluster() as c:
        bolt = SumWindow(windows).with_window(Duration.seconds(10), Duration.seconds(5))
        r = run(c, bolt, ["n"])
        c.advance_cluster_time(1)
        r.feeder.feed([1], 1)
        r.feeder.feed([2], 2)
        tracked_wait(r.tracked, 2)
        assert windows.snapshot() == []
        c.advance_cluster_time(4)  # t = 5 s: the first window
        c.advance_cluster_time(1)
        r.feeder.feed([3], 3)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(4)  # t = 10 s
        c.advance_cluster_time(5)  # t = 15 s: 1 and 2 (t = 1 s) have left
        assert bounds(c, windows) == [
            (-5000, 5000, [1, 2]), (0, 10000, [1, 2, 3]), (5000, 15000, [3]),
        ]
        wait_until(lambda: acked(r.tracker, [1, 2]) == [True, True], 10, what="acks of the expired tuples")
        assert not r.tracker.is_acked(3)
        c.advance_cluster_time(5)  # t = 20 s: an empty window expires 3 without an activation
        wait_until(lambda: r.tracker.is_acked(3), 10, what="ack of 3")
        assert len(windows.snapshot()) == 3


def test_duration_tumbling_window():
    windows = Record()
    with cluster() as c:
        r = run(c, SumWindow(windows).with_tumbling_window(Duration.seconds(5)), ["n"])
        c.advance_cluster_time(1)
        r.feeder.feed([1], 1)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(2)
        r.feeder.feed([2], 2)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(4)  # t = 7 s
        r.feeder.feed([3], 3)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(3)  # t = 10 s
        assert bounds(c, windows) == [
            (0, 5000, [1, 2]), (5000, 10000, [3]),
        ]
        assert r.out.snapshot() == [[3], [3]]


def test_processing_time_windows_carry_epoch_ms_on_the_real_clock():
    """On the real clock, count and duration windows end at the wall time of their evaluation (epoch ms, as Storm's
    ``System.currentTimeMillis()``), not at a reading of the monotonic clock; a duration window starts one length
    before its end."""
    counts, durations = Record(), Record()
    tracker = AckFailMapTracker()
    feeder, builder = feeder_topology(["n"], tracker)
    builder.set_bolt("count", SumWindow(counts).with_tumbling_window(Count(2))).shuffle_grouping("1")
    sliding = SumWindow(durations).with_window(Duration(1000), Duration(200))
    builder.set_bolt("duration", sliding).shuffle_grouping("1")
    before = time.time() * 1000
    with LocalCluster(supervisors=1, ports_per_supervisor=2) as c:
        c.submit_topology("wall-windows", {}, builder.create_topology())
        feeder.feed([1], 1)
        feeder.feed([2], 2)
        wait_until(lambda: counts.snapshot() and durations.snapshot(), 30, what="a count and a duration window")
        after = time.time() * 1000
        (count,) = counts.snapshot()
        duration = durations.snapshot()[0]
    # each bound is rounded to whole ms twice (the monotonic instant, then its wall time): 1 ms of slack
    assert before - 1 <= count["end"] <= after + 1, (before, count, after)
    assert count["start"] is None and count["values"] == [1, 2]
    assert before - 1 <= duration["end"] <= after + 1, (before, duration, after)
    assert duration["start"] == duration["end"] - 1000


def test_processing_time_windows_carry_the_simulated_clocks_wall_time():
    """Under simulated time the window bounds are the simulated clock's ``wall()`` at the evaluation."""
    counts = Record()
    with cluster() as c:
        r = run(c, SumWindow(counts).with_tumbling_window(Count(2)), ["n"])
        c.advance_cluster_time(3)
        r.feeder.feed([1], 1)
        r.feeder.feed([2], 2)
        tracked_wait(r.tracked, 2)
        (window,) = counts.snapshot()
        assert window["end"] == round(c.clock.wall() * 1000) and window["start"] is None
    durations = Record()
    with cluster() as c:
        r = run(c, SumWindow(durations).with_tumbling_window(Duration.seconds(5)), ["n"])
        c.advance_cluster_time(1)
        r.feeder.feed([1], 1)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(4)  # t = 5 s: the window (0 s, 5 s] is evaluated now
        wait_until(lambda: durations.snapshot(), 10, what="the duration window")
        (window,) = durations.snapshot()
        assert window["end"] == round(c.clock.wall() * 1000)
        assert window["start"] == round(c.clock.wall() * 1000) - 5000


def test_windowing_docs_event_time_example():
    """The Windowing docs' example: length 20 s, sliding 10 s, lag 5 s, a watermark every second."""
    windows = Record()
    six, eight = 6 * HOUR_MS, 8 * HOUR_MS
    bolt = (SumWindow(windows).with_window(Duration.seconds(20), Duration.seconds(10)).with_timestamp_field("ts")
            .with_lag(Duration.seconds(5)).with_watermark_interval(Duration.seconds(1)))
    with cluster() as c:
        r = run(c, bolt, ["n", "ts"])
        for n, secs in ((1, 3), (2, 5), (3, 7), (4, 18), (5, 26), (6, 36)):
            r.feeder.feed([n, six + secs * 1000], n)
        tracked_wait(r.tracked, 6)
        c.advance_cluster_time(1)  # watermark w1 = 6:00:31
        assert [(w["start"] - six, w["end"] - six, w["values"]) for w in windows.snapshot()] == [
            (-10_000, 10_000, [1, 2, 3]), (0, 20_000, [1, 2, 3, 4]), (10_000, 30_000, [4, 5]),
        ]
        for n, secs in ((7, 25), (8, 26), (9, 27), (10, 39)):
            r.feeder.feed([n, eight + secs * 1000], n)
        tracked_wait(r.tracked, 4)
        c.advance_cluster_time(1)  # watermark w2 = 8:00:34
        later = windows.snapshot()[3:]
        assert [(w["start"], w["end"], w["values"]) for w in later] == [
            (six + 20_000, six + 40_000, [5, 6]), (six + 30_000, six + 50_000, [6]),
            (eight + 10_000, eight + 30_000, [7, 8, 9]),
        ]
        assert r.out.snapshot() == [[6], [10], [9], [11], [6], [24]]
        wait_until(lambda: acked(r.tracker, range(1, 7)) == [True] * 6, 10, what="acks of the expired tuples")
        assert acked(r.tracker, range(7, 11)) == [False] * 4


def test_late_tuples_go_to_the_late_stream_and_are_acked():
    windows = Record()
    bolt = (SumWindow(windows).with_tumbling_window(Duration.seconds(10)).with_timestamp_field("ts")
            .with_late_tuple_stream("late"))
    with cluster() as c:
        r = run(c, bolt, ["n", "ts"], late_stream="late")
        r.feeder.feed([1, 5_000], 1)
        r.feeder.feed([2, 25_000], 2)
        tracked_wait(r.tracked, 2)
        c.advance_cluster_time(1)  # watermark 25 s
        assert [w["values"] for w in windows.snapshot()] == [[1]]
        r.feeder.feed([3, 24_000], 3)  # before the watermark: late
        tracked_wait(r.tracked, 1)
        assert r.late.snapshot() == [[[3, 24_000]]]  # one field, late_tuple: the late tuple's values
        wait_until(lambda: r.tracker.is_acked(3), 10, what="ack of the late tuple")
        assert [w["values"] for w in windows.snapshot()] == [[1]]


def test_late_tuples_without_a_late_stream_are_acked_and_dropped():
    windows = Record()
    bolt = SumWindow(windows).with_tumbling_window(Count(2)).with_timestamp_field("ts")
    with cluster() as c:
        r = run(c, bolt, ["n", "ts"])
        r.feeder.feed([1, 10_000], 1)
        tracked_wait(r.tracked, 1)
        c.advance_cluster_time(1)  # watermark 10 s
        r.feeder.feed([2, 9_000], 2)
        tracked_wait(r.tracked, 1)
        wait_until(lambda: r.tracker.is_acked(2), 10, what="ack of the late tuple")
        assert windows.snapshot() == []


def test_a_failed_window_emit_fails_every_tuple_of_the_window():
    """Emits in execute are anchored to the whole window: a downstream fail fails each of its spout tuples."""
    windows = Record()
    with cluster() as c:
        bolt = SumWindow(windows).with_tumbling_window(Count(3))
        r = run(c, bolt, ["n"], fail_downstream=True)
        for i in range(1, 5):
            r.feeder.feed([i], i)
        tracked_wait(r.tracked, 4)
        wait_until(lambda: all(r.tracker.is_failed(i) for i in (1, 2, 3)), 10, what="fails of the window's tuples")
        assert not r.tracker.is_failed(4)


def test_a_tuple_without_the_timestamp_field_is_failed_and_the_error_names_the_field():
    windows = Record()
    bolt = SumWindow(windows).with_tumbling_window(Count(2)).with_timestamp_field("event_ms")
    with cluster() as c:
        r = run(c, bolt, ["n"])
        r.feeder.feed([1], 1)
        tracked_wait(r.tracked, 1)
        wait_until(lambda: r.tracker.is_failed(1), 10, what="fail of the tuple without a timestamp")
        summary = c.get_topology_summary("windows")
        row = next(b for b in summary["bolts"] if b["boltId"] == "w")
        assert "no timestamp field 'event_ms'" in row["lastError"]


def test_a_message_timeout_shorter_than_the_window_is_refused_at_submit():
    bolt = SumWindow(Record()).with_window(Duration.seconds(20), Duration.seconds(15))
    with cluster() as c, pytest.raises(InvalidTopologyException, match=r"topology\.message\.timeout\.secs") as err:
        run(c, bolt, ["n"], conf={"topology.message.timeout.secs": 30})
    assert "'w'" in str(err.value) and "window length 20000 ms, sliding 15000 ms" in str(err.value)


def test_a_window_longer_than_max_spout_pending_is_refused_at_submit():
    bolt = SumWindow(Record()).with_window(Count(10), Count(5))
    with cluster() as c, pytest.raises(InvalidTopologyException, match=r"topology\.max\.spout\.pending \(12\)"):
        run(c, bolt, ["n"], conf={"topology.max.spout.pending": 12})


def test_a_late_stream_without_a_timestamp_is_refused_by_create_topology():
    bolt = SumWindow(Record()).with_window(Count(3)).with_late_tuple_stream("late")
    with cluster() as c, pytest.raises(ValueError, match="late tuple stream 'late'"):
        run(c, bolt, ["n"])


def test_the_watermark_waits_for_every_input_stream():
    """Event time over two spouts: no window until both have delivered, then the slower one holds the watermark."""
    windows = Record()
    fast, slow = FeederSpout(["n", "ts"]), FeederSpout(["n", "ts"])
    builder = TopologyBuilder()
    builder.set_spout("fast", fast)
    builder.set_spout("slow", slow)
    bolt = SumWindow(windows).with_tumbling_window(Duration.seconds(10)).with_timestamp_field("ts")
    builder.set_bolt("w", bolt).shuffle_grouping("fast").shuffle_grouping("slow")
    with cluster() as c:
        tracked = TrackedTopology(builder.create_topology(), c)
        c.submit_topology("two-streams", {}, tracked)
        for n, ts in ((1, 1_000), (2, 15_000)):
            fast.feed_no_ack([n, ts])
        tracked_wait(tracked, 2)
        c.advance_cluster_time(2)
        assert windows.snapshot() == []  # the slow stream has delivered nothing: no watermark
        slow.feed_no_ack([10, 12_000])
        tracked_wait(tracked, 1)
        c.advance_cluster_time(2)  # watermark min(15 s, 12 s) = 12 s: only the window ending at 10 s
        assert [(w["end"], w["values"]) for w in windows.snapshot()] == [(10_000, [1])]
        fast.feed_no_ack([3, 35_000])
        slow.feed_no_ack([11, 40_000])
        tracked_wait(tracked, 2)
        c.advance_cluster_time(2)  # watermark min(35 s, 40 s) = 35 s; nothing in (20 s, 30 s], 40 s not reached
        assert [(w["end"], w["values"]) for w in windows.snapshot()] == [(10_000, [1]), (20_000, [2, 10])]
