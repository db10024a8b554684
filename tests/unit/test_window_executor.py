"""The window executor driven by hand (ports of Storm's WindowedBoltExecutorTest expectations): a fake
collector, a simulated clock, tick tuples for time."""

from __future__ import annotations

import pytest

from storm_py import BaseWindowedBolt, Count, Duration
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Fields, Tuple, make_tick_tuple
from storm_py.clock import SimulatedClock
from storm_py.windowing.executor import WindowedBoltExecutor

CONF = {
    "topology.message.timeout.secs": 100_000,
    "topology.bolts.window.length.duration.ms": 20,
    "topology.bolts.sliding.interval.duration.ms": 10,
    "topology.bolts.tuple.timestamp.max.lag.ms": 5,
    "topology.bolts.watermark.event.interval.ms": 1000,
}


class Windows(BaseWindowedBolt):
    def __init__(self) -> None:
        self.windows = []

    def execute(self, window):
        self.windows.append(window)


class Collector:
    def __init__(self) -> None:
        self.emitted: list[tuple[str, list, object]] = []
        self.acked: list[Tuple] = []
        self.failed: list[Tuple] = []

    def emit(self, values, anchors=None, stream="default"):
        self.emitted.append((stream, values, anchors))
        return []

    def emit_direct(self, task_id, values, anchors=None, stream="default"):
        pass

    def ack(self, tup):
        self.acked.append(tup)

    def fail(self, tup):
        self.failed.append(tup)

    def reset_timeout(self, tup):
        pass

    def report_error(self, exc):
        pass


def context(clock: SimulatedClock, streams: dict[str, Fields] | None = None) -> TopologyContext:
    return TopologyContext(
        topology_id="t-1", topology_name="t", task_id=1, component_id="w", task_to_component={1: "w", 2: "s1Src"},
        component_tasks={"w": [1], "s1Src": [2]}, component_streams={"w": streams or {}}, worker_tasks=[1, 2],
        clock=clock, sources={("s1Src", "default"): None},
    )


def tup(ts_fields: list[str], values: list) -> Tuple:
    return Tuple(values, Fields(ts_fields), "s1Src", "default", 2, None)


def prepared(bolt: BaseWindowedBolt, conf: dict, streams: dict[str, Fields] | None = None):
    clock = SimulatedClock()
    executor = WindowedBoltExecutor(bolt)
    collector = Collector()
    executor.prepare(dict(conf), context(clock, streams), collector)
    return executor, collector, clock


def since_zero(clock: SimulatedClock, window) -> tuple[int | None, int]:
    """A processing-time window's bounds as ms of the simulated clock since its zero (the window carries epoch
    ms: the clock's wall time)."""
    zero = round(clock.wall_at(0.0) * 1000)
    start = window.get_start_timestamp()
    return (None if start is None else start - zero), window.get_end_timestamp() - zero


def watermark(executor: WindowedBoltExecutor, clock: SimulatedClock) -> None:
    """What the watermark interval's tick does."""
    clock.advance(1.0)
    executor.execute(make_tick_tuple(0.1))


def test_a_tuple_without_the_timestamp_field_raises_naming_it():
    """testExecuteWithoutTs: the bolt executor turns the error into a failed tuple and a reported error."""
    executor, _, _ = prepared(Windows().with_timestamp_field("ts"), CONF)
    with pytest.raises(ValueError, match="no timestamp field 'ts'"):
        executor.execute(tup(["a"], [1]))


def test_windows_on_a_watermark():
    """testExecuteWithTs: six tuples, one watermark (636 - 5 = 631), three windows."""
    bolt = Windows().with_timestamp_field("ts")
    executor, _, clock = prepared(bolt, CONF)
    for ts in (603, 605, 607, 618, 626, 636):
        executor.execute(tup(["ts"], [ts]))
    assert executor.bolt.windows == []
    watermark(executor, clock)
    windows = executor.bolt.windows
    assert [[t[0] for t in w.get()] for w in windows] == [[603, 605, 607], [603, 605, 607, 618], [618, 626]]
    assert [(w.get_start_timestamp(), w.get_end_timestamp()) for w in windows] == [(590, 610), (600, 620),
                                                                                     (610, 630)]


