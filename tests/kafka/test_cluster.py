"""Acceptance on the dev cluster (real ZooKeeper, worker processes): Kafka at-least-once through a kill -9 of
the spout's worker, and exact transactional counts through a kill -9 of the committer's worker."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import DevClusterProcess, alive, build_wheel
from tests.kafka.conftest import Broker
from tests.kafka.test_transactional import app as txapp
from tests.kafka.test_transactional import produce_words

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "kafkatx"


@pytest.fixture(scope="module")
def kafkatx_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(APP, tmp_path_factory.mktemp("kafkatx-wheel"))


def submit(cluster: DevClusterProcess, wheel: Path, function: str, name: str, conf: dict[str, Any]) -> None:
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(wheel), function, "--name", name, *args)
    assert f"Finished submitting topology: {name}" in out.stdout


def component_ports(cluster: DevClusterProcess, name: str, component: str) -> set[int]:
    client = cluster.client()
    found: set[int] = set()

    def located() -> bool:
        found.clear()
        found.update(int(s["port"]) for s in client.component(name, component)["executorStats"])
        return bool(found)

    wait_until(located, 60, interval=0.2, what=f"the heartbeat of {component}")
    return found


def kill_workers_of(cluster: DevClusterProcess, name: str, component: str) -> tuple[str, dict[int, int]]:
    tid = cluster.client().topology_id(name)
    victims = {port: cluster.worker_pid(tid, port) for port in component_ports(cluster, name, component)}
    for pid in victims.values():
        os.kill(pid, signal.SIGKILL)
    return tid, victims


@pytest.mark.parametrize("per_tree", [1, 64])
def test_kafka_at_least_once_through_kill_9_of_the_spout_worker(
        dev_cluster, zookeeper, request, broker: Broker, kafkatx_wheel: Path, per_tree: int) -> None:  # noqa: F811
    """100,000 records, 5 % failed once, the spouts' workers killed midway: nothing lost, commits and lag reach the
    log end; with records one per tree and in trees of up to 64."""
    n = 100_000
    topic, out = broker.topic(4, "in"), broker.topic(4, "out")
    values = [b"r%06d" % i for i in range(n)]
    ends = broker.produce(topic, ((i % 4, None, v) for i, v in enumerate(values)))
    group = f"g-{uuid.uuid4().hex[:8]}"
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    conf = {"kafkatx.bootstrap": broker.bootstrap, "kafkatx.topic": topic, "kafkatx.out": out,
            "kafkatx.group": group, "kafkatx.fail.rate": 0.05, "kafkatx.seed": 11, "kafkatx.per_tree": per_tree,
            "topology.workers": 2,
            "topology.max.spout.pending": 2000, "topology.message.timeout.secs": 20}
    submit(cluster, kafkatx_wheel, "kafkatx.atleastonce:build", "kafka-alo", conf)
    wait_until(lambda: sum(broker.committed(group, topic, 4).values()) >= n // 5, 300, interval=0.5,
               what="a fifth of the records committed")
    client = cluster.client()
    wait_until(lambda: client.topology_lag("kafka-alo").get("kafka", {}).get("totalLag", 0) > 0, 60, interval=0.5,
               what="lag reported while records wait")
    tid, victims = kill_workers_of(cluster, "kafka-alo", "kafka")
    assert sum(broker.committed(group, topic, 4).values()) < n, "the data ended before the kill: produce more"
    for port, pid in victims.items():
        wait_until(lambda p=port, v=pid: cluster.worker_pid(tid, p) != v, 90, interval=0.2,  # type: ignore[misc]
                   what="the spout's worker restarted")
        assert alive(cluster.worker_pid(tid, port))
    wait_until(lambda: broker.committed(group, topic, 4) == ends, 600, interval=1.0,
               what=f"commits at the log end {ends}")
    want = {str(p): {"consumerCommittedOffset": e, "logHeadOffset": e, "lag": 0} for p, e in ends.items()}

    def lag_is_zero() -> bool:
        lag = client.topology_lag("kafka-alo").get("kafka", {})
        return lag.get("spoutLagResult") == {topic: want} and lag.get("totalLag") == 0

    wait_until(lag_is_zero, 60, interval=0.5, what=f"lag 0 at the log end {ends} in /topology/:id/lag")
    page = client.topology("kafka-alo")
    assert page["spoutLag"]["kafka"]["spoutType"] == "KAFKA" and page["spoutLag"]["kafka"]["totalLag"] == 0
    got = broker.read_values(out, 4, set(values), timeout=180)
    missing = set(values) - got
    assert not missing, f"{len(missing)} records lost, e.g. {sorted(missing)[:3]}"
    cluster.cli("kill", "kafka-alo", "-w", "0")


def test_transactional_kafka_exact_counts_through_kill_9_of_the_committer_worker(
        dev_cluster, zookeeper, request, broker: Broker, kafkatx_wheel: Path, tmp_path: Path) -> None:  # noqa: F811
    n = 6000
    topic = broker.topic(4)
    truth = produce_words(broker, topic, n, 4)
    db = str(tmp_path / "counts.db")
    txapp.create_db(db)
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    conf = {"kafkatx.bootstrap": broker.bootstrap, "kafkatx.topic": topic, "kafkatx.db": db,
            "kafkatx.tx.id": f"tx-{topic}", "kafkatx.fault.rate": 0.1, "kafkatx.seed": 5, "kafkatx.batch": 50,
            "topology.workers": 3, "topology.max.spout.pending": 3, "topology.message.timeout.secs": 10}
    submit(cluster, kafkatx_wheel, "kafkatx.topology:build", "kafka-tx", conf)
    wait_until(lambda: len(txapp.applied_txids(db)) >= 5 and sum(txapp.read_counts(db).values()) > 0, 300,
               interval=0.5, what="some transactions committed")
    assert sum(txapp.read_counts(db).values()) < n, "the data ended before the kill: produce more"
    tid, victims = kill_workers_of(cluster, "kafka-tx", "counts")
    for port, pid in victims.items():
        wait_until(lambda p=port, v=pid: cluster.worker_pid(tid, p) != v, 90, interval=0.2,  # type: ignore[misc]
                   what="the committer's worker restarted")
    wait_until(lambda: sum(txapp.read_counts(db).values()) >= n, 600, interval=0.5,
               what=f"{n} words counted (have {sum(txapp.read_counts(db).values())})")
    assert txapp.read_counts(db) == dict(truth), "exact counts"
    txids = txapp.applied_txids(db)
    assert len(txids) == len(set(txids))
    cluster.cli("kill", "kafka-tx", "-w", "0")
