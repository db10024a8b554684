"""Acceptance on the dev cluster (real ZooKeeper, worker processes, the dev Kafka broker): a bolt spending 2 ms
per record (waiting, as on I/O) behind a Kafka spout whose input steps 200/s -> 2,000/s -> 200/s.  The autoscaler
raises the bolt's executors until the lag stops growing, lowers them after the rate falls, within its bounds;
every record is processed (again only if in flight at a change); the decisions are served at the REST route,
printed by the CLI and shown on the UI's topology page (headless Chromium)."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from storm_py.clock import SYSTEM_CLOCK, wait_until
from tests.autoscale.harness import APP, PARTITIONS, PacedProducer
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)
from tests.ui.conftest import Browser, browser  # noqa: F401  (browser is a fixture)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(1200)]

NAME = "scaled"
#: a worker runs its executors on one thread: a bolt waiting on I/O gains from executors spread over workers
WORKERS = 4
#: trees in flight at most (enough for 2,000/s at the complete latency of a loaded machine)
PENDING = 1000


@pytest.fixture(scope="module")
def scaleapp_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(APP, tmp_path_factory.mktemp("scaleapp-wheel"))


def autoscale_view(cluster: DevClusterProcess) -> dict[str, Any]:
    return dict(cluster.client().request("GET", f"/topology/{NAME}/autoscale"))


def executors(cluster: DevClusterProcess) -> int:
    return int(autoscale_view(cluster)["bolts"]["work"]["executors"])


def lag(cluster: DevClusterProcess) -> int:
    return int(cluster.client().topology_lag(NAME).get("kafka", {}).get("totalLag", -1))


def processed(out_dir: Path) -> Counter[str]:
    seen: Counter[str] = Counter()
    for path in out_dir.glob("*.txt"):
        seen.update(line for line in path.read_text(encoding="utf-8").splitlines() if line)
    return seen


def test_the_autoscaler_follows_a_rate_step_up_and_down(
        dev_cluster, zookeeper, request, broker: Broker, scaleapp_wheel: Path, browser: Browser,  # noqa: F811
        tmp_path: Path) -> None:
    topic = broker.topic(PARTITIONS, "scale")
    out_dir = tmp_path / "processed"
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request), supervisors=2)
    conf = {"scaleapp.bootstrap": broker.bootstrap, "scaleapp.topic": topic,
            "scaleapp.group": f"g-{uuid.uuid4().hex[:8]}", "scaleapp.out.dir": str(out_dir),
            "scaleapp.cost.ms": 2, "scaleapp.tasks": 8, "topology.workers": WORKERS,
            "topology.max.spout.pending": PENDING, "topology.message.timeout.secs": 30,
            "topology.autoscale.enabled": "true", "topology.autoscale.period.secs": 3,
            "topology.autoscale.cooldown.secs": 12, "topology.autoscale.rebalance.wait.secs": 3,
            "topology.autoscale.max.parallelism": 8}
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(scaleapp_wheel), "scaleapp.topology:build", "--name", NAME, *args)
    assert f"Finished submitting topology: {NAME}" in out.stdout
    client = cluster.client()
    wait_until(lambda: bool(client.topology(NAME)["workers"]), 120, interval=0.25, what="the topology's worker")
    assert executors(cluster) == 1

    producer = PacedProducer(broker.bootstrap, topic)
    producer.start(200)
    try:
        wait_until(lambda: lag(cluster) >= 0 and bool(processed(out_dir)), 60, interval=0.5,
                   what="records processed at 200/s")
        producer.rate = 2000
        step_up = SYSTEM_CLOCK.now()
        wait_until(lambda: executors(cluster) > 1, 90, interval=0.5, what="the bolt scaled up")
        # more executors until the lag stops growing while 2,000/s come in: no higher than ten seconds before
        seen: list[tuple[float, int]] = []

        def lag_stopped_growing() -> bool:
            now, current = SYSTEM_CLOCK.now(), lag(cluster)
            seen.append((now, current))
            before = [n for t, n in seen if t <= now - 10]
            return executors(cluster) >= 4 and current >= 0 and bool(before) and current <= before[-1]

        wait_until(lag_stopped_growing, 240, interval=0.5, what="the lag to stop growing at 2,000/s")
        print(f"lag stopped growing {SYSTEM_CLOCK.now() - step_up:.1f}s after the step, at {executors(cluster)} "
              f"executors, lag {seen[-1][1]}")
        peak = executors(cluster)
        producer.rate = 200
        wait_until(lambda: executors(cluster) <= 2, 240, interval=0.5, what="the bolt scaled down")
    finally:
        sent = producer.stop()

    view = autoscale_view(cluster)
    decisions = view["decisions"]
    for d in decisions:
        print(f"decision: {d['component']} {d['from']} -> {d['to']}: {d['reason']}")
    assert decisions and all(set(d) == {"time", "component", "from", "to", "reason"} for d in decisions)
    ups = [d for d in decisions if d["to"] > d["from"]]
    downs = [d for d in decisions if d["to"] < d["from"]]
    assert ups and downs and downs[-1]["time"] > ups[-1]["time"]
    assert all(d["component"] == "work" and 1 <= d["to"] <= 8 and d["reason"] for d in decisions)
    assert len(decisions) <= 6, decisions  # no oscillation
    assert peak <= 8

    # every record processed; a change is a rebalance, at least once: only trees in flight when a worker stopped
    # may be processed again (none when they complete within the rebalance wait, as on a quiet machine)
    wait_until(lambda: len(processed(out_dir)) >= sent, 400, interval=0.5, what="every record processed")
    seen = processed(out_dir)
    assert len(seen) == sent and set(seen) == {f"r{i:07d}" for i in range(sent)}
    again = sum(seen.values()) - sent
    print(f"{sent} records, {again} processed twice")
    assert again <= PENDING * len(decisions), [v for v, n in seen.items() if n > 1][:10]

    # the token guards the route; the CLI prints the decisions
    url = f"{cluster.nimbus_url().rstrip('/')}/api/v1/topology/{quote(NAME)}/autoscale"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=10)
    assert refused.value.code == 401
    printed = cluster.cli("autoscale", NAME).stdout
    assert f"work       {ups[0]['from']}     {ups[0]['to']}" in printed

    # the UI's topology page shows them
    base_url = cluster.nimbus_url().rstrip("/")
    token = str(cluster.client_conf()["nimbus.auth.token"])
    browser.driver.get(base_url + "/static/style.css")
    browser.driver.execute_script("sessionStorage.setItem('storm-py.token', arguments[0])", token)
    browser.driver.get(f"{base_url}/topology.html?id={quote(view['topologyId'])}")
    wait_until(lambda: browser.text("#autoscale-decisions").count("work") >= len(decisions), 60, interval=0.3,
               what="the decisions on the topology page")
    shown = browser.text("#autoscale-decisions")
    assert "saturated" in shown and "idle" in shown
    browser.driver.execute_script("document.getElementById('autoscale-section').scrollIntoView()")
    browser.shot("autoscale-decisions")
    assert browser.script_errors() == []
