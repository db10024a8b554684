"""Acceptance of task rescaling on the dev cluster: Kafka -> a keyed stateful word count (state in a real Redis, or in
the durable checkpoint directory) rescaled 4 -> 8 -> 3 tasks while a producer keeps writing, with a worker killed
(``kill -9``) while the first rescale moves the state. Under exactly_once every word is counted exactly once against
the produced records, each key in the one task owning its key group; under at_least_once no count is below the
truth."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.dev.redis import RedisServerProcess
from storm_py.runtime.key_groups import groups_of_task
from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, settings_of
from storm_py.stateful.state.key_buckets import key_group_of
from storm_py.stateful.state.redis_state import RedisKeyValueState
from storm_py.stateful.state.task_names import Rescales, namespace
from tests.cluster.conftest import dev_cluster, zk_root_conf  # noqa: F401  (dev_cluster is a fixture)
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.kafka.conftest import Broker, broker, kafka_broker  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

APP = Path(__file__).parent / "apps" / "rescalecount"
PARTITIONS = 4
WORDS = [f"word{i}" for i in range(500)]


class Producer(threading.Thread):
    """Writes batches of words to the topic until stopped; ``truth`` counts what was written."""

    def __init__(self, kafka: Broker, topic: str, batch: int = 500) -> None:
        super().__init__(daemon=True)
        self.kafka, self.topic, self.batch = kafka, topic, batch
        self.truth: Counter[str] = Counter()
        self.sent = 0
        self.stop = threading.Event()

    def write(self, n: int) -> None:
        items = []
        for i in range(self.sent, self.sent + n):
            word = WORDS[(i * 7 + i // 3) % len(WORDS)]
            self.truth[word] += 1
            items.append((i % PARTITIONS, None, word.encode()))
        self.kafka.produce(self.topic, items)
        self.sent += n

    def run(self) -> None:
        while not self.stop.wait(0.2):
            self.write(self.batch)


def page(cluster: DevClusterProcess) -> dict[str, Any]:
    return cluster.client().topology("rescale")


def count_tasks(p: dict[str, Any]) -> int:
    return int(next(b for b in p["bolts"] if b["boltId"] == "count")["tasks"])


def shares(config: dict[str, Any], p: dict[str, Any]) -> list[dict[Any, Any]]:
    """The committed state of each task of ``count`` now, by task index (in Redis, or in the checkpoint directory
    when ``config`` has a url)."""
    rescales = Rescales.of(p["configuration"])
    generation = rescales.generation("count")
    if "url" in config:
        settings = settings_of(config)
        if generation == 0:
            return [s for _, s in sorted(CheckpointDirState.committed_of(settings, "rescale", "count").items())]
        return [CheckpointDirState.committed(settings, "rescale", namespace(rescales, "count", i, -1))
                for i in range(rescales.tasks_at("count", generation))]
    if generation == 0:
        return [s for _, s in sorted(RedisKeyValueState.committed_of("count", config).items())]
    return [dict(RedisKeyValueState.from_config(namespace(rescales, "count", i, -1), config))
            for i in range(rescales.tasks_at("count", generation))]


def counted(config: dict[str, Any], cluster: DevClusterProcess) -> Counter[Any]:
    out: Counter[Any] = Counter()
    for share in shares(config, page(cluster)):
        out.update(share)
    return out


def worker_pids(cluster: DevClusterProcess, tid: str) -> dict[int, int]:
    out = {}
    for w in page(cluster)["workers"]:
        try:
            out[int(w["port"])] = cluster.worker_pid(tid, int(w["port"]))
        except (OSError, ValueError, KeyError):
            continue
    return out


@pytest.mark.parametrize(("guarantee", "provider"), [("exactly_once", "redis"), ("at_least_once", "redis"),
                                                     ("exactly_once", "checkpoint_dir")])
def test_rescaling_a_kafka_fed_count_4_8_3_with_a_worker_killed(
        guarantee: str, provider: str, dev_cluster, zookeeper, request, broker: Broker,  # noqa: F811
        redis_server: RedisServerProcess, tmp_path: Path) -> None:
    topic = broker.topic(PARTITIONS)
    producer = Producer(broker, topic)
    producer.write(5000)
    wheel = build_wheel(APP, tmp_path / "wheels")
    config: dict[str, Any] = ({"port": redis_server.port, "key_prefix": "rs:"} if provider == "redis"
                              else {"url": str(tmp_path / "state")})
    conf = {"rescalecount.bootstrap": broker.bootstrap, "rescalecount.topic": topic,
            "rescalecount.group": f"rs-{topic}", "rescalecount.counters": 4, "topology.workers": 3,
            "topology.state.guarantee": guarantee, "topology.state.provider": provider,
            "topology.state.provider.config": json.dumps(config), "topology.state.checkpoint.interval.ms": 500,
            "topology.message.timeout.secs": 10}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    args = [a for k, v in conf.items() for a in ("-c", f"{k}={v}")]
    out = cluster.cli("submit", str(wheel), "rescalecount.topology:build", "--name", "rescale", *args)
    assert "Finished submitting topology: rescale" in out.stdout
    tid = cluster.client().topology_id("rescale")
    producer.start()
    try:
        wait_until(lambda: sum(counted(config, cluster).values()) >= 1000, 180, interval=0.5,
                   what="a first checkpoint")
        before = worker_pids(cluster, tid)
        cluster.cli("rebalance", "rescale", "--tasks", "count=8", "-w", "0")
        wait_until(lambda: count_tasks(page(cluster)) == 8, 60, interval=0.2, what="8 count tasks recorded")

        def new_worker() -> int | None:
            fresh = [pid for pid in worker_pids(cluster, tid).values() if pid not in before.values()]
            return fresh[0] if fresh else None

        killed: list[int] = []

        def kill_a_new_worker() -> bool:
            victim = new_worker()
            if victim is None:
                return False
            try:
                os.kill(victim, signal.SIGKILL)  # while the new tasks take their key groups
            except ProcessLookupError:  # gone already (replaced): try the next one
                return False
            killed.append(victim)
            return True

        wait_until(kill_a_new_worker, 120, interval=0.05, what="a worker of the new layout killed")
        victim = killed[0]
        wait_until(lambda: page(cluster)["status"] == "ACTIVE" and len(worker_pids(cluster, tid)) == 3
                   and victim not in worker_pids(cluster, tid).values(), 120, interval=0.5,
                   what="the topology active on 3 workers again")
        mark = sum(counted(config, cluster).values())
        wait_until(lambda: sum(counted(config, cluster).values()) >= mark + 2000, 180, interval=0.5,
                   what="counts going on at 8 tasks")
        cluster.client().rebalance("rescale", 0, tasks={"count": 3})
        wait_until(lambda: count_tasks(page(cluster)) == 3 and page(cluster)["status"] == "ACTIVE", 120,
                   interval=0.5, what="3 count tasks, active")
    finally:
        producer.stop.set()
        producer.join(30)
    truth = producer.truth
    assert producer.sent >= 8000
    if guarantee == "exactly_once":
        wait_until(lambda: sum(counted(config, cluster).values()) >= producer.sent, 400, interval=1,
                   what=f"every one of {producer.sent} records counted")
    else:  # replays count some records twice: the sum passes the records before every key caught up
        wait_until(lambda: all(counted(config, cluster)[w] >= n for w, n in truth.items()), 400, interval=1,
                   what=f"every one of {producer.sent} records counted at least once")
    got = counted(config, cluster)
    if guarantee == "exactly_once":
        assert got == truth
        final = shares(config, page(cluster))
        assert len(final) == 3
        seen: set[Any] = set()
        for i, share in enumerate(final):
            assert not seen & set(share)  # no key counted in two places
            seen |= set(share)
            assert all(key_group_of(k, 128) in groups_of_task(i, 3, 128) for k in share)
    else:
        assert all(got[w] >= n for w, n in truth.items()), "a count below the truth: a key lost"
    cluster.cli("kill", "rescale", "-w", "0")
