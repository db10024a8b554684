"""Acceptance of exactly-once state on the dev cluster: a stateful count fed from a Kafka topic of 200,000 records
(three workers, state in a real Redis) survives ``kill -9`` of each worker in turn, then the topology is killed and
submitted again: every committed count equals the truth.  The records are written in sixths, one before the submit,
before each kill and before the resubmit, so that each failure finds records still coming however fast the build
counts them."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.dev.redis import RedisServerProcess
from storm_py.stateful.state.redis_state import RedisKeyValueState
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import DevClusterProcess, alive, build_wheel
from tests.kafka.conftest import Broker
from tests.kafka.test_transactional import produce_words

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "kafkatx"
RECORDS = 200_000
PARTITIONS = 4


def committed(config: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for state in RedisKeyValueState.committed_of("count", config).values():
        for word, n in state.items():
            out[word] = out.get(word, 0) + n
    return out


def submit(cluster: DevClusterProcess, wheel: Path, conf: dict[str, Any]) -> None:
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(wheel), "kafkatx.statecount:build", "--name", "eocount", *args)
    assert "Finished submitting topology: eocount" in out.stdout


def test_exactly_once_counts_from_kafka_through_kill_9_of_each_worker_and_a_resubmit(
        dev_cluster, zookeeper, request, broker: Broker, redis_server: RedisServerProcess,  # noqa: F811
        tmp_path: Path) -> None:
    import json

    topic = broker.topic(PARTITIONS)
    truth: Counter[str] = Counter()

    def produce_sixth() -> None:
        truth.update(produce_words(broker, topic, RECORDS // 6, PARTITIONS))

    produce_sixth()
    wheel = build_wheel(APP, tmp_path / "wheels")
    config = {"port": redis_server.port, "key_prefix": "eo:"}
    conf = {"kafkatx.bootstrap": broker.bootstrap, "kafkatx.topic": topic, "kafkatx.group": f"eo-{topic}",
            "topology.workers": 3, "topology.state.guarantee": "exactly_once", "topology.state.provider": "redis",
            "topology.state.provider.config": json.dumps(config), "topology.state.checkpoint.interval.ms": 500,
            "topology.message.timeout.secs": 10}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    submit(cluster, wheel, conf)
    client = cluster.client()
    tid = client.topology_id("eocount")
    wait_until(lambda: sum(committed(config).values()) >= 1000, 120, interval=0.25, what="a first checkpoint")
    ports = sorted(int(w["port"]) for w in client.topology("eocount")["workers"])
    assert len(ports) == 3
    for port in ports:
        produce_sixth()
        victim = cluster.worker_pid(tid, port)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda port=port, victim=victim: cluster.worker_pid(tid, port) != victim, 60, interval=0.2,
                   what=f"a new worker on port {port}")
        assert alive(cluster.worker_pid(tid, port))
    produce_sixth()
    cluster.cli("kill", "eocount", "-w", "0")
    wait_until(lambda: "eocount" not in cluster.cli("list").stdout, 60, interval=0.5, what="the topology gone")
    submit(cluster, wheel, conf)
    produce_sixth()
    total = sum(truth.values())
    wait_until(lambda: sum(committed(config).values()) >= total, 400, interval=1,
               what=f"every one of {total} records counted")
    assert committed(config) == dict(truth)
    cluster.cli("kill", "eocount", "-w", "0")
