"""Windows' configuration and event-time clock: Count/Duration, the chainable bolt configuration, the window
spec read from a conf with its submit-time limits, and the watermark generator."""

from __future__ import annotations

import pytest

from storm_py import BaseWindowedBolt, Count, Duration, InvalidTopologyException, TopologyBuilder
from storm_py.errors import ConfigError
from storm_py.testing import FixedTupleSpout
from storm_py.windowing import TupleWindow
from storm_py.windowing.executor import WindowedBoltExecutor
from storm_py.windowing.policies import (
    CountEvictionPolicy,
    CountTriggerPolicy,
    TimeEvictionPolicy,
    TimeTriggerPolicy,
    WatermarkCountTriggerPolicy,
    WatermarkTimeEvictionPolicy,
)
from storm_py.windowing.spec import WindowSpec, check_windowed_components
from storm_py.windowing.watermarks import WatermarkGenerator


class Noop(BaseWindowedBolt):
    def execute(self, window):
        pass


def test_spans():
    assert Count(3).value == Count.of(3).value == 3
    assert Duration.of(1500).value == 1500
    assert Duration.seconds(2).value == 2000
    assert Duration.minutes(1).value == 60_000
    assert Duration.hours(1).value == 3_600_000
    assert Duration.days(1).value == 86_400_000
    assert Duration.seconds(10) == Duration(10_000)
    with pytest.raises(TypeError, match="int"):
        Count("3")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="negative"):
        Duration(-1)


def test_tuple_window_accessors():
    window = TupleWindow([1, 2, 3], [3], [0], 10, 30)
    assert (window.get(), window.get_new(), window.get_expired()) == ([1, 2, 3], [3], [0])
    assert (window.get_start_timestamp(), window.get_end_timestamp()) == (10, 30)
    assert list(window) == [1, 2, 3] and len(window) == 3


def test_chainable_configuration_sets_storms_keys():
    bolt = (Noop().with_window(Duration.seconds(20), Duration.seconds(10)).with_timestamp_field("ts")
            .with_lag(Duration.seconds(5)).with_watermark_interval(Duration(500)).with_late_tuple_stream("late"))
    assert bolt.get_component_configuration() == {
        "topology.bolts.window.length.duration.ms": 20_000,
        "topology.bolts.sliding.interval.duration.ms": 10_000,
        "topology.bolts.tuple.timestamp.field.name": "ts",
        "topology.bolts.tuple.timestamp.max.lag.ms": 5000,
        "topology.bolts.watermark.event.interval.ms": 500,
        "topology.bolts.late.tuple.stream": "late",
    }
    assert Noop().with_tumbling_window(Count(7)).get_component_configuration() == {
        "topology.bolts.window.length.count": 7, "topology.bolts.sliding.interval.count": 7,
    }
    rechained = Noop().with_window(Count(5), Count(2)).with_window(Duration(100))
    assert rechained.get_component_configuration() == {"topology.bolts.window.length.duration.ms": 100}


@pytest.mark.parametrize(("call", "error"), [
    (lambda b: b.with_window(Count(0)), "window length must be positive"),
    (lambda b: b.with_window(5), "Count or a Duration"),
    (lambda b: b.with_window(Count(5), Duration(0)), "sliding interval must be positive"),
    (lambda b: b.with_timestamp_field(""), "timestamp field"),
    (lambda b: b.with_timestamp_extractor(42), "callable"),
    (lambda b: b.with_lag(5), "lag must be a Duration"),
    (lambda b: b.with_late_tuple_stream(""), "late tuple stream"),
])
def test_bad_configuration_is_refused_at_declaration(call, error):
    with pytest.raises((ValueError, TypeError), match=error):
        call(Noop())


def test_set_bolt_runs_a_windowed_bolt_in_its_executor():
    builder = TopologyBuilder()
    builder.set_spout("s", FixedTupleSpout([[1]]))
    builder.set_bolt("w", Noop().with_window(Duration.seconds(10), Duration.seconds(2))).shuffle_grouping("s")
    spec = builder.create_topology().bolts["w"]
    assert isinstance(spec.obj, WindowedBoltExecutor)
    assert spec.conf["topology.bolts.window.length.duration.ms"] == 10_000
    assert spec.conf["topology.tick.tuple.freq.secs"] == 0.2  # a tenth of the sliding interval drives the clock


