"""The window manager and its policies (ports of Storm's WindowManagerTest expectations): events and watermarks
in, expiries and activations out, no clock."""

from __future__ import annotations

import pytest

from storm_py.windowing.events import Activation, Expiry
from storm_py.windowing.manager import EXPIRE_EVENTS_THRESHOLD, WindowManager
from storm_py.windowing.policies import (
    CountEvictionPolicy,
    CountTriggerPolicy,
    EvictionContext,
    TimeEvictionPolicy,
    TimeTriggerPolicy,
    WatermarkCountEvictionPolicy,
    WatermarkCountTriggerPolicy,
    WatermarkTimeEvictionPolicy,
    WatermarkTimeTriggerPolicy,
)

DAY_MS = 86_400_000


def seq(start: int, stop: int | None = None) -> list[int]:
    return list(range(start, (start if stop is None else stop) + 1))


class Recorder:
    """Collects a manager's steps like Storm's test listener: the last and all expiries and activations."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.expiries: list[list[int]] = []
        self.activations: list[Activation[int]] = []

    def take(self, steps) -> None:
        for step in steps:
            if isinstance(step, Expiry):
                self.expiries.append(step.values)
            else:
                self.activations.append(step)

    @property
    def expired(self) -> list[int]:
        return self.expiries[-1] if self.expiries else []

    @property
    def last(self) -> Activation[int]:
        return self.activations[-1]

    def windows(self) -> list[list[int]]:
        return [a.values for a in self.activations]


def manager(eviction, trigger) -> tuple[WindowManager[int], Recorder]:
    m: WindowManager[int] = WindowManager(eviction, trigger)
    m.start(0)
    return m, Recorder()


def test_count_window_sliding_by_two():
    """testCountBasedWindow: length 5 sliding 2; expiry comes with the activation that evicts."""
    m, r = manager(CountEvictionPolicy(5), CountTriggerPolicy(2))
    r.take(m.add(1, 1))
    r.take(m.add(2, 2))
    assert r.expiries == []
    assert (r.last.values, r.last.new, r.last.expired) == (seq(1, 2), seq(1, 2), [])
    r.take(m.add(3, 3))
    r.take(m.add(4, 4))
    assert r.expiries == []
    assert (r.last.values, r.last.new, r.last.expired) == (seq(1, 4), seq(3, 4), [])
    r.take(m.add(5, 5))
    r.take(m.add(6, 6))
    assert r.expired == [1]
    assert (r.last.values, r.last.new, r.last.expired) == (seq(2, 6), seq(5, 6), [1])
    r.clear()
    r.take(m.add(7, 7))
    assert r.expiries == []  # nothing expires until the trigger fires
    r.take(m.add(8, 8))
    assert r.expired == seq(2, 3)
    assert (r.last.values, r.last.new, r.last.expired) == (seq(4, 8), seq(7, 8), seq(2, 3))
    assert r.last.end == 8  # a count trigger's reference time is the last event's timestamp


def test_compaction_expires_every_threshold_events():
    """testExpireThreshold: with a trigger that never fires, the queue is still cut every 100 events."""
    m, r = manager(CountEvictionPolicy(5), TimeTriggerPolicy(3_600_000))
    for i in seq(1, 5):
        r.take(m.add(i, i))
    assert r.expiries == []
    for i in seq(6, EXPIRE_EVENTS_THRESHOLD):
        r.take(m.add(i, i))
    assert r.expired == seq(1, EXPIRE_EVENTS_THRESHOLD - 5)
    assert r.activations == []


@pytest.mark.parametrize(
    "eviction",
    [WatermarkCountEvictionPolicy(EXPIRE_EVENTS_THRESHOLD), WatermarkTimeEvictionPolicy(EXPIRE_EVENTS_THRESHOLD)],
    ids=["watermark-count", "watermark-time"],
)
def test_watermark_eviction_waits_for_the_first_watermark(eviction):
    """testExpireThresholdWithWatermark*EvictionPolicy: nothing expires before the first watermark."""
    threshold = EXPIRE_EVENTS_THRESHOLD
    m, r = manager(eviction, WatermarkCountTriggerPolicy(threshold))
    for i in seq(1, threshold):
        r.take(m.add(i, i))
    assert r.expiries == []
    r.take(m.add_watermark(threshold))
    assert r.last.values == seq(1, threshold)
    for i in seq(threshold + 1, threshold * 2):
        r.take(m.add(i, i))
    r.take(m.add_watermark(threshold + threshold + 1))
    assert [v for e in r.expiries for v in e] == seq(1, threshold)


def test_time_window_expiry_by_compaction_and_trigger():
    """testTimeBasedWindow: length 1 s; past events expire by compaction, then by the triggered evaluation."""
    m, r = manager(TimeEvictionPolicy(1000), TimeTriggerPolicy(DAY_MS))
    now = 10_000_000
    for i in seq(1, 50):
        r.take(m.add(i, now - 1000))
    for i in seq(51, EXPIRE_EVENTS_THRESHOLD):
        r.take(m.add(i, now))
    assert len(r.expired) == 50  # compaction at the 100th event, judged at the latest timestamp
    r.clear()
    for i in seq(EXPIRE_EVENTS_THRESHOLD + 1, EXPIRE_EVENTS_THRESHOLD + 100):
        r.take(m.add(i, now - 1000))
    m.eviction.set_context(EvictionContext(now + 100))
    out: list = []
    m.evaluate(out)
    r.take(out)
    assert r.expired == seq(EXPIRE_EVENTS_THRESHOLD + 1, EXPIRE_EVENTS_THRESHOLD + 100)
    assert r.last.values == seq(51, EXPIRE_EVENTS_THRESHOLD)
    assert r.last.new == seq(51, EXPIRE_EVENTS_THRESHOLD)
    # the activation's expired list includes those the compaction dropped
    assert r.last.expired == seq(1, 50) + seq(EXPIRE_EVENTS_THRESHOLD + 1, EXPIRE_EVENTS_THRESHOLD + 100)
    r.clear()
    newer = seq(EXPIRE_EVENTS_THRESHOLD + 101, EXPIRE_EVENTS_THRESHOLD + 200)
    for i in newer:
        r.take(m.add(i, now))
    m.eviction.set_context(EvictionContext(now + 200))
    out = []
    m.evaluate(out)
    r.take(out)
    assert r.expiries == []
    assert r.last.values == seq(51, EXPIRE_EVENTS_THRESHOLD) + newer
    assert r.last.new == newer


def test_time_window_empty_after_expiry():
    """testTimeBasedWindowExpiry: an evaluation that finds only expired events expires them and activates nothing."""
    m, r = manager(TimeEvictionPolicy(100), TimeTriggerPolicy(DAY_MS))
    now = 5_000
    for i in seq(1, 10):
        r.take(m.add(i, now))
    for reference, expect_window, expect_expired in ((now + 60, seq(1, 10), []), (now + 120, None, seq(1, 10)),
                                                     (now + 180, None, [])):
        r.clear()
        m.eviction.set_context(EvictionContext(reference))
        out: list = []
        assert m.evaluate(out) is (expect_window is not None)
        r.take(out)
        assert r.windows() == ([expect_window] if expect_window else [])
        assert r.expired == expect_expired


def test_time_trigger_fires_each_boundary_with_the_boundary_as_reference():
    """The clock trigger: a jump over several sliding intervals evaluates each one, at its own boundary."""
    m, r = manager(TimeEvictionPolicy(20), TimeTriggerPolicy(10))
    for i, ts in enumerate((1, 5, 12, 18, 25), start=1):
        r.take(m.add(i, ts))
    assert m.next_due() == 10
    r.take(m.on_time(9))
    assert r.activations == []
    r.take(m.on_time(31))
    assert [(a.end, a.values) for a in r.activations] == [(10, [1, 2]), (20, [1, 2, 3, 4]), (30, [3, 4, 5])]
    assert r.expiries == [[1, 2]]
    assert m.next_due() == 40


def test_tumbling_count_window():
    """testTumblingWindow: count 3 tumbling."""
    m, r = manager(CountEvictionPolicy(3), CountTriggerPolicy(3))
    for i in seq(1, 3):
        r.take(m.add(i, i))
    assert r.expiries == []
    assert (r.last.values, r.last.new, r.last.expired) == (seq(1, 3), seq(1, 3), [])
    r.clear()
    for i in seq(4, 6):
        r.take(m.add(i, i))
    assert r.expired == seq(1, 3)
    assert (r.last.values, r.last.new, r.last.expired) == (seq(4, 6), seq(4, 6), seq(1, 3))


def test_event_time_window_boundaries():
    """testEventTimeBasedWindow: length 20 sliding 10 over event time; window ends aligned to 10, gaps skipped."""
    eviction = WatermarkTimeEvictionPolicy(20)
    m, r = manager(eviction, WatermarkTimeTriggerPolicy(10))
    for i, ts in ((1, 603), (2, 605), (3, 607)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(609))  # finds the first aligned end (610) but activates nothing
    assert r.activations == []
    for i, ts in ((4, 618), (5, 626), (6, 636)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(631))
    assert r.windows() == [seq(1, 3), seq(1, 4), seq(4, 5)]
    assert [a.end for a in r.activations] == [610, 620, 630]
    assert [a.expired for a in r.activations] == [[], [], seq(1, 3)]
    assert [a.new for a in r.activations] == [seq(1, 3), [4], [5]]
    assert r.expiries == [seq(1, 3)]
    for i, ts in ((7, 825), (8, 826), (9, 827), (10, 839)):
        r.take(m.add(i, ts))
    r.clear()
    r.take(m.add_watermark(834))
    assert r.windows() == [[5, 6], [6], seq(7, 9)]
    assert [a.end for a in r.activations] == [640, 650, 830]
    assert [a.expired for a in r.activations] == [[4], [5], []]
    assert [a.new for a in r.activations] == [[6], [], seq(7, 9)]
    assert r.expiries == [[4], [5], [6]]


def test_count_window_over_event_time():
    """testCountBasedWindowWithEventTs: the last 3 events up to each 10-ms window end."""
    m, r = manager(WatermarkCountEvictionPolicy(3), WatermarkTimeTriggerPolicy(10))
    for i, ts in ((1, 603), (2, 605), (3, 607), (4, 618), (5, 626), (6, 636)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(631))
    assert r.windows() == [seq(1, 3), seq(2, 4), seq(3, 5)]
    for i, ts in ((7, 665), (8, 666), (9, 667), (10, 679)):
        r.take(m.add(i, ts))
    r.clear()
    r.take(m.add_watermark(674))
    assert r.windows() == [seq(4, 6), seq(4, 6), seq(4, 6), seq(7, 9)]


def test_count_trigger_over_event_time():
    """testCountBasedTriggerWithEventTs: every 3rd event (by arrival) up to the watermark ends a window."""
    m, r = manager(WatermarkTimeEvictionPolicy(20), WatermarkCountTriggerPolicy(3))
    for i, ts in ((1, 603), (2, 605), (3, 607), (4, 618), (5, 625), (6, 626), (7, 629), (8, 636)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(631))
    assert r.windows() == [seq(1, 3), seq(3, 6)]
    for i, ts in ((9, 665), (10, 666), (11, 667), (12, 669), (12, 679)):
        r.take(m.add(i, ts))
    r.clear()
    r.take(m.add_watermark(674))
    assert r.windows() == [[9], seq(9, 12)]


@pytest.mark.parametrize(("length", "expected"), [
    (2, [seq(1, 2), seq(3, 4), seq(5, 6), seq(7, 8), seq(9, 10)]),
    (5, [seq(1, 2), seq(1, 4), seq(2, 6), seq(4, 8), seq(6, 10)]),
], ids=["tumbling", "sliding"])
def test_count_windows_with_equal_timestamps(length, expected):
    """testCountBased{Tumbling,Sliding}WithSameEventTs: count windows stay exact when timestamps repeat."""
    m, r = manager(WatermarkCountEvictionPolicy(length), WatermarkCountTriggerPolicy(2))
    for i, ts in enumerate((10, 10, 11, 12, 12, 12, 12, 13, 14, 15), start=1):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(20))
    assert r.windows() == expected


def test_event_time_lag_takes_out_of_order_events():
    """testEventTimeLag: an event up to the lag out of order still lands in its window."""
    m, r = manager(WatermarkTimeEvictionPolicy(20, 5), WatermarkTimeTriggerPolicy(10))
    for i, ts in ((1, 603), (2, 605), (3, 607), (4, 618), (5, 626), (6, 632), (7, 629), (8, 636)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(631))
    assert r.windows() == [seq(1, 3), seq(1, 4), [4, 5, 7]]


def test_scan_stops_beyond_the_lag():
    """testScanStop: the eviction scan stops at the first event more than the lag past the window end."""
    scanned: set[int] = set()

    class Spy(WatermarkTimeEvictionPolicy):
        def evict(self, event):
            scanned.add(event.value)
            return super().evict(event)

    m, r = manager(Spy(20, 5), WatermarkTimeTriggerPolicy(10))
    for i, ts in enumerate((603, 605, 607, 618, 626, 629, 636, 637, 638, 639), start=1):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(631))
    assert r.windows() == [seq(1, 3), seq(1, 4), [4, 5, 6]]
    assert scanned == set(seq(1, 7))


def test_event_time_window_is_open_at_its_start_and_closed_at_its_end():
    """A duration window ending at ``end`` holds ``end - length < ts <= end``: an event on a boundary belongs
    to the window it ends and leaves the window that starts there."""
    m, r = manager(WatermarkTimeEvictionPolicy(20), WatermarkTimeTriggerPolicy(10))
    for i, ts in ((1, 610), (2, 620), (3, 630)):
        r.take(m.add(i, ts))
    r.take(m.add_watermark(630))
    assert [(a.end, a.values) for a in r.activations] == [(610, [1]), (620, [1, 2]), (630, [2, 3])]
