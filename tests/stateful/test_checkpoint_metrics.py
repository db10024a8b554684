"""The last committed checkpoint in the topology page (REST) and in /metrics, and the checkpoint spout shown as a
system component (left out of the topology's totals and the graph)."""

from __future__ import annotations

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.metrics import prometheus, reports
from storm_py.stateful.at_least_once.checkpoint import CHECKPOINT_COMPONENT_ID
from storm_py.ui import stats_views
from tests.stateful.components import new_run, word_count_topology

WORDS = ["apple", "pear", "fig"] * 20


def test_last_committed_checkpoint_in_rest_and_metrics():
    run = new_run("metrics")
    with LocalCluster() as cluster:
        cluster.submit_topology("ckpt-metrics", {"topology.state.checkpoint.interval.ms": 100},
                                word_count_topology("metrics", WORDS))
        wait_until(lambda: len(run.acked) == len(WORDS), 30, what="every word acked")

        def page():
            return cluster.get_topology_summary("ckpt-metrics")

        wait_until(lambda: (page()["lastCheckpoint"] or {}).get("ageSecs") is not None, 30,
                   what="a committed checkpoint in the topology page")
        summary = page()
        last = summary["lastCheckpoint"]
        assert last["txid"] >= 0 and 0 <= last["ageSecs"] < 30
        assert CHECKPOINT_COMPONENT_ID in [s["spoutId"] for s in summary["spouts"]]
        assert reports.is_system(CHECKPOINT_COMPONENT_ID)
        tid = cluster.get_topology_id("ckpt-metrics")
        nimbus = cluster.nimbus
        base = nimbus.state.storm_base(tid)
        found = reports.reports(nimbus.state.worker_heartbeats(tid))
        series = reports.prometheus_series(nimbus.stats_book, tid, base, found, nimbus.clock.wall())
        text = prometheus.render(prometheus.topology_families([({"name": "ckpt-metrics", "id": tid}, series)]))
        assert 'storm_topology_checkpoint_txid{topology="ckpt-metrics"}' in text
        assert 'storm_topology_checkpoint_age_seconds{topology="ckpt-metrics"}' in text
        assert CHECKPOINT_COMPONENT_ID not in stats_views.visualization(base, reports.by_component(
            nimbus.stats_book, tid, found, ":all-time", nimbus.clock.wall()))
        cluster.kill_topology("ckpt-metrics", wait_secs=0)


def test_a_topology_without_managed_state_has_no_checkpoint():
    assert stats_views.checkpoint_status([], 0.0) is None
