"""Acceptance on a dev cluster: timed-out and failed trees apart (REST and /metrics), a sleeping bolt's capacity,
and a metrics consumer receiving every registered metric each bucket."""

from __future__ import annotations

import itertools
import json
import urllib.error
import urllib.request
from collections import defaultdict
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.ui.conftest import BUCKET, RATE, SLEEP_MS, TREES, MetricsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]


def spout(page: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in page["spouts"] if s["spoutId"] == name)


def test_timed_out_and_failed_trees_are_counted_apart(metrics_cluster: MetricsCluster) -> None:
    client = metrics_cluster.client()

    def settled() -> bool:
        s = spout(client.topology("judged"), "counted")
        return bool(s["acked"] + s["failed"] + s["timedOut"] >= TREES)

    wait_until(settled, 120, interval=0.5, what=f"all {TREES} trees of 'counted' acked, failed or timed out")
    page = client.topology("judged")
    s = spout(page, "counted")
    assert (s["acked"], s["failed"], s["timedOut"]) == (80, 10, 10), s
    judge = next(b for b in page["bolts"] if b["boltId"] == "judge")
    assert judge["executed"] == TREES and judge["failed"] == 10 and judge["acked"] == 80
    all_time = next(w for w in page["topologyStats"] if w["window"] == ":all-time")
    assert all_time["timedOut"] == 10 and all_time["failed"] == 10
    ten_min = client.request("GET", f"/topology/{page['id']}?window=600")
    assert spout(ten_min, "counted")["timedOut"] == 10 and ten_min["window"] == "600"

    scrape = urllib.request.Request(metrics_cluster.url + "/metrics",
                                    headers={"Authorization": f"Bearer {metrics_cluster.token}"})
    with urllib.request.urlopen(scrape, timeout=30) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = reply.read().decode("utf-8")
    assert 'storm_spout_timed_out_total{topology="judged",component="counted"} 10' in text
    assert 'storm_component_failed_total{topology="judged",component="counted"} 10' in text
    assert 'storm_component_acked_total{topology="judged",component="counted"} 80' in text
    assert 'storm_component_emitted_total{topology="judged",component="counted",stream="default"} 100' in text
    assert "storm_cluster_supervisors 2" in text


def test_capacity_of_a_bolt_sleeping_a_known_time(metrics_cluster: MetricsCluster) -> None:
    client = metrics_cluster.client()
    expected = RATE * SLEEP_MS / 1000.0  # 10 tuples/s x 50 ms: busy half the time
    tid = client.topology_id("judged")

    def capacity() -> float:
        page = client.request("GET", f"/topology/{tid}/component/sleeper?window=600")
        return float(next(w for w in page["boltStats"] if w["window"] == "600")["capacity"])

    readings: list[float] = []

    def close() -> bool:
        readings.append(capacity())
        return len(readings) >= 2 and all(abs(c - expected) <= 0.1 * expected for c in readings[-2:])

    wait_until(close, 150, interval=2.0, what=f"the sleeper's capacity within 10 % of {expected} ({readings[-3:]})")
    page = client.request("GET", f"/topology/{tid}/component/sleeper?window=600")
    window = next(w for w in page["boltStats"] if w["window"] == "600")
    assert abs(float(window["executeLatency"]) - SLEEP_MS) <= 0.1 * SLEEP_MS, window
    assert float(window["processLatency"]) >= 0.9 * SLEEP_MS, window  # sampled: arrival to ack
    (row,) = page["inputStats"]
    assert (row["component"], row["stream"]) == ("paced", "default") and row["executed"] > 0


