"""Exactly once on the distributed cluster: Kafka -> Trident -> Redis over three worker processes, each worker
killed with SIGKILL in turn while 200,000 records are counted; every count in Redis ends exact."""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.trident.redis_state import RedisMapState
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import APPS, alive, build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (the real broker fixtures)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]

NAME = "tridentkafka"
RECORDS = 200_000
PARTITIONS = 4
WORDS = [f"w{i:03d}" for i in range(100)]


def test_kill_9_of_each_worker_in_turn_keeps_kafka_trident_redis_counts_exact(
    dev_cluster, zookeeper, redis_port: int, broker: Broker,  # noqa: F811
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:
    topic = broker.topic(PARTITIONS, "tk")
    truth: Counter[str] = Counter()
    items = []
    for i in range(RECORDS):
        word = WORDS[(i * 7 + i // 13) % len(WORDS)]
        truth[word] += 1
        items.append((i % PARTITIONS, None, word.encode()))
    broker.produce(topic, items)
    wheel = build_wheel(APPS / "tridentcount", tmp_path / "wheel")
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    prefix = f"tk_{uuid.uuid4().hex[:8]}_"
    conf = {"topology.workers": 3, "topology.max.spout.pending": 3, "topology.message.timeout.secs": 10,
            "tridentcount.kafka.bootstrap": broker.bootstrap, "tridentcount.kafka.topic": topic,
            "tridentcount.redis.port": redis_port, "tridentcount.prefix": prefix}
    args = [arg for key, value in conf.items() for arg in ("-c", f"{key}={value}")]
    out = cluster.cli("submit", str(wheel), "tridentcount.kafka:build", "--name", NAME, *args)
    assert f"Finished submitting topology: {NAME}" in out.stdout
    state = RedisMapState.factory("opaque", {"port": redis_port, "key_prefix": prefix})

    def counted() -> int:
        return sum(state.values().values())

    client = cluster.client()
    tid = client.topology_id(NAME)
    artifacts = cluster.artifacts(tid)

    def ports() -> list[int]:  # the ports of the live workers (a rescheduled worker may move to another port)
        return sorted(int(p.name) for p in artifacts.iterdir()
                      if (p / "worker.yaml").exists() and alive(cluster.worker_pid(tid, int(p.name))))

    wait_until(lambda: len(ports()) == 3, 60, interval=0.2, what="three workers")
    for turn in range(3):  # each worker in turn, each time after more records were counted
        wait_until(lambda: len(ports()) == 3, 60, interval=0.2, what="three live workers")
        port = ports()[turn]
        wait_until(lambda: counted() >= RECORDS * (turn + 1) // 5, 90, interval=0.2,
                   what=f"{turn + 1}/5 of the records counted")
        victim = cluster.worker_pid(tid, port)
        os.kill(victim, signal.SIGKILL)
        assert counted() < RECORDS, "the records ended before a kill: raise RECORDS"
        wait_until(lambda: cluster.worker_pid(tid, port) != victim, 60, interval=0.2, what="a new worker")
        assert alive(cluster.worker_pid(tid, port))
    wait_until(lambda: counted() >= RECORDS, 120, interval=0.25, what="every record counted")
    assert {k[0]: v for k, v in state.values().items()} == dict(truth)
    cluster.cli("kill", NAME, "-w", "0")
