"""User metrics on /metrics: ``register_metric`` values (last bucket) and metrics v2 with topology, component and
task labels, read from the workers' heartbeats as nimbus' ``GET /metrics`` reads them."""

from __future__ import annotations

from typing import Any

from storm_py import Bolt, Fields, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.local import LocalCluster
from storm_py.metrics import CountMetric, prometheus, reports
from storm_py.testing import AckFailMapTracker, FeederSpout


class Counting(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.seen = context.register_counter("seen")
        self.sizes = context.register_histogram("sizes")
        self.rate = context.register_meter("rate")
        context.register_gauge("constant", lambda: 42)
        self.bucketed = context.register_metric("bucketed", CountMetric(), 1)

    def execute(self, tup: Any) -> None:
        self.seen.inc()
        self.sizes.update(len(tup.values[0]))
        self.rate.mark()
        self.bucketed.incr()
        self.collector.ack(tup)


def metrics_text(cluster: LocalCluster) -> str:
    """What nimbus' /metrics serves for the cluster's topologies."""
    book = cluster.nimbus.stats_book
    topologies = []
    for row in cluster.nimbus.cluster_summary():
        base = cluster.state.storm_base(row["id"])
        assert base is not None
        found = reports.observe(book, row["id"], cluster.state.worker_heartbeats(row["id"]))
        topologies.append((row, reports.prometheus_series(book, row["id"], base, found, 0.0)))
    return prometheus.render(prometheus.topology_families(topologies))


def test_a_user_counter_appears_in_metrics_with_its_labels() -> None:
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("word"))
    spout.set_ack_fail_delegate(tracker)
    builder = TopologyBuilder()
    builder.set_spout("feeder", spout)
    builder.set_bolt("count", Counting()).shuffle_grouping("feeder")
    with LocalCluster() as cluster:
        cluster.submit_topology("user-metrics", {}, builder.create_topology())
        for i, word in enumerate(["a", "bb", "ccc"]):
            spout.feed([word], i)
        wait_until(lambda: all(tracker.is_acked(i) for i in range(3)), 10, what="three tuples acked")
        # task ids are laid out in component-id order: __acker is task 1, count task 2
        ours = 'topology="user-metrics",component="count",task="2"'

        def shows(line: str) -> bool:
            return line in metrics_text(cluster)

        wait_until(lambda: shows(f'storm_user_counter_total{{{ours},metric="seen"}} 3'), 10, what="the count")
        text = metrics_text(cluster)
        assert "# TYPE storm_user_counter_total counter" in text
        assert f'storm_user_gauge{{{ours},metric="constant"}} 42' in text
        assert f'storm_user_histogram_count{{{ours},metric="sizes"}} 3' in text
        assert f'storm_user_histogram_sum{{{ours},metric="sizes"}} 6' in text
        assert f'storm_user_meter_total{{{ours},metric="rate"}} 3' in text
        # register_metric: the last bucket's value (one-second buckets: the three counted, then zeros)
        wait_until(lambda: f'storm_user_metric{{{ours},metric="bucketed"}}' in metrics_text(cluster), 10,
                   what="the bucketed metric")
