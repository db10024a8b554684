"""deploy/kubernetes's dev overlay run for real with `podman kube play` (tests/deploy/kube_play.py says what stands in
for a Kubernetes cluster): ZooKeeper, nimbus and two supervisors as their pods, with the ConfigMap, the Secret, the
init containers that join them and the persistent volumes; a wheel submitted from the host through nimbus's port
(as `kubectl port-forward` would give it) runs on both supervisors' pods to exact acked counts; nimbus's pod
restarted keeps the topology (its volume and ZooKeeper's); nothing is left behind.

Not played: the UI and DRPC Deployments (tested by the compose cluster), Services, NetworkPolicies and
PodDisruptionBudgets (checked offline in test_kubernetes.py).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_py.client import NimbusClient
from storm_py.clock import wait_until
from storm_py.dev.secret import new_secrets
from storm_py.dev.zookeeper import free_port
from storm_py.errors import WaitTimeoutError
from tests.cluster.harness import REPO, build_wheel, storm_py_command, word_count_project
from tests.deploy.containers import Engine
from tests.deploy.images import base_images, drop_older_project_images, project_image
from tests.deploy.kube_play import playable
from tests.deploy.kustomize import render

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1800)]

OVERLAY = REPO / "deploy" / "kubernetes" / "overlays" / "dev"
PLAYED = {"storm-py-zookeeper", "storm-py-nimbus", "storm-py-supervisor"}
#: what the test adds to the ConfigMap's storm.yaml: a lost pod noticed in seconds, not a minute
FAST = {
    "nimbus.monitor.freq.secs": 1,
    "nimbus.supervisor.timeout.secs": 10,
    "nimbus.task.timeout.secs": 10,
    "supervisor.monitor.frequency.secs": 1,
    "worker.heartbeat.frequency.secs": 1,
    "storm.nimbus.retry.times": 40,
    "storm.nimbus.retry.interval.millis": 250,
    "storm.nimbus.retry.intervalceiling.millis": 1000,
}


def documents(bases: dict[str, str], image: str, secrets: dict[str, str], subnet: str,
              port: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    resources = [r for r in render(OVERLAY)
                 if r["kind"] not in ("StatefulSet", "Deployment") or r["metadata"]["name"] in PLAYED]
    for r in resources:
        if r["kind"] == "ConfigMap" and "storm.yaml" in r.get("data", {}):
            r["data"]["storm.yaml"] += yaml.safe_dump(FAST)
    images = {"storm-py": image, "zookeeper": bases.get("STORM_PY_ZOOKEEPER_IMAGE", "zookeeper:3.8")}
    return playable(resources, images, {"secrets.yaml": yaml.safe_dump(secrets)}, subnet,
                    {("storm-py-nimbus-0", 6627): port})


def present_pods(engine: Engine, names: list[str]) -> list[str]:
    """Which of the pods ``names`` exist now."""
    return [n for n in engine.run("pod", "ps", "--format", "{{.Name}}").stdout.split() if n in names]


def remove_pods(engine: Engine, names: list[str]) -> None:
    if names:
        engine.run("pod", "rm", "-f", "-t", "10", *names, check=False, timeout=180)


def test_the_kubernetes_manifests_run_a_topology_under_podman_kube_play(engine: Engine, tmp_path: Path) -> None:
    if engine.kind != "podman":
        pytest.fail("podman kube play needs podman (the compose test covers Docker)")
    timings: dict[str, float] = {}
    mark = time.monotonic()
    bases = base_images(engine)
    image = project_image(engine, bases)
    timings["images"] = time.monotonic() - mark
    network = f"stormpy-kube-{uuid.uuid4().hex[:8]}"
    subnet = f"10.{77 + uuid.uuid4().int % 100}.{uuid.uuid4().int % 250}.0/24"
    secrets = new_secrets()
    port = free_port()
    docs, addresses = documents(bases, image, secrets, subnet, port)
    played = tmp_path / "played.yaml"
    played.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    # podman keeps each ConfigMap in a volume of its name, and each claim in one of its own
    claims = [d["metadata"]["name"] for d in docs if d["kind"] in ("PersistentVolumeClaim", "ConfigMap")]
    pods = [d["metadata"]["name"] for d in docs if d["kind"] == "Pod"]
    assert sorted(pods) == ["storm-py-nimbus-0", "storm-py-supervisor-0", "storm-py-supervisor-1",
                            "storm-py-zookeeper-0"]
    remove_pods(engine, present_pods(engine, pods))  # an earlier run's, stopped midway: kube play refuses their names
    for claim in claims:  # a ConfigMap's volume left by an earlier run would be played as it was, not as written
        engine.run("volume", "rm", "-f", claim, check=False)
    try:
        engine.run("network", "create", "--subnet", subnet, network)
        mark = time.monotonic()
        ips = [a for pod in pods for a in ("--ip", addresses[pod])]
        engine.run("kube", "play", "--network", network, *ips, str(played), timeout=600)
        client_conf: dict[str, Any] = {**secrets, "nimbus.seeds": [f"127.0.0.1:{port}"],
                                       "storm.local.dir": str(tmp_path / "client"), **FAST}
        client_path = tmp_path / "storm-client.yaml"
        client_path.write_text(yaml.safe_dump(client_conf), encoding="utf-8")
        client_path.chmod(0o600)
        client = NimbusClient(client_conf)

        def supervisors() -> set[str]:
            try:
                return {s["host"] for s in client.supervisor_summary()}
            except Exception:  # nimbus not answering yet
                return set()

        want = {"storm-py-supervisor-0.storm-py-supervisor", "storm-py-supervisor-1.storm-py-supervisor"}

        def waiting(predicate: Callable[[], object], timeout: float, what: str) -> None:
            """wait_until, printing what the pods said when it times out (a slow start or a daemon that cannot
            reach another)."""
            try:
                wait_until(predicate, timeout, interval=0.5, what=what)
            except WaitTimeoutError:
                print(f"\nregistered: {sorted(supervisors())}")
                print(engine.run("pod", "ps", check=False).stdout)
                for pod in pods:
                    said = engine.run("pod", "logs", "--tail", "40", pod, check=False)
                    print(f"--- {pod}:\n{said.stdout[-4000:]}{said.stderr[-1000:]}")
                raise

        waiting(lambda: supervisors() == want, 240.0, "both supervisor pods registered")
        timings["up"] = time.monotonic() - mark

        wheel = build_wheel(word_count_project(tmp_path / "src"), tmp_path / "wheels")
        sentences = 400
        submitted = subprocess.run(
            [*storm_py_command(), "submit", str(wheel), "examples.word_count:build", "--name", "wordcount",
             "-c", "topology.workers=2", "-c", f"wordcount.sentences={sentences}", "--config", str(client_path)],
            capture_output=True, text=True, timeout=180, check=False)
        assert submitted.returncode == 0, submitted.stderr

        def spout(name: str) -> dict[str, Any]:
            return dict(client.topology(name)["spouts"][0])

        waiting(lambda: int(spout("wordcount")["acked"]) == sentences, 300.0, f"{sentences} sentences acked")
        page = client.topology("wordcount")
        assert int(page["spouts"][0]["failed"]) == 0
        assert {w["host"] for w in page["workers"]} == want, "a worker on each supervisor pod"
        topology_id = page["id"]

        # nimbus's pod restarted: the topology is still there (its volume, ZooKeeper's), and still ACTIVE
        mark = time.monotonic()
        engine.run("pod", "restart", "storm-py-nimbus-0", timeout=120)
        waiting(lambda: supervisors() == want, 180.0, "nimbus back after its pod's restart")
        waiting(lambda: client.topology("wordcount")["id"] == topology_id, 60.0,
                "the topology in the restarted nimbus's view")
        assert client.topology("wordcount")["status"] == "ACTIVE"
        timings["nimbus back"] = time.monotonic() - mark
    finally:
        down = engine.run("kube", "down", str(played), check=False, timeout=300)
        stuck = present_pods(engine, pods)
        if stuck:  # kube down stops at the first pod it cannot find, leaving the others
            print(f"\nkube down ({down.returncode}) left {stuck}: {down.stderr.strip()[-2000:]}")
            remove_pods(engine, stuck)
        for claim in claims:
            engine.run("volume", "rm", "-f", claim, check=False)
        engine.run("network", "rm", "-f", network, check=False)
        drop_older_project_images(engine, image)
        print(f"\nkube play test timings (s): {', '.join(f'{k} {v:.1f}' for k, v in timings.items())}")
    left = present_pods(engine, pods)
    left += [v for v in engine.run("volume", "ls", "--format", "{{.Name}}").stdout.split() if v in claims]
    left += [n for n in engine.run("network", "ls", "--format", "{{.Name}}").stdout.split() if n == network]
    assert left == [], left
