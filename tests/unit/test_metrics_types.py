"""Storm's metric types, the bucket schedule of registered metrics, consumer registrations."""

from __future__ import annotations

import pytest

from storm_py.errors import ConfigError
from storm_py.metrics import CombinedMetric, CountMetric, MeanReducer, MultiCountMetric, ReducedMetric
from storm_py.metrics.consumer import LoggingMetricsConsumer, load_consumer, registrations
from storm_py.metrics.registry import MetricsSchedule, builtin_points


def test_count_metric_counts_and_resets() -> None:
    m = CountMetric()
    m.incr()
    m.incr(4)
    assert m.get_value_and_reset() == 5
    assert m.get_value_and_reset() == 0


def test_multi_count_metric_counts_per_key() -> None:
    m = MultiCountMetric()
    m.scope("a").incr()
    m.scope("a").incr()
    m.scope("b").incr(3)
    assert m.get_value_and_reset() == {"a": 2, "b": 3}
    assert m.get_value_and_reset() == {"a": 0, "b": 0}


def test_reduced_metric_with_mean_reducer() -> None:
    m = ReducedMetric(MeanReducer())
    assert m.get_value_and_reset() is None
    for v in (1, 2, 6):
        m.update(v)
    assert m.get_value_and_reset() == 3.0
    assert m.get_value_and_reset() is None
    with pytest.raises(TypeError, match="MeanReducer takes numbers"):
        m.update("x")


class _Max:
    def identity(self) -> int:
        return 0

    def combine(self, a: int, b: int) -> int:
        return max(a, b)


def test_combined_metric() -> None:
    m = CombinedMetric(_Max())
    for v in (3, 9, 2):
        m.update(v)
    assert m.get_value_and_reset() == 9
    assert m.get_value_and_reset() == 0


def test_schedule_reports_each_bucket_on_simulated_time() -> None:
    sched = MetricsSchedule(now=100.0)
    fast, slow = CountMetric(), CountMetric()
    sched.add(7, "fast", fast, 1)
    sched.add(7, "slow", slow, 5)
    assert sched.next_at == 101.0
    fast.incr(2)
    slow.incr(10)
    assert sched.due(100.5) == []
    (due,) = sched.due(101.0)
    assert (due.task, due.bucket_secs, due.points) == (7, 1.0, [("fast", 2)])
    reports = []
    for t in range(2, 6):
        fast.incr()
        reports += sched.due(100.0 + t)
    assert [(d.bucket_secs, d.points) for d in reports] == [
        (1.0, [("fast", 1)]), (1.0, [("fast", 1)]), (1.0, [("fast", 1)]), (1.0, [("fast", 1)]), (5.0, [("slow", 10)])
    ]
    # a late call reads once and re-aligns to the bucket grid
    assert len(sched.due(112.5)) == 2 and sched.next_at == 113.0


def test_schedule_rejects_bad_registrations() -> None:
    sched = MetricsSchedule(now=0.0)
    with pytest.raises(ValueError, match="positive bucket_secs"):
        sched.add(1, "m", CountMetric(), 0)
    with pytest.raises(TypeError, match="get_value_and_reset"):
        sched.add(1, "m", object(), 5)


def test_builtin_points_are_bucket_deltas() -> None:
    prev = {"emitted:default": 10, "executed:spout:default": 4, "execute_ms:spout:default": 8.0, "acked": 4}
    cur = {"emitted:default": 25, "executed:spout:default": 14, "execute_ms:spout:default": 28.0, "acked": 14,
           "failed": 1}
    points = dict(builtin_points(prev, cur, {"receive_queue.population": 3}, is_spout=False))
    assert points["__emit-count"] == {"default": 15}
    assert points["__execute-count"] == {"spout:default": 10}
    assert points["__execute-latency"] == {"spout:default": 2.0}
    assert points["__ack-count"] == 10 and points["__fail-count"] == 1
    assert points["receive_queue"] == {"population": 3}


def test_registrations_read_and_name_the_consumer_component() -> None:
    conf = {"topology.metrics.consumer.register": [
        {"class": "storm_py.metrics:LoggingMetricsConsumer", "parallelism.hint": 2, "argument": {"x": 1}},
        {"class": "storm_py.metrics:LoggingMetricsConsumer"},
    ]}
    first, second = registrations(conf)
    assert first.component_id == "__metrics_storm_py.metrics:LoggingMetricsConsumer"
    assert (first.parallelism, first.argument) == (2, {"x": 1})
    assert second.component_id == "__metrics_storm_py.metrics:LoggingMetricsConsumer#2"
    assert isinstance(load_consumer(second.class_path), LoggingMetricsConsumer)


@pytest.mark.parametrize("entry, message", [
    ({"parallelism.hint": 1}, "needs a \"class\""),
    ({"class": "nocolon"}, "module:Class"),
    ({"class": "a:B", "parallelism.hint": 0}, "parallelism.hint"),
])
def test_bad_registrations_name_the_entry(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registrations({"topology.metrics.consumer.register": [entry]})


def test_unloadable_consumer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot load metrics consumer 'no_such_module:X'"):
        load_consumer("no_such_module:X")
