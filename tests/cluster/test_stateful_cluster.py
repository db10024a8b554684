"""Acceptance of managed state on the dev cluster with Redis: a stateful word count (the ``statecount`` wheel, 6,000
words paced over about 20 s, three workers) survives ``kill -9`` of each worker in turn, then the topology is
killed and submitted again; with at_least_once no committed count is lower than the truth, with exactly_once every
committed count equals it."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.stateful.state.redis_state import RedisKeyValueState
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import APPS, DevClusterProcess, alive, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(600)]

WORDS = 6000
RATE = 300


def truth() -> dict[str, int]:
    sys.path.insert(0, str(APPS / "statecount"))
    try:
        from statecount.topology import truth as statecount_truth
    finally:
        sys.path.remove(str(APPS / "statecount"))
    return statecount_truth(WORDS)


def committed(config: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for state in RedisKeyValueState.committed_of("count", config).values():
        for word, n in state.items():
            out[word] = out.get(word, 0) + n
    return out


def spout_position(config: dict) -> int:
    states = RedisKeyValueState.committed_of("words", config)
    return sum(int(s.get("pos", 0)) for s in states.values())


def submit(cluster: DevClusterProcess, wheel: Path, guarantee: str, config: dict) -> None:
    out = cluster.cli(
        "submit", str(wheel), "statecount.topology:build", "--name", "statecount",
        "-c", "topology.workers=3", "-c", f"topology.state.guarantee={guarantee}",
        "-c", "topology.state.provider=redis", "-c", f"topology.state.provider.config={json.dumps(config)}",
        "-c", "topology.state.checkpoint.interval.ms=200", "-c", "topology.message.timeout.secs=10",
        "-c", f"statecount.words={WORDS}", "-c", f"statecount.rate={RATE}",
    )
    assert "Finished submitting topology: statecount" in out.stdout


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_kill_9_of_each_worker_then_kill_and_resubmit(
    dev_cluster, zookeeper, redis_server, request, tmp_path, guarantee
) -> None:
    wheel = build_wheel(APPS / "statecount", tmp_path / "wheels")
    config = {"port": redis_server.port, "key_prefix": f"{guarantee}:"}
    cluster = dev_cluster(zookeeper=zookeeper.connect_string, conf=zk_root_conf(request))
    submit(cluster, wheel, guarantee, config)
    client = cluster.client()
    tid = client.topology_id("statecount")
    wait_until(lambda: sum(committed(config).values()) >= 300, 120, interval=0.25, what="a first checkpoint")
    ports = sorted(int(w["port"]) for w in client.topology("statecount")["workers"])
    assert len(ports) == 3
    for port in ports:
        victim = cluster.worker_pid(tid, port)
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda port=port, victim=victim: cluster.worker_pid(tid, port) != victim, 60, interval=0.2,
                   what=f"a new worker on port {port}")
        assert alive(cluster.worker_pid(tid, port))
    assert spout_position(config) < WORDS, "the stream ended before the kills: raise WORDS or lower RATE"
    cluster.cli("kill", "statecount", "-w", "0")
    wait_until(lambda: "statecount" not in cluster.cli("list").stdout, 60, interval=0.5, what="the topology gone")
    submit(cluster, wheel, guarantee, config)
    wait_until(lambda: spout_position(config) >= WORDS, 240, interval=0.5, what="every word's position committed")
    want = truth()
    if guarantee == "exactly_once":
        wait_until(lambda: committed(config) == want, 60, interval=0.5, what="the exact counts committed")
    else:
        got = committed(config)
        assert all(got.get(w, 0) >= n for w, n in want.items()), (got, want)
    cluster.cli("kill", "statecount", "-w", "0")