def test_a_late_stream_needs_a_timestamp():
    """testPrepareLateTupleStreamWithoutTs."""
    with pytest.raises(ValueError, match=r"late tuple stream.*needs a timestamp field or extractor"):
        prepared(Windows(), {**CONF, "topology.bolts.late.tuple.stream": "$late"}, {"$late": Fields("late_tuple")})


def test_a_late_stream_must_be_declared_by_the_builder_method():
    """testPrepareLateTupleStreamWithoutBuilder: set through the conf alone, the stream is not declared."""
    with pytest.raises(ValueError, match=r"late tuple stream '\$late' is not declared: set it with with_late"):
        prepared(Windows().with_timestamp_field("ts"), {**CONF, "topology.bolts.late.tuple.stream": "$late"})


def test_a_late_tuple_goes_to_the_late_stream_anchored_and_is_acked():
    """testExecuteWithLateTupleStream: after each tuple a watermark; 600 comes after 636's watermark (631)."""
    bolt = Windows().with_timestamp_field("ts").with_late_tuple_stream("$late")
    executor, collector, clock = prepared(bolt, {**CONF, "topology.bolts.late.tuple.stream": "$late"},
                                          {"$late": Fields("late_tuple")})
    for ts in (603, 605, 607, 618, 626, 636, 600):
        last = tup(["ts"], [ts])
        executor.execute(last)
        watermark(executor, clock)
    assert ("$late", [[600]], last) in collector.emitted
    assert last in collector.acked


def test_processing_time_windows_follow_the_clock_and_ack_on_expiry():
    bolt = Windows().with_window(Duration(20), Duration(10))
    conf = {"topology.bolts.window.length.duration.ms": 20, "topology.bolts.sliding.interval.duration.ms": 10}
    executor, collector, clock = prepared(bolt, conf)
    first, second = tup(["n"], [1]), tup(["n"], [2])
    executor.execute(first)  # t = 0
    clock.advance(0.005)
    executor.execute(second)  # t = 5 ms
    clock.advance(0.030)  # t = 35 ms: the windows ending at 10, 20 and 30 are due
    executor.execute(make_tick_tuple(0.001))
    windows = executor.bolt.windows
    # (end - 20, end]: the tuple of t = 0 leaves at 20, the one of t = 5 at 30 (an empty window: no activation)
    assert [(since_zero(clock, w)[1], [t[0] for t in w]) for w in windows] == [(10, [1, 2]), (20, [2])]
    assert collector.acked == [first, second]


def test_count_window_emits_are_anchored_to_the_window():
    class Emitter(BaseWindowedBolt):
        def prepare(self, conf, context, collector):
            self.collector = collector

        def execute(self, window):
            self.collector.emit([len(window)])
            self.collector.emit([0], anchors=[])  # explicit anchors win

    conf = {"topology.bolts.window.length.count": 2, "topology.bolts.sliding.interval.count": 2}
    executor, collector, _ = prepared(Emitter().with_tumbling_window(Count(2)), conf)
    inputs = [tup(["n"], [i]) for i in range(2)]
    for t in inputs:
        executor.execute(t)
    assert collector.emitted == [("default", [2], inputs), ("default", [0], [])]


def feed_at(executor, clock, times_ms: list[int]) -> None:
    """Tuple ``i`` (value i) at each time of ``times_ms``, then a tick at the last time."""
    for i, at in enumerate(times_ms, start=1):
        clock.advance(at / 1000 - clock.now())
        executor.execute(tup(["n"], [i]))
    executor.execute(make_tick_tuple(0.001))


