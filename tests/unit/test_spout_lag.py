"""The spouts' lag as nimbus reads it from heartbeats: validation of hostile reports, Storm's ``/lag`` shape and
the Prometheus gauges."""

from __future__ import annotations

from typing import Any

from storm_py.cluster_state.models import WorkerHeartbeat
from storm_py.metrics import prometheus, reports, stats
from storm_py.ui import stats_views


def beat(lag: Any, component: str = "kafka", tasks: list[int] | None = None) -> WorkerHeartbeat:
    report = {"component": component, "tasks": tasks or [3], "type": stats.SPOUT, "uptime": 5.0,
              "counters": {"acked": 1}, "gauges": {}, "lag": lag}
    return WorkerHeartbeat("t-1", [(3, 3)], time_secs=100.0, stats={"executors": {f"{component}:[3-3]": report}})


def lag_of(lag: Any) -> reports.SpoutLag | None:
    (found,) = reports.reports({("node", 6700): beat(lag)})
    return found.lag


def test_a_well_formed_report_reads_back_with_lag_per_partition() -> None:
    got = lag_of({"type": "KAFKA", "partitions": [["in", 0, 40, 50], ["in", 1, 7, 7]], "recordsPerSec": 12.5})
    assert got is not None and got.spout_type == "KAFKA" and got.records_per_sec == 12.5
    assert [(p.topic, p.partition, p.committed, p.head, p.lag) for p in got.partitions] == [
        ("in", 0, 40, 50, 10), ("in", 1, 7, 7, 0)]


def test_hostile_rows_are_left_out_and_the_rest_is_bounded() -> None:
    bad_rows: list[Any] = [
        ["in", True, 1, 2],  # a bool is not a partition
        ["in", -1, 1, 2],
        ["in", 0, 1, 2**63],  # beyond int64
        ["", 0, 1, 2],
        ["x" * 256, 0, 1, 2],
        ["in", 0, 1.5, 2],
        ["in", 0, 1],
        {"topic": "in"},
        "in/0",
    ]
    got = lag_of({"type": "KAFKA", "partitions": [*bad_rows, ["in", 2, 1, 3]], "recordsPerSec": float("nan")})
    assert got is not None and [(p.partition, p.lag) for p in got.partitions] == [(2, 2)]
    assert got.records_per_sec == 0.0, "NaN, infinite or negative rates read as 0"
    many = lag_of({"type": "KAFKA", "partitions": [["in", i, 0, 1] for i in range(stats.MAX_LAG_PARTITIONS + 50)]})
    assert many is not None and len(many.partitions) == stats.MAX_LAG_PARTITIONS
    not_a_report: Any
    for not_a_report in (None, [], {"type": 3, "partitions": []}, {"type": "K" * 33, "partitions": []},
                         {"type": "KAFKA", "partitions": "all"}):
        assert lag_of(not_a_report) is None


def test_the_lag_route_has_storms_shape_summed_over_a_spouts_executors() -> None:
    beats = {
        ("a", 6700): beat({"type": "KAFKA", "partitions": [["in", 0, 40, 50]], "recordsPerSec": 10.0}),
        ("b", 6700): beat({"type": "KAFKA", "partitions": [["in", 1, 5, 5], ["other", 0, 1, 4]],
                           "recordsPerSec": 2.5}, tasks=[4]),
        ("c", 6700): beat(None, component="count"),
    }
    assert stats_views.topology_lag(reports.reports(beats)) == {"kafka": {
        "spoutId": "kafka", "spoutType": "KAFKA", "totalLag": 13, "recordsPerSec": 12.5,
        "spoutLagResult": {
            "in": {"0": {"consumerCommittedOffset": 40, "logHeadOffset": 50, "lag": 10},
                   "1": {"consumerCommittedOffset": 5, "logHeadOffset": 5, "lag": 0}},
            "other": {"0": {"consumerCommittedOffset": 1, "logHeadOffset": 4, "lag": 3}},
        },
    }}


def test_prometheus_has_a_lag_gauge_per_partition_and_the_records_rate() -> None:
    figures = stats.combine([])
    comps = {"kafka": prometheus.ComponentSeries(True, figures, figures, {}, {("in", 0): 10, ("in", 1): 0}, 12.5)}
    text = prometheus.render(prometheus.topology_families([({"name": "t", "id": "t-1"}, comps)]))
    assert 'storm_kafka_spout_lag{topology="t",component="kafka",topic="in",partition="0"} 10' in text
    assert 'storm_kafka_spout_lag{topology="t",component="kafka",topic="in",partition="1"} 0' in text
    assert 'storm_kafka_spout_records_per_second{topology="t",component="kafka"} 12.5' in text


def test_a_kafka_spout_not_opened_yet_reports_no_partitions() -> None:
    """A heartbeat may ask before ``open`` ran (a slow start): an empty report, not an error."""
    from storm_py.kafka import KafkaSpout, KafkaSpoutConfig

    report = KafkaSpout(KafkaSpoutConfig("127.0.0.1:1", ["t"])).lag_report()
    assert report == {"type": "KAFKA", "partitions": [], "emitted": 0}
    assert lag_of(report) is not None
