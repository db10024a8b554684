"""A spout reading a log reports its lag whatever the runtime wraps it in: a StatefulSpout in a topology with
managed state runs inside managed state's spout executor, and its lag still reaches the REST route and /metrics."""

from __future__ import annotations

from typing import Any

from storm_py import LocalCluster, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.metrics import reports
from storm_py.runtime.contracts import LagReporter, layers
from storm_py.stateful.managed_spout import StatefulSpoutExecutor
from storm_py.ui import stats_views
from tests.stateful.components import CountBolt, PositionSpout, SplitBolt, new_run

WORDS = ["apple", "pear", "fig"] * 10


class LogSpout(PositionSpout):
    """A position spout that reports its lag as a log reader does: one partition, the log's end its word count."""

    def lag_report(self) -> dict[str, Any]:
        return {"type": "log", "partitions": [["words", 0, self.pos, len(self.words)]], "emitted": self.pos}


def test_the_user_spout_inside_the_state_executor_is_the_one_reporting() -> None:
    spout = LogSpout("lag-unit", WORDS)
    wrapped = StatefulSpoutExecutor(spout)
    assert not isinstance(wrapped, LagReporter)
    assert [c for c in layers(wrapped) if isinstance(c, LagReporter)] == [spout]


def test_a_stateful_log_spout_reports_its_lag_through_the_heartbeat() -> None:
    new_run("lag")
    builder = TopologyBuilder()
    builder.set_spout("log", LogSpout("lag", WORDS))
    builder.set_bolt("split", SplitBolt("lag")).shuffle_grouping("log")
    builder.set_bolt("count", CountBolt("lag")).fields_grouping("split", ["word"])
    with LocalCluster() as cluster:
        cluster.submit_topology("lagged", {"topology.state.checkpoint.interval.ms": 100}, builder.create_topology())
        tid = cluster.get_topology_id("lagged")

        def lag() -> dict[str, Any]:
            return stats_views.topology_lag(reports.reports(cluster.nimbus.state.worker_heartbeats(tid)))

        wait_until(lambda: "log" in lag(), 30, interval=0.05, what="the log spout's lag in a heartbeat")
        cluster.kill_topology("lagged", wait_secs=0)
