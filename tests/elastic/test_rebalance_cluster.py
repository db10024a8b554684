"""Acceptance of rebalancing executors on the dev cluster: a Kafka-fed stateful word count (three workers; the
counting bolt on two executors of four tasks) while a producer keeps writing, ``storm-py rebalance -e`` to four
executors, with one of its workers killed (``kill -9``) during the rebalance.  With the durable checkpoint provider
(the dev cluster's default) and with Redis: under exactly_once every word is counted exactly once (compared with
the records produced), under at_least_once no word is counted less."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, Settings
from storm_py.stateful.state.redis_state import RedisKeyValueState
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.elastic.components import PacedProducer, committed_counts
from tests.kafka.conftest import Broker

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "elasticcount"
PARTITIONS = 4
RECORDS = 33_000
NAME = "elastic"


def counts_of(cluster: DevClusterProcess, config: dict[str, Any] | None) -> Any:
    if config is None:  # the dev cluster's default: the checkpoint directory under its work directory
        states = CheckpointDirState.committed_of(Settings(str(cluster.workdir / "state")), NAME, "count")
    else:
        states = RedisKeyValueState.committed_of("count", config)
    return committed_counts(states)


def count_executors(cluster: DevClusterProcess) -> int:
    page = cluster.client().topology(NAME)
    if page.get("status") != "ACTIVE":
        return -1
    return int(next(b for b in page["bolts"] if b["boltId"] == "count")["executors"])


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once"])
@pytest.mark.parametrize("provider", ["checkpoint_dir", "redis"])
def test_rebalance_to_four_executors_with_a_worker_killed_counts_every_record(
        dev_cluster, zookeeper, request: pytest.FixtureRequest, broker: Broker, tmp_path: Path, provider: str,
        guarantee: str) -> None:
    import json

    topic = broker.topic(PARTITIONS, "elastic")
    wheel = build_wheel(APP, tmp_path / "wheels")
    conf: dict[str, Any] = {"elastic.bootstrap": broker.bootstrap, "elastic.topic": topic,
                            "elastic.group": f"g-{topic}", "topology.workers": 3,
                            "topology.state.guarantee": guarantee, "topology.state.checkpoint.interval.ms": 500,
                            "topology.message.timeout.secs": 15}
    config: dict[str, Any] | None = None
    if provider == "redis":
        server = request.getfixturevalue("redis_server")
        config = {"port": server.port, "key_prefix": "elastic:"}
        conf.update({"topology.state.provider": "redis", "topology.state.provider.config": json.dumps(config)})
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    producer = PacedProducer(broker, topic, RECORDS, PARTITIONS, batch=300, pause=0.25).prime(3000)
    try:
        args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
        out = cluster.cli("submit", str(wheel), "elasticcount.topology:build", "--name", NAME, *args)
        assert f"Finished submitting topology: {NAME}" in out.stdout
        client = cluster.client()
        tid = client.topology_id(NAME)
        wait_until(lambda: sum(counts_of(cluster, config).values()) >= 1000, 180, interval=0.25,
                   what="a first checkpoint")
        producer.start()  # the producer writes on through the rebalance
        ports = sorted(int(w["port"]) for w in client.topology(NAME)["workers"])
        victim = cluster.worker_pid(tid, ports[0])
        cluster.cli("rebalance", NAME, "-w", "3", "-e", "count=4", "-e", "words=4", "-e", "records=2")
        os.kill(victim, signal.SIGKILL)  # during the rebalance's wait
        assert producer.produced < RECORDS, "the producer finished before the rebalance: raise RECORDS"
        wait_until(lambda: count_executors(cluster) == 4, 180, interval=0.5, what="count on four executors")
        want = producer.join(300)
        if guarantee == "exactly_once":
            wait_until(lambda: counts_of(cluster, config) == want, 400, interval=1,
                       what="every record counted exactly once")
        else:
            wait_until(lambda: all(counts_of(cluster, config)[w] >= n for w, n in want.items()), 400, interval=1,
                       what="every record counted, no word lost")
        cluster.cli("kill", NAME, "-w", "0")
    finally:
        producer.stop()
