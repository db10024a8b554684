"""Metrics in LocalCluster on simulated time: a consumer gets every registered metric each bucket, and the
topology summary counts timed-out trees apart from failed ones."""

from __future__ import annotations

import itertools
import json
import logging
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.local import LocalCluster
from tests.ui.conftest import APP, BUCKET

pytestmark = [pytest.mark.timeout(120)]


@pytest.fixture
def metricsapp() -> Iterator[Any]:
    sys.path.insert(0, str(APP))
    try:
        import metricsapp.topology  # type: ignore[import-not-found]

        yield metricsapp.topology
    finally:
        sys.path.remove(str(APP))


def read_points(path: Path) -> dict[tuple[str, int, str], list[dict[str, Any]]]:
    points: dict[tuple[str, int, str], list[dict[str, Any]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            p = json.loads(line)
            points[(p["component"], p["task"], p["name"])].append(p)
    return points


def test_consumer_gets_every_registered_metric_each_bucket_in_local_cluster(tmp_path: Path, metricsapp: Any) -> None:
    out = tmp_path / "consumer.jsonl"
    conf = {
        "topology.workers": 2, "topology.message.timeout.secs": 4, "metrics.trees": 100, "metrics.rate": 5,
        "metrics.sleep.ms": 1, "metrics.bucket": BUCKET, "topology.builtin.metrics.bucket.size.secs": BUCKET,
        "topology.metrics.consumer.register": [
            {"class": "metricsapp.topology:FileConsumer", "parallelism.hint": 2, "argument": str(out)}],
    }
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("local", conf, metricsapp.build(conf))
        registered: list[tuple[str, int, str]] = []
        buckets = 8
        for n in range(1, buckets + 1):
            cluster.advance_cluster_time(BUCKET)

            def delivered(n: int = n) -> bool:
                points = read_points(out)
                registered[:] = [k for k in points if k[2] in ("spout-emits", "judged")]
                return len(registered) == 3 and all(len(points[k]) >= n for k in registered)

            wait_until(delivered, 30, interval=0.05, what=f"bucket {n} of every registered metric")
        points = read_points(out)
        for key in registered:
            stamps = [p["timestamp"] for p in points[key]]
            assert len(stamps) == buckets, (key, stamps)  # one data point per bucket, none missed or doubled
            assert all(b - a == pytest.approx(BUCKET) for a, b in itertools.pairwise(stamps)), (key, stamps)
        assert sum(p["value"] for p in points[next(k for k in registered if k[2] == "spout-emits")]) == 100
        judged = [p["value"] for k in registered if k[2] == "judged" for p in points[k]]
        assert sum(v.get("failed", 0) for v in judged) == 10 and sum(v.get("dropped", 0) for v in judged) == 10
        summary = cluster.get_topology_summary("local")
        counted = next(s for s in summary["spouts"] if s["spoutId"] == "counted")
        assert (counted["acked"], counted["failed"], counted["timedOut"]) == (80, 10, 10)


def test_the_logging_consumer_logs_every_data_point(
    metricsapp: Any, caplog: pytest.LogCaptureFixture
) -> None:
    conf = {
        "topology.workers": 1, "metrics.trees": 10, "metrics.rate": 5, "metrics.sleep.ms": 1,
        "metrics.bucket": BUCKET, "topology.builtin.metrics.bucket.size.secs": BUCKET,
        "topology.metrics.consumer.register": [{"class": "storm_py.metrics:LoggingMetricsConsumer"}],
    }
    caplog.set_level(logging.INFO, logger="storm_py.metrics.consumer")
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("logged", conf, metricsapp.build(conf))
        for _ in range(3):
            cluster.advance_cluster_time(BUCKET)

        def logged() -> bool:
            lines = [r.getMessage() for r in caplog.records if r.name == "storm_py.metrics.consumer"]
            return any("spout-emits" in x for x in lines) and any("__emit-count" in x for x in lines)

        wait_until(logged, 30, interval=0.05, what="the logging consumer's lines")
    line = next(r.getMessage() for r in caplog.records if "spout-emits" in r.getMessage())
    assert "counted" in line and "\t" in line  # Storm's tab-separated line: time, host:port, task:component, name