def test_late_stream_without_timestamp_is_refused_by_create_topology():
    builder = TopologyBuilder()
    builder.set_spout("s", FixedTupleSpout([[1]]))
    builder.set_bolt("w", Noop().with_window(Count(3)).with_late_tuple_stream("late")).shuffle_grouping("s")
    with pytest.raises(ValueError, match=r"late tuple stream 'late'.*timestamp field or extractor"):
        builder.create_topology()


def test_late_stream_is_declared_with_one_field():
    builder = TopologyBuilder()
    builder.set_spout("s", FixedTupleSpout([[1]]))
    bolt = Noop().with_window(Count(3)).with_timestamp_extractor(lambda t: 0).with_late_tuple_stream("late")
    builder.set_bolt("w", bolt).shuffle_grouping("s")
    fields, direct = builder.create_topology().bolts["w"].streams["late"]
    assert fields.to_list() == ["late_tuple"] and not direct


@pytest.mark.parametrize(("conf", "event_time", "eviction", "trigger"), [
    ({"topology.bolts.window.length.count": 5}, False, CountEvictionPolicy, CountTriggerPolicy),
    ({"topology.bolts.window.length.duration.ms": 5, "topology.bolts.sliding.interval.duration.ms": 2}, False,
     TimeEvictionPolicy, TimeTriggerPolicy),
    ({"topology.bolts.window.length.duration.ms": 5, "topology.bolts.sliding.interval.count": 2}, True,
     WatermarkTimeEvictionPolicy, WatermarkCountTriggerPolicy),
])
def test_spec_picks_storms_policies(conf, event_time, eviction, trigger):
    manager = WindowSpec.from_conf(conf, event_time).manager()
    assert type(manager.eviction) is eviction and type(manager.trigger) is trigger


def test_spec_defaults_and_errors():
    spec = WindowSpec.from_conf({"topology.bolts.window.length.count": 5}, event_time=True)
    assert (spec.sliding_count, spec.lag_ms, spec.watermark_interval_ms) == (1, 0, 1000)
    assert spec.start_of(100) is None
    with pytest.raises(ConfigError, match="window length is not set"):
        WindowSpec.from_conf({}, event_time=False)
    with pytest.raises(ConfigError, match=r"topology\.bolts\.window\.length\.count"):
        WindowSpec.from_conf({"topology.bolts.window.length.count": 0}, event_time=False)


def test_message_timeout_shorter_than_the_window_is_refused():
    """Storm's validate: duration length + sliding must fit in the message timeout, counts in max spout pending."""
    window = {"topology.bolts.window.length.duration.ms": 20_000, "topology.bolts.sliding.interval.duration.ms": 15_000}
    check_windowed_components({"w": window}, {"topology.message.timeout.secs": 35})
    with pytest.raises(InvalidTopologyException, match=r"'w'.*35000 ms.*topology.message.timeout.secs \(30 s\)"):
        check_windowed_components({"w": window}, {"topology.message.timeout.secs": 30})
    check_windowed_components({"w": window}, {"topology.message.timeout.secs": 30,
                                              "topology.enable.message.timeouts": False})
    counts = {"topology.bolts.window.length.count": 10, "topology.bolts.sliding.interval.count": 5}
    check_windowed_components({"w": counts}, {"topology.max.spout.pending": 15})
    with pytest.raises(InvalidTopologyException, match=r"15 tuples.*topology.max.spout.pending \(14\)"):
        check_windowed_components({"w": counts}, {"topology.max.spout.pending": 14})
    check_windowed_components({"plain": {}}, {"topology.message.timeout.secs": 1})


def test_watermark_is_the_minimum_over_streams_minus_the_lag():
    gen = WatermarkGenerator({"a", "b"}, lag=5, interval=1000)
    gen.start(0)
    assert gen.track("a", 100)
    assert gen.poll(999) is None  # not due yet
    assert gen.poll(1000) is None  # stream b has delivered nothing: no watermark
    assert gen.track("b", 80)
    assert gen.track("a", 90)  # out of order on a: a's latest stays 100
    assert gen.poll(1500) is None  # next one due at 2000
    assert gen.poll(2000) == 75
    assert not gen.track("b", 74)  # before the watermark: late
    assert gen.track("b", 75)
    assert gen.poll(3000) is None  # nothing moved
    gen.track("b", 200)
    assert gen.poll(5500) == 95  # several intervals late: one watermark
    assert gen.poll(5999) is None
