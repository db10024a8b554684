"""A Trident topology on the distributed cluster: a word count into Redis over three worker processes stays
exact when the worker of a state task is killed with SIGKILL midway (its batches are replayed)."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from storm_py.clock import wait_until
from storm_py.trident.redis_state import RedisMapState
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import APPS, alive, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(400)]

NAME = "tridentcount"
SENTENCES = 240


def load_app() -> ModuleType:
    sys.path.insert(0, str(APPS / "tridentcount"))
    try:
        from tridentcount import topology
    finally:
        sys.path.remove(str(APPS / "tridentcount"))
    return topology


app = load_app()


def test_kill_9_of_a_state_worker_keeps_the_trident_counts_exact(
    dev_cluster, zookeeper, redis_port: int, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    wheel = build_wheel(APPS / "tridentcount", tmp_path / "wheel")
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    prefix = f"tc_{uuid.uuid4().hex[:8]}_"  # a plain string for -c (a trailing colon would read as a mapping)
    conf = {"topology.workers": 3, "topology.max.spout.pending": 3, "topology.message.timeout.secs": 6,
            "tridentcount.sentences": SENTENCES, "tridentcount.batch": 3, "tridentcount.interval": 0.15,
            "tridentcount.redis.port": redis_port, "tridentcount.prefix": prefix}
    args = [arg for key, value in conf.items() for arg in ("-c", f"{key}={value}")]
    out = cluster.cli("submit", str(wheel), "tridentcount.topology:build", "--name", NAME, *args)
    assert f"Finished submitting topology: {NAME}" in out.stdout
    state = RedisMapState.factory("opaque", {"port": redis_port, "key_prefix": prefix})
    expected = app.expected_counts(SENTENCES)
    total = sum(expected.values())

    def counted() -> int:
        return sum(state.values().values())

    wait_until(lambda: counted() >= total // 4, 60, interval=0.2, what="a quarter of the words counted")
    client = cluster.client()
    tid = client.topology_id(NAME)
    ports = sorted({int(s["port"]) for s in client.component(NAME, "b-1")["executorStats"]})
    victim_port = ports[0]
    victim = cluster.worker_pid(tid, victim_port)
    os.kill(victim, signal.SIGKILL)
    assert counted() < total, "the data ended before the kill: raise the sentences or the interval"
    wait_until(lambda: cluster.worker_pid(tid, victim_port) != victim, 60, interval=0.2, what="a new worker")
    assert alive(cluster.worker_pid(tid, victim_port))
    wait_until(lambda: {k[0]: v for k, v in state.values().items()} == expected, 180, interval=0.25,
               what="exact counts in Redis")
    cluster.cli("kill", NAME, "-w", "0")
