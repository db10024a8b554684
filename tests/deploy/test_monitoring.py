"""The Grafana dashboard and the Prometheus alert rules under deploy/: valid, their alerts fire on their conditions,
and every metric they query is one nimbus's /metrics exports (each with a sample in a real scrape: the slow test)."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.metrics import prometheus
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import build_wheel
from tests.deploy import monitoring
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)
from tests.kafka.test_transactional import produce_words

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
KAFKATX = Path(__file__).resolve().parents[1] / "kafka" / "apps" / "kafkatx"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120, check=False,
                          cwd=monitoring.RULES.parent)


def test_the_alert_rules_are_valid_and_each_fires_on_its_condition() -> None:
    checked = promtool("check", "rules", monitoring.RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", monitoring.RULE_TESTS.name)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_a_rule_test_fails_when_its_alert_does_not_fire(tmp_path: Path) -> None:
    """The rule tests can fail: with the worker-restart threshold raised out of reach, its test does."""
    rules = monitoring.RULES.read_text(encoding="utf-8").replace("[15m]) >= 3", "[15m]) >= 30")
    (tmp_path / monitoring.RULES.name).write_text(rules, encoding="utf-8")
    shutil.copy(monitoring.RULE_TESTS, tmp_path)
    failed = subprocess.run([PROMTOOL, "test", "rules", monitoring.RULE_TESTS.name], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, check=False)
    assert failed.returncode != 0 and "StormPyWorkerRestarting" in failed.stdout + failed.stderr


def test_the_scrape_config_is_valid(tmp_path: Path) -> None:
    token = tmp_path / "storm-py.token"
    token.write_text("secret\n", encoding="utf-8")
    config = monitoring.SCRAPE_CONFIG.read_text(encoding="utf-8").replace("/etc/prometheus/storm-py.token", str(token))
    (tmp_path / "prometheus.yml").write_text(config, encoding="utf-8")
    shutil.copy(monitoring.RULES, tmp_path)
    checked = subprocess.run([PROMTOOL, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_dashboard_is_a_well_formed_grafana_dashboard() -> None:
    dash = monitoring.dashboard()
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "topology", "component"} <= variables
    for panel in monitoring.panels():
        grid = panel["gridPos"]
        assert panel["targets"] and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert all(t["expr"].strip() for t in panel["targets"]), panel["title"]


def exported_names() -> set[str]:
    """Every family name the /metrics route can export (with or without samples now)."""
    families = (prometheus.cluster_families({}) + prometheus.topology_families([])
                + prometheus.worker_families([]))
    return {f.name for f in families}


def test_every_metric_the_dashboard_and_the_rules_query_is_exported() -> None:
    used = monitoring.metric_names()
    assert {"storm_kafka_spout_lag", "storm_topology_checkpoint_age_seconds", "storm_worker_uptime_seconds",
            "storm_component_failed_total"} <= used
    assert used <= exported_names(), sorted(used - exported_names())


def test_the_name_check_sees_a_name_that_is_not_exported() -> None:
    assert "storm_no_such_metric" not in exported_names()
    assert monitoring.scraped_names('# HELP a x\na{b="c"} 1\nd 2\n') == {"a", "d"}


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.zookeeper
@pytest.mark.timeout(400)
def test_every_metric_they_query_has_a_sample_in_a_real_scrape(
        dev_cluster: Any, zookeeper: Any, request: pytest.FixtureRequest, broker: Broker,  # noqa: F811
        tmp_path: Path) -> None:
    """A dev cluster running a Kafka spout into managed state, scraped as Prometheus scrapes it."""
    topic = broker.topic(2)
    produce_words(broker, topic, 2000, 2)
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    wheel = build_wheel(KAFKATX, tmp_path / "wheels")
    conf = {"kafkatx.bootstrap": broker.bootstrap, "kafkatx.topic": topic, "kafkatx.group": f"mon-{topic}",
            "topology.workers": 2, "topology.state.checkpoint.interval.ms": 500}
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(wheel), "kafkatx.statecount:build", "--name", "monitored", *args)
    assert "Finished submitting topology: monitored" in out.stdout
    token = str(cluster.client_conf()["nimbus.auth.token"])
    used = monitoring.metric_names()

    def scrape() -> str:
        req = urllib.request.Request(cluster.nimbus_url().rstrip("/") + "/metrics",
                                     headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as reply:
            return str(reply.read().decode("utf-8"))

    missing: set[str] = set(used)

    def sampled() -> bool:
        missing.clear()
        missing.update(used - monitoring.scraped_names(scrape()))
        return not missing

    try:
        wait_until(sampled, 180, interval=1, what="a sample of every metric the dashboard and the alert rules use")
    finally:
        assert not missing, f"no sample in /metrics of {sorted(missing)}"
    cluster.cli("kill", "monitored", "-w", "0")
