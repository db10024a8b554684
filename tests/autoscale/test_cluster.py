"""Acceptance on the dev cluster (real ZooKeeper, worker processes, the dev Kafka broker): a stateful bolt spending
2 ms per record (waiting, as on I/O) behind a Kafka spout whose input steps 200/s -> 2,000/s -> 200/s, under
exactly_once with the checkpoint directory, over eight workers (a worker's thread does about 450 such records a
second).  The autoscaler raises the bolt's executors until the lag stops growing, lowers them after the rate
falls, within its bounds; every produced record is counted exactly once in the committed state, whatever the
rebalances; the decisions are served at the REST route, printed by the CLI and shown on the UI's topology page
(headless Chromium).  The policy's decisions are the subject, not the wall clock: the test samples the metrics
every second and a half with a cooldown of six seconds (the defaults: a minute and two)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from storm_py.clock import SYSTEM_CLOCK, wait_until
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, settings_of
from tests.autoscale.harness import APP, BUFFER, PARTITIONS, PATIENT, WORKERS, PacedProducer
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)
from tests.ui.conftest import Browser, browser  # noqa: F401  (browser is a fixture)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(1200)]

NAME = "scaled"
#: the rate of the step up (records a second): 2 ms a record keep about five workers' threads busy, so the bolt
#: needs more than four (see ``WORKERS``)
PEAK = 2000
#: seconds between two samples of the metrics the autoscaler decides on
PERIOD = 1.5
#: trees in flight at most (enough for the peak at the complete latency of a loaded machine)
PENDING = 1000


@pytest.fixture(scope="module")
def scaleapp_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(APP, tmp_path_factory.mktemp("scaleapp-wheel"))


def autoscale_view(cluster: DevClusterProcess) -> dict[str, Any]:
    return dict(cluster.client().request("GET", f"/topology/{NAME}/autoscale"))


def executors(cluster: DevClusterProcess) -> int:
    return int(autoscale_view(cluster)["bolts"]["work"]["executors"])


def workers_up(cluster: DevClusterProcess) -> int:
    """The topology's workers that have sent a heartbeat."""
    return sum(1 for w in cluster.client().topology(NAME)["workers"] if w["uptimeSeconds"] >= 1)


def lag(cluster: DevClusterProcess) -> int:
    return int(cluster.client().topology_lag(NAME).get("kafka", {}).get("totalLag", -1))


def counted(state: dict[str, Any]) -> Counter[str]:
    """The committed counts of every task of ``work``, summed (each task counts the records it was given)."""
    out: Counter[str] = Counter()
    for share in CheckpointDirState.committed_of(settings_of(state), NAME, "work").values():
        out.update(share)
    return out


def test_the_autoscaler_follows_a_rate_step_up_and_down(
        dev_cluster, zookeeper, request, broker: Broker, scaleapp_wheel: Path, browser: Browser,  # noqa: F811
        tmp_path: Path) -> None:
    topic = broker.topic(PARTITIONS, "scale")
    state = {"url": str(tmp_path / "state")}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf={**zk_root_conf(request), **PATIENT},
                          supervisors=2)
    conf = {"scaleapp.bootstrap": broker.bootstrap, "scaleapp.topic": topic,
            "scaleapp.group": f"g-{uuid.uuid4().hex[:8]}", "scaleapp.out.dir": str(tmp_path / "out"),
            "scaleapp.stateful": "true", "topology.state.guarantee": "exactly_once",
            "topology.state.provider": "checkpoint_dir", "topology.state.provider.config": json.dumps(state),
            "topology.state.checkpoint.interval.ms": 500,
            "scaleapp.cost.ms": 2, "scaleapp.tasks": 8, "topology.workers": WORKERS,
            "topology.max.spout.pending": PENDING, "topology.executor.receive.buffer.size": BUFFER,
            "topology.message.timeout.secs": 30, "topology.autoscale.enabled": "true",
            "topology.autoscale.period.secs": PERIOD,
            "topology.autoscale.cooldown.secs": 6, "topology.autoscale.rebalance.wait.secs": 1,
            "topology.autoscale.max.parallelism": 8}
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(scaleapp_wheel), "scaleapp.topology:build", "--name", NAME, *args)
    assert f"Finished submitting topology: {NAME}" in out.stdout
    # the input starts once every worker runs: a backlog of the workers' start would look like a step to the policy
    wait_until(lambda: workers_up(cluster) == WORKERS, 180, interval=0.5, what=f"the topology's {WORKERS} workers")
    assert executors(cluster) == 1

    started, started_wall = SYSTEM_CLOCK.now(), SYSTEM_CLOCK.wall()
    producer = PacedProducer(broker.bootstrap, topic)
    producer.start(200)
    try:
        wait_until(lambda: lag(cluster) >= 0 and bool(counted(state)), 120, interval=0.5,
                   what="records counted at 200/s")
        producer.rate = PEAK
        step_up = SYSTEM_CLOCK.now()
        wait_until(lambda: executors(cluster) > 1, 90, interval=0.5, what="the bolt scaled up")
        # more executors until the lag stops growing while the peak comes in: no higher than four periods before
        seen: list[tuple[float, int]] = []

        def lag_stopped_growing() -> bool:
            now, current = SYSTEM_CLOCK.now(), lag(cluster)
            seen.append((now, current))
            before = [n for t, n in seen if t <= now - 4 * PERIOD]
            return executors(cluster) >= 4 and current >= 0 and bool(before) and current <= before[-1]

        wait_until(lag_stopped_growing, 240, interval=0.5, what=f"the lag to stop growing at {PEAK}/s")
        print(f"lag stopped growing {SYSTEM_CLOCK.now() - step_up:.1f}s after the step, at {executors(cluster)} "
              f"executors, lag {seen[-1][1]}")
        peak = executors(cluster)
        producer.rate = 200
        down = SYSTEM_CLOCK.now()
        wait_until(lambda: executors(cluster) <= 2, 240, interval=0.5, what="the bolt scaled down")
        print(f"scaled down {SYSTEM_CLOCK.now() - down:.1f}s after the rate fell")
    finally:
        sent = producer.stop()
        for d in autoscale_view(cluster)["decisions"]:
            print(f"decision at {d['time'] - started_wall:.1f}s: {d['component']} {d['from']} -> {d['to']}: "
                  f"{d['reason']}")

    view = autoscale_view(cluster)
    decisions = view["decisions"]
    assert decisions and all(set(d) == {"time", "component", "from", "to", "reason"} for d in decisions)
    ups = [d for d in decisions if d["to"] > d["from"]]
    downs = [d for d in decisions if d["to"] < d["from"]]
    # up until the lag stops growing, down after the fall: never up again once down (the catch-up after a change
    # is no reason to grow)
    assert ups and downs and max(d["time"] for d in ups) < min(d["time"] for d in downs), decisions
    assert all(d["component"] == "work" and 1 <= d["to"] <= 8 and d["reason"] for d in decisions)
    assert len(decisions) <= 6, decisions  # no oscillation
    assert peak <= 8

    # every produced record counted exactly once in the committed state, through every rebalance
    wait_until(lambda: sum(counted(state).values()) >= sent, 300, interval=1, what=f"all {sent} records counted")
    assert counted(state) == Counter({f"r{i:07d}": 1 for i in range(sent)})
    print(f"{sent} records counted once each, {SYSTEM_CLOCK.now() - started:.1f}s from the first record")

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