def test_count_window_sliding_with_every_tuple():
    """withWindow(Count): the last 3 tuples at every tuple."""
    conf = {"topology.bolts.window.length.count": 3}
    executor, collector, clock = prepared(Windows().with_window(Count(3)), conf)
    feed_at(executor, clock, [1, 2, 3, 4, 5])
    assert [[t[0] for t in w] for w in executor.bolt.windows] == [[1], [1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]
    assert [t[0] for t in collector.acked] == [1, 2]


def test_count_window_sliding_on_the_clock():
    """withWindow(Count, Duration): every 10 ms, the last 3 tuples."""
    conf = {"topology.bolts.window.length.count": 3, "topology.bolts.sliding.interval.duration.ms": 10}
    executor, _, clock = prepared(Windows().with_window(Count(3), Duration(10)), conf)
    feed_at(executor, clock, [1, 2, 3, 4, 12, 25])
    windows = executor.bolt.windows
    assert [(*since_zero(clock, w), [t[0] for t in w]) for w in windows] == [
        (None, 10, [2, 3, 4]), (None, 20, [3, 4, 5]),
    ]


def test_duration_window_sliding_with_every_tuple():
    """withWindow(Duration): at every tuple, the tuples of the last 20 ms."""
    conf = {"topology.bolts.window.length.duration.ms": 20}
    executor, _, clock = prepared(Windows().with_window(Duration(20)), conf)
    feed_at(executor, clock, [1, 10, 21, 30, 45])
    windows = executor.bolt.windows
    assert [(since_zero(clock, w)[1], [t[0] for t in w]) for w in windows] == [
        (1, [1]), (10, [1, 2]), (21, [2, 3]), (30, [3, 4]), (45, [4, 5]),
    ]


def test_processing_time_windows_carry_the_wall_time_of_the_clock():
    """Start and end are epoch ms: the simulated clock's ``wall()`` at the trigger, the start a window length
    before it; nothing near the monotonic ``now()``."""
    conf = {"topology.bolts.window.length.duration.ms": 20}
    executor, _, clock = prepared(Windows().with_window(Duration(20)), conf)
    clock.advance(7.0)
    executor.execute(tup(["n"], [1]))
    (window,) = executor.bolt.windows
    assert window.get_end_timestamp() == round(clock.wall() * 1000)
    assert window.get_start_timestamp() == window.get_end_timestamp() - 20
    count_conf = {"topology.bolts.window.length.count": 1}
    count_executor, _, count_clock = prepared(Windows().with_window(Count(1)), count_conf)
    count_clock.advance(3.0)
    count_executor.execute(tup(["n"], [1]))
    (window,) = count_executor.bolt.windows
    assert window.get_end_timestamp() == round(count_clock.wall() * 1000) and window.get_start_timestamp() is None


def test_duration_window_sliding_by_count():
    """withWindow(Duration, Count): every 2 tuples, the tuples of the 20 ms up to the second one."""
    conf = {"topology.bolts.window.length.duration.ms": 20, "topology.bolts.sliding.interval.count": 2}
    executor, _, clock = prepared(Windows().with_window(Duration(20), Count(2)), conf)
    feed_at(executor, clock, [1, 5, 18, 30, 31, 32])
    windows = executor.bolt.windows
    assert [(since_zero(clock, w)[1], [t[0] for t in w]) for w in windows] == [
        (5, [1, 2]), (30, [3, 4]), (32, [3, 4, 5, 6]),
    ]


def test_the_timestamp_field_is_found_in_each_tuples_own_fields():
    """Tuples of streams with different fields: each one's timestamp comes from its own field position."""
    from storm_py.windowing.bolt import FieldTimestamp

    extract = FieldTimestamp("ts")
    assert extract(tup(["ts", "v"], [10, 1])) == 10
    assert extract(tup(["v", "ts"], [1, 20])) == 20
    assert extract(tup(["ts", "v"], [30, 1])) == 30
    with pytest.raises(ValueError, match="no timestamp field 'ts'"):
        extract(tup(["v"], [1]))


def test_the_watermark_is_the_minimum_over_interleaved_streams():
    """Two input streams whose tuples alternate: the watermark follows the slower stream."""
    clock = SimulatedClock()
    executor = WindowedBoltExecutor(Windows().with_timestamp_field("ts"))
    ctx = TopologyContext(
        topology_id="t-1", topology_name="t", task_id=1, component_id="w",
        task_to_component={1: "w", 2: "s1Src", 3: "s2Src"}, component_tasks={"w": [1], "s1Src": [2], "s2Src": [3]},
        component_streams={"w": {}}, worker_tasks=[1, 2, 3], clock=clock,
        sources={("s1Src", "default"): None, ("s2Src", "default"): None},
    )
    executor.prepare(dict(CONF), ctx, Collector())
    fields = Fields(["ts"])
    for fast, slow in ((100, 50), (200, 60), (300, 70)):
        executor.execute(Tuple([fast], fields, "s1Src", "default", 2, None))
        executor.execute(Tuple([slow], fields, "s2Src", "default", 3, None))
    watermark(executor, clock)
    assert executor.watermarks is not None and executor.watermarks.watermark == 70 - 5  # lag 5
