"""Acceptance of the resource aware scheduler on a `storm-py dev-cluster`: three topologies whose memory does not
all fit (the least important waits, with its reason, until another is killed), a GPU resource offered by one
supervisor only, and bad resources refused at submit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

#: word count with three executors (spout, split, count) and no ackers
SMALL = ["-c", "wordcount.split.parallelism=1", "-c", "wordcount.count.parallelism=1",
         "-c", "topology.acker.executors=0"]


def submit(cluster: DevClusterProcess, wheel: Path, name: str, *conf: str, check: bool = True) -> Any:
    return cluster.cli("submit", str(wheel), "examples.word_count:build", "--name", name, *SMALL, *conf, check=check)


def worker_ports(cluster: DevClusterProcess, name: str) -> set[int]:
    page = cluster.client().topology(name)
    return {int(w["port"]) for w in page.get("workers", [])}


def supervisor_ports(cluster: DevClusterProcess, number: int) -> set[int]:
    conf = yaml.safe_load((cluster.workdir / f"supervisor-{number}.yaml").read_text(encoding="utf-8"))
    return set(conf["supervisor.slots.ports"])


def assigned(cluster: DevClusterProcess, name: str) -> bool:
    return bool(cluster.client().topology(name)["assignment"])


def test_memory_priorities_waiting_reasons_and_a_gpu_on_a_dev_cluster(dev_cluster, wheels) -> None:
    cluster = dev_cluster(
        supervisors=2,
        conf={"storm.scheduler": "resource_aware", "supervisor.memory.capacity.mb": 2048},
        # the GPU supervisor has less CPU, so that without the GPU rule the other one would come first
        supervisor_confs=("2:supervisor.resources.map={gpu.count: 1}", "2:supervisor.cpu.capacity=300"),
    )
    wheel = wheels["wordcount"]

    # bad input: refused at submit, naming the key or the component, nothing left behind
    bad = submit(cluster, wheel, "bad", "-c", "topology.component.cpu.pcore.percent=-5", check=False)
    assert bad.returncode != 0 and "topology.component.cpu.pcore.percent" in bad.stderr
    huge = submit(cluster, wheel, "huge", "-c", "topology.component.resources.onheap.memory.mb=5000", check=False)
    assert huge.returncode != 0 and "more than any supervisor offers" in huge.stderr and "component '" in huge.stderr
    assert "No topologies running." in cluster.cli("list").stdout

    # a GPU component runs only on the supervisor that offers the GPU
    submit(cluster, wheel, "gpu", "-c", "topology.component.resources.map={gpu.count: 0.25}",
           "-c", "topology.component.resources.onheap.memory.mb=100")
    wait_until(lambda: bool(worker_ports(cluster, "gpu")), 60, interval=0.25, what="the GPU topology's worker")
    assert worker_ports(cluster, "gpu") <= supervisor_ports(cluster, 2)
    cluster.cli("kill", "gpu", "-w", "0")
    wait_until(lambda: "gpu" not in cluster.cli("list").stdout, 60, interval=0.25, what="the GPU topology gone")

    # 3 executors of 450 MB each: one topology per 2048 MB supervisor, the third (least important) waits
    memory = ("-c", "topology.component.resources.onheap.memory.mb=450")
    submit(cluster, wheel, "a", *memory, "-c", "topology.priority=10")
    submit(cluster, wheel, "b", *memory, "-c", "topology.priority=20")
    submit(cluster, wheel, "c", *memory, "-c", "topology.priority=30")
    assert assigned(cluster, "a") and assigned(cluster, "b") and not assigned(cluster, "c")
    page = cluster.client().topology("c")
    assert page["status"] == "ACTIVE" and page["workersTotal"] == 0
    assert "not enough resources: an executor of" in page["schedulerInfo"]
    assert "c: not enough resources" in cluster.cli("list").stdout

    cluster.cli("kill", "a", "-w", "0")
    wait_until(lambda: assigned(cluster, "c"), 60, interval=0.25, what="the waiting topology to be scheduled")
    assert cluster.client().topology("c")["schedulerInfo"] == ""

    # rebalance -r: a spout grown past what is free leaves the topology waiting, with its reason
    cluster.cli("rebalance", "c", "-w", "0", "-r", '{"spout": {"onheap.memory.mb": 1900}}')
    wait_until(lambda: not assigned(cluster, "c"), 60, interval=0.25, what="the grown topology to wait")
    assert "not enough resources" in cluster.client().topology("c")["schedulerInfo"]
    refused = cluster.cli("rebalance", "c", "-r", '{"nope": {"onheap.memory.mb": 1}}', check=False)
    assert refused.returncode == 1 and "unknown component 'nope'" in refused.stderr