def test_consumer_receives_every_registered_metric_each_bucket(metrics_cluster: MetricsCluster) -> None:
    client = metrics_cluster.client()
    judge_tasks = len(client.component("judged", "judge")["executorStats"])
    points: dict[tuple[str, int, str], list[float]] = defaultdict(list)

    def enough() -> bool:
        points.clear()
        if not metrics_cluster.consumer_file.exists():
            return False
        for line in metrics_cluster.consumer_file.read_text(encoding="utf-8").splitlines():
            p = json.loads(line)
            points[(p["component"], p["task"], p["name"])].append(p["timestamp"])
            assert p["interval"] == BUCKET
        registered = [k for k in points if k[2] in ("spout-emits", "judged")]
        return len(registered) == 1 + judge_tasks and all(len(points[k]) >= 6 for k in registered)

    wait_until(enough, 120, interval=1.0, what="six buckets of every registered metric")
    for key, stamps in points.items():
        if key[2] not in ("spout-emits", "judged"):
            continue
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        assert all(0.5 * BUCKET <= g <= 1.75 * BUCKET for g in gaps[1:]), (key, gaps)  # one point per bucket
    assert any(k[2] == "mean-id" for k in points)
    assert any(k[2] == "__emit-count" and k[0] == "counted" for k in points)  # Storm's built-in metrics too


def test_monitor_prints_the_throughput(metrics_cluster: MetricsCluster) -> None:
    out = metrics_cluster.cluster.cli("monitor", "judged", "-m", "paced", "-i", "2", "--count", "2").stdout
    header, *rows = out.strip().splitlines()
    assert header.split()[:3] == ["topology", "component", "stream"] and len(rows) == 2
    rate = float(rows[-1].split()[-1])
    assert 0.5 * RATE <= rate <= 1.5 * RATE, out  # the paced spout emits RATE tuples a second


def test_set_log_level_reaches_the_workers_and_reverts(metrics_cluster: MetricsCluster) -> None:
    cluster = metrics_cluster.cluster
    out = cluster.cli("set_log_level", "judged", "-l", "metricsapp=DEBUG:5").stdout
    assert "Set log level of metricsapp to DEBUG for 5s in topology judged" in out
    client = metrics_cluster.client()
    tid = client.topology_id("judged")
    levels = client.request("GET", f"/topology/{tid}/logconfig")["namedLoggerLevels"]
    assert levels["metricsapp"]["target_level"] == "DEBUG" and levels["metricsapp"]["timeout"] == 5

    def logged(text: str) -> bool:
        return any(text in p.read_text(encoding="utf-8", errors="replace")
                   for p in cluster.artifacts(tid).glob("*/worker.log"))

    wait_until(lambda: logged("logger metricsapp set to DEBUG"), 60, interval=0.5, what="workers at DEBUG")
    wait_until(lambda: logged("logger metricsapp set to NOTSET"), 60, interval=0.5, what="the level restored")
    bad = cluster.cli("set_log_level", "judged", "-l", "metricsapp=LOUD", check=False)
    assert bad.returncode != 0 and "not a log level" in bad.stderr


def test_storm_py_ui_serves_the_pages_and_relays_api_and_metrics(metrics_cluster: MetricsCluster) -> None:
    from storm_py.ui.daemon import UiDaemon

    daemon = UiDaemon({**metrics_cluster.conf, "ui.port": 0})
    daemon.start()
    try:
        base = f"http://127.0.0.1:{daemon.port}"
        with urllib.request.urlopen(base + "/", timeout=30) as reply:
            assert reply.headers["Content-Type"].startswith("text/html") and b"Topology Summary" in reply.read()
        with urllib.request.urlopen(base + "/static/graph.js", timeout=30) as reply:
            assert b"class StormGraph" in reply.read()
        auth = {"Authorization": f"Bearer {metrics_cluster.token}"}
        summary = urllib.request.Request(base + "/api/v1/topology/summary", headers=auth)
        with urllib.request.urlopen(summary, timeout=30) as reply:
            assert "judged" in {t["name"] for t in json.loads(reply.read())["topologies"]}
        with urllib.request.urlopen(urllib.request.Request(base + "/metrics", headers=auth), timeout=30) as reply:
            assert b'storm_topology_info{topology="judged"' in reply.read()
        for bad in ("/static/../__init__.py", "/nope.html", "/static/x.py"):
            for headers, status in (({}, 401), (auth, 404)):  # not a UI file: not open, and not there
                try:
                    urllib.request.urlopen(urllib.request.Request(base + bad, headers=headers), timeout=30)
                    raise AssertionError(f"{bad} was served")
                except urllib.error.HTTPError as err:
                    assert err.code == status
    finally:
        daemon.stop()
